"""Stage 5's word table: which words lean Beyond-K-5, scored by a contrastive frequency ratio.

For each word w, counted with the released filter's tokens (`littlekit.text.word_tokens`) over
a K-5 pool and a Beyond-K-5 pool of documents:

    rate_pool(w)    = count_pool(w) / total tokens of the pool
    beyond_score(w) = log2(rate_beyond(w) / rate_k5(w))

Two choices the paper leaves open, fixed here:

- Minimum count: a word is kept only when its *combined* count (K-5 + Beyond) is at least
  `min_count`. A per-pool minimum would discard exactly the words we most want, those that
  are frequent beyond K-5 and (nearly) absent from it.
- Minimum document count: a word is kept only when it occurs in at least `min_documents`
  documents of the two pools together. A word one long document repeats (a character's name,
  the topic of one article) says nothing about Beyond-K-5 text in general, and blocking it drops
  every K-5 document on that topic.
- Words absent from a pool: additive smoothing on counts, `count + alpha` in both pools with
  the pool totals unchanged, so the score is
  `log2((count_beyond + alpha) / (count_k5 + alpha) * total_k5 / total_beyond)`.
  With pools of similar size a word seen c times only beyond K-5 scores about log2(c + 1) at
  the default alpha = 1, so it reaches the released cut-off 4.0 at c >= 15 occurrences.
  `alpha = 0` gives the paper's formula exactly, and +inf for a word absent from the K-5 pool.
  The `rate_*` columns always hold the unsmoothed rates.

The table is saved in the released artifact's shape (`word, beyond_score`, parquet or csv,
extra columns allowed), and the released `word_log_odds.parquet` loads as is.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from littlekit.text import word_tokens

MIN_BEYOND_SCORE = 4.0  # the released filter's cut-off
DEFAULT_MIN_COUNT = 10
DEFAULT_MIN_DOCUMENTS = 5
DEFAULT_ALPHA = 1.0
REQUIRED_COLUMNS = ("word", "beyond_score")
TABLE_COLUMNS = (
    "word", "beyond_score", "count_k5", "count_beyond", "rate_k5", "rate_beyond", "documents",
)


def count_words(texts: Iterable[str]) -> tuple[Counter[str], int]:
    """Word counts and total token count of a pool, streamed one text at a time.

    Counters from shards of a pool add up (`Counter + Counter`), so a large pool can be
    counted in parallel and merged before scoring.
    """
    counts: Counter[str] = Counter()
    total = 0
    for text in texts:
        tokens = word_tokens(text)
        counts.update(tokens)
        total += len(tokens)
    return counts, total


def count_documents(texts: Iterable[str]) -> Counter[str]:
    """How many texts hold each word at least once (streamed; shard counters add up)."""
    documents: Counter[str] = Counter()
    for text in texts:
        documents.update(set(word_tokens(text)))
    return documents


def score_counts(
    k5_counts: Mapping[str, int],
    k5_total: int,
    beyond_counts: Mapping[str, int],
    beyond_total: int,
    *,
    min_count: int = DEFAULT_MIN_COUNT,
    alpha: float = DEFAULT_ALPHA,
    documents: Mapping[str, int] | None = None,
    min_documents: int = 1,
) -> pd.DataFrame:
    """The ranked word table from the two pools' counts (see the module docstring).

    `documents`: each word's document count over both pools (`count_documents`); needed when
    `min_documents` > 1, and kept as the table's `documents` column when given.
    """
    if k5_total <= 0 or beyond_total <= 0:
        raise ValueError(f"both pools need tokens (K-5 total {k5_total}, Beyond total {beyond_total})")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if min_documents > 1 and documents is None:
        raise ValueError("min_documents > 1 needs the words' document counts (count_documents)")
    words = sorted(
        w for w in set(k5_counts) | set(beyond_counts)
        if k5_counts.get(w, 0) + beyond_counts.get(w, 0) >= min_count
        and (documents is None or documents.get(w, 0) >= min_documents)
    )
    count_k5 = np.array([k5_counts.get(w, 0) for w in words], dtype=np.int64)
    count_beyond = np.array([beyond_counts.get(w, 0) for w in words], dtype=np.int64)
    with np.errstate(divide="ignore"):
        score = (
            np.log2(count_beyond + alpha) - np.log2(count_k5 + alpha)
            + math.log2(k5_total) - math.log2(beyond_total)
        )
    table = pd.DataFrame({
        "word": pd.Series(words, dtype=object),
        "beyond_score": score.astype(float),
        "count_k5": count_k5,
        "count_beyond": count_beyond,
        "rate_k5": count_k5 / k5_total,
        "rate_beyond": count_beyond / beyond_total,
    })
    if documents is not None:
        table["documents"] = np.array([documents.get(w, 0) for w in words], dtype=np.int64)
    return rank_words(table)


def score_words(
    k5_texts: Iterable[str],
    beyond_texts: Iterable[str],
    *,
    min_count: int = DEFAULT_MIN_COUNT,
    alpha: float = DEFAULT_ALPHA,
    min_documents: int = 1,
) -> pd.DataFrame:
    """Count both pools and score every word that passes the minimum count and document count."""
    k5_texts, beyond_texts = list(k5_texts), list(beyond_texts)
    k5_counts, k5_total = count_words(k5_texts)
    beyond_counts, beyond_total = count_words(beyond_texts)
    documents = count_documents(k5_texts) + count_documents(beyond_texts)
    return score_counts(
        k5_counts, k5_total, beyond_counts, beyond_total, min_count=min_count, alpha=alpha,
        documents=documents, min_documents=min_documents,
    )


def rank_words(table: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by beyond_score (highest first), ties by word; NaN scores last."""
    ranked = table.sort_values(["beyond_score", "word"], ascending=[False, True], na_position="last")
    return ranked.reset_index(drop=True)


def blocklist(table: pd.DataFrame, min_beyond_score: float = MIN_BEYOND_SCORE) -> list[str]:
    """The rank-ordered blocklist: words with beyond_score >= the cut-off, highest first."""
    ranked = rank_words(check_table(table))
    return ranked.loc[ranked["beyond_score"] >= min_beyond_score, "word"].tolist()


def score_lookup(table: pd.DataFrame) -> dict[str, float]:
    """word -> beyond_score for per-token lookups.

    Rows with a NaN score are skipped, as the released loader does. Words are used as stored
    (tokens are lower-case ASCII, so any other spelling can never match); a word listed twice
    keeps its highest score, so it is blocked whenever any of its rows would be.
    """
    table = check_table(table)
    lookup: dict[str, float] = {}
    for word, score in zip(table["word"].tolist(), table["beyond_score"].tolist(), strict=True):
        if score is None or math.isnan(score):
            continue
        word = str(word)
        if word not in lookup or score > lookup[word]:
            lookup[word] = float(score)
    return lookup


def check_table(table: pd.DataFrame, source: str = "word table") -> pd.DataFrame:
    """Raise a clear error unless the table has `word` and a numeric `beyond_score` column."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{source} lacks column(s) {missing}; a frequency table needs {list(REQUIRED_COLUMNS)} "
            f"(found {list(table.columns)})"
        )
    if not pd.api.types.is_numeric_dtype(table["beyond_score"]):
        dtype = table["beyond_score"].dtype
        raise ValueError(f"{source}: column 'beyond_score' must be numeric, got {dtype}")
    return table


def save_word_scores(table: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write the table as parquet or csv (by suffix), `word, beyond_score` first."""
    path = Path(path)
    table = check_table(table)
    first = [c for c in TABLE_COLUMNS if c in table.columns]
    table = table[first + [c for c in table.columns if c not in first]]
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        table.to_parquet(path, index=False)
    elif suffix == ".csv":
        table.to_csv(path, index=False)
    else:
        raise ValueError(f"cannot save a word table as {path.name!r}: use .parquet or .csv")
    return path


def load_word_scores(path: str | os.PathLike) -> pd.DataFrame:
    """Read a word table (ours or the released `word_log_odds.parquet`), checked."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        table = pd.read_parquet(path)
    elif suffix == ".csv":
        # keep_default_na=False: "null" and "nan" are words here, not missing values.
        table = pd.read_csv(path, keep_default_na=False, na_values={"beyond_score": ["", "nan", "NaN"]})
    else:
        raise ValueError(f"cannot read a word table from {path.name!r}: use .parquet or .csv")
    return check_table(table, source=str(path))
