"""Stage 2, the fastText grade classifier: keep a document when its top label is `__label__K5`.

That is the released rule. `min_k5_prob` (default None = the released rule) adds a precision-first
condition: the top label is K5 *and* P(K5) >= min_k5_prob; a K5 document below it is dropped with
reason `fasttext_low_k5_prob` (littlekit.operating_point chooses the value on training sources).

The stage loads any supervised fastText `.bin` (or `.ftz`) whose labels are grade bands, among
them the released `fasttext_grade.bin` (labels `__label__K5/K8/K12/OOS`). Text is prepared
exactly as the released filter does it: newlines become spaces, nothing else changes (no
lower-casing), because `model.predict` reads one line. The same preparation builds the
training lines, so a model trained here and the released one see text the same way.

`train_fasttext` trains such a model from labelled documents (`littlekit.labels`) with
`fasttext.train_supervised`; every hyper-parameter is an argument.

Determinism: fastText fills only `thread / 10` of the input matrix with its seeded random
initialisation (`DenseMatrix::uniform` splits the matrix into 10 blocks, one per thread). The
rest is whatever the allocator hands back; a build that zero-fills gets zeros, the installed
wheel (fasttext-numpy2-wheel 0.9.2) gets reused heap memory, which made single-thread training
irreproducible and often end in "Encountered NaN". During training we therefore ask glibc to
hand out zeroed memory (`mallopt(M_PERTURB)`, restored afterwards), which makes `thread=1`
training reproducible and equal to a zero-filling build. Elsewhere (no glibc) training still
works, but use `thread >= 10` there so the whole matrix is initialised.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.grades import BANDS
from littlekit.stages.base import Decision, Stage

LABEL_PREFIX = "__label__"
KEEP_BAND = "K5"
REASON_PREFIX = "fasttext_"
M_PERTURB = -6  # glibc mallopt parameter: fill allocations with ~byte, freed memory with byte

# Defaults chosen on a held-out fifth of the embedded labels (never on CommonCoreText-PD
# validation): character 3-6-grams and word bigrams beat word unigrams/bigrams alone on K-5
# precision and under-classification; 10 epochs matched 25. All are train_fasttext arguments.
DEFAULT_HYPER: dict[str, Any] = {
    "epoch": 10,
    "lr": 0.5,
    "wordNgrams": 2,
    "dim": 32,
    "minCount": 2,
    "minn": 3,
    "maxn": 6,
    "bucket": 100_000,
    "loss": "softmax",
    "seed": 0,
    "thread": 1,
}


def fasttext_text(text: str) -> str:
    """The text as the released filter hands it to fastText: newlines replaced by spaces."""
    return text.replace("\n", " ")


def training_line(text: str, band: str) -> str:
    """One fastText training line: `__label__K5 <text on one line>`."""
    if band not in BANDS:
        raise ValueError(f"unknown band {band!r}; expected one of {', '.join(BANDS)}")
    return f"{LABEL_PREFIX}{band} {fasttext_text(text)}"


def write_training_file(
    labelled: pd.DataFrame,
    path: str | os.PathLike,
    text_column: str = "text",
    band_column: str = "band",
    seed: int = 0,
) -> int:
    """Write one training line per labelled row, in a seeded shuffled order; returns the count.

    fastText reads the file in order and does not shuffle; a file sorted by band would train a
    single thread on one band after another and leave the model leaning to the last one.
    Rows without a band are skipped.
    """
    rows = labelled.loc[labelled[band_column].notna(), [text_column, band_column]]
    rows = rows.sample(frac=1.0, random_state=seed)
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for text, band in rows.itertuples(index=False):
            handle.write(training_line(str(text), str(band)) + "\n")
    return len(rows)


def train_fasttext(
    labelled: pd.DataFrame,
    out_path: str | os.PathLike,
    *,
    text_column: str = "text",
    band_column: str = "band",
    **hyper: Any,
) -> FastTextStage:
    """Train a supervised fastText grade classifier, save it to `out_path` (.bin), return its stage.

    `hyper` overrides DEFAULT_HYPER and may carry any other `train_supervised` argument
    (e.g. `lrUpdateRate`, `minCountLabel`).
    """
    import fasttext

    params = {**DEFAULT_HYPER, **hyper, "verbose": hyper.get("verbose", 0)}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        n = write_training_file(labelled, train_file, text_column, band_column, seed=params["seed"])
        if n == 0:
            raise ValueError("no labelled rows to train on")
        with _zeroed_allocations():
            try:
                model = fasttext.train_supervised(input=str(train_file), **params)
            except RuntimeError as error:
                raise RuntimeError(
                    f"fastText training failed ({error}); with a NaN, lower lr (now {params['lr']})"
                ) from error
    model.save_model(str(out_path))
    return FastTextStage(out_path)


@contextlib.contextmanager
def _zeroed_allocations() -> Iterator[None]:
    """Within the block, glibc's malloc returns zero-filled memory (see the module docstring)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: nothing to switch
        yield
        return
    mallopt(M_PERTURB, 0xFF)  # allocations are filled with ~0xFF = 0x00
    try:
        yield
    finally:
        mallopt(M_PERTURB, 0)


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

    def __init__(self, model: str | os.PathLike | Any, min_k5_prob: float | None = None) -> None:
        if min_k5_prob is not None and not 0.0 <= min_k5_prob <= 1.0:
            raise ValueError(f"min_k5_prob must be a probability between 0 and 1, got {min_k5_prob}")
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
    import fasttext

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"fastText model {path} not found; train one (littlekit.stages.fasttext_stage.train_fasttext) "
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
