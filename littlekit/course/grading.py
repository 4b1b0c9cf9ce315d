"""Build the course's editions and grade submissions with nbgrader, on the instructor's machine.

`build_course` writes, for each exercise notebook, the instructor edition (the notebook with nbgrader's
cell ids and solution markers), the
student edition (nbgrader's release: answers blanked, hidden tests and instructor cells left out)
and nbgrader's course folder (source, release, gradebook). `grade_submissions` grades a folder of
submitted notebooks, `<folder>/<student>/<notebook>.ipynb`, with nbgrader's autograder, one
notebook at a time in a child process it kills at the notebook's time limit (each cell also has its
own limit, after which nbgrader interrupts it and goes on). It writes `scores.csv` (a row per
student, notebook and exercise), `predictions.csv` (what each student wrote before running) and a
feedback file per student and notebook that gives points and the tests' messages but neither the
notebook's outputs nor the hidden tests' code, so a submission that prints the key or the hidden
tests shows them to nobody.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from littlekit.course.editions import (
    PREDICTION,
    check_exercise_notebook,
    exercises,
    nbgrader_source,
    tags,
)

COURSE_ID = "littlecurriculum"
NBGRADER_DIR, STUDENT_DIR, INSTRUCTOR_DIR = "nbgrader", "student", "instructor"
TIMEOUT_ERRORS = {"KeyboardInterrupt", "CellTimeoutError", "TimeoutError", "DeadKernelError"}
SCORE_FIELDS = ["student", "notebook", "exercise", "title", "points", "max_points", "status", "message"]


class GradingError(RuntimeError):
    """The course folder or the submissions folder cannot be used; the message names it."""


def nbgrader_args(course: Path) -> list[str]:
    root = course / NBGRADER_DIR
    return [f"--CourseDirectory.root={root}", f"--CourseDirectory.course_id={COURSE_ID}",
            f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}", "--log-level=WARN"]


def run_nbgrader(args: list[str], course: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """`nbgrader <args>` in a child process of its own session, killed with its kernel at `timeout`."""
    command = [sys.executable, "-m", "nbgrader", *args, *nbgrader_args(course)]
    # nbgrader runs `alembic` from PATH to open its gradebook: the one installed beside this python
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path}
    child = subprocess.Popen(command, cwd=course / NBGRADER_DIR, stdout=subprocess.PIPE, env=env,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the kernel runs in the same session
        out, _ = child.communicate()
        raise
    return subprocess.CompletedProcess(command, child.returncode, out, "")


def build_course(exercise_dir: Path, course: Path, names: list[str] | None = None) -> list[str]:
    """Write both editions of every exercise notebook (or of `names`) under `course`; returns the
    assignments written. Refuses a course folder that already holds graded submissions."""
    exercise_dir, course = exercise_dir.resolve(), course.resolve()  # nbgrader's root must be absolute
    graded = course / NBGRADER_DIR / "autograded"
    if graded.is_dir() and any(graded.iterdir()):
        raise GradingError(f"{course} holds graded submissions: build the course into another folder")
    paths = sorted(exercise_dir.glob("ex[0-9][0-9]_*.ipynb"))
    if names:
        paths = [p for p in paths if p.stem in names]
        if missing := sorted(set(names) - {p.stem for p in paths}):
            raise GradingError(f"no exercise notebook {missing} in {exercise_dir}")
    if not paths:
        raise GradingError(f"no exercise notebooks (ex*.ipynb) in {exercise_dir}")
    for sub in (STUDENT_DIR, INSTRUCTOR_DIR):
        (course / sub).mkdir(parents=True, exist_ok=True)
    for path in paths:
        check_exercise_notebook(path)
        _build_one(path, course)
    return [p.stem for p in paths]


def _build_one(path: Path, course: Path) -> None:
    assignment = path.stem
    source_dir = course / NBGRADER_DIR / "source" / assignment
    if source_dir.exists():
        shutil.rmtree(source_dir)
    source_dir.mkdir(parents=True)
    notebook = nbformat.read(path, as_version=4)
    nbformat.write(nbgrader_source(notebook, assignment), source_dir / path.name)
    done = run_nbgrader(["generate_assignment", assignment, "--force"], course)
    release = course / NBGRADER_DIR / "release" / assignment / path.name
    if done.returncode != 0 or not release.is_file():
        raise GradingError(f"nbgrader could not make the student edition of {path.name}:\n{done.stdout}")
    shutil.copyfile(release, course / STUDENT_DIR / path.name)
    # the instructor edition: everything, with nbgrader's cell ids, so it can be graded like a submission
    instructor = nbgrader_source(notebook, assignment, keep_instructor=True)
    nbformat.write(instructor, course / INSTRUCTOR_DIR / path.name)


@dataclass
class ExerciseScore:
    student: str
    notebook: str
    exercise: int
    title: str
    points: float
    max_points: int
    status: str  # passed, wrong, error, time limit, not graded
    message: str


def grade_submissions(submissions: Path, course: Path, out: Path, *, cell_timeout: int = 600,
                      notebook_timeout: int = 3600) -> list[ExerciseScore]:
    """Grade `submissions/<student>/<notebook>.ipynb` against the course built in `course`; write
    scores.csv, predictions.csv and feedback/<student>/<notebook>.md under `out`."""
    submissions, course, out = submissions.resolve(), course.resolve(), out.resolve()
    if not submissions.is_dir():
        raise GradingError(f"no submissions folder {submissions}")
    if out == submissions or submissions in out.parents:
        raise GradingError(f"write the grades outside the submissions folder ({out} is inside {submissions})")
    sources = course / NBGRADER_DIR / "source"
    assignments = {p.name for p in sources.iterdir()} if sources.is_dir() else set()
    if not assignments:
        raise GradingError(f"{course} holds no built course: run `littlekit course build` first")
    scores, predictions = [], []
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for submitted in sorted(student_dir.glob("*.ipynb")):
            if submitted.stem not in assignments:
                scores.append(ExerciseScore(student_dir.name, submitted.stem, 0, "", 0.0, 0, "not graded",
                                            f"{submitted.name} is no notebook of this course"))
                continue
            graded, written = grade_one(student_dir.name, submitted, course, cell_timeout, notebook_timeout)
            scores += graded
            predictions += written
            write_feedback(out / "feedback" / student_dir.name / f"{submitted.stem}.md", graded)
    write_rows(out / "scores.csv", SCORE_FIELDS, [asdict(s) for s in scores])
    write_rows(out / "predictions.csv", ["student", "notebook", "exercise", "prediction"], predictions)
    return scores


def grade_one(student: str, submitted: Path, course: Path, cell_timeout: int,
              notebook_timeout: int) -> tuple[list[ExerciseScore], list[dict]]:
    """One student's notebook: its exercises' scores, and the predictions it records."""
    assignment = submitted.stem
    source = nbformat.read(course / NBGRADER_DIR / "source" / assignment / submitted.name, as_version=4)
    try:
        notebook = nbformat.read(submitted, as_version=4)
    except Exception as exc:  # not JSON, not a notebook: this submission cannot be graded
        why = f"{submitted.name} is not a readable notebook: {exc}"
        return _ungraded(student, assignment, source, why), []
    target = course / NBGRADER_DIR / "submitted" / student / assignment
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    nbformat.write(notebook, target / submitted.name)
    args = ["autograde", assignment, f"--student={student}", "--force", f"--Execute.timeout={cell_timeout}"]
    try:
        done = run_nbgrader(args, course, timeout=notebook_timeout)
    except subprocess.TimeoutExpired:
        why = f"the notebook ran past its limit of {notebook_timeout} s"
        return (_ungraded(student, assignment, source, why, status="time limit"),
                _predictions(student, assignment, notebook))
    autograded = course / NBGRADER_DIR / "autograded" / student / assignment / submitted.name
    if done.returncode != 0 or not autograded.is_file():
        last = done.stdout.strip().splitlines()[-1:] or ["no output"]
        return _ungraded(student, assignment, source, f"nbgrader could not grade it: {last[0]}"), []
    executed = nbformat.read(autograded, as_version=4)
    return _scores(student, assignment, source, executed, course), _predictions(student, assignment, notebook)


def _ungraded(student: str, assignment: str, source: nbformat.NotebookNode, why: str,
              status: str = "not graded") -> list[ExerciseScore]:
    return [ExerciseScore(student, assignment, ex.number, ex.title, 0.0, ex.points, status, why)
            for ex in exercises(source)]


def _scores(student: str, assignment: str, source: nbformat.NotebookNode, executed: nbformat.NotebookNode,
            course: Path) -> list[ExerciseScore]:
    """Points per exercise from nbgrader's gradebook; status and message from the executed cells."""
    from nbgrader.api import Gradebook

    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in executed.cells}
    rows = []
    db_url = f"sqlite:///{course / NBGRADER_DIR / 'gradebook.db'}"
    with Gradebook(db_url, COURSE_ID) as gradebook:
        for ex in exercises(source):
            ids = [source.cells[i].metadata["nbgrader"]["grade_id"] for i in ex.tests]
            answer_ids = [source.cells[i].metadata["nbgrader"]["grade_id"] for i in ex.solutions]
            points = sum(gradebook.find_grade(g, assignment, assignment, student).score for g in ids)
            status, message = _status([by_id.get(g) for g in answer_ids], [by_id.get(g) for g in ids])
            rows.append(ExerciseScore(student, assignment, ex.number, ex.title, float(points), ex.points,
                                      status, message))
    return rows


def _status(answers: list, tests: list) -> tuple[str, str]:
    """The first failure in the exercise's answer cells, then its test cells: (status, message)."""
    for kind, cells in (("answer", answers), ("test", tests)):
        for cell in cells:
            if cell is None:
                return "error", f"the exercise's {kind} cell is missing from the graded notebook"
            for output in cell.get("outputs", []):
                if output.get("output_type") != "error":
                    continue
                name, value = output.get("ename", ""), output.get("evalue", "")
                if name in TIMEOUT_ERRORS:
                    return "time limit", f"the {kind} was cut off at the cell's time limit ({name})"
                if kind == "test" and name == "AssertionError":
                    return "wrong", value or "a test failed"
                return "error", f"the {kind} raised {name}: {value}"[:500]
    return "passed", ""


def _predictions(student: str, assignment: str, notebook: nbformat.NotebookNode) -> list[dict]:
    """The prediction cells as the student left them, numbered by the exercise they open."""
    found = []
    for ex in exercises(notebook):
        for index in ex.cells:
            cell = notebook.cells[index]
            if cell.cell_type == "markdown" and PREDICTION in tags(cell):
                found.append({"student": student, "notebook": assignment, "exercise": ex.number,
                              "prediction": cell.source.strip()})
    return found


def write_feedback(path: Path, scores: list[ExerciseScore]) -> None:
    """Points and messages per exercise; no outputs and no test code, hidden or not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    total, most = sum(s.points for s in scores), sum(s.max_points for s in scores)
    lines = [f"# {scores[0].notebook if scores else path.stem}: {total:g} of {most} points", ""]
    for s in scores:
        lines.append(f"- {s.title or s.notebook}: {s.points:g} of {s.max_points}, {s.status}"
                     + (f": {s.message}" if s.message else ""))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_rows(path: Path, fields: list[str], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
