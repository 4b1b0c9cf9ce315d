"""pass@k against the closed form 1 - C(n-c,k)/C(n,k) with exact integers, and its CIs."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from littlekit.evals.passk import (
    default_ks,
    mean_interval,
    mean_pass_at_k,
    pass_at_k,
    pass_at_k_curve,
    per_problem,
)


def closed_form(n: int, c: int, k: int) -> float:
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def test_matches_closed_form_on_random_cases():
    rng = random.Random(0)
    for _ in range(2000):
        n = rng.choice([1, 2, 5, 16, 100, 1024])
        c = rng.randint(0, n)
        k = rng.randint(1, n)
        assert pass_at_k(n, c, k) == pytest.approx(closed_form(n, c, k), rel=1e-9, abs=1e-12)


def test_edge_cases():
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 8, 3) == 1.0  # n - c = 2 < k: every 3 samples hold a correct one
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)  # pass@1 is the share correct
    assert pass_at_k(1024, 1, 1024) == 1.0
    # large n where C(n, k) overflows a float: still finite and exact
    assert pass_at_k(1024, 5, 512) == pytest.approx(closed_form(1024, 5, 512), rel=1e-9)


@pytest.mark.parametrize("n, c, k", [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_bad_counts_fail(n, c, k):
    with pytest.raises(ValueError, match="need"):
        pass_at_k(n, c, k)


def test_mean_over_problems_and_monotone_curve():
    ns, cs = [16, 16, 16, 16], [0, 1, 8, 16]
    assert per_problem(ns, cs, 1).tolist() == pytest.approx([0, 1 / 16, 0.5, 1])
    result = mean_pass_at_k(ns, cs, 1)
    assert result["pass_at_k"] == pytest.approx((0 + 1 / 16 + 0.5 + 1) / 4)
    assert result["low"] <= result["pass_at_k"] <= result["high"] and result["problems"] == 4
    curve = pass_at_k_curve(ns, cs)
    assert curve["k"].tolist() == [1, 2, 4, 8, 16]
    assert np.all(np.diff(curve["pass_at_k"]) >= 0)
    assert curve["pass_at_k"].iloc[-1] == pytest.approx(0.75)  # 3 of 4 problems ever solved


def test_default_ks_end_at_n():
    assert default_ks(16) == [1, 2, 4, 8, 16]
    assert default_ks(12) == [1, 2, 4, 8, 12]
    assert default_ks(1) == [1]


def test_intervals_cover_and_shrink():
    rng = np.random.default_rng(1)
    small, large = rng.random(30), rng.random(3000)
    for method in ("bootstrap", "normal"):
        mean, low, high = mean_interval(small, method=method)
        assert low < mean < high
        _, low_l, high_l = mean_interval(large, method=method)
        assert high_l - low_l < (high - low) / 5
    # the normal interval is the textbook one
    mean, low, high = mean_interval(small, method="normal")
    half = 1.959964 * small.std(ddof=1) / np.sqrt(small.size)
    assert (low, high) == pytest.approx((mean - half, mean + half), abs=1e-6)
    # bootstrap and normal agree for a well-behaved mean
    _, b_low, b_high = mean_interval(large, method="bootstrap")
    _, n_low, n_high = mean_interval(large, method="normal")
    assert (b_low, b_high) == pytest.approx((n_low, n_high), abs=0.005)


def test_interval_is_reproducible_and_clipped():
    x = [1.0] * 20 + [0.95]
    assert mean_interval(x, seed=3) == mean_interval(x, seed=3)
    assert mean_interval(x, method="normal")[2] == 1.0
    with pytest.raises(ValueError, match="method"):
        mean_interval(x, method="wald")
