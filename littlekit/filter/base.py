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
stage is never changed after it is built. A stage joins the filter through its `StageSpec`, a
declaration in its own module that `littlekit.filter.registry.register_stage` takes once: its
settings (`Option`: the command-line flag, the config key, the check), the files it loads
(`Artifact`), its name in figures, and its keep rule on stored scores, so an operating point can
be applied to scores a run stored without building the stage again.

Keeping score and decide apart lets a notebook sweep a threshold without re-scoring.
`littlekit.filter.cascade.decide_all` is the one place that applies a stage's prior gate and
batch scoring, for the in-process cascade and the datatrove blocks alike.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


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


# --- a stage's declaration ------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One setting of a stage: a StageOptions field, the flag `--name-with-dashes` of `littlekit
    filter` and, when `threshold`, a key an operating point (filter_config.json) may set.

    `check(name, value)` returns the value to keep (normalised) or raises ValueError saying what is
    wrong; None is always allowed when it is the default. `parse` reads the flag's text (argparse's
    `type`); `help` may say `{default}`. `path`: the option names a file (a given one is checked
    before anything runs, and it replaces the artifacts directory's file of its stage).
    """

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[str, Any], Any] | None = None
    threshold: bool = False
    path: bool = False
    point_check: Callable[[str, Any], Any] | None = None  # an operating point's value, beyond `check`
    hub: bool = False  # a path option that may also name a Hugging Face Hub id
    required: bool = False  # the stage cannot run without it (a model nothing embeds)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def checked(self, value: Any) -> Any:
        """The value as the stage takes it; ValueError naming the option when it is wrong."""
        if value is None and self.default is None:
            return None
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        return value if self.check is None else self.check(self.name, value)


@dataclass(frozen=True)
class Artifact:
    """A file or folder a stage loads, at its place in the artifacts directory's layout."""

    option: str  # the stage's path Option it fills
    path: str  # relative to the artifacts directory
    stage: str
    what: str
    how: str  # how to produce it
    check: Callable[[Path], str | None]  # what is wrong with a file at that path, or None


StoredRule = Callable[[Any, Mapping[str, Any]], np.ndarray]  # (a pandas DataFrame, thresholds)
OutcomeRule = Callable[[Any, np.ndarray, Mapping[str, Any]], np.ndarray]


@dataclass(frozen=True)
class StageSpec:
    """Everything the filter needs to know about a stage, declared once beside the stage.

    - `build(options)` makes the stage from a StageOptions (reading its own `options` fields);
    - `position`: its place in the published cascade (`--stages all` runs stages in this order);
    - `label`: its name in figures and tables (the paper's Figure 2 names);
    - `artifacts`: the files it loads from an artifacts directory;
    - `stored_keeps(frame, thresholds)`: its keep rule on a frame of stored scores (one row per
      labelled text; columns `stored_columns`) at an operating point's thresholds (option -> value,
      None or missing: the default); default: the boolean column `<name>_keeps`;
    - `store(scores, decision)`: the columns `stored_keeps` reads, from one document's scores;
    - `outcome_columns(scores)`: what `cascade_outcomes` keeps of one document's scores (so a run
      at the default rule can be re-decided at a point: `outcome_keeps`);
    - `outcome_keeps(frame, kept, thresholds)`: whether the stage keeps each row at the thresholds,
      from those columns and `kept`, its verdict at the default rule; a rule may only tighten, or
      loosen where no later stage ran;
    - `out_of_corpus`: its verdict on a held-out corpus learns nothing from that corpus;
    - `requires(options)`: stages whose scores it reads, which must run before it.
    """

    name: str
    position: float
    label: str
    description: str
    build: Callable[[Any], Stage]
    options: tuple[Option, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    stored_keeps: StoredRule | None = None
    stored_columns: tuple[str, ...] = ()
    store: Callable[[Mapping[str, Any], Decision], Mapping[str, Any]] | None = None
    outcome_columns: Callable[[Mapping[str, Any]], Mapping[str, float]] | None = None
    outcome_keeps: OutcomeRule | None = None
    drop_reason: str = ""  # the reason of a document a point's threshold drops at this stage
    out_of_corpus: bool = True
    loosens: bool = False  # a threshold can let through what the default rule drops (then: stage last)
    requires: Callable[[Any], tuple[str, ...]] = field(default=lambda options: ())
    requires_why: str = ""  # why and how to fix it, when the stages `requires` names do not run first
    describe: Callable[[Mapping[str, Any], Mapping[str, Any]], str] | None = None

    @property
    def thresholds(self) -> tuple[str, ...]:
        """The options an operating point may set for this stage."""
        return tuple(option.name for option in self.options if option.threshold)

    @property
    def columns(self) -> tuple[str, ...]:
        """The stored-score columns its rule reads."""
        return self.stored_columns or (f"{self.name}_keeps",)

    def keeps(self, frame: pd.DataFrame, thresholds: Mapping[str, Any] | None = None) -> np.ndarray:
        """Its verdict on each row of stored scores at the thresholds; KeyError names what is missing."""
        missing = [column for column in self.columns if column not in frame.columns]
        if missing:
            raise KeyError(
                f"the scores have no {', '.join(missing)} column(s) for stage {self.name!r}: add them "
                "with littlekit.fit.generalisation.add_stage_scores"
            )
        if self.stored_keeps is None:
            return frame[self.columns[0]].to_numpy(dtype=bool)
        return np.asarray(self.stored_keeps(frame, dict(thresholds or {})), dtype=bool)

    def stored(self, scores: Mapping[str, Any], decision: Decision) -> Mapping[str, Any]:
        """The stored-score columns of one document."""
        return {f"{self.name}_keeps": decision.keep} if self.store is None else self.store(scores, decision)


# --- the checks options share -------------------------------------------------------------------


def check_number(name: str, value: Any) -> float:
    """A real number (True is not 1: a bool read from a config file is refused)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return value


def check_finite(name: str, value: Any) -> float:
    """A finite real number."""
    if not math.isfinite(check_number(name, value)):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


RELEASED = "released"  # a threshold's value for the released rule (overrides filter_config.json)


def probability_or_released(text: str) -> float | str:
    """A flag's probability, or "released" (the released rule, overriding an artifacts
    filter_config.json); "none" reads as "released"."""
    import argparse

    if text.strip().lower() in {RELEASED, "none"}:
        return RELEASED
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be a fraction between 0 and 1, got {text}")
    return value


def top_band_keeps(pred: Sequence[str], p_k5: Sequence[float], min_k5_prob: float | None) -> np.ndarray:
    """A classifier stage's keep rule on stored scores: top band K5, and P(K5) >= min_k5_prob when
    that is set (>=: a row at the minimum is kept)."""
    keep = np.asarray(pred, dtype=object) == "K5"
    if min_k5_prob is not None:
        keep &= np.asarray(p_k5, dtype=float) >= min_k5_prob
    return keep


def probability_columns(name: str) -> Callable[[Mapping[str, Any]], Mapping[str, float]]:
    """`outcome_columns` of a classifier stage: `<name>_p_k5`, the P(K5) its keep rule reads (a grade
    head's P3(K5) when it has one, the model's own then `<name>_model_p_k5`); nothing unscored."""

    def columns(scores: Mapping[str, Any]) -> Mapping[str, float]:
        probs = scores.get("probs")
        if not (isinstance(probs, Mapping) and "K5" in probs):
            return {}
        own = float(probs["K5"])
        if "head_p_k5" in scores:
            return {f"{name}_p_k5": float(scores["head_p_k5"]), f"{name}_model_p_k5": own}
        return {f"{name}_p_k5": own}

    return columns


def minimum_probability_keeps(name: str, option: str) -> Callable[..., np.ndarray]:
    """`outcome_keeps` of a classifier stage: what it kept, and `<name>_p_k5` >= the point's minimum."""

    def keeps(frame: Any, kept: np.ndarray, thresholds: Mapping[str, Any]) -> np.ndarray:
        minimum = thresholds.get(option)
        if minimum is None:
            return kept
        column = f"{name}_p_k5"
        if column not in frame.columns:
            raise KeyError(f"outcomes lack {column}: run the cascade with cascade_outcomes")
        return kept & ~(frame[column].astype(float).to_numpy() < minimum)

    return keeps


def describe_minimum(name: str, option: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], str]:
    """`describe` of a classifier stage: its rule at a point's minimum P(K5)."""

    def describe(thresholds: Mapping[str, Any], details: Mapping[str, Any]) -> str:
        value = thresholds.get(option)
        return f"{name}: top band K5" + (" (released rule)" if value is None else f" and P(K5) >= {value:g}")

    return describe


def check_optional_probability(name: str, value: Any) -> float | None:
    """None (the released rule) or a probability."""
    if value is None:
        return None
    check_probability(name, check_number(name, value))
    return float(value)

