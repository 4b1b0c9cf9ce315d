"""The course part of the book: a syllabus in the table of contents, and for every chapter an
exercise notebook with learning goals, prerequisites, 2-4 exercises that each ask for a prediction
and carry a collapsed solution that the book build executes (tests/book/test_notebooks.py and
tests/book/test_notebooks_training.py run them with tiny parameters)."""

from __future__ import annotations

import re

import nbformat
import pytest
import yaml

from littlekit.config import REPO_ROOT

CHAPTERS = sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = REPO_ROOT / "notebooks" / "exercises"


def exercise_notebook(chapter):
    return EXERCISES / f"ex{chapter.name}"


def test_the_course_is_in_the_table_of_contents_with_one_exercise_page_per_chapter():
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    course = next(part for part in toc["parts"] if part["caption"] == "Course")
    syllabus = course["chapters"][0]
    assert syllabus["file"] == "book/course/syllabus"
    assert [s["file"] for s in syllabus["sections"]] == [
        f"book/executed/exercises/ex{chapter.stem}" for chapter in CHAPTERS
    ]
    text = (REPO_ROOT / "book" / "course" / "syllabus.md").read_text()
    for chapter in CHAPTERS:  # every chapter and its exercises are scheduled in a session
        assert f"../executed/{chapter.stem}>" in text and f"../executed/exercises/ex{chapter.stem}>" in text


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_chapter_has_goals_prerequisites_and_exercises_with_solutions(chapter):
    path = exercise_notebook(chapter)
    assert path.is_file(), f"{path.name}: no exercise notebook for {chapter.name}"
    cells = nbformat.read(path, as_version=4).cells
    number = int(chapter.name[:2])
    head = cells[0].source
    assert head.startswith(f"# Exercises · {number} "), f"{path.name}: title"
    assert "**Learning goals.**" in head and "**Prerequisites.**" in head, path.name
    assert any("parameters" in c.metadata.get("tags", []) for c in cells), f"{path.name}: no parameters cell"
    assert any("params.check(" in c.source and "globals()" in c.source for c in cells), (
        f"{path.name}: parameters unchecked"
    )
    assert any(f'subfolder="ex{chapter.name[:2]}"' in c.source for c in cells), path.name
    exercises = [
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Exercise")
    ]
    assert 2 <= len(exercises) <= 4, f"{path.name}: {len(exercises)} exercises"
    for start, end in zip(exercises, [*exercises[1:], len(cells)], strict=True):
        title = cells[start].source.splitlines()[0]
        assert re.search(r"predict", cells[start].source, re.IGNORECASE), (
            f"{path.name}: {title} asks no prediction"
        )
        solutions = [c for c in cells[start + 1 : end] if "solution" in c.metadata.get("tags", [])]
        assert solutions, f"{path.name}: {title} has no solution cell"
        assert all("hide-cell" in c.metadata["tags"] for c in solutions), (
            f"{path.name}: {title} not collapsed"
        )
    assert all(not c.get("outputs") for c in cells if c.cell_type == "code"), (
        f"{path.name}: outputs committed"
    )
