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

import math
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from littlekit.filter.base import (
    Artifact,
    Decision,
    Option,
    Stage,
    StageSpec,
    check_optional_probability,
    check_probability,
    describe_minimum,
    minimum_probability_keeps,
    probability_columns,
    probability_or_released,
    top_band_keeps,
)
from littlekit.grades import BANDS

LABEL_PREFIX = "__label__"
KEEP_BAND = "K5"
REASON_PREFIX = "fasttext_"
MIN_K5_PROB: float | None = None  # None: the released rule, the top band alone decides
FASTTEXT_MAGIC = 793712314  # first int32 of every fastText .bin/.ftz (FASTTEXT_FILEFORMAT_MAGIC_INT32)
PROBE_TEXT = "The cat sat on the mat. We play with the big red ball in the park."
REBUILD = (
    "rebuild it with `littlekit fit fasttext --data DATA --out ARTIFACTS` "
    "(or littlekit.fit.fasttext.train_fasttext), or copy the released models/fasttext_grade.bin again"
)


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
        if self.path is not None:
            self.self_check()

    def self_check(self) -> None:
        """Score a probe text: a damaged model that loads (fastText reads a cut file without
        complaint) answers with no labels or non-finite probabilities; ValueError then."""
        where = self.path if self.path is not None else "the fastText model"
        try:
            labels, probs = self.model.predict([fasttext_text(PROBE_TEXT)], k=-1)
            scores = self._scores(labels[0], probs[0])
        except Exception as error:  # an empty prediction is an IndexError in _scores
            raise ValueError(
                f"fastText model {where} fails its self check: predicting a probe text raised "
                f"{type(error).__name__}: {error} (the file is truncated or damaged); {REBUILD}"
            ) from error
        if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in scores["probs"].values()):
            raise ValueError(
                f"fastText model {where} fails its self check: a probe text got the probabilities "
                f"{scores['probs']} (the file is damaged); {REBUILD}"
            )

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
    problem = fasttext_file_problem(path)
    if problem:
        raise ValueError(f"{path} is {problem}; {REBUILD}")
    try:
        return fasttext.load_model(str(path))
    except (ValueError, RuntimeError, MemoryError) as error:
        raise ValueError(f"{path} is not a fastText model (.bin/.ftz): {error}; {REBUILD}") from error


# --- the file's own layout ----------------------------------------------------------------------
# fastText (0.9, file format version 12) writes, in this order: magic and version (int32 each);
# its Args (12 int32 and a double); the dictionary (size, nwords, nlabels as int32, ntokens and
# the pruned-index size as int64, then per entry the word NUL-terminated, its count as int64 and
# its type as int8, then the pruned-index pairs as 2 x int32); a bool for a quantized input
# matrix; the input matrix; a bool for a quantized output matrix; the output matrix. A dense
# matrix is m, n (int64) and m x n float32; a quantized one is qnorm (bool), m, n (int64),
# codesize (int32), codesize bytes, a product quantizer, and with qnorm m more bytes and a second
# quantizer. A product quantizer is dim, nsubq, dsub, lastdsub (int32) and dim x 256 float32.
# fastText itself reads a cut file without complaint (the rest of the matrices stay zero), so
# the size it should have is worked out here from the header and compared with the real one.

_ARGS_BYTES = 12 * 4 + 8
_KSUB = 256


def fasttext_file_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a fastText .bin/.ftz on disk (wrong magic, truncated, trailing bytes);
    None when its size is what its own header says. Reads the header and dictionary, not the
    matrices, so it costs a fraction of loading the model."""
    path = Path(path)
    size = path.stat().st_size
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8 or struct.unpack("<i", head[:4])[0] != FASTTEXT_MAGIC:
                return "not a fastText model (.bin or .ftz saved by save_model)"
            expected = _expected_size(handle, size)
    except _Truncated as cut:
        return f"a truncated fastText model: the file ends inside its {cut} ({size:,} bytes)"
    if expected != size:
        kind = "truncated" if size < expected else "damaged"
        return (
            f"a {kind} fastText model: its header says {expected:,} bytes but the file has {size:,}"
        )
    return None


class _Truncated(Exception):
    """The file ended inside the part named by the message."""


def _read(handle: IO[bytes], n: int, part: str) -> bytes:
    data = handle.read(n)
    if len(data) < n:
        raise _Truncated(part)
    return data


def _expected_size(handle: IO[bytes], file_size: int) -> int:
    _read(handle, _ARGS_BYTES, "arguments")
    entries, _, _ = struct.unpack("<3i", _read(handle, 12, "dictionary header"))
    _, prune_size = struct.unpack("<2q", _read(handle, 16, "dictionary header"))
    if entries < 0:
        raise _Truncated("dictionary header")
    _skip_entries(handle, entries)
    offset = handle.tell() + max(prune_size, 0) * 8
    handle.seek(offset)
    for part in ("input matrix", "output matrix"):
        quantized = _read(handle, 1, part) != b"\x00"
        offset = handle.tell()
        offset += _quantized_bytes(handle, part) if quantized else _dense_bytes(handle, part)
        if offset > file_size:
            raise _Truncated(part)
        handle.seek(offset)
    return offset


def _skip_entries(handle: IO[bytes], n: int) -> None:
    """Past n dictionary entries: word, NUL, count (int64), type (int8)."""
    left, buffer = n, b""
    while left:
        block = handle.read(1 << 20)
        if not block:
            raise _Truncated("dictionary")
        buffer += block
        position = 0
        while left:
            end = buffer.find(b"\x00", position)
            if end < 0 or end + 10 > len(buffer):
                break
            position = end + 10
            left -= 1
        buffer = buffer[position:]
    handle.seek(handle.tell() - len(buffer))


def _dense_bytes(handle: IO[bytes], part: str) -> int:
    m, n = struct.unpack("<2q", _read(handle, 16, part))
    return 16 + 4 * m * n


def _quantized_bytes(handle: IO[bytes], part: str) -> int:
    start = handle.tell()
    qnorm = _read(handle, 1, part) != b"\x00"
    m, _ = struct.unpack("<2q", _read(handle, 16, part))
    (codesize,) = struct.unpack("<i", _read(handle, 4, part))
    handle.seek(handle.tell() + codesize)
    total = handle.tell() + _quantizer_bytes(handle, part) - start
    if qnorm:
        handle.seek(start + total + m)
        total += m + _quantizer_bytes(handle, part)
    return total


def _quantizer_bytes(handle: IO[bytes], part: str) -> int:
    dim, _, _, _ = struct.unpack("<4i", _read(handle, 16, part))
    return 16 + 4 * dim * _KSUB


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


# --- the stage's declaration (littlekit.filter.base.StageSpec) -----------------------------------


def _build(options: Any) -> FastTextStage:
    if options.fasttext_model is None:
        raise ValueError("stage 'fasttext' needs fasttext_model (command line: --fasttext-model PATH)")
    return FastTextStage(options.fasttext_model, min_k5_prob=options.fasttext_min_k5_prob)


def _file_problem(path: Path) -> str | None:
    if not path.is_file():
        return "not found" if not path.exists() else "is not a file"
    return fasttext_file_problem(path)


SPEC = StageSpec(
    name="fasttext",
    position=2,
    label="FastText",
    description="stage 2: fastText grade classifier's top label is K5 (needs fasttext_model)",
    build=_build,
    options=(
        Option(
            "fasttext_model",
            None,
            "fasttext stage: supervised fastText .bin",
            parse=Path,
            metavar="PATH",
            path=True,
            required=True,
        ),
        Option(
            "fasttext_min_k5_prob",
            MIN_K5_PROB,
            "fasttext stage: keep only when the top band is K5 and P(K5) >= P; 'released' = top band "
            "alone (default: --artifacts DIR's filter_config.json when its model is used, else released)",
            parse=probability_or_released,
            metavar="P",
            check=check_optional_probability,
            threshold=True,
        ),
    ),
    artifacts=(
        Artifact(
            "fasttext_model",
            "models/fasttext_grade.bin",
            "fasttext",
            "supervised fastText grade classifier, labels __label__K5/K8/K12/OOS",
            "`littlekit fit fasttext --data DATA --out DIR`, or "
            "littlekit.fit.fasttext.train_fasttext(labels, DIR/models/fasttext_grade.bin)",
            _file_problem,
        ),
    ),
    stored_keeps=lambda frame, t: top_band_keeps(frame["pred"], frame["p_k5"], t.get("fasttext_min_k5_prob")),
    stored_columns=("pred", "p_k5"),
    store=lambda scores, decision: {"pred": scores["band"], "p_k5": float(scores["probs"].get(KEEP_BAND, 0))},
    outcome_columns=probability_columns("fasttext"),
    outcome_keeps=minimum_probability_keeps("fasttext", "fasttext_min_k5_prob"),
    drop_reason="fasttext_low_k5_prob",
    describe=describe_minimum("fasttext", "fasttext_min_k5_prob"),
)
