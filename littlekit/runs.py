"""The run folder: where each product of a run lives under `runs/<run>/`, and what makes it.

Chapters and commands hand their products on through a run folder. Everyone asks for a product
by name (`path(run, "labels")`), never by a folder name, so the layout is this one table:

    labels             labels/train_labels.jsonl   the grade classifiers' training labels
    artifacts          artifacts/                  the filter's files, in the released layout
    fasttext_fit       fasttext/                   stage 2's out-of-fold scores, sweeps, evaluation
    encoder_fit        encoder/                    stage 3's training log, out-of-fold scores, points
    frequency_fit      frequency/                  stage 5's pools and word table report
    source_labels_fit  source_labels/              the same fit on the grade-labelled source labels (a run)
    validation         validation/                 the whole cascade on grade-labelled passages
    pool_outcomes      validation/outcomes_pool.parquet   the cascade's verdict per pretraining-pool document
    training_corpora   tokenizer/                  K-5 and unfiltered corpora, math exposure, K-5 tokenizer
    pair_models        training/                   the trained LittleLearner / UNFILTERED pair
    seed_replicas      training/seeds/             the same pair retrained with other training seeds
    ...                                            (and one report folder per other chapter)

`require(run, name)` returns the path or raises `MissingProduct`, whose message says which
command or chapter makes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Product:
    """One product of a run: its path under the run folder, what it is, and what makes it."""

    path: str
    what: str
    made_by: str


PRODUCTS: dict[str, Product] = {
    "labels": Product(
        "labels/train_labels.jsonl",
        "the grade classifiers' training labels",
        "`littlekit fit labels` or the LLM-judge chapter",
    ),
    "artifacts": Product(
        "artifacts",
        "the filter's artifacts (released layout)",
        "`littlekit fit all` or the fastText, encoder and frequency chapters",
    ),
    "aoa_report": Product("aoa", "stage 1's tables and figures", "the Age-of-Acquisition chapter"),
    "judge_report": Product("judge", "the LLM judge's prompts, votes and costs", "the LLM-judge chapter"),
    "fasttext_fit": Product(
        "fasttext",
        "stage 2's evaluation and out-of-fold scores",
        "`littlekit fit fasttext` or the fastText chapter",
    ),
    "encoder_fit": Product(
        "encoder",
        "stage 3's training log, out-of-fold scores and operating points",
        "`littlekit fit encoder` or the encoder chapter",
    ),
    "symbolic_report": Product("symbolic", "stage 4's rule report", "the symbolic-filter chapter"),
    "frequency_fit": Product(
        "frequency",
        "stage 5's pools and word-table report",
        "`littlekit fit word-table` or the frequency chapter",
    ),
    "source_labels_fit": Product(
        "source_labels",
        "the fit repeated on the grade-labelled source labels, a run folder of its own (labels, stage 2's "
        "out-of-fold and leave-one-corpus-out scores, stage 3's points), to compare with the judge's labels",
        "the fastText and encoder chapters, or `littlekit fit ... --labels source --run RUN/source_labels`",
    ),
    "validation": Product(
        "validation", "the cascade on grade-labelled passages", "the filter-validation chapter"
    ),
    "pool_outcomes": Product(
        "validation/outcomes_pool.parquet",
        "the cascade's verdict on each document of the pretraining pool "
        "(demo corpus and judge-labelled passages)",
        "the filter-validation chapter",
    ),
    "training_corpora": Product(
        "tokenizer",
        "the K-5 and unfiltered training corpora, their math exposure and the K-5 tokenizer",
        "the tokenizer chapter",
    ),
    "pair_models": Product(
        "training",
        "the trained LittleLearner and UNFILTERED checkpoints",
        "the training chapter",
    ),
    "seed_replicas": Product(
        "training/seeds",
        "the pair retrained with several training seeds (the same data, a shorter run), "
        "seed<N>/<name>/best",
        "the training chapter",
    ),
    "language_familiarity": Product(
        "language_familiarity", "BPB on CLEAR and CoMTA", "the language-familiarity chapter"
    ),
    "jeopardy": Product("jeopardy", "Jeopardy science answers and likelihoods", "the Jeopardy chapter"),
    "mathcamps": Product("mathcamps", "MathCAMPS pass@k and likelihoods", "the MathCAMPS chapter"),
    "curriculum": Product(
        "curriculum", "the curriculum's samples, audits and figures", "the curriculum chapter"
    ),
    "scaling": Product(
        "scaling", "the pair retrained at other sizes and its curriculum accuracy", "the scaling chapter"
    ),
    "tokenizer_ablation": Product(
        "tokenizer_ablation",
        "the pair retrained with single-digit tokens",
        "the single-digit tokenizer chapter",
    ),
    "posttraining": Product(
        "posttraining",
        "SFT and GRPO checkpoints of the pair, re-bandings, accuracy",
        "the post-training chapter",
    ),
    "boundary": Product(
        "boundary",
        "capability-boundary selection rounds, checkpoints and accuracy",
        "the BoundaryEvo chapter",
    ),
    "icl": Product(
        "icl", "accuracy with in-context examples and explanations", "the in-context learning chapter"
    ),
    "exercises": Product(
        "exercises",
        "the course exercises' solutions, one folder per chapter",
        "the course's exercise notebooks",
    ),
}


class MissingProduct(FileNotFoundError):
    """A product a run needs is not in its run folder."""


def product(name: str) -> Product:
    """The table row of a product; KeyError listing the known names when there is none."""
    try:
        return PRODUCTS[name]
    except KeyError:
        raise KeyError(f"unknown run product {name!r}; known: {', '.join(PRODUCTS)}") from None


def path(run: str | os.PathLike, name: str) -> Path:
    """Where product `name` lives in the run folder `run` (it may not exist yet)."""
    return Path(run) / product(name).path


def folder(run: str | os.PathLike, name: str) -> Path:
    """The folder of a folder product, created when missing (for whoever writes it)."""
    target = path(run, name)
    if Path(product(name).path).suffix:
        raise ValueError(f"run product {name!r} is a file ({target}), not a folder")
    target.mkdir(parents=True, exist_ok=True)
    return target


def require(run: str | os.PathLike, name: str) -> Path:
    """The path of a product that must exist; MissingProduct says what makes it otherwise."""
    target = path(run, name)
    if not target.exists():
        entry = product(name)
        raise MissingProduct(f"{target} is missing ({entry.what}); {entry.made_by} makes it for this run")
    return target


def missing_note(
    run: str | os.PathLike, name: str, missing: Iterable[str | os.PathLike] | None = None
) -> str:
    """A sentence for a product that is missing: where it was looked for and what makes it.

    `missing` names the files of a folder product that are absent, when it is not the whole folder.
    """
    entry = product(name)
    where = [str(p) for p in missing] if missing is not None else [str(path(run, name))]
    verb = "does not exist" if len(where) == 1 else "do not exist"
    return f"{', '.join(where)} {verb} ({entry.made_by} has not run for this run)"
