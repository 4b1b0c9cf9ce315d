"""corpus_bpb against a direct token-by-token computation on a real tiny Qwen3 and tokenizer."""

from __future__ import annotations

import math
import random

import pytest
import torch
from train_data import tiny_qwen3
from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM

from littlekit.evals.bpb import (
    bpb_by,
    bpb_from_token_losses,
    corpus_bpb,
    paired_bootstrap_table,
    sliding_windows,
    stream_bpb,
)
from littlekit.lm.shards import write_shards
from littlekit.lm.tokenizer import train_tokenizer

WORDS = "the cat dog sun ran sat hop big red blue fish tree café naïve 12 345 🙂 play jump".split()


def make_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.choice([1, 2, 5, 9]))) for _ in range(n)]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return train_tokenizer(make_texts(300, 0), vocab_size=300)


@pytest.fixture(scope="module")
def model(tokenizer) -> Qwen3ForCausalLM:
    return tiny_qwen3(tokenizer)


def ids_of(tokenizer, text: str) -> list[int]:
    return [tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]


@torch.no_grad()
def token_nats(model, ids: list[int], target: int, context_start: int = 0) -> float:
    """-log p(ids[target] | ids[context_start:target]), one forward pass per token."""
    logits = model(torch.tensor([ids[context_start:target]])).logits[0, -1]
    return -torch.log_softmax(logits.double(), dim=-1)[ids[target]].item()


def window_context_start(target: int, n_ids: int, max_length: int, stride: int) -> int:
    """The policy written out per target: windows end at L, L+s, L+2s, ... (capped at n) and
    span at most L ids; a target belongs to the first window whose end lies beyond it."""
    end = min(max_length, n_ids)
    while target >= end:
        end = min(end + stride, n_ids)
    return max(0, end - max_length)


def test_short_documents_match_direct_computation(model, tokenizer):
    texts = make_texts(6, 1) + ["naïve café 🙂 12"]
    result = corpus_bpb(model, tokenizer, texts, max_length=64, stride=32, batch_size=3)
    nats = n_tokens = 0
    for text in texts:
        ids = ids_of(tokenizer, text)
        assert len(ids) <= 64
        nats += sum(token_nats(model, ids, t) for t in range(1, len(ids)))
        n_tokens += len(ids) - 1
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    assert result["tokens"] == n_tokens and result["bytes"] == n_bytes and result["docs"] == len(texts)
    assert result["nats"] == pytest.approx(nats, rel=1e-6)
    assert result["bpb"] == pytest.approx(nats / (math.log(2) * n_bytes), abs=1e-5)
    per_doc_mean = sum(
        corpus_bpb(model, tokenizer, [t], max_length=64, stride=32)["bpb"] for t in texts
    ) / len(texts)
    assert abs(result["bpb"] - per_doc_mean) > 1e-3, "the corpus value is not a mean of document values"


def test_long_document_uses_the_sliding_window(model, tokenizer):
    text = " ".join(make_texts(12, 2))
    ids = ids_of(tokenizer, text)
    max_length, stride = 16, 6
    assert len(ids) > 3 * max_length
    result = corpus_bpb(model, tokenizer, [text], max_length=max_length, stride=stride, batch_size=4)
    windowed = sum(
        token_nats(model, ids, t, window_context_start(t, len(ids), max_length, stride))
        for t in range(1, len(ids))
    )
    with torch.no_grad():  # full context for every target: one causal pass over the whole document
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1].double(), dim=-1)
    full_context = -logp.gather(1, torch.tensor(ids[1:])[:, None]).sum().item()
    assert result["tokens"] == len(ids) - 1
    assert result["nats"] == pytest.approx(windowed, rel=1e-6)
    assert result["bpb"] == pytest.approx(windowed / (math.log(2) * len(text.encode())), abs=1e-5)
    assert abs(windowed - full_context) > 1e-2, "the window must actually cut context in this test"


def test_window_policy_scores_each_target_once_with_bounded_context():
    for n_ids in (1, 2, 15, 16, 17, 40, 101):
        for max_length, stride in ((16, 6), (16, 15), (8, 1)):
            windows = sliding_windows(n_ids, max_length, stride)
            targets = [t for _, end, lo in windows for t in range(lo, end)]
            assert targets == list(range(1, n_ids))
            for start, end, lo in windows:
                assert end - start <= max_length and start < lo
                if start > 0:
                    assert lo - start >= max_length - stride
    with pytest.raises(ValueError):
        sliding_windows(10, 8, 8)


def test_batched_equals_unbatched(model, tokenizer):
    texts = make_texts(9, 3) + [" ".join(make_texts(8, 4))]
    kwargs = {"max_length": 20, "stride": 7, "per_doc": True}
    one = corpus_bpb(model, tokenizer, texts, batch_size=1, **kwargs)
    many = corpus_bpb(model, tokenizer, texts, batch_size=5, **kwargs)
    assert many["bpb"] == pytest.approx(one["bpb"], abs=1e-5)
    for a, b in zip(one["per_doc"], many["per_doc"], strict=True):
        assert a["nats"] == pytest.approx(b["nats"], rel=1e-5, abs=1e-5)
        assert a["bytes"] == b["bytes"] and a["tokens"] == b["tokens"]


def test_context_pairs_score_only_the_text(model, tokenizer):
    context, text = "the cat sat", " big red fish"
    result = corpus_bpb(model, tokenizer, [(context, text)], max_length=64, stride=32)
    head = tokenizer(context, add_special_tokens=False)["input_ids"]
    body = tokenizer(text, add_special_tokens=False)["input_ids"]
    ids = [tokenizer.bos_token_id, *head, *body]
    direct = sum(token_nats(model, ids, t) for t in range(1 + len(head), len(ids)))
    assert result["tokens"] == len(body) and result["bytes"] == len(text.encode())
    assert result["nats"] == pytest.approx(direct, rel=1e-6)


def test_training_stream_bpb_matches_corpus_bpb(model, tokenizer, tmp_path):
    texts = make_texts(11, 5)
    write_shards(texts, tokenizer, tmp_path, shard_tokens=40)
    reference = corpus_bpb(model, tokenizer, texts, max_length=32, stride=16)
    unpacked = stream_bpb(model, tmp_path, seq_len=31, batch_size=4, pack=False)
    for key in ("bytes", "tokens"):
        assert unpacked[key] == reference[key]
    assert unpacked["bpb"] == pytest.approx(reference["bpb"], abs=1e-5)
    packed = stream_bpb(model, tmp_path, seq_len=31, batch_size=2)
    ranks = [stream_bpb(model, tmp_path, 31, 2, rank=r, world_size=2) for r in (0, 1)]
    assert sum(r["bytes"] for r in ranks) == packed["bytes"] == reference["bytes"]
    assert sum(r["tokens"] for r in ranks) == packed["tokens"] == reference["tokens"]
    assert sum(r["nats"] for r in ranks) == pytest.approx(packed["nats"], rel=1e-6)
    assert packed["nats"] != pytest.approx(reference["nats"], rel=1e-6), (
        "packing adds earlier documents as context"
    )


def test_model_mode_is_restored(model, tokenizer):
    model.train()
    try:
        corpus_bpb(model, tokenizer, ["the cat"], max_length=16, stride=8)
        assert model.training
    finally:
        model.eval()


def test_bpb_from_token_losses():
    assert bpb_from_token_losses(math.log(2) * 10, 10) == pytest.approx(1.0)
    assert bpb_from_token_losses(3.0, 2) == pytest.approx(3.0 / (2 * math.log(2)))
    with pytest.raises(ValueError):
        bpb_from_token_losses(1.0, 0)


def test_paired_bootstrap_table():
    boots = [[1.0, 0.0], [2.0, 1.0], [3.0, 1.0], [4.0, 2.0], [5.0, 2.0]]
    table = paired_bootstrap_table(["a", "b"], [3.0, 1.0], boots, confidence=0.5, value="slope")
    assert list(table.index) == ["a", "b", "a - b"]
    assert table.loc["a", "slope"] == 3.0 and table.loc["a - b", "slope"] == 2.0
    assert (table.loc["a", "ci_low"], table.loc["a", "ci_high"]) == (2.0, 4.0)  # quartiles of 1..5
    assert (table.loc["a - b", "ci_low"], table.loc["a - b", "ci_high"]) == (1.0, 2.0)  # of 1, 1, 2, 2, 3


def test_bpb_by_sums_nats_and_bytes_per_group_before_dividing(model, tokenizer):
    import pandas as pd

    texts = make_texts(6, seed=3)
    grades = ["K", "1", "K", "8", "1", "K"]
    scored = corpus_bpb(model, tokenizer, texts, per_doc=True)
    docs = pd.DataFrame(scored["per_doc"]).assign(grade=grades, band=["K5", "K5", "K5", "K8", "K5", "K5"])
    table = bpb_by(docs, "grade")
    assert list(table.index) == ["1", "8", "K"] and list(table.columns) == ["nats", "bytes", "bpb"]
    for grade, row in table.iterrows():
        chosen = [i for i, g in enumerate(grades) if g == grade]
        nats = sum(scored["per_doc"][i]["nats"] for i in chosen)
        n_bytes = sum(scored["per_doc"][i]["bytes"] for i in chosen)
        assert row["bytes"] == n_bytes and row["nats"] == pytest.approx(nats)
        assert row["bpb"] == pytest.approx(nats / (math.log(2) * n_bytes))  # not a mean of per-text BPB
    assert list(bpb_by(docs, "grade", sort=False).index) == ["K", "1", "8"]  # order of appearance
    assert bpb_by(docs, ["band", "grade"]).loc[("K5", "K"), "bpb"] == table.loc["K", "bpb"]
    everything = bpb_by(docs.assign(all="all"), "all").loc["all"]
    assert everything["bpb"] == pytest.approx(scored["bpb"]) and everything["bytes"] == scored["bytes"]
    categorical = docs.assign(grade=pd.Categorical(grades, categories=["K", "1", "2", "8"]))
    assert list(bpb_by(categorical, "grade").index) == ["K", "1", "8"]  # the empty grade 2 is left out


def test_rise_bootstrap_pairs_items_and_brackets_the_point_rise():
    import math

    import pandas as pd

    from littlekit.evals.bpb import rise_bootstrap

    rows = []
    for i in range(40):
        band = "K-5" if i < 20 else "Beyond K-5"
        ll_nats = (1.0 if band == "K-5" else 3.0) + 0.1 * (i % 3)
        rows.append({"model": "LL", "band": band, "nats": ll_nats, "bytes": 10})
        rows.append({"model": "UN", "band": band, "nats": 1.5 + 0.1 * (i % 4), "bytes": 10})
    table = rise_bootstrap(pd.DataFrame(rows), "K-5", "Beyond K-5", n_boot=300)
    ll = table.loc["LL"]
    assert ll["rise"] == pytest.approx(2.0 / (10 * math.log(2)), rel=0.05)
    assert ll["ci_low"] <= ll["rise"] <= ll["ci_high"]
    diff = table.loc["LL - UN"]
    assert diff["ci_low"] > 0  # LL's rise is clearly larger than UN's (which is about zero)
