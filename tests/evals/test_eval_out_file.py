"""What `littlekit eval curriculum` writes to --out and what it refuses to write over (issue 26).

An --out naming the --exclude training file (by the same path, a symlink, a hard link or a dotted
path) or a file of the model is refused, with or without --force, and leaves that file as it was;
an unwritable --out folder is found before the model loads; and the results file writes NaN and
infinity as null, so a strict JSON reader takes every line. Each runs `littlekit.cli.main([...])`
on files made in tmp_path.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest
from train_data import saved_curriculum_qwen3

from littlekit.cli import main
from littlekit.curriculum.export import write_jsonl
from littlekit.curriculum.generate import generate
from littlekit.curriculum.units import all_units

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def strict_loads(line: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


# --- --out naming a file the command reads -----------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "reversed")


@pytest.fixture
def training(tmp_path) -> Path:
    path = tmp_path / "mixture.jsonl"
    write_jsonl(generate(all_units(), 2, seed=0, fmt="reversed"), path)
    return path


def eval_argv(model_dir: Path, training: Path, out: Path, *extra) -> list:
    return ["eval", "curriculum", "--model", model_dir, "--band", "BEYOND", "--per-unit", "1", "--format",
            "reversed", "--max-new-tokens", "2", "--exclude", training, "--out", out, *extra]  # fmt: skip


@pytest.mark.parametrize("force", [True, False], ids=["force", "no-force"])
@pytest.mark.parametrize("how", ["same-path", "symlink", "hard-link", "dotted-path"])
def test_eval_out_that_is_the_exclude_file_is_refused(model_dir, training, tmp_path, capsys, how, force):
    before = training.read_bytes()
    out = {"same-path": training, "dotted-path": tmp_path / "." / "sub" / ".." / training.name}.get(how)
    if how == "symlink":
        out = tmp_path / "results.jsonl"
        out.symlink_to(training)
    elif how == "hard-link":
        out = tmp_path / "results.jsonl"
        os.link(training, out)
    if how == "dotted-path":
        (tmp_path / "sub").mkdir()
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out, *(["--force"] if force else [])))
    assert code == 2, err
    assert f"--out {out}" in err and f"--exclude file {training}" in err and "same file" in err, err
    assert training.read_bytes() == before


def test_eval_out_that_is_a_model_file_is_refused(model_dir, training, capsys):
    config = model_dir / "config.json"
    before = config.read_bytes()
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, config, "--force"))
    assert code == 2 and f"--model file {config}" in err, err
    assert config.read_bytes() == before


def test_eval_still_writes_a_fresh_out_and_forces_over_an_old_one(model_dir, training, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    out.write_text("old\n", encoding="utf-8")
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out, "--force"))
    assert code == 0, err
    rows = [strict_loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows and all(row["model"] == str(model_dir) for row in rows)
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, tmp_path / "file" / "x.jsonl"))
    assert code == 0, err  # a folder that is not there yet is made


def test_eval_unwritable_out_folder_is_found_before_the_model_loads(model_dir, training, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    out = blocker / "results.jsonl"
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out))
    assert code == 2 and f"--out {out}" in err and "is a file, not a folder" in err, err


# --- no bare NaN in the results' JSON lines ----------------------------------------------------


def test_eval_results_write_nan_and_infinity_as_null(tmp_path, capsys):
    from littlekit.evals.command import write_results

    results = pd.DataFrame(
        {"id": ["a", "b"], "n": [1, 1], "score": [math.nan, math.inf], "p": [[0.5, math.nan]] * 2}
    )
    path = tmp_path / "results.jsonl"
    write_results(results, path, "some-model", force=False)
    rows = [strict_loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [row["score"] for row in rows] == [None, None] and rows[0]["p"] == [0.5, None]
    assert "wrote 2" in capsys.readouterr().out
