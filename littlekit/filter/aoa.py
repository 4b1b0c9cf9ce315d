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
from typing import Any

from littlekit.filter.base import Decision, Stage
from littlekit.filter.lexicon import OOV, AoALexicon
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
