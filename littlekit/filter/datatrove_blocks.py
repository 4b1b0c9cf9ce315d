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
    logs/littlekit_run.json                 the run's manifest: settings and input files (see Resume)

Foreign fields: every input field passes through to the output unchanged (as `littlekit filter`
in process writes them), whatever its name or value: `media`, `metadata`, `rank`, `token_count`
and the like are plain fields here, not datatrove's. The one exception is a field under a name
these blocks write themselves (littlekit_scores, filter_stage, filter_reason, filter_detail,
littlekit_record_error): it is not ours, so it is kept renamed to `input_<name>` (with the
prefix repeated if that name is taken too), e.g. a previous run's `littlekit_scores` comes out as
`input_littlekit_scores` beside this run's. (In process the kept file holds the input record
itself, so there such a field keeps its name: the in-process runner writes no scores into it.)

Workers never receive loaded models: a filter is pickled as its stage name plus options, and the
stage (fastText model, encoder, AoA table) is built inside the worker the first time it is
needed, once per process and options, and reused by every later task that process runs (its
per-word memos stay warm too); each build is counted in the task's stats (`stage_builds`, see
`datatrove_stage_builds`). Each local worker still pays its own start-up once (imports, AoA
table, models: a few seconds), so more workers only pay off when the run has far more work than
that. The encoder stage puts one model per worker on the GPU: locally use workers=1 for it, on
Slurm gpus_per_task=1.

Resume: datatrove skips a task whose completion marker exists and reruns every other task from
the start, overwriting that task's files, so a killed run started again with the same settings
ends with the same files as an uninterrupted run. Changing the number of tasks, the stages or
the input between the two runs would break that (reshard the input, or mix the outputs of two
versions of a file), so `run_datatrove` records the configuration and each input file's size and
modification time in the logging directory and refuses, before touching any output, a rerun that
differs, naming the changed file (`ResumeRefused`). Size and modification time rather than a hash:
they come with the folder listing datatrove does anyway, where a hash would read every input byte
in the driver at every start and resume (hours for a large remote dataset); any rewrite of a file
changes its modification time. An edit that keeps the size and restores the old time (`touch -r`,
`rsync -t` of another version) is not seen; a file only touched is refused although unchanged.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from functools import partial
from glob import has_magic
from pathlib import Path
from typing import Any

from datatrove.data import Document as DTDocument
from datatrove.data import DocumentsPipeline
from datatrove.executor import LocalPipelineExecutor, SlurmPipelineExecutor
from datatrove.io import DataFolder, get_datafolder
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.readers.base import BaseDiskReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.stats import Stats

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
    json_default,
    record_to_document,
    to_json_line,
)

SCORES_KEY = "littlekit_scores"  # metadata: {stage name: that stage's scores}
STAGE_KEY = "filter_stage"  # metadata of a rejected document: the stage that dropped it
REASON_KEY = "filter_reason"  # datatrove's own key for the drop reason
DETAIL_KEY = "filter_detail"  # the exception of a stage error, or what is wrong with a record
ERROR_KEY = "littlekit_record_error"  # set by our readers on a record that is not a document
RESERVED_KEYS = (SCORES_KEY, STAGE_KEY, REASON_KEY, DETAIL_KEY, ERROR_KEY)  # what the blocks write
FOREIGN_PREFIX = "input_"  # an input field under a reserved name is kept as input_<name>
BUILDS_STAT = "stage_builds"  # filter stat: the stage was built in this task (first use in its process)
BUILD_SECONDS_STAT = "stage_build_seconds"
INPUT = "input"  # the name under which unreadable records are counted and written
NAME_PREFIX = "littlekit "
MANIFEST = "littlekit_run.json"
EXECUTORS = ("local", "slurm", "ray")
DEFAULT_BATCH = 256


# --- the filter block -------------------------------------------------------------------------


def set_aside(metadata: dict[str, Any], keys: Sequence[str] = RESERVED_KEYS) -> dict[str, Any]:
    """Rename, in place, the fields of `metadata` under `keys` to `input_<key>` (the prefix
    repeated while that name is taken): an input field is kept, never mistaken for ours."""
    for key in keys:
        if key in metadata:
            new = FOREIGN_PREFIX + key
            while new in metadata:
                new = FOREIGN_PREFIX + new
            metadata[new] = metadata.pop(key)
    return metadata


class _SafeDocStats:
    """datatrove's per-document stats, without trusting a `token_count` field of the input.

    datatrove's readers, filters and writers add `metadata["token_count"]` to a stat when it is
    there; an input field of that name holding a string or a list would raise and end the task.
    Here it counts only when it is a finite number (as datatrove's own tokenizer blocks set it).
    """

    def update_doc_stats(self, document: DTDocument) -> None:
        self.stat_update("doc_len", value=len(document.text), unit="doc")
        count = document.metadata.get("token_count")
        if isinstance(count, int | float) and not isinstance(count, bool) and math.isfinite(count) and count:
            self.stat_update("doc_len_tokens", value=count, unit="doc")


_STAGE_CACHE: dict[tuple[str, str], Stage] = {}  # one built stage per (name, options) and process


def clear_stage_cache() -> None:
    """Forget this process's built stages (a benchmark's cold start; tests)."""
    _STAGE_CACHE.clear()


def _options_dict(options: StageOptions | Mapping[str, Any] | None) -> dict[str, Any]:
    """Options as a plain dict, validated now (in the driver) rather than in a worker."""
    if options is None:
        return asdict(StageOptions())
    if isinstance(options, StageOptions):
        return asdict(options)
    return asdict(StageOptions(**options))


def _cached_stage(name: str, options: dict[str, Any]) -> tuple[Stage, float | None]:
    """The stage built once per process and options; with the seconds its build took, None when
    it came from the cache. Every task a worker process runs reuses it (datatrove unpickles a
    fresh pipeline per task, so the cache lives here, in the module, not on the block)."""
    key = (name, json.dumps(options, sort_keys=True, default=str))
    stage = _STAGE_CACHE.get(key)
    if stage is not None:
        return stage, None
    start = time.perf_counter()
    stage = build_stages([name], options)[0]
    _STAGE_CACHE[key] = stage
    return stage, time.perf_counter() - start


class _CountedPerTask(_SafeDocStats, BaseFilter):
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
        """The stage, built on first use in this process (so a worker loads its own model), then
        taken from the process's cache by every later task; a build is counted in the stats."""
        if self._stage is None:
            self._stage, seconds = _cached_stage(self.stage_name, self.options)
            if seconds is not None:
                self.stat_update(BUILDS_STAT)
                self.stat_update(BUILD_SECONDS_STAT, value=seconds, unit="build")
        return self._stage

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self.options is not None:
            state["_stage"] = None  # rebuilt from name + options on the other side
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> LittleKitFilter:
        # The local executor deep-copies the pipeline for every task it runs in its own process
        # (workers=1): share a stage given already built instead of copying its tables each time.
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__getstate__().items():
            clone.__dict__[key] = value if key == "_stage" else copy.deepcopy(value, memo)
        return clone

    def filter(self, doc: DTDocument) -> bool | tuple[bool, str]:
        return self.filter_batch([doc])[0]

    def filter_batch(self, batch: list[DTDocument]) -> list[bool | tuple[bool, str]]:
        stage = self.stage
        prior = [_scores_of(doc) for doc in batch]  # what a gated stage reads
        verdicts = decide_all(stage, [doc.text for doc in batch], prior)
        results: list[bool | tuple[bool, str]] = []
        for doc, scores, verdict in zip(batch, prior, verdicts, strict=True):
            if isinstance(verdict, BaseException):
                self.stat_update("errored")
                doc.metadata[DETAIL_KEY] = f"{type(verdict).__name__}: {verdict}"[:MAX_DETAIL]
                results.append(self._drop(doc, f"{STAGE_ERROR}:{stage.name}"))
                continue
            scores[stage.name] = dict(verdict.scores)
            doc.metadata[SCORES_KEY] = scores
            results.append(True if verdict.keep else self._drop(doc, verdict.reason or "unspecified"))
        return results

    def _drop(self, doc: DTDocument, reason: str) -> tuple[bool, str]:
        doc.metadata[STAGE_KEY] = self.stage_name
        doc.metadata[REASON_KEY] = reason
        return False, reason


def _scores_of(doc: DTDocument) -> dict[str, Any]:
    """The scores dict the earlier stages wrote; anything else under that name is set aside."""
    scores = doc.metadata.get(SCORES_KEY)
    if isinstance(scores, dict):
        return scores
    if SCORES_KEY in doc.metadata:  # a value that is not ours (no RecordErrorFilter ran before)
        set_aside(doc.metadata, (SCORES_KEY,))
    return {}


class RecordErrorFilter(_CountedPerTask):
    """Drops the records our readers could not turn into documents, with their io reason code.

    Placed first, so the counts of a run add up as the in-process cascade's do: every record
    read ends kept, dropped by a stage, or errored here. As the first block after the reader it
    also sets aside (renames to `input_<name>`) any field a reader other than ours left under a
    name the filters write (littlekit_scores, filter_stage, ...): nothing of ours exists yet.
    """

    type = "🔻 - FILTER"
    name = NAME_PREFIX + INPUT

    def filter(self, doc: DTDocument) -> bool | tuple[bool, str]:
        reason = doc.metadata.get(ERROR_KEY)
        if reason is None:
            set_aside(doc.metadata, (SCORES_KEY, STAGE_KEY, REASON_KEY, DETAIL_KEY))
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
    return DTDocument(text=record.text, id=doc_id, metadata=set_aside(metadata))


def _error_document(error: RecordError, source_file: str, index: int) -> DTDocument:
    metadata = {ERROR_KEY: error.reason, DETAIL_KEY: error.detail, "source_file": source_file}
    metadata["line"] = index + 1
    return DTDocument(text=error.preview, id=error.id or f"{source_file}/{index}", metadata=metadata)


class LittleKitJsonlReader(_SafeDocStats, JsonlReader):
    """datatrove's JSONL reader, except that no line is skipped silently.

    datatrove's reader logs and skips a line that is not JSON or has no text, and abandons the
    rest of a file at the first non-UTF-8 byte. Here each line is decoded on its own and every
    non-blank line becomes a Document; those that are not documents carry `littlekit_record_error`
    (the reason codes of `littlekit.io`) for RecordErrorFilter to count and set aside. Every other
    field of the record goes to the metadata as it is (`media` and `metadata` too, which
    datatrove's reader would take for its own), a reserved name renamed (see `set_aside`).
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


class LittleKitParquetReader(_SafeDocStats, ParquetReader):
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
    record = {id_key: document.id, text_key: document.text, **metadata}
    if document.media and "media" not in record:  # a datatrove reader's Media objects
        record["media"] = [dataclasses.asdict(media) | {"media_bytes": None} for media in document.media]
    return record


class LittleKitJsonlWriter(_SafeDocStats, JsonlWriter):
    """datatrove's JSONL writer, for flat records whose fields are the input's, whatever they are.

    datatrove's writer reads three things of a record as its own: a top-level `media` field
    (each entry must be a dict with `media_bytes`, else KeyError), the metadata as tags of the
    file name (an input field `rank` would send the record to another task's file) and
    `token_count` (see _SafeDocStats); and orjson refuses integers over 64 bits, lone surrogates
    and keys that are not strings. Here none of these can end a task: the file name uses the
    task's rank alone, and a record orjson refuses is written by `littlekit.io.to_json_line`
    (the in-process writer's JSON) instead. Either way a NaN or infinity is written as null, as
    orjson does, so the lines stay strict JSON that datatrove's own readers parse.
    """

    def _write(self, document: dict, file_handler, _filename: str) -> None:
        import orjson  # datatrove's JsonlWriter requires it

        try:
            line = orjson.dumps(document, option=orjson.OPT_APPEND_NEWLINE, default=json_default)
        except TypeError:  # orjson.JSONEncodeError: a big integer, a lone surrogate, a non-str key
            line = to_json_line(_finite(document)).encode("utf-8") + b"\n"
        file_handler.write(line)

    def _get_output_filename(self, document: DTDocument, rank: int | str = 0, **kwargs) -> str:
        return self.output_filename.substitute({"id": document.id, **kwargs, "rank": str(rank).zfill(5)})


def _finite(value: Any) -> Any:
    """The value with every NaN or infinite float in it replaced by None (as orjson writes them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _writer(
    folder: str | os.PathLike, text_key: str, id_key: str, compression: str | None, keep_scores: bool = True
) -> JsonlWriter:
    adapter = partial(flat_record, text_key=text_key, id_key=id_key, keep_scores=keep_scores)
    return LittleKitJsonlWriter(
        str(folder), output_filename="${rank}.jsonl", compression=compression, adapter=adapter
    )


# --- the pipeline ---------------------------------------------------------------------------------


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
    """What must not change between a run and its resumption: tasks, stages, outputs, and the input
    files, by name and by content identity (size and modification time, `input_identities`)."""
    steps = []
    inputs: dict[str, dict[str, dict[str, Any]]] = {}
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
            inputs[step.data_folder.path] = input_identities(
                step.data_folder, files, step.recursive, step.glob_pattern
            )
        steps.append(entry)
    return {"tasks": tasks, "pipeline": steps, "inputs": inputs}


_MODIFIED_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "timeCreated")
_CHECKSUM_KEYS = ("ETag", "etag", "md5Hash", "crc32c", "blob_id", "sha256", "checksum")


def input_identities(
    folder: DataFolder, files: Sequence[str], recursive: bool = True, glob_pattern: str | None = None
) -> dict[str, dict]:
    """{file: {"size", "modified"[, "checksum"]}} for each of `files` (relative to `folder`).

    From one listing, the one `DataFolder.list_files` makes for the same `glob_pattern` (a local
    stat per file, an object store's LIST), so no input byte is read: `modified` is the
    modification time (local: seconds since the epoch), `checksum` the store's ETag or hash where
    the listing carries one (S3, GCS, the Hub), never computed here.
    """
    maxdepth = None if recursive else 1
    if glob_pattern and not has_magic(glob_pattern):
        glob_pattern = f"*{glob_pattern}"  # as list_files does
    if glob_pattern:
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
            value = next((info[key] for key in keys if info.get(key) is not None), None)
            if value is not None:
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
        now = json.loads(text)
        if "inputs" not in first:  # written before input identities were recorded: names only
            now.pop("inputs", None)
        if first != now:
            raise ResumeRefused(_refusal(folder.path, first, now))
        return
    with folder.open(MANIFEST, "w") as handle:
        handle.write(text + "\n")


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
        return datetime.fromtimestamp(value).isoformat(sep=" ", timespec="microseconds")
    return str(value)


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


def datatrove_stage_builds(logging_dir: str | os.PathLike) -> dict[str, tuple[int, float]]:
    """{stage: (times built, seconds building)} over the run's completed tasks.

    A stage is built once per worker process (and options), however many tasks the process
    runs, so with the local executor the count is at most the number of workers.
    """
    found: dict[str, tuple[int, float]] = {}
    for stats_file in sorted((Path(logging_dir) / "stats").glob("*.json")):
        for step in json.loads(stats_file.read_text(encoding="utf-8")):
            name = step["name"].split(": ", 1)[-1]
            if not name.startswith(NAME_PREFIX) or name == NAME_PREFIX + INPUT:
                continue
            name = name.removeprefix(NAME_PREFIX)
            stats = step["stats"]
            builds, seconds = (_total(stats.get(label, 0)) for label in (BUILDS_STAT, BUILD_SECONDS_STAT))
            count, spent = found.get(name, (0, 0.0))
            found[name] = (count + int(builds), spent + float(seconds))
    return found


def _total(value: Any) -> float:
    return value["total"] if isinstance(value, dict) else value


def _reasons(counts: Counter) -> Counter:
    prefix = "dropped_"
    return Counter({key.removeprefix(prefix): int(n) for key, n in counts.items() if key.startswith(prefix)})
