"""The filter stages as datatrove pipeline blocks, run locally, on Slurm or on Ray.

One stage implementation serves every runner: `LittleKitFilter` wraps the same `Stage` objects
the in-process cascade (`littlekit.filter.cascade`) runs, and decides with the same code, so a document
gets the same scores, verdict and reason code in a notebook, under `littlekit filter` and on a
cluster.

    from littlekit.filter.datatrove_blocks import build_datatrove_pipeline, datatrove_report, run_datatrove

    if __name__ == "__main__":          # required: worker processes re-import this script
        pipeline = build_datatrove_pipeline("shards/", "kept/", "aoa,symbolic", rejected_dir="rejected/")
        run_datatrove(pipeline, tasks=8, workers=4, logging_dir="logs/")
        print(datatrove_report("logs/").summary())

Why the `__main__` guard: datatrove's local executor starts its worker pool with "forkserver",
and every worker re-imports the main script; without the guard each worker would start the
whole run again.

What goes where (per task `rank`, so reruns overwrite rather than append):

    kept/<rank>.jsonl.gz                    kept documents: every input field, plus littlekit_scores
    rejected/input/<rank>.jsonl.gz          records that never became documents (bad_json, empty_text, ...)
    rejected/<stage>/<rank>.jsonl.gz        documents that stage dropped: filter_stage, filter_reason
    logs/completions/<rank>                 datatrove's marker: this task finished
    logs/stats/<rank>.json                  per-task counts; datatrove_report() adds them up

Workers never receive loaded models: a filter is pickled as its stage name plus options, and the
stage (fastText model, encoder, AoA table) is built inside the worker the first time it is
needed, once per process. Each local worker therefore pays its own start-up (imports, AoA table,
models: a few seconds), so more workers only pay off when each task has far more work than that.
The encoder stage puts one model per worker on the GPU: locally use workers=1 for it, on Slurm
gpus_per_task=1.

Resume: datatrove skips a task whose completion marker exists and reruns every other task from
the start, overwriting that task's files, so a killed run started again with the same settings
ends with the same files as an uninterrupted run. Changing the number of tasks (or the input)
between the two runs would reshard the input and break that, so `run_datatrove` records the
configuration in the logging directory and refuses a rerun that differs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from datatrove.data import Document as DTDocument
from datatrove.data import DocumentsPipeline
from datatrove.executor import LocalPipelineExecutor, SlurmPipelineExecutor
from datatrove.io import get_datafolder
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.readers.base import BaseDiskReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.stats import Stats

from littlekit.filter.artifacts import stage_list
from littlekit.filter.base import Stage
from littlekit.filter.cascade import MAX_DETAIL, STAGE_ERROR, CascadeReport, decide_all
from littlekit.filter.registry import StageOptions, build_stages, check_gate_order, stage_names
from littlekit.io import (
    BAD_ENCODING,
    BAD_JSON,
    DEFAULT_MAX_BYTES,
    PREVIEW_CHARS,
    TOO_LARGE,
    RecordError,
    input_format,
    record_to_document,
)

SCORES_KEY = "littlekit_scores"  # metadata: {stage name: that stage's scores}
STAGE_KEY = "filter_stage"  # metadata of a rejected document: the stage that dropped it
REASON_KEY = "filter_reason"  # datatrove's own key for the drop reason
DETAIL_KEY = "filter_detail"  # the exception of a stage error, or what is wrong with a record
ERROR_KEY = "littlekit_record_error"  # set by our readers on a record that is not a document
INPUT = "input"  # the name under which unreadable records are counted and written
NAME_PREFIX = "littlekit "
MANIFEST = "littlekit_run.json"
EXECUTORS = ("local", "slurm", "ray")
DEFAULT_BATCH = 256


# --- the filter block -------------------------------------------------------------------------

_STAGE_CACHE: dict[tuple[str, str], Stage] = {}  # one built stage per (name, options) and process


def _options_dict(options: StageOptions | Mapping[str, Any] | None) -> dict[str, Any]:
    """Options as a plain dict, validated now (in the driver) rather than in a worker."""
    if options is None:
        return asdict(StageOptions())
    if isinstance(options, StageOptions):
        return asdict(options)
    return asdict(StageOptions(**options))


def _cached_stage(name: str, options: dict[str, Any]) -> Stage:
    key = (name, json.dumps(options, sort_keys=True, default=str))
    if key not in _STAGE_CACHE:
        _STAGE_CACHE[key] = build_stages([name], options)[0]
    return _STAGE_CACHE[key]


class _CountedPerTask(BaseFilter):
    """A filter whose stats start from zero in every task.

    datatrove's Slurm executor runs the ranks of one array job (tasks_per_job > 1) on the same
    block objects, so counts would otherwise carry over from one rank's stats file to the next.
    """

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        self.stats = Stats(str(self))
        yield from super().run(data, rank, world_size)


class LittleKitFilter(_CountedPerTask):
    """A littlekit stage as a datatrove filter: keep, or `(False, reason)` with the stage's reason code.

    `stage` is a registered stage name ("aoa", "fasttext", ...) built lazily from `options` inside
    the worker, or an already built Stage (pickled with the pipeline: fine for light stages,
    not for a loaded fastText or encoder model). Documents are decided `batch_size` at a time by
    `littlekit.filter.cascade.decide_all`, as in the cascade (the stage's own `score_batch` when
    it has one, its prior gate when it carries one). Every document carries the scores of the stages it
    went through in `metadata["littlekit_scores"]` (a gated stage, the encoder's agreement gate,
    reads the earlier ones there); a dropped one also `filter_stage` and `filter_reason`. A stage
    that raises on a document drops it with reason `stage_error:<stage>` (and counts it under
    the `errored` stat) instead of failing the whole task.
    """

    type = "🔻 - FILTER"

    def __init__(
        self,
        stage: str | Stage,
        options: StageOptions | Mapping[str, Any] | None = None,
        exclusion_writer: JsonlWriter | None = None,
        batch_size: int = DEFAULT_BATCH,
    ):
        if isinstance(stage, Stage):
            self._stage: Stage | None = stage
            self.stage_name = stage.name
            self.options: dict[str, Any] | None = None
        else:
            (self.stage_name,) = stage_names([stage])
            self._stage = None
            self.options = _options_dict(options)
        self.name = NAME_PREFIX + self.stage_name  # before super().__init__, which names the stats
        super().__init__(exclusion_writer, batch_size)

    @property
    def stage(self) -> Stage:
        """The stage, built on first use in this process (so a worker loads its own model)."""
        if self._stage is None:
            self._stage = _cached_stage(self.stage_name, self.options)
        return self._stage

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self.options is not None:
            state["_stage"] = None  # rebuilt from name + options on the other side
        return state

    def filter(self, doc: DTDocument) -> bool | tuple[bool, str]:
        return self.filter_batch([doc])[0]

    def filter_batch(self, batch: list[DTDocument]) -> list[bool | tuple[bool, str]]:
        stage = self.stage
        prior = [doc.metadata.get(SCORES_KEY, {}) for doc in batch]  # what a gated stage reads
        verdicts = decide_all(stage, [doc.text for doc in batch], prior)
        results: list[bool | tuple[bool, str]] = []
        for doc, verdict in zip(batch, verdicts, strict=True):
            if isinstance(verdict, BaseException):
                self.stat_update("errored")
                doc.metadata[DETAIL_KEY] = f"{type(verdict).__name__}: {verdict}"[:MAX_DETAIL]
                results.append(self._drop(doc, f"{STAGE_ERROR}:{stage.name}"))
                continue
            doc.metadata.setdefault(SCORES_KEY, {})[stage.name] = dict(verdict.scores)
            results.append(True if verdict.keep else self._drop(doc, verdict.reason or "unspecified"))
        return results

    def _drop(self, doc: DTDocument, reason: str) -> tuple[bool, str]:
        doc.metadata[STAGE_KEY] = self.stage_name
        doc.metadata[REASON_KEY] = reason
        return False, reason


class RecordErrorFilter(_CountedPerTask):
    """Drops the records our readers could not turn into documents, with their io reason code.

    Placed first, so the counts of a run add up as the in-process cascade's do: every record
    read ends kept, dropped by a stage, or errored here.
    """

    type = "🔻 - FILTER"
    name = NAME_PREFIX + INPUT

    def filter(self, doc: DTDocument) -> bool | tuple[bool, str]:
        reason = doc.metadata.get(ERROR_KEY)
        if reason is None:
            return True
        doc.metadata[STAGE_KEY] = INPUT
        doc.metadata[REASON_KEY] = reason
        return False, reason


# --- readers: every record becomes a document or an error document ----------------------------


def _to_datatrove(
    data: Any, source_file: str, index: int, text_key: str, id_key: str, max_bytes: int, preview: str = ""
) -> DTDocument:
    """A datatrove Document for one parsed record; a record that is not a document keeps ERROR_KEY."""
    record = record_to_document(data, index + 1, text_key, id_key, max_bytes, preview)
    if isinstance(record, RecordError):
        return _error_document(record, source_file, index)
    doc_id = data.get(id_key)
    if doc_id is None:
        doc_id = f"{source_file}/{index}"  # datatrove's own default id
    metadata = {key: value for key, value in data.items() if key not in (text_key, id_key)}
    return DTDocument(text=record.text, id=doc_id, metadata=metadata)


def _error_document(error: RecordError, source_file: str, index: int) -> DTDocument:
    metadata = {ERROR_KEY: error.reason, DETAIL_KEY: error.detail, "source_file": source_file}
    metadata["line"] = index + 1
    return DTDocument(text=error.preview, id=error.id or f"{source_file}/{index}", metadata=metadata)


class LittleKitJsonlReader(JsonlReader):
    """datatrove's JSONL reader, except that no line is skipped silently.

    datatrove's reader logs and skips a line that is not JSON or has no text, and abandons the
    rest of a file at the first non-UTF-8 byte. Here each line is decoded on its own and every
    non-blank line becomes a Document; those that are not documents carry `littlekit_record_error`
    (the reason codes of `littlekit.io`) for RecordErrorFilter to count and set aside.
    """

    def __init__(self, data_folder, *, max_bytes: int = DEFAULT_MAX_BYTES, **kwargs: Any):
        super().__init__(data_folder, **kwargs)
        self.max_bytes = max_bytes

    def read_file(self, filepath: str) -> Iterator[DTDocument]:
        with self.data_folder.open(filepath, "rb", compression=self.compression) as handle:
            for index, raw in enumerate(handle):
                if index == 0 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte-order mark
                raw = raw.rstrip(b"\r\n")
                if not raw.strip():
                    continue
                with self.track_time():
                    document = self._parse(raw, filepath, index)
                yield document

    def _parse(self, raw: bytes, filepath: str, index: int) -> DTDocument:
        preview = raw[:PREVIEW_CHARS].decode("utf-8", "replace")
        line = index + 1
        if len(raw) > self.max_bytes:
            detail = f"line of {len(raw):,} bytes is over {self.max_bytes:,}"
            return _error_document(RecordError(line, TOO_LARGE, detail, preview=preview), filepath, index)
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            detail = f"not UTF-8 at byte {exc.start}"
            return _error_document(RecordError(line, BAD_ENCODING, detail, preview=preview), filepath, index)
        except (json.JSONDecodeError, RecursionError) as exc:
            detail = str(exc)[:200]
            return _error_document(RecordError(line, BAD_JSON, detail, preview=preview), filepath, index)
        return _to_datatrove(data, filepath, index, self.text_key, self.id_key, self.max_bytes, preview)


class LittleKitParquetReader(ParquetReader):
    """datatrove's Parquet reader, keeping every column and turning rows without usable text into
    error documents instead of skipping them."""

    def __init__(self, data_folder, *, max_bytes: int = DEFAULT_MAX_BYTES, **kwargs: Any):
        kwargs.setdefault("read_metadata", True)
        super().__init__(data_folder, **kwargs)
        self.max_bytes = max_bytes

    def get_document_from_dict(self, data: dict, source_file: str, id_in_file: int | str) -> DTDocument:
        return _to_datatrove(data, source_file, int(id_in_file), self.text_key, self.id_key, self.max_bytes)


def make_reader(
    path: str | os.PathLike,
    text_key: str = "text",
    id_key: str = "id",
    input_format: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> PipelineStep:
    """A reader of one file, or of every .jsonl(.gz) or .parquet file under a folder.

    datatrove shards by file (task r reads files r, r + tasks, ...), so a run has at most as
    many busy tasks as input files: split a big single file first (`shard_jsonl`).
    """
    path = Path(path)
    if path.is_file():
        folder, glob = path.parent, path.name
        fmt = input_format or _format_of(path.name)
    elif path.is_dir():
        fmt = input_format or ("parquet" if next(path.rglob("*.parquet"), None) else "jsonl")
        folder, glob = path, "**/*.parquet" if fmt == "parquet" else "**/*.jsonl*"
    else:
        raise FileNotFoundError(f"input {path} is neither a file nor a folder")
    common = {"text_key": text_key, "id_key": id_key, "glob_pattern": glob, "max_bytes": max_bytes}
    if fmt == "jsonl":
        return LittleKitJsonlReader(str(folder), **common)
    if fmt == "parquet":
        return LittleKitParquetReader(str(folder), **common)
    raise ValueError(f"unknown input format {fmt!r} (expected jsonl or parquet)")


def _format_of(name: str) -> str:
    return input_format(name)  # littlekit.io's: inside make_reader a parameter shadows the name


# --- writers ------------------------------------------------------------------------------------


def flat_record(
    writer: Any, document: DTDocument, text_key: str = "text", id_key: str = "id", keep_scores: bool = True
) -> dict:
    """The record as it was read (every field at the top level) plus what the filters added.

    A datatrove writer adapter (called as a method of the writer): the same shape as
    `littlekit filter` writes, rather than datatrove's nested `{"text", "id", "metadata"}`.
    `keep_scores=False` leaves out the stages' scores (`littlekit_scores`).
    """
    metadata = document.metadata
    if not keep_scores:
        metadata = {key: value for key, value in metadata.items() if key != SCORES_KEY}
    return {id_key: document.id, text_key: document.text, **metadata}


def _writer(
    folder: str | os.PathLike, text_key: str, id_key: str, compression: str | None, keep_scores: bool = True
) -> JsonlWriter:
    adapter = partial(flat_record, text_key=text_key, id_key=id_key, keep_scores=keep_scores)
    return JsonlWriter(str(folder), output_filename="${rank}.jsonl", compression=compression, adapter=adapter)


# --- the pipeline ---------------------------------------------------------------------------------


def expand_stages(stages: str | Sequence[str | Stage]) -> list[str | Stage]:
    """Stage names from "aoa,symbolic", "all" (every registered stage in cascade order) or a list."""
    if isinstance(stages, str):
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
) -> list[PipelineStep]:
    """Reader, RecordErrorFilter, one LittleKitFilter per stage in cascade order, JsonlWriter.

    `input_path_or_reader`: a .jsonl(.gz)/.parquet file, a folder of them, or any datatrove
    reader block. With `rejected_dir`, each filter writes what it drops to
    `rejected_dir/<stage>/` (`input/` for unreadable records). `keep_scores=False` writes the
    documents without the stages' scores. ValueError when a gated stage (the encoder with
    `encoder_gate="agree"`) comes before the stages whose scores its gate reads.
    """
    stage_options = _options_dict(options)
    expanded = expand_stages(stages)
    check_gate_order([getattr(stage, "name", stage) for stage in expanded], stage_options)
    if isinstance(input_path_or_reader, PipelineStep):
        reader = input_path_or_reader
    else:
        check_apart(input_path_or_reader, output_dir, rejected_dir)
        reader = make_reader(input_path_or_reader, text_key, id_key, input_format, max_bytes)

    def rejected(name: str) -> JsonlWriter | None:
        if rejected_dir is None:
            return None
        return _writer(Path(rejected_dir) / name, text_key, id_key, compression, keep_scores)

    blocks: list[PipelineStep] = [reader, RecordErrorFilter(exclusion_writer=rejected(INPUT))]
    for stage in expanded:
        name = stage.name if isinstance(stage, Stage) else stage
        blocks.append(LittleKitFilter(stage, stage_options, rejected(name), batch_size))
    blocks.append(_writer(output_dir, text_key, id_key, compression, keep_scores))
    return blocks


def check_apart(inp: str | os.PathLike, output_dir: str | os.PathLike, rejected_dir=None) -> None:
    """ValueError when an output folder is inside the input folder (a rerun would read it back)."""
    source = Path(inp).resolve()
    if not source.is_dir():
        return
    for out in (output_dir, rejected_dir):
        if out is not None and Path(out).resolve().is_relative_to(source):
            raise ValueError(f"output folder {out} is inside the input folder {inp}")


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


# --- executors ------------------------------------------------------------------------------------


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
    runner.run()
    return runner


def describe_run(pipeline: Sequence[PipelineStep], tasks: int) -> dict[str, Any]:
    """What must not change between a run and its resumption: tasks, input files, stages, outputs."""
    steps = []
    for step in pipeline:
        entry: dict[str, Any] = {"block": type(step).__name__}
        if isinstance(step, LittleKitFilter):
            entry.update(stage=step.stage_name, options=step.options)
        for attribute in ("data_folder", "output_folder"):
            folder = getattr(step, attribute, None)
            if folder is not None:
                entry[attribute] = folder.path
        if getattr(step, "glob_pattern", None):
            entry["glob_pattern"] = step.glob_pattern
        if isinstance(step, BaseDiskReader) and not step.paths_file:
            files = step.data_folder.list_files(recursive=step.recursive, glob_pattern=step.glob_pattern)
            entry["files"] = len(files)  # files added or removed would reshard the input
            entry["files_sha256"] = hashlib.sha256("\n".join(files).encode()).hexdigest()
        steps.append(entry)
    return {"tasks": tasks, "pipeline": steps}


def check_manifest(logging_dir, manifest: dict[str, Any]) -> None:
    """Write the run's manifest, or refuse a rerun whose manifest differs from the first run's.

    `logging_dir`: a path or datatrove DataFolder (local or remote, as the executor's).
    """
    folder = get_datafolder(str(logging_dir) if isinstance(logging_dir, os.PathLike) else logging_dir)
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    if folder.isfile(MANIFEST):
        with folder.open(MANIFEST, "r") as handle:
            first = json.load(handle)
        if first != json.loads(text):
            raise ValueError(
                f"{folder.path} holds a run with other settings (see its {MANIFEST}); resuming it with "
                "these would mix two runs' outputs. Use a new logging_dir, or delete it with the outputs."
            )
        return
    with folder.open(MANIFEST, "w") as handle:
        handle.write(text + "\n")


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
    **executor_options: Any,
) -> CascadeReport | None:
    """`littlekit filter` on datatrove: build, run (or submit), and for a run that has finished
    here (local, ray) return its checked report; None after a Slurm submission."""
    pipeline = build_datatrove_pipeline(
        inp,
        out,
        stages,
        text_key,
        rejected_dir,
        options=options,
        id_key=id_key,
        input_format=input_format,
        batch_size=batch_size,
        max_bytes=max_bytes,
    )
    run_datatrove(pipeline, executor, tasks, workers, logging_dir, **executor_options)
    if executor == "slurm":
        return None
    report = datatrove_report(logging_dir)
    report.check()
    return report


# --- the report -----------------------------------------------------------------------------------


def datatrove_report(logging_dir: str | os.PathLike) -> CascadeReport:
    """The run's counts as a CascadeReport (same summary and checks as the in-process cascade).

    Adds up `stats/<rank>.json` of every completed task, so it is complete once all tasks are.
    """
    per_step: dict[str, Counter] = {}
    seconds: Counter = Counter()
    order: list[str] = []
    for stats_file in sorted((Path(logging_dir) / "stats").glob("*.json")):
        for step in json.loads(stats_file.read_text(encoding="utf-8")):
            name = step["name"].split(": ", 1)[-1]
            if not name.startswith(NAME_PREFIX):
                continue
            name = name.removeprefix(NAME_PREFIX)
            if name not in per_step:
                per_step[name] = Counter()
                order.append(name)
            timing = step["time_stats"]  # a bare 0 for a task that had no input
            seconds[name] += timing["total"] if isinstance(timing, dict) else timing
            for label, value in step["stats"].items():
                per_step[name][label] += value["total"] if isinstance(value, dict) else value
    stages = [name for name in order if name != INPUT]
    report = CascadeReport(stages)
    first = per_step.get(INPUT, Counter())
    report.read = int(first["total"])
    report.errored_by_reason.update(_reasons(first))
    passed = int(first["forwarded"])
    for name in stages:
        counts = per_step[name]
        report.stage_in[name] = int(counts["total"])
        report.stage_out[name] = int(counts["forwarded"])
        report.stage_seconds[name] = seconds[name]
        for reason, n in _reasons(counts).items():
            if reason.startswith(STAGE_ERROR + ":"):
                report.errored_by_reason[reason] += n
                report.stage_errored[name] += n
            else:
                report.dropped_by_stage[name][reason] += n
        passed = report.stage_out[name]
    report.kept = passed
    return report


def _reasons(counts: Counter) -> Counter:
    prefix = "dropped_"
    return Counter({key.removeprefix(prefix): int(n) for key, n in counts.items() if key.startswith(prefix)})
