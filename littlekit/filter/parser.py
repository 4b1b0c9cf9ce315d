"""`littlekit filter`'s command line: input, output, the stages' options and the runner."""

from __future__ import annotations

import argparse
from pathlib import Path

from littlekit.argtypes import fraction, positive_int
from littlekit.filter.artifacts import declared_artifacts
from littlekit.filter.cascade import MAX_ERROR_RATE, MIN_ERROR_DOCUMENTS
from littlekit.filter.registry import known_stages, stage_options
from littlekit.io import DEFAULT_MAX_BYTES

DEFAULT_STAGES = "aoa,symbolic"
DEFAULT_BATCH_ROWS = 10_000
INPROCESS = "inprocess"
EXECUTORS = (INPROCESS, "local", "slurm", "ray")
SLURM_FLAGS = (
    "slurm_partition",
    "slurm_time",
    "slurm_cpus_per_task",
    "slurm_mem_per_cpu_gb",
    "slurm_gpus_per_task",
    "slurm_venv",
)
MAX_WORKERS = 1024  # --workers: processes (local) or tasks at once; more is a typo, not a plan
RUNNER_FLAGS = ("tasks", "workers", "logging_dir", *SLURM_FLAGS)  # meaningless in-process

# The help shows each stage flag's declared default; the flags themselves default to None ("not
# given"), so that littlekit.filter.options applies flag > filter_config.json > default.


def add_filter_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`littlekit filter`'s arguments: input, output, one flag per registered stage option
    (`--max-aoa` for max_aoa, from the stage's declaration), the runner."""
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
    source = p.add_argument_group("input (one of --in, --hf-dataset)")
    only_one = source.add_mutually_exclusive_group(required=True)
    only_one.add_argument(
        "--in",
        dest="inp",
        type=Path,
        metavar="PATH",
        help="local .jsonl, .jsonl.gz or .parquet; JSONL also from a pipe (/dev/stdin, with --format "
        "jsonl); with --executor local|slurm|ray also a folder: every .jsonl, .ndjson (.gz), .parquet "
        "or .pq file under it, mixed formats included, is read (other files are named, not read)",
    )
    only_one.add_argument(
        "--hf-dataset",
        metavar="NAME",
        help="stream a Hugging Face dataset: a Hub id, a local dataset folder, or "
        "a builder such as json with --hf-data-files (the json builder stops at the first line that "
        "is not JSON, and the run with it, saying where; --in FILE counts such lines as bad_json)",
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
        help="JSONL (.jsonl, .jsonl.gz) of dropped and errored records: id, line, outcome, stage, "
        "reason, scores; with --executor local|slurm|ray a folder (one sub-folder per stage)",
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
        "(stage_error:<stage>), or more than this share or one half, whichever is higher, of the records "
        "read cannot be read as documents (bad_json, missing_text_field, ...): judged after each batch "
        f"once {MIN_ERROR_DOCUMENTS} have entered it, "
        f"and at the end over at least {MIN_ERROR_DOCUMENTS}; what was written stays, as .partial "
        f"files, and the report says it stopped; 1 never stops (default: {MAX_ERROR_RATE})",
    )
    output.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier result: in process the --out file (or a folder's kept.jsonl, "
        "rejected.jsonl, report.json), --rejected and --report; with --executor local|ray output "
        "folders holding another littlekit run's output. The new result is written beside the old one "
        "and swapped in only once complete, so an interrupted run leaves the old one whole. It never "
        "deletes anything else: a folder holding other files (the input, notes) or no "
        ".littlekit_output.json is refused, as is an --out that contains --in or --logging-dir "
        "(default: refuse to replace)",
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
        help="take the stages' files from DIR in the released layout ("
        + ", ".join(artifact.path for artifact in declared_artifacts())
        + "); "
        + ", ".join(f"--{artifact.option.replace('_', '-')}" for artifact in declared_artifacts())
        + " override it",
    )
    for name, option in stage_options().items():  # one flag per stage option, from its declaration
        stages.add_argument(
            option.flag,
            dest=name,
            type=option.parse,
            choices=option.choices,
            metavar=option.metavar,
            help=option.help.replace("{default}", str(option.default)),
        )
    _add_runner_options(p)
    return p


def _add_runner_options(p: argparse.ArgumentParser) -> None:
    runner = p.add_argument_group(
        "runner (default: in this process; local, slurm and ray run the same stages as datatrove blocks)"
    )
    runner.add_argument("--executor", choices=EXECUTORS, default=INPROCESS, help=f"(default: {INPROCESS})")
    runner.add_argument(
        "--tasks",
        type=positive_int,
        metavar="N",
        help="datatrove tasks; input files are shared out by task, so at most one task per input "
        "file runs (more are cut to that, with a warning) (default: 1)",
    )
    runner.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help=f"tasks run at once, at most {MAX_WORKERS:,}; more than --tasks runs --tasks at once "
        "(default: all of them)",
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
        "--slurm-gpus-per-task",
        type=positive_int,
        metavar="N",
        help="slurm: GPUs each task gets (#SBATCH --gpus); the encoder stage then runs on --device, "
        "cuda unless given, and a task whose torch sees no GPU stops (default: none, the CPU)",
    )
    runner.add_argument(
        "--slurm-venv",
        type=Path,
        metavar="DIR",
        help="slurm: virtual environment (folder or its bin/activate) each task activates",
    )
