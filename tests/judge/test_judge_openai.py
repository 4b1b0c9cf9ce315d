"""The OpenAI-compatible backend against a real loopback server with scripted behaviours."""

import json
import logging
import time

import pytest
from judge_server import Content, Json, JudgeServer, Raw, Sleep, Status

from littlekit.judge.backends import BackendError, Completion, ResponseFormatError
from littlekit.judge.openai_backend import OpenAIChatBackend, _retry_after
from littlekit.judge.redact import APIKeyError

KEY_ENV = "LITTLEKIT_TEST_JUDGE_KEY"
SECRET = "sk-test-0123456789abcdef-secret"
MESSAGES = [{"role": "system", "content": "judge"}, {"role": "user", "content": "The cat sat."}]


@pytest.fixture()
def secret(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def make_backend(server, **options):
    defaults = {"api_key_env": KEY_ENV, "timeout": 2.0, "max_retries": 3, "backoff_base": 0.01}
    return OpenAIChatBackend(server.url, "test-model", **(defaults | options))


def test_normal_answer_with_usage_and_request_shape(secret):
    with JudgeServer() as server:
        completion = make_backend(server).complete(MESSAGES)
        request = server.requests[0]
    assert completion.text == '{"rationale": "short everyday words", "band": "K5"}'
    assert completion.input_tokens == len("judgeThe cat sat.") // 4
    assert completion.output_tokens == len(completion.text) // 4
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "test-model", "messages": MESSAGES, "temperature": 0.0,
                               "max_tokens": 1024}
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"


def test_no_authorization_header_without_the_variable(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with JudgeServer() as server:
        make_backend(server).complete(MESSAGES)
        assert "Authorization" not in server.requests[0]["headers"]


def test_key_never_in_repr_str_or_logs(secret, caplog):
    with JudgeServer(script=[Status(500), Status(401)]) as server:
        backend = make_backend(server)
        with caplog.at_level(logging.DEBUG, logger="littlekit.judge"), pytest.raises(BackendError) as info:
            backend.complete(MESSAGES)
    assert SECRET not in repr(backend) and SECRET not in str(backend)
    assert KEY_ENV in repr(backend)
    assert SECRET not in caplog.text and "retry 1/3" in caplog.text
    assert SECRET not in str(info.value)
    assert SECRET not in json.dumps(backend.payload(MESSAGES))


def test_error_messages_are_scrubbed_of_an_echoed_key(secret):
    with JudgeServer() as server:
        backend = make_backend(server)
    assert backend._scrub(f"HTTP 401: Incorrect API key provided: {SECRET}") == (
        "HTTP 401: Incorrect API key provided: ***"
    )


def test_429_then_success_honours_retry_after(secret):
    with JudgeServer(script=[Status(429, retry_after="0.4")]) as server:
        start = time.monotonic()
        completion = make_backend(server).complete(MESSAGES)
        elapsed = time.monotonic() - start
        assert server.count == 2
    assert "K5" in completion.text
    assert elapsed >= 0.4  # the backoff alone would be 0.01 s


def test_500_then_success(secret):
    with JudgeServer(script=[Status(500), Status(503)]) as server:
        assert "K5" in make_backend(server).complete(MESSAGES).text
        assert server.count == 3


def test_retries_run_out(secret):
    with JudgeServer(script=[Status(502)] * 10) as server:
        with pytest.raises(BackendError, match="gave up after 3 attempts: HTTP 502"):
            make_backend(server, max_retries=2).complete(MESSAGES)
        assert server.count == 3


def test_client_errors_are_not_retried(secret):
    with JudgeServer(script=[Status(400)]) as server:
        with pytest.raises(BackendError, match="HTTP 400: .*scripted 400"):
            make_backend(server).complete(MESSAGES)
        assert server.count == 1


def test_slow_answer_times_out_then_retry_succeeds(secret):
    with JudgeServer(script=[Sleep(1.0)]) as server:
        start = time.monotonic()
        completion = make_backend(server, timeout=0.2).complete(MESSAGES)
        elapsed = time.monotonic() - start
        assert server.count == 2
    assert "K5" in completion.text
    assert 0.2 <= elapsed < 1.0  # did not wait for the slow answer


def test_slow_answers_every_time_end_in_an_error(secret):
    with JudgeServer(script=[Sleep(0.6)] * 3) as server:
        with pytest.raises(BackendError, match="gave up after 2 attempts: .*timed out"):
            make_backend(server, timeout=0.15, max_retries=1).complete(MESSAGES)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (Raw(b"<html>Bad Gateway</html>"), "not JSON"),
        (Json({"id": "x", "object": "chat.completion"}), "no choices"),
        (Json({"choices": []}), "no choices"),
        (Json({"choices": [{"index": 0}]}), "no message"),
    ],
)
def test_malformed_responses_are_format_errors(secret, step, message):
    with JudgeServer(script=[step]) as server:
        with pytest.raises(ResponseFormatError, match=message):
            make_backend(server).complete(MESSAGES)
        assert server.count == 1


def test_content_that_is_not_a_band_is_returned_as_text(secret):
    with JudgeServer(script=[Content("I would rather not say.")]) as server:
        assert make_backend(server).complete(MESSAGES).text == "I would rather not say."


def test_complete_many_keeps_order_limits_concurrency_and_returns_errors(secret):
    def echo(body):
        return body["messages"][1]["content"]

    batch = [[MESSAGES[0], {"role": "user", "content": f"doc {i}"}] for i in range(8)]
    with JudgeServer(answer=echo, delay=0.1) as server:
        results = make_backend(server, concurrency=2).complete_many(batch)
        assert server.max_in_flight == 2
    assert [r.text for r in results] == [f"doc {i}" for i in range(8)]

    with JudgeServer(script=[Status(404)], answer=echo) as server:
        results = make_backend(server, concurrency=1).complete_many(batch[:3])
    assert isinstance(results[0], BackendError)
    assert all(isinstance(r, Completion) for r in results[1:])


def test_extra_body_and_max_tokens_field(secret):
    with JudgeServer() as server:
        backend = make_backend(server, max_tokens_field="max_completion_tokens", temperature=None,
                               extra_body={"reasoning_effort": "low"})
        backend.complete(MESSAGES)
        body = server.requests[0]["body"]
    assert body["max_completion_tokens"] == 1024 and "max_tokens" not in body
    assert "temperature" not in body and body["reasoning_effort"] == "low"


def test_retry_after_header_forms():
    assert _retry_after("3") == 3.0
    assert _retry_after("0.5") == 0.5
    assert _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_key_ending_in_cr_or_lf_is_stripped_before_it_is_sent(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET + "\r\n")
    with JudgeServer() as server:
        make_backend(server).complete(MESSAGES)
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


def test_key_with_inner_whitespace_is_refused_when_the_backend_is_made(monkeypatch):
    broken = SECRET[:10] + " " + SECRET[10:]
    monkeypatch.setenv(KEY_ENV, broken)
    with JudgeServer() as server:
        with pytest.raises(APIKeyError, match=f"\\${KEY_ENV} has whitespace at character 11") as refused:
            make_backend(server)
        assert server.count == 0
    for piece in (broken, SECRET[:8], SECRET[:10], SECRET[11:]):
        assert piece not in str(refused.value)


def test_a_key_echoed_in_200_answers_and_error_bodies_is_scrubbed(secret, caplog):
    with JudgeServer(echo_authorization=True, script=[Status(503), Status(401)]) as server:
        backend = make_backend(server)
        with caplog.at_level(logging.DEBUG, logger="littlekit.judge"), pytest.raises(BackendError) as failed:
            backend.complete(MESSAGES)
        completion = backend.complete(MESSAGES)
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert completion.text.startswith("[echo] Authorization: Bearer *** | key *** | starts *** ")
    assert completion.text.endswith('"band": "K5"}')
    for text in (completion.text, str(failed.value), caplog.text):
        assert SECRET[:8] not in text and SECRET[4:12] not in text, text
    assert "scripted 401" in str(failed.value) and "retry 1/3" in caplog.text


def test_malformed_responses_echoing_the_key_are_scrubbed(secret):
    with JudgeServer(script=[Raw(f"<html>{SECRET}</html>".encode()), Json({"echo": SECRET[:9]})]) as server:
        backend = make_backend(server)
        for _ in range(2):
            with pytest.raises(ResponseFormatError) as failed:
                backend.complete(MESSAGES)
            assert SECRET[:8] not in str(failed.value) and "***" in str(failed.value)
