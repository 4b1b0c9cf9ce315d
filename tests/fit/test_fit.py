"""`littlekit fit`: the artifacts folder from a data root, by the recipes the book uses."""

from __future__ import annotations

import json
import shutil

import pytest

from littlekit.cli import main
from littlekit.filter.artifacts import artifact_problems
from littlekit.filter.filter_config import read_operating_point
from littlekit.fit import recipe_fasttext
from littlekit.fit.labels import load_labels

pytest.importorskip("fasttext")


def test_a_step_whose_input_is_missing_says_which_step_makes_it(tmp_path, capsys):
    code = main(["fit", "fasttext", "--out", str(tmp_path / "artifacts")])
    err = capsys.readouterr().err
    assert code == 1
    assert "labels/train_labels.jsonl is missing" in err and "`littlekit fit labels`" in err


def test_an_unknown_step_is_a_usage_error(tmp_path, capsys):
    assert main(["fit", "everything", "--out", str(tmp_path)]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_labels_then_fasttext_write_the_released_layout_and_a_point(tmp_path, capsys):
    out = tmp_path / "run" / "artifacts"
    assert main(["fit", "labels", "--out", str(out), "--sample-per-band", "30"]) == 0
    labels = load_labels(tmp_path / "run" / "labels" / "train_labels.jsonl")
    assert labels["band"].value_counts().max() <= 30
    assert labels["source"].str.startswith("llm-judge:").any()
    assert main(["fit", "fasttext", "--out", str(out)]) == 0
    assert (out / "models" / "fasttext_grade.bin").is_file()
    assert (tmp_path / "run" / "fasttext" / "oof_scores.parquet").is_file()
    point = read_operating_point(out)
    assert point is not None and point.target == recipe_fasttext.FastTextRecipe().beyond_keep_target
    printed = capsys.readouterr().out
    assert "[1/1] fasttext" in printed and "out of fold" in printed


def test_the_fasttext_step_equals_the_recipe_called_directly(tmp_path):
    """The command and a direct recipe call (what the book makes) give the same point."""
    out = tmp_path / "run" / "artifacts"
    assert main(["fit", "labels", "--out", str(out), "--sample-per-band", "30"]) == 0
    assert main(["fit", "fasttext", "--out", str(out)]) == 0
    labels = load_labels(tmp_path / "run" / "labels" / "train_labels.jsonl")
    tuning, _ = recipe_fasttext.tune_fasttext_point(labels, recipe_fasttext.FastTextRecipe())
    assert read_operating_point(out).fasttext_min_k5_prob == tuning.point.fasttext_min_k5_prob


def test_fit_all_writes_every_artifact_the_full_filter_needs(quick_fit_run, tmp_path):
    """On the session's `fit all` (conftest: the defaults but for the sample sizes), copied."""
    shutil.copytree(quick_fit_run, tmp_path / "run")
    out = tmp_path / "run" / "artifacts"
    assert artifact_problems(out, "all") == []
    assert (out / "README.md").is_file() and (out / "filter_config.json").is_file()
    assert "over 800 documents" in (out / "README.md").read_text()  # the word table's pools: a sample
    for name in (
        "operating_point_pooled.json", "operating_point_every_kind.json", "oof_scores.parquet",
        "loco_scores.parquet",
    ):
        assert (tmp_path / "run" / "encoder" / name).is_file()
    config = json.loads((out / "filter_config.json").read_text())
    assert "at most 0.025" in config["details"]["rule"]  # the default: the paper's error rates, pooled
    every_kind = json.loads((tmp_path / "run" / "encoder" / "operating_point_every_kind.json").read_text())
    assert "left out of the models" in every_kind["details"]["rule"]  # it must hold per held-out corpus
    assert (tmp_path / "run" / "frequency" / "blocked_share_sweep.csv").is_file()
    assert config["chosen_on"].startswith("out-of-fold fastText and encoder")
    # stage 3's grade head, fitted on out-of-fold scores, sits beside the encoder, where stage 3 finds it
    head_file = out / "models" / "modernbert_grade" / "grade_head.json"
    assert head_file.is_file() and (tmp_path / "run" / "encoder" / "grade_head.json").is_file()
    assert "stage_3_score" in config["details"]
    from littlekit.filter.encoder import EncoderStage

    assert EncoderStage(head_file.parent, device="cpu").grade_head is not None
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "a", "text": "The cat sat on the mat. It was a sunny day and the dog ran."}) + "\n"
    )
    assert main(["filter", "--in", str(docs), "--out", str(tmp_path / "kept.jsonl"), "--stages", "all",
                 "--artifacts", str(out), "--quiet"]) == 0


def test_the_corpus_holdout_can_be_left_out_of_the_point(tmp_path):
    out = tmp_path / "run" / "artifacts"
    steps = [["fit", step, "--out", str(out), "--sample-per-band", "30", "--train-sample-size", "60"]
             for step in ("labels", "aoa", "fasttext", "encoder")]
    for argv in steps:
        assert main(argv) == 0
    assert main([*steps[-1][:1], "operating-point", *steps[-1][2:], "--no-corpus-holdout"]) == 0
    config = json.loads((out / "filter_config.json").read_text())
    assert "left out of the models" not in config["details"]["rule"]
    assert not (tmp_path / "run" / "encoder" / "loco_scores.parquet").exists()
    # --no-grade-head: stage 3 is the encoder's argmax, and no head is left beside it
    assert main([*steps[-1][:1], "operating-point", *steps[-1][2:], "--no-corpus-holdout", "--no-grade-head",
                 "--force"]) == 0  # fmt: skip
    config = json.loads((out / "filter_config.json").read_text())
    assert "stage_3_score" not in config["details"]
    assert not (out / "models" / "modernbert_grade" / "grade_head.json").exists()
