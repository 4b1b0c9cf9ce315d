"""A toy sixth filter stage, declared and registered the way a newcomer adds one: this module only.

Stage "length" drops documents longer than `max_words` whitespace words. Its declaration gives
`littlekit filter` the flag --max-words, filter_config.json the threshold `max_words`, figures
the label "Length", and its keep rule on stored scores (`length_words`), so an operating point
applies to stored outcomes and out-of-fold scores too. Importing the module registers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from littlekit.argtypes import positive_int
from littlekit.filter.base import Decision, Option, Stage, StageSpec
from littlekit.filter.registry import register_stage

MAX_WORDS = 400
REASON = "length_long"


class LengthStage(Stage):
    """Keep a document of at most `max_words` whitespace words."""

    name = "length"

    def __init__(self, max_words: int = MAX_WORDS) -> None:
        self.max_words = max_words

    def score(self, text: str) -> dict[str, Any]:
        return {"words": len(text.split())}

    def decide(self, scores: dict[str, Any]) -> Decision:
        keep = scores["words"] <= self.max_words
        return Decision(keep, None if keep else REASON, scores)


def _max_words(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a whole number of words, at least 1, got {value!r}")
    return int(value)


def _stored_keeps(frame: Any, thresholds: Mapping[str, Any]) -> np.ndarray:
    return frame["length_words"].to_numpy(dtype=float) <= thresholds.get("max_words", MAX_WORDS)


def _outcome_keeps(frame: Any, kept: np.ndarray, thresholds: Mapping[str, Any]) -> np.ndarray:
    return kept & (frame["length_words"].to_numpy(dtype=float) <= thresholds.get("max_words", MAX_WORDS))


SPEC = register_stage(
    StageSpec(
        name="length",
        position=6,
        label="Length",
        description="toy stage 6: at most max_words whitespace words",
        build=lambda options: LengthStage(options.max_words),
        options=(
            Option(
                "max_words",
                MAX_WORDS,
                "length stage: most whitespace words kept (default: {default})",
                parse=positive_int,
                metavar="N",
                check=_max_words,
                threshold=True,
            ),
        ),
        stored_keeps=_stored_keeps,
        stored_columns=("length_words",),
        store=lambda scores, decision: {"length_words": scores["words"]},
        outcome_columns=lambda scores: {"length_words": scores["words"]} if "words" in scores else {},
        outcome_keeps=_outcome_keeps,
        drop_reason=REASON,
    )
)
