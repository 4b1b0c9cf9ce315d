"""The run-time page (book/tools/run_times.py) from executed notebooks as papermill leaves them: each
notebook's time, the time with the chapters it reads, and the build's commit, machine and date."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import run_times  # noqa: E402
import scorecard  # noqa: E402


def executed_notebook(path: Path, seconds: float | None, cpu: float | None = None) -> None:
    metadata: dict = {"papermill": {"start_time": "2026-03-04T05:06:07+00:00"}}
    if seconds is not None:
        metadata["papermill"]["duration"] = seconds
    if cpu is not None:
        metadata["littlekit"] = {"cpu_seconds": cpu}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))


def test_the_page_times_each_notebook_with_the_chapters_it_reads_under_the_build_header(tmp_path):
    executed_notebook(tmp_path / "02_llm_judge.ipynb", 14.2)
    executed_notebook(tmp_path / "03_fasttext_classifier.ipynb", 640.4)  # reads chapter 2
    executed_notebook(tmp_path / "exercises" / "ex03_fasttext_classifier.ipynb", 30.0, cpu=25.0)
    executed_notebook(tmp_path / "05_symbolic_filter.ipynb", None)  # not timed: left out
    assert run_times.main(["--executed", str(tmp_path)]) == 0
    page = (tmp_path / "run_times.md").read_text()
    header = scorecard.build_header()
    assert page.startswith("# Run times\n")
    assert f"commit `{header['commit']}`" in page and scorecard.cpu_model() in page
    assert f"{os.cpu_count()} cores" in page and header["date"][:10] in page
    rows = [line.replace("\u00a0", " ") for line in page.splitlines() if line.startswith("| ")]
    assert rows == [
        "| notebook | wall | CPU | with the chapters it reads | executed |",
        "| {doc}`02_llm_judge` | 14 s | — | 14 s | 2026-03-04 |",
        "| {doc}`03_fasttext_classifier` | 10 min 40 s | — | 10 min 55 s | 2026-03-04 |",
        "| **all 2, one after another** | **10 min 55 s** | — | | |",
        "| notebook | wall | CPU | with the chapters it reads | executed |",
        "| {doc}`exercises/ex03_fasttext_classifier` | 30 s | 25 s | 11 min 25 s | 2026-03-04 |",
        "| **all 1, one after another** | **30 s** | 25 s | | |",
    ]
    # the same times RESULTS.md lists
    assert {t.stem: t.wall_s for t in run_times.timings(tmp_path)} == scorecard.chapter_seconds(tmp_path)


def test_without_cpu_times_or_upstream_chapters_the_page_says_less(tmp_path):
    executed_notebook(tmp_path / "09_training.ipynb", 4000.0)  # reads chapter 8, not run here
    assert run_times.main(["--executed", str(tmp_path)]) == 0
    page = (tmp_path / "run_times.md").read_text()
    rows = [line.replace("\u00a0", " ") for line in page.splitlines() if line.startswith("| ")]
    assert rows[0] == "| notebook | wall | with the chapters it reads | executed |"
    assert rows[1] == "| {doc}`09_training` | 1 h 06 min | — | 2026-03-04 |"


def test_no_timed_notebook_writes_no_page(tmp_path, capsys):
    assert run_times.main(["--executed", str(tmp_path)]) == 1
    assert "no timed notebooks" in capsys.readouterr().err
    assert not (tmp_path / "run_times.md").exists()


SYLLABUS_ROWS = """# A course

## Sessions

| Session | Chapters | Topic | Prepare | Exercises |
|---|---|---|---|---|
| 1 | {doc}`../intro`, {doc}`1 <../executed/01_aoa>` | AoA | - | {doc}`1 <../executed/exercises/ex01_aoa>` |
| 2 | {doc}`3 <../executed/03_fasttext>` | fastText | read | {doc}`3 <../executed/exercises/ex03_fasttext>` |
| 3 | {doc}`4 <../executed/04_encoder>` | encoder | read | |

## Projects

| 4 | {doc}`5 <../executed/05_symbolic>` | not a session: after the table's section |
"""


def test_the_session_table_times_each_session_with_the_chapters_it_reads(tmp_path):
    syllabus = tmp_path / "syllabus.md"
    syllabus.write_text(SYLLABUS_ROWS)
    executed = tmp_path / "executed"
    executed_notebook(executed / "01_age_of_acquisition.ipynb", 50.0)
    executed_notebook(executed / "exercises" / "ex01_age_of_acquisition.ipynb", 12.0)
    executed_notebook(executed / "02_llm_judge.ipynb", 14.0)
    executed_notebook(executed / "03_fasttext_classifier.ipynb", 640.0)  # reads chapter 2
    executed_notebook(executed / "exercises" / "ex03_fasttext_classifier.ipynb", 30.0)
    # chapter 4 not timed: its session has no times
    assert run_times.main(["--executed", str(executed), "--syllabus", str(syllabus)]) == 0
    page = (executed / run_times.SESSIONS_PAGE_NAME).read_text().replace("\u00a0", " ")
    header = scorecard.build_header()
    assert f"commit `{header['commit']}`" in page and f"{os.cpu_count()} cores" in page
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| 1 | chapter 1; exercise page 1 | none | 1 min 02 s | 1 min 02 s | `--session 1` |",
        "| 2 | chapter 3; exercise page 3 | 2 | 11 min 10 s | 11 min 24 s | `--session 2` |",
        "| 3 | chapter 4 | 2, 3 | — | — | `--session 3` |",
    ]
    disk = next(line for line in page.splitlines() if line.startswith("Disk on the build machine"))
    assert "the environment `.venv/`" in disk and "the run folder `runs/default/`" in disk


def test_a_syllabus_without_sessions_is_refused(tmp_path):
    executed_notebook(tmp_path / "executed" / "01_age_of_acquisition.ipynb", 5.0)
    syllabus = tmp_path / "syllabus.md"
    syllabus.write_text("# A course\n\n## Sessions\n\nTo be planned.\n")
    with pytest.raises(ValueError, match="no numbered rows"):
        run_times.main(["--executed", str(tmp_path / "executed"), "--syllabus", str(syllabus)])


def test_folder_bytes_counts_what_du_counts(tmp_path):
    assert run_times.folder_bytes(tmp_path / "absent") is None
    folder = tmp_path / "folder"
    folder.mkdir()
    empty = run_times.folder_bytes(folder)
    (folder / "data.bin").write_bytes(os.urandom(100_000))
    one = run_times.folder_bytes(folder)
    assert one - empty >= 100_000
    os.link(folder / "data.bin", folder / "same.bin")  # a hard link: the blocks once
    assert run_times.folder_bytes(folder) == one
    assert run_times.size(None) == "not there"
    assert run_times.size(3 * 2**30).replace("\u00a0", " ") == "3.0 GB"
