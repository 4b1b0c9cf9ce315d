"""`littlekit eval --list` and `littlekit eval NAME`: every benchmark the book uses is registered
once (`littlekit.evals.registry`) and runs from the command line on a real tiny Qwen3 folder, on a
handful of items; bad names and missing files are one line and exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from train_data import saved_curriculum_qwen3

from littlekit.cli import main
from littlekit.evals import registry

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

COMTA_FIXTURE = Path(__file__).parents[1] / "fixtures" / "comta" / "CoMTA_fixture.json"
BOOK = {"curriculum", "clear", "comta", "jeopardy", "mathcamps"}  # chapters 10-13


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A random tiny Qwen3 over a BPE of curriculum texts, saved as save_pretrained."""
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "plain", max_positions=512)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_names_every_benchmark_the_book_uses_one_line_each(capsys):
    code, out, _ = run(["eval", "--list"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == registry.names()
    assert set(registry.names()) == BOOK and len(lines) == len(BOOK)
    for benchmark, line in zip(registry.BENCHMARKS, lines, strict=True):
        assert benchmark.measures in line and f"({benchmark.paper})" in line


def test_an_unknown_name_is_one_line_naming_the_known_ones(capsys):
    code, _, err = run(["eval", "perplexity", "--model", "x"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "'perplexity'" in err and all(name in err for name in BOOK)
    with pytest.raises(Exception, match="unknown benchmark 'perplexity'; known: curriculum, clear"):
        registry.get("perplexity")
    code, _, err = run(["eval"], capsys)  # no name: the help, which lists them
    assert code == 2 and all(name in err for name in BOOK)


def read_table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def test_clear_bpb_by_easiness_bin(model_dir, tmp_path, capsys):
    out = tmp_path / "clear.csv"
    argv = ["eval", "clear", "--model", str(model_dir), "--per-bin", "1", "--n-boot", "20",
            "--max-length", "128", "--out", str(out)]  # fmt: skip
    code, printed, err = run(argv, capsys)
    assert code == 0, err
    table = read_table(out)
    assert list(table["bin"]) == list(range(11)) and table["docs"].tolist() == [1] * 11
    assert table["bpb"].between(0.5, 20).all() and (table["ci_low"] <= table["ci_high"]).all()
    assert "clear" in printed and "0.5 to 0" in printed and f"wrote the table (11 rows) to {out}" in printed
    code, _, err = run(argv, capsys)  # never overwritten without --force
    assert code == 2 and "exists; pass --force" in err and err.count("\n") == 1


def test_clear_table_is_the_benchmark_s_own_steps(model_dir):
    from littlekit.evals.benchmark import load_model

    benchmark = registry.get("clear")
    settings = benchmark.settings(model=model_dir, per_bin=1, n_boot=20, max_length=128)
    scored, table = benchmark.evaluate(*load_model(str(model_dir), "cpu"), settings)
    assert len(scored) == 11 and table["docs"].sum() == 11
    assert table["bytes"].sum() == scored["bytes"].sum()
    with pytest.raises(TypeError, match="no setting"):
        benchmark.settings(per_standard=3)


def test_comta_bpb_by_category_and_split(model_dir, tmp_path, capsys):
    out = tmp_path / "comta.csv"
    argv = ["eval", "comta", "--model", str(model_dir), "--comta", str(COMTA_FIXTURE), "--out", str(out)]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    table = read_table(out)
    assert list(zip(table["level"], table["group"], strict=True)) == [
        ("category", "Elementary"), ("category", "Algebra"), ("category", "Trigonometry"),
        ("category", "Calculus"), ("split", "K-5"), ("split", "Beyond K-5"),
    ]  # fmt: skip
    assert table["bpb"].between(0.5, 20).all()
    split = table[table["level"] == "split"]
    assert split["turns"].sum() == table[table["level"] == "category"]["turns"].sum()
    code, _, err = run(["eval", "comta", "--model", str(model_dir)], capsys)
    assert code == 2 and "CoMTA_dataset.json (not shipped" in err and err.count("\n") == 1
    code, _, err = run([*argv[:5], str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "missing.json is not a file" in err


def test_jeopardy_pass_at_1_and_bpb_by_split(model_dir, tmp_path, capsys):
    out = tmp_path / "jeopardy.csv"
    argv = ["eval", "jeopardy", "--model", str(model_dir), "--per-split", "3", "--max-new-tokens", "4",
            "--out", str(out)]  # fmt: skip
    code, printed, err = run(argv, capsys)
    assert code == 0, err
    table = read_table(out)
    assert list(table["split"]) == ["K-5", "Beyond K-5"] and list(table["n"]) == [3, 3]
    assert table["accuracy"].between(0, 1).all() and table["bpb"].between(0.5, 40).all()
    assert "6 item(s) scored" in printed
    code, _, err = run(["eval", "jeopardy", "--model", str(model_dir), "--clues", str(out)], capsys)
    assert code == 2 and "--clues and --labels go together" in err and err.count("\n") == 1


def test_mathcamps_pass_at_k_by_band_and_grade(model_dir, tmp_path, capsys):
    out = tmp_path / "mathcamps.csv"
    argv = ["eval", "mathcamps", "--model", str(model_dir), "--per-standard", "1", "--samples", "2",
            "--max-new-tokens", "3", "--backend", "transformers", "--out", str(out)]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    table = read_table(out)
    assert sorted(set(table["k"])) == [1, 2]
    bands = table[(table["by"] == "band") & (table["k"] == 1)]
    grades = table[(table["by"] == "grade") & (table["k"] == 1)]
    assert set(bands["group"]) == {"K-5", "Beyond K-5"}
    assert bands["problems"].sum() == grades["problems"].sum() > 0
    assert table["pass_at_k"].between(0, 1).all()
    code, _, err = run([*argv[:4], "--samples", "2", "--temperature", "0"], capsys)
    assert code == 2 and "needs --temperature > 0" in err and err.count("\n") == 1


def test_curriculum_runs_from_the_registry_as_before(model_dir, capsys):
    argv = ["eval", "curriculum", "--model", str(model_dir), "--band", "K5", "--per-unit", "1",
            "--format", "plain", "--max-new-tokens", "4"]  # fmt: skip
    code, printed, err = run(argv, capsys)
    assert code == 0, err
    assert "accuracy K5 = " in printed and "held out by seed only" in printed
