"""The rules an exercise notebook's tests keep (littlekit.course.editions), on small notebooks built
here: each broken rule is refused with the file, exercise and cell named, and the nbgrader source
version blanks what the student must write and keeps what the student must not change."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from littlekit import paper
from littlekit.analysis.notebook import Chapter
from littlekit.config import REPO_ROOT
from littlekit.course.editions import (
    CourseError,
    assigned_names,
    check_exercise_notebook,
    nbgrader_source,
)

EXERCISES = sorted((REPO_ROOT / "notebooks" / "exercises").glob("ex[0-9][0-9]_*.ipynb"))


def notebook(test: str = "assert answer == 4, 'answer should be four'", points: int = 2,
             answer: str = "answer = 2 + 2") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("n = 2", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("out_dir = '.'\nhelper = n"),
        nbformat.v4.new_markdown_cell(
            "## Exercise 1 · Add\n\nPredict the sum of {glue:text}`n_shown` and two; assign it to `answer`."),
        nbformat.v4.new_markdown_cell("**Your prediction**: ...", metadata={"tags": ["prediction"]}),
        nbformat.v4.new_code_cell(answer, metadata={"tags": ["hide-cell", "solution"]}),
        nbformat.v4.new_code_cell(test, metadata={"tags": ["autograde"], "littlekit": {"points": points}}),
        nbformat.v4.new_markdown_cell("Expected answer: four.", metadata={"tags": ["instructor"]}),
        nbformat.v4.new_markdown_cell("## Outputs"),
    ]
    return nb


def write(nb: nbformat.NotebookNode, tmp_path: Path) -> Path:
    path = tmp_path / "ex99_toy.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_well_formed_exercise_passes_with_its_points(tmp_path):
    [exercise] = check_exercise_notebook(write(notebook(), tmp_path))
    assert exercise.points == 2 and exercise.title == "Exercise 1 · Add"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"test": "assert helper == 2, 'setup'"}, "a blank answer could pass it"),
        ({"test": "assert True"}, "a blank answer could pass it"),
        ({"test": "import pandas\nassert pandas.read_csv(out_dir) is not None, 'file'"}, "names nothing"),
        ({"test": "assert answer and out_dir, 'reads the folder'"}, "reads out_dir"),
        ({"points": 0}, "has no points"),
        ({"test": "assert answer == 4\n### BEGIN HIDDEN TESTS\nassert answer"}, "unbalanced"),
        ({"answer": "helper = 5"}, "a blank answer could pass it"),  # a name setup also assigns
        ({"test": "assert answer ==, 'x'"}, "does not parse"),
    ],
)
def test_a_test_a_blank_answer_could_pass_is_refused_naming_file_and_cell(tmp_path, kwargs, message):
    with pytest.raises(CourseError, match=message) as refused:
        check_exercise_notebook(write(notebook(**kwargs), tmp_path))
    assert "ex99_toy.ipynb" in str(refused.value)


def test_a_name_the_tests_read_that_the_text_never_tells_is_refused(tmp_path):
    nb = notebook(test="assert total == 4, 'the sum'", answer="total = 2 + 2")
    with pytest.raises(CourseError, match=r"its tests read \['total'\], which its text never names"):
        check_exercise_notebook(write(nb, tmp_path))
    nb = notebook(test="assert all(answer == a for a in [answer]), 'the sum'")  # `a` is the test's own
    check_exercise_notebook(write(nb, tmp_path))


def test_glue_is_written_in_code_font_and_printed_before_the_first_exercise():
    source = nbgrader_source(notebook(), "ex99_toy")
    heading = next(i for i, c in enumerate(source.cells) if c.source.startswith("## Exercise"))
    assert "`n_shown`" in source.cells[heading].source and "{glue:" not in source.cells[heading].source
    assert source.cells[heading - 1].source.startswith("chapter.show_glued()")
    assert source.cells[heading - 1].metadata.nbgrader["locked"]


def test_a_chapter_prints_what_its_prose_quotes(tmp_path, capsys):
    chapter = Chapter(run=tmp_path, out_dir=tmp_path, data_root=tmp_path)
    chapter.glue("max_aoa", 11.0)
    chapter.glue("bands", "K-2, 3-5")
    chapter.glue_paper("encoder_max_tokens")
    capsys.readouterr()  # the glue's own (hidden) display
    chapter.show_glued()
    shown = paper.number("encoder_max_tokens").shown
    expected = f"max_aoa = 11.0\nbands = K-2, 3-5\npaper_encoder_max_tokens = {shown}\n"
    assert capsys.readouterr().out == expected


def test_an_exercise_without_tests_is_refused(tmp_path):
    nb = notebook()
    del nb.cells[5]
    with pytest.raises(CourseError, match="exercise 1 .*no cell tagged 'autograde'"):
        check_exercise_notebook(write(nb, tmp_path))


def test_assigned_names_are_the_cells_globals_only():
    source = "import numpy as np\nx, (y, z) = 1, (2, 3)\nfor k in range(2):\n    w = k\n" \
             "def f(a):\n    local = a\n[q for q in range(3)]\nwith open('f') as handle:\n    pass"
    assert assigned_names(source) == {"np", "x", "y", "z", "k", "w", "f", "handle"}


def test_nbgrader_source_blanks_answers_locks_setup_and_tests_and_leaves_instructor_cells_out():
    source = nbgrader_source(notebook(), "ex99_toy")
    by_tag = {tuple(c.metadata.get("tags", [])): c for c in source.cells}
    answer = by_tag[("hide-cell", "solution")]
    assert answer.source.startswith("### BEGIN SOLUTION") and answer.metadata.nbgrader["solution"]
    assert not answer.metadata.nbgrader["locked"]
    tests = by_tag[("autograde",)]
    assert tests.metadata.nbgrader["grade"] and tests.metadata.nbgrader["points"] == 2
    assert tests.metadata.nbgrader["locked"]
    assert by_tag[()].metadata.nbgrader["locked"]  # setup cells cannot be changed to pass a test
    assert "nbgrader" not in by_tag[("parameters",)].metadata  # the student may set sizes
    assert "nbgrader" not in by_tag[("prediction",)].metadata  # the student writes here
    assert not any("instructor" in c.metadata.get("tags", []) for c in source.cells)
    kept = nbgrader_source(notebook(), "ex99_toy", keep_instructor=True)
    assert any("instructor" in c.metadata.get("tags", []) for c in kept.cells)
    assert len({c.metadata.nbgrader["grade_id"] for c in source.cells if "nbgrader" in c.metadata}) == 6


@pytest.mark.parametrize("path", EXERCISES, ids=[p.stem for p in EXERCISES])
def test_every_exercise_notebook_keeps_the_rules_with_two_to_four_points_an_exercise(path):
    exercises = check_exercise_notebook(path)
    assert all(2 <= ex.points <= 4 for ex in exercises), [(ex.title, ex.points) for ex in exercises]
