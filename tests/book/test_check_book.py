"""`make check-book` (book/tools/check_book.py) in real headless Chromium on a small Jupyter Book
built here with the book's own Sphinx settings: a clean build passes, and each kind of fault is
found and named."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import check_book  # noqa: E402

CHROMIUM = check_book.find_chromium()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)"),
]

CONFIG = f"""title: "Tiny"
only_build_toc_files: true
execute:
  execute_notebooks: "off"
sphinx:
  local_extensions:
    single_scripts: {REPO_ROOT / "book" / "_ext"}
  config:
    html_context:
      default_mode: light
    html_static_path: ["{REPO_ROOT / "book" / "_static"}"]
    mathjax_path: mathjax/tex-mml-chtml.js
"""
TOC = (
    "format: jb-book\nroot: intro\nchapters:\n  - file: chapter\n  - file: book/scorecard\n"
    "  - file: book/executed/01_fractions\n"
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
NUMBERED_CHAPTER = f"# 1 · Fractions\n\nA chapter of the book.\n\n{FINDINGS}\n"


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
        "_config.yml": CONFIG,
        "_toc.yml": TOC,
        "intro.md": INTRO,
        "chapter.md": CHAPTER,
        "book/scorecard.md": SCORECARD,
        "book/executed/01_fractions.md": NUMBERED_CHAPTER,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "dot.png").write_bytes(one_pixel_png())
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    subprocess.run([str(jupyter_book), "build", str(root)], check=True, capture_output=True)
    return root / "_build" / "html"


def copy_of(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "html"
    shutil.copytree(built, target)
    return target


def test_a_clean_build_passes_and_is_photographed(built, tmp_path):
    report = check_book.check(built, tmp_path / "shots", "curriculum", CHROMIUM)
    assert report.problems == []
    assert (report.pages, report.images) == (4, 1) and report.links > 0 and report.search_hits >= 1
    assert (report.findings_boxes, report.scorecard_rows) == (1, 1)
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
    problems = check_book.check(html, tmp_path / "shots", "curriculum", CHROMIUM).problems
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
    problems = check_book.check(html, tmp_path / "shots", "curriculum", CHROMIUM).problems
    assert any(p.startswith("intro.html: JavaScript error") and "boom" in p for p in problems)
    assert any(p.startswith("intro.html: code line cut off: 'cut cut") for p in problems)
    assert not any(p.startswith("chapter.html") for p in problems)  # its long line scrolls


def test_a_search_that_finds_nothing_fails(built, tmp_path):
    report = check_book.check(built, tmp_path / "shots", "zyzzyvaquux", CHROMIUM)
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


def test_a_chapter_without_findings_and_a_missing_scorecard_are_named(built, tmp_path):
    html = copy_of(built, tmp_path)
    chapter = html / "book" / "executed" / "01_fractions.html"
    chapter.write_text(chapter.read_text().replace("findings", "notes"))
    (html / "book" / "scorecard.html").unlink()
    problems = check_book.check(html, tmp_path / "shots", "curriculum", CHROMIUM).problems
    assert "book/executed/01_fractions.html: the chapter shows no findings box" in problems
    assert any("book/scorecard.html is missing" in p for p in problems)
