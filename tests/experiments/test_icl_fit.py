"""In-context prompts fit the context the models were trained on, and chapter 17's test problems are
drawn apart from the prompts' shots and the SFT problems (`littlekit.experiments.icl`)."""

from __future__ import annotations

import json

import pytest

from littlekit.curriculum.registry import UNITS
from littlekit.curriculum.units import select_units
from littlekit.evals import curriculum as ce
from littlekit.experiments import icl
from littlekit.experiments import posttraining as pt


@pytest.fixture(scope="module")
def records():
    return ce.held_out_records(select_units("all")[::6], per_unit=2, seed=0, fmt="scratchpad")[0]


def words(text: str) -> int:
    """A stand-in token counter: one token per whitespace-separated word."""
    return len(text.split())


def test_without_a_context_every_prompt_is_whole(records):
    for condition, (style, _) in icl.CONDITIONS.items():
        fitted = icl.fitted_prompts(records, condition)
        assert [f["prompt"] for f in fitted] == icl.condition_prompts(records, condition)
        assert all(not f["shortened"] and f["shots"] == (icl.N_SHOTS if style else 0) for f in fitted)


def test_a_large_context_shortens_nothing(records):
    for condition in icl.CONDITIONS:
        whole = icl.condition_prompts(records, condition)
        fitted = icl.fitted_prompts(records, condition, words, 100_000)
        assert [f["prompt"] for f in fitted] == whole
        assert not any(f["shortened"] for f in fitted)


@pytest.mark.parametrize("condition", list(icl.CONDITIONS))
@pytest.mark.parametrize("context", [40, 80, 160])
def test_fitted_prompts_and_their_answer_room_fit_unless_the_bare_one_does_not(records, condition, context):
    style, with_method = icl.CONDITIONS[condition]
    for record, f in zip(records, icl.fitted_prompts(records, condition, words, context), strict=True):
        drawn = icl.shot_records(UNITS[record["unit"]])
        assert f["room"] == max(words(icl.solution_text(r)) for r in drawn)
        assert f["prompt"].endswith(ce.prompt(record)) and f["prompt_tokens"] == words(f["prompt"])
        bare = words(ce.prompt(record)) + f["room"] > context
        barest = f["shots"] == 0 and f["explanation"] == "none"
        assert f["prompt_tokens"] + f["room"] <= context or (bare and barest)
        kept = drawn[icl.N_SHOTS - f["shots"] : icl.N_SHOTS]  # the first shots go first
        assert all(shot["statement"] in f["prompt"] for shot in kept)
        assert all(shot["statement"] not in f["prompt"] for shot in drawn[: icl.N_SHOTS - f["shots"]])
        if f["explanation"] != "worked" and with_method:
            assert f["shots"] == 0 and f["shortened"]  # shots go before the explanation's example
        assert f["shortened"] == ((f["shots"], f["explanation"]) != icl.shortening_order(
            icl.N_SHOTS if style else 0, with_method)[0])  # fmt: skip
        if condition == "direct":
            assert f["prompt"] == ce.prompt(record) and not f["shortened"]


def test_a_tight_context_shortens_and_keeps_the_fullest_prompt_that_fits(records):
    record = records[0]
    whole = icl.fitted_prompts([record], "prose+explanation", words, 100_000)[0]
    context = whole["prompt_tokens"] + whole["room"] - 1  # one word short of the whole prompt
    fitted = icl.fitted_prompts([record], "prose+explanation", words, context)[0]
    assert fitted["shortened"] and fitted["shots"] == icl.N_SHOTS - 1 and fitted["explanation"] == "worked"


def test_the_shortening_order_drops_shots_then_the_example_then_the_explanation():
    assert icl.shortening_order(3, True) == [(3, "worked"), (2, "worked"), (1, "worked"), (0, "worked"),
                                             (0, "plain"), (0, "none")]  # fmt: skip
    assert icl.shortening_order(3, False) == [(3, "none"), (2, "none"), (1, "none"), (0, "none")]
    assert icl.shortening_order(0, False) == [(0, "none")]
    unit = select_units("K5")[0]
    assert "For example" not in icl.explanation(unit, None) and unit.title in icl.explanation(unit, None)


def test_count_and_context_come_together(records):
    with pytest.raises(ValueError, match="both count and context"):
        icl.fitted_prompts(records, "prose", words, None)


def test_training_context_reads_seq_len_then_max_position_embeddings(tmp_path):
    best = tmp_path / "run" / "best"
    best.mkdir(parents=True)
    (best / "config.json").write_text(json.dumps({"max_position_embeddings": 1024}))
    assert icl.training_context(best) == 1024
    (tmp_path / "run" / "train_config.json").write_text(json.dumps({"seq_len": 128}))
    assert icl.training_context(best) == 128
    (best / "trainer_state.json").write_text(json.dumps({"config": {"seq_len": 256}}))
    assert icl.training_context(best) == 256
    with pytest.raises(FileNotFoundError, match="sequence length"):
        icl.training_context(tmp_path)


def test_test_problems_drawn_apart_from_the_prompts_never_equal_a_shot():
    units = [UNITS[name] for name in ("ten_more_less", "multiplication_facts", "perimeter")]
    shots = {r["statement"] for unit in units for r in icl.shot_records(unit)}
    plain = ce.held_out_draw(units, 3, seed=0, fmt="scratchpad")
    assert any(r["statement"] in shots for r in plain.unseen)  # the collision the exclusion is for
    apart = ce.held_out_draw(units, 3, seed=0, fmt="scratchpad", training=icl.prompt_training_set(units))
    assert sum(apart.excluded.values()) > 0 and len(apart.unseen) == len(plain.unseen)
    assert not any(r["statement"] in shots for r in apart.unseen)


def test_the_sft_problems_hold_every_curriculum_sft_row(tmp_path):
    config = pt.PostTrainingConfig(sft_steps=10, sft_batch=8, seed=0)
    jobs = pt.sft_jobs({"littlelearner": "a", "unfiltered": "b"}, tmp_path, [], [], config)
    held = icl.sft_training_set(0)
    statements = {row["prompt"].strip() for job in jobs for row in job.rows}
    assert statements and all(" ".join(s.split()) in held.statements for s in statements)
