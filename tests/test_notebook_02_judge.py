"""Chapter 2's judge route end to end: the notebook judges demo documents through a real
OpenAI-format server on loopback, writes judge labels, reuses its answer cache on a re-run, and
never writes the API key anywhere."""

import json
import os

import pytest
from judge_server import JudgeServer, Status

from littlekit import runs
from littlekit.config import REPO_ROOT

papermill = pytest.importorskip("papermill")

SECRET = "sk-test-do-not-write-me-3141"
KEY_ENV = "LITTLEKIT_TEST_JUDGE_KEY"


def answer(body: dict) -> str:
    system, user = (m["content"] for m in body["messages"])
    if system.startswith("You are a reading specialist"):
        return '{"rationale": "plain words", "band": "K5"}'
    if system.startswith("You are a curriculum specialist"):
        return "The ideas are simple.\nAnswer: elementary school"
    # the subject prompt: K5 for short texts, an unparseable answer for long ones
    return '{"band": "K5"}' if len(user) < 900 else "I cannot tell."


@pytest.mark.slow
def test_judge_route_labels_caches_and_keeps_the_key_out(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv(KEY_ENV, SECRET)
    run_name = "pytest-judge"
    run = REPO_ROOT / "runs" / run_name
    cache_file = runs.path(run, "judge_report") / "judge_cache.sqlite"
    for leftover in (cache_file, cache_file.with_name(cache_file.name + "-wal")):
        leftover.unlink(missing_ok=True)

    with JudgeServer(answer=answer, script=[Status(503)]) as server:
        parameters = {
            "run_name": run_name,
            "judge_base_url": server.url,
            "judge_model": "gemini-3-flash-preview",
            "judge_api_key_env": KEY_ENV,
            "judge_sample_size": 8,
        }

        def execute(name):
            return papermill.execute_notebook(
                str(REPO_ROOT / "notebooks" / "02_llm_judge.ipynb"), str(tmp_path / name),
                parameters=parameters, cwd=str(REPO_ROOT / "notebooks"), kernel_name="python3",
                progress_bar=False,
            )

        execute("first.ipynb")
        first_requests = server.count
        assert first_requests == 8 * 3 + 1  # one 503 retried
        assert all(r["headers"]["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
        execute("second.ipynb")
        assert server.count == first_requests  # every answer came from the cache

    labels = [json.loads(line) for line in runs.path(run, "labels").open()]
    assert len(labels) == 8 and {r["source"] for r in labels} == {"llm-judge"}
    assert {r["judge"]["vote"] for r in labels} == {"unanimous"}
    for record in labels:
        agreed = record["votes"]["subject"] == "K5"
        assert record["band"] == ("K5" if agreed else None)
        assert agreed or record["judge"]["errors"]["subject"].startswith("parse: no band found")
    assert any(r["band"] == "K5" for r in labels) and any(r["band"] is None for r in labels)
    report = sorted(runs.path(run, "judge_report").iterdir())
    written = [tmp_path / "first.ipynb", tmp_path / "second.ipynb", *report, runs.path(run, "labels")]
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the API key leaked into {path}"
