"""BoundaryEvo (`littlekit.experiments.boundary`): the acceptance rule and replay-first selection on
constructed scores, the baselines, the analyzer, teacher verification, and a one-round run on a
tiny Qwen3."""

from __future__ import annotations

import os

import pytest
from train_data import saved_curriculum_qwen3

from littlekit.curriculum.generate import generate
from littlekit.curriculum.units import select_units
from littlekit.experiments import boundary as be

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CONFIG = be.BoundaryConfig(tau_e=0.75, tau_s=0.5, tau_g=0.2, tau_q=1.0, budget=4, replay_quota=0.5)
GOOD = {"expert": 1.0, "student": 0.0, "quality": 1.0, "clear": True, "answerable": True}


# --- the acceptance rule (5) ---------------------------------------------------------------------------


def test_a_question_the_expert_solves_and_the_student_does_not_is_accepted():
    assert be.accepted(GOOD, CONFIG)


@pytest.mark.parametrize(
    "change",
    [
        {"expert": 0.5},  # the expert is not reliable
        {"student": 0.5},  # the student has mastered it (s < tau_s is strict)
        {"expert": 0.75, "student": 0.6},  # student too strong, and the gap 0.15 < 0.2
        {"quality": 0.0},  # the analyzer finds it does not re-derive
        {"clear": False},  # a degenerate question
        {"answerable": False},  # no gold answer the grader reads
    ],
)
def test_each_condition_of_the_rule_can_refuse_a_question(change):
    assert not be.accepted({**GOOD, **change}, CONFIG)


def test_the_rule_at_its_thresholds():
    assert be.accepted({**GOOD, "expert": 0.75, "student": 0.25}, CONFIG)  # s_e = tau_e, g = 0.5
    assert not be.accepted({**GOOD, "expert": 0.75, "student": 0.5}, CONFIG)  # s_s = tau_s
    gap_only = be.BoundaryConfig(tau_e=0.0, tau_s=1.0, tau_g=0.5)
    assert be.accepted({**GOOD, "expert": 0.75, "student": 0.25}, gap_only)  # g = tau_g exactly
    assert not be.accepted({**GOOD, "expert": 0.5, "student": 0.25}, gap_only)  # g = 0.25 < 0.5


# --- replay-first selection (6)-(7) and the baselines -------------------------------------------------


def scores(**students: float) -> dict[str, dict]:
    return {i: {**GOOD, "student": s} for i, s in students.items()}


def test_replay_fills_at_most_its_quota_largest_gap_first_then_novel_by_quality_and_gap():
    table = scores(a=0.0, b=0.25, c=0.0, d=0.25, e=0.0, f=0.25)
    table["e"]["quality"] = 0.5  # ranked after full-quality novel questions whatever its gap
    replay, novel = be.replay_first(list(table), table, previous={"a", "b", "c"}, config=CONFIG)
    assert replay == ["a", "c"]  # quota 2 of budget 4; gap 1.0 before b's 0.75
    assert novel == ["d", "f"]  # e has the larger gap but lower quality
    assert len(replay) + len(novel) == CONFIG.budget


def test_fewer_accepted_than_the_budget_are_all_taken():
    table = scores(a=0.0, b=0.0)
    replay, novel = be.replay_first(["a", "b"], table, previous={"a"}, config=CONFIG)
    assert (replay, novel) == (["a"], ["b"])
    assert be.replay_first([], table, previous={"a"}, config=CONFIG) == ([], [])


def test_without_a_replay_quota_only_novel_questions_are_chosen():
    table = scores(a=0.0, b=0.0, c=0.0)
    no_replay = be.BoundaryConfig(budget=2, replay_quota=0.0)
    assert be.replay_first(list(table), table, previous={"a", "b"}, config=no_replay) == ([], ["c"])


def test_the_baselines_choose_at_random_or_the_errors_least_solved_first():
    table = scores(a=0.75, b=0.0, c=0.25, d=1.0, e=0.25, f=0.0)
    ids = list(table)
    chosen = be.baseline_choice("random", ids, table, CONFIG, 1)
    assert len(chosen) == 4 and set(chosen) <= set(ids)
    assert chosen == be.baseline_choice("random", ids, table, CONFIG, 1)
    assert chosen != be.baseline_choice("random", ids, table, CONFIG, 2) or len(ids) <= 4
    assert be.baseline_choice("error", ids, table, CONFIG, 1) == ["b", "f", "c", "e"]
    with pytest.raises(ValueError, match="unknown method 'greedy'"):
        be.baseline_choice("greedy", ids, table, CONFIG, 1)


def test_the_config_refuses_thresholds_outside_zero_and_one():
    with pytest.raises(ValueError, match="tau_e"):
        be.BoundaryConfig(tau_e=1.5)
    with pytest.raises(ValueError, match="positive"):
        be.BoundaryConfig(rollouts=0)


# --- the analyzer, the teacher and verification ---------------------------------------------------


@pytest.fixture(scope="module")
def records():
    return generate(select_units("all"), 1, seed=7, fmt="scratchpad")


def test_the_analyzer_passes_curriculum_records_and_catches_broken_ones(records):
    assert all(be.analyze(r) == {"quality": 1.0, "clear": True, "answerable": True} for r in records)
    record = records[0]
    assert be.analyze({**record, "answer": str(int(record["answer"]) + 1)})["quality"] == 0.0
    empty = be.analyze({**record, "answer": ""})
    assert empty["answerable"] is False and empty["quality"] == 0.0
    degenerate = {**record, "statement": f"{record['statement']} The answer is {record['answer']}."}
    assert be.analyze(degenerate)["clear"] is False


def test_teacher_rollouts_alternate_registers_and_verify(records):
    for record in records:
        first, second = be.curriculum_teacher(record, 0), be.curriculum_teacher(record, 1)
        assert (first["register"], second["register"]) == ("compact", "prose")
        assert first["answer"] == second["answer"] == record["answer"]
        assert be.verified(first, record["answer"]) and be.verified(second, record["answer"])
    kept, rejected = be.verified_rollouts(records, be.curriculum_teacher, rollouts=2)
    assert len(kept) == len(records) and rejected == 0


def test_verification_drops_wrong_rollouts_and_questions_without_a_right_one(records):
    def wrong_first(record, k):
        rollout = be.curriculum_teacher(record, k)
        if k == 0:
            rollout = {**rollout, "answer": "987654321"}
        return rollout

    kept, rejected = be.verified_rollouts(records[:5], wrong_first, rollouts=2)
    assert rejected == 5 and [r["register"] for r in kept] == ["prose"] * 5
    always_wrong = lambda record, k: {**be.curriculum_teacher(record, k), "answer": "987654321"}  # noqa: E731
    assert be.verified_rollouts(records[:5], always_wrong, rollouts=3) == ([], 15)


def test_priming_keeps_valid_trajectories_without_verifying_them(records):
    assert len(be.priming_set(records)) == len(records)
    broken = lambda record, k: {**be.curriculum_teacher(record, k), "answer": ""}  # noqa: E731
    assert be.priming_set(records[:3], broken) == []


# --- one round on a tiny Qwen3 --------------------------------------------------------------------


@pytest.mark.slow
def test_one_round_primes_selects_distills_and_evaluates(tmp_path, records):
    base = str(saved_curriculum_qwen3(tmp_path / "base", "scratchpad"))
    config = be.BoundaryConfig(
        k0=4, pool=6, budget=3, rounds=1, samples=2, epochs=1, sft_batch=4, max_new_tokens=8
    )
    pool, evaluation = tuple(records[:6]), tuple(records[10:13])
    primed = be.run_job(
        be.PrimeJob(
            "tiny", base, str(tmp_path / "primed"), tuple(be.priming_set(records[20:24])), evaluation, config
        )
    )
    assert list(primed["results"]["round"]) == [0, 0, 0]
    expert = be.run_job(be.ExpertJob(be.TEACHER_EXPERT, pool, config))
    assert expert["expert_scores"] == [1.0] * 6
    job = be.EvolveJob(
        "tiny",
        "boundary",
        primed["primed"],
        str(tmp_path / "evolve"),
        pool,
        tuple(expert["expert_scores"]),
        evaluation,
        config,
    )
    done = be.run_job(job)
    (entry,) = done["rounds"]
    assert entry["accepted"] >= entry["chosen"] == min(3, entry["accepted"])
    assert entry["verified"] == entry["chosen"] and entry["trained"] == (entry["chosen"] > 0)
    assert list(done["results"]["round"]) == [1, 1, 1]
    assert (tmp_path / "evolve" / "summary.json").is_file()
