"""The grade head (littlekit.filter.grade_head) on leave-one-corpus-out scores, and its features' cost.

    python benchmarks/bench_grade_head.py [--run runs/default] [--fasttext-model X.bin]
        [--docs 2000] [--repeats 3] [--C 1.0] [--out table.csv]

Ranking. With `<run>/encoder/loco_scores.parquet` (chapter 4's leave-one-corpus-out scores:
fastText's `p_k5` and stage 3's `enc_p_k5` for every training label, each from models that
never saw its corpus; rows stage 3 left unscored are dropped) and the label texts of
`<run>/labels/train_labels.jsonl` (joined on id), the script computes the readability features
of every label and prints the ranking AUC of K-5 labels above every other band
(`littlekit.fit.generalisation.ranking_table`), pooled and per held-out corpus, of:

- fastText, stage 3 (the encoder), and both (sum of log-odds, chapter 4's "stages 2+3");
- the grade head over the encoder's log-odds and the features, cross-fitted by corpus
  (`cross_fitted_p_k5` with folds = corpus: each corpus scored by a head fitted on the others);
- the head on the features alone (no encoder input), cross-fitted the same way;
- fastText + each head (sum of log-odds).

A head fitted on the other corpora sees their leave-one-corpus-out encoder scores, so it learns
how far to trust the encoder on text it never saw, which is where it is used.

Speed. On a seeded sample of --docs of those texts (the demo corpus when there are no run
files), `readability_features` against fastText's `score_batch` (1,000 texts a call), the
baseline, in this process: a warm-up pass each (fills the per-word memos), then --repeats
interleaved passes, best kept; docs/s per wall second and per core-second (process CPU time),
and how many times fastText's time the features take. The feature pass over every label
(before the table) is printed too: it is the cold pass.

fastText: --fasttext-model, else `<run>/artifacts/models/fasttext_grade.bin` (left by `make
book`), else a small one built now (littlekit.analysis.throughput.BenchArtifacts); the output says
which.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from littlekit import config
from littlekit.analysis.throughput import BenchArtifacts, facts_line, machine_facts, timed
from littlekit.filter import grade_head as gh
from littlekit.fit.generalisation import ranking_table

FASTTEXT_BATCH = 1_000


def cpu_model() -> str:
    """The CPU's model name as lscpu reports it (from /proc/cpuinfo), else platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def log_odds(p) -> np.ndarray:
    return gh.encoder_log_odds(p)


def load_scored_labels(run: Path) -> tuple[pd.DataFrame | None, str]:
    """The leave-one-corpus-out rows stage 3 scored, with their texts; None and why when absent."""
    loco_path, labels_path = run / "encoder" / "loco_scores.parquet", run / "labels" / "train_labels.jsonl"
    missing = [str(path) for path in (loco_path, labels_path) if not path.is_file()]
    if missing:
        return None, f"no {' or '.join(missing)} (left by make book's chapter 4)"
    from littlekit.fit.labels import load_labels

    loco = pd.read_parquet(loco_path)
    labels = load_labels(labels_path)
    scored = loco.dropna(subset=["p_k5", "enc_p_k5"])
    if scored["id"].duplicated().any() or labels["id"].duplicated().any():
        raise SystemExit(f"ids repeat in {loco_path} or {labels_path}: cannot join on id")
    frame = scored.merge(labels[["id", "text"]], on="id", how="inner", validate="one_to_one")
    note = (
        f"{len(loco):,} leave-one-corpus-out rows in {loco_path}, {len(loco) - len(scored):,} unscored by "
        f"stage 3 dropped, {len(scored) - len(frame):,} without a text in {labels_path}; "
        f"{len(frame):,} labels used"
    )
    return frame.reset_index(drop=True), note


def ranking_section(frame: pd.DataFrame, args: argparse.Namespace) -> tuple[list[str], pd.DataFrame]:
    wall, cpu, features = timed(lambda: gh.readability_features(frame["text"]))
    is_k5 = frame["band"].eq("K5").to_numpy()
    folds = frame["corpus"].to_numpy()
    fasttext, encoder = frame["p_k5"].to_numpy(), frame["enc_p_k5"].to_numpy()
    head = gh.cross_fitted_p_k5(encoder, features, is_k5, folds, C=args.C)
    features_only = gh.cross_fitted_p_k5(None, features, is_k5, folds, C=args.C)
    scores = {
        "fastText": fasttext,
        "encoder": encoder,
        "fastText+encoder": log_odds(fasttext) + log_odds(encoder),
        "head": head,
        "head (features only)": features_only,
        "fastText+head": log_odds(fasttext) + log_odds(head),
        "fastText+head (features only)": log_odds(fasttext) + log_odds(features_only),
    }
    table = ranking_table(frame, scores).rename(columns={"K-5 labels": "K-5", "Beyond-K-5 labels": "other"})
    full = gh.GradeHead.fit(encoder, features, is_k5, C=args.C)
    weights = sorted(zip(full.inputs, full.coefficients, strict=True), key=lambda pair: -abs(pair[1]))
    lines = [
        f"features of {len(frame):,} labels (cold pass, lexicon load included): {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU, {len(frame) / wall:,.0f} docs/s; {int(features['no_words'].sum())} without words",
        "ranking AUC, K-5 above every other band, leave-one-corpus-out "
        f"(heads cross-fitted by corpus, C={args.C:g}):",
        table.to_string(float_format=lambda x: f"{x:.3f}"),
        "head fitted on every label, largest standardised coefficients: "
        + ", ".join(f"{name} {coef:+.2f}" for name, coef in weights[:8]),
    ]
    return lines, table


def speed_section(texts: list[str], fasttext_path: str, how: str, repeats: int) -> list[str]:
    from littlekit.filter.fasttext import FastTextStage

    stage = FastTextStage(fasttext_path)

    def fasttext_pass() -> None:
        for start in range(0, len(texts), FASTTEXT_BATCH):
            stage.score_batch(texts[start : start + FASTTEXT_BATCH])

    def features_pass() -> None:
        gh.readability_features(texts)

    fasttext_pass(), features_pass()  # warm-up: memos, textstat's dictionaries
    passes = {"fastText": [], "features": []}
    for _ in range(repeats):
        passes["fastText"].append(timed(fasttext_pass)[:2])
        passes["features"].append(timed(features_pass)[:2])
    best = {name: (min(w for w, _ in runs), min(c for _, c in runs)) for name, runs in passes.items()}
    n = len(texts)
    lines = [
        f"speed on {n:,} texts (mean {sum(map(len, texts)) / max(n, 1):,.0f} chars), CPU {cpu_model()}; "
        f"fastText model: {how}",
        "timing: best of interleaved passes after a warm-up pass, in this process, one thread each",
    ]
    for name, (wall, cpu) in best.items():
        lines.append(f"  {name:9s} {n / wall:9,.0f} docs/s wall  {n / cpu:9,.0f} docs/s per core-second")
    (ft_wall, ft_cpu), (fe_wall, fe_cpu) = best["fastText"], best["features"]
    lines.append(
        f"  features / fastText time: {fe_wall / ft_wall:.1f}x wall, {fe_cpu / ft_cpu:.1f}x CPU "
        f"(features + fastText cost {(fe_cpu + ft_cpu) / ft_cpu:.1f}x stage 2 alone)"
    )
    return lines


def demo_texts() -> list[str]:
    with config.data_path("demo_corpus/demo_web.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line).get("text") or "" for line in handle if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", default="runs/default", help="run folder (default runs/default)")
    parser.add_argument("--fasttext-model", help="fastText .bin (default: the run's, else built now)")
    parser.add_argument("--docs", type=int, default=2_000, help="texts in the speed sample")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per side (best kept)")
    parser.add_argument("--C", type=float, default=1.0, help="the heads' inverse L2 strength")
    parser.add_argument("--out", help="write the AUC table here (csv)")
    args = parser.parse_args(argv)
    run = Path(args.run)

    print(facts_line(machine_facts(torch_threads=False)) + f", CPU {cpu_model()}")
    frame, note = load_scored_labels(run)
    print(("ranking: " if frame is not None else "ranking skipped: ") + note, flush=True)
    if frame is not None:
        lines, table = ranking_section(frame, args)
        print("\n".join(lines), flush=True)
        if args.out:
            table.to_csv(args.out)
            print(f"wrote {args.out}")
        texts = frame["text"].sample(n=min(args.docs, len(frame)), random_state=0).tolist()
    else:
        texts = demo_texts()[: args.docs]

    with tempfile.TemporaryDirectory(prefix="bench-grade-head-") as workdir:
        if args.fasttext_model:
            path, how = args.fasttext_model, f"{args.fasttext_model} (--fasttext-model)"
        else:
            path, how = BenchArtifacts(workdir, root=run / "artifacts").get("fasttext_model")
        start = time.perf_counter()
        print("\n".join(speed_section(texts, str(path), how, args.repeats)))
        print(f"(speed section {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
