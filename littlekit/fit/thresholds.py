"""The keep rule on stored scores, and the smallest P(K5) minimum that meets a target.

A classifier stage keeps a text when its top band is K5 and, with a minimum set, P(K5) is at least
that minimum (`kept_at`). `choose_min_k5_prob` finds the smallest minimum on a grid whose
Beyond-K-5 keep rate, measured on out-of-fold scores, is within a target, optionally with a
Wilson margin, per kind of text and with a precision floor; `littlekit.fit.operating_point`
searches with these. The acceptance targets the whole filter is held to (chapter 7) are here too.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from littlekit.filter.base import top_band_keeps
from littlekit.grades import BANDS

DEFAULT_TARGET = 0.01
DEFAULT_MIN_PRECISION = 0.9
MIN_KIND_BEYOND = 10  # a kind's own Beyond-K-5 rate is tested only with at least this many rows
STEP = 0.001  # thresholds are rounded up to this grid, so the file holds readable numbers
# Acceptance on CommonCoreText-PD validation (`littlekit.analysis.validate`), and the K-5 share a
# held-out corpus must keep (`littlekit.fit.generalisation`).
# The paper's released filter keeps 42% of WeeBit's K-5 texts at 2.48% of its Beyond-K-5 texts; the
# default point (`littlekit.fit.points`, "paper") aims at that trade, so validation is held to it.
TARGET_MIN_K5 = 0.40  # acceptance: at least this share of K-5 passages retained
TARGET_MAX_BEYOND = 0.03  # acceptance: at most this share of Beyond-K-5 passages retained
# Stage-1 maxima `choose_joint` may try besides the released 12 years: 11.75 down to 8.5 by a quarter
# year (pass `aoa_grid=(None, *AOA_GRID)`).
AOA_GRID: tuple[float, ...] = tuple(11.75 - 0.25 * i for i in range(14))


def kept_at(pred: Sequence[str], p_k5: Sequence[float], min_k5_prob: float | None) -> np.ndarray:
    """The classifier stages' keep rule on stored scores (`littlekit.filter.base.top_band_keeps`)."""
    return top_band_keeps(pred, p_k5, min_k5_prob)


def keep_rates(frame: pd.DataFrame, min_k5_prob: float | None) -> dict[str, float]:
    """K-5 and Beyond-K-5 keep rates (and counts) of a frame with band, pred, p_k5 at a threshold."""
    return rates_of(frame, kept_at(frame["pred"], frame["p_k5"], min_k5_prob))


def rates_of(frame: pd.DataFrame, keep: Sequence[bool]) -> dict[str, float]:
    """K-5 and Beyond-K-5 keep rates (and counts) of a frame with band, for a keep mask."""
    keep = np.asarray(keep, dtype=bool)
    k5 = (frame["band"] == "K5").to_numpy()
    return {
        "n_k5": int(k5.sum()),
        "n_beyond": int((~k5).sum()),
        "k5_kept": int(keep[k5].sum()),
        "beyond_kept": int(keep[~k5].sum()),
        "k5_keep_rate": float(keep[k5].mean()) if k5.any() else math.nan,
        "beyond_keep_rate": float(keep[~k5].mean()) if (~k5).any() else math.nan,
    }


def allowed_beyond(n_beyond: int, target: float, confidence: float | None = None) -> int:
    """How many of `n_beyond` Beyond-K-5 rows a point may keep and still meet `target`.

    Without `confidence`: floor(target * n_beyond), the point estimate at most `target`. With it
    (say 0.95): the largest count whose Wilson interval at that confidence ends at or below
    `target`, so the keep rate is within the target even allowing for the sampling error of the
    out-of-fold estimate (a precision-first margin that shrinks as the sample grows). -1 when even
    keeping none cannot show it (too few rows).
    """
    if not 0.0 <= target < 1.0:
        raise ValueError(f"target must be a fraction in [0, 1), got {target}")
    if n_beyond < 1:
        raise ValueError("no Beyond-K-5 rows to measure the keep rate on")
    allowed = math.floor(target * n_beyond + 1e-9)  # 1e-9: 0.29 * 100 is 28.999999999999996
    if confidence is None:
        return allowed
    from littlekit.stats import wilson_interval

    # the upper end falls with the count kept: step down from the point estimate to the first that fits
    # 1e-12: an upper end at the target but for rounding still meets it
    while allowed >= 0 and wilson_interval(allowed, n_beyond, confidence)[1] > target + 1e-12:
        allowed -= 1
    return allowed


def choose_min_k5_prob(
    frame: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    step: float = STEP,
    confidence: float | None = None,
    later_keeps: Sequence[bool] | None = None,
    kinds: Sequence[str] | None = None,
    precision_rows: Sequence[bool] | None = None,
    min_precision: float | None = None,
) -> float | None:
    """The smallest P(K5) minimum (on a `step` grid) keeping at most `target` of the Beyond-K-5 rows.

    `frame` has band, pred (top band) and p_k5. `confidence`: meet the target with that confidence
    (`allowed_beyond`). `later_keeps`: whether a later stage keeps each row (the rate is then that
    of both stages together). `kinds`: a kind of text per row (e.g. its label source); the
    Beyond-K-5 keep rate of every kind must then also be at most `target` (point estimate), so a
    kind that leaks cannot hide behind a larger kind that does not. `precision_rows` and
    `min_precision`: of the rows of `precision_rows` kept, at least `min_precision` must be K-5
    at this minimum and every stricter one (`_threshold_precise`): where K-5 text is rare (web
    text), a small Beyond-K-5 keep rate can still leave the kept text mostly Beyond-K-5.
    None when the released rule
    (top band K5) already meets the target. The result may still miss the target when Beyond-K-5
    rows reach P(K5) = 1; when even keeping no Beyond-K-5 row cannot show the target
    (`allowed_beyond` < 0), every one of them is dropped.
    """
    beyond_rows = (frame["band"] != "K5").to_numpy()
    # a minimum can only take out what the released rule (and any later stage) would keep
    candidates = beyond_rows & (frame["pred"] == "K5").to_numpy()
    if later_keeps is not None:
        candidates &= np.asarray(later_keeps, dtype=bool)
    p_k5 = frame["p_k5"].astype(float).to_numpy()
    # -1 (too few rows to show the target even keeping none) becomes 0: drop them all
    allowed = max(allowed_beyond(int(beyond_rows.sum()), target, confidence), 0)
    thresholds = [_threshold_keeping(p_k5[candidates], allowed, step)]
    if kinds is not None:
        kinds = np.asarray(kinds, dtype=object)
        for kind in testable_kinds(kinds, beyond_rows):
            of_kind = kinds == kind
            # point estimate, no margin: at 95%, 0 kept of 100 rows still has a Wilson upper end of 3.7%
            allowed_here = allowed_beyond(int((beyond_rows & of_kind).sum()), target)
            thresholds.append(_threshold_keeping(p_k5[candidates & of_kind], allowed_here, step))
    if precision_rows is not None and min_precision is not None:
        # K-5 rows too, unlike `candidates`: precision is the share of K-5 among all rows kept
        open_rows = (frame["pred"] == "K5").to_numpy() & np.asarray(precision_rows, dtype=bool)
        if later_keeps is not None:
            open_rows &= np.asarray(later_keeps, dtype=bool)
        thresholds.append(_threshold_precise(p_k5[open_rows], ~beyond_rows[open_rows], min_precision, step))
    # each rule's smallest minimum also meets that rule at every stricter one, so the largest of
    # them meets all the rules at once
    chosen = [t for t in thresholds if t is not None]
    return max(chosen) if chosen else None


def testable_kinds(kinds: np.ndarray, beyond_rows: np.ndarray, min_rows: int | None = None) -> list:
    """The kinds holding at least `min_rows` Beyond-K-5 rows (default MIN_KIND_BEYOND): a kind of
    three Beyond-K-5 labels says nothing about a rate of 2% (one kept label is 33%), yet would veto
    every point that keeps one of them."""
    needed = MIN_KIND_BEYOND if min_rows is None else min_rows
    counts = pd.Series(np.asarray(kinds, dtype=object)[np.asarray(beyond_rows, dtype=bool)]).value_counts()
    return [kind for kind, n in counts.items() if n >= needed]


def _threshold_precise(
    p_k5: np.ndarray, is_k5: np.ndarray, min_precision: float, step: float
) -> float | None:
    """The smallest grid minimum at which, and at every stricter one, at least `min_precision` of
    the rows kept (P(K5) >= minimum) are K-5 (keeping none counts as precise); None when every
    minimum is precise already. Requiring it of every stricter minimum too keeps the choice off a
    lucky dip in a noisy curve."""
    if not 0.0 < min_precision <= 1.0:
        raise ValueError(f"min_precision must be in (0, 1], got {min_precision}")
    # + step / 2 so 1.0 is on the grid; round: arange gives 0.009000000000000001 and the like
    grid = np.round(np.arange(0.0, 1.0 + step / 2, step), 10)
    p_k5 = np.asarray(p_k5, dtype=float)
    is_k5 = np.asarray(is_k5, dtype=bool)
    # rows kept at each grid minimum: all but those whose P(K5) sorts below it
    kept = len(p_k5) - np.searchsorted(np.sort(p_k5), grid, side="left")
    kept_k5 = int(is_k5.sum()) - np.searchsorted(np.sort(p_k5[is_k5]), grid, side="left")
    # 1e-9: 0.55 * 100 is 55.00000000000001, yet 55 K-5 of 100 kept meets 0.55
    precise = (kept == 0) | (kept_k5 >= min_precision * kept - 1e-9)
    if precise.all():
        return None
    last_imprecise = int(np.flatnonzero(~precise).max())  # the next grid point is precise, and all above it
    # clamped where even 1.0 is imprecise (Beyond-K-5 rows at P(K5) = 1): no stricter minimum exists
    return round(min(grid[min(last_imprecise + 1, len(grid) - 1)], 1.0), 10)


def precision_of(frame: pd.DataFrame, keep: Sequence[bool], rows: Sequence[bool]) -> dict[str, float]:
    """Of `rows` kept: how many, how many are K-5, and that share (NaN when none is kept)."""
    kept = np.asarray(keep, dtype=bool) & np.asarray(rows, dtype=bool)
    k5 = (frame["band"] == "K5").to_numpy()
    n, n_k5 = int(kept.sum()), int((kept & k5).sum())
    return {"precise_kept": n, "precise_k5_kept": n_k5, "precision": n_k5 / n if n else math.nan}


def _threshold_keeping(beyond: np.ndarray, allowed: int, step: float) -> float | None:
    """The smallest grid minimum keeping at most `allowed` of these Beyond-K-5 P(K5) values."""
    if len(beyond) <= allowed:
        return None
    # drop every Beyond-K-5 row at or below the (allowed+1)-th highest P(K5): the threshold is the
    # first grid point strictly above it
    # ties with it go too: one minimum cannot keep some rows of a P(K5) and drop others
    worst = np.sort(beyond)[::-1][allowed]
    # 1e-9: a P(K5) on the grid stays on it (0.043 / 0.001 is 42.99999999999999)
    threshold = (math.floor(worst / step + 1e-9) + 1) * step
    # capped at 1.0: rows at P(K5) = 1 then stay kept (the miss choose_min_k5_prob's docstring names)
    return round(min(threshold, 1.0), 10)


def threshold_sweep(frame: pd.DataFrame, thresholds: Sequence[float | None]) -> pd.DataFrame:
    """keep_rates at each threshold (None = the released rule), one row each."""
    rows = [{"min_k5_prob": t, **keep_rates(frame, t)} for t in thresholds]
    return pd.DataFrame(rows)


def rates_by_source(frame: pd.DataFrame, min_k5_prob: float | None) -> pd.DataFrame:
    """Keep rate per label source and band at a threshold (where the leaks come from)."""
    keep = kept_at(frame["pred"], frame["p_k5"], min_k5_prob)
    table = (
        frame.assign(kept=keep).groupby(["band", "source"], observed=True)["kept"].agg(n="size", kept="sum")
    )
    table["keep_rate"] = table["kept"] / table["n"]
    # bands in grade order (BANDS), not groupby's sorted one (K12 before K5)
    return table.reindex([b for b in BANDS if b in table.index.get_level_values(0)], level=0)


def kind_rates(frame: pd.DataFrame, keep: Sequence[bool], kinds: Sequence[str]) -> pd.DataFrame:
    """K-5 and Beyond-K-5 keep rates (and counts) per kind of text, one row per kind."""
    keep = np.asarray(keep, dtype=bool)
    kinds = np.asarray(kinds, dtype=object)
    table = {kind: rates_of(frame[kinds == kind], keep[kinds == kind]) for kind in sorted(set(kinds))}
    return pd.DataFrame(table).T


def _precision_rows(
    pool: pd.DataFrame, sources: Collection[str] | None, min_precision: float | None
) -> np.ndarray | None:
    """The rows whose kept share must be K-5 (those from `sources`), or None without the rule."""
    if min_precision is None or not sources:
        return None
    return pool["source"].isin(set(sources)).to_numpy()


def _rule(target: float, confidence: float | None, what: str) -> str:
    bound = (
        "its out-of-fold Beyond-K-5 keep rate"
        if confidence is None
        else f"the upper end of the {confidence:.0%} Wilson interval of its out-of-fold Beyond-K-5 keep rate"
    )
    return (
        f"{what}: the choice keeping the most K-5 labels out of fold such that {bound} is at most {target:g}"
    )
