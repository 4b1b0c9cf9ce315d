"""Train stage 2's fastText grade classifier from labelled documents (`littlekit.fit.labels`).

`train_fasttext` calls `fasttext.train_supervised`; every hyper-parameter is an argument. Training
lines are prepared as `littlekit.filter.fasttext` prepares text at run time, so a model trained here
and the released one see text the same way.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.filter.fasttext import LABEL_PREFIX, FastTextStage, fasttext_text
from littlekit.grades import BANDS

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


