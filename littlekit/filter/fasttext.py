"""Stage 2, the fastText grade classifier: keep a document when its top label is `__label__K5`.

That is the released rule. `min_k5_prob` (default None = the released rule) adds a precision-first
condition: the top label is K5 *and* P(K5) >= min_k5_prob; a K5 document below it is dropped with
reason `fasttext_low_k5_prob` (littlekit.fit.operating_point chooses the value on training sources).

The stage loads any supervised fastText `.bin` (or `.ftz`) whose labels are grade bands, among
them the released `fasttext_grade.bin` (labels `__label__K5/K8/K12/OOS`). Text is prepared
exactly as the released filter does it: newlines become spaces, nothing else changes (no
lower-casing), because `model.predict` reads one line. The same preparation builds the
training lines, so a model trained here and the released one see text the same way.

`littlekit.fit.fasttext.train_fasttext` trains such a model from labelled documents.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from littlekit.filter.base import Decision, Stage, check_probability
from littlekit.grades import BANDS

LABEL_PREFIX = "__label__"
KEEP_BAND = "K5"
REASON_PREFIX = "fasttext_"
MIN_K5_PROB: float | None = None  # None: the released rule, the top band alone decides


def fasttext_text(text: str) -> str:
    """The text as the released filter hands it to fastText: newlines replaced by spaces."""
    return text.replace("\n", " ")


class FastTextStage(Stage):
    """Keep a document when the fastText model's top band is K5; reason `fasttext_<band>` otherwise.

    `model` is a path to a supervised fastText model (.bin/.ftz) whose labels are bands
    (`__label__K5`, ... ; K5 among them), or an already loaded `fasttext` model.
    `min_k5_prob`: None keeps the released rule; a number also requires P(K5) >= it (reason
    `fasttext_low_k5_prob` when the top band is K5 but its probability is lower).
    Scores: `band` (top band), `prob` (its probability) and `probs` (every band; bands the
    model ranks below fastText's 1e-5 floor get 0.0; values are clipped to at most 1.0).
    """

    name = "fasttext"

    def __init__(self, model: str | os.PathLike | Any, min_k5_prob: float | None = MIN_K5_PROB) -> None:
        check_probability("min_k5_prob", min_k5_prob)
        self.min_k5_prob = min_k5_prob
        if isinstance(model, str | os.PathLike):
            self.path: Path | None = Path(model)
            self.model = load_fasttext_model(self.path)
        else:
            self.path = None
            self.model = model
        self.bands = _model_bands(self.model, self.path)

    def score(self, text: str) -> dict[str, Any]:
        return self.score_batch([text])[0]

    def score_batch(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Score many documents with one `predict` call (much faster than one at a time)."""
        if not texts:
            return []
        labels, probs = self.model.predict([fasttext_text(text) for text in texts], k=-1)
        return [self._scores(lab, prob) for lab, prob in zip(labels, probs, strict=True)]

    def predict_bands(self, texts: Sequence[str]) -> list[str]:
        """The top band of each document."""
        return [scores["band"] for scores in self.score_batch(list(texts))]

    def decide(self, scores: dict[str, Any]) -> Decision:
        band = scores["band"]
        if band == KEEP_BAND:
            if self.min_k5_prob is not None and scores["probs"][KEEP_BAND] < self.min_k5_prob:
                return Decision(False, f"{REASON_PREFIX}low_k5_prob", scores)
            return Decision(True, None, scores)
        return Decision(False, f"{REASON_PREFIX}{band}", scores)

    def _scores(self, labels: Sequence[str], probs: Sequence[float]) -> dict[str, Any]:
        by_band = {band: 0.0 for band in self.bands}
        for label, prob in zip(labels, probs, strict=True):
            by_band[label.removeprefix(LABEL_PREFIX)] = min(float(prob), 1.0)
        top = labels[0].removeprefix(LABEL_PREFIX)
        return {"band": top, "prob": by_band[top], "probs": by_band}


def load_fasttext_model(path: str | os.PathLike) -> Any:
    """Load a fastText model, with a clear error for a missing file or one that is not fastText."""
    import fasttext  # here, not at the top: stages other than fasttext never load the library

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"fastText model {path} not found; train one (littlekit.fit.fasttext.train_fasttext) "
            "or point to the released models/fasttext_grade.bin"
        )
    if not path.is_file():
        raise ValueError(f"{path} is not a fastText model (.bin/.ftz): not a file")
    try:
        return fasttext.load_model(str(path))
    except (ValueError, RuntimeError, MemoryError) as error:
        raise ValueError(f"{path} is not a fastText model (.bin/.ftz): {error}") from error


def _model_bands(model: Any, path: Path | None) -> tuple[str, ...]:
    where = path if path is not None else "the model"
    labels = [str(label) for label in model.get_labels()]
    bands = tuple(label.removeprefix(LABEL_PREFIX) for label in labels)
    unknown = [label for label, band in zip(labels, bands, strict=True) if band not in BANDS]
    if unknown or KEEP_BAND not in bands:
        raise ValueError(
            f"{where} is not a grade classifier: labels {labels}; expected "
            f"{', '.join(LABEL_PREFIX + band for band in BANDS)} with {LABEL_PREFIX}{KEEP_BAND} among them"
        )
    return tuple(band for band in BANDS if band in bands)
