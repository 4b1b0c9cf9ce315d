"""Chapter 18's held-out problems are unseen: drawn apart from each student's pretraining text and
from the pool and priming questions the students are fine-tuned on (`boundary.student_training_set`)."""

from __future__ import annotations

import json

import pytest

from littlekit.curriculum.units import select_units
from littlekit.evals import curriculum as ce
from littlekit.experiments import boundary as be


@pytest.fixture(scope="module")
def units():
    return select_units("all")[::8]


@pytest.fixture(scope="module")
def plain(units):
    """The draw with no exclusion: what chapter 18 scored before."""
    return ce.held_out_draw(units, 2, seed=0, fmt="scratchpad")


def statements_of(records):
    """Every statement a student reads of these questions: each teacher rollout, both registers."""
    return {be.curriculum_teacher(r, k)["statement"] for r in records for k in range(2)}


def test_pool_and_priming_questions_are_never_held_out(units, plain):
    pool = plain.unseen[::3]  # as if the pool had drawn these held-out problems
    priming = be.priming_set(plain.unseen[1::3])
    training, unknown = be.student_training_set({}, [*pool, *priming])
    assert unknown == []
    apart = ce.held_out_draw(units, 2, seed=0, fmt="scratchpad", training=training)
    assert sum(apart.excluded.values()) == len(pool) + len(priming)
    assert len(apart.unseen) == len(plain.unseen)  # redrawn, not lost
    trained = statements_of([*pool, *priming])
    held = {s for r in apart.unseen for s in statements_of([r])}
    assert trained and not trained & held


def test_a_students_pretraining_text_is_never_held_out(tmp_path, units, plain):
    record = plain.unseen[0]
    prose = be.curriculum_teacher(record, 1)["statement"]  # the other register than the draw's
    assert prose != record["statement"]
    student = tmp_path / "student"
    student.mkdir()
    (student / "train.jsonl").write_text(json.dumps({"text": f"Once upon a time.\n{prose}\nThe end."}) + "\n")
    (student / "training_data.json").write_text(json.dumps({"jsonl": ["train.jsonl"]}))
    unknown_folder = tmp_path / "hub-model"
    unknown_folder.mkdir()
    training, unknown = be.student_training_set({"seen": str(student), "other": str(unknown_folder)}, [])
    assert unknown == ["other"]
    apart = ce.held_out_draw(units, 2, seed=0, fmt="scratchpad", training=training)
    assert sum(apart.excluded.values()) == 1
    assert record["id"] not in {r["id"] for r in apart.unseen}
    assert [r["id"] for r in apart.seen] == [record["id"]]
