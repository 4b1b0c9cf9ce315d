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

The same run writes <executed>/session_times.md, which the syllabus includes: per session of the
course (the rows of the syllabus's table, `run_notebooks.sessions`), the chapters and exercises it
runs, the earlier chapters whose products they read, and the wall time of both, under the same
header, with the disk the build's environment and run folder take.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_notebooks import SYLLABUS, UPSTREAM, Session, sessions, with_upstream  # noqa: E402
from scorecard import ROOT, build_header, chapter_seconds  # noqa: E402

PAGE_NAME = "run_times.md"
SESSIONS_PAGE_NAME = "session_times.md"  # included by book/course/syllabus.md
# What the build's disk line measures: the environment `make` creates and the run folder the
# book's notebooks write (their default run_name)
DISK = {"the environment": ROOT / ".venv", "the run folder": ROOT / "runs" / "default"}


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
    return wall_of([timing.stem.split("_")[0]], by_number)


def wall_of(names: list[str], by_number: dict[str, Timing]) -> float | None:
    """The wall time of these notebooks ("09", "ex09") and every chapter they read, one after
    another; None when one of them has no time in this build or an unknown upstream."""
    try:
        needed = with_upstream(names, UPSTREAM)
    except KeyError:  # a notebook run_notebooks does not know: its upstream is unknown
        return None
    if not set(needed) <= by_number.keys():
        return None
    return sum(by_number[number].wall_s for number in needed)


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
        "what students run before a session; the course's syllabus adds them up per session.",
        "",
    ]
    for caption, rows in (("Chapters", chapters), ("Exercises", exercises)):
        if rows:
            lines += [f"## {caption}", "", *table(rows, by_number, with_cpu), ""]
    return lines


def folder_bytes(path: Path) -> int | None:
    """The disk a folder takes, as du counts it (allocated blocks, each hard-linked file once);
    None when it is not there."""
    if not path.is_dir():
        return None
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(path):
        for entry in [folder, *(os.path.join(folder, f) for f in files)]:
            stat = os.lstat(entry)
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total


def size(n: int | None) -> str:
    """850 MB, 2.4 GB (powers of 1024, as du -h); "not there" for None."""
    if n is None:
        return "not there"
    if n < 2**30:
        return f"{n / 2**20:.0f}\u00a0MB"
    return f"{n / 2**30:.1f}\u00a0GB"


def numbers(names: tuple[str, ...] | list[str]) -> str:
    """08, 09 -> "8, 9"; ex08 -> "8"."""
    return ", ".join(str(int(name.removeprefix("ex"))) for name in names)


def session_row(session: Session, by_number: dict[str, Timing]) -> str:
    """One row: what the session runs, the earlier chapters it reads, their times, its rebuild option."""
    own = [*session.chapters, *session.exercises]
    earlier = [n for n in with_upstream(own, UPSTREAM) if n not in own]
    own_s = sum(by_number[n].wall_s for n in own) if set(own) <= by_number.keys() else None
    runs = "; ".join(
        f"{kind}{'s' if len(names) > 1 else ''} {numbers(names)}"
        for kind, names in (("chapter", session.chapters), ("exercise page", session.exercises))
        if names
    )
    return (
        f"| {session.number} | {runs or 'nothing'} | {numbers(earlier) or 'none'} | {clock(own_s)} "
        f"| {clock(wall_of(own, by_number))} | `--session {session.number}` |"
    )


def session_lines(
    found: list[Timing], header: dict[str, str], course: list[Session], disk: Mapping[str, int | None]
) -> list[str]:
    """The per-session table the syllabus includes (no heading of its own), and the disk line
    (`disk`: what was measured -> its bytes, None when it is not there)."""
    by_number = {t.stem.split("_")[0]: t for t in found}
    used = ", ".join(f"{what} {size(n)}" for what, n in disk.items())
    return [
        f"Measured by the build of commit `{header['commit']}` on {header['machine']}, "
        f"{header['date']} (`book/tools/run_times.py`, from the times on {{doc}}`../executed/run_times`). "
        "*Its own notebooks* is the wall time of the session's chapters and exercises when the "
        "chapters they read have already run for the same `run_name`; *from a fresh clone* adds "
        "those earlier chapters. Both are times one after another; a dash means a notebook has no "
        "time in this build. *Rebuild* is the option of `book/tools/run_notebooks.py` that runs "
        "exactly these notebooks.",
        "",
        "| session | runs | reads the products of chapters | its own notebooks | from a fresh clone "
        "| rebuild |",
        "|---|---|---|---:|---:|---|",
        *(session_row(session, by_number) for session in course),
        "",
        f"Disk on the build machine after the build: {used}.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=ROOT / "book" / "executed")
    parser.add_argument("--syllabus", type=Path, default=SYLLABUS, help="the course's sessions")
    args = parser.parse_args(argv)
    page = args.executed / PAGE_NAME
    found = timings(args.executed)
    if not found:
        print(f"no timed notebooks in {args.executed}: run the notebooks first", file=sys.stderr)
        return 1
    header = build_header()
    page.write_text("\n".join(page_lines(found, header)), encoding="utf-8")
    print(f"run times: {len(found)} notebooks -> {page}")
    course = sessions(args.syllabus)
    disk = {f"{what} `{path.relative_to(ROOT)}/`": folder_bytes(path) for what, path in DISK.items()}
    session_page = args.executed / SESSIONS_PAGE_NAME
    session_page.write_text("\n".join(session_lines(found, header, course, disk)), encoding="utf-8")
    print(f"session times: {len(course)} sessions -> {session_page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
