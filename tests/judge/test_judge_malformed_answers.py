"""The judge client on malformed and oversized answers, against a real loopback server
(`judge_server`, no mocks; the reliability issue's third round, items 7 and 8):

7. a malformed answer (a `usage` count that is a string, a list, 1e400, 10**30, negative; a
   `content` that is not text) is that item's error or an unknown count, never an exception out
   of `annotate`, and every good answer of the batch is cached, so a rerun pays only for the bad one;
8. a response body over the client's byte cap is that item's error, refused from its
   Content-Length or as the read passes the cap, never read whole.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from judge_server import Content, Json, JudgeServer, Raw, Stream, completion, quick_backend

from littlekit.judge.annotate import JudgeWarning, annotate, check_judged
from littlekit.judge.backends import BackendError, Completion, token_count
from littlekit.judge.cache import JudgeCache
from littlekit.judge.cost import total_usage
from littlekit.judge.labels import text_sha256
from littlekit.judge.openai_backend import MAX_RESPONSE_BYTES, OpenAIChatBackend, parse_chat_response
from littlekit.judge.prompts import JudgePrompt

KEY_ENV = "LITTLEKIT_TEST_RELIABILITY3_KEY"  # never set: no Authorization header
PROMPT = JudgePrompt("grade", "Answer with the grade band of the text: K5, K8, K12 or OOS.")
TEXTS = [f"Document number {i}: the cat sat on mat {i}." for i in range(30)]
IDS = [f"doc-{i:02d}" for i in range(30)]
GOOD = '{"rationale": "short everyday words", "band": "K5"}'


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def backend(server: JudgeServer, **options) -> OpenAIChatBackend:
    return quick_backend(server, KEY_ENV, **options)


def doc_of(body: dict) -> int | None:
    """Which of TEXTS a request asks about."""
    user = body["messages"][-1]["content"]
    for i, text in enumerate(TEXTS):
        if text in user:
            return i
    return None


def with_usage(body: dict, **usage) -> bytes:
    """A good chat-completions body whose usage fields are replaced by `usage` (JSON text each)."""
    data = json.dumps(completion(body, GOOD))
    for field, text in usage.items():
        data = data.replace(f'"{field}": {json.dumps(completion(body, GOOD)["usage"][field])}',
                            f'"{field}": {text}')  # fmt: skip
    return data.encode("utf-8")


# --- 7. a malformed answer is one item's error; the batch's good answers are all cached ------------


def malformed_steps(body: dict):
    """What the server answers for each document: six malformed answers among thirty."""
    i = doc_of(body)
    steps = {
        3: lambda: Raw(with_usage(body, prompt_tokens='"abc"')),
        7: lambda: Raw(with_usage(body, prompt_tokens="[1, 2]")),
        11: lambda: Raw(with_usage(body, completion_tokens="1e400")),
        17: lambda: Raw(with_usage(body, prompt_tokens=str(10**30))),
        21: lambda: Raw(with_usage(body, completion_tokens="-5")),
        26: lambda: Json({**completion(body, GOOD),
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": [1, 2]}}]}),
    }  # fmt: skip
    return steps[i]() if i in steps else Content(GOOD)


def test_malformed_answers_are_item_errors_and_every_good_answer_is_cached(tmp_path, caplog):
    cache = JudgeCache(tmp_path / "judge_cache.sqlite")
    with JudgeServer(step_for=malformed_steps) as server:
        with caplog.at_level(logging.WARNING, logger="littlekit.judge"):
            records = annotate(TEXTS, [PROMPT], backend(server, concurrency=8), cache, ids=IDS)
        assert server.count == 30
    assert len(records) == 30 and len(cache) == 29  # every good answer is cached, the bad one is not
    by_id = {r["id"]: r for r in records}
    bad = by_id["doc-26"]
    assert bad["band"] is None and bad["votes"] == {"grade": None}
    assert bad["judge"]["errors"]["grade"].startswith("backend: response content is not text (list)")
    assert all(r["band"] == "K5" and not r["judge"]["errors"] for i, r in by_id.items() if i != "doc-26")
    # a usage count that is not a non-negative whole number is unknown: the answer is kept
    for doc_id in ("doc-03", "doc-07", "doc-11", "doc-17", "doc-21"):
        assert by_id[doc_id]["judge"]["usage"]["unknown"] == 1, doc_id
    assert by_id["doc-03"]["judge"]["usage"]["input_tokens"] == 0
    assert by_id["doc-03"]["judge"]["usage"]["output_tokens"] == len(GOOD) // 4
    assert by_id["doc-00"]["judge"]["usage"]["unknown"] == 0
    assert by_id["doc-00"]["judge"]["usage"]["input_tokens"] > 0
    # the failed call is logged, named by its document's id, and counted and named by check_judged
    assert "1 judge calls failed in a batch of 30 documents, on documents 'doc-26'" in caplog.text
    with pytest.warns(JudgeWarning, match=r"^1 of 30 judge calls failed .* failed on documents 'doc-26'"):
        counts = check_judged(records)
    assert counts["failed"] == 1 and counts["labelled"] == 29
    assert total_usage(records)["unknown"] == 5
    # a rerun asks only for the answer it lacks
    with JudgeServer() as server:
        again = annotate(TEXTS, [PROMPT], backend(server), cache, ids=IDS)
        assert server.count == 1
    assert all(r["band"] == "K5" for r in again) and len(cache) == 30
    cached = cache.get((PROMPT.version, "test-judge", text_sha256(TEXTS[3])))
    assert cached.text == GOOD and cached.input_tokens is None  # unknown, stored and read back as such


@pytest.mark.parametrize("value", ['"abc"', "[1, 2]", "1e400", "-1e400", "NaN", "-3", "2.5", "true",
                                   str(10**30), "{}", "1" * 5000])  # fmt: skip
def test_a_bad_usage_count_is_unknown_not_a_crash(value):
    body = {"messages": [{"role": "user", "content": "hello there"}]}
    answer = parse_chat_response(with_usage(body, prompt_tokens=value, completion_tokens=value))
    assert answer.text == GOOD and answer.input_tokens is None and answer.output_tokens is None


def test_good_usage_counts_and_content_parts_are_read():
    body = {"messages": [{"role": "user", "content": "hello there"}]}
    answer = parse_chat_response(with_usage(body, prompt_tokens="12.0", completion_tokens="7"))
    assert (answer.input_tokens, answer.output_tokens) == (12, 7)
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "band: "},
                                                  {"type": "text", "text": "K8"}]}}]}  # fmt: skip
    answer = parse_chat_response(json.dumps(parts).encode())
    assert answer.text == "band: K8" and answer.input_tokens is None  # no usage at all: unknown
    assert [token_count(v) for v in (0, 5, 5.0, True, -1, float("inf"), "5", None)] == [
        0, 5, 5, None, None, None, None, None]  # fmt: skip


def test_a_backend_that_returns_a_malformed_completion_costs_one_item(tmp_path):
    class Careless:  # a backend of one's own, giving text that is not a string for one document
        model_id = "careless"

        def complete(self, messages):
            raise NotImplementedError

        def complete_many(self, batch):
            return [Completion(["not", "text"], 3, 4) if TEXTS[5] in m[-1]["content"] else
                    Completion(GOOD, "many", 2) for m in batch]  # fmt: skip

    cache = JudgeCache(tmp_path / "cache.sqlite")
    records = annotate(TEXTS[:8], [PROMPT], Careless(), cache, ids=IDS[:8])
    assert len(cache) == 7
    assert records[5]["judge"]["errors"]["grade"].startswith("backend: malformed answer from the backend")
    assert records[0]["judge"]["usage"] == {"input_tokens": 0, "output_tokens": 2, "cached": 0, "unknown": 1}


# --- 8. a response body over the byte cap is that item's error, never read whole -------------------


def test_the_default_cap_and_a_bad_cap():
    with JudgeServer() as server:
        assert backend(server).max_response_bytes == MAX_RESPONSE_BYTES == 8 * 1024 * 1024
        for bad in (0, -1, 1.5, True, "8"):
            with pytest.raises(ValueError, match="max_response_bytes"):
                backend(server, max_response_bytes=bad)


def test_a_body_just_over_the_cap_is_that_items_error(tmp_path):
    cap = 2000

    def steps(body):
        data = json.dumps(completion(body, GOOD)).encode()
        if doc_of(body) == 4:
            return Raw(data + b" " * (cap + 1 - len(data)))  # valid JSON, one byte over the cap
        if doc_of(body) == 5:
            return Raw(data + b" " * (cap - len(data)))  # exactly at the cap: accepted
        return None

    cache = JudgeCache(tmp_path / "cache.sqlite")
    with JudgeServer(step_for=steps) as server:
        records = annotate(TEXTS[:8], [PROMPT], backend(server, max_response_bytes=cap), cache, ids=IDS[:8])
        assert server.count == 8  # not retried: asked again, the server would send it again
    assert len(cache) == 7 and records[5]["band"] == "K5"
    error = records[4]["judge"]["errors"]["grade"]
    assert "2,001 bytes (Content-Length) is over the cap of 2,000 bytes (max_response_bytes)" in error


def test_an_endless_body_without_a_length_is_cut_off_at_the_cap():
    cap, total = 4096, 200 * 1024 * 1024  # the server would send 200 MiB if the client read on
    with JudgeServer(script=[Stream(total)]) as server:
        started = time.monotonic()
        with pytest.raises(BackendError, match=r"over the cap of 4,096 bytes .* after reading 4,097 bytes"):
            backend(server, max_response_bytes=cap).complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 5
        time.sleep(0.2)
        assert server.streamed < total // 10  # the client hung up; the body was never read whole


def test_a_claimed_huge_length_is_refused_before_reading():
    with JudgeServer(script=[Stream(64 * 1024, content_length=10 * 1024**3)]) as server:
        with pytest.raises(BackendError, match=r"10,737,418,240 bytes \(Content-Length\) .* refused without"):
            backend(server, max_response_bytes=1000).complete([{"role": "user", "content": "hi"}])
