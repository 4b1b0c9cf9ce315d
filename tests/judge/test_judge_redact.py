"""API keys: validation and stripping (`clean_api_key`, `read_api_key`) and the one scrubber
every judge output goes through (`scrub`, `scrub_record`, the log filter)."""

import base64
import json
import logging

import pytest

from littlekit.judge import redact
from littlekit.judge.backends import Completion
from littlekit.judge.cache import JudgeCache
from littlekit.judge.labels import make_label, read_labels, write_labels
from littlekit.judge.parse import JudgeParseError, parse_answer

KEY = "sk-proj-Zq81xLwM4vT7nB2cR9"
KEY_ENV = "LITTLEKIT_TEST_REDACT_KEY"


@pytest.fixture(autouse=True)
def fresh_registry():
    redact._forget_all()
    yield
    redact._forget_all()


@pytest.mark.parametrize("raw", [KEY + "\r", KEY + "\n", KEY + "\r\n", f"  {KEY}\t", KEY])
def test_surrounding_whitespace_is_stripped(raw):
    assert redact.clean_api_key(raw, KEY_ENV) == KEY


@pytest.mark.parametrize("raw", [None, "", "   ", "\r\n"])
def test_unset_or_blank_is_no_key(raw):
    assert redact.clean_api_key(raw, KEY_ENV) is None


@pytest.mark.parametrize(
    ("raw", "problem", "position"),
    [
        ("sk-proj-Zq81 xLwM4vT7nB2cR9", "whitespace", 13),
        ("sk-proj-Zq81\rxLwM4vT7nB2cR9", "whitespace", 13),
        ("sk-proj-Zq81\x00xLwM4vT7nB2cR9", "a control character", 13),
        ("sk-proj-Zq81\u200bxLwM4vT7nB2cR9", "a control character", 13),  # zero-width space
        ("sk-proj-Zq81\u00e9xLwM4vT7nB2cR9", "a non-ASCII character", 13),
        ("sk-proj-Zq81\u00a0xLwM4vT7nB2cR9\n", "whitespace", 13),  # no-break space
    ],
)
def test_inner_whitespace_or_control_characters_are_refused_without_the_key(raw, problem, position):
    with pytest.raises(redact.APIKeyError) as refused:
        redact.clean_api_key(raw, KEY_ENV)
    message = str(refused.value)
    assert f"${KEY_ENV} has {problem} at character {position} of" in message
    for piece in (raw.strip(), "sk-proj-Zq81", "xLwM4vT7nB2cR9", KEY[:8]):
        assert piece not in message
    assert isinstance(refused.value, ValueError)
    # what was refused is never used, and it is still scrubbed from anything written
    assert "xLwM4vT7nB2cR9" not in redact.scrub("echo: xLwM4vT7nB2cR9")


def test_read_api_key_strips_and_registers(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY + "\r")
    assert redact.read_api_key(KEY_ENV) == KEY
    assert redact.scrub(f"you sent {KEY}\r!") == "you sent ***\r!"
    monkeypatch.delenv(KEY_ENV)
    assert redact.read_api_key(KEY_ENV) is None


def test_scrub_full_and_partial_echoes():
    redact.register(KEY)
    assert redact.scrub(f"key={KEY}.") == "key=***."
    assert redact.scrub(f"prefix {KEY[:8]} only") == "prefix *** only"
    assert redact.scrub(f"first twelve {KEY[:12]}...") == "first twelve ***..."
    assert redact.scrub(f"tail {KEY[-9:]}") == "tail ***"
    assert redact.scrub(f"middle x{KEY[5:19]}y") == "middle x***y"
    assert redact.scrub(f"twice {KEY}{KEY[:10]} end") == "twice *** end"
    assert redact.scrub(f"{KEY[:7]} is too short to be an echo") == f"{KEY[:7]} is too short to be an echo"
    assert redact.scrub("no secret here") == "no secret here"
    assert redact.scrub(None) is None and redact.scrub(3) == 3


def test_scrub_bearer_tokens_even_unregistered():
    assert redact.scrub("Authorization: Bearer abc123def456ghi") == "Authorization: Bearer ***"
    assert redact.scrub("b'Bearer zz99yy88xx77\\r'") == "b'Bearer ***\\r'"
    # ordinary prose that happens to use the word is left alone
    assert redact.scrub("Bearer bonds and the ring Bearer instruments") == (
        "Bearer bonds and the ring Bearer instruments"
    )


def test_short_keys_are_not_scrubbed():
    redact.register("EMPTY")
    assert redact.scrub("EMPTY answers") == "EMPTY answers"


def test_several_keys():
    other = "AIzaSyD-9tSrke72PouQMnMX"
    redact.register(KEY)
    redact.register(other)
    assert redact.scrub(f"{KEY} and {other[:9]}") == "*** and ***"


def test_scrub_record_leaves_document_data_alone():
    redact.register(KEY)
    record = {"id": "d1", "text": f"a document quoting {KEY}", "text_sha256": "ab" * 32,
              "judge": {"errors": {"subject": f"parse: no band found in answer '{KEY[:10]}'"}},
              "votes": {"subject": None}, "list": [KEY, 3]}
    scrubbed = redact.scrub_record(record)
    assert scrubbed["judge"]["errors"]["subject"] == "parse: no band found in answer '***'"
    assert scrubbed["list"] == ["***", 3]
    assert scrubbed["text"] == record["text"] and scrubbed["id"] == "d1"
    assert KEY[:10] in record["judge"]["errors"]["subject"]  # a copy: the input is not changed


def test_log_filter_scrubs_messages_and_arguments(caplog):
    redact.register(KEY)
    log = logging.getLogger("littlekit.judge")
    with caplog.at_level(logging.INFO, logger="littlekit.judge"):
        log.warning("failed (%s); retry", f"HTTP 401: bad key {KEY}")
        log.info(f"prefix {KEY[:8]}")
        try:
            raise RuntimeError(f"boom {KEY}")
        except RuntimeError:
            log.exception("with a traceback")
    assert "retry" in caplog.text and "***" in caplog.text
    assert KEY[:8] not in caplog.text
    assert all(KEY[:8] not in (r.exc_text or "") for r in caplog.records)


def test_cache_labels_and_parse_errors_are_scrubbed(tmp_path):
    redact.register(KEY)
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        cache.put(("v", "m", "s"), Completion(f"echo {KEY} band K5", 1, 2))
        assert cache.get(("v", "m", "s")).text == "echo *** band K5"
    assert KEY[:8].encode() not in (tmp_path / "cache.sqlite").read_bytes()

    with pytest.raises(JudgeParseError) as failure:
        parse_answer(f"I was sent {KEY[:12]} and cannot tell.")
    assert KEY[:8] not in str(failure.value) and KEY[:8] not in failure.value.answer

    label = make_label("d1", "the cat sat", "K5", source="llm-judge",
                       judge={"errors": {"subject": f"backend: HTTP 401: {KEY}"}})
    write_labels([label], tmp_path / "labels.jsonl")
    text = (tmp_path / "labels.jsonl").read_text()
    assert KEY[:8] not in text
    assert read_labels(tmp_path / "labels.jsonl")[0]["judge"]["errors"]["subject"] == "backend: HTTP 401: ***"
    assert json.loads(text)["text_sha256"] == label["text_sha256"]


def test_chapter_11s_judge_route_keeps_an_echoed_key_out(tmp_path, monkeypatch):
    """Chapter 11 labels clues through the same backend, cache and label writer (label_clues)."""
    import pandas as pd
    from judge_server import JudgeServer, Status

    from littlekit.evals.jeopardy.labels import label_clues, save_labels
    from littlekit.judge.openai_backend import OpenAIChatBackend

    def answer(body):
        user = body["messages"][1]["content"]
        return '{"dci": "2-PS1", "band": "K5"}' if "ice" in user else "I cannot tell."

    monkeypatch.setenv(KEY_ENV, KEY + "\r")
    frame = pd.DataFrame([
        {"id": "c1", "category": "SCIENCE", "clue": "Water frozen solid is this", "response": "ice"},
        {"id": "c2", "category": "SCIENCE", "clue": "Most of the air is this gas", "response": "nitrogen"},
    ])
    with JudgeServer(answer=answer, script=[Status(500)], echo_authorization=True) as server:
        backend = OpenAIChatBackend(server.url, "judge-x", api_key_env=KEY_ENV, timeout=5.0,
                                    max_retries=1, backoff_base=0.01)
        with JudgeCache(tmp_path / "judge_cache.sqlite") as cache:
            labels = label_clues(frame, backend, cache)
        assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    save_labels(labels, tmp_path / "labels.jsonl")
    assert [r["band"] for r in labels] == ["K5", None]
    assert labels[0]["judge"]["dci"] == "2-PS1"
    assert "Bearer ***" in labels[1]["judge"]["errors"]["ngss_science"]
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert not any(KEY[i : i + 8].encode() in data for i in range(len(KEY) - 7)), path.name


def test_scrub_takes_out_url_userinfo_and_encoded_or_spaced_echoes(monkeypatch):
    from judge_server import JudgeServer

    from littlekit.judge.openai_backend import OpenAIChatBackend

    monkeypatch.delenv(KEY_ENV, raising=False)  # no Authorization header
    key = "sk-proj-Q7xW2mZ9pL4vR8tK3nB6"
    redact._forget_all()
    try:
        redact.register(key)
        assert redact.scrub("at https://user:hunter2pass@api.example.com/v1 now") == \
            "at https://***@api.example.com/v1 now"  # fmt: skip
        for echo in (key[::-1], base64.b64encode(key.encode()).decode(),
                     base64.b64encode(b"x:" + key.encode()).decode(),
                     base64.urlsafe_b64encode(b"ab" + key.encode()).decode(), " ".join(key),
                     "  ".join(key[:12])):  # fmt: skip
            scrubbed = redact.scrub(f"echo: {echo} end")
            assert redact.MASK in scrubbed and scrubbed.startswith("echo: ") and scrubbed.endswith(" end")
            assert key[:8] not in scrubbed.replace(" ", "") and echo not in scrubbed, echo
        ordinary = "The cat sat on a mat. It is a big red dog, and so on to the end of the day."
        assert redact.scrub(ordinary) == ordinary
    finally:
        redact._forget_all()
    with JudgeServer() as server:
        url = server.url.replace("http://", "http://me:hunter2pass@")
        assert "hunter2pass" not in repr(OpenAIChatBackend(url, "m", api_key_env=KEY_ENV))
