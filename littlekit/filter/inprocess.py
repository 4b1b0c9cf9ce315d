"""`littlekit filter` in this process: records streamed through the cascade into the kept and
rejected files, then the report."""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path

from littlekit.argtypes import UsageError
from littlekit.filter.artifacts import how_to_rebuild
from littlekit.filter.base import Stage
from littlekit.filter.cascade import ERRORED, KEPT, BatchScoringError, Cascade, ErrorLimit, Outcome
from littlekit.filter.encoder_device import DeviceUnavailable
from littlekit.filter.options import path_options
from littlekit.filter.parser import DEFAULT_BATCH_ROWS, RUNNER_FLAGS
from littlekit.filter.paths import (
    check_distinct,
    check_input,
    check_rejected_name,
    check_replaceable,
    finished_results,
    named_paths,
    output_paths,
)
from littlekit.filter.registry import StageOptions, build_stages
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
    InputFileError,
    JsonlWriter,
    Record,
    input_format,
    open_writer,
    parquet_schema,
    partial_path,
    read_documents,
    read_hf,
)
from littlekit.swap import hold_outputs


def run_inprocess(args: argparse.Namespace) -> int:
    """Validate everything cheap first, then build the stages, then stream the input through."""
    _refuse_datatrove_options(args)
    args.batch_rows = args.batch_rows or DEFAULT_BATCH_ROWS
    out, rejected, report_path = output_paths(args)
    fmt = check_input(args)
    try:
        input_format(out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    named = named_paths(args, out, rejected, report_path)
    check_distinct(named)
    check_rejected_name(args.rejected)
    # one run per output: a second run into any of them is refused while this one runs
    with hold_outputs([(flag, path) for flag, path, _ in named if flag != "--in"], "littlekit filter"):
        return _run_held(args, fmt, out, rejected, report_path, named)


def _run_held(args, fmt: str, out: Path, rejected: Path | None, report_path: Path | None, named) -> int:
    """The run, its outputs held: the finished results it would replace, the stages, the stream."""
    check_replaceable(named, args.force, args.out)
    names = stage_names_from(args.stages)
    options = options_from_args(args, names)
    stages = _build(names, options)
    try:
        records = _open_records(args, fmt)
    except ValueError as exc:  # e.g. the text column is not in the Parquet schema
        raise UsageError(str(exc)) from None
    say = progress(args.quiet)
    say(f"input : {args.hf_dataset or args.inp} ({fmt})")
    say(config_line(names, options))
    try:
        return _stream(args, fmt, records, stages, out, rejected, report_path, options, say)
    except OutputWriteError as exc:
        say_failed(
            f"{exc}; nothing was replaced (what this run had written is removed): free the space or "
            "fix the permissions and rerun"
        )
        return 1


def _build(names: list[str], options: StageOptions) -> list[Stage]:
    """The stages, each self-checked as it loads (a fastText model or encoder scores a probe
    text); a failure names the file and how to rebuild it."""
    stages = []
    for name in names:
        try:
            stages += build_stages([name], options)
        except DeviceUnavailable as exc:  # the machine lacks the device: no rebuild of the model helps
            raise UsageError(f"cannot build the stages: {exc}") from None
        except (ValueError, OSError) as exc:  # e.g. an AoA table without the word, aoa columns
            message = f"cannot build the stages: {exc}"
            option = next((option for option, stage in path_options().items() if stage == name), None)
            if option and getattr(options, option) and "littlekit fit" not in message:
                message += f"; to rebuild {getattr(options, option)}: {how_to_rebuild(option)}"
            raise UsageError(message) from None
    return stages


def _refuse_datatrove_options(args) -> None:
    """The runner options mean nothing to the in-process run: say so rather than ignore them."""
    for flag in RUNNER_FLAGS:
        if getattr(args, flag) is not None:
            option = "--" + flag.replace("_", "-")
            raise UsageError(f"{option} applies to --executor local, slurm or ray, not to the in-process run")


def _open_records(args, fmt: str):
    if fmt == "hf":
        records = _hf_guarded(
            read_hf(
                args.hf_dataset,
                args.hf_config,
                args.hf_split,
                args.text_field,
                args.id_field,
                args.max_bytes,
                args.hf_data_files,
            ),
            args,
        )
    else:
        records = read_documents(
            args.inp, args.text_field, args.id_field, args.max_bytes, fmt, args.batch_rows
        )
    return itertools.islice(records, args.limit) if args.limit else records


def _hf_guarded(records: Iterator[Record], args) -> Iterator[Record]:
    """The dataset's records; an error reading on (the json builder stops at the first line that
    is not JSON, in the middle of the stream) becomes an InputFileError naming the dataset and the
    row, which the cascade counts as a run stopped part-way rather than a crash."""
    row = 0
    while True:
        try:
            record = next(records)
        except StopIteration:
            return
        except Exception as exc:
            source = args.hf_dataset + (f" {' '.join(args.hf_data_files)}" if args.hf_data_files else "")
            hint = ""
            if args.hf_dataset in ("json", "csv", "text"):
                local = args.hf_data_files and len(args.hf_data_files) == 1
                hint = (
                    f"; the {args.hf_dataset} builder stops at the first record it cannot parse, so one "
                    "bad line ends the stream: "
                    + ("read the file with --in FILE, which counts each bad line as bad_json and goes on"
                       if local else "fix the line, or read each file with --in FILE (bad lines counted)")
                )  # fmt: skip
            raise InputFileError(
                f"--hf-dataset {source}: reading stopped after row {row:,} "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}){hint}"
            ) from exc
        row += 1
        yield record


def _stream(args, fmt, records, stages, out, rejected, report_path, options, say) -> int:
    """Records through the cascade into the kept and rejected writers; then the report.

    A run stopped part-way (the --max-error-rate limit, or an input file that cannot be read on)
    keeps what it wrote, whole records only, in the writers' .partial files, writes the report
    (which says it stopped and still adds up) and returns 1.
    """
    start = time.perf_counter()
    schema = parquet_schema(args.inp) if fmt == "parquet" and out.name.endswith((".parquet", ".pq")) else None
    cascade = Cascade(stages, batch_size=args.batch_rows)
    run = cascade.run(records, error_limit=ErrorLimit(args.max_error_rate))
    kept_out = _open(lambda: open_writer(out, args.batch_rows, schema), partial_path(out))
    try:
        rejected_out = None
        if rejected is not None:
            rejected_out = _open(lambda: JsonlWriter(rejected, args.batch_rows), partial_path(rejected))
    except BaseException:
        kept_out.close(False)
        raise
    ok = batch_failed = False
    first_unreadable: Outcome | None = None
    try:
        try:
            for n, outcome in enumerate(run, start=1):
                if outcome.status == KEPT:
                    _write(kept_out, outcome.record.meta)
                else:
                    if first_unreadable is None and outcome.status == ERRORED and outcome.stage is None:
                        first_unreadable = outcome
                    if rejected_out is not None:
                        _write(rejected_out, outcome.to_row())
                if n % args.batch_rows == 0:
                    r = run.report
                    say(
                        f"  {n:>12,} read: kept {r.kept:,}, dropped {r.dropped:,}, errored {r.errored:,} "
                        f"[{time.perf_counter() - start:.1f}s]"
                    )
        except InputFileError:  # the cascade set report.stopped; what was read is counted
            pass
        except BatchScoringError:  # likewise; what was written stays (a GPU run's hours are kept)
            batch_failed = True
        report = run.report
        source = args.hf_dataset or str(args.inp)
        first = None if first_unreadable is None else _describe(first_unreadable)
        unreadable = unreadable_line(report, source, first)
        if no_document_read(report) and not (report.stopped or "").startswith("the input could not be read"):
            report.stopped = unreadable  # nothing came through: a failed run, not an empty result
        ok = True
    finally:
        # written beside the old result (the .partial files), whatever happens
        _close_writers(kept_out, rejected_out, ok)
    final = report.stopped is None
    seconds = time.perf_counter() - start
    string_fields = getattr(kept_out, "string_fields", None)  # Parquet output only
    extra = {"parquet_string_fields": string_fields} if string_fields else {}
    kept_at: Path = out if final else kept_out.written_to
    rejected_at = None if rejected_out is None else (rejected if final else rejected_out.written_to)
    if report_path is not None:
        # a finished run's report, and that of a stopped run beside a finished one, wait beside it
        beside = final or finished_results([("--report", report_path, False)])
        report_at = partial_path(report_path) if beside else report_path
        try:
            write_report(report_at, report, args, fmt, kept_at, rejected_at, options, seconds, extra)
        except OSError as exc:
            raise OutputWriteError(report_at, exc) from exc
    if final:  # swap the new result in, each file whole
        for writer, path in ((kept_out, out), (rejected_out, rejected)):
            if writer is not None and writer.written_to is not None:
                os.replace(writer.written_to, path)
        if report_path is not None:
            os.replace(partial_path(report_path), report_path)
    elif report_path is not None and report_at != report_path:
        report_path = report_at
    print(report.summary())
    print(f"output  : {kept_at}" + (f"   rejected: {rejected_at}" if rejected_at else ""))
    print(f"time    : {seconds:.1f}s")
    if string_fields:
        fields = ", ".join(f"{name} ({'/'.join(kinds)})" for name, kinds in string_fields.items())
        say_warning(  # values changed type in the output: said with --quiet too
            f"{out.name}: Parquet holds one type per column, so the fields whose values have none in "
            f"common were written as strings (1 as '1'; listed in the report): {fields}"
        )
    report.check()
    if report.stopped:
        if unreadable and report.stopped != unreadable:
            say_warning(unreadable)  # which records, and why: the failure below may be their share
        written = f"{kept_at}" + (f" and {rejected_at}" if rejected_at else "")
        if "could not be read on" in report.stopped:
            hint = "; fix or replace the input file"
        elif batch_failed:
            hint = ""  # the stage's own message says what to try
        elif no_document_read(report):
            hint = ""
        else:
            see = "the rejected records (reason stage_error:<stage>)" if rejected_at else "--rejected FILE"
            hint = f"; {see} show each error; --max-error-rate 1 never stops"
        say_failed(
            f"{report.stopped}. The {report.read:,} records read are accounted for (kept {report.kept:,}"
            f" + dropped {report.dropped:,} + errored {report.errored:,}); what was written, whole "
            f"records only, is in {written}"
            + (f"; the report ({report_path}) says it stopped" if report_path else "")
            + hint
        )
        return 1
    if unreadable:
        say_warning(unreadable)
    return 0


def _describe(outcome: Outcome) -> str:
    """`line N: reason: detail` of a record that never became a document."""
    return f"line {outcome.line:,}: {outcome.reason}: {outcome.detail}"


def _open(make, path: Path):
    """A writer, made by `make`; an OSError opening it names the file."""
    try:
        return make()
    except OSError as exc:
        raise OutputWriteError(path, exc) from exc


def _write(writer, row: dict) -> None:
    try:
        writer.write(row)
    except OSError as exc:  # a full disk, a lost mount: name the file, not just the errno
        raise OutputWriteError(writer.partial, exc) from exc


def _close_writers(kept_out, rejected_out, ok: bool) -> None:
    """Close both writers, their output left in the .partial files (ok) or removed (not ok); if
    either fails to close, both are removed, and the failure names the file."""
    for writer in (kept_out, rejected_out):
        if writer is None:
            continue
        try:
            writer.close(ok, final=False)
        except BaseException as exc:
            ok = False
            for other in (kept_out, rejected_out):
                if other is not None:
                    if other is not writer and other.written_to is None:
                        _quietly_close(other)
                    other.partial.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise OutputWriteError(writer.partial, exc) from exc
            raise
    if not ok:
        for writer in (kept_out, rejected_out):
            if writer is not None:
                writer.partial.unlink(missing_ok=True)


def _quietly_close(writer) -> None:
    try:
        writer.close(False)
    except Exception:  # already failing: the first error is the one reported
        pass
