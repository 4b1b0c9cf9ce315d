"""Execute the book's notebooks with papermill, only those whose inputs changed since the last run.

    python book/tools/run_notebooks.py [--force] [--executed book/executed]

A notebook's key is a SHA-256 over what its run depends on: its own file, the `littlekit`
package, the embedded `data/`, `pyproject.toml`, the `-p` parameters (none for the book) and the
keys of the chapters whose run products it reads (`UPSTREAM`). The key of a successful run is kept
in <executed>/.keys/<notebook>.sha256; a notebook whose executed copy exists under an equal key is
not run again, so touching one notebook re-executes it and the chapters downstream of it, and an
unchanged book re-executes nothing. A failed run keeps no key. `--force` runs every notebook;
`--adopt` runs none and keeps keys for the executed copies there are (a book executed before keys
were kept).
Each notebook's time (or "unchanged") and the total are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_INPUTS = ("littlekit", "data", "pyproject.toml")
# The chapters each chapter reads run products of (its "Reads" paragraph), by number.
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
    return notebook.name[:2]


def keys(
    notebooks: list[Path], shared: str, parameters: str = "", upstream: Mapping | None = None
) -> dict[str, str]:
    """{notebook name: key}, each over its file, the shared inputs, the parameters and its
    upstream chapters' keys (upstream first, so chapters are keyed in number order)."""
    upstream = UPSTREAM if upstream is None else upstream
    by_chapter: dict[str, str] = {}
    out = {}
    for notebook in sorted(notebooks):
        number = chapter(notebook)
        if number not in upstream:
            raise KeyError(f"{notebook.name}: no entry in UPSTREAM; say which chapters' products it reads")
        missing = [u for u in upstream[number] if u not in by_chapter]
        if missing:
            raise KeyError(f"{notebook.name}: upstream chapter(s) {', '.join(missing)} have no notebook")
        h = hashlib.sha256()
        for part in (
            notebook.read_bytes(),
            shared.encode(),
            parameters.encode(),
            *(by_chapter[u].encode() for u in upstream[number]),
        ):
            h.update(hashlib.sha256(part).digest())
        by_chapter[number] = out[notebook.name] = h.hexdigest()
    return out


def stale(
    notebooks: list[Path], executed: Path, wanted: Mapping[str, str], force: bool = False
) -> list[Path]:
    """The notebooks to run: all with force; else those without an executed copy whose kept key
    equals the wanted one."""
    if force:
        return list(notebooks)
    out = []
    for notebook in notebooks:
        kept = executed / ".keys" / f"{notebook.name}.sha256"
        current = kept.read_text().strip() if kept.is_file() else None
        if current != wanted[notebook.name] or not (executed / notebook.name).is_file():
            out.append(notebook)
    return out


def run(notebook: Path, executed: Path, papermill: str) -> bool:
    """papermill the notebook into executed/ (cwd: its folder); True when it succeeded."""
    command = [
        papermill,
        "--cwd",
        str(notebook.parent),
        "--kernel",
        "python3",
        str(notebook),
        str(executed / notebook.name),
    ]
    return subprocess.run(command).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="execute every notebook")
    parser.add_argument(
        "--adopt",
        action="store_true",
        help="execute nothing; keep the current keys for the executed copies there are (a book "
        "executed before keys were kept, with the inputs it was executed from)",
    )
    parser.add_argument("--notebooks", default=str(ROOT / "notebooks"))
    parser.add_argument("--executed", default=str(ROOT / "book" / "executed"))
    args = parser.parse_args(argv)
    source, executed = Path(args.notebooks), Path(args.executed)
    notebooks = sorted(source.glob("[0-9][0-9]_*.ipynb"))
    shared = digest([f for name in SHARED_INPUTS for f in files_under(ROOT / name)])
    wanted = keys(notebooks, shared)
    (executed / ".keys").mkdir(parents=True, exist_ok=True)
    if args.adopt:
        adopted = [n for n in notebooks if (executed / n.name).is_file()]
        for notebook in adopted:
            (executed / ".keys" / f"{notebook.name}.sha256").write_text(wanted[notebook.name] + "\n")
        print(f"== kept the keys of {len(adopted)} executed notebook(s) as they are; nothing executed")
        return 0
    todo = set(stale(notebooks, executed, wanted, args.force))
    papermill = str(Path(sys.executable).parent / "papermill")
    start = time.monotonic()
    for notebook in notebooks:
        if notebook not in todo:
            print(f"== {notebook.relative_to(source.parent)}: unchanged", flush=True)
            continue
        print(f"== {notebook.relative_to(source.parent)}", flush=True)
        kept = executed / ".keys" / f"{notebook.name}.sha256"
        kept.unlink(missing_ok=True)
        t0 = time.monotonic()
        if not run(notebook, executed, papermill):
            print(f"== {notebook.name} failed", flush=True)
            return 1
        kept.write_text(wanted[notebook.name] + "\n")
        print(f"== {notebook.relative_to(source.parent)}: {time.monotonic() - t0:.0f}s", flush=True)
    print(f"== all notebooks: {time.monotonic() - start:.0f}s ({len(todo)} executed)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
