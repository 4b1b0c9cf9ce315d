"""Scaling: the recipe carried to another size, grade groups, and the change from the smallest size
to the largest on constructed results (every verdict branch of `compare.change_verdict`)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pandas as pd
import pytest

from littlekit.experiments.compare import change_verdict
from littlekit.experiments.scaling import (
    GRADE_GROUPS,
    grade_group,
    read_recipe,
    recipe_at_size,
    size_lifts,
)
from littlekit.lm.train.config import TrainConfig


def test_the_recipe_is_read_back_and_only_size_and_folder_change(tmp_path):
    recipe = TrainConfig(data={"a": 0.2, "b": 0.8}, tokenizer="tok", run_dir=str(tmp_path), size="micro",
                         max_steps=600, seed=3, resume="auto", stop_at=10)  # fmt: skip
    (tmp_path / "train_config.json").write_text(json.dumps(asdict(recipe)), encoding="utf-8")
    read = read_recipe(tmp_path)
    assert read == recipe
    small = recipe_at_size(read, "pico", tmp_path / "pico")
    assert (small.size, small.run_dir) == ("pico", str(tmp_path / "pico"))
    assert small.resume is None and small.stop_at is None
    restored = {**asdict(small), "size": "micro", "run_dir": recipe.run_dir, "resume": "auto", "stop_at": 10}
    assert restored == asdict(recipe)
    with pytest.raises(FileNotFoundError, match="not a finished training run"):
        read_recipe(tmp_path / "nothing")
    (tmp_path / "train_config.json").write_text('{"surprise": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a train config"):
        read_recipe(tmp_path)


def test_grade_groups_cover_k_to_8_once():
    grades = [g for grades in GRADE_GROUPS.values() for g in grades]
    assert grades == ["K", "1", "2", "3", "4", "5", "6", "7", "8"]
    assert grade_group("K") == "K-5" and grade_group("7") == "boundary (6-7)" and grade_group(8) == "grade 8"
    with pytest.raises(ValueError):
        grade_group("9")


def results(model: str, size: str, right: dict[str, int], per_grade: int = 40) -> list[dict]:
    """Constructed rows: `right[grade]` of `per_grade` problems per grade answered correctly."""
    return [
        {"model": model, "size": size, "id": f"{grade}-{i}", "grade": grade, "n": 1,
         "c": int(i < right[grade])}  # fmt: skip
        for grade in ("3", "6", "8")
        for i in range(per_grade)
    ]


def test_size_lifts_measures_the_change_on_the_same_problems():
    frame = pd.DataFrame(
        results("LL", "pico", {"3": 10, "6": 0, "8": 20})
        + results("LL", "nano", {"3": 20, "6": 0, "8": 10})
        + results("LL", "micro", {"3": 30, "6": 0, "8": 5})
        + results("UN", "pico", {"3": 10, "6": 10, "8": 10})
        + results("UN", "micro", {"3": 11, "6": 20, "8": 10})
    )
    lifts = size_lifts(frame[frame["model"] == "LL"], ["pico", "nano", "micro"], n_boot=500)
    lifts = lifts.set_index("group")
    assert list(lifts.index) == ["K-5", "boundary (6-7)", "grade 8"]
    assert lifts.loc["K-5", "change"] == pytest.approx(0.5) and lifts.loc["K-5", "accuracy micro"] == 0.75
    # 0 of 40 right at both sizes is a floor, not a null: the bootstrap interval is [0, 0]
    verdicts = [change_verdict(lifts.loc[g]) for g in lifts.index]
    assert verdicts == ["raises", "untestable at this scale", "lowers"]
    assert lifts.loc["boundary (6-7)", "exact high micro"] == pytest.approx(1 - 0.025 ** (1 / 40))
    assert lifts.loc["boundary (6-7)", "detectable"] > 0.05  # what 40 problems could have shown
    un = size_lifts(frame[frame["model"] == "UN"], ["pico", "micro"], n_boot=500).set_index("group")
    assert change_verdict(un.loc["K-5"]) == "inconclusive"  # one more right of 40, and no control moved
    assert change_verdict(un.loc["boundary (6-7)"]) == "raises"
    # a null needs a positive control that moved under the same intervention
    assert change_verdict(un.loc["K-5"], control=un.loc["boundary (6-7)"]) == "does not change"
    assert change_verdict(un.loc["K-5"], control=un.loc["grade 8"]) == "inconclusive"
    assert (un.loc["K-5", "correct pico"], un.loc["K-5", "correct micro"]) == (10, 11)
    with pytest.raises(ValueError, match="same problems"):
        size_lifts(frame[frame["model"] == "UN"], ["nano", "micro"])  # UN has no nano run


def test_a_claim_is_reproduced_only_when_every_part_holds():
    from littlekit.experiments.compare import claim_verdict

    k5, null = ("K-5", "raises", "raises"), ("grade 8", "does not change", "does not change")
    holds = claim_verdict([k5, null])
    assert holds[-1].startswith("reproduced")
    floor = claim_verdict([k5, ("grade 8", "does not change", "untestable at this scale")])
    assert floor[-1].startswith("not shown at this scale") and "grade 8" in floor[-1]
    assert "untestable at this scale" in floor[1]
    broken = claim_verdict([
        ("K-5", "raises", "does not change"), ("grade 8", "does not change", "inconclusive")
    ])
    assert broken[-1] == "NOT reproduced: K-5 does not hold"


def test_a_floor_is_read_from_the_counts_the_row_has():
    # a row of a joined table: this comparison's counts are 0 and 0, another's columns are empty
    row = {"low": 0.0, "high": 0.0, "correct base": 0, "correct sft": 0, "correct grpo": float("nan"),
           "accuracy base": 0.0, "accuracy sft": 0.0, "accuracy grpo": float("nan")}
    control = {"low": 0.05, "high": 0.2}
    assert change_verdict(row, control) == "untestable at this scale"
