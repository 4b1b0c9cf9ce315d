"""The whole run as datatrove blocks: the pipeline (reader, filters, writer), its executor, and
`filter_with_datatrove`, what `littlekit filter --executor local|slurm|ray` calls."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from itertools import permutations
from pathlib import Path
from typing import Any

from datatrove.executor import LocalPipelineExecutor, SlurmPipelineExecutor
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers import JsonlWriter

from littlekit.filter.base import Stage
from littlekit.filter.cascade import CascadeReport
from littlekit.filter.datatrove.blocks import (
    DEFAULT_BATCH,
    INPUT,
    LittleKitFilter,
    RecordErrorFilter,
    resolved_options,
)
from littlekit.filter.datatrove.children import children_die_with_this_process
from littlekit.filter.datatrove.outputs import (
    OutputInUse,
    check_replaceable,
    claim,
    is_local,
    plan_outputs,
    run_identity,
    swap_in,
)
from littlekit.filter.datatrove.readers import make_reader
from littlekit.filter.datatrove.report import datatrove_report
from littlekit.filter.datatrove.resume import check_manifest, describe_run, write_manifest
from littlekit.filter.datatrove.writers import make_writer
from littlekit.filter.registry import StageOptions, check_gate_order, stage_names
from littlekit.io import (
    DEFAULT_MAX_BYTES,
)
from littlekit.swap import hold_outputs

EXECUTORS = ("local", "slurm", "ray")


def expand_stages(stages: str | Sequence[str | Stage]) -> list[str | Stage]:
    """Stage names from "aoa,symbolic", "all" (every registered stage in cascade order) or a list."""
    if isinstance(stages, str):
        from littlekit.filter.artifacts import stage_list  # here: the driver needs it, workers do not

        return stage_list(stages)
    return [stage if isinstance(stage, Stage) else stage_names([stage])[0] for stage in stages]


def build_datatrove_pipeline(
    input_path_or_reader: str | os.PathLike | PipelineStep,
    output_dir: str | os.PathLike,
    stages: str | Sequence[str | Stage],
    text_key: str = "text",
    rejected_dir: str | os.PathLike | None = None,
    *,
    options: StageOptions | Mapping[str, Any] | None = None,
    id_key: str = "id",
    input_format: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    max_bytes: int = DEFAULT_MAX_BYTES,
    compression: str | None = "gzip",
    keep_scores: bool = True,
    artifacts: str | os.PathLike | None = None,
) -> list[PipelineStep]:
    """Reader, RecordErrorFilter, one LittleKitFilter per stage in cascade order, JsonlWriter.

    `input_path_or_reader`: a .jsonl(.gz)/.parquet file, a folder of them, or any datatrove
    reader block. With `rejected_dir`, each filter writes what it drops to
    `rejected_dir/<stage>/` (`input/` for unreadable records). `keep_scores=False` writes the
    documents without the stages' scores. `options` and `artifacts` (a directory in
    littlekit.filter.artifacts' layout) give the stages' options as `littlekit filter`'s flags
    and --artifacts do (`littlekit.filter.options.resolve_stage_options`). ValueError when a
    gated stage (the encoder with `encoder_gate="agree"`) comes before the stages whose scores
    its gate reads.
    """
    expanded = expand_stages(stages)
    named = [stage for stage in expanded if isinstance(stage, str)]
    stage_options = resolved_options(options, named, artifacts)  # once, for every block
    check_gate_order([getattr(stage, "name", stage) for stage in expanded], stage_options)
    if isinstance(input_path_or_reader, PipelineStep):
        reader = input_path_or_reader
    else:
        check_apart(input_path_or_reader, output_dir, rejected_dir)
        reader = make_reader(input_path_or_reader, text_key, id_key, input_format, max_bytes)

    def rejected(name: str) -> JsonlWriter | None:
        if rejected_dir is None:
            return None
        return make_writer(Path(rejected_dir) / name, text_key, id_key, compression, keep_scores)

    blocks: list[PipelineStep] = [reader, RecordErrorFilter(exclusion_writer=rejected(INPUT))]
    for stage in expanded:
        name = stage.name if isinstance(stage, Stage) else stage
        blocks.append(LittleKitFilter(stage, stage_options, rejected(name), batch_size))
    blocks.append(make_writer(output_dir, text_key, id_key, compression, keep_scores))
    return blocks


def check_apart(
    inp: str | os.PathLike, output_dir: str | os.PathLike, rejected_dir=None, logging_dir=None
) -> None:
    """ValueError when the run's folders overlap: an output folder inside the input folder (a rerun
    would read it back), the input (file or folder) or the logging directory inside an output
    folder, or one output folder inside the other. An output folder is this run's alone: a forced
    run replaces it as a whole, so nothing else may live in it."""
    outputs = [("output folder", output_dir), ("rejected folder", rejected_dir)]
    outputs = [(label, folder, Path(folder).resolve()) for label, folder in outputs if _local(folder)]
    source = Path(inp).resolve()
    if source.is_dir():
        for label, folder, resolved in outputs:
            if resolved.is_relative_to(source):
                raise ValueError(f"{label} {folder} is inside the input folder {inp}")
    inside = [("the input", inp)] + ([("the logging directory", logging_dir)] if _local(logging_dir) else [])
    for label, folder, resolved in outputs:
        for what, path in inside:
            if Path(path).resolve().is_relative_to(resolved):
                raise ValueError(
                    f"{what} {path} is inside the {label} {folder}, which holds this run's output only "
                    "(a forced run replaces it as a whole): give an output folder outside it"
                )
    for (label, folder, resolved), (other, path, around) in permutations(outputs, 2):
        if resolved != around and resolved.is_relative_to(around):  # one folder for both: check_distinct's
            raise ValueError(f"the {label} {folder} is inside the {other} {path}: give each its own folder")


def _local(folder) -> bool:
    return folder is not None and "://" not in str(folder)


def shard_jsonl(path: str | os.PathLike, out_dir: str | os.PathLike, n_files: int) -> list[Path]:
    """Split a JSONL file into `n_files` contiguous pieces (so n_files tasks can share the work)."""
    if n_files < 1:
        raise ValueError("n_files must be at least 1")
    lines = Path(path).read_bytes().splitlines(keepends=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    size = -(-len(lines) // n_files) if lines else 0
    files = []
    for i in range(n_files):
        piece = out / f"part-{i:05d}.jsonl"
        piece.write_bytes(b"".join(lines[i * size : (i + 1) * size]))
        files.append(piece)
    return files


def make_executor(
    pipeline: list[PipelineStep],
    executor: str = "local",
    tasks: int = 1,
    workers: int = -1,
    logging_dir: str | os.PathLike | None = None,
    **executor_options: Any,
):
    """A datatrove executor for the pipeline, by name; built, not started.

    local: LocalPipelineExecutor (options: start_method, skip_completed, ...);
    slurm: SlurmPipelineExecutor (needs time="HH:MM:SS" and partition=...; options: cpus_per_task,
           mem_per_cpu_gb, gpus_per_task, venv_path, sbatch_args, ...);
    ray:   RayPipelineExecutor (needs `pip install ray`; options: cpus_per_task, gpus_per_task, ...).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if tasks < 1:
        raise ValueError(f"tasks must be at least 1, got {tasks}")
    if workers == 0 or workers < -1:
        raise ValueError(f"workers must be at least 1 (or -1: as many as tasks), got {workers}")
    workers = min(workers, tasks)  # more would start idle processes (datatrove starts one per worker)
    logging_dir = None if logging_dir is None else str(logging_dir)
    common = {"tasks": tasks, "workers": workers, "logging_dir": logging_dir}
    if executor == "local":
        return LocalPipelineExecutor(pipeline, **common, **executor_options)
    if executor == "slurm":
        missing = [name for name in ("time", "partition") if name not in executor_options]
        if missing:
            raise ValueError(f"the slurm executor needs {' and '.join(missing)} (e.g. time='04:00:00')")
        return SlurmPipelineExecutor(pipeline, **common, **executor_options)
    if importlib.util.find_spec("ray") is None:
        raise ImportError("the ray executor needs Ray: pip install ray (then ray.init() or start a cluster)")
    from datatrove.executor.ray import RayPipelineExecutor  # here: Ray is an optional dependency

    return RayPipelineExecutor(pipeline, **common, **executor_options)


def run_datatrove(
    pipeline: list[PipelineStep],
    executor: str = "local",
    tasks: int = 1,
    workers: int = -1,
    logging_dir: str | os.PathLike | None = None,
    **executor_options: Any,
):
    """Build the executor (see make_executor), check a rerun matches the first run, run; return it.

    With the local executor and workers > 1 the calling script needs `if __name__ == "__main__":`.
    Slurm: this submits the job array (sbatch) and returns; completed tasks are skipped on resubmit.
    """
    runner = make_executor(pipeline, executor, tasks, workers, logging_dir, **executor_options)
    check_manifest(runner.logging_dir, describe_run(pipeline, tasks))
    with children_die_with_this_process():  # no Manager or worker left behind if this one is killed
        runner.run()
    return runner


def filter_with_datatrove(
    inp: str | os.PathLike,
    out: str | os.PathLike,
    stages: str | Sequence[str],
    logging_dir: str | os.PathLike,
    *,
    options: StageOptions | Mapping[str, Any] | None = None,
    rejected_dir: str | os.PathLike | None = None,
    executor: str = "local",
    tasks: int = 1,
    workers: int = -1,
    text_key: str = "text",
    id_key: str = "id",
    input_format: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    max_bytes: int = DEFAULT_MAX_BYTES,
    artifacts: str | os.PathLike | None = None,
    force: bool = False,
    swap_if: Callable[[CascadeReport], bool] | None = None,
    written: dict[str, str] | None = None,
    **executor_options: Any,
) -> CascadeReport | None:
    """`littlekit filter` on datatrove: build, run (or submit), and for a run that has finished
    here (local, ray) return its checked report; None after a Slurm submission.

    The output folders are claimed for this run (littlekit.filter.datatrove.outputs): a folder
    holding another run's output is refused (OutputInUse) before anything is written, or with
    `force` replaced as a whole once every task has completed (the run writes beside it until
    then; a rerun with `force` resumes there). A forced run whose report `swap_if` refuses
    (default: one in which no document could be read) is not swapped in: the old output stays,
    the new one beside it. `written`, a dict, is filled with {output folder: the folder holding
    its output now}. While it runs, the local output folders and the logging directory are held
    (`littlekit.swap.hold_output`): a second run into any of them is refused (OutputLocked).
    """

    def pipeline_into(kept: str | os.PathLike, rejected: str | os.PathLike | None) -> list[PipelineStep]:
        return build_datatrove_pipeline(
            inp,
            kept,
            stages,
            text_key,
            rejected,
            options=options,
            id_key=id_key,
            input_format=input_format,
            batch_size=batch_size,
            max_bytes=max_bytes,
            artifacts=artifacts,
        )

    check_apart(inp, out, rejected_dir, logging_dir)  # before any lock or file is made in them
    # one run per output: a second run into these folders (or this logging directory) is refused
    named = [("--out", out), ("--rejected", rejected_dir), ("--logging-dir", logging_dir)]
    with hold_outputs([(flag, path) for flag, path in named if path is not None and is_local(path)],
                      "littlekit filter"):  # fmt: skip
        pipeline = pipeline_into(out, rejected_dir)
        manifest = describe_run(pipeline, tasks)
        folders = [out] if rejected_dir is None else [out, rejected_dir]
        where = plan_outputs(folders, manifest, logging_dir, force, tasks)
        staged = {final: target for final, target in where.items() if target != final}
        if staged and executor == "slurm":
            raise OutputInUse(
                f"with the slurm executor the run ends after this command returns, so {', '.join(staged)} "
                "cannot be replaced when it completes: move the old output away, or give new output folders"
            )
        if staged:
            rejected_at = None if rejected_dir is None else where[str(rejected_dir)]
            pipeline = pipeline_into(where[str(out)], rejected_at)
        runner = make_executor(pipeline, executor, tasks, workers, logging_dir, **executor_options)
        check_manifest(runner.logging_dir, describe_run(pipeline, tasks) if staged else manifest)
        if executor != "slurm":  # a submission's files are this run's by the logging directory's manifest
            for target in where.values():
                if is_local(target):
                    claim(target, run_identity(manifest), logging_dir)
        with children_die_with_this_process():  # no Manager or worker left behind if this one is killed
            runner.run()
        if executor == "slurm":
            return None
        report = datatrove_report(logging_dir)
        report.check()
        if staged:
            incomplete = runner.get_incomplete_ranks(range(tasks))
            if incomplete:
                raise RuntimeError(
                    f"{len(incomplete)} of {tasks} tasks did not complete (see {logging_dir}); the old "
                    f"output is untouched, the new one is in {', '.join(staged.values())}: rerun to resume it"
                )
            accept = swap_if or (lambda report: not (report.read and report.input_errors == report.read))
            if accept(report):
                check_replaceable(list(staged))  # files put in the old folders during the run: none removed
                for final, target in staged.items():
                    swap_in(target, final)
                write_manifest(runner.logging_dir, manifest)  # the run is now the one in the final folders
                staged = {}
        if written is not None:
            written.update({str(folder): staged.get(str(folder), str(folder)) for folder in folders})
        return report
