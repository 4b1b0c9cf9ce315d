"""Kill each command that replaces a result outright (SIGKILL to its whole process group) at
several points of its work: the result it was replacing is byte-identical afterwards, and the
same command run again completes.

    filter     --force over an earlier kept.jsonl: once its .partial exists, and once it is half written
    fit        fasttext --force over a complete artifacts folder: once the staged copy exists, and
               once the new model is written into it
    train      --force over a finished run: once its metrics.jsonl.new exists, and while its first
               checkpoint is being written (last.tmp/)
    chapter 2  the judge route over an earlier run's labels: once judge calls have started, and
               when most of them are answered

Each point is a state of the files (or of the judge server) the test waits for; the kill comes
within milliseconds of it, while the command is still working.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from judge_server import JudgeServer
from train_data import make_train_data

from littlekit.config import EMBEDDED_DATA, REPO_ROOT

pytestmark = pytest.mark.slow
LITTLEKIT = [sys.executable, "-m", "littlekit.cli"]


def digest(root: Path, skip: Callable[[str], bool] = lambda name: False) -> dict[str, str]:
    """SHA-256 of every file under root (or of root itself), by relative path, `skip` left out."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    found = {str(p.relative_to(root.parent)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    return {name: value for name, value in found.items() if not skip(name)}


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip


def kill_when(command: list[str], ready: Callable[[], bool], cwd: Path, timeout: float = 300) -> None:
    """Start `command`, SIGKILL its process group as soon as `ready()`; fail when it ends first."""
    log = cwd / "killed.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env(), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            assert process.poll() is None, f"it ended before the kill point:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the kill point never came:\n{log.read_text()[-3000:]}"
            time.sleep(0.005)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # it had ended, and its group with it
            pass
        process.wait()


def run_to_end(command: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(command, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout + done.stderr


# --- filter ---------------------------------------------------------------------------------------


def filter_input(path: Path, n: int = 8000) -> Path:
    lines = (EMBEDDED_DATA / "demo_corpus" / "demo_web.jsonl").read_text(encoding="utf-8").splitlines()
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            record = json.loads(lines[i % len(lines)])
            handle.write(json.dumps({**record, "id": f"doc-{i}"}) + "\n")
    return path


def partial_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.partial*") if p.is_file())


def filter_command(folder: Path) -> list[str]:
    """The filter over folder's docs.jsonl, its results beside it."""
    return [*LITTLEKIT, "filter", "--in", str(folder / "docs.jsonl"), "--out", str(folder / "kept.jsonl"),
            "--stages", "aoa,symbolic", "--rejected", str(folder / "rejected.jsonl"), "--report",
            str(folder / "report.json"), "--batch-rows", "200", "--quiet"]  # fmt: skip


@pytest.fixture(scope="module")
def filtered(tmp_path_factory) -> Path:
    """The input and a complete first run's results, made once: each test copies the folder."""
    folder = tmp_path_factory.mktemp("filtered")
    filter_input(folder / "docs.jsonl")
    run_to_end(filter_command(folder), folder)
    return folder


@pytest.mark.parametrize("point", ["partial-exists", "half-written"])
def test_a_killed_filter_leaves_the_earlier_result_whole(filtered, tmp_path, point):
    shutil.copytree(filtered, tmp_path, dirs_exist_ok=True)
    command = filter_command(tmp_path)
    results = ("kept.jsonl", "rejected.jsonl", "report.json")
    before = {name: digest(tmp_path / name) for name in results}
    full = (tmp_path / "kept.jsonl").stat().st_size + (tmp_path / "rejected.jsonl").stat().st_size
    at = 1 if point == "partial-exists" else full // 2
    kill_when([*command, "--force"], lambda: partial_bytes(tmp_path) >= at, tmp_path)
    assert {name: digest(tmp_path / name) for name in results} == before
    run_to_end([*command, "--force"], tmp_path)
    assert not list(tmp_path.glob("*.partial*"))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["read"] == 8000 and report["kept"] + report["dropped"] + report["errored"] == 8000


# --- fit ------------------------------------------------------------------------------------------

def staged(run: Path) -> list[Path]:
    return list(run.glob(".artifacts.partial-*"))


def new_model_in_staging(run: Path, old: str) -> bool:
    models = [s / "models" / "fasttext_grade.bin" for s in staged(run)]
    return any(m.is_file() and hashlib.sha256(m.read_bytes()).hexdigest() != old for m in models)


@pytest.mark.parametrize("point", ["staged-copy", "new-model-written"])
def test_a_killed_fit_leaves_the_artifacts_folder_whole(quick_fit_run, tmp_path, point):
    run = tmp_path / "run"
    shutil.copytree(quick_fit_run, run)  # the session's quick `fit all` (conftest)
    artifacts = run / "artifacts"
    before = digest(artifacts)
    labels = digest(run / "labels")
    old_model = hashlib.sha256((artifacts / "models" / "fasttext_grade.bin").read_bytes()).hexdigest()
    command = [*LITTLEKIT, "fit", "fasttext", "--force", "--seed", "3", "--out", str(artifacts)]
    if point == "staged-copy":
        ready = lambda: bool(staged(run))  # noqa: E731
    else:
        ready = lambda: new_model_in_staging(run, old_model)  # noqa: E731
    kill_when(command, ready, tmp_path)
    assert digest(artifacts) == before
    assert digest(run / "labels") == labels
    printed = run_to_end(command, tmp_path)
    assert "operating-point, word-table were made from" in printed
    assert not list(run.glob(".artifacts.*")), "the killed run's staging folder was not cleaned up"
    new_model = hashlib.sha256((artifacts / "models" / "fasttext_grade.bin").read_bytes()).hexdigest()
    assert new_model != old_model  # the rerun's seed-3 model is in


# --- train ----------------------------------------------------------------------------------------

TINY = ["--size", "nano", "--seq-len", "32", "--global-batch", "4", "--micro-batch", "2", "--no-progress"]


@pytest.fixture(scope="module")
def train_data(tmp_path_factory) -> dict[str, str]:
    return make_train_data(tmp_path_factory.mktemp("train_data"))


def train_command(data: dict[str, str], run_dir: Path, *extra: str) -> list[str]:
    return [*LITTLEKIT, "train", "--data", data["train"], "--tokenizer", data["tokenizer"], "--val-data",
            data["val"], "--run-dir", str(run_dir), *TINY, *extra]  # fmt: skip


def the_killed_runs_own(name: str) -> bool:
    """Files a killed fresh run leaves beside the old one (`name.new`, `last.tmp/`)."""
    return name.endswith(".new") or "/last.tmp/" in name


@pytest.fixture(scope="module")
def finished_run(train_data, tmp_path_factory) -> Path:
    """A finished 4-step run, made once: each test copies it."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    run_to_end(train_command(train_data, run_dir, "--max-steps", "4", "--eval-every", "2"), run_dir.parent)
    return run_dir


@pytest.mark.parametrize("point", ["training", "first-checkpoint"])
def test_a_killed_forced_train_leaves_the_finished_run_whole(train_data, finished_run, tmp_path, point):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir, symlinks=True)
    before = digest(run_dir)
    command = train_command(train_data, run_dir, "--max-steps", "400", "--save-every", "200",
                            "--eval-every", "400", "--force")  # fmt: skip
    if point == "training":
        ready = (run_dir / "metrics.jsonl.new").exists
    else:
        ready = (run_dir / "last.tmp").exists
    kill_when(command, ready, tmp_path)
    assert digest(run_dir, skip=the_killed_runs_own) == before
    short = train_command(train_data, run_dir, "--max-steps", "6", "--eval-every", "3", "--force")
    run_to_end(short, tmp_path)
    state = json.loads((run_dir / "last" / "trainer_state.json").read_text())
    assert state["step"] == 6
    assert not [p for p in run_dir.iterdir() if p.name.endswith((".new", ".tmp", ".old"))]


# --- chapter 2's labelling ------------------------------------------------------------------------

NOTEBOOK = REPO_ROOT / "notebooks" / "02_llm_judge.ipynb"
JUDGED = 8  # documents, three prompts each


def chapter_2(run_name: str, url: str, out: Path, model: str = "test-judge") -> list[str]:
    command = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(out), "--cwd", str(NOTEBOOK.parent),
               "-k", "python3", "--no-progress-bar"]  # fmt: skip
    parameters = {"run_name": run_name, "judge_base_url": url, "judge_model": model,
                  "judge_sample_size": JUDGED, "judge_concurrency": 1}  # fmt: skip
    for name, value in parameters.items():
        command += ["-p", name, str(value)]
    return command


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A run whose labels chapter 2's judge route made, made once: each test copies it."""
    pytest.importorskip("papermill")
    run_name = "pytest-fault-judge-first"
    run = REPO_ROOT / "runs" / run_name
    shutil.rmtree(run, ignore_errors=True)
    try:
        folder = tmp_path_factory.mktemp("judged")
        with JudgeServer() as server:
            run_to_end(chapter_2(run_name, server.url, folder / "first.ipynb"), folder)
        yield run
    finally:
        shutil.rmtree(run, ignore_errors=True)


@pytest.mark.parametrize("point", ["calls-started", "most-calls-answered"])
def test_a_killed_judge_run_leaves_the_earlier_labels_whole(judged_run, tmp_path, point):
    run_name = f"pytest-fault-judge-{point}"
    run = REPO_ROOT / "runs" / run_name
    shutil.rmtree(run, ignore_errors=True)
    try:
        shutil.copytree(judged_run, run, symlinks=True)
        labels = run / "labels"
        before = digest(labels)
        assert "labels/train_labels.jsonl" in before
        calls = 3 * JUDGED
        at = 1 if point == "calls-started" else calls - 3
        # another model (not in the answer cache), answering slowly: the kill lands mid-labelling
        again = chapter_2(run_name, "URL", tmp_path / "killed.ipynb", model="other-judge")
        with JudgeServer(delay=0.2) as server:
            killed = [server.url if part == "URL" else part for part in again]
            kill_when(killed, lambda: server.count >= at, tmp_path)
            assert server.count < calls
        assert digest(labels) == before
        with JudgeServer() as server:
            run_to_end([server.url if part == "URL" else part for part in again], tmp_path)
            assert server.count <= calls  # the answers the killed run had cached are not asked again
        assert (labels / "train_labels.jsonl").stat().st_size > 0
    finally:
        shutil.rmtree(run, ignore_errors=True)
