"""`littlekit filter`'s path checks: the input, where each output goes, and that no two paths
of a run are one file."""

from __future__ import annotations

import argparse
import json
import os
from itertools import combinations, permutations
from pathlib import Path

from littlekit.argtypes import UsageError
from littlekit.io import input_format, partial_path
from littlekit.swap import same_file

OUTPUT_MARKER = ".littlekit_output.json"  # in a datatrove run's output folder: which run wrote it


def names_a_file(path: str | Path) -> bool:
    """Whether the name ends as an input/output file does (.jsonl, .jsonl.gz, .parquet)."""
    try:
        input_format(path)
    except ValueError:
        return False
    return True


def folder_files(folder: str | Path, fmt: str | None = None) -> tuple[list[str], list[str]]:
    """(input files, files not read) of a folder, each relative to it ("sub/a.jsonl"), sorted.

    The one rule for which files of a folder are input, whatever runs them: every file under it
    (sub-folders included) whose name ends in a suffix `input_format` knows (.jsonl, .ndjson,
    .jsonl.gz, .ndjson.gz, .parquet, .pq: mixed formats are all read, each file by its own name)
    and, with `fmt`, is of that format. A hidden file or folder (".name": an editor's or a copy
    tool's, or a run's marker) is never input; any other file (a.jsonl.partial, a.jsonl.bak,
    notes.txt) is listed as not read.
    """
    found: list[str] = []
    skipped: list[str] = []
    root = Path(folder)
    for top, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            relative = (Path(top) / name).relative_to(root).as_posix()
            try:
                kind = input_format(name)
            except ValueError:
                skipped.append(relative)
                continue
            (found if fmt is None or kind == fmt else skipped).append(relative)
    return sorted(found), sorted(skipped)


def output_paths(args: argparse.Namespace) -> tuple[Path, Path | None, Path | None]:
    """--out names a file, or a folder (ending in / or existing) that gets the three usual files."""
    out = Path(args.out)
    if _out_is_folder(args):
        return out / "kept.jsonl", args.rejected or out / "rejected.jsonl", args.report or out / "report.json"
    return out, args.rejected, args.report


def _out_is_folder(args: argparse.Namespace) -> bool:
    return args.out.endswith(("/", os.sep)) or Path(args.out).is_dir()


def named_paths(
    args: argparse.Namespace, out: Path, rejected: Path | None, report: Path | None
) -> list[tuple[str, Path | None, bool]]:
    """(flag, path, written through a .partial file) for the input and every output of the run."""
    folder = _out_is_folder(args)

    def label(flag: str, path: Path | None, given) -> str:
        return flag if given is not None or not folder else f"--out (its {path.name if path else ''})"

    return [
        ("--in", args.inp, False),
        ("--out" if not folder else "--out (its kept.jsonl)", out, True),
        (label("--rejected", rejected, args.rejected), rejected, True),
        (label("--report", report, args.report), report, False),
    ]


def check_distinct(named: list[tuple[str, Path | None, bool]], files: bool = True) -> None:
    """UsageError, before anything runs, when two of the run's paths (the input and the outputs)
    are one file, through symlinks, `..` or hard links, or an output is the `.partial` file another
    one is written to; with `files` (the in-process run), also when an output is an existing folder."""
    given = [(flag, Path(path), partial) for flag, path, partial in named if path is not None]
    for flag, path, _ in given:
        if files and flag != "--in" and path.is_dir():
            raise UsageError(f"{flag} {path} is a folder; give a file name")
    for (flag_a, a, _), (flag_b, b, _) in combinations(given, 2):
        if same_file(a, b):
            where = (
                f"{flag_a} and {flag_b} both name {a}"
                if a == b
                else f"{flag_a} {a} and {flag_b} {b} are one file ({os.path.realpath(a)})"
            )
            if "--in" in (flag_a, flag_b):
                raise UsageError(
                    f"an output path is the input file: {where} (outputs never overwrite the input)"
                )
            raise UsageError(f"{where}: give each output its own path")
    for (flag_w, w, partial), (flag_o, o, _) in permutations(given, 2):
        if partial and same_file(partial_path(w), o):
            raise UsageError(
                f"{flag_o} {o} is the file that {flag_w} {w} is written to until the run ends; "
                "give it another name"
            )


def check_input(args: argparse.Namespace) -> str:
    if args.hf_dataset:
        if args.format != "auto":
            raise UsageError("--format applies to --in, not --hf-dataset")
        return "hf"
    if args.inp.is_dir():
        raise UsageError(
            f"--in {args.inp} is a folder; the in-process run reads one file: name a file in it, or run "
            f"the whole folder with --executor local --logging-dir DIR (--out is then a folder too)"
        )
    if not args.inp.exists():
        raise UsageError(f"input file not found: {args.inp}")
    if not args.inp.is_file():  # a pipe: /dev/stdin, a FIFO, <(zcat ...)
        return _stream_format(args)
    if args.format != "auto":
        return args.format
    try:
        return input_format(args.inp)
    except ValueError as exc:
        raise UsageError(f"{exc} (or pass --format)") from None


def _stream_format(args: argparse.Namespace) -> str:
    """The format of an input that is a stream rather than a file: JSONL only (Parquet is read
    by seeking), from --format or a name ending in .jsonl."""
    fmt = args.format
    if fmt == "auto":
        try:
            fmt = input_format(args.inp)
        except ValueError:
            raise UsageError(
                f"--in {args.inp} is a stream (not a regular file) whose name tells no format; "
                "pass --format jsonl (JSON lines, gzip-compressed when the name ends in .gz)"
            ) from None
    if fmt != "jsonl":
        raise UsageError(
            f"--in {args.inp} is a stream (not a regular file) and Parquet cannot be read from one "
            "(its reader seeks); save it to a file first"
        )
    return fmt


def check_rejected_name(rejected: Path | None) -> None:
    """UsageError for a --rejected name that says another format: the rejected file is JSONL
    (gzip-compressed when the name ends in .gz); a name without a suffix is taken as JSONL."""
    if rejected is None:
        return
    try:
        if input_format(rejected) == "jsonl":
            return
    except ValueError:
        if not rejected.suffix:
            return
    raise UsageError(
        f"--rejected {rejected}: the rejected records are written as JSON lines; give a name ending in "
        ".jsonl or .jsonl.gz"
    )


def finished_results(named: list[tuple[str, Path | None, bool]]) -> list[tuple[str, Path]]:
    """(flag, path) of each output of the in-process run that already holds a finished result:
    the kept and rejected files, and a report that is not one of a stopped run (a stopped run
    leaves .partial files and a report saying it stopped, which a rerun replaces)."""
    found = []
    for flag, path, _ in named:
        if flag == "--in" or path is None or not (path.is_file() or path.is_symlink()):
            continue
        if flag.startswith("--report") or flag == "--out (its report.json)":
            if _stopped_report(path):
                continue
        found.append((flag, path))
    return found


def _stopped_report(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and bool(data.get("stopped"))


def check_replaceable(
    named: list[tuple[str, Path | None, bool]], force: bool, out: str | None = None
) -> None:
    """UsageError, before anything is written, when outputs of the run already hold a finished
    result and not `force`; `out` is --out as given (a folder's files are named under it)."""
    if out is not None and (Path(out) / OUTPUT_MARKER).is_file():
        raise UsageError(
            f"--out {out} holds the output of a datatrove run (--executor local|slurm|ray: its "
            f"{OUTPUT_MARKER}); an in-process result written among its files would be read as part of "
            "it: give another folder"
        )
    found = finished_results(named)
    if not found or force:
        return
    in_folder = [path.name for flag, path in found if flag.startswith("--out (its ")]
    listed = [f"{flag} {path}" for flag, path in found if not flag.startswith("--out (its ")]
    if in_folder:
        listed.insert(0, f"--out {out} ({', '.join(in_folder)})")
    raise UsageError(
        f"{' and '.join(listed)} {'hold' if len(listed) > 1 else 'holds'} a finished result; pass --force "
        "to replace it (the new result is written beside it and swapped in once complete), or give "
        "another path"
    )
