"""Packed shards, the BOS-aligned mixture loader and the held-out eval stream, on a real tiny tokenizer."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
import torch

from littlekit.lm.shards import (
    IGNORE_INDEX,
    PAPER_COOLOFF_MIX,
    BatchLoader,
    TokenShards,
    eval_batches,
    mixture_sources,
    token_dtype,
    write_shards,
)
from littlekit.lm.tokenizer import train_tokenizer

WORDS = "the cat dog sun ran sat hop big red blue fish tree café naïve 12 345 🙂 play jump".split()


def make_texts(n: int, seed: int, marker: str = "") -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        length = rng.choice([1, 3, 6, 12, 30])
        texts.append(" ".join([marker, *rng.choices(WORDS, k=length)]).strip())
    return texts


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(make_texts(300, 0), vocab_size=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tokenizer):
    texts = make_texts(120, 1)
    out = tmp_path_factory.mktemp("shards")
    write_shards(texts, tokenizer, out, shard_tokens=200, batch_size=16)
    return texts, out


def encode_doc(tokenizer, text: str) -> list[int]:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.bos_token_id, *ids, tokenizer.eos_token_id]


def test_round_trip_tokens_boundaries_and_bytes(corpus, tokenizer):
    texts, out = corpus
    shards = TokenShards(out)
    manifest = shards.manifest
    assert manifest["dtype"] == "uint16"
    assert len(manifest["shards"]) > 1, "shard_tokens=200 should split the corpus"
    assert len(shards) == len(texts)
    expected_start = 0
    for i, text in enumerate(texts):
        assert shards.document(i).tolist() == encode_doc(tokenizer, text)
        assert shards.starts[i] == expected_start
        assert shards.doc_bytes[i] == len(text.encode("utf-8"))
        expected_start += shards.lengths[i]
    assert shards.n_tokens == expected_start == sum(s["tokens"] for s in manifest["shards"])
    assert shards.total_bytes == sum(len(t.encode("utf-8")) for t in texts)
    assert shards.document(5, max_tokens=2).tolist() == encode_doc(tokenizer, texts[5])[:2]


def test_write_is_deterministic_takes_dicts_and_skips_empty(corpus, tokenizer, tmp_path):
    texts, out = corpus
    records = [{"text": t, "id": i} for i, t in enumerate(texts)]
    records.insert(3, {"text": ""})
    manifest = write_shards(records, tokenizer, tmp_path, shard_tokens=200, batch_size=7)
    assert manifest["skipped_empty"] == 1
    for name in ["documents.npy", *(s["file"] for s in manifest["shards"])]:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    assert {**manifest, "skipped_empty": 0} == json.loads((out / "manifest.json").read_text())
    with pytest.raises(FileExistsError):
        write_shards(texts, tokenizer, tmp_path)


def test_token_dtype_switches_above_16_bits():
    assert token_dtype(300) == np.uint16
    assert token_dtype(65_536) == np.uint16  # ids 0..65535 still fit
    assert token_dtype(65_537) == np.uint32


def split_at_bos(row: list[int], bos: int) -> list[list[int]]:
    starts = [i for i, t in enumerate(row) if t == bos]
    return [row[a:b] for a, b in zip(starts, [*starts[1:], len(row)], strict=True)]


def test_rows_are_bos_aligned_whole_documents(corpus, tokenizer):
    texts, out = corpus
    docs = {tuple(encode_doc(tokenizer, t)) for t in texts}
    loader = BatchLoader(out, seq_len=24, batch_size=6, seed=3)
    for _ in range(12):
        x, y = next(loader)
        assert x.shape == y.shape == (6, 24) and x.dtype == y.dtype == torch.long
        assert torch.equal(x[:, 1:], y[:, :-1])
        assert (x[:, 0] == tokenizer.bos_token_id).all()
        for row_x, row_y in zip(x.tolist(), y.tolist(), strict=True):
            pieces = split_at_bos([*row_x, row_y[-1]], tokenizer.bos_token_id)
            *whole, last = pieces
            assert all(tuple(p) in docs for p in whole)
            assert any(d[: len(last)] == tuple(last) for d in docs)


def test_same_seed_same_batches_other_seed_differs(corpus):
    _, out = corpus
    a, b, c = (BatchLoader(out, 16, 4, seed=s) for s in (0, 0, 1))
    first = [next(a)[0] for _ in range(3)]
    assert all(torch.equal(f, next(b)[0]) for f in first)
    assert not all(torch.equal(f, next(c)[0]) for f in first)


def test_mixture_proportions(tmp_path, tokenizer):
    weights = {"a": 0.7, "b": 0.2, "c": 0.1}
    for seed, name in enumerate(weights):
        write_shards(make_texts(40, seed, marker=f"<{name}>"), tokenizer, tmp_path / name)
    sources = mixture_sources(tmp_path, weights)
    assert list(sources) == [str(tmp_path / n) for n in weights]
    loader = BatchLoader(sources, seq_len=8, batch_size=100, seed=0)
    counts = dict.fromkeys(weights, 0)
    n_rows = 3000
    for _ in range(n_rows // 100):
        x, _ = next(loader)
        for row in x.tolist():
            text = tokenizer.decode(row, skip_special_tokens=True)
            (name,) = [n for n in weights if text.startswith(f"<{n}>")]
            counts[name] += 1
    for name, weight in weights.items():
        sd = (weight * (1 - weight) / n_rows) ** 0.5
        assert abs(counts[name] / n_rows - weight) < 4 * sd, counts


def test_paper_cooloff_mix():
    assert sum(PAPER_COOLOFF_MIX.values()) == pytest.approx(1.0)
    assert PAPER_COOLOFF_MIX["k5_pretrain"] == 0.91
    assert sorted(PAPER_COOLOFF_MIX.values()) == [0.02, 0.02, 0.05, 0.91]


@pytest.fixture(scope="module")
def mixture(tmp_path_factory, tokenizer):
    root = tmp_path_factory.mktemp("mix")
    for i, name in enumerate(("x", "y")):
        write_shards(make_texts(25, 10 + i), tokenizer, root / name, shard_tokens=64)
    return {str(root / "x"): 3.0, str(root / "y"): 1.0}


def test_ranks_split_the_single_process_global_batch(mixture):
    single = BatchLoader(mixture, seq_len=20, batch_size=8, seed=5)
    ranks = [BatchLoader(mixture, seq_len=20, batch_size=4, seed=5, rank=r, world_size=2) for r in (0, 1)]
    accumulate = BatchLoader(mixture, seq_len=20, batch_size=4, seed=5)  # one process, 2 micro-batches
    for _ in range(10):  # crosses epochs of both 25-document sources
        x, y = next(single)
        parts = [next(r) for r in ranks]
        assert torch.equal(x, torch.cat([p[0] for p in parts]))
        assert torch.equal(y, torch.cat([p[1] for p in parts]))
        micro = [next(accumulate) for _ in range(2)]
        assert torch.equal(x, torch.cat([m[0] for m in micro]))
    assert ranks[0].state_dict() == ranks[1].state_dict() == single.state_dict()


def test_resume_continues_exactly(mixture):
    straight = BatchLoader(mixture, seq_len=20, batch_size=3, seed=2)
    batches = [next(straight) for _ in range(9)]
    first = BatchLoader(mixture, seq_len=20, batch_size=3, seed=2)
    for _ in range(4):
        next(first)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = BatchLoader(mixture, seq_len=20, batch_size=3, seed=2)
    resumed.load_state_dict(state)
    for x, y in batches[4:]:
        rx, ry = next(resumed)
        assert torch.equal(x, rx) and torch.equal(y, ry)
    assert resumed.state_dict()["cursors"][0][0] >= 1, "the test should cross an epoch"
    with pytest.raises(ValueError, match="seed"):
        BatchLoader(mixture, seq_len=20, batch_size=3, seed=9).load_state_dict(state)
    swapped = dict(zip(reversed(list(mixture)), mixture.values(), strict=True))
    with pytest.raises(ValueError, match="fingerprints"):
        BatchLoader(swapped, seq_len=20, batch_size=3, seed=2).load_state_dict(state)


def test_resume_in_a_moved_directory_with_another_batch_size(mixture, tmp_path):
    straight = BatchLoader(mixture, seq_len=20, batch_size=2, seed=4)
    rows = torch.cat([next(straight)[0] for _ in range(6)])
    first = BatchLoader(mixture, seq_len=20, batch_size=2, seed=4)
    next(first)
    moved = {}
    for i, (source, weight) in enumerate(mixture.items()):
        shutil.copytree(source, tmp_path / f"moved{i}")
        moved[str(tmp_path / f"moved{i}")] = weight
    resumed = BatchLoader(moved, seq_len=20, batch_size=5, seed=4)
    resumed.load_state_dict(first.state_dict())
    assert torch.equal(torch.cat([next(resumed)[0] for _ in range(2)]), rows[2:])


def test_eval_stream_scores_every_token_once(tmp_path, tokenizer):
    texts = make_texts(30, 4) + [" ".join(WORDS * 4)]  # the last document spans several rows
    write_shards(texts, tokenizer, tmp_path, shard_tokens=100)
    shards = TokenShards(tmp_path)
    seq_len = 16
    assert shards.lengths.max() > 2 * seq_len
    batches = list(eval_batches(tmp_path, seq_len=seq_len, batch_size=4))
    scored: list[int] = []
    for x, y, _ in batches:
        assert x.shape == y.shape and x.shape[1] == seq_len
        scored += y[y != IGNORE_INDEX].tolist()
        # a target is always the token after its input position
        keep = y[:, :-1] != IGNORE_INDEX
        assert torch.equal(y[:, :-1][keep], x[:, 1:][keep])
    real = [t for text in texts for t in tokenizer(text, add_special_tokens=False)["input_ids"]]
    assert scored == real
    assert sum(b.n_bytes for b in batches) == shards.total_bytes
    split = [list(eval_batches(tmp_path, seq_len, 4, rank=r, world_size=2)) for r in (0, 1)]
    assert len(split[0]) + len(split[1]) == len(batches)
    assert torch.equal(split[1][0].input_ids, batches[1].input_ids)


def test_planned_reads_count_what_the_loader_reads(tmp_path, tokenizer):
    from littlekit.lm.shards import planned_reads

    for seed, name in enumerate("ab"):
        write_shards(make_texts(30, seed, marker=f"<{name}>"), tokenizer, tmp_path / name)
    sources = {str(tmp_path / "a"): 0.75, str(tmp_path / "b"): 0.25}
    seq_len, rows = 12, 60
    loader = BatchLoader(sources, seq_len=seq_len, batch_size=4, seed=2)
    counts = dict.fromkeys("ab", 0)
    for _ in range(rows // 4):
        x, _ = next(loader)
        for row in x.tolist():
            counts[tokenizer.decode(row, skip_special_tokens=True)[1]] += 1
    reads = planned_reads(sources, seq_len, rows, seed=2)
    assert [r["source"] for r in reads] == list(sources)
    assert [r["rows"] for r in reads] == [counts["a"], counts["b"]]
    assert [r["tokens"] for r in reads] == [counts["a"] * seq_len, counts["b"] * seq_len]
    for read, name in zip(reads, "ab", strict=True):
        lengths = TokenShards(tmp_path / name).lengths
        assert 0 < read["documents"] <= len(lengths)
        assert read["distinct_tokens"] <= min(read["tokens"], int(lengths.sum()))
    assert planned_reads(str(tmp_path / "a"), seq_len, 0) == [
        {"source": str(tmp_path / "a"), "rows": 0, "tokens": 0, "documents": 0, "distinct_tokens": 0}
    ]
