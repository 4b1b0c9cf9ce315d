"""Stage 3, the encoder classifier: docs/s on the CPU, batched against one document at a time.

    python benchmarks/bench_encoder.py [--in docs.jsonl] [--docs 128] [--batch-sizes 8,32,128]
        [--encoder-model DIR] [--device cpu] [--repeats 1]

The first --docs texts of the demo corpus are scored by `EncoderStage` (truncation at 2,048
tokens, the paper's) once per text (`stage(text)`, a forward pass each) and in padded batches
(`score_batch`, texts sorted by length so batches hold similar lengths), each the best of
--repeats passes after a warm-up on a few texts. Rates are given per wall second and per
core-second of process CPU time (torch's threads all count), and the batched/one-by-one ratio.

The encoder: --encoder-model, else runs/default/artifacts/models/modernbert_grade (left by
`make book`), else the embedded default's tiny ModernBERT built and briefly fine-tuned now
through littlekit.fit.encoder (same size, so the same speed; the output says which).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from littlekit import config
from littlekit.analysis.throughput import (
    ANCHOR_GPU_TOKENS_PER_S,
    DEFAULT_GPU_SPEEDUP,
    BenchArtifacts,
    decide_batched,
    facts_line,
    timed,
)


def load_texts(path: str | None, n: int) -> list[str]:
    source = Path(path) if path else config.data_path("demo_corpus/demo_web.jsonl")
    with source.open(encoding="utf-8") as handle:
        texts = [json.loads(line).get("text") or "" for line in handle if line.strip()]
    return texts[:n]


def best(run, repeats: int) -> tuple[float, float, object]:
    """The fastest of `repeats` passes by wall time: (wall, CPU, result)."""
    return min((timed(run) for _ in range(repeats)), key=lambda p: p[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--in", dest="inp", help="jsonl with a 'text' field (default: embedded demo corpus)")
    parser.add_argument("--docs", type=int, default=128, help="how many texts to score")
    parser.add_argument("--batch-sizes", default="8,32,128", help="batch sizes for score_batch (32: default)")
    parser.add_argument("--encoder-model", help="transformers classifier directory")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--repeats", type=int, default=1, help="timed passes per setting (best kept)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    from littlekit.filter.encoder import EncoderStage

    hf_logging.disable_progress_bar()
    texts = load_texts(args.inp, args.docs)
    print(f"texts: {len(texts):,} (mean {sum(map(len, texts)) / len(texts):,.0f} chars)")
    print(facts_line())
    with tempfile.TemporaryDirectory(prefix="bench-encoder-") as workdir:
        if args.encoder_model:
            path, how = args.encoder_model, f"{args.encoder_model} (command line)"
        else:
            path, how = BenchArtifacts(workdir).get("encoder_model")
        stage = EncoderStage(path, device=args.device)
    model = stage.model
    n_params = sum(p.numel() for p in model.parameters())
    print(f"encoder: {how}")
    print(f"  {type(model).__name__}, {n_params / 1e6:.1f}M parameters, hidden {model.config.hidden_size}, "
          f"{model.config.num_hidden_layers} layers, truncation {stage.max_length} tokens, "
          f"device {stage.device}")

    [stage(text) for text in texts[:8]]  # warm-up: first calls allocate and pick kernels
    decide_batched(stage, texts[:32])
    wall1, cpu1, decisions = best(lambda: [stage(text) for text in texts], args.repeats)
    mean_tokens = sum(d.scores["n_tokens"] for d in decisions) / len(decisions)
    kept = sum(d.keep for d in decisions)
    print(f"  mean {mean_tokens:,.0f} encoder tokens per text; kept {kept}/{len(texts)}")
    print(f"{'setting':<16} {'docs/s':>8} {'docs/s/core':>12} {'tokens/s':>9} {'wall s':>7} {'cpu s':>7} "
          f"{'x one-by-one':>13}")

    def line(label: str, wall: float, cpu: float) -> None:
        print(f"{label:<16} {len(texts) / wall:8.1f} {len(texts) / cpu:12.1f} "
              f"{len(texts) * mean_tokens / wall:9,.0f} {wall:7.2f} {cpu:7.2f} {wall1 / wall:13.2f}")

    line("one by one", wall1, cpu1)
    best_rate = 0.0
    for size in (int(part) for part in args.batch_sizes.split(",") if part.strip()):
        stage.batch_size = size
        wall, cpu, batched = best(lambda: decide_batched(stage, texts), args.repeats)
        changed = sum(a.keep != b.keep for a, b in zip(batched, decisions, strict=True))
        if changed:
            print(f"  note: batch {size} changed {changed} verdicts (padding changes floating-point sums)")
        line(f"batch {size}", wall, cpu)
        best_rate = max(best_rate, len(texts) / cpu)
    print("ratio = one-by-one wall time / batched wall time (same texts, same process)")
    anchor_docs = ANCHOR_GPU_TOKENS_PER_S / mean_tokens
    print(f"for scale: at gpu_speedup {DEFAULT_GPU_SPEEDUP:g} (an assumption, analysis.throughput) one GPU "
          f"would score {best_rate * DEFAULT_GPU_SPEEDUP:,.0f} docs/s of this model; FineWeb-Edu's "
          f"BERT-base-class classifier ran at {ANCHOR_GPU_TOKENS_PER_S:,.0f} tokens/s per H100, "
          f"{anchor_docs:,.0f} docs/s at these texts' {mean_tokens:,.0f} tokens each")


if __name__ == "__main__":
    main()
