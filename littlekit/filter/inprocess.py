"""`littlekit filter` in this process: records streamed through the cascade into the kept and
rejected files, then the report."""

from __future__ import annotations

import argparse
import itertools
import time

from littlekit.argtypes import UsageError
from littlekit.filter.artifacts import how_to_rebuild
from littlekit.filter.base import Stage
from littlekit.filter.cascade import KEPT, Cascade, ErrorLimit
from littlekit.filter.options import PATH_OPTIONS
from littlekit.filter.parser import DEFAULT_BATCH_ROWS, RUNNER_FLAGS
from littlekit.filter.paths import check_distinct, check_input, named_paths, output_paths
from littlekit.filter.registry import StageOptions, build_stages
from littlekit.filter.runner import (
    config_line,
    options_from_args,
    progress,
    say_failed,
    stage_names_from,
    write_report,
)
from littlekit.io import (
    InputFileError,
    JsonlWriter,
    input_format,
    open_writer,
    parquet_schema,
    read_documents,
    read_hf,
)


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
    check_distinct(named_paths(args, out, rejected, report_path))
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
    return _stream(args, fmt, records, stages, out, rejected, report_path, options, say)


def _build(names: list[str], options: StageOptions) -> list[Stage]:
    """The stages, each self-checked as it loads (a fastText model or encoder scores a probe
    text); a failure names the file and how to rebuild it."""
    stages = []
    for name in names:
        try:
            stages += build_stages([name], options)
        except (ValueError, OSError) as exc:  # e.g. an AoA table without the word, aoa columns
            message = f"cannot build the stages: {exc}"
            option = next((option for option, stage in PATH_OPTIONS.items() if stage == name), None)
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
        records = read_hf(
            args.hf_dataset,
            args.hf_config,
            args.hf_split,
            args.text_field,
            args.id_field,
            args.max_bytes,
            args.hf_data_files,
        )
    else:
        records = read_documents(
            args.inp, args.text_field, args.id_field, args.max_bytes, fmt, args.batch_rows
        )
    return itertools.islice(records, args.limit) if args.limit else records


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
    kept_out = open_writer(out, args.batch_rows, schema)
    try:
        rejected_out = JsonlWriter(rejected, args.batch_rows) if rejected else None
    except BaseException:
        kept_out.close(False)
        raise
    ok = False
    try:
        try:
            for n, outcome in enumerate(run, start=1):
                if outcome.status == KEPT:
                    kept_out.write(outcome.record.meta)
                elif rejected_out is not None:
                    rejected_out.write(outcome.to_row())
                if n % args.batch_rows == 0:
                    r = run.report
                    say(
                        f"  {n:>12,} read: kept {r.kept:,}, dropped {r.dropped:,}, errored {r.errored:,} "
                        f"[{time.perf_counter() - start:.1f}s]"
                    )
        except InputFileError:  # the cascade set report.stopped; what was read is counted
            pass
        ok = True
    finally:
        _close_writers(kept_out, rejected_out, ok, final=ok and run.report.stopped is None)
    report = run.report
    seconds = time.perf_counter() - start
    kept_at = kept_out.written_to
    rejected_at = rejected_out.written_to if rejected_out is not None else None
    string_fields = getattr(kept_out, "string_fields", None)  # Parquet output only
    if report_path is not None:
        extra = {"parquet_string_fields": string_fields} if string_fields else {}
        write_report(report_path, report, args, fmt, kept_at, rejected_at, options, seconds, extra)
    print(report.summary())
    print(f"output  : {kept_at}" + (f"   rejected: {rejected_at}" if rejected_at else ""))
    print(f"time    : {seconds:.1f}s")
    if string_fields:
        fields = ", ".join(f"{name} ({'/'.join(kinds)})" for name, kinds in string_fields.items())
        say(f"parquet: fields whose values have no common type were written as strings: {fields}")
    report.check()
    if report.stopped:
        written = f"{kept_at}" + (f" and {rejected_at}" if rejected_at else "")
        if "could not be read on" in report.stopped:
            hint = "; fix or replace the input file"
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
    return 0


def _close_writers(kept_out, rejected_out, ok: bool, final: bool) -> None:
    """Close both writers; if the kept one fails to close, the rejected one is removed too."""
    try:
        kept_out.close(ok, final)
    except BaseException:
        if rejected_out is not None:
            rejected_out.close(False)
        raise
    if rejected_out is not None:
        rejected_out.close(ok, final)
