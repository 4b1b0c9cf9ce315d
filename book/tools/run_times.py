"""The book's run-time page: how long each chapter and exercise notebook took in this build.

    python book/tools/run_times.py [--executed book/executed]

Each executed notebook carries its wall time as papermill recorded it (the times RESULTS.md
lists, read by `scorecard.chapter_seconds`) and, where the run recorded it, its CPU time
(`metadata.littlekit.cpu_seconds`). The page lists them per chapter and per exercise, with the
time a notebook needs from a fresh clone (itself and every chapter whose products it reads, one
after another), headed by the commit, CPU model, cores and date of the build, so an instructor can
plan a session. It is written beside the executed notebooks it times, <executed>/run_times.md (its
links are relative to them; like them it is not committed): nothing on it is typed; `make book`
rewrites it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_notebooks import UPSTREAM, upstream_of  # noqa: E402
from scorecard import ROOT, build_header, chapter_seconds  # noqa: E402

PAGE_NAME = "run_times.md"


@dataclass(frozen=True)
class Timing:
    stem: str  # the notebook's name without .ipynb, e.g. 09_training or ex09_training
    page: str  # the page's document path beside the run-time page, e.g. exercises/ex09_training
    wall_s: float
    cpu_s: float | None
    executed: str  # the date papermill started it, YYYY-MM-DD


def notebook_paths(executed: Path) -> list[Path]:
    """The executed chapters, then the exercises, each in number order."""
    return sorted(executed.glob("[0-9][0-9]_*.ipynb")) + sorted(executed.glob("exercises/ex*.ipynb"))


def timings(executed: Path) -> list[Timing]:
    """One Timing per executed notebook papermill timed, chapters first."""
    walls = chapter_seconds(executed)
    out = []
    for path in notebook_paths(executed):
        if path.stem not in walls:
            continue
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        cpu = metadata.get("littlekit", {}).get("cpu_seconds")
        out.append(
            Timing(
                stem=path.stem,
                page=path.relative_to(executed).with_suffix("").as_posix(),
                wall_s=walls[path.stem],
                cpu_s=float(cpu) if isinstance(cpu, int | float) else None,
                executed=str(metadata.get("papermill", {}).get("start_time") or "")[:10],
            )
        )
    return out


def with_upstream_s(timing: Timing, by_number: dict[str, Timing]) -> float | None:
    """Its wall time plus that of every chapter it reads, transitively; None when one of those
    chapters has no time in this build."""
    seen: set[str] = set()
    todo = [timing.stem.split("_")[0]]
    while todo:
        number = todo.pop()
        if number not in seen:
            seen.add(number)
            try:
                todo += upstream_of(number, UPSTREAM)
            except KeyError:  # a notebook run_notebooks does not know: its upstream is unknown
                return None
    if not seen <= by_number.keys():
        return None
    return sum(by_number[number].wall_s for number in seen)


def clock(seconds: float | None) -> str:
    """12 s, 3 min 05 s, 1 h 02 min (no-break spaces: a table cell keeps it on one line); an em
    dash for no time."""
    if seconds is None:
        return "—"
    s = round(seconds)
    if s < 60:
        text = f"{s} s"
    elif s < 3600:
        text = f"{s // 60} min {s % 60:02d} s"
    else:
        text = f"{s // 3600} h {s % 3600 // 60:02d} min"
    return text.replace(" ", "\u00a0")


def table(rows: list[Timing], by_number: dict[str, Timing], with_cpu: bool) -> list[str]:
    head = "| notebook | wall | " + ("CPU | " if with_cpu else "") + "with the chapters it reads | executed |"
    lines = [head, "|---|---:|" + ("---:|" if with_cpu else "") + "---:|---|"]
    for t in rows:
        cpu = f"{clock(t.cpu_s)} | " if with_cpu else ""
        upstream = clock(with_upstream_s(t, by_number))
        lines.append(f"| {{doc}}`{t.page}` | {clock(t.wall_s)} | {cpu}{upstream} | {t.executed} |")
    total = sum(t.wall_s for t in rows)
    cpus = [t.cpu_s for t in rows if t.cpu_s is not None]
    cpu_total = f"{clock(sum(cpus) if cpus else None)} | " if with_cpu else ""
    lines.append(f"| **all {len(rows)}, one after another** | **{clock(total)}** | {cpu_total}| |")
    return lines


def page_lines(found: list[Timing], header: dict[str, str]) -> list[str]:
    by_number = {t.stem.split("_")[0]: t for t in found}
    with_cpu = any(t.cpu_s is not None for t in found)
    chapters = [t for t in found if not t.stem.startswith("ex")]
    exercises = [t for t in found if t.stem.startswith("ex")]
    lines = [
        "# Run times",
        "",
        f"Built from commit `{header['commit']}` on {header['machine']}, {header['date']}, by "
        "`make book` (`book/tools/run_times.py`). Each time is the notebook's last execution as "
        "papermill measured it, on the date in its row; `make notebooks` runs single-threaded "
        "notebooks side by side, so a wall time can include waiting for a shared core.",
        "",
        "*With the chapters it reads* is what a notebook costs from a fresh clone: its own time plus "
        "that of every chapter whose run products it reads, run one after another. Use it to plan "
        "what students run before a session.",
        "",
    ]
    for caption, rows in (("Chapters", chapters), ("Exercises", exercises)):
        if rows:
            lines += [f"## {caption}", "", *table(rows, by_number, with_cpu), ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=ROOT / "book" / "executed")
    args = parser.parse_args(argv)
    page = args.executed / PAGE_NAME
    found = timings(args.executed)
    if not found:
        print(f"no timed notebooks in {args.executed}: run the notebooks first", file=sys.stderr)
        return 1
    page.write_text("\n".join(page_lines(found, build_header())), encoding="utf-8")
    print(f"run times: {len(found)} notebooks -> {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
