"""The CPU cascade's docs/s on the demo corpus, against a bare token-regex pass and stage 1 alone,
and what filtering all of FineWeb-Edu would cost at the measured rates.

    python benchmarks/bench_cascade.py [--in docs.jsonl] [--repeats 3] [--encoder-docs 256]
        [--fasttext-model X.bin] [--word-table T.parquet] [--encoder-model DIR] [--gpu-speedup 1000]

Every figure is measured here, in this process: each stage alone on every text, then the CPU
cascade (aoa -> fasttext -> symbolic -> frequency, a document leaving at the first stage that
drops it), and the bare pass `WORD_RE.findall(text.lower())` that any per-word filter pays, all
timed the same way (littlekit.analysis.throughput: best of --repeats passes after a warm-up pass, per
core-second of process CPU time, wall time beside it). The encoder (stage 3) is measured on the
CPU on the first --encoder-docs texts and costed on GPUs with --gpu-speedup (an assumption).

Trained files: the command line's, else runs/default/artifacts/ (left by `make book`), else small
ones built now in a temporary folder through the same littlekit calls; the output says which.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from littlekit import config
from littlekit.analysis.throughput import (
    CASCADE_ROW,
    DEFAULT_GPU_SPEEDUP,
    FILTER_ORDER,
    BenchArtifacts,
    facts_line,
    fineweb_cost_table,
    measure_stage_rates,
    timed,
)
from littlekit.filter.registry import build_stages
from littlekit.judge.cost import PAPER_ENSEMBLE_PER_SAMPLE
from littlekit.text import WORD_RE

CPU_STAGES = "aoa,fasttext,symbolic,frequency"


def load_texts(path: str | None) -> tuple[list[str], str]:
    source = Path(path) if path else config.data_path("demo_corpus/demo_web.jsonl")
    with source.open(encoding="utf-8") as handle:
        return [json.loads(line).get("text") or "" for line in handle if line.strip()], str(source)


def bare_regex_seconds(texts: list[str], repeats: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest bare token-regex pass, after a warm-up pass."""
    findall = WORD_RE.findall

    def run() -> None:
        for text in texts:
            findall(text.lower())

    run()
    passes = [timed(run) for _ in range(repeats)]
    wall, cpu, _ = min(passes, key=lambda p: p[1])
    return wall, cpu


def artifact(args: argparse.Namespace, artifacts: BenchArtifacts, option: str) -> tuple[str, str]:
    given = getattr(args, option)
    if given:
        return given, f"{given} (command line)"
    path, how = artifacts.get(option)
    return str(path), how


def print_rates(rates: pd.DataFrame, bare_cpu: float, n_texts: int) -> None:
    """One line per row; `x bare` = CPU time over the bare regex's on the same texts."""
    print(f"{'stage':<12} {'docs/s/core':>12} {'M tok/s':>8} {'cpu s':>7} {'wall s':>7} {'x bare':>7}  note")
    for row in rates.to_dict("records"):
        same_texts = row["unit"] == "core" and row["docs"] == n_texts
        ratio = f"{row['cpu_seconds'] / bare_cpu:7.2f}" if same_texts else "      -"
        print(f"{row['stage']:<12} {row['docs/s']:12,.0f} {row['tokens/s'] / 1e6:8.2f} "
              f"{row['cpu_seconds']:7.2f} {row['seconds']:7.2f} {ratio}  {row['note']}")


def print_cost(table: pd.DataFrame) -> None:
    print(f"{'stage':<38} {'unit':<4} {'fraction':>8} {'docs/s':>12} {'core-h':>10} {'GPU-h':>9} "
          f"{'USD':>13} {'x judge':>9}")
    for row in table.itertuples(index=False):
        rate = "" if pd.isna(row.docs_per_second) else f"{row.docs_per_second:,.0f}"
        core = "" if pd.isna(row.core_hours) else f"{row.core_hours:,.0f}"
        gpu = "" if pd.isna(row.gpu_hours) else f"{row.gpu_hours:,.1f}"
        fraction = "" if pd.isna(row.fraction) else f"{row.fraction:.3f}"
        print(f"{row.stage:<38} {row.unit:<4} {fraction:>8} {rate:>12} {core:>10} {gpu:>9} "
              f"{row.usd:13,.0f} {row.share_of_judge:9.2e}")
    for row in table.itertuples(index=False):
        print(f"  {row.stage}: {row.note}")
    print("assumptions:")
    for key, value in table.attrs["assumptions"].items():
        print(f"  {key}: {value}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--in", dest="inp", help="jsonl with a 'text' field (default: embedded demo corpus)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per measurement (best kept)")
    parser.add_argument("--encoder-docs", type=int, default=256, help="texts for the encoder (0: skip)")
    parser.add_argument("--fasttext-model")
    parser.add_argument("--word-table")
    parser.add_argument("--encoder-model")
    parser.add_argument("--gpu-speedup", type=float, default=DEFAULT_GPU_SPEEDUP)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    texts, source = load_texts(args.inp)
    print(f"texts: {len(texts):,} from {source} (mean {sum(map(len, texts)) / len(texts):,.0f} chars)")
    print(facts_line())
    with tempfile.TemporaryDirectory(prefix="bench-cascade-") as workdir:
        artifacts = BenchArtifacts(workdir)
        options = {}
        for option in ("fasttext_model", "word_table"):
            options[option], how = artifact(args, artifacts, option)
            print(f"{option}: {how}")
        stages = build_stages(CPU_STAGES, options)
        rates = measure_stage_rates(texts, stages, repeats=args.repeats)
        bare_wall, bare_cpu = bare_regex_seconds(texts, args.repeats)
        if args.encoder_docs > 0:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            options["encoder_model"], how = artifact(args, artifacts, "encoder_model")
            print(f"encoder_model: {how}")
            encoder = build_stages("encoder", {**options, "encoder_gate": "all", "device": "cpu"})
            encoder_rates = measure_stage_rates(texts[: args.encoder_docs], encoder, repeats=1, cascade=False)
            attrs = rates.attrs
            rates = pd.concat([rates, encoder_rates], ignore_index=True)
            rates.attrs = attrs

    print(f"\ntiming: {rates.attrs['timing']}")
    print(f"bare token regex: {len(texts) / bare_cpu:,.0f} docs/s per core ({bare_cpu:.2f} s CPU, "
          f"{bare_wall:.2f} s wall)")
    print_rates(rates, bare_cpu, len(texts))
    by_stage = rates.set_index("stage")
    cascade_cpu, aoa_cpu = by_stage.loc[CASCADE_ROW, "cpu_seconds"], by_stage.loc["aoa", "cpu_seconds"]
    print(f"CPU cascade / bare regex: {cascade_cpu / bare_cpu:.2f}x; CPU cascade / stage 1 alone: "
          f"{cascade_cpu / aoa_cpu:.2f}x (CPU time; later stages see only what earlier ones keep)")
    print("share of the texts reaching each stage of the CPU cascade: "
          + ", ".join(f"{k} {v:.3f}" for k, v in rates.attrs["reached"].items()))

    order = [name for name in FILTER_ORDER if name in by_stage.index] + [CASCADE_ROW]
    ordered = by_stage.reindex(order).reset_index()
    ordered.attrs = rates.attrs
    table = fineweb_cost_table(ordered, gpu_speedup=args.gpu_speedup)
    judge = f"${PAPER_ENSEMBLE_PER_SAMPLE:g} per document"
    print(f"\ncost of filtering FineWeb-Edu at these rates (LLM judge: {judge}):")
    print_cost(table)


if __name__ == "__main__":
    main()
