"""datatrove runs that no record's fields can break, and stages built once per worker process.

Foreign fields: records whose fields datatrove would take for its own (`media`, `metadata`,
`rank`, `token_count`) or that littlekit writes itself (`littlekit_scores`, `filter_reason`, ...),
among good records and unreadable lines, in several files (tasks). Every record must come out
once, kept or rejected, with every field it came in with (a reserved name as `input_<name>`),
and the verdicts must be the in-process cascade's.

Start-up: a stage is built once per worker process and options, however many tasks the process
runs; counted from the `stage_builds` stat and, across a worker pool, against the process ids
that ran the tasks.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from datatrove.data import Document as DTDocument
from datatrove.pipeline.readers import JsonlReader
from test_datatrove import read_jsonl_gz as rows  # the gzipped JSONL outputs, every record

import littlekit.filter.datatrove.blocks as blocks  # the module whose stage cache the filter reads
from littlekit.config import EMBEDDED_DATA, REPO_ROOT
from littlekit.filter.base import Decision, Stage
from littlekit.filter.cascade import DROPPED, ERRORED, KEPT, Cascade
from littlekit.filter.datatrove.blocks import (
    DETAIL_KEY,
    ERROR_KEY,
    REASON_KEY,
    SCORES_KEY,
    STAGE_KEY,
    LittleKitFilter,
    RecordErrorFilter,
)
from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline, run_datatrove, shard_jsonl
from littlekit.filter.datatrove.report import datatrove_report, datatrove_stage_builds
from littlekit.filter.datatrove.writers import make_writer as _writer
from littlekit.filter.registry import build_stages
from littlekit.io import read_documents

DEMO = EMBEDDED_DATA / "demo_corpus" / "demo_web.jsonl"
RESERVED = (SCORES_KEY, STAGE_KEY, REASON_KEY, DETAIL_KEY, ERROR_KEY)
FILES, DEMO_PER_FILE = 3, 20

# Each of these once per input file (ids suffixed with the file's number).
FOREIGN = [
    {"id": "media-list", "text": "The cat sat on the mat.", "media": [{"url": "http://x/cat.png", "n": 1}]},
    {"id": "media-str", "text": "The dog ran to the park.", "media": "none"},
    {"id": "meta", "text": "The sun is big and hot.", "metadata": "from the crawl", "rank": "zz"},
    {"id": "tokens", "text": "We like to read books.", "token_count": "many"},
    {"id": "scores-str", "text": "My mom made a big cake.", SCORES_KEY: "high"},
    {"id": "scores-list", "text": "We can solve x^2 + 3x = 10 for the dog.", SCORES_KEY: [1, 2]},
    {"id": "scores-null", "text": "The bird can fly.", SCORES_KEY: None},
    {
        "id": "scores-dict",
        "text": "The cat and the dog can play.",
        SCORES_KEY: {"aoa": {"p95_aoa": 99.0}},
        REASON_KEY: "theirs",
        STAGE_KEY: "theirs",
    },
    {"id": "record-error", "text": "A fish can swim.", ERROR_KEY: "bad_json", DETAIL_KEY: "theirs"},
    {"id": "taken", "text": "The frog is green.", SCORES_KEY: "mine", "input_" + SCORES_KEY: "taken"},
    {
        "id": "odd-values",
        "text": "The duck is in the pond.",
        "big": 2**70,  # over orjson's 64 bits
        "surrogate": "\ud800",  # a lone surrogate, valid JSON ("\\ud800")
        "nested": {"a": [1, {"b": None}]},
    },
]
BAD = ["{{not json", '{{"id": "empty-{i}", "text": "  "}}', '{{"id": "notext-{i}", "media": []}}']


def expected_fields(record: dict) -> dict:
    """The record's fields as the datatrove runner must write them: a reserved name renamed."""
    out = {}
    for key, value in record.items():
        name = key
        if key in RESERVED:
            name = "input_" + key
            while name in record:
                name = "input_" + name
        out[name] = value
    return out


def write_inputs(folder: Path) -> list[dict]:
    """FILES input files, each demo lines + FOREIGN + BAD; returns every foreign record written."""
    folder.mkdir(parents=True)
    demo = DEMO.read_bytes().splitlines()
    written = []
    for i in range(FILES):
        records = [{**record, "id": f"{record['id']}-{i}"} for record in FOREIGN]
        lines = demo[i * DEMO_PER_FILE : (i + 1) * DEMO_PER_FILE]
        lines += [json.dumps(record).encode() for record in records]
        lines += [bad.format(i=i).encode() for bad in BAD]
        (folder / f"part-{i}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        written += records
    return written


@pytest.fixture(scope="module")
def foreign_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("foreign")
    records = write_inputs(base / "in")
    pipeline = build_datatrove_pipeline(
        base / "in", base / "kept", "aoa,symbolic", rejected_dir=base / "rejected"
    )
    run_datatrove(pipeline, tasks=FILES, workers=1, logging_dir=base / "logs")
    return base, records


def test_no_task_fails_and_every_record_is_accounted_for(foreign_run):
    base, records = foreign_run
    assert sorted(p.name for p in (base / "logs" / "completions").iterdir()) == [
        f"{r:05d}" for r in range(FILES)
    ]
    assert len(list((base / "logs" / "stats").glob("*.json"))) == FILES
    report = datatrove_report(base / "logs")
    report.check()
    n_read = FILES * (DEMO_PER_FILE + len(FOREIGN) + len(BAD))
    assert report.read == n_read
    assert report.kept + report.dropped + report.errored == n_read
    assert report.errored_by_reason == Counter(
        {"bad_json": FILES, "empty_text": FILES, "missing_text_field": FILES}
    )
    kept, rejected = rows(base / "kept"), rows(base / "rejected")
    assert len(kept) == report.kept and len(rejected) == report.dropped + report.errored
    ids = Counter(str(row["id"]) for row in kept + rejected)
    assert len(ids) == n_read and max(ids.values()) == 1  # every record once
    assert {record["id"] for record in records} <= set(ids)


def test_outputs_hold_every_foreign_field(foreign_run):
    base, records = foreign_run
    by_id = {row["id"]: row for row in rows(base / "kept") + rows(base / "rejected")}
    for record in records:
        row = by_id[record["id"]]
        for key, value in expected_fields(record).items():
            assert key in row and row[key] == value, (record["id"], key)
        assert isinstance(row[SCORES_KEY], dict) and "aoa" in row[SCORES_KEY]  # ours, fresh
    row = by_id["scores-dict-0"]
    assert row["input_" + SCORES_KEY] == {"aoa": {"p95_aoa": 99.0}}
    assert row[SCORES_KEY]["aoa"]["p95_aoa"] < 99.0 and row["input_" + REASON_KEY] == "theirs"
    assert by_id["taken-1"]["input_" + SCORES_KEY] == "taken"
    assert by_id["taken-1"]["input_input_" + SCORES_KEY] == "mine"
    assert by_id["record-error-2"]["input_" + ERROR_KEY] == "bad_json"  # not taken for a read error
    dropped = by_id["scores-list-0"]  # dropped by symbolic: ours beside theirs
    assert (dropped[STAGE_KEY], dropped[REASON_KEY]) == ("symbolic", "symbolic_equations")
    assert dropped["input_" + SCORES_KEY] == [1, 2]


def test_rank_field_does_not_redirect_the_record_to_another_tasks_file(foreign_run):
    base, _ = foreign_run
    for rank in range(FILES):
        with gzip.open(base / "kept" / f"{rank:05d}.jsonl.gz", "rt", encoding="utf-8") as handle:
            assert f"meta-{rank}" in {json.loads(line)["id"] for line in handle}
    assert not list((base / "kept").glob("zz*"))


def test_verdicts_and_fields_are_the_in_process_runners(foreign_run):
    """The in-process runner (`littlekit filter`) writes the kept record as read; datatrove the
    same fields (reserved names renamed) plus its scores, and both decide alike."""
    base, _ = foreign_run
    outcomes = []
    for path in sorted((base / "in").glob("*.jsonl")):
        outcomes += list(Cascade(build_stages("aoa,symbolic")).run(read_documents(path)))
    kept = {str(row["id"]): row for row in rows(base / "kept")}
    rejected = rows(base / "rejected")
    assert sorted(kept) == sorted(o.record.id for o in outcomes if o.status == KEPT)
    assert sorted(
        (str(r["id"]), r[STAGE_KEY], r[REASON_KEY]) for r in rejected if r[STAGE_KEY] != "input"
    ) == sorted((o.record.id, o.stage, o.reason) for o in outcomes if o.status == DROPPED)
    assert Counter(r[REASON_KEY] for r in rejected if r[STAGE_KEY] == "input") == Counter(
        o.reason for o in outcomes if o.status == ERRORED
    )
    for outcome in outcomes:
        if outcome.status != KEPT:
            continue
        row = kept[outcome.record.id]
        assert row[SCORES_KEY] == json.loads(json.dumps(outcome.scores))
        in_process = outcome.record.meta  # what the in-process runner writes to its kept file
        assert {k: v for k, v in row.items() if k != SCORES_KEY} == expected_fields(in_process)


def test_parquet_columns_with_foreign_names_pass_through(tmp_path):
    import pandas as pd

    (tmp_path / "in").mkdir()
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "text": ["the cat sat", "the dog ran"],
            "media": ["none", "x"],
            SCORES_KEY: ["high", "low"],
            "token_count": ["many", "few"],
        }
    )
    frame.to_parquet(tmp_path / "in" / "part.parquet")
    pipeline = build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", "aoa")
    run_datatrove(pipeline, logging_dir=tmp_path / "logs")
    found = rows(tmp_path / "kept")
    assert [(r["id"], r["media"], r["input_" + SCORES_KEY], r["token_count"]) for r in found] == [
        ("a", "none", "high", "many"),
        ("b", "x", "low", "few"),
    ]
    assert all(set(r[SCORES_KEY]) == {"aoa"} for r in found)


class Len(Stage):
    name = "len"

    def score(self, text: str) -> dict:
        return {"n": len(text)}

    def decide(self, scores: dict) -> Decision:
        return Decision(True, None, scores)


def test_filter_without_the_record_filter_sets_a_foreign_scores_value_aside():
    docs = [
        DTDocument(text="a cat", id="1", metadata={SCORES_KEY: "high"}),
        DTDocument(text="a dog", id="2", metadata={SCORES_KEY: None}),
        DTDocument(text="a pig", id="3", metadata={SCORES_KEY: {"earlier": {"x": 1}}}),
    ]
    assert LittleKitFilter(Len()).filter_batch(docs) == [True, True, True]
    assert docs[0].metadata == {"input_" + SCORES_KEY: "high", SCORES_KEY: {"len": {"n": 5}}}
    assert docs[1].metadata == {"input_" + SCORES_KEY: None, SCORES_KEY: {"len": {"n": 5}}}
    assert docs[2].metadata == {
        SCORES_KEY: {"earlier": {"x": 1}, "len": {"n": 5}}
    }  # a dict: an earlier stage's


def test_record_filter_sets_aside_what_another_reader_left_under_our_names(tmp_path):
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"id": "x", "text": "a cat", SCORES_KEY: {"aoa": 1}, REASON_KEY: "r", "media": []}) + "\n",
        encoding="utf-8",
    )
    (doc,) = RecordErrorFilter().run(JsonlReader(str(tmp_path)).run())  # datatrove's own reader
    assert doc.metadata.pop("file_path").endswith("a.jsonl")  # datatrove's reader adds it
    assert doc.metadata == {"input_" + SCORES_KEY: {"aoa": 1}, "input_" + REASON_KEY: "r"}


def test_writer_writes_foreign_media_and_rank_fields_as_they_are(tmp_path):
    writer = _writer(tmp_path, "text", "id", "gzip")
    doc = DTDocument(
        text="a cat", id="1", metadata={"media": [{"url": "u"}], "rank": "zz", "token_count": [1], "n": 2**70}
    )
    with writer:
        writer.write(doc, rank=3)
    assert [p.name for p in tmp_path.iterdir()] == ["00003.jsonl.gz"]
    (row,) = rows(tmp_path)
    assert row == {
        "id": "1",
        "text": "a cat",
        "media": [{"url": "u"}],
        "rank": "zz",
        "token_count": [1],
        "n": 2**70,
    }


# --- stages built once per worker process ---------------------------------------------------------


def test_stages_are_built_once_per_process_across_its_tasks(tmp_path, monkeypatch):
    monkeypatch.setattr(blocks, "_STAGE_CACHE", {})
    built = Counter()
    real = blocks.build_stages

    def counting(names, options=None):
        built.update(names)
        return real(names, options)

    monkeypatch.setattr(blocks, "build_stages", counting)
    shard_jsonl(DEMO, tmp_path / "in", 4)
    pipeline = build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", "aoa,symbolic")
    run_datatrove(pipeline, tasks=4, workers=1, logging_dir=tmp_path / "logs")  # 4 tasks, this process
    assert len(list((tmp_path / "logs" / "completions").iterdir())) == 4
    assert built == Counter({"aoa": 1, "symbolic": 1})
    builds = datatrove_stage_builds(tmp_path / "logs")
    assert {name: count for name, (count, _) in builds.items()} == {"aoa": 1, "symbolic": 1}
    assert builds["aoa"][1] > 0


class Seen(Len):
    """Remembers every text it scored (state that a copy per task would lose)."""

    name = "seen"

    def __init__(self):
        self.texts: list[str] = []

    def score(self, text: str) -> dict:
        self.texts.append(text)
        return super().score(text)


def test_a_stage_given_built_is_shared_by_the_tasks_not_copied_for_each(tmp_path):
    """The local executor deep-copies the pipeline per task when it runs them here (workers=1)."""
    (tmp_path / "in").mkdir()
    for i in range(3):
        (tmp_path / "in" / f"{i}.jsonl").write_text(json.dumps({"id": i, "text": f"cat {i}"}) + "\n", "utf-8")
    stage = Seen()
    pipeline = build_datatrove_pipeline(tmp_path / "in", tmp_path / "kept", [stage])
    run_datatrove(pipeline, tasks=3, workers=1, logging_dir=tmp_path / "logs")
    assert sorted(stage.texts) == ["cat 0", "cat 1", "cat 2"]  # this very object scored all 3 tasks


@pytest.mark.slow
def test_a_worker_pool_builds_each_stage_once_per_worker_process(tmp_path):
    """6 tasks on 2 local workers (datatrove's forkserver pool, as `littlekit filter --executor
    local --workers 2` runs them): the builds per stage equal the processes that ran tasks."""
    tasks = 6
    shard_jsonl(DEMO, tmp_path / "in", tasks)
    job = Path(__file__).parents[1] / "datatrove_job.py"  # beside conftest.py
    command = [sys.executable, str(job), str(tmp_path / "in"), str(tmp_path / "run"), "--tasks", str(tasks)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [*command, "--workers", "2", "--stamp-pid"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    logs = tmp_path / "run" / "logs"
    assert len(list((logs / "completions").iterdir())) == tasks
    pids = {
        row["worker_pid"] for row in rows(tmp_path / "run" / "kept") + rows(tmp_path / "run" / "rejected")
    }
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids
    builds = datatrove_stage_builds(logs)
    assert {name: count for name, (count, _) in builds.items()} == {"aoa": len(pids), "symbolic": len(pids)}
    for stats_file in (logs / "stats").glob("*.json"):  # no task built a stage twice
        for step in json.loads(stats_file.read_text(encoding="utf-8")):
            value = step["stats"].get("stage_builds", 0)
            assert (value["total"] if isinstance(value, dict) else value) <= 1


def _strict(constant: str):
    raise ValueError(f"not strict JSON: {constant}")


def test_writer_lines_are_strict_json_with_nan_as_null_whichever_encoder_writes_them(tmp_path):
    writer = _writer(tmp_path, "text", "id", "gzip")
    plain = {"x": math.nan, "y": [math.inf, 1.5]}
    with writer:
        writer.write(DTDocument(text="a", id="1", metadata=plain), rank=0)  # orjson
        odd = {**plain, "n": 2**70, "s": "\ud800"}  # orjson refuses: littlekit.io.to_json_line
        writer.write(DTDocument(text="b", id="2", metadata=odd), rank=0)
    with gzip.open(tmp_path / "00000.jsonl.gz", "rt", encoding="utf-8") as handle:
        first, second = (json.loads(line, parse_constant=_strict) for line in handle)
    assert first == {"id": "1", "text": "a", "x": None, "y": [None, 1.5]}
    assert second == {"id": "2", "text": "b", "x": None, "y": [None, 1.5], "n": 2**70, "s": "\ud800"}
