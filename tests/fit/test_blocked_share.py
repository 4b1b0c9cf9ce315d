"""Stage 5's document rule chosen on out-of-fold training labels (littlekit.fit.blocked_share)."""

from __future__ import annotations

import pandas as pd
import pytest

from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.frequency import FrequencyStage
from littlekit.filter.registry import build_stages
from littlekit.fit.blocked_share import (
    MAX_K5_LOSS,
    SHARE_GRID,
    blocked_share_sweep,
    choose_blocked_share,
    cross_fitted_scores,
    reaching_stage5,
)

STAGE = FrequencyStage({"senate": 6.0, "owls": 0.0, "night": 0.0})
FILLER = "owls hunt at night " * 12  # 48 unblocked tokens


def rows(k5_texts, beyond_texts):
    texts = [*k5_texts, *beyond_texts]
    return pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts,
                         "band": ["K5"] * len(k5_texts) + ["K8"] * len(beyond_texts)})


def test_sweep_counts_drops_per_share():
    # K-5: one long article with one blocked word (1/49 ~ 2%); Beyond: a dense text (3/5 = 60%)
    frame = rows(["senate " + FILLER], ["senate senate senate owls night"])
    scores = [STAGE.score(text) for text in frame["text"]]
    sweep = blocked_share_sweep(frame, scores, 4.0, grid=(None, 0.01, 0.05)).set_index("rule")
    released = sweep.loc["any blocklisted word (released)"]
    assert (released["k5_dropped"], released["beyond_dropped"]) == (1, 1)
    at_1 = sweep.loc["blocklisted tokens >= 0.01"]
    assert (at_1["k5_dropped"], at_1["beyond_dropped"]) == (1, 1)
    at_5 = sweep.loc["blocklisted tokens >= 0.05"]
    assert (at_5["k5_dropped"], at_5["beyond_dropped"]) == (0, 1)
    assert at_5["k5_drop_share"] == 0.0 and at_5["beyond_drop_share"] == 1.0


def test_cross_fitting_keeps_a_rows_own_group_out_of_its_table():
    # "owls" leans Beyond only through the pool documents of group g1, whose label is in fold 0
    from littlekit.filter.word_table import score_words
    from littlekit.fit.pools import pool_texts

    pools = pd.DataFrame({
        "text": ["owls owls owls owls owls", "cats sat", "cats ran", "dogs ran far"],
        "pool": ["Beyond K-5", "K-5", "K-5", "Beyond K-5"],
    })
    groups = pd.Series(["g1", "g2", "g3", "g4"])
    frame = rows(["owls sat"], []).assign(fold=[0], group=["g1"])

    def table(subset):
        return score_words(*pool_texts(subset), min_count=1, alpha=0.0)

    (fitted,) = cross_fitted_scores(frame, pools, groups, table, min_beyond_score=1.0)
    assert fitted["n_blocked_tokens"] == 0  # without g1 "owls" is not in the table at all
    in_sample = FrequencyStage(table(pools), min_beyond_score=1.0).score("owls sat")
    assert in_sample["n_blocked_tokens"] == 1


def sweep_of(table):
    frame = pd.DataFrame(table, columns=["min_blocked_share", "k5_dropped", "beyond_dropped"])
    frame["k5_reaching"], frame["beyond_reaching"] = 100, 20
    frame["k5_drop_share"] = frame["k5_dropped"] / 100
    return frame


def test_choice_takes_the_most_beyond_within_the_k5_budget():
    sweep = sweep_of([(None, 9, 6), (0.01, 2, 4), (0.02, 1, 4), (0.05, 0, 1)])
    # None loses 9% of K-5 (> 2%); 0.01 and 0.02 both drop 4 Beyond: the laxer 0.02 wins the tie
    assert choose_blocked_share(sweep, max_k5_loss=MAX_K5_LOSS) == 0.02
    assert choose_blocked_share(sweep, max_k5_loss=0.10) is None  # the released rule fits a 10% budget


def test_choice_when_no_share_meets_the_budget_loses_the_fewest_k5():
    sweep = sweep_of([(None, 9, 6), (0.01, 5, 4), (0.05, 3, 1)])
    assert choose_blocked_share(sweep, max_k5_loss=0.01) == 0.05


def test_population_is_what_stages_one_to_four_keep_out_of_fold():
    oof = pd.DataFrame({
        "id": ["a", "b", "c", "d"],
        "band": ["K5", "K5", "K8", "K5"],
        "pred": ["K5", "K5", "K5", "K8"],
        "p_k5": [0.9, 0.5, 0.95, 0.9],
        "enc_pred": ["K5"] * 4,
        "enc_p_k5": [0.9] * 4,
        "aoa_p95": [7.0, 7.0, 7.0, 7.0],
    })
    texts = pd.Series(
        {"a": "Owls hunt at night.", "b": "Owls.", "c": "Solve 2x + 3 = 7 for x.", "d": "Owls."}
    )
    point = OperatingPoint(fasttext_min_k5_prob=0.8, max_aoa=8.0)
    kept = reaching_stage5(oof, texts, point, build_stages(["symbolic"])[0])
    assert kept["id"].tolist() == ["a"]  # b: P(K5) too low; c: stage 4 (an equation); d: top band K8
    with pytest.raises(KeyError, match="no label text"):
        reaching_stage5(oof, texts.drop("a"), point, build_stages(["symbolic"])[0])


def test_the_point_carries_the_share_to_stage_five(tmp_path):
    point = OperatingPoint(fasttext_min_k5_prob=0.7, min_blocked_share=0.01)
    loaded = OperatingPoint.load(point.save(tmp_path))
    assert loaded.min_blocked_share == 0.01
    assert loaded.stage_options(["frequency"]) == {"min_blocked_share": 0.01}
    assert "min_blocked_share" not in loaded.stage_options(["aoa", "fasttext"])
    assert "frequency: blocklisted tokens < 0.01" in loaded.describe()
    with pytest.raises(ValueError, match="min_blocked_share"):
        OperatingPoint(min_blocked_share=0.0)
    assert SHARE_GRID[0] is None  # the released rule is always a candidate
