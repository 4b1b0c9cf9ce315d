"""`littlekit filter --executor local|slurm|ray`: the same stages as datatrove blocks, run here,
on Ray, or submitted to Slurm."""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError
from littlekit.filter.cascade import ErrorLimit
from littlekit.filter.parser import MAX_WORKERS, SLURM_FLAGS
from littlekit.filter.paths import check_distinct, folder_files, names_a_file
from littlekit.filter.registry import StageOptions
from littlekit.filter.runner import (
    OutputWriteError,
    config_line,
    no_document_read,
    options_from_args,
    progress,
    say_failed,
    say_warning,
    stage_names_from,
    unreadable_line,
    write_report,
)
from littlekit.io import (
    JSONL_SUFFIXES,
    PARQUET_SUFFIXES,
    InputFileError,
    RecordError,
    compression_problem,
    input_format,
    read_documents,
)


def run_cluster(args: argparse.Namespace) -> int:
    """The same stages as datatrove blocks, run here (local), on Ray, or submitted to Slurm."""
    _check_datatrove_args(args)
    names = stage_names_from(args.stages)
    options = _device_for_tasks(args, names, options_from_args(args, names))
    # here, not at the top: only the datatrove runners import datatrove
    from littlekit.filter.datatrove.outputs import OutputInUse
    from littlekit.filter.datatrove.pipeline import check_apart, filter_with_datatrove

    try:
        check_apart(args.inp, args.out, args.rejected, args.logging_dir)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for flag, folder in (("--out", args.out), ("--rejected", args.rejected)):
        if args.report is not None and folder is not None and _inside(args.report, folder):
            raise UsageError(
                f"--report {args.report} is inside {flag} {folder}, which holds the run's shards only "
                "(--force replaces it as a whole): write the report elsewhere"
            )
    check_distinct(
        [
            ("--in", args.inp, False),
            ("--out", Path(args.out), False),
            ("--rejected", args.rejected, False),
            ("--report", args.report or args.logging_dir / "report.json", False),
        ],
        files=False,
    )
    say = progress(args.quiet)
    files = _input_files(args)
    _check_compression(files, args)
    tasks = _tasks(args.tasks or 1, len(files), args.inp)
    runner_options = {
        "tasks": tasks,
        "workers": _workers(args.workers, tasks, say, args.executor),
        "text_key": args.text_field,
        "id_key": args.id_field,
        "input_format": None if args.format == "auto" else args.format,
        "max_bytes": args.max_bytes,
    }
    if args.batch_rows:
        runner_options["batch_size"] = args.batch_rows
    slurm = _slurm_options(args) if args.executor == "slurm" else {}
    say(f"input : {args.inp}{_files_line(files, args)} -> {args.out} ({args.executor}, {tasks:,} tasks)")
    say(config_line(names, options))
    limit = ErrorLimit(args.max_error_rate)
    written: dict[str, str] = {}  # output folder -> where its output is (beside it: not swapped in)
    start = time.perf_counter()
    try:
        report = filter_with_datatrove(
            args.inp,
            args.out,
            names,
            args.logging_dir,
            options=options,
            rejected_dir=args.rejected,
            executor=args.executor,
            force=args.force,
            written=written,
            swap_if=lambda report: not no_document_read(report) and not limit.breach(report, final=True),
            **runner_options,
            **slurm,
        )
    except OutputInUse as exc:  # found before anything was written
        raise UsageError(str(exc)) from None
    except InputFileError as exc:  # a task could not read one of its files on
        say_failed(
            f"{exc}. No output was swapped in or finished (see {args.logging_dir}); fix or replace the "
            "file, then run again with a new --logging-dir (a changed input file is refused to resume)"
        )
        return 1
    seconds = time.perf_counter() - start
    if report is None:  # slurm: submitted, not run
        settings = ", ".join(f"{key}={value}" for key, value in slurm.items())
        print(f"submitted to slurm: {runner_options['tasks']} tasks, stages {','.join(names)} ({settings})")
        print(f"launch script: {args.logging_dir / 'launch_script.slurm'}")
        print(f"output  : {args.out}" + (f"   rejected: {args.rejected}" if args.rejected else ""))
        print(
            "when every task has finished, the counts: "
            f"littlekit.filter.datatrove.datatrove_report('{args.logging_dir}'); "
            "rerun this command to resubmit unfinished tasks"
        )
        return 0
    report_path = args.report or args.logging_dir / "report.json"
    # judged on the finished run's counts: stopping part-way needs a hook in the datatrove blocks
    breach = limit.breach(report, final=True)
    if breach:
        report.stopped = f"at the end of the run ({report.read:,} records): {breach}"
    nothing_read = no_document_read(report)
    where = f"{args.inp}" + (f" (each such record is in {args.rejected}/input/)" if args.rejected else "")
    unreadable = unreadable_line(report, where, _first_bad_record(args, files) if nothing_read else None)
    if nothing_read:
        report.stopped = unreadable
    out, rejected = (
        None if folder is None else written.get(str(folder), folder) for folder in (args.out, args.rejected)
    )
    try:
        write_report(report_path, report, args, args.format, out, rejected, options, seconds)
    except OSError as exc:
        say_failed(str(OutputWriteError(report_path, exc)))
        return 1
    print(report.summary())
    print(f"output  : {out}" + (f"   rejected: {rejected}" if rejected else ""))
    print(f"report  : {report_path}   logs: {args.logging_dir}")
    print(f"time    : {seconds:.1f}s")
    if report.stopped:
        if unreadable and report.stopped != unreadable:
            say_warning(unreadable)  # which records, and why: the failure below may be their share
        kept = f"the outputs are in {out}"
        if str(out) != str(args.out):
            kept += f" (not swapped in: the old output in {args.out} is untouched)"
        say_failed(f"{report.stopped}; {kept} and the report ({report_path}) says so")
        return 1
    if unreadable:
        say_warning(unreadable)
    return 0


def _workers(workers: int | None, tasks: int, say: Callable[[str], None], executor: str) -> int:
    """--workers, refused past MAX_WORKERS and capped at --tasks (datatrove starts one process, or
    queue slot, per worker, busy or not); not given: as many as tasks (-1), at most MAX_WORKERS
    processes here (local)."""
    if workers is None:
        if executor == "local" and tasks > MAX_WORKERS:
            say(f"note  : running {MAX_WORKERS:,} of the {tasks:,} tasks at once (--workers sets it)")
            return MAX_WORKERS
        return -1
    if workers > MAX_WORKERS:
        raise UsageError(
            f"--workers {workers:,} is more than {MAX_WORKERS:,} tasks at once; give at most --tasks "
            f"({tasks:,}) workers (each one is a process with the stages loaded)"
        )
    if workers > tasks:
        say(f"note  : --workers {workers:,} is more than the {tasks:,} tasks; running {tasks:,} at once")
        return tasks
    return workers


def _input_files(args) -> list[Path]:
    """The input files the datatrove reader shares out (`littlekit.filter.paths.folder_files`, the
    rule make_reader follows), sorted; a folder without any, or with files it will not read, is
    said before the run: refused, or warned of (with --quiet too) naming them."""
    if args.inp.is_file():
        return [args.inp]
    files, skipped = folder_files(args.inp, None if args.format == "auto" else args.format)
    kinds = "files of --format " + args.format if args.format != "auto" else "input files"
    if not files:
        raise UsageError(
            f"--in {args.inp} holds no {kinds} (names ending in "
            f"{', '.join(JSONL_SUFFIXES + PARQUET_SUFFIXES)}"
            + (f"; it holds {_shown(skipped)}" if skipped else "; it is empty")
            + ")"
        )
    if skipped:
        say_warning(
            f"{len(skipped):,} file(s) in --in {args.inp} are not read, their names not ending in an input "
            f"suffix{'' if args.format == 'auto' else ' of --format ' + args.format}: {_shown(skipped)}"
        )
    return [args.inp / name for name in files]


def _inside(path: str | Path, folder: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def _shown(names: list[str], most: int = 10) -> str:
    return ", ".join(names[:most]) + (f", ... and {len(names) - most:,} more" if len(names) > most else "")


def _files_line(files: list[Path], args) -> str:
    """The input line's "(3 files: 2 jsonl, 1 parquet)" for a folder; nothing for a file."""
    if args.inp.is_file():
        return ""
    counts = Counter(args.format if args.format != "auto" else input_format(path) for path in files)
    return f" ({len(files):,} files: {', '.join(f'{n:,} {kind}' for kind, n in sorted(counts.items()))})"


def _tasks(tasks: int, n_files: int, inp: Path) -> int:
    """--tasks, at most one per input file: datatrove shares files out by task, so a task past the
    number of files reads nothing (100,000 of them over 4 files ran for half an hour, empty)."""
    if tasks <= n_files:
        return tasks
    say_warning(
        f"--tasks {tasks:,} is more than the {n_files:,} input file(s) of {inp} (each task reads whole "
        f"files); running {n_files:,} task(s): split the input into more files for more (shard_jsonl)"
    )
    return n_files


def _check_compression(files: list[Path], args) -> None:
    """UsageError naming each JSONL input file whose name and first bytes disagree on gzip (gzip
    data named .jsonl would be read as text, every line unreadable), before anything runs."""
    problems = []
    for path in files:
        fmt = args.format if args.format != "auto" else input_format(path)
        if fmt != "jsonl":
            continue
        try:
            with open(path, "rb") as handle:
                problem = compression_problem(path, handle.read(2))
        except OSError as exc:
            problem = f"{path}: cannot be read: {exc.strerror or exc}"
        if problem:
            problems.append(problem)
    if problems:
        more = f"; ... and {len(problems) - 5:,} more" if len(problems) > 5 else ""
        raise UsageError("; ".join(problems[:5]) + more)


def _first_bad_record(args, files: list[Path]) -> str | None:
    """`FILE: line N: reason: detail` of the first record the reader could not make a document of,
    read again here (the tasks' stats count reasons, not records); None when none is found."""
    for path in files[:20]:
        fmt = None if args.format == "auto" else args.format
        try:
            for record in read_documents(path, args.text_field, args.id_field, args.max_bytes, fmt):
                if isinstance(record, RecordError):
                    return f"{path}: line {record.line:,}: {record.reason}: {record.detail}"
        except (ValueError, OSError) as exc:  # InputFileError included
            return f"{path}: {exc}"
    return None


def _check_datatrove_args(args) -> None:
    """What the datatrove runners cannot do, and what they need, as one-line refusals."""
    executor = f"--executor {args.executor}"
    if args.hf_dataset:
        raise UsageError(
            f"--hf-dataset streams in this process only; with {executor} give --in FILE_OR_FOLDER"
        )
    if args.limit:
        raise UsageError(f"--limit applies to the in-process run only; with {executor} give a smaller input")
    if args.logging_dir is None:
        raise UsageError(f"{executor} needs --logging-dir DIR (rerun with the same one to resume)")
    if args.executor == "slurm":
        missing = [flag for flag in ("--slurm-partition", "--slurm-time")
                   if getattr(args, flag[2:].replace("-", "_")) is None]  # fmt: skip
        if missing:
            raise UsageError(f"{executor} needs {' and '.join(missing)}")
    else:
        for flag in SLURM_FLAGS:
            if getattr(args, flag) is not None:
                raise UsageError(f"--{flag.replace('_', '-')} applies to --executor slurm only")
    if args.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise UsageError("--executor ray needs Ray, which is not installed (pip install ray)")
    if not args.inp.exists():
        raise UsageError(f"input not found: {args.inp}")
    if not args.inp.is_file() and not args.inp.is_dir():
        raise UsageError(
            f"--in {args.inp} is a stream, not a file or folder: {executor} shares input files out by "
            "task; save it to a file first, or read it in process (without --executor)"
        )
    if args.inp.is_file() and args.format == "auto":
        try:
            input_format(args.inp)
        except ValueError as exc:
            raise UsageError(f"{exc} (or pass --format)") from None
    for flag, path in (("--out", args.out), ("--rejected", args.rejected)):
        if path is not None and names_a_file(path):
            raise UsageError(f"with {executor}, {flag} is a folder (of <rank>.jsonl.gz), not a file: {path}")


def _device_for_tasks(args, names: list[str], options: StageOptions) -> StageOptions:
    """The options the tasks get, with the encoder's device fitting the GPUs asked of Slurm: given
    GPUs and no --device, the encoder runs on "cuda" (so a task whose torch sees no GPU stops,
    never scores on its CPU); a CUDA --device without GPUs for the tasks is refused here."""
    gpus = getattr(args, "slurm_gpus_per_task", None)
    if args.executor != "slurm" or "encoder" not in names:
        if gpus:
            say_warning("--slurm-gpus-per-task: no stage of --stages uses a GPU (only the encoder does)")
        return options
    device = options.device
    if gpus and device in (None, "", "auto"):
        return options.replace(device="cuda")
    if not gpus and device and str(device).startswith("cuda"):
        raise UsageError(
            f"--device {device} with --executor slurm needs GPUs for the tasks: add --slurm-gpus-per-task 1"
        )
    return options


def _activate_script(venv: Path) -> str:
    """datatrove sources venv_path in each task: a venv folder's bin/activate, or the path as given."""
    script = venv.absolute() / "bin" / "activate"  # tasks may start elsewhere than here
    return str(script if script.is_file() else venv.absolute())


def _slurm_options(args) -> dict[str, Any]:
    """datatrove SlurmPipelineExecutor arguments from the --slurm-* flags that were given."""
    given = {
        "partition": args.slurm_partition,
        "time": args.slurm_time,
        "cpus_per_task": args.slurm_cpus_per_task,
        "mem_per_cpu_gb": args.slurm_mem_per_cpu_gb,
        "gpus_per_task": args.slurm_gpus_per_task,
        "venv_path": None if args.slurm_venv is None else _activate_script(args.slurm_venv),
    }
    return {key: value for key, value in given.items() if value is not None}
