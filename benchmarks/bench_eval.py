"""Bits-per-byte evaluation tokens/s: our batched `corpus_bpb` against a per-document loop.

    python benchmarks/bench_eval.py [--model DIR] [--docs 200] [--batch-sizes 8,32]
        [--repeats 2] [--threads 1] [--device cpu]

Texts: the first --docs CLEAR excerpts (embedded data, about 1,000 characters each). Model:
--model (a `save_pretrained` directory with its tokenizer), else chapter 9's nano LittleLearner of
the default run (runs/default/training/littlelearner/best, left by `make book`), else a freshly
initialised nano Qwen3 with a byte-level BPE trained now on the texts (the weights do not change
the speed; the output says which).

- **per-document loop**: what one writes first: for each text, BOS + its tokens, one forward pass
  of that one sequence, the summed cross-entropy of its tokens; Σ nats / (ln 2 · Σ bytes). Every
  text must fit the model's context (else the loop would need the sliding window; it stops).
- **ours**: `littlekit.evals.bpb.corpus_bpb`, windows sorted by length and batched --batch-sizes
  at a time with right padding and an attention mask.

Both score the same targets, so their BPB must agree (printed, with the difference). Each round
times every method once, alternating, after one untimed warm-up pass each; each keeps its best
round by CPU time. Rates are scored tokens per wall second and per CPU second of this process
(all its threads): on a shared machine other work steals wall time, not CPU time.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from littlekit import config, runs
from littlekit.analysis.throughput import facts_line, timed


def per_document_loop(model, tokenizer, texts: list[str], max_length: int) -> dict[str, float]:
    """BPB one text at a time, one unpadded forward pass each (the baseline)."""
    import torch
    import torch.nn.functional as F

    device = next(model.parameters()).device
    nats, n_bytes, tokens = 0.0, 0, 0
    with torch.inference_mode():
        for text in texts:
            ids = [tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]
            if len(ids) > max_length:
                raise SystemExit(
                    f"a text of {len(ids)} ids exceeds the context ({max_length}); use shorter texts"
                )
            input_ids = torch.tensor([ids], device=device)
            logits = model(input_ids=input_ids, use_cache=False).logits[0, :-1].float()
            nats += F.cross_entropy(logits, input_ids[0, 1:], reduction="sum").item()
            n_bytes += len(text.encode("utf-8"))
            tokens += len(ids) - 1
    return {"bpb": nats / (math.log(2) * n_bytes), "nats": nats, "bytes": n_bytes, "tokens": tokens}


def load_model(args, texts: list[str], work: Path):
    from littlekit.evals.models import load_causal_lm

    default = runs.path(config.run_dir("default"), "pair_models") / "littlelearner" / "best"
    where = Path(args.model) if args.model else default
    if (where / "config.json").is_file():
        model, tokenizer = load_causal_lm(where, device=args.device)
        return model, tokenizer, f"checkpoint {where}"
    if args.model:
        raise SystemExit(f"--model {args.model}: no save_pretrained directory there (config.json missing)")
    import torch

    from littlekit.lm.sizes import build_model, qwen3_config
    from littlekit.lm.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(texts, vocab_size=4096, out_dir=work / "tokenizer")
    ids = {k: getattr(tokenizer, f"{k}_token_id") for k in ("bos", "eos", "pad")}
    torch.manual_seed(0)
    cfg = qwen3_config("nano", len(tokenizer), **{f"{k}_token_id": v for k, v in ids.items()})
    model = build_model(cfg).to(args.device).eval()
    return (
        model,
        tokenizer,
        f"fresh nano Qwen3 (no {default}), BPE of {len(tokenizer):,} trained on the texts",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="save_pretrained directory (default: chapter 9's, else a fresh nano)")
    parser.add_argument("--docs", type=int, default=200, help="CLEAR excerpts to score")
    parser.add_argument("--batch-sizes", default="8,32", help="corpus_bpb batch sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds; each method keeps its best")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if args.docs < 1 or args.repeats < 1 or not batch_sizes or min(batch_sizes) < 1:
        parser.error("--docs, --repeats and every batch size must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers.utils import logging as hf_logging

    from littlekit.databuild import corpora
    from littlekit.evals.bpb import corpus_bpb

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(facts_line())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {args.device}, fp32")
    texts = corpora.load_clear()["text"].head(args.docs).tolist()
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as work:
        model, tokenizer, source = load_model(args, texts, Path(work))
    max_length = model.config.max_position_embeddings
    print(f"model: {source}; {model.num_parameters() / 1e6:.2f}M parameters, context {max_length}")
    methods = {"per-document loop": lambda: per_document_loop(model, tokenizer, texts, max_length)}
    for b in batch_sizes:
        methods[f"ours, batch {b}"] = lambda b=b: corpus_bpb(
            model, tokenizer, texts, max_length=max_length, batch_size=b
        )
    for run in methods.values():  # warm-up: allocator, kernels, tokenizer caches
        run()
    best: dict[str, tuple[float, float, dict]] = {}
    for _ in range(args.repeats):
        for name, run in methods.items():
            wall, cpu, result = timed(run)
            if name not in best or cpu < best[name][1]:
                best[name] = (wall, cpu, result)
    loop_wall, loop_cpu, loop = best["per-document loop"]
    n_chars = sum(len(t) for t in texts)
    print(f"texts: {len(texts)} CLEAR excerpts, {n_chars:,} characters, {loop['tokens']:,} scored tokens")
    print(
        f"{'method':<18} {'tokens/s':>9} {'tokens/s/core':>14} {'wall s':>7} {'cpu s':>7} "
        f"{'x loop (wall)':>14} {'x loop (cpu)':>13} {'BPB':>8} {'BPB - loop':>11}"
    )
    for name, (wall, cpu, result) in best.items():
        rates = f"{result['tokens'] / wall:9,.0f} {result['tokens'] / cpu:14,.0f} {wall:7.2f} {cpu:7.2f}"
        ratios = f"{loop_wall / wall:14.2f} {loop_cpu / cpu:13.2f}"
        print(f"{name:<18} {rates} {ratios} {result['bpb']:8.4f} {result['bpb'] - loop['bpb']:+11.2e}")
        if result["tokens"] != loop["tokens"] or result["bytes"] != loop["bytes"]:
            raise SystemExit(
                f"{name} scored different tokens or bytes than the loop: not the same measurement"
            )
    print("same arithmetic check: every method scores the same tokens and bytes; BPB differences above")
    print("ratio = the method's tokens/s / the per-document loop's (same model, texts, process)")
    print(facts_line())


if __name__ == "__main__":
    main()
