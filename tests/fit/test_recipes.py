"""A run's inputs from earlier steps: read when present, made with the same recipe when missing."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from littlekit.fit.labels import load_labels
from littlekit.fit.recipe_encoder import run_encoder, trained_max_length
from littlekit.fit.recipe_fasttext import run_fasttext
from littlekit.fit.recipe_labels import labels_file, run_labels
from littlekit.grades import BANDS

pytest.importorskip("fasttext")


def test_missing_labels_are_rebuilt_with_chapter_2s_call_then_read(tmp_path):
    labels, note = run_labels(tmp_path, seed=0, max_per_band=6, labels="source")
    assert "did not exist" in note and "max_per_band=6" in note and "'source'" in note
    assert labels_file(tmp_path).is_file()
    assert set(labels["band"]) == set(BANDS)
    assert labels["band"].value_counts().max() <= 6
    again, note = run_labels(tmp_path, max_per_band=999)  # present: read, the cap is not applied
    assert note.startswith("Read ")
    assert again.equals(load_labels(labels_file(tmp_path)))
    assert again["id"].tolist() == labels["id"].tolist()


def test_missing_fasttext_model_is_trained_where_chapter_3_saves_it(tmp_path):
    # a small label set in the run first (the judge's default set is 14,000 labels, 60 s of training
    # on a busy core); building missing labels is the tests above
    run_labels(tmp_path, seed=0, max_per_band=12, labels="source")
    stage, note = run_fasttext(tmp_path, seed=0, max_per_band=12)
    model = tmp_path / "artifacts" / "models" / "fasttext_grade.bin"
    assert model.is_file()
    assert "did not exist" in note and "train_fasttext" in note
    assert set(stage.bands) <= set(BANDS)
    before = model.stat().st_mtime_ns
    loaded, note = run_fasttext(tmp_path)
    assert "(the run's)" in note
    assert model.stat().st_mtime_ns == before  # read, not retrained
    text = "The little dog runs to the park."
    assert loaded.score(text)["band"] == stage.score(text)["band"]


def test_encoder_is_none_until_a_complete_directory_exists(tmp_path):
    path, note = run_encoder(tmp_path)
    assert path is None and "Stage 3 is skipped" in note and "not found" in note
    model_dir = tmp_path / "artifacts" / "models" / "modernbert_grade"
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text("{}")
    path, note = run_encoder(tmp_path)
    assert path is None and "no weights" in note
    (model_dir / "model.safetensors").write_bytes(b"")
    (model_dir / "tokenizer.json").write_text("{}")
    path, note = run_encoder(tmp_path)
    assert path is None and "model.safetensors" in note  # an empty weights file is not whole
    save_file({"weight": torch.zeros(2)}, str(model_dir / "model.safetensors"))
    path, note = run_encoder(tmp_path)
    assert path == model_dir and "(the run's)" in note


def test_trained_max_length_reads_the_training_history(tmp_path):
    assert trained_max_length(tmp_path) is None
    (tmp_path / "train_history.json").write_text(json.dumps({"config": {"max_length": 128}}))
    assert trained_max_length(tmp_path) == 128


def test_missing_labels_are_the_judges_by_default(tmp_path):
    labels, note = run_labels(tmp_path)
    assert "build_labels('judge,rewrites'" in note
    judged = labels["source"].str.startswith("llm-judge:")
    rewrites = labels["source"].str.startswith("llm-rewrite:")
    assert judged[~rewrites].mean() > 0.7  # the rest: graded ARC, MathCAMPS and CommonCoreText-PD train
    assert set(labels.loc[~judged & ~rewrites, "source"]) == {
        "source-label:arc", "source-label:mathcamps", "source-label:commoncoretext"
    }
