"""The filter blocks: `LittleKitFilter` (one stage as a datatrove filter) and `RecordErrorFilter`
(records our readers could not turn into documents), and the metadata keys they write."""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from datatrove.data import Document as DTDocument
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.stats import Stats

from littlekit.filter.base import Stage
from littlekit.filter.cascade import MAX_DETAIL, STAGE_ERROR, decide_all
from littlekit.filter.registry import StageOptions, build_stages, stage_names

SCORES_KEY = "littlekit_scores"  # metadata: {stage name: that stage's scores}
STAGE_KEY = "filter_stage"  # metadata of a rejected document: the stage that dropped it
REASON_KEY = "filter_reason"  # datatrove's own key for the drop reason
DETAIL_KEY = "filter_detail"  # the exception of a stage error, or what is wrong with a record
ERROR_KEY = "littlekit_record_error"  # set by our readers on a record that is not a document
RESERVED_KEYS = (SCORES_KEY, STAGE_KEY, REASON_KEY, DETAIL_KEY, ERROR_KEY)  # what the blocks write
FOREIGN_PREFIX = "input_"  # an input field under a reserved name is kept as input_<name>
BUILDS_STAT = "stage_builds"  # filter stat: the stage was built in this task (first use in its process)
BUILD_SECONDS_STAT = "stage_build_seconds"
PRECISION_STAT = "stage_precision:"  # + what a built stage scores in (the encoder's "cuda/bfloat16")
INPUT = "input"  # the name under which unreadable records are counted and written
NAME_PREFIX = "littlekit "
DEFAULT_BATCH = 256


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


class SafeDocStats:
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


def resolved_options(
    options: StageOptions | Mapping[str, Any] | None,
    stages: Sequence[str] = (),
    artifacts: str | os.PathLike | None = None,
) -> StageOptions:
    """The blocks' options, by the rule `littlekit filter` follows (littlekit.filter.options), in
    the driver; a StageOptions without `artifacts` is taken as it is (checked when it was built)."""
    if isinstance(options, StageOptions) and artifacts is None:
        return options
    # here: the driver resolves, a worker unpickles the result and never imports this
    from littlekit.filter.options import resolve_stage_options

    return resolve_stage_options(stages, options, artifacts)


def _cached_stage(name: str, options: StageOptions) -> tuple[Stage, float | None]:
    """The stage built once per process and options; with the seconds its build took, None when
    it came from the cache. Every task a worker process runs reuses it (datatrove unpickles a
    fresh pipeline per task, so the cache lives here, in the module, not on the block)."""
    key = (name, json.dumps(options.as_dict(), sort_keys=True, default=str))
    stage = _STAGE_CACHE.get(key)
    if stage is not None:
        return stage, None
    start = time.perf_counter()
    stage = build_stages([name], options)[0]
    _STAGE_CACHE[key] = stage
    return stage, time.perf_counter() - start


class _CountedPerTask(SafeDocStats, BaseFilter):
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
    the worker (a StageOptions, or a dict of options resolved as `littlekit filter` resolves its
    flags: `littlekit.filter.options`), or an already built Stage (pickled with the pipeline:
    fine for light stages, not for a loaded fastText or encoder model). Documents are decided
    `batch_size` at a time by `littlekit.filter.cascade.decide_all`, as in the cascade (the
    stage's own `score_batch` when it has one, its prior gate when it carries one). Every
    document carries the scores of the stages it went through in `metadata["littlekit_scores"]`
    (a gated stage, the encoder's agreement gate, reads the earlier ones there); a dropped one
    also `filter_stage` and `filter_reason`. A stage that raises on a document drops it with
    reason `stage_error:<stage>` (and counts it under the `errored` stat) instead of failing
    the whole task; a batched scoring call that raises (a CUDA error, out of memory) fails the
    task with a BatchScoringError naming the stage, the task and the batch (its number in the
    task, first and last document id), as the cascade does.
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
            self._options = resolved_options(options)  # what the worker builds the stage with
            self.options = self._options.as_dict()  # the run's manifest records these
        self.name = NAME_PREFIX + self.stage_name  # before super().__init__, which names the stats
        super().__init__(exclusion_writer, batch_size)

    @property
    def stage(self) -> Stage:
        """The stage, built on first use in this process (so a worker loads its own model), then
        taken from the process's cache by every later task; a build is counted in the stats."""
        if self._stage is None:
            # a block pickled before `_options` existed (a Slurm run resubmitted) has the dict only
            options = self.__dict__.get("_options") or StageOptions(**self.options)
            self._stage, seconds = _cached_stage(self.stage_name, options)
            if seconds is not None:
                self.stat_update(BUILDS_STAT)
                self.stat_update(BUILD_SECONDS_STAT, value=seconds, unit="build")
                precision = getattr(self._stage, "precision", None)
                if precision:
                    self.stat_update(PRECISION_STAT + precision)
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

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        self._rank, self._batches = rank, 0  # the task and its batch count, named by a failed batch
        yield from super().run(data, rank, world_size)

    def filter(self, doc: DTDocument) -> bool | tuple[bool, str]:
        return self.filter_batch([doc])[0]

    def filter_batch(self, batch: list[DTDocument]) -> list[bool | tuple[bool, str]]:
        if not batch:
            return []
        stage = self.stage
        self._batches = self.__dict__.get("_batches", 0) + 1
        prior = [_scores_of(doc) for doc in batch]  # what a gated stage reads
        where = (
            f"batch {self._batches} of task {self.__dict__.get('_rank', 0)} "
            f"(documents from id {batch[0].id!r} to id {batch[-1].id!r})"
        )
        verdicts = decide_all(stage, [doc.text for doc in batch], prior, where)
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
