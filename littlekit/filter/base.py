"""The contract every filter stage follows: score, then threshold, with a reason code.

A stage is a `Stage` subclass with a unique `name` and:

    score(text) -> dict              what the stage measures on one document (no threshold)
    score_batch(texts) -> [dict]     the same for many documents; the base loops over `score`,
                                     a stage with a model overrides it with one call per batch
    decide(scores) -> Decision       the threshold: keep, or drop with a reason code
    prior_gate                       None, or a PriorGate: a condition on the scores the earlier
                                     stages gave the document, checked before this stage scores it
    device                           where the stage computes ("cpu"; a model on a GPU: "cuda...")

Every setting is a constructor argument (the registry's StageOptions carries each of them), so a
stage is never changed after it is built. Keeping score and decide apart lets a notebook sweep a
threshold without re-scoring. `littlekit.filter.cascade.decide_all` is the one place that applies
a stage's prior gate and batch scoring, for the in-process cascade and the datatrove blocks alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Decision:
    """A stage's verdict on one document: keep or drop, why, and the scores behind it."""

    keep: bool
    reason: str | None = None  # reason code when dropped, e.g. "aoa_p95"
    scores: dict[str, Any] = field(default_factory=dict)


class PriorGate(Protocol):
    """A condition on earlier stages' scores that a document must meet before a stage scores it.

    A stage carries one as its `prior_gate` (the encoder's agreement gate is one). `check`
    returns scores that include "gate_open"; a document whose gate is closed is dropped by that
    stage with `reason`, without being scored.
    """

    requires: tuple[str, ...]  # stages whose scores `check` reads; they must run earlier
    reason: str

    def check(self, prior: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]: ...


class Stage:
    """Base class of a filter stage: subclasses set `name` and implement `score` and `decide`."""

    name: str = "stage"
    prior_gate: PriorGate | None = None  # set by a subclass's constructor, never afterwards
    device: str = "cpu"

    def score(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def score_batch(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Scores of many texts, in order: `score` of each. Override with one batched call."""
        return [self.score(text) for text in texts]

    def decide(self, scores: dict[str, Any]) -> Decision:
        raise NotImplementedError

    @property
    def batched(self) -> bool:
        """Whether `score_batch` is the stage's own batched call rather than the base's loop."""
        return type(self).score_batch is not Stage.score_batch

    def __call__(self, text: str) -> Decision:
        return self.decide(self.score(text))


def check_probability(name: str, value: float | None) -> None:
    """ValueError unless `value` is None or a probability: the check of every min_k5_prob."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability between 0 and 1 or None, got {value}")
