"""Filter stage 1: Age of Acquisition with Zipf imputation, as in the released `filter_k5.py`.

Score: the document's word tokens (`littlekit.text.WORD_RE` on lower-cased text) each get an
AoA from the lexicon (table, else imputed from Zipf frequency, else OOV). Rule, checked in the
released script's order:

1. `aoa_empty` when no token has an AoA (this includes a text without word tokens);
2. `aoa_oov` when OOV tokens / all tokens > `max_oov` (strict: exactly 5% is kept);
3. `aoa_p95` when the 95th percentile of the scored tokens' AoAs > `max_aoa` (12.0 is kept).

The released script folds 1 and 2 into one test, so the keep/drop outcome is identical; the
order only decides which reason a document with no scored token gets.

The 95th percentile is numpy's default ("linear") percentile, recomputed here in plain Python
on the sorted values with numpy's own arithmetic, so it is bit-identical to `numpy.percentile`
without numpy's per-call overhead (the tests check the equality).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.argtypes import fraction, positive_float
from littlekit.filter.base import Artifact, Decision, Option, Stage, StageSpec, check_number
from littlekit.filter.file_checks import table_problem
from littlekit.filter.lexicon import DEFAULT_IMPUTE, IMPUTE_MODES, OOV, AoALexicon
from littlekit.text import WORD_RE

P95_MAX_AOA = 12.0  # the released filter's maximum 95th-percentile AoA (years); 12.0 is kept
OOV_THRESHOLD = 0.05  # its maximum share of out-of-vocabulary tokens; exactly 5% is kept
PERCENTILE = 95


def linear_percentile(sorted_values: Sequence[float], q: float, n: int | None = None) -> float:
    """`numpy.percentile(values, q)` (method "linear") of the first n values of a sorted sequence.

    Mirrors numpy's steps: virtual index `(n - 1) * (q / 100)`, clamp at the last element, then
    numpy's `_lerp`, which interpolates from the upper neighbour when the weight is >= 0.5.
    """
    if n is None:
        n = len(sorted_values)
    if n <= 0:
        raise ValueError("percentile of an empty sequence")
    index = (n - 1) * (q / 100)
    if index >= n - 1:
        return sorted_values[n - 1]
    below = math.floor(index)
    gamma = index - below
    lower, upper = sorted_values[below], sorted_values[below + 1]
    diff = upper - lower
    if gamma >= 0.5:
        return upper - diff * (1 - gamma)
    return lower + diff * gamma


class AoAStage(Stage):
    """Keep a document whose 95th-percentile token AoA is at most `max_aoa` and whose OOV share is small."""

    name = "aoa"

    def __init__(
        self,
        lexicon: AoALexicon | None = None,
        max_aoa: float = P95_MAX_AOA,
        max_oov: float = OOV_THRESHOLD,
    ):
        self.lexicon = lexicon if lexicon is not None else AoALexicon.load()
        self.max_aoa = max_aoa
        self.max_oov = max_oov

    def score(self, text: str) -> dict[str, Any]:
        """p95_aoa, oov_fraction, over_age_fraction (share of scored tokens above max_aoa), counts.

        A score that is undefined for the text (no tokens, or no scored token) is None.
        """
        tokens = WORD_RE.findall(text.lower())
        n_tokens = len(tokens)
        if not n_tokens:
            return _scores(None, None, None, 0, 0)
        values = self.lexicon.token_aoas(tokens)
        values.sort()  # OOV tokens carry +inf and so end up last
        n_scored = bisect_left(values, OOV)
        oov_fraction = (n_tokens - n_scored) / n_tokens
        if not n_scored:
            return _scores(None, oov_fraction, None, n_tokens, 0)
        n_over = n_scored - bisect_right(values, self.max_aoa, 0, n_scored)
        p95 = linear_percentile(values, PERCENTILE, n_scored)
        return _scores(p95, oov_fraction, n_over / n_scored, n_tokens, n_scored)

    def decide(self, scores: dict[str, Any]) -> Decision:
        if not scores["n_scored"]:
            return Decision(False, "aoa_empty", scores)
        if scores["oov_fraction"] > self.max_oov:
            return Decision(False, "aoa_oov", scores)
        if scores["p95_aoa"] > self.max_aoa:
            return Decision(False, "aoa_p95", scores)
        return Decision(True, None, scores)


def _scores(
    p95: float | None, oov_fraction: float | None, over: float | None, n_tokens: int, n_scored: int
) -> dict[str, Any]:
    return {
        "p95_aoa": p95,
        "oov_fraction": oov_fraction,
        "over_age_fraction": over,
        "n_tokens": n_tokens,
        "n_scored": n_scored,
    }


# --- the stage's declaration (littlekit.filter.base.StageSpec) -----------------------------------


def _max_aoa(name: str, value: Any) -> float:
    if not math.isfinite(check_number(name, value)):
        raise ValueError(f"max_aoa must be a finite number of years, got {value}")
    return float(value)


def _point_max_aoa(name: str, value: Any) -> float:
    """An operating point only tightens stage 1's released maximum."""
    if not 0 < value <= P95_MAX_AOA:
        raise ValueError(
            f"max_aoa must be a number of years in (0, {P95_MAX_AOA:g}] or null, got {value!r} (an "
            f"operating point only tightens stage 1's released maximum, {P95_MAX_AOA:g}; --max-aoa "
            "sets any other)"
        )
    return value


def _max_oov(name: str, value: Any) -> float:
    value = check_number(name, value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"max_oov must be a fraction between 0 and 1, got {value}")
    return value


def _build(options: Any) -> AoAStage:
    lexicon = AoALexicon.load(options.aoa_table, impute=options.aoa_impute)
    return AoAStage(lexicon, max_aoa=options.max_aoa, max_oov=options.max_oov)


def _stored_keeps(frame: Any, thresholds: dict[str, Any]) -> np.ndarray:
    keep = frame["first_stage_keeps"].to_numpy(dtype=bool).copy()
    if thresholds.get("max_aoa") is not None:
        if "aoa_p95" not in frame.columns:
            raise KeyError("the scores have no aoa_p95 column, which a point's max_aoa reads")
        keep &= frame["aoa_p95"].to_numpy(dtype=float) <= thresholds["max_aoa"]
    return keep


def _outcome_keeps(frame: Any, kept: np.ndarray, thresholds: dict[str, Any]) -> np.ndarray:
    if thresholds.get("max_aoa") is None:
        return kept
    if "aoa_p95" not in frame.columns:
        raise KeyError("outcomes lack aoa_p95: run the cascade with cascade_outcomes")
    return kept & ~(frame["aoa_p95"].astype(float).to_numpy() > thresholds["max_aoa"])


def _outcome_columns(scores: dict[str, Any]) -> dict[str, float]:
    p95 = scores.get("p95_aoa")
    return {} if p95 is None else {"aoa_p95": float(p95)}


def _describe(thresholds: dict[str, Any], details: dict[str, Any]) -> str:
    value = thresholds.get("max_aoa")
    return "" if value is None else f"aoa: 95th-percentile AoA <= {value:g}"


SPEC = StageSpec(
    name="aoa",
    position=1,
    label="AoA+Zipf",
    description="stage 1: 95th-percentile age of acquisition <= max_aoa, OOV share <= max_oov",
    build=_build,
    options=(
        Option(
            "aoa_table",
            None,
            "AoA table, parquet or csv with columns word, aoa (default: embedded Kuperman)",
            parse=Path,
            metavar="PATH",
            path=True,
        ),
        Option(
            "aoa_impute",
            DEFAULT_IMPUTE,
            "AoA for words missing from the table, from Zipf frequency (default: {default})",
            choices=IMPUTE_MODES,
        ),
        Option(
            "max_aoa",
            P95_MAX_AOA,
            "max 95th-percentile token AoA (default: filter_config.json's max_aoa, else {default})",
            parse=positive_float,
            metavar="YEARS",
            check=_max_aoa,
            threshold=True,
            point_check=_point_max_aoa,
        ),
        Option(
            "max_oov",
            OOV_THRESHOLD,
            "max out-of-vocabulary fraction (default: {default})",
            parse=fraction,
            metavar="FRACTION",
            check=_max_oov,
        ),
    ),
    artifacts=(
        Artifact(
            "aoa_table",
            "data/aoa.parquet",
            "aoa",
            "AoA table, columns word, aoa (years)",
            "`littlekit fit aoa --data DATA --out DIR`, or "
            "littlekit.filter.artifacts.export_aoa_table(table, DIR), e.g. from data/aoa/aoa_lemma.csv",
            lambda path: table_problem(path, {"word": "string", "aoa": "numeric"}),
        ),
    ),
    stored_keeps=_stored_keeps,
    stored_columns=("first_stage_keeps",),  # and aoa_p95 when a point sets max_aoa
    store=lambda scores, decision: {"first_stage_keeps": decision.keep, "aoa_p95": scores.get("p95_aoa")},
    outcome_columns=_outcome_columns,
    outcome_keeps=_outcome_keeps,
    drop_reason="aoa_p95",
    describe=_describe,
)
