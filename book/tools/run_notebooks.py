"""Execute the book's notebooks with papermill, only those whose inputs changed since the last run.

    python book/tools/run_notebooks.py [--force] [--cores 2] [--executed book/executed]

The notebooks are the chapters (notebooks/NN_*.ipynb) and the course exercises
(notebooks/exercises/exNN_*.ipynb, which read chapter NN's run products). A notebook's key is a
SHA-256 over what its run depends on: its own file, the `littlekit` package, the embedded
`data/`, `pyproject.toml`, the `-p` parameters (none for the book) and the keys of the chapters
whose run products it reads (`UPSTREAM`). The key of a successful run is kept in
<executed>/.keys/<notebook>.sha256 (exercises: <executed>/exercises/.keys/); a notebook whose
executed copy exists under an equal key is not run again, so touching one notebook re-executes it
and the chapters downstream of it, and an unchanged book re-executes nothing. A failed run keeps no
key and its log (<executed>/.logs/) is printed. `--force` runs every notebook; `--adopt` runs none
and keeps keys for the executed copies there are (a book executed before keys were kept).

    python book/tools/run_notebooks.py --only 09 ex09 [--force]   # these and the chapters they read
    python book/tools/run_notebooks.py --session 6 [--force]      # what session 6 of the course needs

`--only` and `--session` limit the run to the named notebooks (a chapter "09", its exercises "ex09",
or a file name) and every chapter whose products they read, transitively; the rest is left as it
is. A session's notebooks are the ones its row of the syllabus's table links to
(book/course/syllabus.md, `sessions`); `--force` then re-executes just that selection.

Notebooks run as soon as their upstream chapters are done, as many at once as `--cores` allows: a
single-threaded one (`ONE_CORE`, and every exercise notebook) takes one core, any other takes all
of them and runs alone. A ready chapter that needs every core holds the queue for the chapters
behind it (the chapters' chain is the build's critical path); only exercise notebooks may still
take a core a single-threaded chapter leaves idle. Each notebook's time (or "unchanged") and the
total wall time are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The course's sessions: the rows of this page's table under "## Sessions" (`sessions`)
SYLLABUS = ROOT / "book" / "course" / "syllabus.md"
SHARED_INPUTS = ("littlekit", "data", "pyproject.toml")
# The chapters each chapter reads run products of (its "Reads" paragraph), by number. Kept by hand;
# tests/book/test_run_order.py holds it to what the notebooks read and make (run_order.py derives it).
UPSTREAM: dict[str, tuple[str, ...]] = {
    "01": (),
    "02": (),
    "03": ("02",),
    "04": ("02", "03"),
    "05": (),
    "06": ("03", "04"),
    "07": ("03", "04", "06"),
    "08": ("03", "04", "06", "07"),
    "09": ("08",),
    "10": ("09",),
    "11": ("09",),
    "12": ("08", "09"),
    "13": ("08",),
    "14": ("08", "09"),
    "15": ("08", "09", "14"),
    "16": ("03", "04", "06", "07", "09"),
    "17": ("16",),
    "18": ("09", "16"),
}
SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints"}
# Chapters that use one core (torch_threads=1 in one process, or no torch), so two may run at once.
ONE_CORE = {"01", "02", "05", "06", "07", "08", "10", "11", "12", "13"}
EXERCISES = "exercises"  # the course exercises: notebooks/exercises/exNN_*.ipynb, one per chapter


def files_under(path: Path) -> list[Path]:
    """Every file of a file or folder, in a fixed order, caches left out."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and not SKIPPED_PARTS & set(p.parts))


def digest(paths: Iterable[Path], root: Path = ROOT) -> str:
    """SHA-256 over each file's path (relative to root) and bytes."""
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def chapter(notebook: Path) -> str:
    """A notebook's entry in UPSTREAM: "07" for a chapter, "ex07" for its course exercises."""
    return notebook.name.split("_")[0]


def is_exercise(notebook: Path) -> bool:
    return chapter(notebook).startswith("ex")


def upstream_of(number: str, upstream: Mapping) -> tuple[str, ...]:
    """The chapters a notebook reads; a chapter's exercises read that chapter unless UPSTREAM says more."""
    if number in upstream:
        return tuple(upstream[number])
    if number.startswith("ex") and number[2:] in upstream:
        return (number[2:],)
    raise KeyError(number)


def with_upstream(names: Iterable[str], upstream: Mapping) -> list[str]:
    """The named notebooks ("09", "ex09") and every chapter they read, transitively: chapters in
    number order, then exercises. KeyError for a name `upstream` does not know."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += upstream_of(name, upstream)
    return sorted(seen, key=lambda name: (name.startswith("ex"), name))


@dataclass(frozen=True)
class Session:
    """One session of the course: its number and the notebooks its syllabus row links to."""

    number: int
    chapters: tuple[str, ...]  # "08", "09"
    exercises: tuple[str, ...]  # "ex08", "ex09"


SESSION_ROW = re.compile(r"^\|\s*(\d+)\s*\|")
CHAPTER_LINK = re.compile(r"executed/(\d\d)_\w+>")
EXERCISE_LINK = re.compile(r"executed/exercises/(ex\d\d)_\w+>")


def sessions(syllabus: Path = SYLLABUS) -> list[Session]:
    """The sessions of the syllabus's table (the table under its "## Sessions" heading): each row
    whose first cell is a number, with the chapter and exercise pages its {doc} links name."""
    lines = syllabus.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index("## Sessions")
    except ValueError:
        raise ValueError(f"{syllabus}: no '## Sessions' heading") from None
    out = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        row = SESSION_ROW.match(line)
        if row:
            chapters = tuple(dict.fromkeys(CHAPTER_LINK.findall(line)))
            exercises = tuple(dict.fromkeys(EXERCISE_LINK.findall(line)))
            out.append(Session(int(row.group(1)), chapters, exercises))
    if not out:
        raise ValueError(f"{syllabus}: the table under '## Sessions' has no numbered rows")
    return out


def named(name: str) -> str:
    """A notebook's entry in UPSTREAM from what a reader types: 09, ex09, 09_training, a path."""
    return Path(name).name.split("_")[0].removesuffix(".ipynb")


def selection(notebooks: list[Path], names: Iterable[str], upstream: Mapping) -> list[Path]:
    """The notebooks named and those of every chapter they read; ValueError naming an unknown one."""
    known = {chapter(n) for n in notebooks}
    wanted = [named(name) for name in names]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"no notebook {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    needed = set(with_upstream(wanted, upstream))
    return [n for n in notebooks if chapter(n) in needed]


def keys(
    notebooks: list[Path], shared: str, parameters: str = "", upstream: Mapping | None = None
) -> dict[str, str]:
    """{notebook name: key}, each over its file, the shared inputs, the parameters and its
    upstream chapters' keys (chapters first, in number order, then the exercises)."""
    upstream = UPSTREAM if upstream is None else upstream
    by_chapter: dict[str, str] = {}
    out = {}
    for notebook in sorted(notebooks, key=lambda n: (is_exercise(n), n.name)):
        number = chapter(notebook)
        try:
            reads = upstream_of(number, upstream)
        except KeyError:
            raise KeyError(
                f"{notebook.name}: no entry in UPSTREAM; say which chapters' products it reads"
            ) from None
        missing = [u for u in reads if u not in by_chapter]
        if missing:
            raise KeyError(f"{notebook.name}: upstream chapter(s) {', '.join(missing)} have no notebook")
        h = hashlib.sha256()
        for part in (
            notebook.read_bytes(),
            shared.encode(),
            parameters.encode(),
            *(by_chapter[u].encode() for u in reads),
        ):
            h.update(hashlib.sha256(part).digest())
        by_chapter[number] = out[notebook.name] = h.hexdigest()
    return out


def executed_copy(notebook: Path, executed: Path) -> Path:
    """Where a notebook's executed copy goes: exercises in their own folder beside the chapters."""
    folder = executed / EXERCISES if is_exercise(notebook) else executed
    return folder / notebook.name


def kept_key(notebook: Path, executed: Path) -> Path:
    copy = executed_copy(notebook, executed)
    return copy.parent / ".keys" / f"{notebook.name}.sha256"


def stale(
    notebooks: list[Path], executed: Path, wanted: Mapping[str, str], force: bool = False
) -> list[Path]:
    """The notebooks to run: all with force; else those without an executed copy whose kept key
    equals the wanted one."""
    if force:
        return list(notebooks)
    out = []
    for notebook in notebooks:
        kept = kept_key(notebook, executed)
        current = kept.read_text().strip() if kept.is_file() else None
        if current != wanted[notebook.name] or not executed_copy(notebook, executed).is_file():
            out.append(notebook)
    return out


def start(notebook: Path, executed: Path, papermill: str, log: Path) -> subprocess.Popen:
    """papermill the notebook into its executed copy (cwd: the chapters' folder), output to log."""
    command = [
        papermill,
        "--cwd",
        str(notebook.parent.parent if is_exercise(notebook) else notebook.parent),
        "--kernel",
        "python3",
        "--no-progress-bar",
        str(notebook),
        str(executed_copy(notebook, executed)),
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def cores_used(notebook: Path, cores: int) -> int:
    """1 for a single-threaded notebook, else every core."""
    return 1 if chapter(notebook) in ONE_CORE or is_exercise(notebook) else cores


def next_to_start(
    waiting: list[Path], running: Iterable[Path], done: set[str], upstream: Mapping, cores: int
):
    """The first waiting notebook, in order, whose upstream chapters are done and that fits in the
    cores the running ones leave. A ready chapter that needs every core and does not fit yet holds
    the queue for the chapters behind it; only exercise notebooks (short, single-threaded) may
    still take a core left idle, so a waiting chapter is delayed by one exercise at most."""
    free = cores - sum(cores_used(n, cores) for n in running)
    held = False
    for notebook in waiting:
        if not all(u in done for u in upstream_of(chapter(notebook), upstream)):
            continue
        if held and not is_exercise(notebook):
            continue
        if cores_used(notebook, cores) <= free:
            return notebook
        held = held or cores_used(notebook, cores) == cores
    return None


def finished_cpu_seconds(process: subprocess.Popen) -> float | None:
    """None while `process` runs; once it ended, the CPU seconds (user + system) it and the
    processes it waited for (papermill's kernel) used, its return code set on `process`."""
    pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def execute(
    todo: list[Path],
    executed: Path,
    wanted: Mapping[str, str],
    done: set[str],
    cores: int,
    cpu_total: list[float] | None = None,
) -> bool:
    """Run the stale notebooks, upstream first, on `cores` cores (`next_to_start`); True when all
    succeeded. After a failure nothing new starts and the running ones finish. `cpu_total[0]`
    accumulates the CPU seconds of the notebooks that ended."""
    cpu_total = cpu_total if cpu_total is not None else [0.0]
    papermill = str(Path(sys.executable).parent / "papermill")
    waiting, running, failed = list(todo), {}, False
    while waiting or running:
        notebook = None if failed else next_to_start(waiting, running, done, UPSTREAM, cores)
        if notebook is not None:
            waiting.remove(notebook)
            kept_key(notebook, executed).unlink(missing_ok=True)
            log = executed / ".logs" / f"{notebook.name}.log"
            print(f"== {notebook.name}: started", flush=True)
            running[notebook] = (start(notebook, executed, papermill, log), time.monotonic(), log)
            continue
        if not running:  # nothing can start: a failure, or an upstream chapter that never ran
            return False
        for notebook, (process, t0, log) in list(running.items()):
            cpu = finished_cpu_seconds(process)
            if cpu is None:
                continue
            del running[notebook]
            cpu_total[0] += cpu
            if process.returncode != 0:
                print(log.read_text()[-4000:], flush=True)
                print(f"== {notebook.name} failed (log: {log})", flush=True)
                failed = True
                continue
            record_cpu_seconds(executed_copy(notebook, executed), cpu)
            kept_key(notebook, executed).parent.mkdir(parents=True, exist_ok=True)
            kept_key(notebook, executed).write_text(wanted[notebook.name] + "\n")
            done.add(chapter(notebook))
            print(f"== {notebook.name}: {time.monotonic() - t0:.0f}s wall, {cpu:.0f}s CPU", flush=True)
        time.sleep(0.2)
    return not failed


def record_cpu_seconds(copy: Path, cpu: float) -> None:
    """The CPU seconds a notebook's run took, in its executed copy's metadata (littlekit.cpu_seconds),
    for the book's run-time page beside papermill's wall time."""
    notebook = json.loads(copy.read_text(encoding="utf-8"))
    notebook["metadata"].setdefault("littlekit", {})["cpu_seconds"] = round(cpu, 1)
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def find_notebooks(source: Path) -> list[Path]:
    """The chapters, then the course exercises (source/exercises/exNN_*.ipynb)."""
    return sorted(source.glob("[0-9][0-9]_*.ipynb")) + sorted(
        (source / EXERCISES).glob("ex[0-9][0-9]_*.ipynb")
    )


def selected(notebooks: list[Path], only: list[str] | None, session: int | None) -> list[Path]:
    """The notebooks `--only` and `--session` ask for with the chapters they read; all without them."""
    if only is None and session is None:
        return notebooks
    names = list(only or [])
    if session is not None:
        found = {s.number: s for s in sessions(SYLLABUS)}
        if session not in found:
            raise ValueError(f"no session {session} in {SYLLABUS}; sessions: {', '.join(map(str, found))}")
        names += [*found[session].chapters, *found[session].exercises]
    return selection(notebooks, names, UPSTREAM)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="execute every notebook")
    parser.add_argument(
        "--adopt",
        action="store_true",
        help="execute nothing; keep the current keys for the executed copies there are (a book "
        "executed before keys were kept, with the inputs it was executed from)",
    )
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count() or 1, help="cores to share out (default: this machine's)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NOTEBOOK",
        help="run only these (09, ex09, 09_training.ipynb) and the chapters they read",
    )
    parser.add_argument(
        "--session",
        type=int,
        help="run only what this session of the syllabus needs: its chapters, exercises and the "
        "chapters they read",
    )
    parser.add_argument("--notebooks", default=str(ROOT / "notebooks"))
    parser.add_argument("--executed", default=str(ROOT / "book" / "executed"))
    args = parser.parse_args(argv)
    source, executed = Path(args.notebooks), Path(args.executed)
    notebooks = find_notebooks(source)
    shared = digest([f for name in SHARED_INPUTS for f in files_under(ROOT / name)])
    wanted = keys(notebooks, shared)
    try:
        notebooks = selected(notebooks, args.only, args.session)
    except ValueError as error:
        parser.error(str(error))
    if args.adopt:
        adopted = [n for n in notebooks if executed_copy(n, executed).is_file()]
        for notebook in adopted:
            kept_key(notebook, executed).parent.mkdir(parents=True, exist_ok=True)
            kept_key(notebook, executed).write_text(wanted[notebook.name] + "\n")
        print(f"== kept the keys of {len(adopted)} executed notebook(s) as they are; nothing executed")
        return 0
    todo = stale(notebooks, executed, wanted, args.force)
    for notebook in notebooks:
        if notebook not in todo:
            print(f"== {notebook.name}: unchanged", flush=True)
        executed_copy(notebook, executed).parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    done = {chapter(n) for n in notebooks if n not in todo}
    cpu_total = [0.0]
    ok = execute(todo, executed, wanted, done, max(1, args.cores), cpu_total)
    print(
        f"== all notebooks: {time.monotonic() - began:.0f}s wall, {cpu_total[0]:.0f}s CPU "
        f"({len(todo)} executed)",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
