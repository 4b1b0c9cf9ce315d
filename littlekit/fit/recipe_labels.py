"""`littlekit fit`'s first steps, shared with the book: the training labels and stage 1's AoA table."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from littlekit import config, runs
from littlekit.filter.artifacts import export_aoa_table
from littlekit.filter.lexicon import DEFAULT_TABLE
from littlekit.fit.labels import (
    DEFAULT_LABELS,
    DEFAULT_MAX_PER_BAND,
    build_labels,
    load_labels,
    write_label_file,
)

HOLDOUT_FRACTION = 0.2  # held-out share of each band, for the classifiers' held-out evaluation


def make_labels(
    path: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    seed: int = 0,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
    labels: str = DEFAULT_LABELS,
    sample_per_band: int | None = None,
) -> pd.DataFrame:
    """Build the labels (`build_labels(labels)`: the judge's by default, `source`, or label files;
    `sample_per_band` for a quick run), write them to `path`, read them back (the records with a
    band, as every later step reads them)."""
    built = build_labels(
        labels, data_root, seed=seed, max_per_band=max_per_band, sample_per_band=sample_per_band
    )
    write_label_file(built, path)
    return load_labels(path)


def run_labels(
    run: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    seed: int = 0,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
    labels: str = DEFAULT_LABELS,
) -> tuple[pd.DataFrame, str]:
    """(labels, note): the run's labels, or the `labels` set built and written there."""
    path = runs.path(run, "labels")
    if path.exists():
        found = load_labels(path)
        return found, f"Read {len(found):,} labelled documents from {path}."
    found = make_labels(path, data_root, seed=seed, max_per_band=max_per_band, labels=labels)
    return found, (
        f"{path} did not exist, so the labels were built with build_labels({labels!r}, "
        f"max_per_band={max_per_band}, seed={seed}) and written there: {len(found):,} labelled documents."
    )


def labels_file(run: str | os.PathLike) -> Path:
    """Where a run's training labels live."""
    return runs.path(run, "labels")


# --- stage 1 --------------------------------------------------------------------------------------


def export_default_aoa(
    artifacts: str | os.PathLike, data_root: str | os.PathLike | None = None
) -> tuple[Path, str]:
    """Write stage 1's default AoA table into the artifacts folder; (path, how it was made)."""
    source = config.data_path(DEFAULT_TABLE, data_root)
    path = export_aoa_table(source, artifacts)
    return path, (
        f"exported with export_aoa_table from {source.name} (the lemma-propagated Kuperman et al. 2012 AoA "
        "of the 51,715-word file, lower-cased, stage 1's default); words missing from it get the published "
        "Zipf imputation, a stage option"
    )
