"""annotate() end to end: real prompts, a real loopback server, a real SQLite cache."""

import json
import re

import pandas as pd
import pytest
from judge_server import JudgeServer, Status

from littlekit.judge.annotate import annotate, iter_annotate
from littlekit.judge.cache import JudgeCache
from littlekit.judge.labels import make_label, read_labels, text_sha256, write_labels
from littlekit.judge.openai_backend import OpenAIChatBackend
from littlekit.judge.prompts import JudgePrompt, build_prompts

KEY_ENV = "LITTLEKIT_TEST_JUDGE_KEY"
SECRET = "sk-annotate-secret-9f8e7d6c"

STANDARDS = pd.DataFrame(
    [
        ("CCSS-Math", "3.NF.A.1", "3", "K5", "math", "Understand a fraction 1/b."),
        ("NGSS", "MS-LS1-1", "6-8", "K8", "life science", "Living things are made of cells."),
        ("CCSS-ELA", "L.4.4", "4", "K5", "ELA", "Determine the meaning of unknown words."),
        ("CCSS-ELA", "RI.9-10.8", "9-10", "K12", "ELA", "Delineate and evaluate the argument."),
    ],
    columns=["framework", "code", "grade", "band", "subject", "text"],
)

# Each document tells the scripted judge what each prompt should answer.
DOCS = [
    "The dog ran to the park. language=K5 context=K5 subject=K5",
    "Cells divide by mitosis. language=K8 context=K12 subject=K5",
    "Tax law for trusts. language=OOS context=bad subject=K12",
]


@pytest.fixture()
def prompts():
    return build_prompts(STANDARDS)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def scripted_answer(prompts):
    names = {p.system.splitlines()[0]: p.name for p in prompts}  # the focus line names the prompt

    def answer(body):
        name = names[body["messages"][0]["content"].splitlines()[0]]
        value = re.search(rf"{name}=(\S+)", body["messages"][1]["content"]).group(1)
        if value == "bad":
            return "Hmm, hard to say."
        return json.dumps({"rationale": "scripted", "band": value})

    return answer


def backend_for(server):
    return OpenAIChatBackend(server.url, "judge-model", api_key_env=KEY_ENV, concurrency=4,
                             timeout=2.0, max_retries=1, backoff_base=0.01)


def test_records_votes_errors_and_usage(prompts):
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        records = annotate(DOCS, prompts, backend_for(server), ids=["a", "b", "c"])
        assert server.count == 9
    assert [r["id"] for r in records] == ["a", "b", "c"]
    assert [r["band"] for r in records] == ["K5", "K12", "OOS"]  # b: K8/K12/K5 tie -> highest
    assert records[1]["votes"] == {"language": "K8", "context": "K12", "subject": "K5"}
    third = records[2]
    assert third["votes"]["context"] is None
    assert third["judge"]["errors"]["context"].startswith("parse: no band found")
    assert third["text_sha256"] == text_sha256(DOCS[2])
    assert third["source"] == "llm-judge"
    assert third["judge"]["model"] == "judge-model"
    assert third["judge"]["prompt_versions"] == {p.name: p.version for p in prompts}
    usage = records[0]["judge"]["usage"]
    assert usage["input_tokens"] > 100 and usage["output_tokens"] > 0 and usage["cached"] == 0


def test_unanimous_mode(prompts):
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        records = annotate(DOCS, prompts, backend_for(server), vote="unanimous")
    assert [r["band"] for r in records] == ["K5", None, None]
    assert records[0]["judge"]["vote"] == "unanimous"


def test_second_run_is_served_from_the_cache(prompts, tmp_path):
    cache_path = tmp_path / "judge.sqlite"
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        with JudgeCache(cache_path) as cache:
            first = annotate(DOCS, prompts, backend_for(server), cache)
        assert server.count == 9
        with JudgeCache(cache_path) as cache:
            second = annotate(DOCS, prompts, backend_for(server), cache)
        assert server.count == 9  # zero new requests
        assert [r["band"] for r in second] == [r["band"] for r in first]
        assert [r["judge"]["usage"]["cached"] for r in second] == [3, 3, 3]
        assert second[0]["judge"]["usage"]["input_tokens"] == first[0]["judge"]["usage"]["input_tokens"]

        edited = [prompts[0], prompts[1], JudgePrompt("subject", prompts[2].system + "\nBe brief.")]
        with JudgeCache(cache_path) as cache:
            annotate(DOCS, edited, backend_for(server), cache)
        assert server.count == 12  # only the edited prompt was asked again


def test_failed_requests_are_recorded_and_not_cached(prompts, tmp_path):
    with JudgeServer(answer=scripted_answer(prompts), script=[Status(400)]) as server:
        with JudgeCache(tmp_path / "c.sqlite") as cache:
            records = annotate(DOCS[:1], prompts, backend_for(server), cache)
            assert len(cache) == 2
    failed = [name for name, band in records[0]["votes"].items() if band is None]
    assert len(failed) == 1
    assert records[0]["judge"]["errors"][failed[0]].startswith("backend: HTTP 400")
    assert records[0]["band"] == "K5"


def test_duplicate_texts_are_asked_once(prompts):
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        records = annotate([DOCS[0], DOCS[0]], prompts, backend_for(server), ids=["x", "y"])
        assert server.count == 3
    assert records[0]["band"] == records[1]["band"] == "K5"


def test_iter_annotate_streams_batches(prompts):
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        stream = iter_annotate(iter(DOCS), prompts, backend_for(server), batch_size=1)
        next(stream)
        assert server.count == 3  # only the first batch has been judged
        assert len(list(stream)) == 2
    with pytest.raises(ValueError, match="vote mode"):
        annotate(DOCS, prompts, backend_for(server), vote="loudest")
    with pytest.raises(ValueError, match="fewer ids"):
        annotate(DOCS, prompts, backend_for(server), ids=["only-one"])


def test_labels_round_trip_and_no_secret_on_disk(prompts, tmp_path):
    with JudgeServer(answer=scripted_answer(prompts)) as server:
        backend = backend_for(server)
        with JudgeCache(tmp_path / "judge.sqlite") as cache:
            records = annotate(DOCS, prompts, backend, cache)
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert write_labels(records, tmp_path / "labels.jsonl") == 3
    assert read_labels(tmp_path / "labels.jsonl") == records
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert SECRET not in repr(backend) and SECRET not in json.dumps(records)


def test_labels_from_other_sources_share_the_format(tmp_path):
    label = make_label("ccpd-001", "Once upon a time.", "K5", source="commoncoretext-pd")
    assert label == {"id": "ccpd-001", "text_sha256": text_sha256("Once upon a time."), "band": "K5",
                     "votes": {}, "judge": None, "source": "commoncoretext-pd"}
    write_labels([label], tmp_path / "l.jsonl")
    assert read_labels(tmp_path / "l.jsonl") == [label]
    with pytest.raises(ValueError, match="unknown bands"):
        make_label("x", "t", "K6", source="s")
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "x", "band": "K5"}) + "\n")
    with pytest.raises(ValueError, match="lacks"):
        read_labels(tmp_path / "bad.jsonl")


def test_a_server_echoing_the_key_leaves_no_piece_of_it_on_disk(prompts, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET + "\r")  # pasted with a trailing CR: stripped before use
    echoing = JudgeServer(answer=scripted_answer(prompts), script=[Status(400)], echo_authorization=True)
    with echoing as server:
        with JudgeCache(tmp_path / "judge.sqlite") as cache:
            records = annotate(DOCS, prompts, backend_for(server), cache)
        assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    write_labels(records, tmp_path / "labels.jsonl")
    errors = [e for r in records for e in r["judge"]["errors"].values()]
    assert any(e.startswith("backend: HTTP 400") and "Bearer ***" in e for e in errors)
    echoed = "parse: no band found in answer '[echo] Authorization: Bearer ***"
    assert any(e.startswith(echoed) for e in errors)
    assert [r["band"] for r in records][1:] == ["K12", "OOS"]  # the echo does not hide the bands
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert SECRET[:8].encode() not in data and SECRET[4:12].encode() not in data, path.name
