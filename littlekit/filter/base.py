"""The contract every filter stage follows: score, then threshold, with a reason code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Decision:
    """A stage's verdict on one document: keep or drop, why, and the scores behind it."""

    keep: bool
    reason: str | None = None  # reason code when dropped, e.g. "aoa_p95"
    scores: dict[str, Any] = field(default_factory=dict)


class Stage:
    """Base class of a filter stage.

    Subclasses set `name` and implement `score(text) -> dict` and `decide(scores) -> Decision`.
    Keeping the two apart lets notebooks sweep thresholds without re-scoring.
    """

    name: str = "stage"

    def score(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def decide(self, scores: dict[str, Any]) -> Decision:
        raise NotImplementedError

    def __call__(self, text: str) -> Decision:
        return self.decide(self.score(text))
