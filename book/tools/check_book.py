"""Check a built HTML book in headless Chromium (Debian's `chromium`; no browser is downloaded).

    python book/tools/check_book.py [--html _build/html] [--out _build/check] [--search littlekit]
                                    [--config _config.yml]

For every page of the book: it loads without a JavaScript error (uncaught exceptions and
console errors, through the DevTools protocol), every image it shows has loaded, no code line is
cut off (a `pre` wider than its box must sit in a box that scrolls), and a full-page screenshot
goes to <out>/<page>.png. Every internal link and image source of every page must name a file of
the build. Every notebook page shows a download button for its .ipynb and Binder, Colab and
JupyterHub launch buttons that point where the book's `--config` says (`page_buttons`). The
scorecard and the run-time page must be there and show rows; the course page must offer both
editions of every exercise page's notebook for download; the search page, asked for
`--search`, must list at least one page. It prints what it checked (pages, images, links, buttons,
the search) and each problem found, and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from page_buttons import PAGE_BUTTONS, Launch, notebook_page_problems

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
PAGE_TIMEOUT_S = 30.0
# Quiet, Chromium opens its DevTools port in under a second; beside two busy test workers on a
# 2-core machine it once took over 20 s. A start that takes longer than this is tried once more.
STARTUP_TIMEOUT_S = 45
SEARCH_TIMEOUT_S = 15.0
WIDTH, HEIGHT = 1280, 900

# The code-line check, run in the page: a <pre> whose text is wider than its box is cut off
# unless it, or a box around it, scrolls horizontally.
CUT_OFF_CODE = """
(() => {
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const cut = [];
  for (const pre of document.querySelectorAll('pre')) {
    if (pre.scrollWidth <= pre.clientWidth + 1) continue;
    let el = pre, ok = false;
    while (el && el !== document.body) { if (scrolls(el)) { ok = true; break; } el = el.parentElement; }
    if (!ok) cut.push(pre.innerText.split('\\n')[0].slice(0, 80));
  }
  return cut;
})()
"""
BROKEN_IMAGES = "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
SEARCH_HITS = "document.querySelectorAll('#search-results li, .search li').length"
FINDINGS_ROWS = "document.querySelectorAll('.findings tbody tr').length"
TABLE_ROWS = "document.querySelectorAll('article table tbody tr').length"
SCORECARD_PAGE = Path("book") / "scorecard.html"
RUN_TIMES_PAGE = Path("book") / "executed" / "run_times.html"  # book/tools/run_times.py writes it
COURSE_PAGE = Path("book") / "course" / "instructor.html"  # includes book/tools/course_downloads.py's table
EXERCISE_PAGES = Path("book") / "executed" / "exercises"


def find_chromium() -> str | None:
    """The first Chromium on PATH, or None."""
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


# --- static checks: links and image sources --------------------------------------------------------


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("a", "link") and values.get("href"):
            self.links.append(values["href"])
        elif tag == "img" and values.get("src"):
            self.images.append(values["src"])


def _internal(reference: str) -> str | None:
    """The path part of a reference into the build, None for other sites, mail and page anchors."""
    parts = urllib.parse.urlsplit(reference)
    if parts.scheme or parts.netloc or reference.startswith(("#", "mailto:", "javascript:")):
        return None
    return urllib.parse.unquote(parts.path) or None


def static_problems(html_root: Path, page: Path) -> tuple[list[str], int, int]:
    """(problems, internal links, images) of one page: each must name a file of the build."""
    parser = _References()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    problems, links, images = [], 0, 0
    for kind, references in (("link", parser.links), ("image", parser.images)):
        for reference in references:
            if reference.startswith("data:"):
                images += kind == "image"
                continue
            target = _internal(reference)
            if target is None:
                continue
            links += kind == "link"
            images += kind == "image"
            resolved = (page.parent / target).resolve()
            if not resolved.exists() or not resolved.is_relative_to(html_root.resolve()):
                problems.append(f"{page.relative_to(html_root)}: {kind} {reference} does not resolve")
    return problems, links, images


# --- the browser -------------------------------------------------------------------------------------


class Browser:
    """Headless Chromium driven over the DevTools protocol (one page target)."""

    def __init__(self, executable: str) -> None:
        import websocket  # websocket-client

        self._executable = executable
        port = self._start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            targets = [t for t in json.load(reply) if t.get("type") == "page"]
        self._socket = websocket.create_connection(
            targets[0]["webSocketDebuggerUrl"], timeout=PAGE_TIMEOUT_S, suppress_origin=True
        )
        self._next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=HEIGHT,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _start(self) -> int:
        """Start Chromium on a fresh profile; its DevTools port. A start that does not listen in
        STARTUP_TIMEOUT_S is stopped and tried once more; what fails leaves no browser running."""
        for _ in range(2):
            self._launch()
            try:
                return self._port()
            except TimeoutError:
                self._stop()
            except BaseException:
                self._stop()
                raise
        raise RuntimeError(f"chromium did not open its DevTools port within {STARTUP_TIMEOUT_S} s, twice")

    def _launch(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="check-book-")
        self._process = subprocess.Popen(
            [
                self._executable,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={self._profile}",
                f"--window-size={WIDTH},{HEIGHT}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _port(self) -> int:
        marker = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if marker.is_file() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self._process.returncode} before it listened")
            time.sleep(0.1)
        raise TimeoutError

    def _stop(self) -> None:
        """End the browser process and remove its profile."""
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def call(self, method: str, **params) -> dict:
        self._next_id += 1
        self._socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            self.events.append(message)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def load(self, url: str) -> None:
        """Navigate and wait for the load event (and fonts and images after it)."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load within {PAGE_TIMEOUT_S:.0f} s")
            self.events.append(json.loads(self._socket.recv()))
        self.evaluate("document.fonts.ready.then(() => true)")

    def errors(self) -> list[str]:
        """JavaScript errors since the last load: uncaught exceptions and console/log errors."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(
                    details.get("exception", {}).get("description") or details.get("text", "exception")
                )
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                )
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                where = f" ({entry['url']})" if entry.get("url") else ""
                found.append(entry.get("text", "log error") + where)
        return found

    def screenshot(self, path: Path) -> None:
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": max(size["width"], 1), "height": max(size["height"], 1), "scale": 1}
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)[
            "data"
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._socket.close()
        finally:
            self._stop()


# --- the whole check -------------------------------------------------------------------------------


@dataclass
class Report:
    pages: int = 0
    images: int = 0
    links: int = 0
    search_hits: int = 0
    findings_boxes: int = 0
    scorecard_rows: int = 0
    run_time_rows: int = 0
    notebook_pages: int = 0
    problems: list[str] = field(default_factory=list)

    def lines(self, search: str) -> list[str]:
        return [
            f"pages checked: {self.pages}",
            f"images: {self.images}",
            f"internal links: {self.links}",
            f"search {search!r}: {self.search_hits} result(s)",
            f"chapters ending in a findings box: {self.findings_boxes}",
            f"scorecard rows: {self.scorecard_rows}",
            f"run-time rows: {self.run_time_rows}",
            f"notebook pages with their download and launch buttons checked: {self.notebook_pages}",
            *(f"PROBLEM {p}" for p in self.problems),
            "book check passed"
            if not self.problems
            else f"book check FAILED: {len(self.problems)} problem(s)",
        ]


def pages_of(html_root: Path) -> list[Path]:
    """The book's pages: every .html file but the build's own search and index-of-names pages and
    redirects."""
    skip = {"search.html", "genindex.html"}
    pages = (p for p in html_root.rglob("*.html") if p.name not in skip and "_static" not in p.parts)
    return sorted(p for p in pages if not _redirect(p))


def _redirect(page: Path) -> bool:
    """A page that only sends the reader on (Jupyter Book's index.html is one)."""
    head = page.read_text(encoding="utf-8", errors="replace")[:2000].lower()
    return 'http-equiv="refresh"' in head


def book_pages_problems(name: Path, browser: Browser, report: Report) -> list[str]:
    """A chapter page must show its findings box; the scorecard and run-time pages their rows."""
    if name.parent.name == "executed" and name.stem[:2].isdigit():
        if not browser.evaluate(FINDINGS_ROWS):
            return [f"{name}: the chapter shows no findings box"]
        report.findings_boxes += 1
    if name == SCORECARD_PAGE:
        report.scorecard_rows = int(browser.evaluate(TABLE_ROWS) or 0)
        if not report.scorecard_rows:
            return [f"{name}: the scorecard shows no rows"]
    if name == RUN_TIMES_PAGE:
        report.run_time_rows = int(browser.evaluate(TABLE_ROWS) or 0)
        if not report.run_time_rows:
            return [f"{name}: the run-time page shows no rows"]
    return []


def course_download_problems(html_root: Path) -> list[str]:
    """Every exercise page's notebook must be downloadable from the course page in both editions
    (two download links to files of its name: the student's and the instructor's)."""
    exercises = sorted((html_root / EXERCISE_PAGES).glob("ex*.html"))
    page = html_root / COURSE_PAGE
    if not exercises:
        return []
    if not page.is_file():
        return [f"{COURSE_PAGE} is missing: the book offers no course editions to download"]
    parser = _References()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    downloads = Counter(Path(path).name for link in parser.links
                        if (path := _internal(link)) and "_downloads/" in path)
    return [f"{COURSE_PAGE}: no student and instructor edition of {p.stem}.ipynb to download"
            for p in exercises if downloads[f"{p.stem}.ipynb"] < 2]


def missing_pages(html_root: Path) -> list[str]:
    """The pages the book must have: the reproduction scorecard and the run times."""
    wanted = {SCORECARD_PAGE: "reproduction scorecard", RUN_TIMES_PAGE: "run-time page"}
    return [
        f"{page} is missing: the book has no {what}"
        for page, what in wanted.items()
        if not (html_root / page).is_file()
    ]


def check(html_root: Path, out: Path, search: str, executable: str, config: Path) -> Report:
    """Every check of the module on the build at html_root of the book configured by `config`
    (its _config.yml); screenshots to out."""
    html_root, report, launch = html_root.resolve(), Report(), Launch.read(config)
    pages = pages_of(html_root)
    if not pages:
        report.problems.append(f"{html_root}: no HTML pages (run `make book` first)")
        return report
    browser = Browser(executable)
    try:
        for page in pages:
            name = page.relative_to(html_root)
            problems, links, images = static_problems(html_root, page)
            report.problems += problems
            report.links += links
            report.images += images
            try:
                browser.load(page.as_uri())
            except TimeoutError as exc:
                report.problems.append(f"{name}: {exc}")
                continue
            report.pages += 1
            report.problems += [f"{name}: JavaScript error: {e}" for e in browser.errors()]
            report.problems += [
                f"{name}: image did not load: {src}" for src in browser.evaluate(BROKEN_IMAGES) or []
            ]
            report.problems += [
                f"{name}: code line cut off: {line!r}" for line in browser.evaluate(CUT_OFF_CODE) or []
            ]
            report.problems += book_pages_problems(name, browser, report)
            if launch.is_notebook(name):
                report.notebook_pages += 1
                buttons = browser.evaluate(PAGE_BUTTONS)
                report.problems += notebook_page_problems(name, html_root, launch, buttons)
            browser.screenshot(out / name.with_suffix(".png"))
        report.problems += missing_pages(html_root)
        report.problems += course_download_problems(html_root)
        search_page = html_root / "search.html"
        if not search_page.is_file():
            report.problems.append("search.html is missing")
        else:
            browser.load(search_page.as_uri() + "?q=" + urllib.parse.quote(search))
            deadline = time.monotonic() + SEARCH_TIMEOUT_S
            report.search_hits = int(browser.evaluate(SEARCH_HITS) or 0)
            while not report.search_hits and time.monotonic() < deadline:
                time.sleep(0.25)
                report.search_hits = int(browser.evaluate(SEARCH_HITS) or 0)
            if not report.search_hits:
                report.problems.append(f"searching for {search!r} finds no page")
            browser.screenshot(out / "search.png")
    finally:
        browser.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", default="_build/html", help="the built book (default: _build/html)")
    parser.add_argument(
        "--out", default="_build/check", help="where the screenshots go (default: _build/check)"
    )
    parser.add_argument(
        "--search", default="curriculum", help="a word the search must find (default: curriculum)"
    )
    parser.add_argument(
        "--config", default="_config.yml", help="the book's configuration (default: _config.yml)"
    )
    args = parser.parse_args(argv)
    executable = find_chromium()
    if executable is None:
        print("no chromium on PATH: install Debian's chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    report = check(Path(args.html), Path(args.out), args.search, executable, Path(args.config))
    print("\n".join(report.lines(args.search)))
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
