"""`make check-book` (book/tools/check_book.py) in real headless Chromium on a small Jupyter Book
built here with the book's own _config.yml (its Sphinx settings, repository and launch buttons): a
clean build passes, and each kind of fault is found and named."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
import yaml

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import check_book  # noqa: E402
import page_buttons  # noqa: E402
import run_times  # noqa: E402

CHROMIUM = check_book.find_chromium()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)"),
]

TOC = (
    "format: jb-book\nroot: intro\nchapters:\n  - file: chapter\n  - file: book/scorecard\n"
    "  - file: book/executed/01_fractions\n  - file: book/executed/run_times\n"
)
INTRO = (
    "# Tiny book\n\nAn introduction to the curriculum. See [the chapter](chapter.md).\n\n![a dot](dot.png)\n"
)
LONG = "x = '" + "a long line " * 30 + "'"
MATH = "Math: $a^2 + b^2 = c^2$."
CHAPTER = f"# A chapter on fractions\n\n```python\n{LONG}\n```\n\n{MATH} Back to [the start](intro.md).\n"


SCORECARD = "# Reproduction scorecard\n\n| claim | verdict |\n|---|---|\n| fractions | holds |\n"
FINDINGS = (
    '<div class="admonition note findings"><p class="admonition-title">Findings</p>'
    "<table><tbody><tr><td>fractions</td><td>holds</td></tr></tbody></table></div>"
)
NOTEBOOK = "book/executed/01_fractions"  # executed from notebooks/01_fractions.ipynb
BINDER = (
    "https://mybinder.org/v2/gh/littlecurriculum/littlecurriculum/main"
    "?urlpath=lab/tree/notebooks/01_fractions.ipynb"
)


def config() -> str:
    """The book's own _config.yml, its local paths made absolute for a book built elsewhere."""
    values = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
    sphinx = values["sphinx"]
    sphinx["local_extensions"] = {k: str(REPO_ROOT / v) for k, v in sphinx["local_extensions"].items()}
    sphinx["config"]["html_static_path"] = [str(REPO_ROOT / p) for p in sphinx["config"]["html_static_path"]]
    return yaml.safe_dump({**values, "title": "Tiny"})


def notebook(seconds: float) -> str:
    """A chapter notebook as papermill leaves it: its findings box, its run time."""
    return json.dumps(
        {
            "cells": [
                {"cell_type": "markdown", "metadata": {}, "source": f"# 1 · Fractions\n\n{FINDINGS}\n"}
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "papermill": {"duration": seconds, "start_time": "2026-01-02T03:04:05+00:00"},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def one_pixel_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tinybook")
    for name, text in {
        "_config.yml": config(),
        "_toc.yml": TOC,
        "intro.md": INTRO,
        "chapter.md": CHAPTER,
        "book/scorecard.md": SCORECARD,
        f"{NOTEBOOK}.ipynb": notebook(75.0),
        "notebooks/01_fractions.ipynb": notebook(0.0),
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "dot.png").write_bytes(one_pixel_png())
    assert run_times.main(["--executed", str(root / "book" / "executed")]) == 0
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    subprocess.run([str(jupyter_book), "build", str(root)], check=True, capture_output=True)
    return root / "_build" / "html"


def check(html: Path, built: Path, tmp_path: Path, search: str = "curriculum") -> check_book.Report:
    """check_book's whole check of `html`, a build (or a copy of one) of the tiny book at `built`."""
    return check_book.check(html, tmp_path / "shots", search, CHROMIUM, built.parent.parent / "_config.yml")


def copy_of(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "html"
    shutil.copytree(built, target)
    return target


def test_a_clean_build_passes_and_is_photographed(built, tmp_path):
    report = check(built, built, tmp_path)
    assert report.problems == []
    # images: the dot, and the Binder, JupyterHub and Colab logos of the launch buttons
    assert (report.pages, report.images) == (5, 4) and report.links > 0 and report.search_hits >= 1
    # the run-time page: the notebook's row and the total
    assert (report.findings_boxes, report.scorecard_rows, report.run_time_rows) == (1, 1, 2)
    assert report.notebook_pages == 1
    assert sorted(p.name for p in (tmp_path / "shots").iterdir()) == [
        "book",
        "chapter.png",
        "intro.png",
        "search.png",
    ]
    assert (tmp_path / "shots" / "intro.png").read_bytes().startswith(b"\x89PNG")


def test_math_renders_from_the_vendored_mathjax_without_a_network(built):
    page = (built / "chapter.html").read_text()
    assert "_static/mathjax/tex-mml-chtml.js" in page and "cdn.jsdelivr" not in page
    browser = check_book.Browser(CHROMIUM)
    try:
        browser.load((built / "chapter.html").as_uri())
        deadline = time.monotonic() + 10
        while (
            not browser.evaluate("document.querySelectorAll('mjx-container').length")
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert browser.evaluate("document.querySelectorAll('mjx-container').length") == 1
        assert browser.errors() == []
    finally:
        browser.close()


def test_missing_image_and_link_are_named(built, tmp_path):
    html = copy_of(built, tmp_path)
    next((html / "_images").glob("dot*.png")).unlink()
    page = html / "chapter.html"
    page.write_text(page.read_text().replace('href="intro.html"', 'href="nowhere.html"', 1))
    problems = check(html, built, tmp_path).problems
    assert any("intro.html: image _images/dot" in p and "does not resolve" in p for p in problems)
    assert any("intro.html: image did not load" in p for p in problems)
    assert any("chapter.html: link nowhere.html does not resolve" in p for p in problems)


def test_a_javascript_error_and_a_cut_off_code_line_are_found(built, tmp_path):
    html = copy_of(built, tmp_path)
    page = html / "intro.html"
    cut = '<pre style="overflow:hidden;white-space:pre;width:200px">' + "cut " * 200 + "</pre>"
    page.write_text(
        page.read_text().replace("</body>", f'<script>throw new Error("boom")</script>{cut}</body>')
    )
    problems = check(html, built, tmp_path).problems
    assert any(p.startswith("intro.html: JavaScript error") and "boom" in p for p in problems)
    assert any(p.startswith("intro.html: code line cut off: 'cut cut") for p in problems)
    assert not any(p.startswith("chapter.html") for p in problems)  # its long line scrolls


def test_a_search_that_finds_nothing_fails(built, tmp_path):
    report = check(built, built, tmp_path, "zyzzyvaquux")
    assert report.search_hits == 0 and report.problems == ["searching for 'zyzzyvaquux' finds no page"]
    assert report.lines("zyzzyvaquux")[-1] == "book check FAILED: 1 problem(s)"


def test_a_browser_that_never_listens_is_started_twice_then_named_and_stopped(tmp_path, monkeypatch):
    """A start that opens no DevTools port is stopped and tried once more; the error says so and no
    process or profile is left behind."""
    starts = tmp_path / "starts"
    silent = tmp_path / "silent-browser"
    silent.write_text(f"#!/bin/sh\necho $$ >> {starts}\nexec sleep 600\n")
    silent.chmod(0o755)
    monkeypatch.setattr(check_book, "STARTUP_TIMEOUT_S", 1.0)
    before = set(Path(check_book.tempfile.gettempdir()).glob("check-book-*"))
    with pytest.raises(RuntimeError, match="within 1.0 s, twice"):
        check_book.Browser(str(silent))
    pids = [int(line) for line in starts.read_text().split()]
    assert len(pids) == 2
    for pid in pids:  # each was stopped and reaped: no such process now
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert set(Path(check_book.tempfile.gettempdir()).glob("check-book-*")) == before


def test_a_chapter_without_findings_or_buttons_and_missing_pages_are_named(built, tmp_path):
    html = copy_of(built, tmp_path)
    chapter = html / f"{NOTEBOOK}.html"
    text = chapter.read_text().replace("findings", "notes")
    chapter.write_text(text.replace("dropdown-launch-buttons", "x").replace("dropdown-download", "x"))
    (html / "book" / "scorecard.html").unlink()
    (html / "book" / "executed" / "run_times.html").unlink()
    problems = check(html, built, tmp_path).problems
    assert f"{NOTEBOOK}.html: the chapter shows no findings box" in problems
    assert any("book/scorecard.html is missing" in p for p in problems)
    assert "book/executed/run_times.html is missing: the book has no run-time page" in problems
    assert f"{NOTEBOOK}.html: no .ipynb download button" in problems
    launches = {f"{NOTEBOOK}.html: no {name} launch button" for name in ("Binder", "Colab", "JupyterHub")}
    assert launches <= set(problems)


def test_a_notebook_page_launches_its_committed_source_and_downloads_its_executed_copy(built):
    """What the theme and book/_ext/launch_sources.py make of the book's _config.yml: the launch
    buttons open notebooks/01_fractions.ipynb, not the executed copy the page shows."""
    page = (built / f"{NOTEBOOK}.html").read_text()
    assert f'href="{BINDER}"' in page
    assert (
        "colab.research.google.com/github/littlecurriculum/littlecurriculum/blob/main/notebooks/01_" in page
    )
    assert "urlpath=lab/tree/littlecurriculum/notebooks/01_fractions.ipynb&branch=main" in page
    assert "tree/book/executed" not in page and "blob/main/book/executed" not in page
    assert 'href="../../_sources/book/executed/01_fractions.ipynb"' in page


def test_a_wrong_launch_or_download_button_and_an_empty_run_time_page_are_named(built, tmp_path):
    html = copy_of(built, tmp_path)
    times = html / "book" / "executed" / "run_times.html"
    times.write_text(times.read_text().replace("tbody", "tfoot"))
    page = html / f"{NOTEBOOK}.html"
    text = page.read_text()
    colab = text.index('<li><a href="https://colab.research.google.com')
    text = text[:colab] + text[text.index("</li>", colab) + len("</li>") :]
    text = text.replace(BINDER, BINDER.replace("notebooks/", "book/executed/"))
    page.write_text(text.replace("_sources/book/executed/01_fractions.ipynb", "_sources/gone.ipynb"))
    problems = check(html, built, tmp_path).problems
    assert f"{NOTEBOOK}.html: no Colab launch button" in problems
    assert any(p.startswith(f"{NOTEBOOK}.html: the Binder button") for p in problems)
    assert any("does not name notebooks/01_fractions.ipynb" in p for p in problems)
    assert any("the .ipynb download ../../_sources/gone.ipynb does not resolve" in p for p in problems)
    assert f"{NOTEBOOK}.html: link ../../_sources/gone.ipynb does not resolve" in problems  # the link check
    assert "book/executed/run_times.html: the run-time page shows no rows" in problems
    assert len(problems) == 5


def test_launching_a_notebook_git_ignores_is_named(tmp_path):
    """Without launch_sources the buttons would open the executed copy, which is not committed."""
    for name in ("book/executed/01_fractions.ipynb", "notebooks/01_fractions.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(notebook(1.0))
    (tmp_path / ".gitignore").write_text("book/executed/\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    page = Path(f"{NOTEBOOK}.html")
    settings = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(settings))
    assert page_buttons.source_problems(page, page_buttons.Launch.read(tmp_path / "_config.yml")) == []
    del settings["sphinx"]["config"]["launch_sources"]
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(settings))
    launch = page_buttons.Launch.read(tmp_path / "_config.yml")
    assert page_buttons.source_problems(page, launch) == [
        f"{page}: its launch buttons open {NOTEBOOK}.ipynb, which git ignores (the repository lacks it)"
    ]
