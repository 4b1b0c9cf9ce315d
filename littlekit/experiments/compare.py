"""One comparison the experiments share: the same held-out problems answered under two conditions
(two sizes, two tokenizers, before and after post-training), and the change in accuracy with a
paired bootstrap interval over problems."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from littlekit.stats import paired_difference


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
        rows.append(
            {
                **dict(zip(by, names, strict=True)),
                f"accuracy {before}": float(rates[before].mean()),
                f"accuracy {after}": float(rates[after].mean()),
                "change": change["difference"],
                "low": change["low"],
                "high": change["high"],
                "problems": change["n"],
            }
        )
    return pd.DataFrame(rows)


def change_verdict(row: pd.Series | dict) -> str:
    """"raises", "lowers" or "does not change" (the interval holds 0), from a `paired_changes` row."""
    if row["low"] > 0:
        return "raises"
    if row["high"] < 0:
        return "lowers"
    return "does not change"
