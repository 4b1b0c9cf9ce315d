"""Issue 26, the judge's part: a run whose calls all fail stops before it replaces earlier labels,
the labels file is written beside and swapped in whole, and a request's timeout is a deadline
for the whole answer. Against a real loopback server (`judge_server`), no mocks."""

from __future__ import annotations

import time
import warnings

import pandas as pd
import pytest
from judge_server import Drip, JudgeServer, Status, quick_backend

from littlekit.databuild import corpora
from littlekit.fit.labels import write_label_file
from littlekit.judge.annotate import JudgeRunError, JudgeWarning, annotate, check_judged
from littlekit.judge.backends import BackendError
from littlekit.judge.cache import JudgeCache
from littlekit.judge.labels import make_label, write_labels
from littlekit.judge.openai_backend import OpenAIChatBackend
from littlekit.judge.prompts import build_prompts
from littlekit.judge.voting import revote

KEY_ENV = "LITTLEKIT_TEST_RELIABILITY_KEY"  # never set: no Authorization header
TEXTS = ["The cat sat on the mat and the dog ran home.", "Photosynthesis turns light into sugar in leaves."]
IDS = ["doc-a", "doc-b"]
MESSAGES = [{"role": "system", "content": "judge"}, {"role": "user", "content": "The cat sat."}]


@pytest.fixture(scope="module")
def prompts():
    return build_prompts(corpora.load_standards(None))  # chapter 2's prompts, from the embedded data


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def backend(server: JudgeServer, **options) -> OpenAIChatBackend:
    return quick_backend(server, KEY_ENV, **options)


def earlier_labels(path) -> bytes:
    """A good labels file, as an earlier run of chapter 2 left it; returns its bytes."""
    frame = pd.DataFrame(
        [{**make_label(i, t, "K5", "llm-judge"), "text": t, "corpus": "demo", "group": None}
         for i, t in zip(IDS, TEXTS, strict=True)]
    )  # fmt: skip
    assert write_label_file(frame, path) == 2
    return path.read_bytes()


def judge_route(judge: OpenAIChatBackend, prompts, out_dir, labels_file) -> int:
    """Chapter 2's judge route (notebooks/02_llm_judge.ipynb, section 5), the same library calls
    in the same order: annotate, check_judged, the majority file, the unanimous training labels."""
    cache = JudgeCache(out_dir / "judge_cache.sqlite")
    records = annotate(TEXTS, prompts, judge, cache, vote="majority", ids=IDS)
    check_judged(records, vote="unanimous")
    write_labels(records, out_dir / "judge_labels_majority.jsonl")
    unanimous = [revote(record, "unanimous") for record in records]
    return write_label_file(pd.DataFrame(unanimous).assign(text=TEXTS), labels_file)


# --- 1. every call failed: an error, and the earlier labels byte-identical -------------------------


def test_a_judge_answering_500_to_everything_stops_the_route_and_keeps_the_labels(tmp_path, prompts):
    labels_file = tmp_path / "labels" / "train_labels.jsonl"
    labels_file.parent.mkdir()
    before = earlier_labels(labels_file)
    with JudgeServer(script=[Status(500, retry_after="0")] * 100) as server:
        with pytest.raises(JudgeRunError) as failure:
            judge_route(backend(server), prompts, tmp_path, labels_file)
        assert server.count == 2 * 3 * 2  # 2 documents x 3 prompts x (1 try + 1 retry): bounded
    message = str(failure.value)
    assert "every one of the 6 judge calls failed" in message and "HTTP 500" in message
    assert labels_file.read_bytes() == before
    assert not (tmp_path / "judge_labels_majority.jsonl").exists()
    assert sorted(p.name for p in labels_file.parent.iterdir()) == ["train_labels.jsonl"]


def test_no_document_with_a_band_is_an_error_too(tmp_path, prompts):
    labels_file = tmp_path / "train_labels.jsonl"
    before = earlier_labels(labels_file)
    with JudgeServer(answer=lambda body: "I cannot tell.") as server:
        with pytest.raises(JudgeRunError, match=r"none of the 2 judged documents got a unanimous band "
                                                r"\(0 of 6 calls failed, 6 answers could not be parsed\)"):
            judge_route(backend(server), prompts, tmp_path, labels_file)
    assert labels_file.read_bytes() == before


def test_some_calls_failing_warns_with_the_counts_and_goes_on(tmp_path, prompts):
    labels_file = tmp_path / "train_labels.jsonl"
    earlier_labels(labels_file)
    # one request at a time: the first call gets both 500s and fails, the other five are answered
    with JudgeServer(script=[Status(500, retry_after="0")] * 2) as server:
        with pytest.warns(JudgeWarning, match=r"^1 of 6 judge calls failed \(0 more answers could not be "
                                              r"parsed\); 1 of 2 documents have no band"):
            written = judge_route(backend(server, concurrency=1), prompts, tmp_path, labels_file)
    assert written == 2
    assert labels_file.read_text().count('"band": "K5"') == 1  # one vote missing: no unanimous band


def test_check_judged_counts_a_clean_run_without_a_warning(tmp_path, prompts):
    with JudgeServer() as server:
        records = annotate(TEXTS, prompts, backend(server), vote="majority", ids=IDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counts = check_judged(records, vote="unanimous")
    assert counts == {"documents": 2, "calls": 6, "failed": 0, "unparsed": 0, "labelled": 2}
    with pytest.raises(JudgeRunError, match="no documents"):
        check_judged([])


# --- the labels file: written beside, then swapped -----------------------------------------------


def test_a_labels_write_that_fails_midway_leaves_the_earlier_file_whole(tmp_path):
    path = tmp_path / "train_labels.jsonl"
    before = earlier_labels(path)
    good = {**make_label("new-1", "A new text.", "K8", "llm-judge"), "text": "A new text."}
    bad = {**good, "id": "new-2", "band": "college"}  # refused by validate_label, after one line is written

    def records():
        yield good
        yield bad

    with pytest.raises(ValueError, match="unknown bands"):
        write_labels(records(), path)
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="unknown bands"):
        write_label_file(pd.DataFrame([good, bad]), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["train_labels.jsonl"]  # no partial file left
    assert write_labels([good], path) == 1 and path.read_text().count("\n") == 1


# --- 2. the timeout is a deadline for the whole answer -------------------------------------------


def test_a_server_dripping_bytes_is_cut_off_at_the_deadline(prompts):
    # one byte every 50 ms: no single read waits anywhere near 1 s, the whole answer takes ~30 s
    with JudgeServer(script=[Drip(0.05)] * 10) as server:
        judge = backend(server, timeout=1.0, backoff_base=0.01)
        started = time.monotonic()
        gave_up = r"gave up after 2 attempts: TimeoutError: timed out, no complete answer within 1s"
        with pytest.raises(BackendError, match=gave_up):
            judge.complete(MESSAGES)
        elapsed = time.monotonic() - started
        assert server.count == 2
    assert elapsed < 4, f"a 1 s request (one retry) took {elapsed:.1f}s"


def test_dripped_answers_count_as_failed_calls(prompts):
    with JudgeServer(script=[Drip(0.05)] * 10) as server:
        started = time.monotonic()
        records = annotate(TEXTS[:1], prompts, backend(server, timeout=1.0), vote="majority", ids=IDS[:1])
        elapsed = time.monotonic() - started
        assert server.count == 3 * 2
    assert elapsed < 5, f"three 1 s requests in parallel (one retry each) took {elapsed:.1f}s"
    assert all(e.startswith("backend: gave up after 2 attempts: TimeoutError") for e in
               records[0]["judge"]["errors"].values())  # fmt: skip
    with pytest.raises(JudgeRunError, match="every one of the 3 judge calls failed"):
        check_judged(records)


def test_a_slow_but_steady_answer_within_the_deadline_still_arrives():
    with JudgeServer(script=[Drip(0.001)]) as server:  # ~0.4 s in all
        completion = backend(server, timeout=5.0).complete(MESSAGES)
    assert '"band": "K5"' in completion.text
