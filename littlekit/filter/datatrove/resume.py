"""Resume safety: the run's manifest (settings and input file identities) and the refusal of a
rerun that differs from the first run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from datetime import datetime
from glob import has_magic
from typing import Any

from datatrove.io import DataFolder, get_datafolder
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.readers.base import BaseDiskReader

from littlekit.filter.datatrove.blocks import LittleKitFilter

MANIFEST = "littlekit_run.json"


def describe_run(pipeline: Sequence[PipelineStep], tasks: int) -> dict[str, Any]:
    """What must not change between a run and its resumption: tasks, stages, outputs, and the input
    files, by name and by content identity (size and modification time, `input_identities`)."""
    steps = []
    inputs: dict[str, dict[str, dict[str, Any]]] = {}
    for step in pipeline:
        entry: dict[str, Any] = {"block": type(step).__name__}
        if isinstance(step, LittleKitFilter):
            # a stage's options decide what it keeps: other options would mix two filters' outputs
            entry.update(stage=step.stage_name, options=step.options)
        for attribute in ("data_folder", "output_folder"):
            folder = getattr(step, attribute, None)
            if folder is not None:
                # another folder means other input, or done tasks' outputs left behind in the old one
                entry[attribute] = folder.path
        if getattr(step, "glob_pattern", None):
            entry["glob_pattern"] = step.glob_pattern  # it selects the files, hence each task's shard
        # a paths_file reader reads the files that file lists, so there is no folder listing to record
        if isinstance(step, BaseDiskReader) and not step.paths_file:
            files = getattr(step, "files", None)  # LittleKitInputReader's: listed once, by the driver
            listed = files is None
            if listed:
                files = step.data_folder.list_files(recursive=step.recursive, glob_pattern=step.glob_pattern)
            entry["files"] = len(files)  # files added or removed would reshard the input
            # the names too: a rename, at the same count, moves files between tasks' shards
            entry["files_sha256"] = hashlib.sha256("\n".join(files).encode()).hexdigest()
            inputs[step.data_folder.path] = input_identities(
                step.data_folder, files, step.recursive, step.glob_pattern, listed=listed
            )
        steps.append(entry)
    # tasks: datatrove deals files out by rank, so another task count reshards the input
    return {"tasks": tasks, "pipeline": steps, "inputs": inputs}


_MODIFIED_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "timeCreated")
_CHECKSUM_KEYS = ("ETag", "etag", "md5Hash", "crc32c", "blob_id", "sha256", "checksum")


def input_identities(
    folder: DataFolder,
    files: Sequence[str],
    recursive: bool = True,
    glob_pattern: str | None = None,
    *,
    listed: bool = True,
) -> dict[str, dict]:
    """{file: {"size", "modified"[, "checksum"]}} for each of `files` (relative to `folder`).

    From one listing, the one `DataFolder.list_files` makes for the same `glob_pattern` (a local
    stat per file, an object store's LIST), so no input byte is read: `modified` is the
    modification time (local: seconds since the epoch), `checksum` the store's ETag or hash where
    the listing carries one (S3, GCS, the Hub), never computed here. Not `listed` (the files were
    listed already: one file of a big folder, LittleKitInputReader's), each file is looked up alone.
    """
    maxdepth = None if recursive else 1  # the depth list_files lists with, so both see the same files
    if glob_pattern and not has_magic(glob_pattern):
        glob_pattern = f"*{glob_pattern}"  # as list_files does
    if not listed:
        listing = {}
    elif glob_pattern:
        listing = folder.glob(glob_pattern, maxdepth=maxdepth, detail=True)
    else:
        listing = folder.find("", maxdepth=maxdepth, detail=True)
    found = {}
    for name in files:
        info = listing.get(name)
        if info is None:
            info = folder.info(name)
        identity: dict[str, Any] = {"size": info.get("size")}
        for keys, field in ((_MODIFIED_KEYS, "modified"), (_CHECKSUM_KEYS, "checksum")):
            # each filesystem names these its own way (local mtime, S3 LastModified and ETag, GCS updated)
            value = next((info[key] for key in keys if info.get(key) is not None), None)
            if value is not None:
                # text for a datetime (S3): the manifest is compared as it survives a JSON round trip
                identity[field] = value if isinstance(value, int | float) else str(value)
        found[name] = identity
    return found


class ResumeRefused(ValueError):
    """A rerun with the same logging directory whose settings or input differ from the first run's."""


def check_manifest(logging_dir, manifest: dict[str, Any]) -> None:
    """Write the run's manifest, or refuse (ResumeRefused) a rerun whose manifest differs from the
    first run's: naming the input file that changed, was added or was removed, else the setting.

    `logging_dir`: a path or datatrove DataFolder (local or remote, as the executor's).
    """
    folder = get_datafolder(str(logging_dir) if isinstance(logging_dir, os.PathLike) else logging_dir)
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    if folder.isfile(MANIFEST):
        with folder.open(MANIFEST, "r") as handle:
            first = json.load(handle)
        now = json.loads(text)  # in JSON form, like `first`: tuples as lists, datetimes as text
        if "inputs" not in first:  # written before input identities were recorded: names only
            now.pop("inputs", None)
        if first != now:
            raise ResumeRefused(_refusal(folder.path, first, now))
        return
    write_manifest(folder, manifest)  # only without one: a rerun is checked against it, never replaces it


def write_manifest(logging_dir, manifest: dict[str, Any]) -> None:
    """Write (or replace) the run's manifest in the logging directory (a path or DataFolder)."""
    folder = get_datafolder(str(logging_dir) if isinstance(logging_dir, os.PathLike) else logging_dir)
    with folder.open(MANIFEST, "w") as handle:
        handle.write(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")


def _refusal(logging_dir: str, first: dict[str, Any], now: dict[str, Any]) -> str:
    changes = _input_changes(first.get("inputs", {}), now.get("inputs", {}))
    restart = (
        "start over with a new --logging-dir (logging_dir) and new output folders, or delete this "
        "one together with the outputs"
    )
    if changes:
        shown = changes[:10] + ([f"... and {len(changes) - 10} more"] if len(changes) > 10 else [])
        return (
            f"refusing to resume the run in {logging_dir}: its input changed since the run started "
            f"(its {MANIFEST} records each input file's size and modification time):\n  "
            + "\n  ".join(shown)
            + "\nResuming would mix outputs of two versions of the input. Restore the input as it was "
            f"to resume, or {restart}."
        )
    differs = [key for key in sorted(set(first) | set(now)) if first.get(key) != now.get(key)]
    detail = ""
    if first.get("tasks") != now.get("tasks"):
        detail = f" (tasks {first.get('tasks')} then, {now.get('tasks')} now)"
    return (
        f"{logging_dir} holds a run with other settings ({', '.join(differs)} differ{detail}; see its "
        f"{MANIFEST}); resuming it with these would mix two runs' outputs. Rerun with the same "
        f"settings to resume, or {restart}."
    )


def _input_changes(first: dict[str, dict], now: dict[str, dict]) -> list[str]:
    """One line per input file changed, added or removed between two manifests' `inputs`."""
    lines = []
    for folder in sorted(set(first) | set(now)):
        before, after = first.get(folder, {}), now.get(folder, {})
        for name in sorted(set(before) | set(after)):
            path = f"{folder.rstrip('/')}/{name}"
            if name not in after:
                lines.append(f"removed: {path}")
            elif name not in before:
                lines.append(f"added: {path}")
            elif before[name] != after[name]:
                what = [
                    f"{key} {_shown(key, before[name].get(key))} -> {_shown(key, after[name].get(key))}"
                    for key in ("size", "modified", "checksum")
                    if before[name].get(key) != after[name].get(key)
                ]
                lines.append(f"changed: {path} ({', '.join(what)})")
    return lines


def _shown(key: str, value: Any) -> str:
    if key == "size" and isinstance(value, int):
        return f"{value:,} bytes"
    if key == "modified" and isinstance(value, int | float):
        # microseconds: two saves within one second would otherwise print the same time
        return datetime.fromtimestamp(value).isoformat(sep=" ", timespec="microseconds")
    return str(value)
