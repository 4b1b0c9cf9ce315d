"""What a chapter reads from the chapters before it, made through the same call when it is missing.

Chapters hand their outputs on through the run folder (`runs/<run_name>/`). A chapter run on its
own may find an input missing; these functions then make it with the call the earlier chapter
makes and return a note saying what happened, which the notebook prints:

- labels (chapter 2): `labels/train_labels.jsonl`, else `build_default_labels` + `write_label_file`;
- the fastText model (chapter 3): `artifacts/models/fasttext_grade.bin`, else `train_fasttext` on
  the training part of `split_labels`, with chapter 3's default hyper-parameters;
- the encoder (chapter 4): `artifacts/models/modernbert_grade/`, else None. Training it takes
  minutes on a CPU, so a later chapter skips the encoder stage and says so rather than train it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from littlekit.filter.artifacts import artifact_path, artifact_problems
from littlekit.fit.labels import (
    DEFAULT_MAX_PER_BAND,
    build_default_labels,
    load_labels,
    split_labels,
    write_label_file,
)

LABELS_FILE = "labels/train_labels.jsonl"
ARTIFACTS = "artifacts"
HOLDOUT_FRACTION = 0.2  # chapter 3's default held-out share


def labels_file(run: str | os.PathLike) -> Path:
    """Where chapter 2 writes the training labels of a run."""
    return Path(run) / LABELS_FILE


def run_labels(
    run: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    seed: int = 0,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
) -> tuple[pd.DataFrame, str]:
    """(labels, note): chapter 2's labels, or the default labels built and written as chapter 2 does."""
    path = labels_file(run)
    if path.exists():
        labels = load_labels(path)
        return labels, f"Read {len(labels):,} labelled documents from {path} (the labels file of chapter 2)."
    write_label_file(build_default_labels(data_root, seed=seed, max_per_band=max_per_band), path)
    labels = load_labels(path)
    return labels, (
        f"{path} did not exist (chapter 2 has not run for this run), so the default labels were rebuilt "
        f"with chapter 2's call, build_default_labels(max_per_band={max_per_band}, seed={seed}), and "
        f"written there: {len(labels):,} labelled documents."
    )


def run_fasttext(
    run: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    seed: int = 0,
    holdout_fraction: float = HOLDOUT_FRACTION,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
):
    """(FastTextStage, note): chapter 3's model, or one trained with chapter 3's default call.

    The trained model is saved where chapter 3 saves it, so the chapters after use the same one.
    """
    from littlekit.filter.fasttext import FastTextStage
    from littlekit.fit.fasttext import DEFAULT_HYPER, train_fasttext

    path = artifact_path(Path(run) / ARTIFACTS, "fasttext_model")
    if path.is_file():
        return FastTextStage(path), f"fastText model: {path} (trained by chapter 3)."
    labels, note = run_labels(run, data_root, seed, max_per_band)
    train, _ = split_labels(labels, holdout_fraction=holdout_fraction, seed=seed)
    stage = train_fasttext(train, path, **{**DEFAULT_HYPER, "seed": seed})
    return stage, (
        f"{note} {path} did not exist (chapter 3 has not run for this run), so it was trained here with "
        f"chapter 3's call and default parameters: train_fasttext on the {len(train):,} training labels "
        f"of split_labels(holdout_fraction={holdout_fraction}, seed={seed})."
    )


def run_encoder(run: str | os.PathLike) -> tuple[Path | None, str]:
    """(directory or None, note): chapter 4's encoder, or None when it is missing or incomplete."""
    root = Path(run) / ARTIFACTS
    path = artifact_path(root, "encoder_model")
    problems = artifact_problems(root, ["encoder"])
    if not problems:
        return path, f"encoder: {path} (trained by chapter 4)."
    return None, (
        f"No encoder for this run ({problems[0]}); run chapter 4 (04_encoder_classifier.ipynb) with the "
        "same run_name to train it. Stage 3 is skipped here."
    )


def trained_max_length(model_dir: str | os.PathLike) -> int | None:
    """The truncation length the encoder was fine-tuned at (from fine_tune's train_history.json),
    or None when the directory does not record it (e.g. the released model)."""
    history = Path(model_dir) / "train_history.json"
    if not history.is_file():
        return None
    value = json.loads(history.read_text(encoding="utf-8")).get("config", {}).get("max_length")
    return int(value) if value else None
