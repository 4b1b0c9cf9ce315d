"""The stages as datatrove blocks: same verdicts as the in-process cascade, reasons, stats,
batches, pickling without models, readers that lose nothing, and the three executors."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import dill
import pytest
from datatrove.data import Document as DTDocument
from datatrove.executor import LocalPipelineExecutor, SlurmPipelineExecutor

from littlekit.config import EMBEDDED_DATA, REPO_ROOT
from littlekit.filter.base import Decision, Stage
from littlekit.filter.cascade import DROPPED, ERRORED, KEPT, BatchScoringError, Cascade
from littlekit.filter.datatrove.blocks import (
    ERROR_KEY,
    REASON_KEY,
    SCORES_KEY,
    STAGE_KEY,
    LittleKitFilter,
    RecordErrorFilter,
)
from littlekit.filter.datatrove.pipeline import (
    build_datatrove_pipeline,
    expand_stages,
    make_executor,
    run_datatrove,
    shard_jsonl,
)
from littlekit.filter.datatrove.readers import LittleKitJsonlReader
from littlekit.filter.datatrove.report import datatrove_report
from littlekit.filter.registry import build_stages, known_stages
from littlekit.io import read_documents

DEMO = EMBEDDED_DATA / "demo_corpus" / "demo_web.jsonl"
CRAFTED = [
    {"id": "kid", "text": "The cat sat on the mat. The dog ran to the park with a ball.", "band": "K5"},
    {"id": "sym", "text": "We can solve x^2 + 3x = 10 for the big dog and the cat.", "band": None},
    {"id": "chem", "text": "The water we drink is H2O and the air has CO2 in it.", "band": None},
    {"id": "hard", "text": "Epistemological considerations notwithstanding, the juxtaposition persists."},
    {"id": "numbers", "text": "1 2 3 4 5 6 7 8 9 10"},
]
BAD = [
    b"{not json",
    b"[1, 2]",
    b'{"id": "empty", "text": "  "}',
    b'{"id": "notext"}',
    b'{"id": 7, "text": 5}',
    b'{"id": "latin1", "text": "caf\xe9"}',
]
BAD_REASONS = Counter(
    {
        "bad_json": 1,
        "not_object": 1,
        "empty_text": 1,
        "missing_text_field": 1,
        "text_not_string": 1,
        "bad_encoding": 1,
    }
)


def write_input(path: Path, n_demo: int = 120) -> Path:
    lines = DEMO.read_bytes().splitlines()[:n_demo]
    lines += [json.dumps(record).encode() for record in CRAFTED] + BAD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_jsonl_gz(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle]
    return rows


class CountingStage(Stage):
    """Batch-scored like fastText/encoder: records each batch's size; its `decide` raises on a
    document holding "boom" (one document's error), its batched call on "crash" (the whole batch's)."""

    name = "counting"

    def __init__(self):
        self.batches: list[int] = []

    def score(self, text: str) -> dict[str, Any]:
        if "crash" in text:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return {"n_chars": len(text), "boom": "boom" in text}

    def score_batch(self, texts: list[str]) -> list[dict[str, Any]]:
        self.batches.append(len(texts))
        return [self.score(text) for text in texts]

    def decide(self, scores: dict[str, Any]) -> Decision:
        if scores["boom"]:
            raise ValueError("cannot decide boom")
        return Decision(scores["n_chars"] <= 10, None if scores["n_chars"] <= 10 else "too_long", scores)


def docs(*texts: str) -> list[DTDocument]:
    return [DTDocument(text=text, id=str(i)) for i, text in enumerate(texts)]


# --- the filter block ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cascade_run(tmp_path_factory):
    """The same input through the in-process cascade and through a 2-task local datatrove run."""
    base = tmp_path_factory.mktemp("parity")
    inp = write_input(base / "in" / "docs.jsonl")
    outcomes = list(Cascade(build_stages("aoa,symbolic")).run(read_documents(inp)))
    pipeline = build_datatrove_pipeline(
        inp.parent, base / "kept", "aoa,symbolic", rejected_dir=base / "rejected"
    )
    run_datatrove(pipeline, tasks=2, workers=1, logging_dir=base / "logs")
    return outcomes, base


def test_datatrove_run_keeps_and_drops_exactly_what_the_cascade_does(cascade_run):
    outcomes, base = cascade_run
    kept = {row["id"]: row for row in read_jsonl_gz(base / "kept")}
    rejected = read_jsonl_gz(base / "rejected")
    assert sorted(kept) == sorted(o.record.id for o in outcomes if o.status == KEPT)
    dropped = sorted((o.record.id, o.stage, o.reason) for o in outcomes if o.status == DROPPED)
    assert (
        sorted((r["id"], r[STAGE_KEY], r[REASON_KEY]) for r in rejected if r[STAGE_KEY] != "input") == dropped
    )
    assert Counter(r[REASON_KEY] for r in rejected if r[STAGE_KEY] == "input") == BAD_REASONS
    assert Counter(o.reason for o in outcomes if o.status == ERRORED) == BAD_REASONS
    for outcome in outcomes:  # the same scores, stage by stage
        if outcome.status == KEPT:
            assert kept[outcome.record.id][SCORES_KEY] == json.loads(json.dumps(outcome.scores))
    assert {"sym", "chem", "hard"} <= {r["id"] for r in rejected} and "kid" in kept


def test_kept_records_keep_every_input_field_at_the_top_level(cascade_run):
    _, base = cascade_run
    kid = next(row for row in read_jsonl_gz(base / "kept") if row["id"] == "kid")
    assert kid["text"] == CRAFTED[0]["text"] and kid["band"] == "K5"
    assert set(kid[SCORES_KEY]) == {"aoa", "symbolic"}
    assert kid[SCORES_KEY]["aoa"]["n_tokens"] == 14


def test_report_from_the_stats_adds_up_like_the_cascade_report(cascade_run):
    outcomes, base = cascade_run
    report = datatrove_report(base / "logs")
    report.check()
    expected = Cascade(build_stages("aoa,symbolic")).run(read_documents(base / "in" / "docs.jsonl")).consume()
    assert (report.read, report.kept, report.dropped, report.errored) == (
        expected.read,
        expected.kept,
        expected.dropped,
        expected.errored,
    )
    assert report.dropped_by_stage == expected.dropped_by_stage
    assert report.errored_by_reason == expected.errored_by_reason
    assert [(r.stage, r.n_in, r.n_out) for r in report.retention()] == [
        (r.stage, r.n_in, r.n_out) for r in expected.retention()
    ]


def test_filter_returns_true_or_false_with_reason_and_tags_the_document():
    block = LittleKitFilter(CountingStage())
    short, long = docs("a cat", "a very long text indeed")
    assert block.filter(short) is True
    assert block.filter(long) == (False, "too_long")
    assert long.metadata[STAGE_KEY] == "counting" and long.metadata[REASON_KEY] == "too_long"
    assert short.metadata[SCORES_KEY] == {"counting": {"n_chars": 5, "boom": False}}


def test_run_counts_stats_per_reason_and_writes_dropped_documents(tmp_path):
    from littlekit.filter.datatrove.writers import make_writer as _writer

    block = LittleKitFilter(CountingStage(), exclusion_writer=_writer(tmp_path, "text", "id", "gzip"))
    kept = list(block.run(iter(docs("a cat", "a very long text indeed", "a dog", "boom")), rank=3))
    assert [doc.text for doc in kept] == ["a cat", "a dog"]
    counts = {label: value.total for label, value in block.stats.stats.items()}
    assert counts["total"] == 4 and counts["forwarded"] == 2 and counts["dropped"] == 2
    assert counts["dropped_too_long"] == 1 and counts["dropped_stage_error:counting"] == 1
    assert counts["errored"] == 1
    written = read_jsonl_gz(tmp_path)
    assert [(r["text"], r[REASON_KEY]) for r in written] == [
        ("a very long text indeed", "too_long"),
        ("boom", "stage_error:counting"),
    ]
    assert written[1]["filter_detail"] == "ValueError: cannot decide boom"
    assert (tmp_path / "00003.jsonl.gz").is_file()  # one file per task rank


def test_batched_stage_is_scored_batch_size_documents_at_a_time():
    stage = CountingStage()
    block = LittleKitFilter(stage, batch_size=4)
    kept = list(block.run(iter(docs(*"abcdefghij"))))
    assert len(kept) == 10 and stage.batches == [4, 4, 2]


def test_one_documents_error_is_its_own_but_a_failing_batch_call_fails_the_task():
    # A failing batched call used to be re-scored one document at a time (issue 40: after a CUDA
    # error every later document failed too); now it raises, naming the stage, task and batch.
    stage = CountingStage()
    block = LittleKitFilter(stage, batch_size=2)
    assert block.filter_batch(docs("a", "boom", "b")) == [True, (False, "stage_error:counting"), True]
    where = r"stage counting failed on batch 2 of task 5 \(documents from id '2' to id '3'\)"
    with pytest.raises(BatchScoringError, match=where) as err:
        list(block.run(iter(docs("a", "b", "c", "crash")), rank=5))
    assert "RuntimeError: CUDA error" in str(err.value) and isinstance(err.value.__cause__, RuntimeError)
    assert stage.batches == [3, 2, 2]  # the failed batch was not scored again one document at a time


def test_named_stage_is_built_lazily_and_never_pickled(tmp_path):
    block = LittleKitFilter("aoa", {"max_aoa": 11.0})
    assert block._stage is None  # nothing loaded in the driver
    before = len(pickle.dumps(block))
    assert block.filter(docs("the cat sat on the mat")[0]) is True
    assert block.stage.max_aoa == 11.0
    after = dill.dumps(block)
    assert len(after) == pytest.approx(before, abs=200)  # the loaded lexicon (30k words) stays behind
    clone = dill.loads(after)
    assert clone._stage is None and clone.options["max_aoa"] == 11.0
    assert clone.filter(docs("the cat sat on the mat")[0]) is True


def test_missing_model_fails_in_the_worker_not_in_the_driver(tmp_path):
    block = LittleKitFilter("fasttext", {"fasttext_model": str(tmp_path / "absent.bin")})
    with pytest.raises(FileNotFoundError, match="absent.bin"):
        block.filter(docs("a cat")[0])


def test_bad_stage_names_and_options_fail_at_construction():
    with pytest.raises(ValueError, match="unknown stage 'nope'"):
        LittleKitFilter("nope")
    with pytest.raises(ValueError, match="max_oov"):
        LittleKitFilter("aoa", {"max_oov": 2.0})
    with pytest.raises(TypeError):
        LittleKitFilter("aoa", {"no_such_option": 1})


def test_all_expands_to_every_registered_stage_in_cascade_order():
    assert expand_stages("all") == list(known_stages())
    assert expand_stages("all")[:3] == ["aoa", "fasttext", "encoder"]
    assert expand_stages("symbolic, aoa") == ["symbolic", "aoa"]
    blocks = build_datatrove_pipeline(DEMO, "/tmp/unused-kept", "all", options={"fasttext_model": "x.bin"})
    names = [block.stage_name for block in blocks if isinstance(block, LittleKitFilter)]
    assert names == list(known_stages())
    assert isinstance(blocks[1], RecordErrorFilter)


# --- readers and writers -----------------------------------------------------------------------


def test_jsonl_reader_turns_every_line_into_a_document_or_an_error_document(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "text": "hello", "x": 1}\n\n' + b"\n".join(BAD) + b"\n")
    reader = LittleKitJsonlReader(str(tmp_path))
    found = list(reader.run())
    assert found[0].id == "a" and found[0].text == "hello" and found[0].metadata == {"x": 1}
    assert Counter(doc.metadata.get(ERROR_KEY) for doc in found[1:]) == BAD_REASONS
    assert found[1].id == "in.jsonl/2" and found[1].metadata["line"] == 3  # the blank line is skipped
    assert found[3].id == "empty"


def test_custom_text_and_id_keys_round_trip(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"key": "k1", "content": "the cat sat", "n": 2}\n', "utf-8")
    pipeline = build_datatrove_pipeline(
        tmp_path / "in", tmp_path / "kept", "aoa", text_key="content", options=None, id_key="key"
    )
    run_datatrove(pipeline, logging_dir=tmp_path / "logs")
    (row,) = read_jsonl_gz(tmp_path / "kept")
    assert (row["key"], row["content"], row["n"]) == ("k1", "the cat sat", 2) and "text" not in row


def test_parquet_input_keeps_columns_and_reports_rows_without_text(tmp_path):
    import pandas as pd

    (tmp_path / "in" / "sub").mkdir(parents=True)
    frame = pd.DataFrame(
        {"id": ["a", "b", "c"], "text": ["the cat sat", None, "the dog ran"], "grade": [1, 2, 3]}
    )
    frame.to_parquet(tmp_path / "in" / "sub" / "part.parquet")
    pipeline = build_datatrove_pipeline(
        tmp_path / "in", tmp_path / "kept", "aoa", rejected_dir=tmp_path / "rej"
    )
    run_datatrove(pipeline, logging_dir=tmp_path / "logs")
    assert [(r["id"], r["grade"]) for r in read_jsonl_gz(tmp_path / "kept")] == [("a", 1), ("c", 3)]
    (bad,) = read_jsonl_gz(tmp_path / "rej")
    assert (bad["id"], bad[REASON_KEY]) == ("b", "text_not_string")


def test_output_inside_the_input_folder_is_refused(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n', "utf-8")
    with pytest.raises(ValueError, match="inside the input folder"):
        build_datatrove_pipeline(tmp_path, tmp_path / "kept", "aoa")


def test_shard_jsonl_splits_in_order_without_losing_lines(tmp_path):
    files = shard_jsonl(DEMO, tmp_path, 7)
    assert len(files) == 7
    assert b"".join(f.read_bytes() for f in files) == DEMO.read_bytes()


# --- executors ---------------------------------------------------------------------------------


def test_local_executor_is_built_with_tasks_and_workers(tmp_path):
    runner = make_executor([], "local", tasks=6, workers=3, logging_dir=tmp_path)
    assert isinstance(runner, LocalPipelineExecutor)
    assert (runner.world_size, runner.workers, runner.start_method) == (6, 3, "forkserver")
    with pytest.raises(ValueError, match="unknown executor 'spark'"):
        make_executor([], "spark")


def test_slurm_executor_needs_time_and_partition(tmp_path):
    with pytest.raises(ValueError, match="time and partition"):
        make_executor([], "slurm", tasks=4, logging_dir=tmp_path)


def test_ray_executor_is_built_or_says_how_to_install_ray(tmp_path):
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        with pytest.raises(ImportError, match="pip install ray"):
            make_executor([], "ray", tasks=4, logging_dir=tmp_path)
    else:
        runner = make_executor([], "ray", tasks=4, logging_dir=tmp_path, cpus_per_task=2)
        assert (runner.world_size, runner.cpus_per_task) == (4, 2)


def _fake_binary(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.slow
def test_slurm_submission_script_and_the_pickled_job_that_runs_on_a_node(tmp_path):
    """datatrove's real launch path with stand-ins for sbatch and scontrol: the script it submits,
    then the pickled executor run as a Slurm array task would run it (launch_pickled_pipeline)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_binary(
        bin_dir, "sbatch", f'echo "$@" >> {tmp_path}/sbatch_calls\necho "Submitted batch job 4242"\n'
    )
    _fake_binary(bin_dir, "scontrol", "echo localhost\n")
    inp = write_input(tmp_path / "in" / "docs.jsonl", n_demo=20)
    pipeline = build_datatrove_pipeline(inp.parent, tmp_path / "kept", "aoa,symbolic")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    runner = make_executor(
        pipeline,
        "slurm",
        tasks=2,
        logging_dir=tmp_path / "logs",
        time="01:00:00",
        partition="cpu",
        cpus_per_task=4,
        mem_per_cpu_gb=3,
        tasks_per_job=2,
        venv_path=f"{REPO_ROOT}/.venv/bin/activate",
        sbatch_args={"account": "littlelab"},
    )
    assert isinstance(runner, SlurmPipelineExecutor)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = env["PATH"]
    try:
        runner.run()  # outside a Slurm task: writes the script and submits it
    finally:
        os.environ["PATH"] = old_path
    script = (tmp_path / "logs" / "launch_script.slurm").read_text(encoding="utf-8")
    for line in (
        "#SBATCH --partition=cpu",
        "#SBATCH --time=01:00:00",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --mem-per-cpu=3G",
        "#SBATCH --account=littlelab",
        "#SBATCH --array=0-0",
    ):
        assert line in script
    assert f"source {REPO_ROOT}/.venv/bin/activate" in script and "launch_pickled_pipeline" in script
    assert runner.job_id == "4242"
    assert len((tmp_path / "sbatch_calls").read_text().splitlines()) == 2  # the job array + merge_stats

    with (tmp_path / "logs" / "executor.pik").open("rb") as handle:
        pickled = dill.load(handle)
    assert all(block._stage is None for block in pickled.pipeline if isinstance(block, LittleKitFilter))

    node_env = {
        **env,
        "SLURM_ARRAY_TASK_ID": "0",
        "SLURM_NODELIST": "localhost",
        "PYTHONPATH": str(REPO_ROOT),
        "HF_HUB_OFFLINE": "1",
    }
    launcher = Path(sys.executable).with_name("launch_pickled_pipeline")
    done = subprocess.run(
        [str(launcher), str(tmp_path / "logs" / "executor.pik")],
        env=node_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "logs" / "completions").iterdir()) == ["00000", "00001"]
    report = datatrove_report(tmp_path / "logs")
    report.check()
    assert report.read == 20 + len(CRAFTED) + len(BAD)
    assert len(read_jsonl_gz(tmp_path / "kept")) == report.kept > 0


def test_filter_with_datatrove_returns_the_checked_report_of_a_local_run(tmp_path):
    from littlekit.filter.datatrove.pipeline import filter_with_datatrove

    inp = write_input(tmp_path / "in" / "docs.jsonl", n_demo=10)
    report = filter_with_datatrove(
        inp, tmp_path / "kept", "aoa,symbolic", tmp_path / "logs", rejected_dir=tmp_path / "rej", tasks=1
    )
    assert report.read == 10 + len(CRAFTED) + len(BAD) and report.errored_by_reason == BAD_REASONS
    assert len(read_jsonl_gz(tmp_path / "kept")) == report.kept
    assert len(read_jsonl_gz(tmp_path / "rej")) == report.dropped + report.errored
