"""book/tools/course_downloads.py: the table of each exercise notebook's two editions that the
course pages include, read from the editions `littlekit course build` wrote."""

from __future__ import annotations

import sys

import nbformat
import pytest

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import course_downloads  # noqa: E402


def toy(points: list[int]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for number, worth in enumerate(points, 1):
        nb.cells += [
            nbformat.v4.new_markdown_cell(f"## Exercise {number} · toy"),
            nbformat.v4.new_code_cell(f"a{number} = 1", metadata={"tags": ["solution"]}),
            nbformat.v4.new_code_cell(f"assert a{number}", metadata={"tags": ["autograde"],
                                                                     "littlekit": {"points": worth}}),
        ]
    return nb


def test_a_row_per_notebook_with_links_exercises_and_points(tmp_path):
    executed = tmp_path / "executed"
    for edition in ("student", "instructor"):
        (executed / "course" / edition).mkdir(parents=True)
        nbformat.write(toy([2, 3]), executed / "course" / edition / "ex01_toy.ipynb")
    page = executed / "course_downloads.md"
    course_downloads.write_page(executed / "course", page, executed)
    rows = page.read_text().splitlines()
    assert rows[2] == ("| {doc}`ex01_toy <../executed/exercises/ex01_toy>` | {download}`student "
                       "<../executed/course/student/ex01_toy.ipynb>` | {download}`instructor "
                       "<../executed/course/instructor/ex01_toy.ipynb>` | 2 | 5 |")


def test_a_missing_instructor_edition_or_an_empty_course_is_refused(tmp_path):
    (tmp_path / "course" / "student").mkdir(parents=True)
    with pytest.raises(SystemExit, match="no student edition"):
        course_downloads.download_rows(tmp_path / "course", tmp_path)
    nbformat.write(toy([2]), tmp_path / "course" / "student" / "ex01_toy.ipynb")
    with pytest.raises(SystemExit, match="instructor/ex01_toy.ipynb is missing"):
        course_downloads.download_rows(tmp_path / "course", tmp_path)


def test_check_book_names_an_exercise_whose_editions_are_not_offered_for_download(tmp_path):
    import check_book

    exercises = tmp_path / "book" / "executed" / "exercises"
    exercises.mkdir(parents=True)
    for stem in ("ex01_toy", "ex02_toy"):
        (exercises / f"{stem}.html").write_text("<html></html>")
    assert check_book.course_download_problems(tmp_path) == [
        "book/course/instructor.html is missing: the book offers no course editions to download"]
    (tmp_path / "book" / "course").mkdir()
    links = "".join(f'<a href="../../_downloads/{h}/ex01_toy.ipynb">e</a>' for h in ("a1", "b2"))
    links += '<a href="../../_downloads/c3/ex02_toy.ipynb">only one edition</a>'
    (tmp_path / "book" / "course" / "instructor.html").write_text(f"<html><body>{links}</body></html>")
    assert check_book.course_download_problems(tmp_path) == [
        "book/course/instructor.html: no student and instructor edition of ex02_toy.ipynb to download"]
