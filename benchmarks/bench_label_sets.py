"""How much the rewrites add: leave-one-corpus-out fastText with and without them.

    python benchmarks/bench_label_sets.py [--run runs/default] [--beyond 0.025] [--out table.csv]

The run's training labels (`<run>/labels/train_labels.jsonl`, judge labels and rewrites by
default) train one fastText model per held-out corpus with chapter 3's recipe
(`littlekit.fit.generalisation.leave_one_corpus_out_fasttext`), twice: on every label set, and
with the rewrites (`littlekit.fit.labels.training_only`) taken out. A rewrite shares its corpus
with its original, so a held-out corpus takes its rewrites out of training with it. Both runs
score the same rows (rewrites are never scored), so the comparison changes one thing: whether
the rewrites trained the models. `<run>/fasttext/loco_scores.parquet` (chapter 3's) is used
for the first run when it is there.

Printed, for each: the ranking AUC of K-5 labels above every other band, pooled and per held-out
corpus (`ranking_table`); and the share of K-5 labels kept at the fastText minimum that keeps
--beyond of the pooled Beyond-K-5 labels (each run its own minimum, chosen on these held-out
scores: a hindsight point for comparing the two, not an operating point). Stage 1 is not applied.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from littlekit import runs as runs_folder
from littlekit.analysis.throughput import facts_line, machine_facts
from littlekit.fit.generalisation import leave_one_corpus_out_fasttext, ranking_table
from littlekit.fit.labels import load_labels, training_only
from littlekit.fit.recipe_fasttext import FastTextRecipe


def k5_kept_at_beyond(frame: pd.DataFrame, beyond: float) -> tuple[float, float]:
    """(K-5 share kept, fastText minimum) at the smallest minimum keeping at most `beyond` of the
    Beyond-K-5 rows (keep = P(K5) >= minimum)."""
    is_k5 = frame["band"].eq("K5").to_numpy()
    p = frame["p_k5"].to_numpy(dtype=float)
    other = np.sort(p[~is_k5])[::-1]
    allowed = int(np.floor(beyond * len(other)))
    # the minimum sits just above the (allowed + 1)-th highest Beyond-K-5 score
    minimum = float(np.nextafter(other[allowed], 1.0)) if allowed < len(other) else 0.0
    return float((p[is_k5] >= minimum).mean()), minimum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=Path("runs/default"))
    parser.add_argument("--beyond", type=float, default=0.025)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    print(facts_line(machine_facts()))
    labels_file = runs_folder.path(args.run, "labels")
    if not labels_file.is_file():  # a fresh clone: nothing to compare yet (make bench goes on)
        print(f"no {labels_file}: `make book` or `littlekit fit labels --out {args.run}/artifacts` writes it")
        return
    labels = load_labels(labels_file)
    rewrites = training_only(labels["source"])
    print(f"{len(labels):,} training labels in {args.run}, {int(rewrites.sum()):,} of them rewrites")
    if not rewrites.any():
        raise SystemExit("these labels hold no rewrites: nothing to compare")
    recipe = FastTextRecipe(seed=args.seed)
    runs = {}
    saved = runs_folder.path(args.run, "fasttext_fit") / "loco_scores.parquet"
    for name, subset in (("judge + rewrites", labels), ("judge only", labels[~rewrites])):
        if name == "judge + rewrites" and saved.is_file():
            runs[name] = pd.read_parquet(saved)
            print(f"{name}: chapter 3's scores, {saved}")
            continue
        t0 = time.perf_counter()
        runs[name] = leave_one_corpus_out_fasttext(subset, recipe, first_stage=None, overlap=False)
        print(f"{name}: {runs[name]['corpus'].nunique()} models trained in {time.perf_counter() - t0:.0f}s")
    common = set(runs["judge + rewrites"]["id"]) & set(runs["judge only"]["id"])
    frames = {}
    for name, run in runs.items():
        frames[name] = run[run["id"].isin(common)].sort_values("id").reset_index(drop=True)
    base = frames["judge only"]
    table = ranking_table(base, {name: frame["p_k5"].to_numpy() for name, frame in frames.items()})
    print(f"ranking AUC, K-5 above every other band, corpus held out ({len(common):,} labels, both runs):")
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    for name, frame in frames.items():
        share, minimum = k5_kept_at_beyond(frame, args.beyond)
        print(
            f"{name}: {share:.1%} of K-5 labels kept at {args.beyond:.1%} Beyond-K-5 "
            f"(fastText P(K5) >= {minimum:.3f})"
        )
    if args.out:
        table.to_csv(args.out)


if __name__ == "__main__":
    main()
