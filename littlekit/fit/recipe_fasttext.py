"""Stage 2's steps, shared by `littlekit fit` and the book: fastText's recipe, training and point."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit import runs
from littlekit.filter.artifacts import artifact_path
from littlekit.filter.fasttext import FastTextStage
from littlekit.fit.fasttext import DEFAULT_HYPER, train_fasttext
from littlekit.fit.folds import label_groups, tuning_sources
from littlekit.fit.labels import (
    DEFAULT_MAX_PER_BAND,
    WEB_SOURCES,
    split_labels,
)
from littlekit.fit.operating_point import Tuning, tune_fasttext
from littlekit.fit.points import DEFAULT_POINT, POINTS
from littlekit.fit.recipe_labels import HOLDOUT_FRACTION, run_labels


@dataclass(frozen=True)
class FastTextRecipe:
    """Stage 2's training and operating-point settings (defaults: the embedded default's)."""

    epoch: int = DEFAULT_HYPER["epoch"]
    lr: float = DEFAULT_HYPER["lr"]
    word_ngrams: int = DEFAULT_HYPER["wordNgrams"]
    dim: int = DEFAULT_HYPER["dim"]
    min_count: int = DEFAULT_HYPER["minCount"]
    holdout_fraction: float = HOLDOUT_FRACTION
    # the point's rule (`littlekit.fit.points`; defaults: the paper's error rates, `POINTS["paper"]`):
    # the out-of-fold Beyond-K-5 keep rate allowed, met at a Wilson confidence (None: point estimate)
    beyond_keep_target: float = POINTS[DEFAULT_POINT].beyond_keep_target
    target_confidence: float | None = POINTS[DEFAULT_POINT].target_confidence
    tune_on: str = POINTS[DEFAULT_POINT].tune_on  # labels whose rates set the point (TUNING_CHOICES)
    # of the web labels (WEB_SOURCES) kept out of fold, at least this share K-5 (None: no such rule)
    min_web_precision: float | None = POINTS[DEFAULT_POINT].min_web_precision
    tuning_folds: int = 5
    seed: int = 0
    processes: int = 1  # out-of-fold models trained at once, one process each (the scores are the same)

    def hyper(self) -> dict[str, Any]:
        """The `train_fasttext` keywords."""
        return {
            **DEFAULT_HYPER,
            "epoch": self.epoch,
            "lr": self.lr,
            "wordNgrams": self.word_ngrams,
            "dim": self.dim,
            "minCount": self.min_count,
            "seed": self.seed,
        }


def fasttext_split(labels: pd.DataFrame, recipe: FastTextRecipe) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The seeded (train, held-out) split, stratified by band, that stage 2 trains and is evaluated on."""
    return split_labels(labels, holdout_fraction=recipe.holdout_fraction, seed=recipe.seed)


def train_fasttext_stage(
    labels: pd.DataFrame, model_path: str | os.PathLike, recipe: FastTextRecipe
) -> tuple[FastTextStage, pd.DataFrame, pd.DataFrame]:
    """Train fastText on the training part of the split; (stage, train, held out)."""
    train, held = fasttext_split(labels, recipe)
    return train_fasttext(train, model_path, **recipe.hyper()), train, held


def tune_fasttext_point(
    labels: pd.DataFrame, recipe: FastTextRecipe, data_root: str | os.PathLike | None = None
) -> tuple[Tuning, pd.Series]:
    """fastText's minimum P(K5), chosen out of fold on source groups of the labels; (tuning, groups)."""
    groups = label_groups(labels, data_root)
    tuning = tune_fasttext(
        labels,
        target=recipe.beyond_keep_target,
        n_folds=recipe.tuning_folds,
        seed=recipe.seed,
        groups=groups,
        measure_sources=tuning_sources(recipe.tune_on, labels),
        root=data_root,
        confidence=recipe.target_confidence,
        precision_sources=WEB_SOURCES,
        min_precision=recipe.min_web_precision,
        processes=recipe.processes,
        **{name: value for name, value in recipe.hyper().items() if name != "seed"},
    )
    return tuning, groups


def run_fasttext(
    run: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    seed: int = 0,
    holdout_fraction: float = HOLDOUT_FRACTION,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
) -> tuple[FastTextStage, str]:
    """(FastTextStage, note): the run's fastText model, or one trained with the default recipe and
    saved where the run keeps it."""
    path = artifact_path(runs.path(run, "artifacts"), "fasttext_model")
    if path.is_file():
        return FastTextStage(path), f"fastText model: {path} (the run's)."
    labels, note = run_labels(run, data_root, seed, max_per_band)
    recipe = FastTextRecipe(holdout_fraction=holdout_fraction, seed=seed)
    stage, train, _ = train_fasttext_stage(labels, path, recipe)
    return stage, (
        f"{note} {path} did not exist, so it was trained here with the default recipe: train_fasttext on "
        f"the {len(train):,} training labels of split_labels(holdout_fraction={holdout_fraction}, "
        f"seed={seed})."
    )


def copy_released_fasttext(released: str | os.PathLike, model_path: str | os.PathLike) -> FastTextStage:
    """Use a released fastText model instead of training: copied where the artifacts keep it."""
    released, model_path = Path(released), Path(model_path)
    stage = FastTextStage(released)
    if released.resolve() != model_path.resolve():
        model_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(released, model_path)
    return stage
