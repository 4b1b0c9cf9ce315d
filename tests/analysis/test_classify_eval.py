"""Per-band classifier evaluation on a hand-made confusion case."""

from __future__ import annotations

import math

import pytest

from littlekit.analysis.classify_eval import (
    as_band,
    confusion_matrix,
    evaluate_bands,
    under_classification_rate,
)

# 10 documents; hand-counted below.
TRUE = ["K5", "K5", "K5", "K5", "K8", "K8", "K8", "K12", "K12", "OOS"]
PRED = ["K5", "K5", "K5", "K8", "K5", "K8", "K8", "K8", "K12", "K12"]


def test_confusion_matrix_rows_are_truth_columns_predictions():
    table = confusion_matrix(TRUE, PRED)
    assert list(table.index) == ["K5", "K8", "K12", "OOS"]
    assert table.loc["K5"].tolist() == [3, 1, 0, 0]
    assert table.loc["K8"].tolist() == [1, 2, 0, 0]
    assert table.loc["K12"].tolist() == [0, 1, 1, 0]
    assert table.loc["OOS"].tolist() == [0, 0, 1, 0]
    assert int(table.to_numpy().sum()) == len(TRUE)


def test_per_band_precision_recall_f1_by_hand():
    report = evaluate_bands(TRUE, PRED)
    band = report.per_band
    # K5: 4 predicted, 3 right; 4 true, 3 found.
    assert band.loc["K5", ["precision", "recall", "f1"]].tolist() == pytest.approx([0.75, 0.75, 0.75])
    # K8: 4 predicted (one K5, one K12 among them), 2 right; 3 true.
    assert band.loc["K8", "precision"] == pytest.approx(0.5)
    assert band.loc["K8", "recall"] == pytest.approx(2 / 3)
    assert band.loc["K8", "f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert band.loc["K12", ["precision", "recall", "f1"]].tolist() == pytest.approx([0.5, 0.5, 0.5])
    # OOS is never predicted: precision undefined, recall 0, F1 0.
    assert math.isnan(band.loc["OOS", "precision"])
    assert band.loc["OOS", "recall"] == 0 and band.loc["OOS", "f1"] == 0
    assert band["support"].tolist() == [4, 3, 2, 1]
    assert band["predicted"].tolist() == [4, 4, 2, 0]


def test_headline_figures_by_hand():
    report = evaluate_bands(TRUE, PRED)
    assert report.n == 10
    assert report.accuracy == pytest.approx(0.6)
    assert report.k5_precision == pytest.approx(0.75)
    assert report.k5_recall == pytest.approx(0.75)
    # Beyond-K-5 truth: 6 documents; K8->K5, K12->K8 and OOS->K12 are under-classified.
    assert report.under_classification_rate == pytest.approx(3 / 6)
    # only K8->K5 gets through the keep rule
    assert report.beyond_as_k5_rate == pytest.approx(1 / 6)
    f1 = [0.75, 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3), 0.5, 0.0]
    assert report.macro_f1 == pytest.approx(sum(f1) / 4)
    assert set(report.summary()) >= {"k5_precision", "under_classification_rate"}


def test_over_classification_is_not_under_classification():
    # K8 called K12 or OOS is a loss of data, not a leak: rate 0.
    assert under_classification_rate(["K8", "K8", "K12"], ["K12", "OOS", "OOS"]) == 0
    assert under_classification_rate(["OOS", "K12"], ["K5", "K5"]) == 1


def test_no_beyond_truth_gives_nan_rates():
    report = evaluate_bands(["K5", "K5"], ["K5", "K8"])
    assert math.isnan(report.under_classification_rate)
    assert math.isnan(report.beyond_as_k5_rate)
    assert math.isnan(report.per_band.loc["K12", "f1"])  # neither true nor predicted
    assert report.macro_f1 == pytest.approx(2 / 3)  # K5 only: 2*1/(2+1)


def test_fasttext_labels_are_accepted_and_junk_is_refused():
    assert as_band("__label__K12") == "K12"
    assert evaluate_bands(["__label__K5"], ["K5"]).accuracy == 1
    with pytest.raises(ValueError, match="unknown band"):
        evaluate_bands(["K5"], ["grade5"])
    with pytest.raises(ValueError, match="1 true bands but 2"):
        confusion_matrix(["K5"], ["K5", "K8"])
    with pytest.raises(ValueError, match="not among the evaluated bands"):
        confusion_matrix(["K5", "OOS"], ["K5", "K5"], bands=("K5", "K8"))
