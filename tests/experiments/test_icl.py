"""In-context learning prompts (`littlekit.experiments.icl`) for every condition, and a run on a
tiny Qwen3."""

from __future__ import annotations

import os

import pytest
from train_data import saved_curriculum_qwen3

from littlekit.curriculum.formats import render
from littlekit.curriculum.registry import UNITS
from littlekit.curriculum.units import select_units
from littlekit.evals import curriculum as ce
from littlekit.experiments import icl

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def records():
    return ce.held_out_records(select_units("all"), per_unit=1, seed=0, fmt="scratchpad")[0]


def blocks(text: str) -> list[str]:
    return text.split("\n\n")


@pytest.mark.parametrize("condition", list(icl.CONDITIONS))
def test_every_condition_ends_with_the_problem_and_holds_what_it_names(records, condition):
    style, with_method = icl.CONDITIONS[condition]
    for record, text in zip(records, icl.condition_prompts(records, condition), strict=True):
        assert text.endswith(ce.prompt(record)) and blocks(text)[-1] == ce.prompt(record)
        parts = blocks(text)[:-1]
        assert len(parts) == (icl.N_SHOTS if style else 0) + with_method
        assert (bool(parts) and parts[0].startswith("Method for this kind of problem")) == with_method
        shots = parts[with_method:]
        drawn = icl.shot_records(UNITS[record["unit"]])
        for shot, source in zip(shots, drawn[: len(shots)], strict=True):
            assert shot.startswith(source["statement"] + "\n")
            assert shot.endswith(f"Answer: {source['answer']}")
            assert source["statement"] != record["statement"] or source["seed"] != record["seed"]
        if style == "compact":  # the pretraining format exactly
            assert shots == [render(s["statement"], s["steps"], s["answer"], "scratchpad") for s in drawn[:3]]
        if style == "qa":
            assert all(len(shot.splitlines()) == 2 for shot in shots)
        if style == "prose":
            assert all(shot.splitlines()[1].startswith("We need to find the answer.") for shot in shots)


def test_the_explanation_works_an_example_with_numbers_not_letters():
    unit = UNITS["add_within_20"] if "add_within_20" in UNITS else select_units("K5")[3]
    example = icl.shot_records(unit)[icl.N_SHOTS]
    text = icl.explanation(unit, example)
    assert unit.title in text and example["statement"] in text
    assert text.endswith(f"the answer is {example['answer']}.")
    assert all(step in text for step in example["steps"])


def test_prose_solutions_name_each_step():
    record = {"steps": ["27 + 11 = 38", "38 - 13 = 25"], "answer": "25"}
    assert icl.prose_solution(record) == (
        "We need to find the answer. First, 27 + 11 = 38. Then, 38 - 13 = 25.\nAnswer: 25"
    )


def test_unknown_conditions_and_styles_are_refused(records):
    with pytest.raises(ValueError, match="unknown condition 'cot'"):
        icl.condition_prompts(records, "cot")
    with pytest.raises(ValueError, match="unknown shot style"):
        icl.render_shot(records[0], "latex")


def test_evaluate_rejects_prompts_that_do_not_match_the_records(records):
    with pytest.raises(ValueError, match="1 prompts for"):
        ce.evaluate(records, lambda prompts, n: [["x"]] * len(prompts), prompts=["only one"])


@pytest.mark.slow
def test_run_icl_scores_every_condition_on_the_same_problems(tmp_path):
    saved_curriculum_qwen3(tmp_path, "scratchpad", max_positions=1024)
    records = ce.held_out_records(select_units("all")[:2], per_unit=1, seed=0, fmt="scratchpad")[0]
    rows = icl.run_icl(icl.IclJob("tiny", str(tmp_path), tuple(records)))
    assert len(rows) == len(records) * len(icl.CONDITIONS)
    by = rows.groupby("condition")["prompt_tokens"].mean()
    assert by["direct"] < by["qa"] < by["compact"] <= by["prose"] < by["prose+explanation"]
    table = icl.table5(rows)
    assert list(table["condition"]) == list(icl.CONDITIONS)
