"""Kill a real datatrove run midway, start it again, and get exactly an uninterrupted run's output.

The run (tests/datatrove_job.py) is a separate process with a worker pool: 8 tasks, one input
file each, 2 workers, a per-document sleep so each task lasts about half a second. The test
kills the whole process group with SIGKILL as soon as two completion markers exist, so some
tasks are done, some were cut off mid-write and some never started; then it runs the same
command again and compares every output line with a run that was never interrupted (run in
this process, one worker, no sleep: the sleep only passes documents on).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from datatrove_job import run as run_in_process

from littlekit.config import EMBEDDED_DATA, REPO_ROOT
from littlekit.filter.datatrove.pipeline import shard_jsonl
from littlekit.filter.datatrove.report import datatrove_report
from littlekit.filter.datatrove.resume import ResumeRefused

JOB = Path(__file__).parents[1] / "datatrove_job.py"  # beside conftest.py
TASKS, WORKERS, DOCS_PER_TASK = 8, 2, 40
DELAY = 0.015  # seconds per document: ~0.6 s per task
BAD_LINES = [b"{not json\n", b'{"id": "blank", "text": "   "}\n', b'{"id": "no-text"}\n']


def make_input(folder: Path) -> list[str]:
    """TASKS files of DOCS_PER_TASK demo documents, plus three unusable lines in the last file;
    returns the ids of the good documents."""
    lines = (EMBEDDED_DATA / "demo_corpus" / "demo_web.jsonl").read_bytes().splitlines(keepends=True)
    lines = lines[: TASKS * DOCS_PER_TASK]
    source = folder.parent / "source.jsonl"
    source.write_bytes(b"".join(lines))
    files = shard_jsonl(source, folder, TASKS)
    with files[-1].open("ab") as handle:
        handle.write(b"".join(BAD_LINES))
    return [json.loads(line)["id"] for line in lines]


def job(inp: Path, work: Path, delay: float) -> list[str]:
    return [
        sys.executable,
        str(JOB),
        str(inp),
        str(work),
        "--tasks",
        str(TASKS),
        "--workers",
        str(WORKERS),
        "--delay",
        str(delay),
    ]


def run_to_end(command: list[str]) -> None:
    done = subprocess.run(command, cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}


def completions(work: Path) -> int:
    folder = work / "logs" / "completions"
    return len(list(folder.iterdir())) if folder.is_dir() else 0


def kill_after(command: list[str], work: Path, n_done: int, timeout: float = 60.0) -> int:
    """Start the run, SIGKILL its whole process group once n_done tasks completed; return how many had."""
    log = work.with_name(work.name + ".log")
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    try:
        while completions(work) < n_done:
            ended = process.poll() is not None
            assert not ended, f"the run ended before it could be killed:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no task completed in time:\n{log.read_text()[-3000:]}"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return completions(work)


def lines(folder: Path) -> Counter:
    """Every output line (a full JSON record) under folder, as a multiset."""
    found: Counter = Counter()
    for path in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            found.update(handle.read().splitlines())
    return found


def ids(found: Counter) -> Counter:
    return Counter(json.loads(line)["id"] for line in found.elements())


def counts(report) -> dict:
    """The report without its timings."""
    found = report.to_dict()
    found["stages"] = [{k: v for k, v in row.items() if k != "seconds"} for row in found["stages"]]
    return found


@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_output(tmp_path):
    inp = tmp_path / "input"
    good_ids = make_input(inp)

    reference = tmp_path / "reference"
    run_in_process(inp, reference, TASKS, workers=1)

    resumed = tmp_path / "resumed"
    done_at_kill = kill_after(job(inp, resumed, DELAY), resumed, n_done=2)
    assert 2 <= done_at_kill < TASKS, f"kill came too late: {done_at_kill} of {TASKS} tasks had completed"
    kept_at_kill = ids(lines(resumed / "kept"))
    assert sum(kept_at_kill.values()) < sum(ids(lines(reference / "kept")).values())
    run_to_end(job(inp, resumed, DELAY))
    assert completions(resumed) == TASKS

    for part in ("kept", "rejected"):
        assert lines(resumed / part) == lines(reference / part), f"{part} differs from the uninterrupted run"
    kept, rejected = ids(lines(resumed / "kept")), ids(lines(resumed / "rejected"))
    assert max(kept.values()) == 1 and max(rejected.values()) == 1, "a document was written twice"
    assert not set(kept) & set(rejected)
    assert sum(kept.values()) + sum(rejected.values()) == len(good_ids) + len(BAD_LINES)
    assert set(good_ids) <= set(kept) | set(rejected)

    report = datatrove_report(resumed / "logs")
    report.check()
    assert counts(report) == counts(datatrove_report(reference / "logs"))
    assert (report.read, report.kept) == (len(good_ids) + len(BAD_LINES), sum(kept.values()))
    assert report.errored_by_reason == Counter({"bad_json": 1, "empty_text": 1, "missing_text_field": 1})


def test_rerun_with_other_settings_is_refused(tmp_path):
    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline
    from littlekit.filter.datatrove.resume import check_manifest, describe_run

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"id": 1, "text": "a cat"}\n', encoding="utf-8")
    pipeline = build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", "aoa")
    check_manifest(tmp_path / "logs", describe_run(pipeline, tasks=4))
    check_manifest(tmp_path / "logs", describe_run(pipeline, tasks=4))  # the same run again: fine
    with pytest.raises(ValueError, match="other settings"):
        check_manifest(tmp_path / "logs", describe_run(pipeline, tasks=2))
    other = build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", "aoa", options={"max_aoa": 10.0})
    with pytest.raises(ValueError, match="other settings"):
        check_manifest(tmp_path / "logs", describe_run(other, tasks=4))
    (tmp_path / "in" / "b.jsonl").write_text('{"id": 2, "text": "a dog"}\n', encoding="utf-8")
    with pytest.raises(ResumeRefused, match=r"added: .*/in/b\.jsonl"):  # a new file reshards the tasks
        check_manifest(tmp_path / "logs", describe_run(pipeline, tasks=4))
    (tmp_path / "in" / "b.jsonl").unlink()
    (tmp_path / "in" / "a.jsonl").unlink()
    with pytest.raises(ResumeRefused, match=r"removed: .*/in/a\.jsonl"):
        check_manifest(tmp_path / "logs", describe_run(pipeline, tasks=4))


def test_a_manifest_from_before_input_identities_still_resumes(tmp_path):
    """A run started by a version that recorded only the input files' names (no `inputs`)."""
    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline
    from littlekit.filter.datatrove.resume import MANIFEST, check_manifest, describe_run

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"id": 1, "text": "a cat"}\n', encoding="utf-8")
    manifest = describe_run(build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", "aoa"), tasks=2)
    (tmp_path / "logs").mkdir()
    old = {key: value for key, value in manifest.items() if key != "inputs"}
    (tmp_path / "logs" / MANIFEST).write_text(json.dumps(old), encoding="utf-8")
    check_manifest(tmp_path / "logs", manifest)
    with pytest.raises(ResumeRefused, match="other settings"):
        check_manifest(tmp_path / "logs", {**manifest, "tasks": 3})


def test_an_input_given_as_one_file_is_identified_by_its_content_too(tmp_path):
    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline
    from littlekit.filter.datatrove.resume import check_manifest, describe_run

    (tmp_path / "in").mkdir()
    inp = tmp_path / "in" / "docs.jsonl"
    inp.write_text('{"id": 1, "text": "a cat"}\n', encoding="utf-8")
    (tmp_path / "in" / "other.jsonl").write_text('{"id": 2, "text": "a dog"}\n', encoding="utf-8")
    manifest = describe_run(build_datatrove_pipeline(inp, tmp_path / "kept", "aoa"), tasks=1)
    assert list(manifest["inputs"].values()) == [
        {"docs.jsonl": {"size": 27, "modified": inp.stat().st_mtime}}
    ]
    check_manifest(tmp_path / "logs", manifest)
    (tmp_path / "in" / "other.jsonl").write_text("changed, but not an input of this run\n", encoding="utf-8")
    check_manifest(
        tmp_path / "logs", describe_run(build_datatrove_pipeline(inp, tmp_path / "kept", "aoa"), 1)
    )
    inp.write_text('{"id": 1, "text": "a cat!"}\n', encoding="utf-8")
    with pytest.raises(
        ResumeRefused, match=re.escape(f"changed: {inp} (size 27 bytes -> 28 bytes, modified ")
    ):
        check_manifest(
            tmp_path / "logs", describe_run(build_datatrove_pipeline(inp, tmp_path / "kept", "aoa"), 1)
        )


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under folder: its bytes and modification time."""
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def edit_in_place(path: Path) -> None:
    """Change one character of the file, keeping its size (what a size check alone would miss)."""
    data = bytearray(path.read_bytes())
    at = data.index(b'"text": "') + len(b'"text": "')
    data[at : at + 1] = b"Z" if data[at : at + 1] != b"Z" else b"Y"
    path.write_bytes(bytes(data))


def test_resume_after_an_input_file_changed_is_refused_and_touches_nothing(tmp_path):
    """Start a run (3 of its 8 tasks done), edit an input file keeping its size, resume: refused
    with the file named and what to do, before any output or log file is touched. Then restore
    the file as it was (bytes and time): the resume goes through to the uninterrupted output."""
    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline, run_datatrove

    inp = tmp_path / "input"
    make_input(inp)
    work = tmp_path / "run"

    def start(**executor_options) -> None:
        pipeline = build_datatrove_pipeline(
            inp, work / "kept", "aoa,symbolic", rejected_dir=work / "rejected"
        )
        run_datatrove(pipeline, tasks=TASKS, workers=1, logging_dir=work / "logs", **executor_options)

    start(local_tasks=3)  # the first run got as far as tasks 0-2
    assert completions(work) == 3
    before = snapshot(work)
    shard = inp / "part-00005.jsonl"  # a task not yet run
    original, stat = shard.read_bytes(), shard.stat()
    edit_in_place(shard)
    assert shard.stat().st_size == stat.st_size and shard.read_bytes() != original

    with pytest.raises(ResumeRefused) as refused:
        start()
    message = str(refused.value)
    assert f"changed: {shard}" in message and "size" not in message.split("changed:")[1].split("\n")[0]
    assert "modified" in message and "--logging-dir" in message and "Restore the input" in message
    assert snapshot(work) == before  # no output, stats or completion marker written or removed

    shard.write_bytes(original)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    start()
    assert completions(work) == TASKS
    reference = tmp_path / "reference"
    run_in_process(inp, reference, TASKS, workers=1)
    for part in ("kept", "rejected"):
        assert lines(work / part) == lines(reference / part)


@pytest.mark.slow
def test_killed_run_whose_input_changed_refuses_to_resume(tmp_path):
    """The same with a real kill: the rerun command fails, says which file changed, and leaves
    every file of the killed run as it was."""
    inp = tmp_path / "input"
    make_input(inp)
    work = tmp_path / "run"
    done_at_kill = kill_after(job(inp, work, DELAY), work, n_done=2)
    assert done_at_kill < TASKS
    before = snapshot(work)
    shard = inp / f"part-{TASKS - 1:05d}.jsonl"
    with shard.open("ab") as handle:
        handle.write(b'{"id": "late", "text": "A line added after the kill."}\n')
    rerun = subprocess.run(
        job(inp, work, DELAY), cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert rerun.returncode != 0
    assert "ResumeRefused" in rerun.stderr and f"changed: {shard} (size" in rerun.stderr
    assert "--logging-dir" in rerun.stderr
    assert snapshot(work) == before


def test_rerunning_a_finished_run_skips_every_task_and_changes_nothing(tmp_path):
    inp = tmp_path / "input"
    make_input(inp)
    work = tmp_path / "run"
    run_in_process(inp, work, TASKS, workers=1)
    first = lines(work / "kept") + lines(work / "rejected")
    stamps = {p: p.stat().st_mtime_ns for p in (work / "kept").iterdir()}
    run_in_process(inp, work, TASKS, workers=1)
    assert lines(work / "kept") + lines(work / "rejected") == first
    assert {p: p.stat().st_mtime_ns for p in (work / "kept").iterdir()} == stamps  # nothing rewritten
