"""CLEAR easiness bins and per-bin corpus-level BPB, checked on a real tiny Qwen3 and tokenizer."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from train_data import nano_lm

from littlekit.databuild import corpora
from littlekit.evals.bpb import corpus_bpb
from littlekit.evals.clear import (
    PAPER_EDGES,
    assign_bins,
    bin_bootstrap_ci,
    bin_counts,
    bin_table,
    bootstrap_slopes,
    clear_bpb,
    easiness_slopes,
    quantile_edges,
    sample_per_bin,
)
from littlekit.lm.sizes import build_model

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def clear() -> pd.DataFrame:
    return corpora.load_clear()


def test_bin_table_covers_the_paper_range_with_extremes_reported_or_folded():
    table = bin_table()
    assert len(table) == len(PAPER_EDGES) + 1 == 11
    assert table["label"].iloc[0] == "> 0.5" and table["label"].iloc[-1] == "<= -2.4"
    assert table["label"].iloc[1] == "0.5 to 0" and table["label"].iloc[-2] == "-1.9 to -2.4"
    assert (table["high"].iloc[1:].to_numpy() == table["low"].iloc[:-1].to_numpy()).all(), (
        "bins tile the line"
    )
    folded = bin_table(fold_extremes=True)
    assert len(folded) == 9
    assert folded["high"].iloc[0] == np.inf and folded["low"].iloc[-1] == -np.inf
    assert folded["label"].iloc[0] == "> 0" and folded["label"].iloc[-1] == "<= -1.9"


def test_assign_bins_edges_and_extremes():
    values = [3.0, 0.5, 0.4999, 0.0, -0.3001, -2.4, -2.3999, -9.0]
    assert assign_bins(values).tolist() == [0, 1, 1, 2, 3, 10, 9, 10]
    assert assign_bins(values, fold_extremes=True).tolist() == [0, 0, 0, 1, 2, 8, 8, 8]
    assert assign_bins([0.2, -0.7], edges=(1.0, 0.0, -1.0)).tolist() == [1, 2]
    with pytest.raises(ValueError, match="missing"):
        assign_bins([0.1, float("nan")])
    with pytest.raises(ValueError, match="decreasing"):
        bin_table((0.0, 0.5, -1.0))


def test_counts_on_clear_add_up_and_match_equal_count_bins(clear):
    counts = bin_counts(clear["bt_easiness"])
    assert counts["count"].sum() == len(clear) == 4724
    assert bin_counts(clear["bt_easiness"], fold_extremes=True)["count"].sum() == len(clear)
    assert counts["count"].min() > 250 and counts["count"].max() < 600, counts
    # the paper's unequal tick spacing is close to eleven equal-count bins of CLEAR
    assert np.allclose(quantile_edges(clear["bt_easiness"], 11), PAPER_EDGES, atol=0.1)


def test_sample_per_bin_is_seeded_and_capped(clear):
    frame = clear.assign(bin=assign_bins(clear["bt_easiness"]))
    a = sample_per_bin(frame, 5, seed=1)
    assert (a.groupby("bin").size() == 5).all() and a["bin"].nunique() == 11
    assert a.index.equals(sample_per_bin(frame, 5, seed=1).index)
    assert not a.index.equals(sample_per_bin(frame, 5, seed=2).index)
    assert sample_per_bin(frame, None) is frame
    with pytest.raises(ValueError):
        sample_per_bin(frame, 0)


@pytest.fixture(scope="module")
def tiny_lm(clear):
    texts = [t[:160] for t in clear["text"].head(200)]
    return nano_lm(texts, vocab_size=400)


@torch.no_grad()
def direct_nats(model, tokenizer, text: str) -> float:
    """Σ -log p(token | BOS and all tokens before it), from one unpadded forward pass."""
    ids = [tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]
    logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1].double(), dim=-1)
    return -logp.gather(1, torch.tensor(ids[1:])[:, None]).sum().item()


def test_per_bin_bpb_is_the_corpus_level_definition(clear, tiny_lm):
    model, tokenizer = tiny_lm
    # short (one window each, quick) and of unequal lengths, so a mean of documents would differ
    small = clear.assign(text=[t[: 30 + (i * 53) % 97] for i, t in enumerate(clear["text"])])
    results, docs = clear_bpb({"tiny": tiny_lm}, small, per_bin=3, seed=0, batch_size=4)
    scored = small.set_index("id").loc[docs["id"]].reset_index()
    assert len(scored) == 33 and len(results) == 11 and docs["id"].is_unique
    assert results["docs"].sum() == len(scored) and (results["docs"] == 3).all()
    scored_bins = assign_bins(scored["bt_easiness"])
    assert (scored_bins == docs["bin"].to_numpy()).all()
    assert (docs["bytes"] == scored["text"].map(lambda t: len(t.encode("utf-8")))).all()
    for row in results.itertuples():
        texts = scored.loc[scored_bins == row.bin, "text"].tolist()
        nats = [direct_nats(model, tokenizer, t) for t in texts]
        n_bytes = [len(t.encode("utf-8")) for t in texts]
        assert row.bytes == sum(n_bytes)
        assert row.nats == pytest.approx(sum(nats), rel=1e-5)
        assert row.bpb == pytest.approx(sum(nats) / (math.log(2) * sum(n_bytes)), rel=1e-5)
        mean_of_docs = np.mean([n / (math.log(2) * b) for n, b in zip(nats, n_bytes, strict=True)])
        assert abs(row.bpb - mean_of_docs) > 1e-4, "a bin's value is not the mean of its documents' values"
        assert row.mean_easiness == pytest.approx(scored.loc[scored_bins == row.bin, "bt_easiness"].mean())
    whole = corpus_bpb(model, tokenizer, scored["text"].tolist())
    assert results["nats"].sum() == pytest.approx(whole["nats"], rel=1e-6)
    assert results["bytes"].sum() == whole["bytes"]


def test_clear_bpb_scores_the_same_excerpts_for_every_model(clear, tiny_lm):
    model, tokenizer = tiny_lm
    other = build_model(model.config).eval()
    small = clear.head(400).assign(text=lambda f: f["text"].str.slice(0, 60))
    results, docs = clear_bpb({"a": tiny_lm, "b": (other, tokenizer)}, small, per_bin=2, fold_extremes=True)
    a, b = (results[results["model"] == m].set_index("bin") for m in ("a", "b"))
    assert (a["bytes"] == b["bytes"]).all() and (a["docs"] == b["docs"]).all()
    assert not np.allclose(a["bpb"].dropna(), b["bpb"].dropna())
    assert len(a) == 9
    ids = docs.groupby("model")["id"].apply(tuple)
    assert ids["a"] == ids["b"], "the same excerpts, in the same order"
    with pytest.raises(ValueError, match="no models"):
        clear_bpb({}, small)
    with pytest.raises(ValueError, match="bt_easiness"):
        clear_bpb({"a": tiny_lm}, small.drop(columns="bt_easiness"))


def test_empty_bins_have_no_bpb_and_slopes_use_bins_with_data(clear, tiny_lm):
    small = clear[clear["bt_easiness"] > -0.5].head(40).assign(text=lambda f: f["text"].str.slice(0, 50))
    results, _ = clear_bpb({"tiny": tiny_lm}, small, per_bin=2)
    empty = results[results["docs"] == 0]
    assert len(empty) == 7 and empty["bpb"].isna().all() and (empty["bytes"] == 0).all()
    assert easiness_slopes(results).loc["tiny", "easiest_bpb"] == results["bpb"].iloc[0]


def test_easiness_slopes_recover_a_known_line():
    rows = []
    for model, slope in (("steep", -0.2), ("flat", 0.0)):
        for i, e in enumerate((0.7, 0.2, -0.4, -1.1, -2.6)):
            rows.append({"model": model, "bin": i, "mean_easiness": e, "bpb": 1.0 + slope * e})
    slopes = easiness_slopes(pd.DataFrame(rows))
    assert slopes.loc["steep", "slope"] == pytest.approx(-0.2)
    assert slopes.loc["steep", "rise_per_unit"] == pytest.approx(0.2)
    assert slopes.loc["steep", "hardest_minus_easiest"] == pytest.approx(0.2 * 3.3)
    assert slopes.loc["flat", "slope"] == pytest.approx(0.0, abs=1e-12)


def test_bootstrap_of_the_rise_is_paired_and_matches_the_point_estimate(clear, tiny_lm):
    model, tokenizer = tiny_lm
    small = clear.assign(text=[t[: 30 + (i * 53) % 97] for i, t in enumerate(clear["text"])])
    twin = build_model(model.config).eval()
    twin.load_state_dict(model.state_dict())
    other = build_model(model.config).eval()
    models = {"tiny": tiny_lm, "twin": (twin, tokenizer), "other": (other, tokenizer)}
    results, docs = clear_bpb(models, small, per_bin=4, seed=3)
    boot = bootstrap_slopes(docs, n_boot=200, seed=0)
    slopes = easiness_slopes(results)
    for name in models:
        assert boot.loc[name, "rise_per_unit"] == pytest.approx(slopes.loc[name, "rise_per_unit"], rel=1e-9)
        assert boot.loc[name, "ci_low"] <= boot.loc[name, "rise_per_unit"] <= boot.loc[name, "ci_high"]
    same = boot.loc["tiny - twin"]
    assert abs(same["ci_low"]) < 1e-6 and abs(same["ci_high"]) < 1e-6, "identical models: paired difference 0"
    diff = boot.loc["tiny - other"]
    assert diff["ci_high"] - diff["ci_low"] > 1e-4
    assert bootstrap_slopes(docs, n_boot=50, seed=1).equals(bootstrap_slopes(docs, n_boot=50, seed=1))
    ci = bin_bootstrap_ci(docs, n_boot=200).merge(results, on=["model", "bin"])
    assert len(ci) == len(results) == 33
    assert (ci["ci_low"] <= ci["bpb"] + 1e-12).all() and (ci["bpb"] <= ci["ci_high"] + 1e-12).all()
    assert (ci["ci_high"] > ci["ci_low"]).all()
    with pytest.raises(ValueError, match="two bins"):
        bootstrap_slopes(docs[docs["bin"] == 0])
