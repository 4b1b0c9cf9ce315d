"""Per-band evaluation of a grade classifier (the fastText and the encoder stage share it).

Given true and predicted bands (K5, K8, K12, OOS) it reports, per band, precision, recall, F1
and support, the confusion matrix, and the two figures the filter cares about most:

- K-5 precision: of the documents predicted K5 (the ones the stage keeps), the share that
  truly are K5. Low K-5 precision means Beyond-K-5 text leaks into the corpus.
- under-classification rate: of the truly Beyond-K-5 documents (K8, K12, OOS), the share
  predicted at a *lower* band than their own (a K12 text called K8 counts, as does OOS called
  K5). `beyond_as_k5_rate` is the part of that which the keep rule lets through.

NaN rules: precision is NaN for a band never predicted, recall for a band absent from the
truth; F1 = 2TP / (2TP + FP + FN), so it is 0 for a band in the truth that is never predicted
and NaN only for a band neither true nor predicted; the rates are NaN with no Beyond-K-5 truth.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from littlekit.filter.base import Stage
from littlekit.grades import BAND_ORDER, BANDS, check_band

LABEL_PREFIX = "__label__"


@dataclass(frozen=True)
class BandReport:
    """The evaluation of one set of predictions."""

    per_band: pd.DataFrame  # index band; columns precision, recall, f1, support, predicted
    confusion: pd.DataFrame  # rows: true band, columns: predicted band, counts
    n: int
    accuracy: float
    macro_f1: float  # mean F1 over bands present in the truth
    k5_precision: float
    k5_recall: float
    under_classification_rate: float
    beyond_as_k5_rate: float

    def summary(self) -> dict[str, float]:
        """The headline figures as one flat dict (a row of a comparison table)."""
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "k5_precision": self.k5_precision,
            "k5_recall": self.k5_recall,
            "under_classification_rate": self.under_classification_rate,
            "beyond_as_k5_rate": self.beyond_as_k5_rate,
        }


def as_band(label: str) -> str:
    """'K5' or '__label__K5' -> 'K5'; ValueError for anything that is not a band."""
    return check_band(str(label).removeprefix(LABEL_PREFIX))


def confusion_matrix(
    y_true: Iterable[str], y_pred: Iterable[str], bands: Sequence[str] = BANDS
) -> pd.DataFrame:
    """Counts with true bands as rows and predicted bands as columns, in band order."""
    true, pred = _bands(y_true), _bands(y_pred)
    if len(true) != len(pred):
        raise ValueError(f"{len(true)} true bands but {len(pred)} predictions")
    outside = sorted(set(true + pred) - set(bands), key=BAND_ORDER.get)
    if outside:
        raise ValueError(f"bands {outside} are not among the evaluated bands {list(bands)}")
    counts = Counter(zip(true, pred, strict=True))
    rows = [[counts[(t, p)] for p in bands] for t in bands]
    index = pd.Index(list(bands), name="true")
    return pd.DataFrame(rows, index=index, columns=pd.Index(list(bands), name="pred"))


def under_classification_rate(y_true: Iterable[str], y_pred: Iterable[str]) -> float:
    """Share of truly Beyond-K-5 documents predicted at a lower band than their own."""
    pairs = [(t, p) for t, p in zip(_bands(y_true), _bands(y_pred), strict=True) if t != "K5"]
    if not pairs:
        return math.nan
    return sum(BAND_ORDER[p] < BAND_ORDER[t] for t, p in pairs) / len(pairs)


def evaluate_bands(y_true: Iterable[str], y_pred: Iterable[str], bands: Sequence[str] = BANDS) -> BandReport:
    """Precision, recall, F1 per band, the confusion matrix and the K-5 figures."""
    true, pred = _bands(y_true), _bands(y_pred)
    confusion = confusion_matrix(true, pred, bands)
    rows = {band: _band_row(confusion, band) for band in bands}
    per_band = pd.DataFrame.from_dict(rows, orient="index")
    per_band.index.name = "band"
    n = len(true)
    present = per_band.loc[per_band["support"] > 0, "f1"]
    beyond = [p for t, p in zip(true, pred, strict=True) if t != "K5"]
    return BandReport(
        per_band=per_band,
        confusion=confusion,
        n=n,
        accuracy=sum(t == p for t, p in zip(true, pred, strict=True)) / n if n else math.nan,
        macro_f1=float(present.mean()) if len(present) else math.nan,
        k5_precision=float(per_band.loc["K5", "precision"]) if "K5" in rows else math.nan,
        k5_recall=float(per_band.loc["K5", "recall"]) if "K5" in rows else math.nan,
        under_classification_rate=under_classification_rate(true, pred),
        beyond_as_k5_rate=sum(p == "K5" for p in beyond) / len(beyond) if beyond else math.nan,
    )


def _band_row(confusion: pd.DataFrame, band: str) -> dict[str, float]:
    hits = int(confusion.loc[band, band])
    support = int(confusion.loc[band].sum())
    predicted = int(confusion[band].sum())
    precision = hits / predicted if predicted else math.nan
    recall = hits / support if support else math.nan
    # 2TP / (2TP + FP + FN): the harmonic mean where both exist, 0 for a band in the truth
    # that is never predicted, NaN only for a band neither true nor predicted.
    f1 = 2 * hits / (support + predicted) if support + predicted else math.nan
    return {"precision": precision, "recall": recall, "f1": f1, "support": support, "predicted": predicted}


def _bands(labels: Iterable[str]) -> list[str]:
    return [as_band(label) for label in labels]


def predict_frame(stage: Stage, frame: pd.DataFrame, text_column: str = "text") -> pd.DataFrame:
    """`frame` with a grade-classifier stage's verdict on each row's text, as the filter makes it.

    Adds `pred` (top band; None where the stage scored nothing, e.g. a closed gate), `p_k5`
    (probability of K5), `kept` (the stage's keep rule) and `reason` (drop reason or None).
    Scores through the stage's `score_batch` (batched in the fastText and encoder stages).
    """
    scores = stage.score_batch(frame[text_column].tolist())
    decisions = [stage.decide(s) for s in scores]
    return frame.assign(
        pred=[s.get("band") for s in scores],
        p_k5=[(s.get("probs") or {}).get("K5", math.nan) for s in scores],
        kept=[d.keep for d in decisions],
        reason=[d.reason for d in decisions],
    )
