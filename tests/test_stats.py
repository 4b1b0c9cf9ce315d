import math

import numpy as np
import pytest

from littlekit.stats import clopper_pearson, eta_squared, paired_difference, wilson_interval


def test_eta_squared_hand_computed():
    # groups a: 1, 2, 3 (mean 2); b: 4, 6 (mean 5); grand mean 16/5 = 3.2.
    # SS_between = 3*(2-3.2)^2 + 2*(5-3.2)^2 = 4.32 + 6.48 = 10.8
    # SS_total = 4.84 + 1.44 + 0.04 + 0.64 + 7.84 = 14.8
    values = [1, 2, 3, 4, 6]
    groups = ["a", "a", "a", "b", "b"]
    assert eta_squared(values, groups) == pytest.approx(10.8 / 14.8)


def test_eta_squared_zero_when_group_means_equal():
    values = [1, 3, 0, 4, 2, 2]
    groups = ["x", "x", "y", "y", "z", "z"]
    assert eta_squared(values, groups) == pytest.approx(0.0, abs=1e-12)


def test_eta_squared_one_when_no_within_group_variance():
    values = [1.5, 1.5, 7.0, 7.0, 7.0, -2.0]
    groups = ["K5", "K5", "K8", "K8", "K8", "K12"]
    assert eta_squared(values, groups) == pytest.approx(1.0)


def test_eta_squared_matches_closed_form_on_random_data():
    rng = np.random.default_rng(0)
    groups = rng.choice(["K5", "K8", "K12", "OOS"], size=400)
    values = rng.normal(size=400) + (groups == "K5") * 1.0
    grand = values.mean()
    between = sum((groups == g).sum() * (values[groups == g].mean() - grand) ** 2 for g in set(groups))
    total = ((values - grand) ** 2).sum()
    assert eta_squared(values, groups) == pytest.approx(between / total)


def test_eta_squared_drops_missing_values_and_groups():
    values = [1, 2, 3, 4, 6, math.nan, 100.0]
    groups = ["a", "a", "a", "b", "b", "b", None]
    assert eta_squared(values, groups) == pytest.approx(10.8 / 14.8)


def test_eta_squared_undefined_cases_are_nan():
    assert math.isnan(eta_squared([1, 2, 3], ["a", "a", "a"]))  # one group
    assert math.isnan(eta_squared([2, 2, 2, 2], ["a", "a", "b", "b"]))  # no variance at all


def test_eta_squared_rejects_length_mismatch():
    with pytest.raises(ValueError, match="differ in length"):
        eta_squared([1, 2, 3], ["a", "b"])


def test_wilson_interval_known_value():
    # 8 of 10 at 95%: the textbook Wilson interval is (0.4902, 0.9433).
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_interval_edges_stay_in_unit_range():
    low, high = wilson_interval(0, 50)
    assert low == 0.0 and 0.0 < high < 0.1
    low, high = wilson_interval(50, 50)
    assert high == 1.0 and 0.9 < low < 1.0


def test_wilson_interval_vectorised_and_empty():
    low, high = wilson_interval(np.array([0, 5, 0]), np.array([10, 10, 0]))
    assert low.shape == (3,) and math.isnan(low[2]) and math.isnan(high[2])
    assert low[1] < 0.5 < high[1]


def test_wilson_interval_rejects_impossible_counts():
    with pytest.raises(ValueError):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(1, 10, confidence=1.0)


def test_share_table_counts_shares_and_intervals():
    import pandas as pd

    from littlekit.stats import share_table

    frame = pd.DataFrame({"band": ["K5", "K5", "K5", "K8"], "kind": ["a", "a", "b", "a"],
                          "kept": [True, False, True, False]})
    table = share_table(frame, "band", "kept")
    assert table.loc["K5", "n"] == 3 and table.loc["K5", "kept"] == 2
    assert table.loc["K5", "share"] == pytest.approx(2 / 3)
    assert (table.loc["K5", "ci_low"], table.loc["K5", "ci_high"]) == pytest.approx(wilson_interval(2, 3))
    assert table.loc["K8", "share"] == 0.0 and table.loc["K8", "ci_low"] == 0.0
    two = share_table(frame, ["band", "kind"], "kept")
    assert two.loc[("K5", "b"), "share"] == 1.0 and len(two) == 3
    with pytest.raises(ValueError, match="missing"):
        share_table(frame.assign(kept=[True, None, True, False]), "band", "kept")


def test_wilson_interval_is_exact_at_none_and_all():
    n = np.arange(1, 200)
    low_none, _ = wilson_interval(np.zeros_like(n), n)
    _, high_all = wilson_interval(n, n)
    assert (low_none == 0.0).all() and (high_all == 1.0).all()  # not 2.8e-17 or 1 - 1.1e-16


def test_paired_difference_centres_on_the_mean_change():
    before = np.array([0, 0, 1, 1, 0, 1, 0, 0] * 25, dtype=float)
    after = np.array([1, 0, 1, 1, 1, 1, 0, 1] * 25, dtype=float)
    result = paired_difference(before, after, n_boot=500, seed=1)
    assert result["difference"] == pytest.approx(3 / 8) and result["n"] == 200
    assert 0 < result["low"] < 3 / 8 < result["high"] < 1
    same = paired_difference(before, before)
    assert same == {"difference": 0.0, "low": 0.0, "high": 0.0, "n": 200}  # no change, no spread
    with pytest.raises(ValueError, match="one length"):
        paired_difference([1, 0], [1])


def test_clopper_pearson_known_values_and_the_floor():
    # reference values: the beta quantiles B(a/2; k, n-k+1) and B(1-a/2; k+1, n-k)
    assert clopper_pearson(1, 10) == pytest.approx((0.0025285785444618, 0.4450161170281954), abs=1e-10)
    assert clopper_pearson(25, 315) == pytest.approx((0.0520177888812924, 0.1149300832303786), abs=1e-10)
    low, high = clopper_pearson(0, 32)  # 0 of 32: the 10.9% upper bound, not a bootstrap's [0, 0]
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 32)) and round(high, 3) == 0.109
    assert clopper_pearson(10, 10) == pytest.approx((0.025 ** 0.1, 1.0))
    assert clopper_pearson(5, 10)[0] == pytest.approx(1 - clopper_pearson(5, 10)[1])  # symmetric at k = n/2
    assert clopper_pearson(5, 10, confidence=0.5)[1] < clopper_pearson(5, 10)[1]
    assert all(math.isnan(x) for x in clopper_pearson(0, 0))
    # wider than Wilson, which is not exact
    assert clopper_pearson(3, 40)[1] > wilson_interval(3, 40)[1]
    for bad in ((3, 2), (-1, 5), (1.5, 4)):
        with pytest.raises(ValueError, match="successes"):
            clopper_pearson(*bad)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson(1, 2, confidence=1.0)
