"""The spread over training seeds: the Student-t interval of per-seed estimates, the direction a
verdict reads over seeds (every seed's item interval and the seeds' interval must exclude zero),
and where a run keeps its seed replicas."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from littlekit.evals.models import seed_checkpoints, seed_study, write_seed_manifest
from littlekit.experiments.compare import interval_direction, seed_direction
from littlekit.stats import seed_interval


def test_seed_interval_is_the_student_t_interval():
    spread = seed_interval([0.30, 0.35, 0.40])
    # mean 0.35, sd 0.05, t(0.975, 2) = 4.3027: half-width 4.3027 * 0.05 / sqrt(3) = 0.1242
    assert spread["mean"] == pytest.approx(0.35)
    assert spread["sd"] == pytest.approx(0.05)
    assert spread["low"] == pytest.approx(0.35 - 0.12421, abs=1e-4)
    assert spread["high"] == pytest.approx(0.35 + 0.12421, abs=1e-4)
    assert spread["seeds"] == 3


def test_one_seed_has_no_interval_and_nan_is_dropped():
    assert math.isnan(seed_interval([0.3])["low"])
    spread = seed_interval([0.3, float("nan"), 0.5])
    assert spread["seeds"] == 2 and spread["mean"] == pytest.approx(0.4)


def frame(estimates, lows, highs):
    return pd.DataFrame({"seed": range(len(estimates)), "rise": estimates, "ci_low": lows, "ci_high": highs})


def test_a_direction_holds_over_seeds_only_when_every_seed_and_the_seeds_agree():
    agree = frame([0.30, 0.35, 0.40], [0.2, 0.25, 0.3], [0.4, 0.45, 0.5])
    assert seed_direction(agree, "rise")[0] == "larger"
    below = frame([-0.30, -0.35, -0.40], [-0.4, -0.45, -0.5], [-0.2, -0.25, -0.3])
    assert seed_direction(below, "rise", "steeper", "flatter")[0] == "flatter"
    one_seed_unsure = frame([0.30, 0.35, 0.05], [0.2, 0.25, -0.01], [0.4, 0.45, 0.1])
    assert seed_direction(one_seed_unsure, "rise")[0] == "inconclusive"
    # every seed's item interval is above zero, but the seeds scatter too much for three of them
    scattered = frame([0.02, 0.9, 0.05], [0.01, 0.8, 0.04], [0.03, 1.0, 0.06])
    verdict, spread = seed_direction(scattered, "rise")
    assert spread["low"] < 0 and verdict == "inconclusive"
    assert seed_direction(agree.head(1), "rise")[0] == "inconclusive"


def test_interval_direction():
    assert interval_direction(0.1, 0.2) == "larger"
    assert interval_direction(-0.2, -0.1, "steeper", "flatter") == "flatter"
    assert interval_direction(-0.1, 0.2) == "inconclusive"


def test_seed_checkpoints_lists_the_manifest_s_complete_pairs_in_seed_order(tmp_path):
    seeds = tmp_path / "training" / "seeds"
    for seed in (2, 0, 10, 7):
        for name in ("littlelearner", "unfiltered"):
            best = seeds / f"seed{seed}" / name / "best"
            best.mkdir(parents=True)
            (best / "config.json").write_text(json.dumps({}))
    (seeds / "seed1" / "littlelearner" / "best").mkdir(parents=True)  # half a pair: not listed
    (seeds / "seed1" / "littlelearner" / "best" / "config.json").write_text("{}")
    assert seed_checkpoints(tmp_path) == {}  # no manifest: no seed study
    write_seed_manifest(tmp_path, [10, 2, 0, 1], steps=200, main_steps=560)
    found = seed_checkpoints(tmp_path)
    assert list(found) == [0, 2, 10]  # seed 7 is left from another study, seed 1 is half a pair
    assert found[2]["UNFILTERED"].endswith("seed2/unfiltered/best")
    assert seed_study(tmp_path) == {"seeds": [10, 2, 0, 1], "steps": 200, "main_steps": 560}
    assert seed_checkpoints(tmp_path / "elsewhere") == {}
    (seeds / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="manifest.json"):
        seed_checkpoints(tmp_path)
