"""One comparison the experiments share: the same held-out problems answered under two conditions
(two sizes, two tokenizers, before and after post-training), and the change in accuracy with a
paired bootstrap interval over problems.

A verdict says no more than its numbers (`change_verdict`): "raises" or "lowers" only when the
interval excludes zero; "untestable at this scale" when both conditions answer nothing right (a
floor: the bootstrap interval of 0 against 0 is [0, 0], which says nothing about the model, and
each accuracy's exact binomial interval, `exact low`/`exact high`, still reaches
`detectable_change`); "does not change" only when a positive control, another model under the
same intervention, moved; otherwise "inconclusive". `claim_verdict` puts the parts of a paper's
claim together: "reproduced" only when every part holds with its interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from littlekit.stats import clopper_pearson, paired_difference, seed_interval


def paired_changes(
    results: pd.DataFrame,
    condition: str,
    before: str,
    after: str,
    by: Sequence[str] = ("model", "band"),
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per group of `by`: accuracy under `before` and `after` (values of column `condition`) on the
    same problems, the change, its 95% paired bootstrap interval, and the problem count.

    `results` are `evals.curriculum` rows (id, n, c) with the `condition` and `by` columns; within a
    group both conditions must hold the same problem ids.
    """
    rows = []
    frame = results.assign(rate=results["c"] / results["n"])
    for key, part in frame.groupby(list(by), sort=False):
        rates = part.pivot_table(index="id", columns=condition, values="rate")
        if before not in rates or after not in rates or rates[[before, after]].isna().any().any():
            raise ValueError(f"{key}: {condition} {before!r} and {after!r} must answer the same problems")
        change = paired_difference(rates[before], rates[after], n_boot=n_boot, seed=seed)
        names = key if isinstance(key, tuple) else (key,)
        counts = part.groupby(condition)[["c", "n"]].sum()
        exact = {name: clopper_pearson(int(counts.loc[name, "c"]), int(counts.loc[name, "n"]))
                 for name in (before, after)}  # fmt: skip
        rows.append(
            {
                **dict(zip(by, names, strict=True)),
                f"accuracy {before}": float(rates[before].mean()),
                f"accuracy {after}": float(rates[after].mean()),
                "change": change["difference"],
                "low": change["low"],
                "high": change["high"],
                "problems": change["n"],
                f"correct {before}": int(counts.loc[before, "c"]),
                f"correct {after}": int(counts.loc[after, "c"]),
                f"exact high {before}": exact[before][1],
                f"exact high {after}": exact[after][1],
                "detectable": detectable_change(rates[before].mean(), rates[after].mean(), change["n"]),
            }
        )
    return pd.DataFrame(rows)


def detectable_change(before: float, after: float, problems: int) -> float:
    """The smallest change in accuracy a comparison of `problems` items detects with 80% power at
    5% (two-sided): 2.8 standard errors of a difference of two proportions, each taken at least at
    3 / problems (the "rule of three" bound of a proportion seen 0 times), so a floor never
    claims to detect everything. An approximation: the paired bootstrap is usually tighter."""
    if problems <= 0:
        return math.nan
    floor = min(0.5, 3.0 / problems)
    rates = [min(max(p, floor), 1 - floor) for p in (before, after)]
    variance = sum(p * (1 - p) for p in rates)
    return float(2.8 * math.sqrt(variance / problems))


def change_verdict(row: pd.Series | dict, control: pd.Series | dict | None = None) -> str:
    """What a `paired_changes` row shows (see the module): "raises", "lowers", "untestable at this
    scale", "does not change" (the interval holds 0 and `control`, the same intervention's row for
    a model that can move, moved) or "inconclusive"."""
    if row["low"] > 0:
        return "raises"
    if row["high"] < 0:
        return "lowers"
    if _at_floor(row):
        return "untestable at this scale"
    if control is not None and change_verdict(control) in ("raises", "lowers"):
        return "does not change"
    return "inconclusive"


def null_change(row: pd.Series | dict, margin: float) -> str:
    """A `paired_changes` row read against a claim of no change, with an equivalence margin (in
    accuracy, 0.05 = five points): a floor is "untestable at this scale", the whole interval within
    +-margin "does not change", wholly above or below it "raises" or "lowers", else "inconclusive"."""
    if change_verdict(row) == "untestable at this scale":
        return "untestable at this scale"
    if row["low"] > margin:
        return "raises"
    if row["high"] < -margin:
        return "lowers"
    return "does not change" if -margin <= row["low"] and row["high"] <= margin else "inconclusive"


def margin_change_verdict(row: pd.Series | dict, margin: float) -> str:
    """`change_verdict`'s "raises" or "lowers"; otherwise the row read by `null_change`, so an
    interval that holds 0 reads "does not change" only inside the margin."""
    verdict = change_verdict(row)
    return verdict if verdict in ("raises", "lowers") else null_change(row, margin)


def _at_floor(row: pd.Series | dict) -> bool:
    """Nothing right under either condition (by the correct counts, else the accuracies)."""
    # a row of a table that joins several comparisons holds the other comparisons' columns empty:
    # only the counts this row has decide
    correct = [key for key in row.keys() if str(key).startswith("correct ") and pd.notna(row[key])]
    if correct:
        return all(row[key] == 0 for key in correct)
    return all(row[key] == 0 for key in row.keys() if str(key).startswith("accuracy ") and pd.notna(row[key]))


def claim_verdict(parts: Sequence[tuple[str, str, str]]) -> list[str]:
    """One line per part of a claim, (part, the verdict the paper reports, the verdict here), saying
    whether it holds, does not hold or cannot be tested at this scale, then the overall line:
    "reproduced" only when every part holds."""
    lines, states = [], []
    for part, expected, observed in parts:
        if observed in ("untestable at this scale", "inconclusive"):
            state = observed
        else:
            state = "holds" if observed == expected else "does not hold"
        states.append(state)
        lines.append(f"- {part}: the paper finds \"{expected}\", here \"{observed}\": {state}")
    if all(state == "holds" for state in states):
        overall = "reproduced: every part holds with its interval"
    elif "does not hold" in states:
        overall = "NOT reproduced: " + ", ".join(p for (p, _, _), s in zip(parts, states, strict=True)
                                                 if s == "does not hold") + " does not hold"  # fmt: skip
    else:
        overall = (
            "not shown at this scale: no part contradicts it, but "
            + ", ".join(p for (p, _, _), s in zip(parts, states, strict=True) if s != "holds")
            + " cannot be decided with these intervals"
        )
    return [*lines, overall]


def interval_direction(low: float, high: float, positive: str = "larger", negative: str = "smaller") -> str:
    """`positive` when an interval lies above zero, `negative` when below, else "inconclusive"."""
    if low > 0:
        return positive
    if high < 0:
        return negative
    return "inconclusive"


def seed_direction(
    per_seed: pd.DataFrame, value: str, positive: str = "larger", negative: str = "smaller"
) -> tuple[str, dict[str, float]]:
    """A direction over training seeds: `per_seed` has one row per seed with the estimate (`value`)
    and its interval over items (`ci_low`, `ci_high`). `positive` when every seed's interval lies
    above zero and so does the Student-t interval of the estimate over seeds (`stats.seed_interval`),
    `negative` when all lie below it, else "inconclusive" (one seed is never enough). Returns the
    verdict and the over-seeds summary (mean, sd, low, high, seeds)."""
    spread = seed_interval(per_seed[value])
    if spread["seeds"] < 2:
        return "inconclusive", spread
    if (per_seed["ci_low"] > 0).all() and spread["low"] > 0:
        return positive, spread
    if (per_seed["ci_high"] < 0).all() and spread["high"] < 0:
        return negative, spread
    return "inconclusive", spread
