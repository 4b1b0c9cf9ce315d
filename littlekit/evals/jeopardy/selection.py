"""Which clues are science: a science keyword, and no exclusion word, in the clue's category."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

# Categories whose clues are about science: a keyword as a whole word of the category decides.
SCIENCE_KEYWORDS: tuple[str, ...] = (
    "SCIENCE",
    "SCIENTIFIC",
    "SCIENTISTS",
    "BIOLOGY",
    "CHEMISTRY",
    "CHEMICAL",
    "PHYSICS",
    "ASTRONOMY",
    "ANATOMY",
    "BOTANY",
    "ZOOLOGY",
    "GEOLOGY",
    "METEOROLOGY",
    "ECOLOGY",
    "GENETICS",
    "ELEMENTS",
    "ANIMALS",
    "MAMMALS",
    "BIRDS",
    "INSECTS",
    "REPTILES",
    "FISH",
    "DINOSAURS",
    "PLANTS",
    "TREES",
    "FLOWERS",
    "NATURE",
    "WEATHER",
    "PLANETS",
    "SPACE",
    "HUMAN BODY",
    "ROCKS",
    "MINERALS",
    "OCEANS",
    "VOLCANOES",
    "ENERGY",
    "MAGNETS",
    "ELECTRICITY",
)
# Categories that contain a keyword but are not science (fiction, social sciences, trivia on names).
EXCLUDE_KEYWORDS: tuple[str, ...] = (
    "SCIENCE FICTION",
    "SOCIAL SCIENCE",
    "POLITICAL SCIENCE",
    "CHRISTIAN SCIENCE",
    "FICTION",
    "FICTIONAL",
    "LITERARY",
    "LITERATURE",
    "MOVIE",
    "MOVIES",
    "FILM",
    "TV",
    "SONG",
    "SONGS",
    "STATE BIRDS",
    "HUMAN NATURE",
    "RHYME TIME",
    "BEFORE & AFTER",
    "STUPID ANSWERS",
    "CROSSWORD",
    "MUSIC",
    "ROCK",
    "SPORTS",
    "TEAMS",
)


def _keyword_re(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![A-Z])({alternatives})(?![A-Z])")


_SCIENCE_RE = _keyword_re(SCIENCE_KEYWORDS)
_EXCLUDE_RE = _keyword_re(EXCLUDE_KEYWORDS)


def science_keyword(category: str) -> str | None:
    """The first science keyword in a category, or None (also when an exclusion word appears)."""
    text = category.upper()
    if _EXCLUDE_RE.search(text):
        return None
    match = _SCIENCE_RE.search(text)
    return match.group(1) if match else None


def select_science(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Clues whose category is science; returns (selection with a `keyword` column, counts).

    counts: input, selected, excluded (a science keyword but an exclusion word too), no keyword,
    and selected per keyword; input == selected + excluded + no_keyword.
    """
    upper = frame["category"].astype(str).str.upper()
    has_science = upper.map(lambda c: _SCIENCE_RE.search(c) is not None)
    keyword = upper.map(science_keyword)
    selected = frame[keyword.notna()].assign(keyword=keyword[keyword.notna()]).reset_index(drop=True)
    counts = {
        "input": len(frame),
        "selected": len(selected),
        "excluded": int((has_science & keyword.isna()).sum()),
        "no_keyword": int((~has_science).sum()),
        "by_keyword": selected["keyword"].value_counts().to_dict(),
    }
    if counts["input"] != counts["selected"] + counts["excluded"] + counts["no_keyword"]:
        raise AssertionError(f"selection counts do not add up: {counts}")
    return selected, counts
