"""Which run an output folder belongs to, so that two runs never mix their files in one folder.

datatrove's writers name each file by task rank (`<rank>.jsonl.gz`), so a run with other
settings writing into a folder of an earlier run overwrites some of its files and leaves the
others: a 2-task run into the folder of a 4-task one leaves shards 2 and 3 of the old run beside
the new 0 and 1, and whoever reads the folder reads both runs. Each run therefore claims its
output folders (kept, rejected) with a marker file, `.littlekit_output.json`, holding the run's
identity: its manifest (`littlekit.filter.datatrove.resume.describe_run`: tasks, stages and
options, the input files and their identities) without the output paths. A later run into the
folder is

    the same run (same identity): it resumes, as the logging directory's manifest allows;
    another run: refused (`OutputInUse`, naming the folder and the other run's files), unless
    `force`, which writes the new run beside the folder (`<folder>.partial/`) and swaps it in,
    the old folder removed, only once every task has completed, so an interrupted run leaves
    the old output whole and a rerun with `force` resumes the one beside it.

`force` only ever removes littlekit output: a folder it replaces must carry a marker and hold
nothing but the files a run writes there (`<rank>.jsonl(.gz)`, `<stage>/<rank>.jsonl(.gz)`);
one holding anything else (the input, notes, another tool's files) or no marker is refused
(`not_ours`), before the run and again just before the swap.

A folder written before markers existed (no marker, but files) is this run's when the logging
directory's manifest is this run's (a run started before and resumed now); else it is another
run's. An empty folder, or one holding only a marker, is free. Local folders only: a remote
output (a URL) is not checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from littlekit.filter.datatrove.resume import MANIFEST
from littlekit.filter.paths import OUTPUT_MARKER

OWNER = OUTPUT_MARKER  # hidden, and no *.jsonl* name: readers of the folder skip it
STAGING = ".partial"  # <folder>.partial/: a forced run's output until it is swapped in
REPLACED = ".replaced"  # <folder>.replaced/: the old output while the new one is swapped in
SHOWN = 10  # files named in a refusal
RUN_FILE = re.compile(r"(?:[^/]+/)?\d{5}\.jsonl(?:\.gz)?")  # <rank>.jsonl.gz, <stage>/<rank>.jsonl.gz


class OutputInUse(ValueError):
    """An output folder holds another run's output; the message names the folder and its files."""


def run_identity(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest without the output folders' paths (JSON-normalised), so a run written beside
    its folder and swapped in is still the same run."""
    normal = json.loads(json.dumps(manifest, sort_keys=True, default=str))
    for step in normal.get("pipeline", []):
        step.pop("output_folder", None)
    return normal


def is_local(folder: str | os.PathLike) -> bool:
    return "://" not in str(folder)


def staging_folder(folder: str | os.PathLike) -> Path:
    folder = Path(folder)
    return folder.with_name(folder.name + STAGING)


def _files(folder: Path) -> list[str]:
    """Every file under the folder but the marker, relative to it, sorted."""
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if (path.is_file() or path.is_symlink()) and path.name != OWNER
    )


def _marker(folder: Path) -> dict[str, Any] | None:
    path = folder / OWNER
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # unreadable: nobody's identity, so another run's
    return data if isinstance(data, dict) else {}


def _legacy_manifest(logging_dir: str | os.PathLike) -> dict[str, Any] | None:
    path = Path(logging_dir) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _not_a_folder(folder: Path) -> list[str] | None:
    """What `foreign_files` and `not_ours` say of a path that is not a folder: nothing when it is
    absent, the file itself when it is one; None for a folder (look inside)."""
    if not folder.exists() and not folder.is_symlink():
        return []
    if not folder.is_dir():
        return [f"{folder.name} (a file, not a folder)"]
    return None


def foreign_files(
    folder: str | os.PathLike,
    identity: Mapping[str, Any],
    manifest: Mapping[str, Any] | None = None,
    logging_dir: str | os.PathLike | None = None,
) -> list[str]:
    """The files of another run in `folder` (empty: the folder is free or this run's).

    `manifest` and `logging_dir` (this run's) recognise a folder written before markers existed:
    no marker, but the logging directory's manifest is this run's.
    """
    folder = Path(folder)
    if (not_a_folder := _not_a_folder(folder)) is not None:
        return not_a_folder
    files = _files(folder)
    if not files:
        return []
    marker = _marker(folder)
    if marker is not None:
        return [] if marker.get("identity") == dict(identity) else files
    if manifest is not None and logging_dir is not None and is_local(logging_dir):
        first = _legacy_manifest(logging_dir)
        now = json.loads(json.dumps(manifest, sort_keys=True, default=str))
        if first is not None and "inputs" not in first:
            now.pop("inputs", None)
        if first == now:
            return []
    return files


def not_ours(folder: str | os.PathLike) -> list[str]:
    """The files in `folder` that no littlekit run writes there, which `force` must never remove:
    every file when the folder has no (readable) marker, else those other than the marker and
    `<rank>.jsonl(.gz)` shards (in a sub-folder per stage for a rejected folder); empty when the
    folder is absent or holds littlekit output only."""
    folder = Path(folder)
    if (not_a_folder := _not_a_folder(folder)) is not None:
        return not_a_folder
    files = _files(folder)
    if not _marker(folder):
        return files
    return [name for name in files if not RUN_FILE.fullmatch(name) and not name.startswith(".littlekit")]


def not_ours_refusal(folder: str | os.PathLike, files: list[str], label: str = "output folder") -> str:
    shown = ", ".join(files[:SHOWN]) + (f", ... and {len(files) - SHOWN} more" if len(files) > SHOWN else "")
    marked = "" if _marker(Path(folder)) or not Path(folder).is_dir() else f" and no {OWNER}"
    return (
        f"{label} {folder} holds files that are not littlekit output ({shown}){marked}; --force "
        f"(force=True) replaces only a folder of a littlekit run's output (its <rank>.jsonl.gz files and "
        f"{OWNER}) and never removes anything else: move those files away, or give a new output folder"
    )


def describe_owner(folder: str | os.PathLike) -> str:
    """A few words on the run that wrote the folder, from its marker."""
    marker = _marker(Path(folder))
    if not marker:
        return f"output that is not this run's (no {OWNER} says whose)"
    identity = marker.get("identity") or {}
    stages = [step["stage"] for step in identity.get("pipeline", []) if step.get("stage")]
    parts = [f"{identity.get('tasks')} tasks"] if identity.get("tasks") is not None else []
    if stages:
        parts.append(f"stages {','.join(stages)}")
    if marker.get("logging_dir"):
        parts.append(f"logged in {marker['logging_dir']}")
    return "the output of another run (" + ", ".join(parts) + ")"


def refusal(folder: str | os.PathLike, files: list[str], tasks: int, label: str = "output folder") -> str:
    shown = ", ".join(files[:SHOWN]) + (f", ... and {len(files) - SHOWN} more" if len(files) > SHOWN else "")
    return (
        f"{label} {folder} holds {describe_owner(folder)}: {shown}; this run ({tasks} tasks, other "
        "settings or input) would mix its files with those. Give a new output folder, or pass --force "
        f"(force=True) to replace it as a whole once this run has completed (written beside it, in "
        f"{staging_folder(folder)}, until then)"
    )


def claim(folder: str | os.PathLike, identity: Mapping[str, Any], logging_dir: str | os.PathLike) -> None:
    """Write the folder's marker: this run's output goes here."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = {"identity": dict(identity), "logging_dir": str(Path(logging_dir).absolute())}
    if _marker(folder) == json.loads(json.dumps(marker)):
        return  # already claimed: a resumed run rewrites nothing
    partial = folder / (OWNER + STAGING)
    partial.write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, folder / OWNER)


def staging_for(folder: str | os.PathLike, identity: Mapping[str, Any]) -> Path:
    """Where a forced run writes beside `folder`: `<folder>.partial/`, resumed when it is this
    run's, emptied when an earlier forced run with other settings left it; OutputInUse when
    something that is not a littlekit staging folder has that name."""
    staging = staging_folder(folder)
    if foreign_files(staging, identity):
        unowned = not_ours(staging)
        if unowned:
            raise OutputInUse(
                f"{staging} exists and is not a littlekit run's ({', '.join(unowned[:SHOWN])}); move it "
                f"away so that the new output can be written there before it replaces {folder}"
            )
        shutil.rmtree(staging)  # an unfinished forced run with other settings: nothing to keep
    return staging


def swap_in(staging: str | os.PathLike, folder: str | os.PathLike) -> None:
    """Put the finished `staging` folder in place of `folder`: the old one is renamed aside, the new
    one renamed into place, then the old one removed. OutputInUse, before anything moves, when the
    old folder (or a `<folder>.replaced/` left behind) holds anything but littlekit output."""
    staging, folder = Path(staging), Path(folder)
    old = folder.with_name(folder.name + REPLACED)
    check_replaceable([old, folder])
    _remove(old)
    if folder.exists() or folder.is_symlink():
        os.replace(folder, old)
    os.replace(staging, folder)
    _remove(old)


def check_replaceable(folders: list[str | os.PathLike]) -> None:
    """OutputInUse naming every folder of `folders` that holds files `force` must not remove."""
    refused = [not_ours_refusal(folder, files) for folder in folders if (files := not_ours(folder))]
    if refused:
        raise OutputInUse("; ".join(refused))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def plan_outputs(
    folders: list[str | os.PathLike],
    manifest: Mapping[str, Any],
    logging_dir: str | os.PathLike,
    force: bool = False,
    tasks: int | None = None,
) -> dict[str, str]:
    """{folder: where this run writes it}: the folder itself, or with `force` the staging folder
    beside it when it holds another run's output (or when an earlier forced run of these settings
    left its staging folder: that one is resumed). OutputInUse, before anything is written, for
    every folder of another run when not `force`."""
    identity = run_identity(manifest)
    where: dict[str, str] = {}
    refused: list[str] = []
    for folder in folders:
        where[str(folder)] = str(folder)
        if not is_local(folder):
            continue
        foreign = foreign_files(folder, identity, manifest, logging_dir)
        staging = staging_folder(folder)
        resumable = _marker(staging) is not None and not foreign_files(staging, identity)
        if foreign and not force:
            refused.append(refusal(folder, foreign, tasks or manifest.get("tasks", 0)))
        elif foreign and not_ours(folder):  # force replaces littlekit output only
            refused.append(not_ours_refusal(folder, not_ours(folder)))
        elif foreign or resumable:
            where[str(folder)] = str(staging_for(folder, identity))
    if refused:
        raise OutputInUse("; ".join(refused))
    return where
