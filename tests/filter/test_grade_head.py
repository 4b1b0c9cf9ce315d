"""The grade head (littlekit.filter.grade_head): reading-level features and the logistic head over them.

Real computations on real text: passages of data/commoncoretext_pd, the embedded AoA lexicon
and Dolch list, scikit-learn's logistic regression.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from littlekit.databuild.corpora import load_commoncoretext
from littlekit.filter import grade_head as gh
from littlekit.filter.aoa import AoAStage
from littlekit.fit.generalisation import ranking_auc

CHILD = "The dog ran to the park. He saw a big red ball. He was happy. Mom said it was time to go home."
ACADEMIC = (
    "Notwithstanding considerable methodological heterogeneity, contemporary historiographical "
    "scholarship increasingly emphasises the socioeconomic determinants of institutional legitimacy, "
    "thereby problematising earlier teleological interpretations of constitutional development."
)


@pytest.fixture(scope="module")
def passages() -> pd.DataFrame:
    """60 K-5 and 60 K-12 passages of CommonCoreText-PD, with their features (about 0.3 s)."""
    frame = load_commoncoretext()
    frame = frame[frame["band"].isin(["K5", "K12"])].groupby("band").head(60).reset_index(drop=True)
    features = gh.readability_features(frame["text"], index=frame["id"])
    frame = frame[["id", "text", "band"]].assign(is_k5=frame["band"].eq("K5"))
    return frame.join(features.reset_index(drop=True))


def test_features_are_finite_and_in_range(passages):
    features = passages[list(gh.FEATURE_COLUMNS)]
    assert list(gh.readability_features(passages["text"].head(40)).columns) == [
        *gh.FEATURE_COLUMNS, *gh.COUNT_COLUMNS
    ]
    assert np.isfinite(features.to_numpy()).all()
    assert (passages["no_words"] == 0).all() and (passages["n_words"] > 20).all()
    shares = [c for c in gh.FEATURE_COLUMNS if c.endswith("_share") or c.startswith("aoa_over")]
    assert ((features[shares] >= 0) & (features[shares] <= 1)).all().all()
    aoa = features[["aoa_p50", "aoa_p75", "aoa_p90", "aoa_p95"]].to_numpy()
    assert (np.diff(aoa, axis=1) >= 0).all()  # percentiles rise
    assert (features["aoa_unrated_share"] >= features["aoa_oov_share"]).all()  # imputation only adds


def test_features_move_the_right_way():
    child, academic = (row for _, row in gh.readability_features([CHILD, ACADEMIC]).iterrows())
    assert child["words_per_sentence"] < academic["words_per_sentence"]
    assert child["word_length"] < academic["word_length"]
    assert child["long_word_share"] < academic["long_word_share"]
    assert child["syllables_per_word"] < academic["syllables_per_word"]
    assert child["flesch_kincaid"] < academic["flesch_kincaid"]
    assert child["dale_chall"] < academic["dale_chall"]
    assert child["dolch_share"] > academic["dolch_share"]
    for column in ("aoa_mean", "aoa_p50", "aoa_p95", "aoa_over_8", "aoa_over_10"):
        assert child[column] < academic[column], column


def test_k5_passages_read_younger_than_k12_ones(passages):
    k5 = passages["is_k5"].to_numpy()
    assert ranking_auc(k5, -passages["aoa_mean"]) > 0.75
    assert ranking_auc(k5, -passages["aoa_over_10"]) > 0.7
    assert ranking_auc(k5, -passages["dale_chall"]) > 0.6


def test_counts_on_a_known_text():
    # tokens: the cat and the dog ontology is fun (2 sentences; "a" and digits are not tokens)
    text = "The cat and the dog. Ontology is fun 42"
    aoa = {"cat": 3.0, "dog": 3.5, "ontology": 15.0, "fun": 4.0}
    row = gh.readability_features([text], aoa=aoa, dolch=["the", "and", "is"]).iloc[0]
    assert row["n_words"] == 8
    assert row["words_per_sentence"] == pytest.approx(4.0)
    assert row["type_token_ratio"] == pytest.approx(7 / 8)
    assert row["dolch_share"] == pytest.approx(4 / 8)
    assert row["digit_share"] == pytest.approx(2 / 31)  # 31 non-space characters
    assert row["log_words"] == pytest.approx(math.log(9))
    assert row["aoa_mean"] == pytest.approx((3 + 3.5 + 15 + 4) / 4)
    assert row["aoa_p50"] == pytest.approx(np.percentile([3, 3.5, 15, 4], 50))
    assert row["aoa_over_12"] == pytest.approx(1 / 4)
    # a plain mapping has no imputation: unrated and OOV are the same words
    assert row["aoa_unrated_share"] == row["aoa_oov_share"] == pytest.approx(4 / 8)


def test_aoa_p95_is_stage_ones(passages):
    stage = AoAStage()
    expected = [stage.score(text)["p95_aoa"] for text in passages["text"].head(20)]
    assert passages["aoa_p95"].head(20).tolist() == pytest.approx(expected, abs=0)


def test_texts_without_words_are_zeros_and_flagged():
    frame = gh.readability_features(["", None, "1234 5678", "!!! ?", "a I"], aoa={"cat": 3.0})
    assert np.isfinite(frame.to_numpy(dtype=float)).all()
    assert (frame["no_words"] == 1.0).all() and (frame["n_words"] == 0).all()
    assert frame["digit_share"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    others = [c for c in gh.FEATURE_COLUMNS if c not in {"no_words", "digit_share"}]
    assert (frame[others] == 0.0).all().all()
    # words none of which has an AoA: scored as words, every AoA statistic 0, all OOV
    row = gh.readability_features(["Zzqx blorf."], aoa={"cat": 3.0}).iloc[0]
    assert row["no_words"] == 0.0 and row["aoa_oov_share"] == 1.0 and row["aoa_p95"] == 0.0


def _noisy_encoder(is_k5: np.ndarray, seed: int = 0) -> np.ndarray:
    """A stand-in for stage 3's P(K5): informative but noisy."""
    z = 1.5 * (is_k5.astype(float) - 0.5) + np.random.default_rng(seed).normal(0, 1.5, len(is_k5))
    return 1 / (1 + np.exp(-z))


def test_head_on_informative_features_beats_random_features(passages):
    y = passages["is_k5"].to_numpy()
    folds = np.arange(len(y)) % 5
    informative = gh.cross_fitted_p_k5(None, passages, y, folds)
    rng = np.random.default_rng(1)
    noise = pd.DataFrame(rng.normal(size=(len(y), 5)), columns=[f"noise_{i}" for i in range(5)])
    random = gh.cross_fitted_p_k5(None, noise, y, folds, feature_names=list(noise.columns))
    auc_informative, auc_random = ranking_auc(y, informative), ranking_auc(y, random)
    assert auc_informative > 0.85
    assert abs(auc_random - 0.5) < 0.15
    assert auc_informative - auc_random > 0.25


def test_head_uses_the_encoder_input(passages):
    y = passages["is_k5"].to_numpy()
    encoder = _noisy_encoder(y)
    head = gh.GradeHead.fit(encoder, passages, y)
    assert head.inputs[0] == gh.ENCODER_INPUT and head.uses_encoder
    assert head.feature_names == gh.FEATURE_COLUMNS
    assert head.coefficients[0] > 0  # higher encoder P(K5), higher head P(K5)
    assert (head.n_train, head.n_k5) == (len(y), int(y.sum()))
    p = head.p_k5(encoder, passages)
    assert p.shape == (len(y),) and ((p > 0) & (p < 1)).all()
    assert ranking_auc(y, p) > ranking_auc(y, encoder)
    with pytest.raises(ValueError, match="encoder"):
        head.p_k5(None, passages)
    features_only = gh.GradeHead.fit(None, passages, y)
    assert not features_only.uses_encoder
    with pytest.raises(ValueError, match="features only"):
        features_only.p_k5(encoder, passages)
    with pytest.raises(ValueError, match="aoa_mean"):
        head.p_k5(encoder, passages.drop(columns="aoa_mean"))
    with pytest.raises(ValueError, match="dale_chall"):
        head.p_k5(encoder, passages.assign(dale_chall=np.nan))
    with pytest.raises(ValueError, match="non-finite"):
        head.p_k5(np.where(y, np.nan, encoder), passages)


def test_save_load_round_trip(passages, tmp_path):
    y = passages["is_k5"].to_numpy()
    encoder = _noisy_encoder(y)
    head = gh.GradeHead.fit(encoder, passages, y, C=0.5)
    path = head.save(tmp_path)
    assert path == tmp_path / gh.FILE_NAME
    record = json.loads(path.read_text())
    assert record["version"] == gh.VERSION and record["inputs"][0] == gh.ENCODER_INPUT
    loaded = gh.GradeHead.load(path)
    assert loaded == head
    assert np.array_equal(loaded.p_k5(encoder, passages), head.p_k5(encoder, passages))
    assert gh.GradeHead.load(tmp_path) == head  # a folder means its grade_head.json


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda text, record: "{not json", "not a JSON file"),
        (lambda text, record: json.dumps([1, 2]), "not a grade head file"),
        (lambda text, record: json.dumps({**record, "version": 99}), "version 99"),
        (lambda text, record: json.dumps({k: v for k, v in record.items() if k != "scales"}), "scales"),
        (lambda text, record: json.dumps({**record, "means": record["means"][:-1]}), "means has"),
        (lambda text, record: json.dumps({**record, "intercept": "x"}), "intercept"),
        (lambda text, record: json.dumps({**record, "scales": [0.0] * len(record["scales"])}), "positive"),
    ],
)
def test_malformed_file_raises_naming_it(passages, tmp_path, change, message):
    y = passages["is_k5"].to_numpy()
    path = gh.GradeHead.fit(None, passages, y).save(tmp_path / "head.json")
    text = path.read_text()
    path.write_text(change(text, json.loads(text)))
    with pytest.raises(ValueError, match=message) as error:
        gh.GradeHead.load(path)
    assert str(path) in str(error.value)


def test_cross_fitting_never_uses_a_rows_own_fold(passages):
    y = passages["is_k5"].to_numpy()
    encoder = _noisy_encoder(y)
    folds = np.asarray(["a", "b", "c", "d"] * (len(y) // 4))
    scores = gh.cross_fitted_p_k5(encoder, passages, y, folds)
    # each fold's scores are a head fitted on the other folds' rows only
    rest = folds != "a"
    head = gh.GradeHead.fit(encoder[rest], passages[rest], y[rest])
    assert np.array_equal(scores[~rest], head.p_k5(encoder[~rest], passages[~rest]))
    # flipping a row's label leaves its own fold's scores exactly as they were ...
    row = int(np.flatnonzero(folds == "a")[0])
    flipped = y.copy()
    flipped[row] = not flipped[row]
    again = gh.cross_fitted_p_k5(encoder, passages, flipped, folds)
    assert np.array_equal(again[folds == "a"], scores[folds == "a"])
    # ... and moves every other fold's (the check has power)
    assert not np.array_equal(again[folds == "b"], scores[folds == "b"])


def test_cross_fitting_needs_both_classes_outside_each_fold(passages):
    y = passages["is_k5"].to_numpy()
    with pytest.raises(ValueError, match="fold"):
        gh.cross_fitted_p_k5(None, passages, y, np.where(y, "k5", "other"))
    with pytest.raises(ValueError, match="two folds"):
        gh.cross_fitted_p_k5(None, passages, y, np.zeros(len(y)))


def test_stacking_on_out_of_fold_encoder_scores(passages):
    y = passages["is_k5"].to_numpy()
    encoder = _noisy_encoder(y)
    folds = np.asarray(["a", "b", "c", "d"] * (len(y) // 4))
    encoded = pd.DataFrame(
        {"enc_pred": np.where(encoder >= 0.5, "K5", "K12").astype(object), "enc_p_k5": encoder}
    )
    encoded.loc[0, ["enc_pred", "enc_p_k5"]] = [None, np.nan]  # a row the encoder did not score
    stacked = gh.stack_on_encoder(encoded, passages["text"], y, folds)
    scores = stacked.scores
    # the encoder's own outputs are kept beside the head's; the unscored row stays unscored
    assert scores["enc_model_p_k5"].equals(encoded["enc_p_k5"])
    assert scores["enc_model_pred"].equals(encoded["enc_pred"])
    assert pd.isna(scores.loc[0, "enc_p_k5"]) and pd.isna(scores.loc[0, "enc_pred"])
    # the stage-3 scores are cross-fitted over the scored rows: fold a's come from a head without fold a
    scored = np.arange(len(y)) != 0
    features = gh.readability_features(passages["text"][scored])
    expected = gh.cross_fitted_p_k5(encoder[scored], features, y[scored], folds[scored])
    assert np.allclose(scores["enc_p_k5"].to_numpy()[scored], expected)
    assert set(scores.loc[scored, "enc_pred"]) <= {"K5", gh.BELOW_K5}
    assert (scores.loc[scored, "enc_pred"].eq("K5") == (scores.loc[scored, "enc_p_k5"] >= 0.5)).all()
    # the head shipped is fitted on every scored row, encoder input first
    assert stacked.head.uses_encoder and stacked.head.n_train == int(scored.sum())
    with pytest.raises(ValueError, match="one value per encoded row"):
        gh.stack_on_encoder(encoded, passages["text"][:-1], y, folds)
    with pytest.raises(ValueError, match="no row was scored"):
        gh.stack_on_encoder(encoded.assign(enc_p_k5=np.nan), passages["text"], y, folds)
