"""The run-time page (book/tools/run_times.py) from executed notebooks as papermill leaves them: each
notebook's time, the time with the chapters it reads, and the build's commit, machine and date."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

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
