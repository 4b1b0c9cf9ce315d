"""An exercise notebook's exercises, the rules its tests keep, and its nbgrader source version.

An exercise runs from a markdown cell starting "## Exercise" to the next one (or to a "## Discussion"
or "## Outputs" heading). Its cells are told apart by tag:

- `solution`: the student's answer; the student edition blanks the whole cell;
- `autograde`: the exercise's tests, worth `metadata.littlekit.points`; lines between
  `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS` are left out of the student edition;
- `prediction`: the markdown cell where the student writes a prediction before running anything;
- `instructor`: expected answers and rubrics, left out of the student edition.

The exercise notebook itself is the instructor edition, so every run of it (the book's build, the
tiny runs in the tests) runs the tests against the solutions. `check_exercise_notebook` enforces what
makes a test worth its points: it names a value only the exercise's answer assigns (a blank answer
then fails it), and it never reads the answer's output folder (files an earlier run may have left).
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

SOLUTION, TESTS, PREDICTION, INSTRUCTOR = "solution", "autograde", "prediction", "instructor"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
EXERCISE_HEADING = "## Exercise"
SECTION_ENDS = ("## Discussion", "## Outputs")
OUTPUT_FOLDER_NAME = "out_dir"  # the exercise notebooks' folder for what the answers write
NBGRADER_SCHEMA = 3
STUDENT_NOTE = (
    "\n\n**Student edition.** Each answer cell is blank (`raise NotImplementedError()`): write your answer"
    " there, naming what its exercise's *To hand in* asks for, and run the test cell under it. Some tests are"
    " hidden and run only when the notebook is graded. Write each prediction in its cell before you run"
    " anything."
)
# MyST's glue role, rendered by the book only: an edition writes the key in code font instead, and
# a cell before the first exercise prints each key's value (`Chapter.show_glued`)
GLUE_ROLE = re.compile(r"\{glue:text\}`([A-Za-z0-9_]+)`")
SHOW_GLUED = "chapter.show_glued()  # the values the instructions quote as `name` (the book shows them)"


class CourseError(ValueError):
    """An exercise notebook breaks the course's rules; the message names the file and the cell."""


@dataclass
class Exercise:
    """One exercise of a notebook: its heading and the indices of its cells by kind."""

    number: int  # 1-based, in notebook order
    title: str
    heading: int
    cells: list[int] = field(default_factory=list)
    solutions: list[int] = field(default_factory=list)
    tests: list[int] = field(default_factory=list)
    points: int = 0


def tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def test_points(cell: dict) -> int:
    """A test cell's points, from metadata.littlekit.points (0 when missing)."""
    points = cell.get("metadata", {}).get("littlekit", {}).get("points", 0)
    return points if isinstance(points, int) and not isinstance(points, bool) else 0


def exercises(notebook: nbformat.NotebookNode) -> list[Exercise]:
    """The notebook's exercises in order, each with its cells sorted by kind."""
    found: list[Exercise] = []
    current: Exercise | None = None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown" and cell.source.startswith(EXERCISE_HEADING):
            title = cell.source.splitlines()[0].lstrip("# ").strip()
            current = Exercise(number=len(found) + 1, title=title, heading=index)
            found.append(current)
            continue
        if cell.cell_type == "markdown" and cell.source.startswith(SECTION_ENDS):
            current = None
        if current is None:
            continue
        current.cells.append(index)
        if SOLUTION in tags(cell):
            current.solutions.append(index)
        if TESTS in tags(cell):
            current.tests.append(index)
            current.points += test_points(cell)
    return found


def assigned_names(source: str) -> set[str]:
    """The global names a cell binds (assignments, imports, defs, loop targets), not those local to a
    function, lambda or comprehension."""
    bound: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            return
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return bound


def referenced_names(source: str) -> set[str]:
    """Every name a cell reads that the cell does not bind itself anywhere (a loop, comprehension or
    lambda variable is the cell's own, whatever the answer left under that name)."""
    nodes = list(ast.walk(ast.parse(source)))
    own = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {n.arg for n in nodes if isinstance(n, ast.arg)}
    return {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own


def _parse(path: Path, index: int, cell: dict) -> None:
    try:
        ast.parse(cell.source)
    except SyntaxError as exc:
        raise CourseError(f"{path.name}: cell {index} does not parse: {exc}") from exc


def check_exercise_notebook(path: Path) -> list[Exercise]:
    """The notebook's exercises, after checking every one carries a solution and tests worth
    points that a blank answer fails; raises CourseError naming the file, exercise and cell."""
    notebook = nbformat.read(path, as_version=4)
    found = exercises(notebook)
    if not found:
        raise CourseError(f"{path.name}: no '{EXERCISE_HEADING}' heading")
    code = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    for index, cell in code:
        _parse(path, index, cell)
    answers_of = {ex.number: set().union(*(assigned_names(notebook.cells[i].source) for i in ex.solutions))
                  for ex in found}
    elsewhere = set().union(*(assigned_names(c.source) for i, c in code if SOLUTION not in tags(c)))
    for ex in found:
        _check_exercise(path, notebook, ex, answers_of[ex.number] - elsewhere)
        _check_told(path, notebook, ex, answers_of[ex.number] - elsewhere)
    return found


def _check_told(path: Path, notebook: nbformat.NotebookNode, ex: Exercise, answer_only: set[str]) -> None:
    """Every name of the answer that a test reads is named, in code font, in the exercise's text
    the student sees (its heading or another markdown cell that is not the instructor's): a student
    cannot be graded on a name nobody told them to assign."""
    shown = [notebook.cells[ex.heading].source] + [
        notebook.cells[i].source for i in ex.cells
        if notebook.cells[i].cell_type == "markdown" and INSTRUCTOR not in tags(notebook.cells[i])
    ]
    text = "\n".join(shown)
    read = set().union(*(referenced_names(notebook.cells[i].source) for i in ex.tests)) & answer_only
    if untold := sorted(name for name in read if f"`{name}`" not in text):
        raise CourseError(f"{path.name}: exercise {ex.number} ({ex.title}): its tests read {untold}, "
                          "which its text never names in code font: tell the student what to assign")


def _check_exercise(path: Path, notebook: nbformat.NotebookNode, ex: Exercise, answer_only: set[str]) -> None:
    where = f"{path.name}: exercise {ex.number} ({ex.title})"
    if not ex.solutions:
        raise CourseError(f"{where}: no cell tagged '{SOLUTION}'")
    if not ex.tests:
        raise CourseError(f"{where}: no cell tagged '{TESTS}'")
    for index in ex.tests:
        cell = notebook.cells[index]
        if cell.cell_type != "code":
            raise CourseError(f"{where}: cell {index} is tagged '{TESTS}' but is not code")
        if test_points(cell) < 1:
            raise CourseError(f"{where}: test cell {index} has no points (metadata.littlekit.points, "
                              "a positive integer)")
        if index < max(ex.solutions):
            raise CourseError(f"{where}: test cell {index} comes before the answer it tests")
        names = referenced_names(cell.source)
        if not names & answer_only:
            raise CourseError(
                f"{where}: test cell {index} names nothing only the answer assigns, so a blank answer "
                f"could pass it (the answer assigns {sorted(answer_only) or 'nothing of its own'})"
            )
        if OUTPUT_FOLDER_NAME in names:
            raise CourseError(f"{where}: test cell {index} reads {OUTPUT_FOLDER_NAME}, where an earlier run "
                              "may have left the files it checks: test the answer's values instead")
        _check_hidden_markers(f"{where}: test cell {index}", cell.source)


def _check_hidden_markers(where: str, source: str) -> None:
    begins = [line.strip() == HIDDEN_BEGIN for line in source.splitlines()].count(True)
    ends = [line.strip() == HIDDEN_END for line in source.splitlines()].count(True)
    if begins != ends or (begins and source.index(HIDDEN_BEGIN) > source.index(HIDDEN_END)):
        raise CourseError(f"{where}: unbalanced '{HIDDEN_BEGIN}' / '{HIDDEN_END}'")


def nbgrader_source(notebook: nbformat.NotebookNode, assignment: str,
                    keep_instructor: bool = False) -> nbformat.NotebookNode:
    """The notebook in nbgrader's source format: answers between solution markers, tests as locked
    graded cells, setup cells locked, the parameters and prediction cells left for the student; the
    instructor's cells are kept only for the instructor edition (nbgrader's source leaves them out,
    so the student edition never has them)."""
    source = _without_glue(copy.deepcopy(notebook))
    kept = []
    for index, cell in enumerate(source.cells):
        cell_tags = tags(cell)
        if INSTRUCTOR in cell_tags:
            if keep_instructor:
                kept.append(cell)
            continue
        grade_id = f"{assignment}_cell{index}"
        if SOLUTION in cell_tags:
            cell.source = f"{SOLUTION_BEGIN}\n{cell.source}\n{SOLUTION_END}"
            cell.metadata["nbgrader"] = _nbgrader(grade_id, solution=True, locked=False)
        elif TESTS in cell_tags:
            cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=True, locked=True, points=test_points(cell))
        elif not ({"parameters", PREDICTION} & set(cell_tags)):
            cell.metadata["nbgrader"] = _nbgrader(grade_id, locked=True)
        kept.append(cell)
    source.cells = kept
    if not keep_instructor and source.cells and source.cells[0].cell_type == "markdown":
        source.cells[0].source += STUDENT_NOTE
    return source


def _without_glue(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Glue roles in code font, and a cell printing their values before the first exercise."""
    quoted = False
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and GLUE_ROLE.search(cell.source):
            cell.source = GLUE_ROLE.sub(r"`\1`", cell.source)
            quoted = True
    found = exercises(notebook)
    if quoted and found:
        show = nbformat.v4.new_code_cell(SHOW_GLUED)
        show.id = "show-glued"
        notebook.cells.insert(found[0].heading, show)
    return notebook


def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
              points: int = 0) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
            "schema_version": NBGRADER_SCHEMA}
    if grade:
        meta["points"] = points
    return meta
