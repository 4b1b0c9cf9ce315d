"""`littlekit course build` and `grade` on a real exercise notebook (exercise 1: it reads only the
embedded data), graded by nbgrader's real autograder: the instructor edition gets full points, the
student edition as handed out gets zero, a wrong and an erroring answer get partial points with both
reported, a looping answer is cut off while the rest is graded, a notebook past its limit is graded
zero, and an answer that prints the key shows it to nobody."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest

from littlekit.cli import main
from littlekit.config import REPO_ROOT
from littlekit.course.editions import SOLUTION, exercises, tags
from littlekit.course.grading import NBGRADER_DIR, GradingError, grade_submissions

pytestmark = pytest.mark.slow

NAME = "ex01_age_of_acquisition"
TINY = {"run_name": '"pytest-course"', "passages_per_band": "10", "thresholds": "[10.0, 12.0]"}
CELL_TIMEOUT = 15


def with_parameters(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with the tiny parameters a student may set in its parameters cell."""
    cell = next(c for c in notebook.cells if "parameters" in tags(c))
    lines = cell.source.splitlines()
    for name, value in TINY.items():
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{name}:"))
        annotation = lines[at].split("=")[0]
        lines[at] = f"{annotation}= {value}"
    cell.source = "\n".join(lines)
    return notebook


def answer_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The exercises' answer cells, one per exercise (exercise 1 has one each)."""
    return [notebook.cells[ex.solutions[0]] for ex in exercises(notebook)]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    # built with a relative --out, as `make book` builds it (nbgrader doubles a relative root)
    out, cwd = tmp_path_factory.mktemp("course"), Path.cwd()
    os.chdir(out.parent)
    try:
        assert main(["course", "build", NAME, "--out", out.name]) == 0
    finally:
        os.chdir(cwd)
    return out


def submit(folder: Path, student: str, notebook: nbformat.NotebookNode) -> None:
    (folder / student).mkdir(parents=True)
    nbformat.write(notebook, folder / student / f"{NAME}.ipynb")


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """Four students graded in one call; returns (rows by student and exercise, output folder)."""
    folder = tmp_path_factory.mktemp("submissions")
    instructor = nbformat.read(course / "instructor" / f"{NAME}.ipynb", as_version=4)
    student = nbformat.read(course / "student" / f"{NAME}.ipynb", as_version=4)
    submit(folder, "full", with_parameters(nbformat.from_dict(instructor)))
    submit(folder, "blank", student)  # as handed out, parameters untouched

    mixed = with_parameters(nbformat.from_dict(instructor))
    first, second, third = answer_cells(mixed)
    # a wrong answer: counts the passages dropped as kept (consistent, so the public test passes)
    first.source += ('\nsweep["kept"] = sweep["passages"] - sweep["kept"]'
                     '\nsweep["retained"] = 1 - sweep["retained"]')
    for index in exercises(mixed)[0].tests:  # editing the tests to pass them: nbgrader restores them
        mixed.cells[index].source = "pass"
    second.source = 'both = pd.DataFrame()\nraise KeyError("Rating.Mean")'
    source = course / NBGRADER_DIR / "source" / NAME / f"{NAME}.ipynb"
    third.source += f"\nprint(open({str(source)!r}).read())  # the key, hidden tests included"
    submit(folder, "mixed", mixed)

    looping = with_parameters(nbformat.from_dict(instructor))
    answer_cells(looping)[1].source = "while True:\n    pass"
    submit(folder, "loops", looping)

    out = tmp_path_factory.mktemp("grades")
    grade_submissions(folder, course, out, cell_timeout=CELL_TIMEOUT, notebook_timeout=600)
    with (out / "scores.csv").open() as handle:
        rows = {(r["student"], int(r["exercise"])): r for r in csv.DictReader(handle)}
    return rows, out


def points(rows: dict, student: str) -> list[float]:
    return [float(rows[(student, n)]["points"]) for n in (1, 2, 3)]


def maxima(rows: dict, student: str) -> list[int]:
    return [int(rows[(student, n)]["max_points"]) for n in (1, 2, 3)]


def test_build_writes_both_editions_and_the_student_edition_hides_answers_and_key(course):
    instructor = nbformat.read(course / "instructor" / f"{NAME}.ipynb", as_version=4)
    student = nbformat.read(course / "student" / f"{NAME}.ipynb", as_version=4)
    original = nbformat.read(REPO_ROOT / "notebooks" / "exercises" / f"{NAME}.ipynb", as_version=4)
    shown = [c for c in instructor.cells if c.id != "show-glued"]  # the glued values, printed
    assert [c.id for c in shown] == [c.id for c in original.cells]  # every cell, the instructor's too
    for cell, mine in zip(shown, original.cells, strict=True):
        if cell.cell_type == "code":
            assert mine.source in cell.source  # answers between nbgrader's solution markers
    assert "{glue:" not in "\n".join(c.source for c in instructor.cells + student.cells)
    answers = [c for c in student.cells if SOLUTION in tags(c)]
    assert len(answers) == 3 and all("raise NotImplementedError()" in c.source for c in answers)
    text = "\n".join(c.source for c in student.cells)
    assert "BEGIN HIDDEN TESTS" not in text and "check_stage" not in text  # hidden tests left out
    assert "Expected answer" not in text and "**Rubric" not in text  # instructor cells left out
    assert "pd.concat([retention(lemma, t)" not in text  # exercise 1's answer
    assert "**Your prediction**" in text  # kept for the student to fill
    assert "**Student edition.**" in student.cells[0].source and "**Student edition.**" not in "\n".join(
        c.source for c in instructor.cells)


def test_instructor_edition_gets_full_points(graded):
    rows, _ = graded
    assert points(rows, "full") == maxima(rows, "full") and sum(maxima(rows, "full")) > 0
    assert {rows[("full", n)]["status"] for n in (1, 2, 3)} == {"passed"}


def test_student_edition_as_handed_out_gets_zero_on_every_exercise(graded):
    rows, _ = graded
    assert points(rows, "blank") == [0.0, 0.0, 0.0]
    assert all("NotImplementedError" in rows[("blank", n)]["message"] for n in (1, 2, 3))


def test_a_wrong_and_an_erroring_answer_get_partial_points_and_both_are_reported(graded):
    """(The submission also rewrote exercise 1's tests to `pass`: they ran as written all the same.)"""
    rows, out = graded
    got = points(rows, "mixed")
    assert 0 < got[0] < maxima(rows, "mixed")[0]  # the public test passes, the hidden one does not
    assert rows[("mixed", 1)]["status"] == "wrong" and "stage 1 keeps" in rows[("mixed", 1)]["message"]
    assert got[1] == 0 and rows[("mixed", 2)]["status"] == "error"
    assert "KeyError" in rows[("mixed", 2)]["message"]
    assert got[2] == maxima(rows, "mixed")[2]  # printing the key changes nothing
    feedback = (out / "feedback" / "mixed" / f"{NAME}.md").read_text()
    assert "wrong" in feedback and "KeyError" in feedback
    for text in (feedback, (out / "scores.csv").read_text()):
        assert "BEGIN HIDDEN TESTS" not in text and "check_stage" not in text


def test_a_looping_answer_is_cut_off_and_the_other_exercises_are_still_graded(graded):
    rows, _ = graded
    assert rows[("loops", 2)]["status"] == "time limit" and float(rows[("loops", 2)]["points"]) == 0
    assert points(rows, "loops")[0] == maxima(rows, "loops")[0]
    assert points(rows, "loops")[2] == maxima(rows, "loops")[2]


def test_predictions_are_recorded_per_student_and_exercise(graded):
    _, out = graded
    with (out / "predictions.csv").open() as handle:
        found = [(r["student"], r["exercise"]) for r in csv.DictReader(handle)]
    assert ("blank", "1") in found and ("full", "3") in found and len(found) == 12


def test_a_notebook_past_its_limit_is_graded_zero_and_the_next_one_still_graded(course, tmp_path):
    instructor = with_parameters(nbformat.read(course / "instructor" / f"{NAME}.ipynb", as_version=4))
    submit(tmp_path / "in", "slow", instructor)
    (tmp_path / "in" / "other").mkdir()
    (tmp_path / "in" / "other" / f"{NAME}.ipynb").write_text("not a notebook")
    scores = grade_submissions(tmp_path / "in", course, tmp_path / "out", cell_timeout=5, notebook_timeout=3)
    by_student = {(s.student, s.exercise): s for s in scores}
    assert {by_student[("slow", n)].status for n in (1, 2, 3)} == {"time limit"}
    assert sum(by_student[("slow", n)].points for n in (1, 2, 3)) == 0
    other = by_student[("other", 1)]
    assert other.status == "not graded" and "not a readable notebook" in other.message


def test_grades_never_go_inside_the_submissions(course, tmp_path):
    (tmp_path / "subs").mkdir()
    with pytest.raises(GradingError, match="outside the submissions"):
        grade_submissions(tmp_path / "subs", course, tmp_path / "subs" / "grades")
