"""Evaluations that work on any causal LM: bits per byte first (evals.bpb)."""
