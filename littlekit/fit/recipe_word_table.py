"""Stage 5's steps, shared by `littlekit fit` and the book: the pools, the word table scored from
them, and the blocked-token share that decides a document."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from littlekit import runs
from littlekit.databuild import corpora
from littlekit.filter.cascade import Outcome
from littlekit.filter.filter_config import OperatingPoint, read_operating_point
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
from littlekit.fit.folds import label_groups
from littlekit.fit.labels import (
    informational_band,
    load_labels,
)
from littlekit.fit.pools import pool_frame, pool_texts
from littlekit.fit.recipe_encoder import trained_max_length
from littlekit.grades import BANDS, grade_to_band
from littlekit.io import Document
from littlekit.text import overlaps


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
    outcomes: Iterable[Outcome],
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
