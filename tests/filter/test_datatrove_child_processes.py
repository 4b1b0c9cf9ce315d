"""A killed local datatrove run leaves no process behind (issue 26): a SIGKILLed
`littlekit filter --executor local --tasks 2 --workers 2` left datatrove's multiprocessing Manager
behind, an orphan; now every child forked within the run dies with it, and only those.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from littlekit.config import REPO_ROOT


def session_processes(psutil, sid: int) -> list:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


@pytest.mark.slow
def test_a_killed_local_datatrove_run_leaves_no_orphan(tmp_path):
    psutil = pytest.importorskip("psutil")
    words = "the cat sat on the mat dog ran home we play with big red ball sun hot day fun".split()
    (tmp_path / "in").mkdir()
    for part in range(2):  # about 7 s of work per task: the run is killed well before it ends
        with (tmp_path / "in" / f"part{part}.jsonl").open("w", encoding="utf-8") as handle:
            for i in range(100_000):
                text = " ".join(words[(i * 7 + j * (part + 3)) % len(words)] for j in range(30))
                handle.write(json.dumps({"id": f"{part}-{i}", "text": text}) + "\n")
    command = [sys.executable, "-m", "littlekit.cli", "filter", "--in", tmp_path / "in", "--out",
               tmp_path / "kept", "--executor", "local", "--tasks", "2", "--workers", "2", "--logging-dir",
               tmp_path / "logs", "--quiet"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with (tmp_path / "stderr").open("w") as stderr:
        parent = subprocess.Popen([str(c) for c in command], cwd=REPO_ROOT, env=env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    sid = parent.pid  # a new session's id is its leader's pid
    try:
        deadline = time.monotonic() + 120
        children: list = []
        while time.monotonic() < deadline and parent.poll() is None:
            children = psutil.Process(parent.pid).children(recursive=True)
            if len(children) >= 4:  # the Manager, the resource tracker, the forkserver, a worker
                break
            time.sleep(0.1)
        time.sleep(1.0)
        assert parent.poll() is None, (tmp_path / "stderr").read_text()[-2000:]
        assert len(children) >= 4, [c.cmdline()[:3] for c in children]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        # the pool's workers end with the task in flight (~7 s alone, longer beside a full test run);
        # the Manager this test is about would wait for clients forever
        deadline = time.monotonic() + 60
        while (left := session_processes(psutil, sid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, [(p.pid, p.cmdline()[:4]) for p in left]
    finally:
        for process in session_processes(psutil, sid):
            try:
                process.kill()
            except psutil.Error:
                pass


def death_signal_of_a_forked_child() -> int:
    """The parent-death signal a child forked now has (prctl PR_GET_PDEATHSIG, read in the child)."""
    import ctypes

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read its own setting, report it, leave at once
        value = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)
        os.write(writer, str(value.value).encode())
        os._exit(0)
    os.close(writer)
    try:
        return int(os.read(reader, 32).decode())
    finally:
        os.close(reader)
        os.waitpid(pid, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_only_children_forked_within_the_block_die_with_this_process():
    from littlekit.filter.datatrove.children import children_die_with_this_process

    assert death_signal_of_a_forked_child() == 0
    with children_die_with_this_process():
        assert death_signal_of_a_forked_child() == signal.SIGKILL
    assert death_signal_of_a_forked_child() == 0
