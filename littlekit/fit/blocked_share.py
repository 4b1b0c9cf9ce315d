"""Stage 5's document rule, chosen on training labels: how much blocklisted vocabulary drops a text.

The released rule drops a document holding any word with beyond_score >= 4.0. Its cost grows with
length (a long K-5 article is ever likelier to hold one month name, one country, one "solar"), and
on text that stages 1-4 already passed it mostly removes K-5 text: what reaches stage 5 from
beyond K-5 is plain-worded fiction, whose words lean K-5. `FrequencyStage(min_blocked_share=s)`
drops a document only when blocklisted tokens are at least a share `s` of its words.

The choice, made on the out-of-fold scores of the training labels (never on validation):

1. the population: training labels that stages 1-4 keep at the operating point, each scored by
   classifiers that never saw its source group (stage 3's `oof_scores.parquet`), then stage 4;
2. for each share on `SHARE_GRID` (None = the released any-word rule), the K-5 and Beyond-K-5
   labels of that population stage 5 would drop;
3. the share dropping the most Beyond-K-5 labels among those dropping at most `MAX_K5_LOSS` of
   the K-5 labels (ties: the laxer rule, which keeps more K-5). When none meets it, the share
   dropping the fewest K-5 labels.

The pools the word table is scored from hold these labels' texts, and a K-5 label's own words in the
K-5 pool shield it from the table. So the scores are cross-fitted: a label of fold f is scored with a
table built from the pools without the documents of fold f's source groups (`cross_fitted_scores`),
the same folds its classifier scores came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.frequency import FrequencyStage
from littlekit.fit.thresholds import kept_at

SHARE_GRID: tuple[float | None, ...] = (None, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05)
MAX_K5_LOSS = 0.02  # stage 5 may drop at most this share of the K-5 labels reaching it


def reaching_stage5(
    oof: pd.DataFrame, texts: pd.Series, point: OperatingPoint, symbolic: Any
) -> pd.DataFrame:
    """The out-of-fold rows stages 1-4 keep at `point`, with their text (id -> text in `texts`)."""
    keep = kept_at(oof["pred"], oof["p_k5"], point.fasttext_min_k5_prob)
    if {"enc_pred", "enc_p_k5"} <= set(oof.columns):
        keep &= kept_at(oof["enc_pred"], oof["enc_p_k5"], point.encoder_min_k5_prob)
    if point.max_aoa is not None:
        keep &= oof["aoa_p95"].astype(float).to_numpy() <= point.max_aoa
    rows = oof[keep].assign(text=lambda f: f["id"].map(texts))
    missing = rows["text"].isna()
    if missing.any():
        raise KeyError(
            f"{int(missing.sum())} out-of-fold ids have no label text, e.g. {rows['id'][missing].iloc[0]}"
        )
    passes = np.array([symbolic.decide(symbolic.score(text)).keep for text in rows["text"]], dtype=bool)
    return rows[passes].reset_index(drop=True)


def cross_fitted_scores(
    rows: pd.DataFrame,
    pools: pd.DataFrame,
    pool_groups: pd.Series,
    score_table: Callable[[pd.DataFrame], pd.DataFrame],
    min_beyond_score: float,
) -> list[dict[str, Any]]:
    """Stage 5's scores of each row (with `fold` and `group`), each from a word table scored without
    the pool documents of its fold's source groups, so no row's own book or author shaped the table
    that judges it. `pools`: `littlekit.fit.pools.pool_frame` rows; `pool_groups`: their source
    groups (index aligned); `score_table`: pools -> word table."""
    scores: list[dict[str, Any] | None] = [None] * len(rows)
    positions = pd.Series(np.arange(len(rows)), index=rows.index)
    for _, in_fold in rows.groupby("fold", sort=True):
        held = pool_groups.isin(set(in_fold["group"])).to_numpy()
        stage = FrequencyStage(score_table(pools[~held]), min_beyond_score=min_beyond_score)
        for index, text in in_fold["text"].items():
            scores[positions[index]] = stage.score(text)
    return scores


def blocked_share_sweep(
    rows: pd.DataFrame,
    scores: Sequence[dict[str, Any]],
    min_beyond_score: float,
    grid: Sequence[float | None] = SHARE_GRID,
) -> pd.DataFrame:
    """For each share on the grid, the K-5 and Beyond-K-5 rows stage 5 would drop, from each row's
    stage-5 `scores` (one per row, e.g. `cross_fitted_scores`)."""
    k5 = (rows["band"] == "K5").to_numpy()
    table = []
    for share in grid:
        rule = FrequencyStage({}, min_beyond_score, min_blocked_share=share)
        drops = np.array([not rule.decide(s).keep for s in scores], dtype=bool)
        table.append(
            {
                "min_blocked_share": share,
                "rule": "any blocklisted word (released)"
                if share is None
                else f"blocklisted tokens >= {share:g}",
                "k5_reaching": int(k5.sum()),
                "k5_dropped": int((drops & k5).sum()),
                "beyond_reaching": int((~k5).sum()),
                "beyond_dropped": int((drops & ~k5).sum()),
            }
        )
    sweep = pd.DataFrame(table)
    sweep["k5_drop_share"] = sweep["k5_dropped"] / sweep["k5_reaching"].where(sweep["k5_reaching"] > 0)
    sweep["beyond_drop_share"] = sweep["beyond_dropped"] / sweep["beyond_reaching"].where(
        sweep["beyond_reaching"] > 0
    )
    return sweep


def choose_blocked_share(sweep: pd.DataFrame, max_k5_loss: float = MAX_K5_LOSS) -> float | None:
    """The grid's share by the module's rule (None: the released any-word rule, also when no
    training label reaches stage 5, so there is nothing to choose on)."""
    if sweep.empty or int(sweep["k5_reaching"].iloc[0] + sweep["beyond_reaching"].iloc[0]) == 0:
        return None
    order = sweep.assign(_row=np.arange(len(sweep)))
    meets = order[order["k5_drop_share"].fillna(0.0) <= max_k5_loss]
    if meets.empty:
        best = order.sort_values(["k5_dropped", "_row"], ascending=[True, False]).iloc[0]
    else:
        best = meets.sort_values(["beyond_dropped", "_row"], ascending=[False, False]).iloc[0]
    share = best["min_blocked_share"]
    return None if share is None or pd.isna(share) else float(share)
