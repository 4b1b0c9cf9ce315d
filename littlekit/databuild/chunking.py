"""Paragraph-aligned passages: join paragraphs to 80-300 words, and a spread-out seeded sample."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import TypeVar

MIN_WORDS = 80
MAX_WORDS = 300
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(]?[A-Z])|(?<=[.!?][\"'”’)])\s+(?=[\"'“‘(]?[A-Z])")
T = TypeVar("T")


def count_words(text: str) -> int:
    return len(text.split())


def split_long(paragraph: str, max_words: int = MAX_WORDS) -> list[str]:
    """Split a paragraph over max_words at sentence ends into near-equal parts of <= max_words.

    Parts aim at n_words / ceil(n_words / (0.8 * max_words)) words, so sentence boundaries leave
    room and the last part is not a stub. A part cut inside an over-long sentence is dropped.
    """
    n_words = count_words(paragraph)
    if n_words <= max_words:
        return [paragraph]
    sentences = _SENTENCE_SPLIT_RE.split(paragraph)
    n_parts = -(-n_words // int(0.8 * max_words))
    target = n_words / n_parts
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in sentences:
        words = count_words(sentence)
        if current and (size + words > max_words or size + words / 2 > target):
            parts.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += words
    if current:
        parts.append(" ".join(current))
    return [part for part in parts if count_words(part) <= max_words]


def chunk_paragraphs(
    paragraphs: list[str | None], min_words: int = MIN_WORDS, max_words: int = MAX_WORDS
) -> list[str]:
    """Join consecutive paragraphs until a passage has >= min_words, never exceeding max_words.

    None breaks a passage: a passage never runs across a heading. A short run that cannot grow
    without passing max_words is dropped; paragraphs longer than max_words are split at sentences.
    """
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for paragraph in paragraphs:
        if paragraph is None:
            current, size = [], 0
            continue
        for piece in split_long(paragraph, max_words):
            words = count_words(piece)
            if size + words > max_words:
                current, size = [], 0
            current.append(piece)
            size += words
            if size >= min_words:
                passages.append("\n\n".join(current))
                current, size = [], 0
    return passages


def spread_sample(items: Sequence[T], k: int, generator: random.Random) -> list[T]:
    """At most k items spread across the sequence: one seeded pick from each of k equal strata."""
    n = len(items)
    if n <= k:
        return list(items)
    return [items[generator.randrange(i * n // k, (i + 1) * n // k)] for i in range(k)]
