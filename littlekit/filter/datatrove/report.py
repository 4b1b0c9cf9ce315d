"""The run's counts, added up from datatrove's per-task stats, as a `CascadeReport`."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from littlekit.filter.cascade import STAGE_ERROR, CascadeReport
from littlekit.filter.datatrove.blocks import (
    BUILD_SECONDS_STAT,
    BUILDS_STAT,
    INPUT,
    NAME_PREFIX,
    PRECISION_STAT,
)


def datatrove_report(logging_dir: str | os.PathLike) -> CascadeReport:
    """The run's counts as a CascadeReport (same summary and checks as the in-process cascade).

    Adds up `stats/<rank>.json` of every completed task, so it is complete once all tasks are.
    """
    per_step: dict[str, Counter] = {}
    seconds: Counter = Counter()
    order: list[str] = []
    for name, step in _littlekit_steps(logging_dir):
        if name not in per_step:
            per_step[name] = Counter()
            order.append(name)
        seconds[name] += _total(step["time_stats"])
        for label, value in step["stats"].items():
            per_step[name][label] += _total(value)
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
        precisions = sorted(
            label.removeprefix(PRECISION_STAT) for label in counts if label.startswith(PRECISION_STAT)
        )
        if precisions:  # the workers' builds of the stage; more than one when they differed
            report.precision[name] = ", ".join(precisions)
    report.kept = passed
    return report


def datatrove_stage_builds(logging_dir: str | os.PathLike) -> dict[str, tuple[int, float]]:
    """{stage: (times built, seconds building)} over the run's completed tasks.

    A stage is built once per worker process (and options), however many tasks the process
    runs, so with the local executor the count is at most the number of workers.
    """
    found: dict[str, tuple[int, float]] = {}
    for name, step in _littlekit_steps(logging_dir):
        if name == INPUT:
            continue
        stats = step["stats"]
        builds, seconds = (_total(stats.get(label, 0)) for label in (BUILDS_STAT, BUILD_SECONDS_STAT))
        count, spent = found.get(name, (0, 0.0))
        found[name] = (count + int(builds), spent + float(seconds))
    return found


def _littlekit_steps(logging_dir: str | os.PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
    """(stage name, step entry) for each of littlekit's blocks in every completed task's
    `stats/<rank>.json`, in file then pipeline order; datatrove's own steps are skipped."""
    for stats_file in sorted((Path(logging_dir) / "stats").glob("*.json")):
        for step in json.loads(stats_file.read_text(encoding="utf-8")):
            name = step["name"].split(": ", 1)[-1]  # datatrove names a step "<type>: <name>"
            if name.startswith(NAME_PREFIX):
                yield name.removeprefix(NAME_PREFIX), step


def _total(value: Any) -> float:
    # a stat is {"total": ..., "n": ..., ...} once updated, a bare number (0) in a task with no input
    return value["total"] if isinstance(value, dict) else value


def _reasons(counts: Counter) -> Counter:
    prefix = "dropped_"
    return Counter({key.removeprefix(prefix): int(n) for key, n in counts.items() if key.startswith(prefix)})
