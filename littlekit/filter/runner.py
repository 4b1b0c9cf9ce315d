"""What the in-process and the datatrove runs of `littlekit filter` share: the stages and their
options from the flags, progress lines, the report file."""

from __future__ import annotations

import argparse
import errno
import json
import sys
from collections.abc import Callable
from pathlib import Path

from littlekit.argtypes import UsageError
from littlekit.filter.artifacts import (
    stage_list,
)
from littlekit.filter.cascade import STAGE_ERROR, CascadeReport
from littlekit.filter.options import config_values_not_applied, given_flags, resolve_stage_options
from littlekit.filter.registry import (
    StageOptions,
    check_gate_order,
)


def stage_names_from(spec: str) -> list[str]:
    """Names from --stages: "all" is every registered stage in the published cascade order."""
    try:
        return stage_list(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def options_from_args(args: argparse.Namespace, names: list[str]) -> StageOptions:
    """The stages' options from the flags, --artifacts' files and filter_config.json, and the
    defaults (littlekit.filter.options: the rule notebooks and the datatrove blocks follow too).

    Every missing file (explicit or in the directory) is reported at once, in one message.
    """
    given = given_flags(args)
    try:
        options = resolve_stage_options(names, given, args.artifacts, check_files=True)
        check_gate_order(names, options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for line in config_values_not_applied(names, given, args.artifacts):
        say_warning(line)
    return options


def config_line(names: list[str], options: StageOptions) -> str:
    """The run's settings, with the classifiers' P(K5) minimums when an operating point sets them."""
    line = f"config: stages={','.join(names)} max_aoa={options.max_aoa} max_oov={options.max_oov}"
    for option in ("fasttext_min_k5_prob", "encoder_min_k5_prob", "min_blocked_share"):
        if getattr(options, option) is not None:
            line += f" {option}={getattr(options, option):g}"
    return line


def _str_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)


def progress(quiet: bool) -> Callable[[str], None]:
    """A function printing a progress line on stderr, or nothing with --quiet."""

    def say(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr, flush=True)

    return say


def say_warning(message: str) -> None:
    """A warning line on stderr (printed with --quiet too: it is not progress)."""
    print(f"littlekit filter: warning: {' '.join(message.split())}", file=sys.stderr, flush=True)


class OutputWriteError(OSError):
    """An output file that could not be written (a full disk, no permission): names the file."""

    def __init__(self, path: str | Path, error: OSError):
        self.path = Path(path)
        self.error = error
        reason = error.strerror or str(error) or type(error).__name__
        code = f" [{errno.errorcode.get(error.errno, error.errno)}]" if error.errno else ""
        super().__init__(error.errno, f"cannot write {path}: {reason}{code}")

    def __str__(self) -> str:
        return self.args[1]


def no_document_read(report: CascadeReport) -> bool:
    """Whether records were read but none of them became a document (all errored on reading)."""
    return bool(report.read) and report.input_errors == report.read


def unreadable_line(report: CascadeReport, source: str, first: str | None = None) -> str | None:
    """What a run says of the records that never became documents (bad JSON, no text field, ...):
    None when there were none; `first` describes the first of them."""
    if not report.input_errors:
        return None
    reasons = ", ".join(
        f"{reason} {n:,}"
        for reason, n in report.errored_by_reason.most_common()
        if not reason.startswith(STAGE_ERROR)
    )
    tail = f"; the first: {first}" if first else ""
    if no_document_read(report):
        return (
            f"no document could be read from {source}: all {report.read:,} records failed ({reasons}){tail}"
            " (check the input's format and --text-field)"
        )
    return (
        f"{report.input_errors:,} of the {report.read:,} records read from {source} could not be read as "
        f"documents ({reasons}); they are counted as errored in the report{tail}"
    )


def say_failed(message: str) -> None:
    """The one-line failure of a run that stopped (exit code 1), as the command line's errors read."""
    print(f"littlekit filter: error: {' '.join(message.split())}", file=sys.stderr, flush=True)


def write_report(
    path: Path,
    report: CascadeReport,
    args: argparse.Namespace,
    fmt: str,
    out: str | Path,
    rejected: str | Path | None,
    options: StageOptions,
    seconds: float,
    extra: dict | None = None,
) -> None:
    """report.json: the run's settings and options, then the report's counts."""
    run_info = {
        "input": args.hf_dataset or str(args.inp),
        "format": fmt,
        "hf_config": args.hf_config,
        "hf_split": args.hf_split if fmt == "hf" else None,
        "text_field": args.text_field,
        "limit": args.limit,
        "max_bytes": args.max_bytes,
        "stages": report.stages,
        "artifacts": _str_or_none(args.artifacts),
        "executor": args.executor,
        "options": options.as_dict(),
        "output": str(out),
        "rejected": _str_or_none(rejected),
        "seconds": round(seconds, 3),
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": run_info, **report.to_dict()}, indent=2) + "\n", encoding="utf-8")
