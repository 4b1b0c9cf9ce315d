"""A datatrove filter run as its own process, for the kill-and-resume test (tests/filter/test_resume.py).

    python tests/datatrove_job.py INPUT_DIR WORK_DIR --tasks 8 --workers 2 --delay 0.02 [--stamp-pid]

Runs reader -> aoa -> symbolic -> writer over INPUT_DIR into WORK_DIR/{kept,rejected,logs}.
`--delay` puts a pass-through step that sleeps that long per document before the writer, so a
task takes long enough for the test to kill the run between two task completions.
`--stamp-pid` puts one that writes the worker's process id into each document (`worker_pid`),
so a test can tell which process ran which task
(tests/filter/test_datatrove_foreign_fields_and_stage_builds.py).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from datatrove.pipeline.base import PipelineStep

from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline, run_datatrove


class Sleep(PipelineStep):
    """Pass every document on unchanged, `seconds` after receiving it."""

    name = "sleep"
    type = "⏳ - DELAY"

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds

    def run(self, data, rank: int = 0, world_size: int = 1):
        for doc in data:
            time.sleep(self.seconds)
            yield doc


class StampPid(PipelineStep):
    """Pass every document on with the id of the process running the task in `worker_pid`."""

    name = "pid"
    type = "🪪 - STAMP"

    def run(self, data, rank: int = 0, world_size: int = 1):
        pid = os.getpid()
        for doc in data:
            doc.metadata["worker_pid"] = pid
            yield doc


def run(inp: Path, work: Path, tasks: int, workers: int, delay: float = 0.0, stamp_pid: bool = False) -> None:
    pipeline = build_datatrove_pipeline(inp, work / "kept", "aoa,symbolic", rejected_dir=work / "rejected")
    if delay:
        pipeline.insert(-1, Sleep(delay))
    if stamp_pid:
        pipeline.insert(1, StampPid())
    run_datatrove(pipeline, tasks=tasks, workers=workers, logging_dir=work / "logs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--stamp-pid", action="store_true")
    args = parser.parse_args()
    run(args.input, args.work, args.tasks, args.workers, args.delay, args.stamp_pid)


if __name__ == "__main__":  # the local executor's forkserver workers re-import this file
    main()
