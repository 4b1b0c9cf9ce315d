"""Chapter 2's judge route end to end: the notebook judges demo documents through a real
OpenAI-format server on loopback, writes judge labels, reuses its answer cache on a re-run, and
never writes the API key anywhere: not even when the key was pasted with a trailing CR and the
server echoes the Authorization header (whole and in pieces) in its answers and error bodies.
A judge that fails every call stops the chapter (papermill exits non-zero) and the earlier
labels stay byte-identical."""

import json
import logging
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from judge_server import JudgeServer, Status

from littlekit import runs
from littlekit.config import REPO_ROOT
from littlekit.fit.labels import write_label_file
from littlekit.judge.labels import make_label

papermill = pytest.importorskip("papermill")

KEY = "sk-nb02-Qw7Rt5Yu3Io1Pa9Sd"  # its 8-character prefix "sk-nb02-" appears nowhere else
SECRET = KEY + "\r"  # as pasted from a Windows file: the CR must be stripped, never written
KEY_ENV = "LITTLEKIT_TEST_JUDGE_KEY"
NOTEBOOK = REPO_ROOT / "notebooks" / "02_llm_judge.ipynb"


def answer(body: dict) -> str:
    system, user = (m["content"] for m in body["messages"])
    if system.startswith("You are a reading specialist"):
        return '{"rationale": "plain words", "band": "K5"}'
    if system.startswith("You are a curriculum specialist"):
        return "The ideas are simple.\nAnswer: elementary school"
    # the subject prompt: K5 for short texts, an unparseable answer for long ones
    return '{"band": "K5"}' if len(user) < 900 else "I cannot tell."


def leaks(data: bytes) -> list[str]:
    """Which forms of the key `data` holds: whole, its 8-character prefix, or any 8-character piece."""
    found = [label for label, form in (("key", KEY), ("prefix", KEY[:8])) if form.encode() in data]
    pieces = {KEY[i : i + 8] for i in range(len(KEY) - 7)}
    return found + [f"piece {p!r}" for p in sorted(pieces) if p.encode() in data and p != KEY[:8]]


@pytest.mark.slow
def test_judge_route_labels_caches_and_keeps_the_key_out(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv(KEY_ENV, SECRET)
    run_name = "pytest-judge"
    run = REPO_ROOT / "runs" / run_name
    shutil.rmtree(run, ignore_errors=True)  # every file under it is then written by this test

    with JudgeServer(answer=answer, script=[Status(503)], echo_authorization=True) as server:
        parameters = {
            "run_name": run_name,
            "judge_base_url": server.url,
            "judge_model": "gemini-3-flash-preview",
            "judge_api_key_env": KEY_ENV,
            "judge_sample_size": 8,
        }
        # first run: papermill's command line, its log (cell outputs included) and output captured
        command = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(tmp_path / "first.ipynb"),
                   "--cwd", str(NOTEBOOK.parent), "-k", "python3", "--no-progress-bar", "--log-output",
                   "--log-level", "DEBUG", "--stdout-file", str(tmp_path / "first.stdout"),
                   "--stderr-file", str(tmp_path / "first.stderr")]
        for name, value in parameters.items():
            command += ["-p", name, str(value)]
        done = subprocess.run(command, capture_output=True, timeout=600)
        (tmp_path / "papermill.out").write_bytes(done.stdout)
        (tmp_path / "papermill.log").write_bytes(done.stderr)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        first_requests = server.count
        assert first_requests == 8 * 3 + 1  # one 503 retried
        assert all(r["headers"]["Authorization"] == f"Bearer {KEY}" for r in server.requests)
        # second run: in process, papermill's logger captured
        with (
            caplog.at_level(logging.DEBUG),
            (tmp_path / "second.stdout").open("w") as stdout,
            (tmp_path / "second.stderr").open("w") as stderr,
        ):
            papermill.execute_notebook(
                str(NOTEBOOK), str(tmp_path / "second.ipynb"), parameters=parameters,
                cwd=str(NOTEBOOK.parent), kernel_name="python3", progress_bar=False, log_output=True,
                stdout_file=stdout, stderr_file=stderr,
            )
        assert server.count == first_requests  # every answer came from the cache
    (tmp_path / "caplog.txt").write_text(caplog.text)

    labels = [json.loads(line) for line in runs.path(run, "labels").open()]
    assert len(labels) == 8 and {r["source"] for r in labels} == {"llm-judge"}
    assert {r["judge"]["vote"] for r in labels} == {"unanimous"}
    for record in labels:
        agreed = record["votes"]["subject"] == "K5"
        assert record["band"] == ("K5" if agreed else None)
        assert agreed or record["judge"]["errors"]["subject"].startswith(
            "parse: no band found in answer '[echo] Authorization: Bearer *** | key ***"
        )
    assert any(r["band"] == "K5" for r in labels) and any(r["band"] is None for r in labels)
    first = (tmp_path / "first.ipynb").read_text()
    assert "Bearer ***" in first  # the echoed answers reached the notebook, scrubbed
    assert "retry 1/5" in (tmp_path / "papermill.log").read_text()  # the 503's warning, logged

    written = [p for p in [*run.rglob("*"), *tmp_path.iterdir()] if p.is_file()]
    assert len(written) > 10 and any(p.suffix == ".sqlite" for p in written)
    for path in written:
        assert not leaks(path.read_bytes()), f"the API key leaked into {path}: {leaks(path.read_bytes())}"


@pytest.mark.slow
def test_a_key_with_inner_whitespace_stops_the_chapter_without_showing_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv(KEY_ENV, KEY[:12] + " " + KEY[12:] + "\r\n")
    with JudgeServer(echo_authorization=True) as server:
        parameters = {"run_name": "pytest-judge-badkey", "judge_base_url": server.url,
                      "judge_model": "m", "judge_api_key_env": KEY_ENV, "judge_sample_size": 2}
        with pytest.raises(papermill.PapermillExecutionError) as failure:
            papermill.execute_notebook(
                str(NOTEBOOK), str(tmp_path / "bad.ipynb"), parameters=parameters,
                cwd=str(NOTEBOOK.parent), kernel_name="python3", progress_bar=False,
            )
        assert server.count == 0
    assert failure.value.ename == "APIKeyError"
    assert f"${KEY_ENV} has whitespace at character 13" in failure.value.evalue
    data = (tmp_path / "bad.ipynb").read_bytes() + str(failure.value).encode()
    assert not leaks(data) and KEY[:12].encode() not in data and KEY[13:].encode() not in data
    shutil.rmtree(REPO_ROOT / "runs" / "pytest-judge-badkey", ignore_errors=True)


@pytest.mark.slow
def test_a_judge_failing_every_call_stops_the_chapter_and_keeps_the_earlier_labels(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv(KEY_ENV, raising=False)
    run_name = "pytest-judge-all-500"
    run = REPO_ROOT / "runs" / run_name
    shutil.rmtree(run, ignore_errors=True)
    labels_file = runs.path(run, "labels")
    labels_file.parent.mkdir(parents=True)
    texts = ["The cat sat on the mat.", "The dog ran home fast."]
    earlier = pd.DataFrame([{**make_label(f"good-{i}", t, "K5", "llm-judge"), "text": t}
                            for i, t in enumerate(texts)])  # fmt: skip
    write_label_file(earlier, labels_file)  # good labels from an earlier run
    before = labels_file.read_bytes()
    try:
        # HTTP 500 to every request, retried at once (Retry-After: 0): every call fails
        with JudgeServer(script=[Status(500, retry_after="0")] * 1000) as server:
            command = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(tmp_path / "out.ipynb"),
                       "--cwd", str(NOTEBOOK.parent), "-k", "python3", "--no-progress-bar"]  # fmt: skip
            for name, value in {"run_name": run_name, "judge_base_url": server.url, "judge_model": "m",
                                "judge_api_key_env": KEY_ENV, "judge_sample_size": 2}.items():  # fmt: skip
                command += ["-p", name, str(value)]
            done = subprocess.run(command, capture_output=True, timeout=600)
            assert server.count == 2 * 3 * 6  # 2 documents x 3 prompts x (1 try + 5 retries)
        stderr = done.stderr.decode(errors="replace")
        assert done.returncode != 0, stderr[-3000:]
        assert "JudgeRunError" in stderr and "every one of the 6 judge calls failed" in stderr
        assert labels_file.read_bytes() == before
        assert sorted(p.name for p in labels_file.parent.iterdir()) == [labels_file.name]
        assert not (run / "judge" / "judge_labels_majority.jsonl").exists()
    finally:
        shutil.rmtree(run, ignore_errors=True)
