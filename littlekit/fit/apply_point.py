"""A point applied to a released-rule cascade's stored outcomes, and the best point in hindsight.

Both read `littlekit.filter.cascade.cascade_outcomes`' frame of a run at the released rules (the
P(K5) of each classifier stage, stage 1's AoA, stage 5's blocked share: what each stage's
declaration keeps of its scores) and score nothing again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from littlekit.filter.cascade import DROPPED, KEPT
from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.registry import stage_specs
from littlekit.fit.thresholds import AOA_GRID


def apply_operating_point(
    outcomes: pd.DataFrame, stages: Sequence[str], point: OperatingPoint | Mapping[str, float | None]
) -> pd.DataFrame:
    """A released-rule cascade's outcomes re-decided at a point's thresholds, without re-scoring.

    `outcomes` is `littlekit.filter.cascade.cascade_outcomes`' frame (with the columns each stage's
    declaration keeps of its scores) of a run at the released rules of the stages the point sets.
    Each stage re-decides with its own rule on those columns (`StageSpec.outcome_keeps`), in
    cascade order. A threshold that only removes documents a stage kept (a minimum P(K5), stage 1's
    maximum AoA) gives the verdicts of the cascade built with it, since every later stage scores a
    document the same whatever came before: such a passage now leaves at that stage, with the
    stage's `drop_reason`. A threshold that lets through documents the released rule dropped (stage
    5's `min_blocked_share`) needs that stage last: nothing after it scored them. `point`: an
    OperatingPoint or a mapping option -> value. Returns a copy with `status`, `stage`, `reason`,
    `kept`, `exit_index` updated.
    """
    if not isinstance(point, OperatingPoint):
        point = OperatingPoint(**dict(point))
    frame = outcomes.copy()
    for position, name in enumerate(stages):
        spec = stage_specs()[name]
        thresholds = point.for_stage(name)
        if not thresholds or spec.outcome_keeps is None:
            continue
        if spec.loosens and position != len(stages) - 1:
            raise ValueError(
                f"{name}'s thresholds let through documents its released rule dropped; that applies "
                f"to stored outcomes only with {name} last (no later stage scored them)"
            )
        reached = (frame["exit_index"] >= position).to_numpy()
        kept = (frame["exit_index"] > position).to_numpy()
        keeps = np.asarray(spec.outcome_keeps(frame, kept, thresholds), dtype=bool) & reached
        now_dropped = kept & ~keeps
        frame.loc[now_dropped, ["status", "stage", "reason"]] = [DROPPED, name, spec.drop_reason]
        frame.loc[now_dropped, "exit_index"] = position
        now_kept = keeps & ~kept
        if now_kept.any():
            if position != len(stages) - 1:
                raise ValueError(
                    f"{name}'s thresholds let through documents its released rule dropped; that applies "
                    f"to stored outcomes only with {name} last (no later stage scored them)"
                )
            frame.loc[now_kept, ["status", "stage", "reason"]] = [KEPT, None, None]
            frame.loc[now_kept, "exit_index"] = len(stages)
    frame["kept"] = frame["exit_index"] >= len(stages)
    return frame


# --- in hindsight: what no rule chosen on training labels could beat --------------------------


def best_in_hindsight(
    outcomes: pd.DataFrame,
    max_beyond_share: float,
    aoa_grid: Sequence[float] = (12.0, *AOA_GRID),
    encoder_grid: Sequence[float] = tuple(round(0.02 * i, 2) for i in range(50)),
    fasttext_grid: Sequence[float] = tuple(round(0.01 * i, 2) for i in range(100)),
    point: OperatingPoint | None = None,
    stages: Sequence[str] = (),
) -> pd.Series:
    """The stage-1 maximum and classifier minimums that keep the most K-5 passages of `outcomes`
    while keeping at most `max_beyond_share` of its Beyond-K-5 ones, found on those passages.

    A diagnostic, never a choice: it is tuned on the very passages it is scored on, so it is an
    upper bound on what any operating point could reach there with these classifiers. `outcomes`
    comes from a released-rule run (`cascade_outcomes`: band, kept, aoa_p95,
    fasttext_p_k5, encoder_p_k5); a passage the released rules dropped stays dropped. Returns
    max_aoa, encoder_min_k5_prob, fasttext_min_k5_prob, and k5_kept, n_k5, beyond_kept, n_beyond
    with their shares; ties go to the laxest settings.

    `point` (with `stages`, the cascade's stage names): the operating point the run chose. Its
    stage-5 share is applied first, as the point runs (stage 5 is not searched), and its thresholds
    join the grids, so the search can never do worse than the point on these passages.
    """
    if point is not None:
        stage_5_as_run = OperatingPoint(min_blocked_share=point.min_blocked_share)
        outcomes = apply_operating_point(outcomes, stages, stage_5_as_run)
        aoa_grid = _with(aoa_grid, point.max_aoa)
        encoder_grid = _with(encoder_grid, point.encoder_min_k5_prob)
        fasttext_grid = _with(fasttext_grid, point.fasttext_min_k5_prob)
    missing = {"band", "kept", "aoa_p95", "fasttext_p_k5", "encoder_p_k5"} - set(outcomes.columns)
    if missing:
        raise KeyError(f"outcomes lack {sorted(missing)}: run the cascade with cascade_outcomes")
    k5 = (outcomes["band"] == "K5").to_numpy()
    kept = outcomes["kept"].to_numpy(dtype=bool)
    aoa = outcomes["aoa_p95"].to_numpy(dtype=float)
    p_ft = np.nan_to_num(outcomes["fasttext_p_k5"].to_numpy(dtype=float))
    p_enc = np.nan_to_num(outcomes["encoder_p_k5"].to_numpy(dtype=float))
    ft_grid = np.asarray(fasttext_grid, dtype=float)
    allowed = math.floor(max_beyond_share * int((~k5).sum()) + 1e-9)
    best: tuple | None = None
    for max_aoa in sorted(aoa_grid, reverse=True):
        for enc_min in sorted(encoder_grid):
            open_rows = kept & (aoa <= max_aoa) & (p_enc >= enc_min)
            # kept counts for every fastText minimum at once: rows x grid
            passes = open_rows[:, None] & (p_ft[:, None] >= ft_grid[None, :])
            k5_kept = passes[k5].sum(axis=0)
            beyond_kept = passes[~k5].sum(axis=0)
            for i in np.flatnonzero(beyond_kept <= allowed):
                key = (int(k5_kept[i]), -int(beyond_kept[i]))
                if best is None or key > best[0]:
                    best = (key, max_aoa, enc_min, float(ft_grid[i]))
    if best is None:
        raise ValueError("no setting on the grids meets the share")
    (k5_kept, minus_beyond), max_aoa, enc_min, ft_min = best
    n_k5, n_beyond = int(k5.sum()), int((~k5).sum())
    return pd.Series(
        {
            "max_aoa": max_aoa,
            "encoder_min_k5_prob": enc_min,
            "fasttext_min_k5_prob": ft_min,
            "k5_kept": k5_kept,
            "n_k5": n_k5,
            "k5_share": k5_kept / n_k5 if n_k5 else math.nan,
            "beyond_kept": -minus_beyond,
            "n_beyond": n_beyond,
            "beyond_share": -minus_beyond / n_beyond if n_beyond else math.nan,
        }
    )


def _with(grid: Sequence[float], value: float | None) -> tuple[float, ...]:
    """The grid with `value` on it (None: the released rule, which the grid's ends already hold)."""
    return tuple(grid) if value is None else (*grid, value)
