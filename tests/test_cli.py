"""`littlekit` in-process through main([...]), plus one run of the installed console script."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from littlekit.cli import main
from littlekit.filter import registry
from littlekit.filter.base import Decision, Stage, StageSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TINY_AOA = "word,aoa\n" + "".join(
    f"{word},{aoa}\n"
    for word, aoa in [("the", 3), ("cat", 3.5), ("sat", 4), ("on", 3), ("mat", 5), ("dog", 3), ("ran", 4),
                      ("home", 4), ("quantum", 15), ("physics", 14)]
)  # fmt: skip


class LengthStage(Stage):
    """Drop documents over `max_words` words; raise on "boom" (a stage bug on one document)."""

    name = "length"

    def __init__(self, max_words: int = 6):
        self.max_words = max_words

    def score(self, text: str) -> dict[str, Any]:
        if "boom" in text:
            raise ValueError("boom")
        return {"n_words": len(text.split())}

    def decide(self, scores: dict[str, Any]) -> Decision:
        keep = scores["n_words"] <= self.max_words
        return Decision(keep, None if keep else "too_long", scores)


@pytest.fixture
def length_stage(monkeypatch):
    """Register the length stage for one test (the registry is how the CLI finds stages)."""
    monkeypatch.setitem(
        registry._SPECS,
        "length",
        StageSpec("length", 100, "length", "test stage", lambda options: LengthStage()),
    )


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_filter_writes_kept_rejected_and_report(tmp_path, capsys, length_stage):
    source = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "short", "text": "a short one", "url": "u1", "meta": {"k": [1, 2]}},
            {"id": "long", "text": "one two three four five six seven eight"},
            {"id": "bug", "text": "boom here"},
            {"id": "ok", "text": "fine", "url": "u4"},
        ],
    )
    out, rejected, report = tmp_path / "kept.jsonl", tmp_path / "rejected.jsonl", tmp_path / "report.json"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--stages", "length", "--rejected", rejected,
        "--report", report,
    )  # fmt: skip
    assert code == 0, stderr
    assert read_jsonl(out) == [
        {"id": "short", "text": "a short one", "url": "u1", "meta": {"k": [1, 2]}},
        {"id": "ok", "text": "fine", "url": "u4"},
    ]
    rows = read_jsonl(rejected)
    assert [(r["id"], r["outcome"], r["stage"], r["reason"]) for r in rows] == [
        ("long", "dropped", "length", "too_long"),
        ("bug", "errored", "length", "stage_error:length"),
    ]
    assert rows[0]["scores"] == {"length": {"n_words": 8}} and rows[1]["detail"] == "ValueError: boom"
    data = json.loads(report.read_text())
    assert (data["read"], data["kept"], data["dropped"], data["errored"], data["consistent"]) == (
        4,
        2,
        1,
        1,
        True,
    )
    assert data["stages"][0] == {
        "stage": "length", "in": 4, "out": 2, "dropped": 1, "errored": 1, "retention": 0.5,
        "cumulative_retention": 0.5, "seconds": data["stages"][0]["seconds"],
    }  # fmt: skip
    assert data["run"]["stages"] == ["length"] and data["run"]["options"]["max_oov"] == 0.05
    assert "retention after each stage" in stdout and "1 length" in stdout
    assert "config: stages=length" in stderr


def test_every_kind_of_bad_input_is_accounted_for(tmp_path, capsys, length_stage):
    huge = json.dumps({"id": "huge", "text": "word " * 600_000}).encode()  # 3 MB
    lines = [
        (b'{"id": "good", "text": "a good short text"}', None),
        (b'{"id": "long", "text": "this one has far too many words in it"}', "too_long"),
        (b'{"id": "broken", "text": ', "bad_json"),
        (b"[1, 2, 3]", "not_object"),
        (b'{"id": "nofield", "content": "text lives elsewhere"}', "missing_text_field"),
        (b'{"id": "number", "text": 3.5}', "text_not_string"),
        (b'{"id": "latin1", "text": "na\xefve caf\xe9"}', "bad_encoding"),
        (b'{"id": "blank", "text": "   "}', "empty_text"),
        (huge, "too_large"),
        (b'{"id": "bug", "text": "boom"}', "stage_error:length"),
        (b'{"id": "last", "text": "the end"}', None),
    ]
    source = tmp_path / "bad.jsonl"
    source.write_bytes(b"\n".join(line for line, _ in lines) + b"\n")
    out, rejected, report = tmp_path / "kept.jsonl", tmp_path / "rejected.jsonl", tmp_path / "report.json"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--stages", "length", "--rejected", rejected,
        "--report", report, "--batch-rows", "3",
    )  # fmt: skip
    assert code == 0, stderr
    expected = {n: reason for n, (_, reason) in enumerate(lines, start=1) if reason}
    rows = read_jsonl(rejected)
    assert {row["line"]: row["reason"] for row in rows} == expected
    assert [doc["id"] for doc in read_jsonl(out)] == ["good", "last"]
    data = json.loads(report.read_text())
    assert data["read"] == len(lines) == data["kept"] + data["dropped"] + data["errored"]
    assert len(rows) == data["dropped"] + data["errored"] == len(lines) - 2
    assert data["errored_by_reason"] == {reason: 1 for reason in expected.values() if reason != "too_long"}
    assert "stage_error:length" in stdout and "too_large" in stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["filter", "--in", "{tmp}/missing.jsonl", "--out", "{tmp}/o.jsonl"], "input file not found"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--stages", "aoa,nope"],
         "unknown stage 'nope'; known stages: aoa, fasttext, encoder, symbolic, frequency"),
        (["filter", "--in", "{src}", "--hf-dataset", "x/y", "--out", "{tmp}/o.jsonl"],
         "argument --hf-dataset: not allowed with argument --in"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--max-oov", "1.5"],
         "argument --max-oov: must be a fraction between 0 and 1, got 1.5"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--max-aoa", "nan"],
         "argument --max-aoa: must be finite"),
        (["filter", "--in", "{src}"], "the following arguments are required: --out"),
        (["filter", "--in", "{src}", "--out", "{src}"], "an output path is the input file"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.csv"], "cannot tell the format of 'o.csv'"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--limit", "0"],
         "--limit: must be at least 1"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--aoa-table", "{tmp}/no.csv"],
         "--aoa-table file not found"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--stages", "aoa", "--aoa-table", "{src}"],
         "cannot build the stages: AoA table"),
        (["filter", "--in", "{pq}", "--out", "{tmp}/o.jsonl", "--stages", "length"], "column 'text' not in"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--stages", "fasttext"],
         "stage 'fasttext' needs fasttext_model (command line: --fasttext-model PATH)"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--stages", "encoder", "--encoder-model", "m"],
         "aoa and fasttext must run before encoder: e.g. --stages aoa,fasttext,encoder"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--encoder-gate", "some"],
         "argument --encoder-gate: invalid choice: 'some'"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--stages", "all", "--artifacts", "{tmp}/no"],
         "--artifacts directory not found"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--tasks", "2"],
         "--tasks applies to --executor local, slurm or ray, not to the in-process run"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o/", "--executor", "local"],
         "--executor local needs --logging-dir DIR"),
        (["filter", "--hf-dataset", "x/y", "--out", "{tmp}/o/", "--executor", "local",
          "--logging-dir", "{tmp}/l"],
         "--hf-dataset streams in this process only; with --executor local give --in FILE_OR_FOLDER"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o/", "--executor", "local", "--logging-dir", "{tmp}/l",
          "--limit", "5"], "--limit applies to the in-process run only"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o.jsonl", "--executor", "local",
          "--logging-dir", "{tmp}/l"],
         "with --executor local, --out is a folder (of <rank>.jsonl.gz), not a file"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o/", "--executor", "slurm", "--logging-dir", "{tmp}/l"],
         "--executor slurm needs --slurm-partition and --slurm-time"),
        (["filter", "--in", "{src}", "--out", "{tmp}/o/", "--executor", "local", "--logging-dir", "{tmp}/l",
          "--slurm-time", "1:00:00"], "--slurm-time applies to --executor slurm only"),
        (["filter", "--in", "{tmp}", "--out", "{tmp}/o/", "--executor", "local", "--logging-dir", "{tmp}/l"],
         "/o/ is inside the input folder"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)  # fmt: skip
def test_bad_command_lines_give_one_line_and_exit_2(tmp_path, capsys, length_stage, argv, message):
    src = write_jsonl(tmp_path / "docs.jsonl", [{"text": "hello"}])
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "body.parquet")
    paths = {"tmp": tmp_path, "src": src, "pq": tmp_path / "body.parquet"}
    code, stdout, stderr = run_cli(capsys, *[a.format(**paths) for a in argv])
    assert code == 2
    assert stderr.count("\n") == 1 and message in stderr and "Traceback" not in stderr
    assert stderr.startswith(("littlekit filter: error: ", "littlekit: error: "))
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o").exists()
    assert not (tmp_path / "l").exists()  # no datatrove run started


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed here")
def test_the_ray_executor_without_ray_is_refused_in_one_line(tmp_path, capsys):
    src = write_jsonl(tmp_path / "docs.jsonl", [{"text": "hello"}])
    code, _, stderr = run_cli(
        capsys, "filter", "--in", src, "--out", f"{tmp_path}/o/", "--executor", "ray",
        "--logging-dir", tmp_path / "l",
    )  # fmt: skip
    assert code == 2 and stderr.count("\n") == 1
    assert "--executor ray needs Ray, which is not installed (pip install ray)" in stderr


def test_help_lists_the_commands(capsys):
    code, stdout, _ = run_cli(capsys, "--help")
    assert code == 0 and "filter" in stdout and "data" in stdout
    code, stdout, _ = run_cli(capsys, "filter", "--help")
    assert code == 0
    options = "--in --hf-dataset --hf-config --hf-split --out --text-field --limit --batch-rows --max-aoa"
    for option in (options + " --max-oov --stages --aoa-table --rejected --report").split():
        assert option in stdout
    code, _, stderr = run_cli(capsys)  # no command: the usage goes to stderr
    assert code == 2 and "COMMAND" in stderr


def test_data_build_is_wired_to_the_data_builder(tmp_path, capsys):
    code, stdout, _ = run_cli(capsys, "data", "build", "--help")
    assert code == 0 and "--from" in stdout
    code, _, stderr = run_cli(capsys, "data", "build", "--from", tmp_path, "--out", tmp_path / "data")
    assert code == 1 and stderr.count("\n") == 1 and "does not look like the real data folder" in stderr
    assert not (tmp_path / "data").exists()


def test_parquet_in_parquet_out_keeps_types_and_limit(tmp_path, capsys, length_stage):
    schema = pa.schema([("id", pa.int64()), ("text", pa.string()), ("score", pa.float32())])
    texts = ["short text", "far too many words for the length stage here", "", "also short"] * 5
    table = pa.table({"id": list(range(20)), "text": texts, "score": [0.5] * 20}, schema=schema)
    pq.write_table(table, tmp_path / "docs.parquet")
    out = tmp_path / "kept.parquet"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", tmp_path / "docs.parquet", "--out", out, "--stages", "length",
        "--limit", "10", "--batch-rows", "4", "--report", tmp_path / "r.json",
    )  # fmt: skip
    assert code == 0, stderr
    kept = pq.read_table(out)
    assert kept.schema == schema
    assert kept.column("id").to_pylist() == [0, 3, 4, 7, 8]
    data = json.loads((tmp_path / "r.json").read_text())
    assert (data["read"], data["kept"], data["errored_by_reason"]) == (10, 5, {"empty_text": 2})


def test_out_folder_gets_kept_rejected_and_report(tmp_path, capsys, length_stage):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"text": "short"}, {"text": ""}])
    code, _, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages", "length"
    )
    assert code == 0, stderr
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "kept.jsonl",
        "rejected.jsonl",
        "report.json",
    ]
    assert read_jsonl(tmp_path / "run" / "rejected.jsonl")[0]["reason"] == "empty_text"


def test_text_field_option_and_gzip_output(tmp_path, capsys, length_stage):
    import gzip

    source = write_jsonl(tmp_path / "docs.jsonl", [{"content": "short"}, {"text": "no content"}])
    out = tmp_path / "kept.jsonl.gz"
    code, stdout, _ = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--stages", "length", "--text-field", "content"
    )
    assert code == 0
    assert gzip.decompress(out.read_bytes()).decode() == '{"content": "short"}\n'
    assert "missing_text_field" in stdout


def test_aoa_stage_with_a_table_of_our_own(tmp_path, capsys):
    table = tmp_path / "aoa.csv"
    table.write_text(TINY_AOA, encoding="utf-8")
    source = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "easy", "text": "The cat sat on the mat."},
            {"id": "hard", "text": "quantum physics quantum physics"},
            {"id": "unknown", "text": "zzqx blorf"},
            {"id": "easy2", "text": "The dog ran home."},
        ],
    )
    out, rejected = tmp_path / "kept.jsonl", tmp_path / "rejected.jsonl"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--rejected", rejected, "--stages", "aoa",
        "--aoa-table", table, "--aoa-impute", "none",
    )  # fmt: skip
    assert code == 0, stderr
    assert [doc["id"] for doc in read_jsonl(out)] == ["easy", "easy2"]
    rows = {row["id"]: row for row in read_jsonl(rejected)}
    assert rows["hard"]["reason"] == "aoa_p95" and rows["hard"]["scores"]["aoa"]["p95_aoa"] == 15.0
    assert rows["unknown"]["reason"] == "aoa_empty"
    code, _, _ = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--stages", "aoa", "--aoa-table", table,
        "--aoa-impute", "none", "--max-aoa", "15", "--force",
    )  # fmt: skip
    assert [doc["id"] for doc in read_jsonl(out)] == ["easy", "hard", "easy2"]


DEFAULT_CASCADE_DOCS = [
    {"id": "easy", "text": "The cat sat on the mat. The dog ran home to play with the ball."},
    {"id": "algebra", "text": "The cat has x^2 + 3x = 10 apples and the dog has two."},
    {"id": "hard", "text": "Epistemological hermeneutics necessitates phenomenological juxtaposition."},
    {"id": "chemistry", "text": "The dog drank H2O and CO2 from the cup at home."},
]


def test_default_cascade_is_aoa_then_symbolic(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", DEFAULT_CASCADE_DOCS)
    code, stdout, stderr = run_cli(capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/")
    assert code == 0, stderr
    assert [doc["id"] for doc in read_jsonl(tmp_path / "run" / "kept.jsonl")] == ["easy"]
    rows = {row["id"]: row for row in read_jsonl(tmp_path / "run" / "rejected.jsonl")}
    assert {key: (row["stage"], row["reason"]) for key, row in rows.items()} == {
        "algebra": ("symbolic", "symbolic_equations"),
        "hard": ("aoa", "aoa_p95"),
        "chemistry": ("symbolic", "symbolic_chemical_formulas"),
    }
    assert set(rows["algebra"]["scores"]) == {"aoa", "symbolic"}  # passed aoa, then dropped
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [(s["stage"], s["in"], s["out"]) for s in report["stages"]] == [("aoa", 4, 3), ("symbolic", 3, 1)]
    assert "config: stages=aoa,symbolic max_aoa=12.0 max_oov=0.05" in stderr


def test_fasttext_stage_between_aoa_and_symbolic(tmp_path, capsys):
    import pandas as pd

    from littlekit.fit.fasttext import train_fasttext

    easy = ["the cat sat on the mat", "the dog ran home", "we play with the ball"]
    hard = [
        "photosynthesis converts light energy",
        "the derivative of a function",
        "molecular orbital theory",
    ]
    labelled = pd.DataFrame({"text": easy * 10 + hard * 10, "band": ["K5"] * 30 + ["K12"] * 30})
    model = tmp_path / "grade.bin"
    train_fasttext(labelled, model, epoch=20, thread=1)
    docs = [*DEFAULT_CASCADE_DOCS, {"id": "science", "text": "The light energy of the function."}]
    source = write_jsonl(tmp_path / "docs.jsonl", docs)
    out = tmp_path / "kept.jsonl"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", out, "--stages", "aoa,fasttext,symbolic",
        "--fasttext-model", model, "--report", tmp_path / "report.json",
        "--rejected", tmp_path / "rejected.jsonl",
    )  # fmt: skip
    assert code == 0, stderr
    rows = {row["id"]: row for row in read_jsonl(tmp_path / "rejected.jsonl")}
    assert (rows["science"]["stage"], rows["science"]["reason"]) == ("fasttext", "fasttext_K12")
    assert [doc["id"] for doc in read_jsonl(out)] == ["easy"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [s["stage"] for s in report["stages"]] == ["aoa", "fasttext", "symbolic"]
    assert report["stages"][1]["in"] == report["stages"][0]["out"]
    assert report["stages"][2]["in"] == report["stages"][1]["out"]
    assert report["read"] == report["kept"] + report["dropped"] + report["errored"] == len(docs)
    assert "3 symbolic" in stdout


@pytest.mark.slow  # importing datasets pulls in torch
def test_hf_streaming_input(tmp_path, capsys, length_stage):
    shard = write_jsonl(tmp_path / "shard.jsonl", [{"text": "short one", "url": "a"}, {"text": "x " * 50}])
    out = tmp_path / "kept.parquet"
    code, stdout, stderr = run_cli(
        capsys, "filter", "--hf-dataset", "json", "--hf-data-files", shard, "--out", out, "--stages", "length"
    )
    assert code == 0, stderr
    assert pq.read_table(out).to_pylist() == [{"text": "short one", "url": "a"}]
    assert "input : json (hf)" in stderr


def test_installed_console_script(tmp_path):
    script = Path(sys.executable).parent / "littlekit"
    if not script.exists():
        pytest.skip("littlekit is not installed in this environment (pip install -e .)")
    table = tmp_path / "aoa.csv"
    table.write_text(TINY_AOA, encoding="utf-8")
    source = write_jsonl(tmp_path / "docs.jsonl", [{"text": "the cat sat"}, {"text": "quantum physics"}])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    common = [
        "filter",
        "--in",
        str(source),
        "--stages",
        "aoa",
        "--aoa-table",
        str(table),
        "--aoa-impute",
        "none",
    ]
    done = subprocess.run(
        [script, *common, "--out", str(tmp_path / "kept.jsonl")], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "retention after each stage" in done.stdout
    assert read_jsonl(tmp_path / "kept.jsonl") == [{"text": "the cat sat"}]
    failed = subprocess.run([script, *common, "--out", str(tmp_path / "k.jsonl"), "--stages", "nope"],
                            capture_output=True, text=True, env=env)  # fmt: skip
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert (
        failed.stderr.strip()
        == "littlekit filter: error: unknown stage 'nope'; known stages: "
        + ", ".join(registry.known_stages())
    )


# --- --stages all --artifacts DIR, and the datatrove executors -----------------------------------

ART_AOA = {
    "the": 3.0, "cat": 3.5, "sat": 4.0, "on": 3.0, "mat": 4.5, "dog": 3.2, "ran": 4.0, "home": 4.0,
    "we": 3.0, "play": 3.5, "with": 3.0, "big": 3.0, "red": 3.0, "ball": 3.0, "square": 6.0,
    "light": 5.0, "energy": 9.0, "function": 11.0, "of": 3.0, "atom": 13.5, "quantum": 16.0,
}  # fmt: skip
K5_LINES = ["the cat sat on the mat", "the dog ran home", "we play with the big red ball"]
K12_LINES = ["the light energy function", "energy of the function", "light function energy"]
ART_DOCS = [
    {"id": "easy", "text": "the cat sat on the mat"},
    {"id": "hard", "text": "the quantum cat"},  # p95 AoA 15.75: stage 1
    {"id": "science", "text": "the light energy function"},  # AoA fine, fastText K12: stage 2
    {"id": "atom", "text": "the atom atom"},  # p95 AoA 13.5: AoA band K8
    {"id": "algebra", "text": "the cat sat on the mat x^2 + 1 = 5"},  # stage 4
    {"id": "square", "text": "the big red square"},  # "square" is in the word table: stage 5
]


def make_artifacts(root: Path, words: dict[str, float] | None = None) -> Path:
    """An artifacts directory (released layout) without the encoder: AoA table, word table, fastText."""
    import pandas as pd

    from littlekit.filter.artifacts import artifact_path, export_aoa_table, export_word_table
    from littlekit.fit.fasttext import train_fasttext

    export_aoa_table(ART_AOA, root)
    words = words or {"square": 6.0, "cat": -2.0}
    export_word_table(pd.DataFrame({"word": list(words), "beyond_score": list(words.values())}), root)
    labelled = pd.DataFrame({"text": K5_LINES * 10 + K12_LINES * 10, "band": ["K5"] * 30 + ["K12"] * 30})
    train_fasttext(labelled, artifact_path(root, "fasttext_model"), epoch=20, thread=1)
    return root


@pytest.fixture(scope="module")
def artifacts_dir(tmp_path_factory) -> Path:
    """All four artifacts; the encoder is a tiny ModernBERT built here whose classifier bias makes
    it answer K5, so the documents it passes reach stages 4 and 5 (it is run, not mocked)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from littlekit.filter.artifacts import artifact_path
    from littlekit.fit.encoder import build_tiny_modernbert

    root = make_artifacts(tmp_path_factory.mktemp("artifacts"))
    encoder = artifact_path(root, "encoder_model")
    build_tiny_modernbert(
        K5_LINES + K12_LINES, encoder, vocab_size=100, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
    )  # fmt: skip
    model = AutoModelForSequenceClassification.from_pretrained(encoder)
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([20.0, 0.0, 0.0, 0.0]))  # class 0 = K5
    model.save_pretrained(encoder)
    return root


def outcomes_by_id(path: Path) -> dict[str, tuple[str, str]]:
    return {row["id"]: (row["stage"], row["reason"]) for row in read_jsonl(path)}


@pytest.mark.slow  # builds a tiny ModernBERT (torch and transformers imports: ~10 s)
def test_stages_all_from_an_artifacts_directory(tmp_path, capsys, artifacts_dir):
    source = write_jsonl(tmp_path / "docs.jsonl", ART_DOCS)
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages", "all",
        "--artifacts", artifacts_dir, "--aoa-impute", "none", "--device", "cpu",
    )  # fmt: skip
    assert code == 0, stderr
    assert [doc["id"] for doc in read_jsonl(tmp_path / "run" / "kept.jsonl")] == ["easy"]
    assert outcomes_by_id(tmp_path / "run" / "rejected.jsonl") == {
        "hard": ("aoa", "aoa_p95"),
        "atom": ("aoa", "aoa_p95"),
        "science": ("fasttext", "fasttext_K12"),
        "algebra": ("symbolic", "symbolic_exponents"),
        "square": ("frequency", "frequency_blocklist"),
    }
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [(s["stage"], s["in"], s["out"]) for s in report["stages"]] == [
        ("aoa", 6, 4), ("fasttext", 4, 3), ("encoder", 3, 3), ("symbolic", 3, 2), ("frequency", 2, 1),
    ]  # fmt: skip
    assert report["run"]["artifacts"] == str(artifacts_dir)
    options = report["run"]["options"]
    assert options["encoder_model"] == str(artifacts_dir / "models" / "modernbert_grade")
    assert options["word_table"] == str(artifacts_dir / "data" / "word_log_odds.parquet")
    assert options["encoder_gate"] == "agree"
    assert "5 frequency" in stdout


@pytest.mark.slow  # the tiny ModernBERT of artifacts_dir, and a datatrove run
def test_the_encoder_gate_in_process_and_in_datatrove(tmp_path, capsys, artifacts_dir):
    """A looser stage 1 (--max-aoa 14) lets "the atom atom" (p95 13.5, AoA band K8) through; fastText
    says K5, so the bands disagree and the gate drops it before the encoder; --encoder-gate all
    lets the encoder score it (and keep it). The datatrove runner gates identically."""
    (tmp_path / "in").mkdir()
    source = write_jsonl(tmp_path / "in" / "docs.jsonl", ART_DOCS)
    common = ["filter", "--stages", "all", "--artifacts", artifacts_dir, "--aoa-impute", "none",
              "--device", "cpu", "--max-aoa", "14"]  # fmt: skip
    code, _, stderr = run_cli(capsys, *common, "--in", source, "--out", f"{tmp_path}/gated/")
    assert code == 0, stderr
    gated = outcomes_by_id(tmp_path / "gated" / "rejected.jsonl")
    assert gated["atom"] == ("encoder", "encoder_gate")
    row = next(r for r in read_jsonl(tmp_path / "gated" / "rejected.jsonl") if r["id"] == "atom")
    assert row["scores"]["encoder"] == {"gate_open": False, "fasttext_band": "K5", "aoa_band": "K8"}
    code, _, stderr = run_cli(
        capsys, *common, "--in", source, "--out", f"{tmp_path}/all/", "--encoder-gate", "all"
    )
    assert code == 0, stderr
    assert [doc["id"] for doc in read_jsonl(tmp_path / "all" / "kept.jsonl")] == ["easy", "atom"]

    code, stdout, stderr = run_cli(
        capsys, *common, "--in", tmp_path / "in", "--out", tmp_path / "dt_kept", "--rejected",
        tmp_path / "dt_rejected", "--executor", "local", "--logging-dir", tmp_path / "logs",
    )  # fmt: skip
    assert code == 0, stderr
    import gzip

    def rows(folder: Path) -> list[dict]:
        return [json.loads(line) for f in sorted(folder.rglob("*.jsonl.gz")) for line in gzip.open(f, "rt")]

    assert [doc["id"] for doc in rows(tmp_path / "dt_kept")] == [
        doc["id"] for doc in read_jsonl(tmp_path / "gated" / "kept.jsonl")
    ]
    from_datatrove = {
        r["id"]: (r["filter_stage"], r["filter_reason"]) for r in rows(tmp_path / "dt_rejected")
    }
    assert from_datatrove == gated
    assert json.loads((tmp_path / "logs" / "report.json").read_text())["dropped_by_stage"]["encoder"] == {
        "encoder_gate": 1
    }


def test_missing_artifacts_are_listed_in_one_message(tmp_path, capsys):
    from littlekit.filter.artifacts import export_aoa_table

    root = tmp_path / "artifacts"
    export_aoa_table(ART_AOA, root)  # only stage 1's file
    source = write_jsonl(tmp_path / "docs.jsonl", ART_DOCS)
    argv = ["filter", "--in", source, "--out", tmp_path / "o.jsonl", "--stages", "all", "--artifacts", root]
    code, _, stderr = run_cli(capsys, *argv)
    assert code == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert "--stages aoa,fasttext,encoder,symbolic,frequency cannot run" in stderr
    for missing in ("models/fasttext_grade.bin", "models/modernbert_grade", "data/word_log_odds.parquet"):
        assert f"{root}/{missing} (" in stderr
    assert "data/aoa.parquet" not in stderr
    code, _, stderr = run_cli(capsys, *argv, "--fasttext-model", tmp_path / "nope.bin")
    assert code == 2 and "--fasttext-model file not found" in stderr
    assert "models/fasttext_grade.bin" not in stderr and "models/modernbert_grade (" in stderr
    assert not (tmp_path / "o.jsonl").exists()
    code, _, stderr = run_cli(  # stages that need only what is there run
        capsys, "filter", "--in", source, "--out", tmp_path / "o.jsonl", "--stages", "aoa,symbolic",
        "--artifacts", root, "--aoa-impute", "none",
    )  # fmt: skip
    assert code == 0, stderr


def test_path_options_override_the_artifacts_directory(tmp_path, capsys):
    import pandas as pd

    from littlekit.filter.artifacts import export_word_table

    root = make_artifacts(tmp_path / "artifacts")
    source = write_jsonl(tmp_path / "docs.jsonl", ART_DOCS)

    def kept(*extra) -> list[str]:
        code, _, stderr = run_cli(
            capsys, "filter", "--in", source, "--out", tmp_path / "kept.jsonl", "--stages",
            "aoa,fasttext,symbolic,frequency", "--artifacts", root, "--aoa-impute", "none", "--force", *extra,
        )  # fmt: skip
        assert code == 0, stderr
        return [doc["id"] for doc in read_jsonl(tmp_path / "kept.jsonl")]

    assert kept() == ["easy"]  # "square" blocked by the directory's word table
    lenient = export_word_table(
        pd.DataFrame({"word": ["square"], "beyond_score": [1.0]}), tmp_path / "w.parquet"
    )
    assert kept("--word-table", lenient) == ["easy", "square"]
    strict = tmp_path / "aoa.csv"
    strict.write_text(TINY_AOA.replace("cat,3.5", "cat,15"), encoding="utf-8")
    assert kept("--aoa-table", strict) == []  # "the cat ..." now too hard; other words unknown
    (root / "models" / "fasttext_grade.bin").rename(tmp_path / "grade.bin")
    assert kept("--fasttext-model", tmp_path / "grade.bin") == ["easy"]  # not looked for in DIR


def test_the_artifacts_operating_point_applies_and_flags_override_it(tmp_path, capsys):
    from littlekit.filter.fasttext import FastTextStage
    from littlekit.filter.filter_config import OperatingPoint

    root = make_artifacts(tmp_path / "artifacts")
    source = write_jsonl(tmp_path / "docs.jsonl", ART_DOCS)
    model = FastTextStage(root / "models" / "fasttext_grade.bin")
    p_easy, p_algebra = (model.score(doc["text"])["probs"]["K5"] for doc in (ART_DOCS[0], ART_DOCS[4]))
    assert p_algebra < p_easy, "the test needs 'easy' more surely K5 than 'algebra'"
    OperatingPoint(fasttext_min_k5_prob=(p_easy + p_algebra) / 2, chosen_on="a test").save(root)

    def run(*extra) -> tuple[list[str], dict, str]:
        code, _, stderr = run_cli(
            capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages",
            "aoa,fasttext,symbolic,frequency", "--artifacts", root, "--aoa-impute", "none", "--force", *extra,
        )  # fmt: skip
        assert code == 0, stderr
        kept = [doc["id"] for doc in read_jsonl(tmp_path / "run" / "kept.jsonl")]
        return kept, outcomes_by_id(tmp_path / "run" / "rejected.jsonl"), stderr

    kept, dropped, stderr = run()
    assert kept == ["easy"]
    assert dropped["algebra"] == dropped["square"] == ("fasttext", "fasttext_low_k5_prob")
    assert f"fasttext_min_k5_prob={(p_easy + p_algebra) / 2:g}" in stderr
    kept, dropped, stderr = run("--fasttext-min-k5-prob", "released")  # the released rule
    assert kept == ["easy"] and dropped["algebra"] == ("symbolic", "symbolic_exponents")
    assert dropped["square"] == ("frequency", "frequency_blocklist") and "min_k5_prob" not in stderr
    kept, dropped, _ = run("--fasttext-min-k5-prob", "1")
    assert kept == [] and dropped["easy"] == ("fasttext", "fasttext_low_k5_prob")
    (root / "models" / "fasttext_grade.bin").rename(tmp_path / "grade.bin")
    kept, dropped, _ = run("--fasttext-model", tmp_path / "grade.bin")  # the point belongs to DIR's model
    assert dropped["algebra"] == ("symbolic", "symbolic_exponents")
    code, _, stderr = run_cli(capsys, "filter", "--in", source, "--out", tmp_path / "x.jsonl",
                              "--fasttext-min-k5-prob", "1.5")  # fmt: skip
    assert code == 2 and "must be a fraction between 0 and 1" in stderr


def test_executor_local_runs_the_stages_as_datatrove_blocks(tmp_path, capsys):
    import gzip

    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", DEFAULT_CASCADE_DOCS[:2])
    write_jsonl(tmp_path / "in" / "b.jsonl", [*DEFAULT_CASCADE_DOCS[2:], {"id": "blank", "text": " "}])
    stages = ["--stages", "aoa,symbolic", "--batch-rows", "2"]
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", tmp_path / "in", "--out", tmp_path / "kept", "--rejected",
        tmp_path / "rejected", "--executor", "local", "--tasks", "2", "--workers", "1",
        "--logging-dir", tmp_path / "logs", *stages,
    )  # fmt: skip
    assert code == 0, stderr
    kept = [json.loads(line) for f in sorted((tmp_path / "kept").glob("*.jsonl.gz")) for line in gzip.open(f)]
    assert [doc["id"] for doc in kept] == ["easy"] and set(kept[0]["littlekit_scores"]) == {"aoa", "symbolic"}
    folders = sorted(p.name for p in (tmp_path / "rejected").iterdir() if not p.name.startswith("."))
    assert folders == ["aoa", "input", "symbolic"]  # and the hidden marker of the run that wrote it
    report = json.loads((tmp_path / "logs" / "report.json").read_text())
    assert (report["read"], report["kept"], report["dropped"], report["errored"]) == (5, 1, 3, 1)
    assert report["consistent"] and (report["run"]["executor"], report["run"]["format"]) == ("local", "auto")
    assert "retention after each stage" in stdout and f"logs: {tmp_path / 'logs'}" in stdout

    source = write_jsonl(tmp_path / "all.jsonl", [*DEFAULT_CASCADE_DOCS, {"id": "blank", "text": " "}])
    code, _, _ = run_cli(capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", *stages)
    assert code == 0 and [doc["id"] for doc in read_jsonl(tmp_path / "k.jsonl")] == ["easy"]


def test_executor_slurm_submits_the_job_array(tmp_path, capsys, monkeypatch):
    """A stand-in `sbatch` on PATH records the submission; the launch script is datatrove's own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/sbatch.log\necho "Submitted batch job 4242"\n')
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text("")
    source = tmp_path / "docs"  # three files: a task per input file at most
    source.mkdir()
    for shard in range(3):
        write_jsonl(source / f"part-{shard}.jsonl", DEFAULT_CASCADE_DOCS)
    code, stdout, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", tmp_path / "kept", "--executor", "slurm",
        "--tasks", "3", "--logging-dir", tmp_path / "logs", "--slurm-partition", "cpu",
        "--slurm-time", "02:00:00", "--slurm-cpus-per-task", "4", "--slurm-mem-per-cpu-gb", "3",
        "--slurm-venv", venv,
    )  # fmt: skip
    assert code == 0, stderr
    assert "submitted to slurm: 3 tasks, stages aoa,symbolic" in stdout
    script = (tmp_path / "logs" / "launch_script.slurm").read_text()
    for line in (
        "--partition=cpu",
        "--time=02:00:00",
        "--cpus-per-task=4",
        "--mem-per-cpu=3G",
        "--array=0-2",
    ):
        assert f"#SBATCH {line}" in script
    assert f"source {venv / 'bin' / 'activate'}" in script
    assert (tmp_path / "sbatch.log").read_text().count("\n") == 2  # the array, then the stats merge
    assert not (tmp_path / "kept").exists()  # nothing ran here


def test_the_artifacts_stage_1_maximum_applies_and_the_flag_overrides_it(tmp_path, capsys):
    from littlekit.filter.filter_config import OperatingPoint

    root = make_artifacts(tmp_path / "artifacts")
    source = write_jsonl(tmp_path / "docs.jsonl", ART_DOCS[:2])  # "easy": p95 AoA about 4.4

    def run(*extra) -> tuple[dict, str]:
        code, _, stderr = run_cli(
            capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages", "aoa",
            "--artifacts", root, "--aoa-impute", "none", "--force", *extra,
        )  # fmt: skip
        assert code == 0, stderr
        return outcomes_by_id(tmp_path / "run" / "rejected.jsonl"), stderr

    dropped, stderr = run()
    assert "easy" not in dropped and "max_aoa=12.0" in stderr
    OperatingPoint(chosen_on="a test", max_aoa=4.0).save(root)
    dropped, stderr = run()
    assert dropped["easy"] == ("aoa", "aoa_p95") and "max_aoa=4.0" in stderr
    dropped, stderr = run("--max-aoa", "12")
    assert "easy" not in dropped and "max_aoa=12.0" in stderr


def test_the_artifacts_blocked_share_applies_and_the_flag_overrides_it(tmp_path, capsys):
    from littlekit.filter.filter_config import OperatingPoint

    root = make_artifacts(tmp_path / "artifacts")
    long_square = {"id": "long", "text": "The cat sat on the square mat. " + "The cat sat on the mat. " * 30}
    source = write_jsonl(tmp_path / "docs.jsonl", [ART_DOCS[0], long_square])

    def run(*extra) -> tuple[list[str], str]:
        code, _, stderr = run_cli(
            capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages",
            "aoa,symbolic,frequency", "--artifacts", root, "--aoa-impute", "none", "--force", *extra,
        )  # fmt: skip
        assert code == 0, stderr
        return [doc["id"] for doc in read_jsonl(tmp_path / "run" / "kept.jsonl")], stderr

    assert run()[0] == ["easy"]  # the released rule: one blocklisted word drops the long text
    OperatingPoint(min_blocked_share=0.01, chosen_on="a test").save(root)
    kept, stderr = run()
    assert kept == ["easy", "long"] and "min_blocked_share=0.01" in stderr  # 1 in ~190 words
    assert run("--min-blocked-share", "released")[0] == ["easy"]
    code, _, stderr = run_cli(
        capsys, "filter", "--in", source, "--out", f"{tmp_path}/o.jsonl", "--stages", "frequency",
        "--artifacts", root, "--min-blocked-share", "0",
    )  # fmt: skip
    assert code == 2 and "min_blocked_share must be in (0, 1]" in stderr
