"""`littlekit filter`: run the filter's stages over documents, in process or as datatrove blocks."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import time
from dataclasses import asdict
from itertools import combinations, permutations
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError, finite, fraction, positive_float, positive_int
from littlekit.filter.artifacts import (
    ARTIFACTS,
    artifact_problems,
    file_problem,
    how_to_rebuild,
    stage_list,
    stage_options_from_artifacts,
)
from littlekit.filter.cascade import KEPT, MAX_ERROR_RATE, MIN_ERROR_DOCUMENTS, Cascade, ErrorLimit
from littlekit.filter.encoder import MAX_LENGTH
from littlekit.filter.lexicon import IMPUTE_MODES
from littlekit.filter.registry import (
    ENCODER_GATES,
    StageOptions,
    build_stages,
    check_gate_order,
    known_stages,
)
from littlekit.filter.symbolic import FAMILIES
from littlekit.io import (
    DEFAULT_MAX_BYTES,
    InputFileError,
    JsonlWriter,
    input_format,
    open_writer,
    parquet_schema,
    partial_path,
    read_documents,
    read_hf,
)

DEFAULT_STAGES = "aoa,symbolic"
DEFAULT_BATCH_ROWS = 10_000
INPROCESS = "inprocess"
EXECUTORS = (INPROCESS, "local", "slurm", "ray")
SLURM_FLAGS = ("slurm_partition", "slurm_time", "slurm_cpus_per_task", "slurm_mem_per_cpu_gb", "slurm_venv")
RUNNER_FLAGS = ("tasks", "workers", "logging_dir", *SLURM_FLAGS)  # meaningless in-process
# option of StageOptions -> the flag that gives its path (overrides the --artifacts directory)
PATH_FLAGS = {
    "aoa_table": "--aoa-table",
    "fasttext_model": "--fasttext-model",
    "encoder_model": "--encoder-model",
    "word_table": "--word-table",
}
STAGE_FILE = {  # stage -> the option of StageOptions that gives its file
    "aoa": "aoa_table",
    "fasttext": "fasttext_model",
    "encoder": "encoder_model",
    "frequency": "word_table",
}


RELEASED_RULE = "released"  # --fasttext-min-k5-prob released: the top band alone decides
DEFAULTS = StageOptions()  # every stage flag's default is the stage's own


def _min_k5_prob(text: str) -> float | str:
    """A probability, or "released" (the released rule, overriding an artifacts filter_config.json)."""
    return RELEASED_RULE if text.strip().lower() in {RELEASED_RULE, "none"} else fraction(text)


def add_filter_parser(subparsers) -> argparse.ArgumentParser:
    """`littlekit filter`: the released filter's options plus stages, rejected file and report."""
    p = subparsers.add_parser(
        "filter",
        help="run the K-5 filter cascade over documents",
        description="Run filter stages in order over documents; write the kept ones with all their fields.",
        epilog="stages (run in the order given):\n"
        + "".join(f"  {name:<10s} {line}\n" for name, line in known_stages().items())
        + "\nEvery record read ends kept, dropped (stage + reason) or errored (reason: bad_json, "
        "not_object,\nmissing_text_field, text_not_string, bad_encoding, empty_text, too_large, "
        "stage_error:<stage>).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=run_filter)
    source = p.add_argument_group("input (one of --in, --hf-dataset)")
    only_one = source.add_mutually_exclusive_group(required=True)
    only_one.add_argument(
        "--in",
        dest="inp",
        type=Path,
        metavar="PATH",
        help="local .jsonl, .jsonl.gz or .parquet; with --executor local|slurm|ray also a folder of them",
    )
    only_one.add_argument(
        "--hf-dataset",
        metavar="NAME",
        help="stream a Hugging Face dataset: a Hub id, a local dataset folder, or "
        "a builder such as json with --hf-data-files",
    )
    source.add_argument("--hf-config", default=None, metavar="NAME", help="dataset config, e.g. sample-10BT")
    source.add_argument("--hf-split", default="train", metavar="SPLIT", help="dataset split (default: train)")
    source.add_argument(
        "--hf-data-files", nargs="+", metavar="FILE", help="data files for --hf-dataset json|parquet"
    )
    source.add_argument(
        "--format",
        choices=["auto", "jsonl", "parquet"],
        default="auto",
        help="input format of --in (default: from the file name)",
    )
    source.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="field holding the document text (default: text)",
    )
    source.add_argument(
        "--id-field",
        default="id",
        metavar="FIELD",
        help="field holding the id; else the line number (default: id)",
    )
    source.add_argument(
        "--limit", type=positive_int, metavar="N", help="stop after this many input records (pilot runs)"
    )
    source.add_argument(
        "--max-bytes",
        type=positive_int,
        metavar="N",
        default=DEFAULT_MAX_BYTES,
        help=f"records over this many bytes are errored as too_large (default: {DEFAULT_MAX_BYTES:,})",
    )

    output = p.add_argument_group("output")
    output.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="kept documents: .jsonl, .jsonl.gz or .parquet; a folder (ending in /) gets "
        "kept.jsonl, rejected.jsonl and report.json; with --executor local|slurm|ray a folder "
        "of <rank>.jsonl.gz",
    )
    output.add_argument(
        "--rejected",
        type=Path,
        metavar="PATH",
        help="JSONL of dropped and errored records: id, line, outcome, stage, reason, scores; "
        "with --executor local|slurm|ray a folder (one sub-folder per stage)",
    )
    output.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="JSON of the retention report (with --executor local|ray default: LOGGING_DIR/report.json)",
    )
    output.add_argument(
        "--batch-rows",
        type=positive_int,
        metavar="N",
        help=f"records per processing and write batch (default: {DEFAULT_BATCH_ROWS:,}; "
        "with --executor local|slurm|ray, documents per filter batch, default that of the datatrove blocks)",
    )
    output.add_argument(
        "--max-error-rate",
        type=fraction,
        metavar="FRACTION",
        default=MAX_ERROR_RATE,
        help="stop (exit 1) when more than this share of the documents entering a stage error "
        f"(stage_error:<stage>): judged after each batch once {MIN_ERROR_DOCUMENTS} have entered it, "
        f"and at the end over at least {MIN_ERROR_DOCUMENTS}; what was written stays, as .partial "
        f"files, and the report says it stopped; 1 never stops (default: {MAX_ERROR_RATE})",
    )
    output.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    stages = p.add_argument_group("stages and thresholds (defaults: the published configuration)")
    stages.add_argument(
        "--stages",
        default=DEFAULT_STAGES,
        metavar="LIST",
        help=f"comma-separated, or all: {','.join(known_stages())} (default: {DEFAULT_STAGES})",
    )
    stages.add_argument(
        "--artifacts",
        type=Path,
        metavar="DIR",
        help="take the stages' files from DIR in the released layout (data/aoa.parquet, "
        "models/fasttext_grade.bin, models/modernbert_grade/, data/word_log_odds.parquet); "
        "--aoa-table, --fasttext-model, --encoder-model and --word-table override it",
    )
    stages.add_argument(
        "--aoa-table",
        type=Path,
        metavar="PATH",
        help="AoA table, parquet or csv with columns word, aoa (default: embedded Kuperman)",
    )
    stages.add_argument(
        "--aoa-impute",
        choices=IMPUTE_MODES,
        default=DEFAULTS.aoa_impute,
        help=f"AoA for words missing from the table, from Zipf frequency (default: {DEFAULTS.aoa_impute})",
    )
    stages.add_argument(
        "--max-aoa",
        type=positive_float,
        metavar="YEARS",
        default=None,
        help="max 95th-percentile token AoA "
        f"(default: filter_config.json's max_aoa, else {DEFAULTS.max_aoa})",
    )
    stages.add_argument(
        "--max-oov",
        type=fraction,
        metavar="FRACTION",
        default=DEFAULTS.max_oov,
        help=f"max out-of-vocabulary fraction (default: {DEFAULTS.max_oov})",
    )
    stages.add_argument(
        "--fasttext-model", type=Path, metavar="PATH", help="fasttext stage: supervised fastText .bin"
    )
    stages.add_argument(
        "--fasttext-min-k5-prob",
        type=_min_k5_prob,
        metavar="P",
        help="fasttext stage: keep only when the top band is K5 and P(K5) >= P; 'released' = top band "
        "alone (default: --artifacts DIR's filter_config.json when its model is used, else released)",
    )
    stages.add_argument(
        "--encoder-model",
        metavar="DIR_OR_ID",
        help="encoder stage: transformers sequence-classification directory or Hub id (ModernBERT)",
    )
    stages.add_argument(
        "--encoder-batch-size",
        type=positive_int,
        default=DEFAULTS.encoder_batch_size,
        metavar="N",
        help=f"encoder stage: documents per forward pass (default: {DEFAULTS.encoder_batch_size})",
    )
    stages.add_argument(
        "--encoder-max-length",
        type=positive_int,
        metavar="TOKENS",
        help="encoder stage: tokens read per document (default: the length the model was trained at, "
        f"from its tokenizer, at most {MAX_LENGTH:,})",
    )
    stages.add_argument(
        "--encoder-attn-implementation",
        metavar="NAME",
        help="encoder stage: transformers attention, e.g. eager, sdpa, flash_attention_2 "
        "(default: sdpa on CUDA, eager on the CPU)",
    )
    stages.add_argument(
        "--encoder-gate",
        choices=ENCODER_GATES,
        default=DEFAULTS.encoder_gate,
        help="encoder stage: agree = score only documents whose fastText band equals their AoA band "
        "(the paper's gate; the others are dropped as encoder_gate), all = score every document "
        f"(default: {DEFAULTS.encoder_gate})",
    )
    stages.add_argument(
        "--encoder-min-k5-prob",
        type=_min_k5_prob,
        metavar="P",
        help="encoder stage: keep only when the argmax is K5 and P(K5) >= P; 'released' = argmax alone "
        "(default: --artifacts DIR's filter_config.json when its model is used, else released)",
    )
    stages.add_argument(
        "--device", help="encoder stage device, e.g. cuda or cpu (default: cuda if available)"
    )
    stages.add_argument(
        "--symbolic-families",
        metavar="LIST",
        help=f"symbolic stage: comma-separated notation families to check, of {','.join(FAMILIES)} "
        "(default: all of them)",
    )
    stages.add_argument(
        "--word-table",
        type=Path,
        metavar="PATH",
        help="frequency stage: word, beyond_score table (word_log_odds.parquet)",
    )
    stages.add_argument(
        "--min-beyond-score",
        type=finite,
        metavar="SCORE",
        default=DEFAULTS.min_beyond_score,
        help=f"frequency stage cut-off (default: {DEFAULTS.min_beyond_score})",
    )
    stages.add_argument(
        "--min-blocked-share",
        type=_min_k5_prob,
        metavar="SHARE",
        help="frequency stage: drop only when blocklisted tokens are at least SHARE of the words; "
        "'released' = any blocklisted word drops (default: --artifacts DIR's filter_config.json, "
        "else released)",
    )
    _add_executor_options(p)
    return p


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    runner = p.add_argument_group(
        "runner (default: in this process; local, slurm and ray run the same stages as datatrove blocks)"
    )
    runner.add_argument("--executor", choices=EXECUTORS, default=INPROCESS, help=f"(default: {INPROCESS})")
    runner.add_argument(
        "--tasks",
        type=positive_int,
        metavar="N",
        help="datatrove tasks; input files are shared out by task (default: 1)",
    )
    runner.add_argument(
        "--workers", type=positive_int, metavar="N", help="tasks run at once (default: all of them)"
    )
    runner.add_argument(
        "--logging-dir",
        type=Path,
        metavar="DIR",
        help="datatrove logs, completion markers and stats (required with local, slurm, ray; "
        "rerun with the same one to resume)",
    )
    runner.add_argument("--slurm-partition", metavar="NAME", help="slurm: partition (required)")
    runner.add_argument(
        "--slurm-time", metavar="TIME", help="slurm: time limit per task, e.g. 04:00:00 (required)"
    )
    runner.add_argument("--slurm-cpus-per-task", type=positive_int, metavar="N", help="slurm (default: 1)")
    runner.add_argument("--slurm-mem-per-cpu-gb", type=positive_int, metavar="GB", help="slurm (default: 2)")
    runner.add_argument(
        "--slurm-venv",
        type=Path,
        metavar="DIR",
        help="slurm: virtual environment (folder or its bin/activate) each task activates",
    )


def run_filter(args: argparse.Namespace) -> int:
    """Validate everything cheap first, then build the stages, then stream the input through."""
    if args.executor != INPROCESS:
        return _run_datatrove(args)
    _refuse_datatrove_options(args)
    args.batch_rows = args.batch_rows or DEFAULT_BATCH_ROWS
    out, rejected, report_path = _output_paths(args)
    fmt = _check_input(args)
    try:
        input_format(out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_distinct(_named_paths(args, out, rejected, report_path))
    names = _stage_names(args.stages)
    options = _stage_options(args, names)
    stages = _build(names, options)
    try:
        records = _open_records(args, fmt)
    except ValueError as exc:  # e.g. the text column is not in the Parquet schema
        raise UsageError(str(exc)) from None
    say = _progress(args.quiet)
    say(f"input : {args.hf_dataset or args.inp} ({fmt})")
    say(_config_line(names, args, options))
    return _stream(args, fmt, records, stages, out, rejected, report_path, options, say)


def _stage_names(spec: str) -> list[str]:
    """Names from --stages: "all" is every registered stage in the published cascade order."""
    try:
        return stage_list(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _stage_options(args, names: list[str]):
    """StageOptions from the flags; the stages' files from --artifacts unless a path flag gives one.

    Every missing file (explicit or in the directory) is reported at once, in one message.
    """
    explicit = {option: getattr(args, option) for option in PATH_FLAGS if getattr(args, option) is not None}
    problems = [
        f"{PATH_FLAGS[option]} file not found: {path}"
        for option, path in explicit.items()
        if isinstance(path, Path) and not path.is_file()
    ]
    for option, path in explicit.items():  # the checks the artifacts directory's files get
        local = Path(path)
        if (local.is_file() if isinstance(path, Path) else local.is_dir()):
            problem = file_problem(option, local)
            if problem:
                flag, how = PATH_FLAGS[option], how_to_rebuild(option)
                problems.append(f"{flag} {path}: {problem}; to rebuild: {how}")
    from_dir: dict[str, Any] = {}
    if args.artifacts is not None:
        given = {artifact.stage for artifact in ARTIFACTS if artifact.option in explicit}
        wanted = [name for name in names if name not in given]
        if not args.artifacts.is_dir():
            problems.append(f"--artifacts directory not found: {args.artifacts}")
        elif wanted:
            found = artifact_problems(args.artifacts, wanted)
            problems += [f"{args.artifacts}/{line}" for line in found]
            fixes = [a for a in ARTIFACTS if any(line.startswith(a.path + " ") for line in found)]
            problems += [f"to rebuild {a.path}: {a.how}" for a in fixes]
        if problems:
            flags = ", ".join(PATH_FLAGS.values())
            raise UsageError(
                f"--stages {','.join(names)} cannot run: "
                + "; ".join(problems)
                + f" (layout: littlekit.filter.artifacts; {flags} give a file in place of the directory's)"
            )
        if wanted:
            from_dir = stage_options_from_artifacts(args.artifacts, wanted)
    if problems:
        raise UsageError("; ".join(problems))
    for option in ("fasttext_min_k5_prob", "encoder_min_k5_prob"):  # flags override filter_config.json
        value = getattr(args, option)
        if value is not None:
            from_dir[option] = None if value == RELEASED_RULE else value
    share = args.min_blocked_share
    if share is not None:  # the flag overrides filter_config.json
        from_dir["min_blocked_share"] = None if share == RELEASED_RULE else share
    if args.max_aoa is not None:  # the flag overrides filter_config.json (else StageOptions' default)
        from_dir["max_aoa"] = args.max_aoa
    try:
        options = StageOptions(
            **from_dir,
            **{option: str(path) for option, path in explicit.items()},
            aoa_impute=args.aoa_impute,
            max_oov=args.max_oov,
            encoder_batch_size=args.encoder_batch_size,
            encoder_max_length=args.encoder_max_length,
            encoder_attn_implementation=args.encoder_attn_implementation,
            encoder_gate=args.encoder_gate,
            device=args.device,
            symbolic_families=args.symbolic_families,
            min_beyond_score=args.min_beyond_score,
        )
        check_gate_order(names, options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return options


def _config_line(names: list[str], args, options) -> str:
    """The run's settings, with the classifiers' P(K5) minimums when an operating point sets them."""
    line = f"config: stages={','.join(names)} max_aoa={options.max_aoa} max_oov={args.max_oov}"
    for option in ("fasttext_min_k5_prob", "encoder_min_k5_prob", "min_blocked_share"):
        if getattr(options, option) is not None:
            line += f" {option}={getattr(options, option):g}"
    return line


def _build(names: list[str], options):
    """The stages, each self-checked as it loads (a fastText model or encoder scores a probe
    text); a failure names the file and how to rebuild it."""
    stages = []
    for name in names:
        try:
            stages += build_stages([name], options)
        except (ValueError, OSError) as exc:  # e.g. an AoA table without the word, aoa columns
            message = f"cannot build the stages: {exc}"
            option = STAGE_FILE.get(name)
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


def _run_datatrove(args) -> int:
    """The same stages as datatrove blocks, run here (local), on Ray, or submitted to Slurm."""
    _check_datatrove_args(args)
    names = _stage_names(args.stages)
    options = _stage_options(args, names)
    # here, not at the top: only the datatrove runners import datatrove
    from littlekit.filter.datatrove_blocks import check_apart, filter_with_datatrove

    try:
        check_apart(args.inp, args.out, args.rejected)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_distinct(
        [
            ("--in", args.inp, False),
            ("--out", Path(args.out), False),
            ("--rejected", args.rejected, False),
            ("--report", args.report or args.logging_dir / "report.json", False),
        ],
        files=False,
    )
    runner_options = {
        "tasks": args.tasks or 1,
        "workers": args.workers or -1,
        "text_key": args.text_field,
        "id_key": args.id_field,
        "input_format": None if args.format == "auto" else args.format,
        "max_bytes": args.max_bytes,
    }
    if args.batch_rows:
        runner_options["batch_size"] = args.batch_rows
    slurm = _slurm_options(args) if args.executor == "slurm" else {}
    say = _progress(args.quiet)
    say(f"input : {args.inp} -> {args.out} ({args.executor}, {runner_options['tasks']} tasks)")
    say(_config_line(names, args, options))
    start = time.perf_counter()
    report = filter_with_datatrove(
        args.inp,
        args.out,
        names,
        args.logging_dir,
        options=options,
        rejected_dir=args.rejected,
        executor=args.executor,
        **runner_options,
        **slurm,
    )
    seconds = time.perf_counter() - start
    if report is None:  # slurm: submitted, not run
        settings = ", ".join(f"{key}={value}" for key, value in slurm.items())
        print(f"submitted to slurm: {runner_options['tasks']} tasks, stages {','.join(names)} ({settings})")
        print(f"launch script: {args.logging_dir / 'launch_script.slurm'}")
        print(f"output  : {args.out}" + (f"   rejected: {args.rejected}" if args.rejected else ""))
        print(
            "when every task has finished, the counts: "
            f"littlekit.filter.datatrove_blocks.datatrove_report('{args.logging_dir}'); "
            "rerun this command to resubmit unfinished tasks"
        )
        return 0
    report_path = args.report or args.logging_dir / "report.json"
    # judged on the finished run's counts: stopping part-way needs a hook in the datatrove blocks
    breach = ErrorLimit(args.max_error_rate).breach(report, final=True)
    if breach:
        report.stopped = f"at the end of the run ({report.read:,} records): {breach}"
    _write_report(report_path, report, args, args.format, args.out, args.rejected, options, seconds)
    print(report.summary())
    print(f"output  : {args.out}" + (f"   rejected: {args.rejected}" if args.rejected else ""))
    print(f"report  : {report_path}   logs: {args.logging_dir}")
    print(f"time    : {seconds:.1f}s")
    if breach:
        _say_failed(f"{report.stopped}; the outputs are in {args.out} and the report ({report_path}) says so")
        return 1
    return 0


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
    if args.inp.is_file() and args.format == "auto":
        try:
            input_format(args.inp)
        except ValueError as exc:
            raise UsageError(f"{exc} (or pass --format)") from None
    for flag, path in (("--out", args.out), ("--rejected", args.rejected)):
        if path is not None and _names_a_file(path):
            raise UsageError(f"with {executor}, {flag} is a folder (of <rank>.jsonl.gz), not a file: {path}")


def _names_a_file(path: str | Path) -> bool:
    try:
        input_format(path)
    except ValueError:
        return False
    return True


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
        "venv_path": None if args.slurm_venv is None else _activate_script(args.slurm_venv),
    }
    return {key: value for key, value in given.items() if value is not None}


def _output_paths(args) -> tuple[Path, Path | None, Path | None]:
    """--out names a file, or a folder (ending in / or existing) that gets the three usual files."""
    out = Path(args.out)
    if _out_is_folder(args):
        return out / "kept.jsonl", args.rejected or out / "rejected.jsonl", args.report or out / "report.json"
    return out, args.rejected, args.report


def _out_is_folder(args) -> bool:
    return args.out.endswith(("/", os.sep)) or Path(args.out).is_dir()


def _named_paths(args, out: Path, rejected: Path | None, report: Path | None) -> list:
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


def _check_distinct(named: list[tuple[str, Path | None, bool]], files: bool = True) -> None:
    """UsageError, before anything runs, when two of the run's paths (the input and the outputs)
    are one file, through symlinks, `..` or hard links, or an output is the `.partial` file another
    one is written to; with `files` (the in-process run), also when an output is an existing folder."""
    given = [(flag, Path(path), partial) for flag, path, partial in named if path is not None]
    for flag, path, _ in given:
        if files and flag != "--in" and path.is_dir():
            raise UsageError(f"{flag} {path} is a folder; give a file name")
    for (flag_a, a, _), (flag_b, b, _) in combinations(given, 2):
        if _same_file(a, b):
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
        if partial and _same_file(partial_path(w), o):
            raise UsageError(
                f"{flag_o} {o} is the file that {flag_w} {w} is written to until the run ends; "
                "give it another name"
            )


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same real path (symlinks and .. resolved, also for
    files not there yet), or, for two that exist, the same inode (hard links)."""
    try:
        if a.exists() and b.exists() and os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def _check_input(args) -> str:
    if args.hf_dataset:
        if args.format != "auto":
            raise UsageError("--format applies to --in, not --hf-dataset")
        return "hf"
    if args.inp.is_dir():
        raise UsageError(
            f"--in {args.inp} is a folder; the in-process run reads one file: name a file in it, or run "
            f"the whole folder with --executor local --logging-dir DIR (--out is then a folder too)"
        )
    if not args.inp.is_file():
        raise UsageError(f"input file not found: {args.inp}")
    if args.format != "auto":
        return args.format
    try:
        return input_format(args.inp)
    except ValueError as exc:
        raise UsageError(f"{exc} (or pass --format)") from None


def _str_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _progress(quiet: bool):
    def say(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr, flush=True)

    return say


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
        _write_report(report_path, report, args, fmt, kept_at, rejected_at, options, seconds, extra)
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
        _say_failed(
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


def _say_failed(message: str) -> None:
    print(f"littlekit filter: error: {' '.join(message.split())}", file=sys.stderr, flush=True)


def _write_report(
    path: Path, report, args, fmt, out, rejected, options, seconds: float, extra: dict | None = None
) -> None:
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
        "options": asdict(options),
        "output": str(out),
        "rejected": _str_or_none(rejected),
        "seconds": round(seconds, 3),
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": run_info, **report.to_dict()}, indent=2) + "\n", encoding="utf-8")

