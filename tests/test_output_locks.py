"""One run per output: a second run into an output a live run is writing is refused, naming the
first run's pid, and the lock a killed run leaves never blocks its rerun (`littlekit.swap.hold_output`).

Without the lock, two runs into one output corrupted it and one of them exited 0: interleaved
lines in the in-process filter's kept file, damaged gzip shards from datatrove, a curriculum file
whose printed sha256 was not the file's, two runs' records in one metrics.jsonl. Each command is
checked against a live first run: the command itself where it can be held open cheaply (the
filter reading a pipe the test keeps open, a long curriculum or training run), else a process that
holds the output through the same lock (datatrove, fit). A dead run's lock file (a pid that no
longer runs) is taken over, with a note, and removed when the run ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from littlekit.cli import main
from littlekit.config import REPO_ROOT
from littlekit.swap import OutputLocked, check_not_held, hold_output, lock_path, staged_folder

LITTLEKIT = [sys.executable, "-m", "littlekit.cli"]
DOCS = ["the cat sat on the mat", "the dog ran home", "we play with the big red ball"]


@pytest.fixture(autouse=True)
def offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LITTLEKIT_DEBUG", raising=False)


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def leave_dead_lock(output: Path) -> tuple[Path, int]:
    """The lock file a run killed outright leaves beside `output` (its pid no longer runs)."""
    pid = dead_pid()
    lock = lock_path(output)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": pid, "host": os.uname().nodename, "started": "earlier",
                                "command": "littlekit (killed)"}) + "\n")  # fmt: skip
    return lock, pid


def wait_for_lock(output: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    """Until `process` holds `output` (its pid in the lock file); fails when it ends first."""
    lock = lock_path(output)
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(lock.read_text()).get("pid") == process.pid:
                return
        assert process.poll() is None, f"it ended before holding {output}: {process.communicate()}"
        assert time.monotonic() < deadline, f"{output} was never held"
        time.sleep(0.02)


@contextlib.contextmanager
def holder(output: Path) -> Iterator[subprocess.Popen]:
    """Another process holding `output` through the lock, as a run writing it does, until its
    input is closed (then it lets go as a run that ends does)."""
    code = "\n".join(["import sys", "from littlekit.swap import hold_output",
                      "with hold_output(sys.argv[1]):", "    print('held', flush=True)",
                      "    sys.stdin.read()"])
    process = subprocess.Popen([sys.executable, "-c", code, str(output)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env())  # fmt: skip
    try:
        assert process.stdout.readline().strip() == "held"
        yield process
    finally:
        try:
            process.communicate(timeout=30)
        finally:
            stop(process)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.communicate()


def refused(capsys, argv: list[str], pid: int, output: Path, prog: str) -> None:
    """`littlekit argv` exits 2 in one line naming the output and the live run's pid."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{prog}: error: ") and f"pid {pid} " in lines[0], lines[0]
    assert str(output) in lines[0] and "being written by another run" in lines[0], lines[0]


def took_over(err: str, lock: Path, pid: int) -> None:
    assert f"{lock} was left by pid {pid}" in " ".join(err.split()), err
    assert not lock.exists()  # released and removed at the end of the run


def write_docs(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(DOCS)))
    return path


# --- the lock itself ------------------------------------------------------------------------------


def test_a_live_holder_refuses_a_second_one_and_a_killed_one_blocks_nothing(tmp_path):
    out = tmp_path / "kept.jsonl"
    with holder(out) as first:
        with pytest.raises(OutputLocked) as error:
            with hold_output(out, "littlekit filter", "--out"):
                pass
        assert error.value.pid == first.pid and f"--out {out}" in str(error.value)
        with pytest.raises(OutputLocked):
            check_not_held(tmp_path / "." / "kept.jsonl")  # another spelling, the same output
        first.kill()  # SIGKILL: no cleanup runs, the lock file stays
        first.wait()
        assert lock_path(out).exists()
        notes: list[str] = []
        check_not_held(out)
        with hold_output(out, note=notes.append) as lock:
            assert json.loads(lock.read_text())["pid"] == os.getpid()
            with hold_output(out):  # this process may hold it again (a library call in a command)
                pass
            assert lock.exists()
        assert notes and f"pid {first.pid}" in notes[0]
    assert sorted(tmp_path.iterdir()) == []  # nothing left once let go


def other_process_holds(output: Path) -> int | None:
    """None when another process can hold `output`; else the pid its OutputLocked names."""
    code = "\n".join(["import sys", "from littlekit.swap import OutputLocked, hold_output", "try:",
                      "    with hold_output(sys.argv[1]):", "        pass", "except OutputLocked as e:",
                      "    print(e.pid)"])
    command = [sys.executable, "-c", code, str(output)]
    done = subprocess.run(command, capture_output=True, text=True, env=env())
    assert done.returncode == 0, done.stderr
    return int(done.stdout) if done.stdout.strip() else None


def test_a_staged_folder_is_held_and_a_dead_runs_staging_goes_whatever_its_pid(tmp_path):
    target = tmp_path / "artifacts"
    stale = tmp_path / f".artifacts.partial-{os.getppid()}"  # a pid that runs: held, it is stale all the same
    stale.mkdir()
    with staged_folder(target) as staging:
        (staging / "a.txt").write_text("new")
        assert other_process_holds(target) == os.getpid()
        assert not stale.exists()
    assert other_process_holds(target) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["artifacts"]


# --- littlekit filter, in process -------------------------------------------------------------------


def test_filter_a_second_run_into_a_live_runs_output_is_refused(tmp_path, capsys):
    kept = tmp_path / "kept.jsonl"
    first = subprocess.Popen([*LITTLEKIT, "filter", "--in", "/dev/stdin", "--format", "jsonl", "--out",
                              str(kept), "--stages", "aoa", "--quiet"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())  # fmt: skip
    try:
        wait_for_lock(kept, first)  # it holds kept.jsonl, waiting for its input
        docs = write_docs(tmp_path / "docs.jsonl")
        for argv in (["--out", kept], ["--out", tmp_path / "other.jsonl", "--rejected", kept],
                     ["--out", kept, "--force"]):  # fmt: skip
            refused(capsys, ["filter", "--in", docs, "--stages", "aoa", "--quiet", *argv], first.pid, kept,
                    "littlekit filter")  # fmt: skip
        assert not (tmp_path / "other.jsonl").exists()
        out, err = first.communicate(docs.read_bytes(), timeout=120)
        assert first.returncode == 0, err
    finally:
        stop(first)
    assert [json.loads(line)["id"] for line in kept.read_text().splitlines()] == ["0", "1", "2"]
    assert not lock_path(kept).exists()


def test_filter_a_dead_runs_lock_does_not_block(tmp_path, capsys):
    docs, kept = write_docs(tmp_path / "docs.jsonl"), tmp_path / "kept.jsonl"
    lock, pid = leave_dead_lock(kept)
    assert main(["filter", "--in", str(docs), "--out", str(kept), "--stages", "aoa", "--quiet"]) == 0
    took_over(capsys.readouterr().err, lock, pid)
    assert len(kept.read_text().splitlines()) == 3


# --- littlekit filter --executor local (datatrove) -------------------------------------------------


def datatrove_argv(docs: Path, kept: Path, logs: Path) -> list:
    return ["filter", "--in", docs, "--out", kept, "--logging-dir", logs, "--stages", "aoa",
            "--executor", "local", "--workers", "1", "--quiet"]  # fmt: skip


def test_datatrove_a_second_run_into_a_held_folder_is_refused(tmp_path, capsys):
    pytest.importorskip("datatrove")
    docs = write_docs(tmp_path / "docs.jsonl")
    kept, logs = tmp_path / "kept", tmp_path / "logs"
    with holder(kept) as first:
        refused(capsys, datatrove_argv(docs, kept, logs), first.pid, kept, "littlekit filter")
    with holder(logs) as first:  # its logging directory too: datatrove's completions and stats
        refused(capsys, datatrove_argv(docs, kept, logs), first.pid, logs, "littlekit filter")
    assert not kept.exists() and not logs.exists()


def test_datatrove_a_dead_runs_lock_does_not_block(tmp_path, capsys):
    pytest.importorskip("datatrove")
    docs = write_docs(tmp_path / "docs.jsonl")
    kept = tmp_path / "kept"
    lock, pid = leave_dead_lock(kept)
    assert main([str(a) for a in datatrove_argv(docs, kept, tmp_path / "logs")]) == 0
    took_over(capsys.readouterr().err, lock, pid)
    assert list(kept.glob("*.jsonl.gz"))


# --- littlekit curriculum -------------------------------------------------------------------------


def test_curriculum_a_second_run_into_a_live_runs_output_is_refused(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    argv = ["curriculum", "--units", "all", "--per-unit", "100000", "--out", str(out)]
    first = subprocess.Popen([*LITTLEKIT, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        wait_for_lock(out, first)
        for extra in ([], ["--force"]):
            refused(capsys, ["curriculum", "--units", "K5", "--per-unit", "1", "--out", out, *extra],
                    first.pid, out, "littlekit curriculum")  # fmt: skip
    finally:
        stop(first)
    assert not out.exists()


def test_curriculum_a_dead_runs_lock_does_not_block_and_the_sha256_is_the_files(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    lock, pid = leave_dead_lock(out)
    assert main(["curriculum", "--units", "K5", "--per-unit", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    took_over(captured.err, lock, pid)
    assert f"sha256 {hashlib.sha256(out.read_bytes()).hexdigest()[:16]}" in captured.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


# --- littlekit train ------------------------------------------------------------------------------

TINY = ["--size", "nano", "--seq-len", "32", "--global-batch", "4", "--micro-batch", "2", "--no-progress"]


@pytest.fixture(scope="module")
def train_data(tmp_path_factory) -> dict[str, str]:
    from train_data import make_train_data

    return make_train_data(tmp_path_factory.mktemp("train_data"))


def train_argv(data: dict[str, str], run_dir: Path, *extra: str) -> list[str]:
    return ["train", "--data", data["train"], "--tokenizer", data["tokenizer"], "--run-dir", str(run_dir),
            *TINY, *extra]  # fmt: skip


def test_train_a_second_run_into_a_live_runs_folder_is_refused(train_data, tmp_path, capsys, one_thread):
    run_dir = tmp_path / "run"
    argv = train_argv(train_data, run_dir, "--max-steps", "100000", "--save-every", "100000")
    first = subprocess.Popen([*LITTLEKIT, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        wait_for_lock(run_dir, first)
        deadline = time.monotonic() + 120
        while not (run_dir / "metrics.jsonl").exists():  # training: what a second run would append to
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        for extra in ([], ["--force"], ["--resume", "auto"]):
            refused(capsys, train_argv(train_data, run_dir, "--max-steps", "2", *extra), first.pid, run_dir,
                    "littlekit train")  # fmt: skip
    finally:
        stop(first)


def test_train_a_dead_runs_lock_does_not_block(train_data, tmp_path, capsys, one_thread):
    run_dir = tmp_path / "run"
    lock, pid = leave_dead_lock(run_dir)
    assert main(train_argv(train_data, run_dir, "--max-steps", "2")) == 0
    took_over(capsys.readouterr().err, lock, pid)
    records = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in records] == [1, 2]


# --- littlekit fit --------------------------------------------------------------------------------


def test_fit_a_second_run_into_a_held_artifacts_folder_is_refused(tmp_path, capsys):
    artifacts = tmp_path / "run" / "artifacts"
    with holder(artifacts) as first:
        for step in ("labels", "word-table"):
            argv = ["fit", step, "--out", artifacts, "--force"]
            refused(capsys, argv, first.pid, artifacts, "littlekit fit")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["artifacts"]  # made empty, nothing in it
    assert not any(artifacts.iterdir())


def test_fit_a_killed_fits_lock_and_staging_go_and_errors_name_the_folder_itself(tmp_path, capsys):
    run = tmp_path / "run"
    artifacts = run / "artifacts"
    artifacts.mkdir(parents=True)
    lock, pid = leave_dead_lock(artifacts)
    staging = run / f".artifacts.partial-{pid}"  # what the killed fit was writing
    (staging / "models").mkdir(parents=True)
    assert main(["fit", "word-table", "--out", str(artifacts)]) == 1  # no fastText model to pool with
    err = " ".join(capsys.readouterr().err.split())
    took_over(err, lock, pid)
    assert f"{artifacts / 'models'}" in err and ".artifacts.partial-" not in err, err
    assert sorted(p.name for p in run.iterdir()) == ["artifacts"]
