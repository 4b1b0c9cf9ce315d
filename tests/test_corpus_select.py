"""Which documents chapters 8 and 9 train on: chapter 7's verdicts when they cover the corpus,
else the cascade from the run's artifacts, else stages 1 and 4; and the two corpora written out."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from littlekit import runs
from littlekit.lm.corpus_select import (
    FALLBACK_STAGES,
    filter_outcomes,
    read_corpus,
    training_corpora,
    write_corpus,
)

KID = "The little dog ran to the park. He played with a red ball. Then he went home to sleep."
HARD = "Mitochondrial oxidative phosphorylation couples electron transport to chemiosmotic synthesis."
MATH = "Simplify the expression x^2 + 3x^2 and write the answer."
DOCS = pd.DataFrame(
    {
        "id": ["a", "b", "c"],
        "text": [KID, HARD, MATH],
        "source": ["story", "web", "math"],
        "band": ["K5", None, None],
    }
)


def test_without_artifacts_stages_1_and_4_filter_and_the_note_says_so(tmp_path):
    result = filter_outcomes(DOCS, tmp_path / "run")
    assert result.source == "fallback" and result.stages == list(FALLBACK_STAGES)
    assert "stages 1 and 4" in result.note and "does not exist" in result.note
    verdicts = result.frame.set_index("id")
    assert list(verdicts["kept"]) == [True, False, False]
    assert verdicts.loc["b", "stage"] == "aoa" and verdicts.loc["c", "reason"].startswith("symbolic_")


def test_chapter_7_verdicts_are_reused_only_when_they_cover_every_document(tmp_path):
    run = tmp_path / "run"
    path = runs.path(run, "demo_outcomes")
    path.parent.mkdir(parents=True)
    verdicts = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "status": ["dropped", "kept", "kept"],
            "stage": ["fasttext", None, None],
            "reason": ["fasttext_K8", None, None],
            "kept": [False, True, True],
        }
    )
    verdicts.to_parquet(path)
    result = filter_outcomes(DOCS, run)
    assert result.source == "demo_outcomes" and "outcomes_demo.parquet" in result.note
    assert list(result.frame["kept"]) == [False, True, True]
    assert list(result.frame["text"]) == list(DOCS["text"])

    verdicts.iloc[:1].to_parquet(path)  # a sample: not enough
    partial = filter_outcomes(DOCS, run)
    assert partial.source == "fallback" and "covers 1 of the 3 documents" in partial.note


@pytest.mark.slow
def test_with_every_artifact_the_five_stage_cascade_runs(tmp_path):
    import torch
    from test_artifacts import build_dir

    torch.set_num_threads(1)
    run = tmp_path / "run"
    build_dir(run / "artifacts", encoder=True)
    result = filter_outcomes(DOCS, run)
    assert result.source == "cascade"
    assert result.stages == ["aoa", "fasttext", "encoder", "symbolic", "frequency"]
    assert set(result.frame["status"]) <= {"kept", "dropped"} and len(result.frame) == 3


def test_corpora_leave_out_held_out_text_and_round_trip_as_jsonl(tmp_path):
    outcomes = DOCS.assign(kept=[True, False, True])
    k5, unfiltered, shared = training_corpora(outcomes, held_out=[MATH])
    assert list(shared) == [False, False, True]
    assert list(unfiltered["id"]) == ["a", "b"] and list(k5["id"]) == ["a"]
    k5_all, unfiltered_all, _ = training_corpora(outcomes)
    assert list(k5_all["id"]) == ["a", "c"] and len(unfiltered_all) == 3

    path = write_corpus(unfiltered_all, tmp_path / "corpus.jsonl")
    back = read_corpus(path)
    assert list(back.columns) == ["id", "text", "source", "band"]
    assert list(back["text"]) == list(DOCS["text"])
    assert back.loc[0, "band"] == "K5" and pd.isna(back.loc[1, "band"])
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[1])["band"] is None
