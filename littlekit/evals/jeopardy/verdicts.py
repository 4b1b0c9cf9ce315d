"""The chapter's verdicts on the paper's Jeopardy claim, each with its uncertainty.

The paper's claim has two parts: inside K-5 LittleLearner is comparable to UNFILTERED, beyond K-5 it
falls behind. Both models answer the same clues, so every comparison is paired by clue, and the
intervals come from a bootstrap that resamples clues within each split (the same draw for both
models). Counts carry exact (Clopper-Pearson) intervals, so 0 of n correct still has an upper bound
above 0. A direction is "as in the paper" only when its 95% interval excludes zero; a zero count on
both sides is "untestable at this scale" and an interval across zero "inconclusive". The intervals
cover the sample of clues, not training-seed variance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from littlekit.evals.jeopardy.labels import SPLITS
from littlekit.stats import clopper_pearson

PAIR = ("LittleLearner", "UNFILTERED")


def _fmt_share(k: int, n: int) -> str:
    low, high = clopper_pearson(k, n)
    return f"{k}/{n} = {k / n:.1%} (exact 95% CI {low:.1%} to {high:.1%})"


def _paired(frame: pd.DataFrame, columns: Sequence[str], pair: Sequence[str], split: str) -> dict:
    """{model: {column: array}} over the clues of `split` that both models answered, in one order."""
    rows = frame[(frame["split"] == split) & frame["model"].isin(pair)]
    wide = rows.pivot_table(index="id", columns="model", values=list(columns), aggfunc="first").dropna()
    return {m: {c: wide[c][m].to_numpy(dtype=float) for c in columns} for m in pair}


def _draws(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, n, size=(n_boot, n))


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def accuracy_gaps(
    generations: pd.DataFrame,
    pair: Sequence[str] = PAIR,
    splits: Sequence[str] = SPLITS,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, tuple[float, float, float]]:
    """(estimate, low, high) of the second model's accuracy minus the first's per split (paired by
    clue), and under "change" the last split's gap minus the first's (the paper: UNFILTERED's lead
    grows beyond K-5)."""
    rng = np.random.default_rng(seed)
    out: dict[str, tuple[float, float, float]] = {}
    boots = []
    for split in splits:
        data = _paired(generations, ["correct"], pair, split)
        diff = data[pair[1]]["correct"] - data[pair[0]]["correct"]
        means = diff[_draws(len(diff), n_boot, rng)].mean(axis=1)
        out[split] = (float(diff.mean()), *_interval(means, confidence))
        boots.append(means)
    change = boots[-1] - boots[0]
    out["change"] = (out[splits[-1]][0] - out[splits[0]][0], *_interval(change, confidence))
    return out


def bpb_comparison(
    scored: pd.DataFrame,
    pair: Sequence[str] = PAIR,
    splits: Sequence[str] = SPLITS,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, tuple[float, float, float]]:
    """(estimate, low, high) of corpus bits per byte comparisons over clues both models scored:
    "ratio" (first model's BPB / second's in the first split), "rise <model>" (its BPB in the last
    split minus the first) and "rise difference" (the first model's rise minus the second's)."""
    rng = np.random.default_rng(seed)
    per_split = {}
    for split in splits:
        data = _paired(scored, ["nats", "bytes"], pair, split)
        n = len(data[pair[0]]["nats"])
        idx = _draws(n, n_boot, rng)
        point, boot = {}, {}
        for m in pair:
            nats, nbytes = data[m]["nats"], data[m]["bytes"]
            point[m] = nats.sum() / (math.log(2) * nbytes.sum())
            boot[m] = nats[idx].sum(axis=1) / (math.log(2) * nbytes[idx].sum(axis=1))
        per_split[split] = (point, boot)
    first, last = per_split[splits[0]], per_split[splits[-1]]
    ratios = first[1][pair[0]] / first[1][pair[1]]
    out = {"ratio": (first[0][pair[0]] / first[0][pair[1]], *_interval(ratios, confidence))}
    rises = {}
    for m in pair:
        rises[m] = last[1][m] - first[1][m]
        out[f"rise {m}"] = (last[0][m] - first[0][m], *_interval(rises[m], confidence))
    out["rise difference"] = (
        out[f"rise {pair[0]}"][0] - out[f"rise {pair[1]}"][0],
        *_interval(rises[pair[0]] - rises[pair[1]], confidence),
    )
    return {k: tuple(float(x) for x in v) for k, v in out.items()}


def _direction(low: float, high: float, paper: str, opposite: str) -> str:
    if low > 0:
        return paper
    if high < 0:
        return opposite
    return "inconclusive (the interval includes zero)."


def verdict_lines(
    generations: pd.DataFrame,
    scored: pd.DataFrame,
    pair: Sequence[str] = PAIR,
    splits: Sequence[str] = SPLITS,
    tolerance: float = 0.10,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[str]:
    """The comparison in sentences computed from the numbers, each with its 95% interval or saying
    "inconclusive" / "untestable at this scale". `tolerance`: how far apart (as a share) two BPBs
    may be and still count as comparable."""
    little, unf = pair
    if not set(pair) <= set(generations["model"]):
        return [f"the direction check needs models labelled {little!r} and {unf!r}"]
    if not set(splits) <= set(generations["split"]):
        evaluated = sorted(set(generations["split"]))
        return [f"the direction check needs clues in both splits; evaluated: {evaluated}"]
    lines = []
    counts = generations.groupby(["model", "split"])["correct"].agg(["sum", "size"])
    for split in splits:
        parts = [f"{m} {_fmt_share(int(counts.loc[(m, split), 'sum']), int(counts.loc[(m, split), 'size']))}"
                 for m in pair]
        lines.append(f"Accuracy {split}: " + "; ".join(parts) + ".")
    if int(counts.loc[list(pair), "sum"].sum()) == 0:
        lines.append("Accuracy direction: untestable at this scale: neither model answers a clue correctly "
                     "in either split (the exact upper bounds above are what 0 correct still allows).")
    else:
        gaps = accuracy_gaps(generations, pair, splits, n_boot, seed)
        discordant = generations.pivot_table(index="id", columns="model", values="correct", aggfunc="first")
        if (discordant[little] != discordant[unf]).sum() == 0:
            lines.append("Accuracy direction: inconclusive: both models are right on the same clues, so no "
                         "clue separates them.")
        else:
            est, low, high = gaps["change"]
            k5, beyond = gaps[splits[0]], gaps[splits[-1]]
            lines.append(
                f"Accuracy direction: {unf}'s lead is {k5[0]:+.1%} (95% CI {k5[1]:+.1%} to {k5[2]:+.1%})"
                f" in {splits[0]} and {beyond[0]:+.1%} ({beyond[1]:+.1%} to {beyond[2]:+.1%})"
                f" in {splits[-1]}; it changes by {est:+.1%} (95% CI {low:+.1%} to {high:+.1%},"
                " bootstrap over clues): "
                + _direction(low, high, "the paper's direction (the lead grows beyond K-5).",
                             "the opposite of the paper's direction (the lead shrinks beyond K-5).")
            )
    bpb = bpb_comparison(scored, pair, splits, n_boot, seed)
    ratio, low, high = bpb["ratio"]
    if 1 - tolerance <= low and high <= 1 + tolerance:
        word = f"comparable (the interval lies within ±{tolerance:.0%}), as in the paper."
    elif low > 1 + tolerance or high < 1 - tolerance:
        word = f"not comparable (the interval lies beyond ±{tolerance:.0%}), unlike the paper's 5B models."
    else:
        word = f"inconclusive (the interval reaches across the ±{tolerance:.0%} margin of 'comparable')."
    lines.append(f"Inside {splits[0]} {little}'s BPB is {ratio:.2f} x {unf}'s (95% CI {low:.2f} to "
                 f"{high:.2f}, bootstrap over clues): {word}")
    rise = {m: bpb[f"rise {m}"] for m in pair}
    lines.append(
        f"Likelihood: from {splits[0]} to {splits[-1]} the gold responses' BPB changes by "
        + " and ".join(f"{r[0]:+.3f} (95% CI {r[1]:+.3f} to {r[2]:+.3f}) for {m}" for m, r in rise.items())
        + "."
    )
    est, low, high = bpb["rise difference"]
    lines.append(
        f"Likelihood direction: {little}'s rise minus {unf}'s is {est:+.3f} "
        f"(95% CI {low:+.3f} to {high:+.3f}): "
        + _direction(low, high, f"{little} loses more beyond K-5 than {unf}, as in the paper.",
                     f"{little} loses less beyond K-5 than {unf}, the opposite of the paper's direction.")
    )
    lines.append("These intervals cover the sample of clues only: each model is one training seed, and "
                 "seed-to-seed variance is not in them.")
    return lines


def empty_lines(empties: pd.DataFrame) -> list[str]:
    """One sentence per row of `evaluation.empty_table`: the share of empty answers with its exact
    95% interval, then (where the table has them) the share with no word to grade and the plain
    rule's empty share."""
    lines = []
    for row in empties.to_dict("records"):
        where = ", ".join(str(row[c]) for c in empties.columns if c in ("model", "split", "band"))
        text = f"Empty answers, {where}: {_fmt_share(int(row['empty']), int(row['n']))}"
        if "ungradeable" in row:
            text += f"; no word to grade {_fmt_share(int(row['ungradeable']), int(row['n']))}"
        if "plain_empty" in row:
            text += f"; under the plain rule {_fmt_share(int(row['plain_empty']), int(row['n']))}"
        lines.append(text + ".")
    return lines
