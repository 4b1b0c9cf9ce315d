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
    path = runs.path(run, "pool_outcomes")
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
    assert result.source == "pool_outcomes" and "outcomes_pool.parquet" in result.note
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


def test_the_unfiltered_corpus_is_the_whole_pool_and_the_k5_corpus_what_the_filter_kept():
    outcomes = pd.DataFrame({
        "id": ["a", "b", "c", "d"],
        "text": ["a web page", "a story for children", "another web page", "a shared passage here"],
        "web": [True, False, True, True],
        "kept": [False, True, True, True],
    })
    k5, unfiltered, shared = training_corpora(outcomes, held_out=["a shared passage here"], n=3)
    assert list(k5["id"]) == ["b", "c"]  # kept, web or not
    assert list(unfiltered["id"]) == ["a", "b", "c"]  # the same pool, kept or not: one pool, two draws
    assert list(shared) == [False, False, False, True]


def test_the_evaluation_sets_name_every_benchmark_a_chapter_scores():
    from littlekit.lm.corpus_select import evaluation_texts

    texts = evaluation_texts()
    assert set(texts) == {"CommonCoreText-PD validation", "CLEAR", "science clues", "MathCAMPS", "GSM8K test"}
    assert all(len(v) > 100 for v in texts.values())
    assert "Green plants need this, coming from the sun, to make their own food" in texts["science clues"]


def test_draw_shares_group_small_families_and_sum_to_one():
    from littlekit.lm.corpus_select import draw_shares

    pool = pd.DataFrame({"family": ["web", "web", "kids", "tiny"], "n_readable": [50, 40, 9, 1]})
    draw = pd.DataFrame({"family": ["kids", "web"], "n_readable": [30, 70]})
    shares = draw_shares({"pool": pool, "draw": draw}, min_share=0.05)
    assert list(shares.columns) == ["web", "kids", "other"]
    assert shares.loc["pool", "web"] == pytest.approx(0.9)
    assert shares.loc["draw", "kids"] == pytest.approx(0.3)
    assert shares.sum(axis=1).tolist() == pytest.approx([1.0, 1.0])


def test_the_pretraining_pool_is_the_demo_corpus_and_the_judge_passages_once_each():
    from littlekit.databuild import corpora
    from littlekit.lm.corpus_select import POOL_COLUMNS, pretraining_pool

    pool = pretraining_pool()
    assert list(pool.columns) == list(POOL_COLUMNS)
    assert pool["id"].is_unique and pool["text"].is_unique
    demo = pool[pool["origin"] == "demo corpus"]
    assert len(demo) >= len(corpora.load_demo_corpus()) - 1  # one demo text occurs twice
    judged = pool[pool["origin"] == "judge labels"]
    assert judged["id"].str.startswith("judge:").all() and len(judged) > 7000
    assert set(judged.loc[judged["web"], "family"]) >= {"dclm", "fineweb", "simplewiki"}
    assert not judged.loc[judged["family"].str.startswith("kids:"), "web"].any()
    web_families = {"dclm", "dolma_cc", "fineweb_edu", "scrapinghub", "wikitext2"}
    assert set(demo.loc[demo["web"], "family"]) == web_families


def test_composition_counts_documents_and_megabytes_per_family_with_a_total():
    from littlekit.lm.corpus_select import composition

    pool = pd.DataFrame({
        "text": ["ab", "cde", "é"],
        "origin": ["demo corpus", "demo corpus", "judge labels"],
        "family": ["dclm", "tinystories", "simplewiki"],
        "n_tokens": [3, 4, 5],
        "n_readable": [3, 3, 3],
    })
    table = composition({"all": pool, "some": pool.iloc[:1][["text", "origin", "family"]]})
    assert list(table.columns.get_level_values(0).unique()) == ["all", "some"]
    assert table.loc[("total", ""), ("all", "documents")] == 3
    assert table.loc[("total", ""), ("all", "MB")] == pytest.approx(7e-6)  # "é" is two bytes
    assert table.loc[("total", ""), ("all", "readable tokens")] == 9
    assert table.loc[("judge labels", "simplewiki"), ("some", "documents")] == 0
    assert ("some", "tokens") not in table.columns
    by_origin = composition({"all": pool}, by=["origin"])
    assert list(by_origin.index) == ["demo corpus", "judge labels", "total"]
