"""Text utilities shared by every stage: the released filter's word tokens, sentences, decoding."""

from __future__ import annotations

import re
from collections.abc import Iterable

# The released filter's word tokens: lower-case, then runs of two or more ASCII letters.
WORD_RE = re.compile(r"\b[a-z]{2,}\b")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_WHITESPACE_RE = re.compile(r"\s+")


def word_tokens(text: str) -> list[str]:
    """Word tokens exactly as the released filter sees them."""
    return WORD_RE.findall(text.lower())


def sentences(text: str) -> list[str]:
    """Split prose into sentences on terminal punctuation followed by whitespace."""
    parts = (part.strip() for part in _SENTENCE_END_RE.split(text))
    return [part for part in parts if part]


def normalise_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space."""
    return _WHITESPACE_RE.sub(" ", text).strip()


def decode_bytes(raw: bytes) -> str:
    """Decode bytes as UTF-8 (BOM stripped), falling back to cp1252 then Latin-1, never failing."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1")


SHINGLE_WORDS = 8  # words in a run two texts must share to count as overlapping


def shingles(text: str, n: int = SHINGLE_WORDS) -> set[tuple[str, ...]]:
    """The text's runs of n consecutive lower-cased whitespace words."""
    words = text.lower().split()
    return set(zip(*(words[k:] for k in range(n)), strict=False))


def overlaps(texts: Iterable[str], reference: Iterable[str], n: int = SHINGLE_WORDS) -> list[bool]:
    """For each text: is it a reference text, or does it share a run of `n` words with one?

    The test that keeps validation passages out of training text (words are whitespace-separated
    and lower-cased; equality ignores surrounding whitespace).
    """
    seen: set[tuple[str, ...]] = set()
    exact: set[str] = set()
    for text in reference:
        seen |= shingles(text, n)
        exact.add(text.strip())
    return [text.strip() in exact or not shingles(text, n).isdisjoint(seen) for text in texts]
