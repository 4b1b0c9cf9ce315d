"""`littlekit filter` in process when its inputs, outputs or artifacts are wrong: one table of cases.

Each case builds its inputs in tmp_path, runs `littlekit.cli.main([...])` and checks the exit code,
a fragment of the one-line message, the report's exact accounting (read = kept + dropped +
errored) when one is written, and that every input file is byte-identical afterwards. A usage
error (exit 2) must leave tmp_path exactly as it was: the checks run before anything is written.
One case runs the real console entry point in a subprocess for its exit code.

The record-level bad inputs (bad_json, not_object, missing_text_field, text_not_string,
bad_encoding, empty_text, too_large, stage_error) are covered one by one in
tests/test_cli.py::test_every_kind_of_bad_input_is_accounted_for and tests/test_io.py; the
malformed-artifact lines in tests/filter/test_artifacts.py::test_malformed_artifacts_are_named; the
command-line refusals (unknown stage, --max-aoa nan, ...) in
tests/test_cli.py::test_bad_command_lines_give_one_line_and_exit_2. Here only a few of those
kinds appear, in the "dirty" case, to tie them to the accounting of this table.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from littlekit.cli import main
from littlekit.filter import registry
from littlekit.filter.base import Decision, Stage, StageSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

K5_LINES = ["the cat sat on the mat", "the dog ran home", "we play with the big red ball"]
K12_LINES = ["the light energy function", "energy of the function", "light function energy"]
TINY_BERT = {
    "model_type": "bert",
    "architectures": ["BertForSequenceClassification"],
    "num_labels": 4,
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}


class FlakyStage(Stage):
    """Keeps a document; drops one holding "drop"; raises on one holding "boom" (a stage bug)."""

    name = "flaky"

    def score(self, text: str) -> dict[str, Any]:
        if "boom" in text:
            raise RuntimeError("boom")
        return {"n": len(text)}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(True, None, scores)


class DroppingFlakyStage(FlakyStage):
    def score(self, text: str) -> dict[str, Any]:
        return {**super().score(text), "drop": "drop" in text}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(not scores["drop"], "flaky_drop" if scores["drop"] else None, scores)


@pytest.fixture(autouse=True)
def flaky_stage(monkeypatch):
    monkeypatch.setitem(
        registry._SPECS,
        "flaky",
        StageSpec("flaky", 100, "flaky", "test stage", lambda options: DroppingFlakyStage()),
    )


@pytest.fixture(scope="module")
def fasttext_model(tmp_path_factory) -> Path:
    """A tiny supervised fastText grade model (well under a second to train)."""
    from littlekit.fit.fasttext import train_fasttext

    path = tmp_path_factory.mktemp("ft") / "grade.bin"
    labelled = pd.DataFrame({"text": K5_LINES * 10 + K12_LINES * 10, "band": ["K5"] * 30 + ["K12"] * 30})
    train_fasttext(labelled, path, epoch=5, dim=8, bucket=2000, minn=0, maxn=0, wordNgrams=1, thread=1)
    return path


def docs(texts: list[str]) -> bytes:
    return "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)).encode()


def build_inputs(tmp: Path, model: Path) -> dict[str, Path]:
    """Every input file the cases read (hashed before and after each run)."""
    made: dict[str, Path] = {}

    def put(name: str, data: bytes) -> Path:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        made[name.replace("/", "_").replace(".", "_")] = path
        return path

    put("small.jsonl", docs(K5_LINES + ["drop this one"]))
    put("boom5.jsonl", docs([f"boom {i}" for i in range(5)]))
    put("stray.jsonl", docs(["a", "b", "boom", "drop c"]))
    put("boom300.jsonl", docs([f"boom {i}" if i % 10 == 3 else f"doc {i}" for i in range(300)]))
    put(
        "mixed.jsonl",
        b"".join(
            json.dumps(row).encode() + b"\n"
            for row in [
                {"id": 1, "text": "the cat", "m": 1, "s": {"a": 1}},
                {"id": 2, "text": "the dog", "m": "x", "s": {"b": "q"}},
                {"id": 3, "text": "drop it", "m": 2.5},
                {"id": 4, "text": "the sun", "m": [1, 2], "extra": True},
            ]
        ),
    )
    put(
        "dirty.jsonl",
        b'{"id": "good", "text": "fine"}\n{"id": "broken", "text": \n[1, 2]\n'
        b'{"id": "blank", "text": "  "}\n{"id": "bug", "text": "boom"}\n',
    )
    whole = gzip.compress(docs([f"the cat number {i}" for i in range(3000)]), mtime=0)
    put("trunc.jsonl.gz", whole[: len(whole) // 2])
    put("notgz.jsonl.gz", docs(["plain text, not gzip"]))
    put("shards/a.jsonl", docs(["in a folder"]))
    put("bad.parquet", b"PAR1 this is not parquet at all")
    put("cut.bin", model.read_bytes()[: model.stat().st_size // 2])
    put("art/models/fasttext_grade.bin", model.read_bytes()[:-7])
    put("enc_garbage/config.json", json.dumps(TINY_BERT).encode())
    put("enc_garbage/tokenizer_config.json", b"{}")
    put("enc_garbage/model.safetensors", bytes(range(256)) * 8)
    header = json.dumps({"w": {"dtype": "XX", "shape": [2], "data_offsets": [0, 8]}}).encode()
    put("enc_dtype/config.json", json.dumps(TINY_BERT).encode())
    put("enc_dtype/tokenizer_config.json", b"{}")
    put("enc_dtype/model.safetensors", struct.pack("<Q", len(header)) + header + bytes(8))
    for name, frame in {
        "aoa_noage.parquet": pd.DataFrame({"word": ["cat"], "age": [3.0]}),
        "aoa_text.parquet": pd.DataFrame({"word": ["cat"], "aoa": ["three"]}),
        "words_noscore.parquet": pd.DataFrame({"word": ["cat"], "score": [1.0]}),
    }.items():
        frame.to_parquet(tmp / name, index=False)
        made[name.replace(".", "_")] = tmp / name
    made["tmp"] = tmp
    made["model"] = model
    return made


@dataclass
class Case:
    id: str
    argv: list[str]  # after "filter"; {name} is a path from build_inputs, {tmp} the folder
    code: int
    message: str  # in stderr (or, for exit 0, in stdout)
    counts: tuple[int, int, int, int] | None = None  # read, kept, dropped, errored (from --report)
    stopped: str | None = None  # in the report's "stopped"
    partial: bool = False  # outputs left as .partial (a stopped run)
    setup: Any = None  # (inputs) -> None: outputs that exist before the run (links, folders)
    extra: dict = field(default_factory=dict)


def symlink_to_input(p):
    (p["tmp"] / "link.jsonl").symlink_to(p["small_jsonl"])


def hardlink_to_input(p):
    os.link(p["small_jsonl"], p["tmp"] / "hard.jsonl")


def report_folder(p):
    (p["tmp"] / "rep").mkdir()


def run_folder_with_input(p):
    (p["tmp"] / "run").mkdir()
    (p["tmp"] / "run" / "kept.jsonl").write_bytes(p["small_jsonl"].read_bytes())


FLAKY = ["--stages", "flaky"]
REPORT = ["--report", "{tmp}/r.json"]
CASES = [
    # item 1: every pair of paths (input, out, rejected, report) is distinct, before anything runs
    Case("out-is-report", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--report", "{tmp}/k.jsonl"],
         2, "--out and --report both name"),
    Case("rejected-is-report", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--rejected", "{tmp}/r",
                                "--report", "{tmp}/r"], 2, "--rejected and --report both name"),
    Case("out-is-rejected", ["--in", "{small_jsonl}", "--out", "{tmp}/x.jsonl",
                             "--rejected", "{tmp}/x.jsonl"], 2, "--out and --rejected both name"),
    Case("out-is-input", ["--in", "{small_jsonl}", "--out", "{small_jsonl}"],
         2, "an output path is the input file: --in and --out both name"),
    Case("report-is-input", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--report", "{small_jsonl}"],
         2, "an output path is the input file: --in and --report"),
    Case("rejected-is-input-through-dotdot", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl",
                                              "--rejected", "{tmp}/sub/../small.jsonl"],
         2, "an output path is the input file: --in"),
    Case("out-is-a-symlink-to-input", ["--in", "{small_jsonl}", "--out", "{tmp}/link.jsonl"],
         2, "are one file", setup=symlink_to_input),
    Case("out-is-a-hard-link-to-input", ["--in", "{small_jsonl}", "--out", "{tmp}/hard.jsonl"],
         2, "an output path is the input file", setup=hardlink_to_input),
    Case("out-folder-kept-is-rejected", ["--in", "{small_jsonl}", "--out", "{tmp}/run/",
                                         "--rejected", "{tmp}/run/kept.jsonl"],
         2, "--out (its kept.jsonl) and --rejected both name"),
    Case("out-folder-report-is-input", ["--in", "{tmp}/run/kept.jsonl", "--out", "{tmp}/run/"],
         2, "an output path is the input file: --in and --out (its kept.jsonl)", setup=run_folder_with_input),
    Case("rejected-is-outs-partial", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl",
                                      "--rejected", "{tmp}/k.jsonl.partial"],
         2, "is the file that --out"),
    Case("report-is-a-folder", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--report", "{tmp}/rep"],
         2, "rep is a folder; give a file name", setup=report_folder),
    Case("distinct-paths-run", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--rejected",
                                "{tmp}/rej.jsonl", *REPORT, *FLAKY], 0, "retention", counts=(4, 3, 1, 0)),
    # item 3: load-time self checks of the artifacts, and the error-rate limit
    Case("truncated-fasttext", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages", "fasttext",
                                "--fasttext-model", "{cut_bin}"],
         2, "a truncated fastText model: the file ends inside", extra={"also": "littlekit fit fasttext"}),
    Case("truncated-fasttext-in-artifacts", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages",
                                             "fasttext", "--artifacts", "{tmp}/art"],
         2, "models/fasttext_grade.bin (fasttext stage", extra={"also": "littlekit fit fasttext"}),
    Case("aoa-table-without-aoa", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages", "aoa",
                                   "--aoa-table", "{aoa_noage_parquet}"],
         2, "lacks column(s) ['aoa']", extra={"also": "littlekit fit aoa"}),
    Case("aoa-table-with-text-ages", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages", "aoa",
                                      "--aoa-table", "{aoa_text_parquet}"],
         2, "aoa_text.parquet: column 'aoa' is", extra={"also": "not numeric"}),
    Case("word-table-without-score", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages",
                                      "frequency", "--word-table", "{words_noscore_parquet}"],
         2, "lacks column(s) ['beyond_score']", extra={"also": "littlekit fit word-table"}),
    Case("every-document-errors", ["--in", "{boom5_jsonl}", "--out", "{tmp}/k.jsonl", "--rejected",
                                   "{tmp}/rej.jsonl", *REPORT, *FLAKY],
         1, "5 of the 5 documents that entered stage flaky errored", counts=(5, 0, 0, 5),
         stopped="at the end of the input", partial=True),
    Case("error-rate-stops-mid-run", ["--in", "{boom300_jsonl}", "--out", "{tmp}/k.jsonl", "--rejected",
                                      "{tmp}/rej.jsonl", *REPORT, *FLAKY, "--batch-rows", "50"],
         1, "stopped after 100 records: 10 of the 100 documents", counts=(100, 90, 0, 10),
         stopped="judged once 100 had entered", partial=True),
    Case("one-stray-error-in-a-small-input", ["--in", "{stray_jsonl}", "--out", "{tmp}/k.jsonl", *REPORT,
                                              *FLAKY], 0, "stage_error:flaky", counts=(4, 2, 1, 1)),
    Case("no-error-allowed", ["--in", "{stray_jsonl}", "--out", "{tmp}/k.jsonl", *REPORT, *FLAKY,
                              "--max-error-rate", "0"],
         1, "1 of the 4 documents that entered stage flaky errored", counts=(4, 2, 1, 1),
         stopped="the first: line 3: RuntimeError: boom", partial=True),
    Case("error-rate-1-never-stops", ["--in", "{boom300_jsonl}", "--out", "{tmp}/k.jsonl", *REPORT, *FLAKY,
                                      "--batch-rows", "50", "--max-error-rate", "1"],
         0, "errored: 30", counts=(300, 270, 0, 30)),
    Case("error-rate-not-a-fraction", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl",
                                       "--max-error-rate", "2"], 2, "--max-error-rate: must be a fraction"),
    # item 7: parquet output with conflicting metadata types is written, one schema
    Case("parquet-conflicting-types", ["--in", "{mixed_jsonl}", "--out", "{tmp}/k.parquet", *REPORT, *FLAKY],
         0, "retention", counts=(4, 3, 1, 0)),
    Case("parquet-conflicting-types-across-batches", ["--in", "{mixed_jsonl}", "--out", "{tmp}/k.parquet",
                                                      *REPORT, *FLAKY, "--batch-rows", "1"],
         0, "retention", counts=(4, 3, 1, 0)),
    # item 8: messages that name the file and say what to do
    Case("truncated-gzip-input", ["--in", "{trunc_jsonl_gz}", "--out", "{tmp}/k.jsonl", "--rejected",
                                  "{tmp}/rej.jsonl", *REPORT, *FLAKY, "--batch-rows", "64"],
         1, "its gzip data ends early (cut short", stopped="could not be read on", partial=True,
         extra={"also": "gzip -t"}),
    Case("gz-name-without-gzip-data", ["--in", "{notgz_jsonl_gz}", "--out", "{tmp}/k.jsonl"],
         2, "notgz.jsonl.gz is not gzip data although its name ends in .gz"),
    Case("folder-input-in-process", ["--in", "{tmp}/shards", "--out", "{tmp}/k.jsonl"],
         2, "is a folder; the in-process run reads one file", extra={"also": "--executor local"}),
    Case("not-parquet", ["--in", "{bad_parquet}", "--out", "{tmp}/k.jsonl", *FLAKY],
         2, "bad.parquet is not a readable Parquet file"),
    Case("corrupt-encoder-weights", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--stages", "encoder",
                                     "--encoder-gate", "all", "--encoder-model", "{tmp}/enc_garbage"],
         2, "model.safetensors: not a safetensors file", extra={"also": "littlekit fit encoder"}),
    Case("negative-max-aoa", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--max-aoa", "-3"],
         2, "argument --max-aoa: must be a number above 0, got -3"),
    Case("zero-max-aoa", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--max-aoa", "0"],
         2, "argument --max-aoa: must be a number above 0"),
    Case("infinite-max-aoa", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--max-aoa", "inf"],
         2, "argument --max-aoa: must be finite"),
    Case("nan-min-beyond-score", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--min-beyond-score",
                                  "nan"], 2, "argument --min-beyond-score: must be finite"),
    Case("negative-max-oov", ["--in", "{small_jsonl}", "--out", "{tmp}/k.jsonl", "--max-oov", "-0.1"],
         2, "argument --max-oov: must be a fraction"),
    # a few of the record-level bad inputs (one by one in test_cli / test_io), for the accounting
    Case("dirty-records", ["--in", "{dirty_jsonl}", "--out", "{tmp}/k.jsonl", "--rejected", "{tmp}/rej.jsonl",
                           *REPORT, *FLAKY], 0, "bad_json", counts=(5, 1, 0, 4)),
]  # fmt: skip


def tree(root: Path) -> dict[str, str]:
    """Every file (and link) under root -> its SHA-256 ("link:<target>" for a symlink)."""
    found = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = f"link:{os.readlink(path)}"
        elif path.is_file():
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[key] = "dir"
    return found


def jsonl_rows(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in half a line"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_filter_error_case(tmp_path, capsys, fasttext_model, case: Case):
    inputs = build_inputs(tmp_path, fasttext_model)
    if case.setup is not None:
        case.setup(inputs)
    names = {key: str(path) for key, path in inputs.items()}
    argv = ["filter", *(arg.format(**names) for arg in case.argv), "--quiet"]
    input_files = {path: path.read_bytes() for key, path in inputs.items() if key not in ("tmp", "model")}
    before = tree(tmp_path)

    code = main(argv)
    out, err = capsys.readouterr()

    assert code == case.code, f"exit {code}, stderr: {err}"
    assert "Traceback" not in err
    text = " ".join((err if code else out + err).split())
    assert case.message in text, text
    if "also" in case.extra:
        assert case.extra["also"] in text, text
    for path, data in input_files.items():
        assert path.read_bytes() == data, f"input {path.name} was changed"
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("littlekit filter: error: ")
        assert tree(tmp_path) == before, "a usage error must be found before anything is written"
        return
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    expected = case.counts
    if case.id == "truncated-gzip-input":  # every whole line before the damage is read, and counted
        lines = zlib.decompressobj(wbits=31).decompress(inputs["trunc_jsonl_gz"].read_bytes()).count(b"\n")
        assert 0 < lines < 3000
        expected = (lines, lines, 0, 0)
        assert f"after line {lines:,}" in err
    if expected is not None:
        assert (report["read"], report["kept"], report["dropped"], report["errored"]) == expected
        assert report["read"] == report["kept"] + report["dropped"] + report["errored"]
        assert report["consistent"]
    if case.stopped:
        assert case.stopped in report["stopped"], report["stopped"]
    else:
        assert report["stopped"] is None
    kept = tmp_path / ("k.parquet" if "{tmp}/k.parquet" in case.argv else "k.jsonl")
    rejected = tmp_path / "rej.jsonl"
    if case.partial:  # a stopped run: whole records in .partial files; nothing looks complete
        assert err.count("\n") == 1 and err.startswith("littlekit filter: error: ")
        assert not kept.exists() and not rejected.exists()
        kept, rejected = (path.with_name(path.name + ".partial") for path in (kept, rejected))
        assert str(kept) in err and report["run"]["output"] == str(kept)
    if ".parquet" in kept.name:
        rows = pq.read_table(kept).to_pylist()
    else:
        rows = jsonl_rows(kept)
    if expected is not None:
        assert len(rows) == expected[1]
    if "--rejected" in case.argv and expected is not None:
        assert len(jsonl_rows(rejected)) == expected[2] + expected[3]
    if case.id.startswith("parquet-conflicting-types"):
        assert [row["m"] for row in rows] == ["1", "x", "[1, 2]"]
        assert [row["s"] for row in rows] == [{"a": 1, "b": None}, {"a": None, "b": "q"}, None]
        assert [row["extra"] for row in rows] == [None, None, True]
        assert report["run"]["parquet_string_fields"] == {"m": ["int", "list", "str"]}  # of the kept
    if case.id == "error-rate-stops-mid-run":
        assert [row["id"] for row in rows] == [f"d{i}" for i in range(100) if i % 10 != 3]


def test_the_encoder_loader_names_the_directory_and_the_fix(tmp_path, fasttext_model, capsys):
    """A weights file whose header passes the cheap check but that safetensors refuses
    (SafetensorError) is a one-line usage error naming the directory (imports torch: a few s)."""
    inputs = build_inputs(tmp_path, fasttext_model)
    before = tree(tmp_path)
    encoder = tmp_path / "enc_dtype"
    code = main(["filter", "--in", str(inputs["small_jsonl"]), "--out", str(tmp_path / "k.jsonl"), "--stages",
                 "encoder", "--encoder-gate", "all", "--encoder-model", str(encoder)])  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "Traceback" not in err
    assert f"encoder directory {encoder} cannot be loaded (SafetensorError" in err
    assert "littlekit fit encoder" in err
    assert tree(tmp_path) == before


def test_the_console_entry_point_exits_2_and_keeps_the_input(tmp_path, fasttext_model):
    """The original data loss: --out and --report the same file; the real process's exit code."""
    inputs = build_inputs(tmp_path, fasttext_model)
    kept = tmp_path / "k.jsonl"
    kept.write_bytes(b'{"text": "from an earlier run"}\n')
    before = tree(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "littlekit.cli", "filter", "--in", str(inputs["small_jsonl"]),
         "--out", str(kept), "--report", str(kept)],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    message = f"--out and --report both name {kept}: give each output its own path"
    assert done.stderr.strip() == f"littlekit filter: error: {message}"
    assert tree(tmp_path) == before


# --- the checks underneath, on their own ----------------------------------------------------------


def test_fasttext_size_check_follows_the_file_format(tmp_path, fasttext_model):
    import fasttext

    from littlekit.filter.fasttext import fasttext_file_problem
    from littlekit.fit.fasttext import train_fasttext

    assert fasttext_file_problem(fasttext_model) is None
    labelled = pd.DataFrame({"text": K5_LINES * 5 + K12_LINES * 5, "band": ["K5"] * 15 + ["K12"] * 15})
    ngrams = tmp_path / "ngrams.bin"  # word and character n-grams: enough rows to prune and quantize
    train_fasttext(labelled, ngrams, epoch=1, dim=8, bucket=2000, minCount=1, thread=1)
    assert fasttext_file_problem(ngrams) is None
    model = fasttext.load_model(str(ngrams))
    model.quantize(qnorm=True, cutoff=300)  # a .ftz with a pruned dictionary and norm codes
    ftz = tmp_path / "grade.ftz"
    model.save_model(str(ftz))
    assert fasttext_file_problem(ftz) is None
    data = ftz.read_bytes()
    for cut, where in ((40, "arguments"), (100, "dictionary"), (len(data) - 1, "output matrix")):
        (tmp_path / "cut.ftz").write_bytes(data[:cut])
        assert where in fasttext_file_problem(tmp_path / "cut.ftz")
    (tmp_path / "long.bin").write_bytes(fasttext_model.read_bytes() + b"x")
    assert "a damaged fastText model: its header says" in fasttext_file_problem(tmp_path / "long.bin")


def test_a_fasttext_model_that_predicts_nothing_fails_its_self_check(fasttext_model):
    from littlekit.filter.fasttext import FastTextStage

    stage = FastTextStage(fasttext_model)  # a whole model passes

    class Empty:
        def predict(self, texts, k=-1):
            return [[] for _ in texts], [[] for _ in texts]

    stage.model = Empty()  # what a truncated model that loads answers
    with pytest.raises(ValueError, match="fails its self check.*littlekit fit fasttext"):
        stage.self_check()


def test_the_error_limit_is_judged_per_stage_after_the_minimum_and_at_the_end():
    from littlekit.filter.cascade import CascadeReport, ErrorLimit

    report = CascadeReport(["a", "b"])
    report.stage_in.update({"a": 99, "b": 50})
    report.stage_errored.update({"a": 5, "b": 1})
    limit = ErrorLimit(0.01)
    assert limit.breach(report, final=False) is None  # neither has 100 documents yet
    assert "5 of the 99 documents that entered stage a" in limit.breach(report, final=True)
    report.stage_errored["a"] = 1
    assert limit.breach(report, final=True) is None  # 1 error is allowed over max(n, 100)
    report.stage_in["b"] = 100
    report.stage_errored["b"] = 2
    assert "stage b" in limit.breach(report, final=False)
    with pytest.raises(ValueError):
        ErrorLimit(1.5)
