"""The course part of the book: a syllabus in the table of contents, and for every chapter an
exercise notebook with learning goals, prerequisites, 2-4 exercises that each ask for a prediction
and carry a collapsed solution that the book build executes (tests/book/test_notebooks.py and
tests/book/test_notebooks_training.py run them with tiny parameters)."""

from __future__ import annotations

import os
import re
import sys

import nbformat
import pytest
import yaml

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import run_notebooks as rn  # noqa: E402
import run_times  # noqa: E402

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


# --- sessions: the syllabus's table is the one list of what each session runs ---------------------

COURSE = REPO_ROOT / "book" / "course"
DOC_TARGET = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")


def test_every_chapter_and_exercise_page_is_in_exactly_one_numbered_session():
    sessions = rn.sessions()
    assert [s.number for s in sessions] == list(range(1, len(sessions) + 1))
    chapters = [name for s in sessions for name in s.chapters]
    exercises = [name for s in sessions for name in s.exercises]
    assert sorted(chapters) == [c.name[:2] for c in CHAPTERS]
    assert sorted(exercises) == [f"ex{c.name[:2]}" for c in CHAPTERS]


def test_the_syllabus_includes_the_session_times_the_build_writes_and_links_the_instructor_page():
    text = (COURSE / "syllabus.md").read_text()
    assert f"```{{include}} ../executed/{run_times.SESSIONS_PAGE_NAME}\n```" in text
    assert "## Session 0: setup" in text and "course/student/" in text
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    course = next(part for part in toc["parts"] if part["caption"] == "Course")
    assert course["chapters"][1]["file"] == "book/course/instructor"


@pytest.mark.parametrize("page", sorted(COURSE.glob("*.md")), ids=lambda p: p.name)
def test_every_doc_link_of_a_course_page_names_a_page_of_the_book(page):
    toc = (REPO_ROOT / "_toc.yml").read_text()
    documents = set(re.findall(r"file: (\S+)", toc)) | {yaml.safe_load(toc)["root"]}
    for target in DOC_TARGET.findall(page.read_text()):
        document = os.path.normpath((page.parent / target).relative_to(REPO_ROOT)).replace(os.sep, "/")
        assert document in documents, f"{page.name}: {{doc}}`{target}` is not in _toc.yml"


def test_a_selection_adds_the_chapters_it_reads_and_nothing_else():
    notebooks = rn.find_notebooks(REPO_ROOT / "notebooks")
    picked = [rn.chapter(n) for n in rn.selection(notebooks, ["ex09_training.ipynb"], rn.UPSTREAM)]
    assert picked == [*rn.with_upstream(["09"], rn.UPSTREAM), "ex09"]
    assert "01" not in picked and "05" not in picked  # chapter 9 reads neither
    with pytest.raises(ValueError, match="no notebook 99"):
        rn.selection(notebooks, ["99"], rn.UPSTREAM)


@pytest.mark.slow
def test_the_runner_executes_only_a_sessions_notebooks_and_the_chapters_they_read(
    tmp_path, monkeypatch, capsys
):
    source = tmp_path / "notebooks"
    (source / "exercises").mkdir(parents=True)
    for name in ("01_first", "02_second", "03_apart", "exercises/ex02_second", "exercises/ex03_apart"):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({name!r})")])
        nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
        nbformat.write(nb, source / f"{name}.ipynb")
    syllabus = tmp_path / "syllabus.md"
    syllabus.write_text(
        "## Sessions\n\n| Session | Chapters | Exercises |\n|---|---|---|\n"
        "| 1 | {doc}`2 <../executed/02_second>` | {doc}`2 <../executed/exercises/ex02_second>` |\n"
    )
    monkeypatch.setattr(rn, "UPSTREAM", {"01": (), "02": ("01",), "03": ()})
    monkeypatch.setattr(rn, "SYLLABUS", syllabus)
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    executed = tmp_path / "executed"
    arguments = ["--notebooks", str(source), "--executed", str(executed)]
    assert rn.main([*arguments, "--session", "1"]) == 0
    assert "(3 executed)" in capsys.readouterr().out
    assert sorted(p.name for p in executed.rglob("*.ipynb")) == [
        "01_first.ipynb",
        "02_second.ipynb",
        "ex02_second.ipynb",
    ]
    assert rn.main([*arguments, "--only", "03"]) == 0  # chapter 3 reads nothing: it runs alone
    out = capsys.readouterr().out
    assert "(1 executed)" in out and "01_first" not in out
    # --force re-executes the selection only (one notebook here, not the session's three)
    assert rn.main([*arguments, "--only", "03", "--force"]) == 0
    out = capsys.readouterr().out
    assert "(1 executed)" in out and "01_first" not in out
    with pytest.raises(SystemExit):
        rn.main([*arguments, "--session", "7"])
    assert "no session 7" in capsys.readouterr().err
