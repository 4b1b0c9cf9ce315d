"""Chapter 9's two training sets: held out by id alike, and the unfiltered one matched in readable tokens."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from littlekit import runs
from littlekit.curriculum.export import write_jsonl
from littlekit.lm.corpus_select import write_corpus
from littlekit.lm.matched_corpora import (
    EXPOSURE_UNITS,
    K5_CORPUS,
    MATH_FILES,
    TOKENIZER,
    UNFILTERED_CORPUS,
    exposure_format,
    exposure_records,
    held_out_mask,
    matched_splits,
    pair_exposure,
    prepare_matched_shards,
    readable_tokens,
    sample_to_tokens,
    tokenizer_texts,
    training_corpora_inputs,
)
from littlekit.lm.shards import TokenShards
from littlekit.lm.tokenizer import train_tokenizer

SHORT = "the cat sat on a mat and the dog ran to the sun".split()
LONG = "mitochondrial oxidative phosphorylation couples electron transport to synthesis".split()


def make_corpora(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An unfiltered corpus of short (kept) and long (dropped) documents; K-5 = the short ones."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        kept = i % 3 == 0
        words = (
            rng.choices(SHORT, k=rng.randint(3, 20)) if kept else rng.choices(LONG, k=rng.randint(20, 200))
        )
        rows.append({"id": f"doc{i}", "text": " ".join(words), "kept": kept})
    unfiltered = pd.DataFrame(rows)
    return unfiltered[unfiltered["kept"]].reset_index(drop=True), unfiltered


@pytest.fixture(scope="module")
def tokenizer():
    k5, unfiltered = make_corpora()
    return train_tokenizer(unfiltered["text"], vocab_size=300)


def test_held_out_mask_depends_only_on_id_and_seed():
    ids = [f"doc{i}" for i in range(20_000)]
    mask = held_out_mask(ids, 0.1, seed=3)
    assert 0.09 < mask.mean() < 0.11
    subset = ids[::7]
    assert np.array_equal(held_out_mask(subset, 0.1, seed=3), mask[::7])  # same verdict in any corpus
    assert not np.array_equal(held_out_mask(ids, 0.1, seed=4), mask)
    assert not held_out_mask(ids, 0.0).any() and held_out_mask(ids, 1.0).all()
    with pytest.raises(ValueError):
        held_out_mask(ids, 1.5)


def test_min_count_holds_out_the_smallest_hashes():
    ids = [f"doc{i}" for i in range(12)]
    assert not held_out_mask(ids, 0.001).any()
    forced = held_out_mask(ids, 0.001, min_count=2)
    assert forced.sum() == 2
    assert np.array_equal(held_out_mask(ids, 0.001, min_count=2), forced)
    assert held_out_mask(ids, 0.5, min_count=1).sum() == held_out_mask(ids, 0.5).sum()  # already enough


def test_a_small_k5_corpus_still_gets_a_validation_document_held_out_of_both(tokenizer):
    k5, unfiltered = make_corpora(15)
    assert not held_out_mask(k5["id"].tolist(), 0.01).any()
    splits = matched_splits(k5, unfiltered, tokenizer, seq_len=32, held_out_fraction=0.01)
    k5_val = set(splits[("littlelearner", "val")]["id"])
    assert len(k5_val) == 1 and k5_val <= set(splits[("unfiltered", "val")]["id"])
    assert not k5_val & set(splits[("unfiltered", "train")]["id"])


def test_readable_tokens_stop_at_one_row():
    assert readable_tokens(np.array([5, 257, 258, 9000]), 256).tolist() == [5, 257, 257, 257]
    assert readable_tokens(np.array([5, 9000]), None).tolist() == [5, 9000]


def test_sample_to_tokens_fills_the_budget_without_overshooting():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 500, size=300)
    for budget in (0, 1, 777, 10_000, 50_000):
        taken = sample_to_tokens(lengths, budget, seed=1)
        total = lengths[taken].sum()
        assert total <= budget
        left_out = np.setdiff1d(np.arange(len(lengths)), taken)
        assert len(left_out) == 0 or budget - total < lengths[left_out].min()
        assert np.array_equal(taken, np.sort(taken)) and len(set(taken)) == len(taken)
    assert np.array_equal(
        sample_to_tokens(lengths, 10_000, seed=1), sample_to_tokens(lengths, 10_000, seed=1)
    )
    assert not np.array_equal(
        sample_to_tokens(lengths, 10_000, seed=1), sample_to_tokens(lengths, 10_000, seed=2)
    )
    assert len(sample_to_tokens(lengths, int(lengths.sum()))) == len(lengths)
    with pytest.raises(ValueError):
        sample_to_tokens(lengths, -1)


def test_splits_hold_out_alike_and_match_readable_tokens(tokenizer):
    k5, unfiltered = make_corpora()
    splits = matched_splits(k5, unfiltered, tokenizer, seq_len=32, held_out_fraction=0.2, seed=0)
    ids = {key: set(frame["id"]) for key, frame in splits.items()}
    assert ids[("littlelearner", "val")] <= ids[("unfiltered", "val")]
    assert not ids[("littlelearner", "train")] & ids[("unfiltered", "val")]
    assert not ids[("unfiltered", "train")] & ids[("littlelearner", "val")]
    assert ids[("littlelearner", "train")] | ids[("littlelearner", "val")] == set(k5["id"])
    budget = splits[("littlelearner", "train")]["n_readable"].sum()
    sampled = splits[("unfiltered", "train")]
    assert budget - sampled["n_readable"].max() < sampled["n_readable"].sum() <= budget
    assert sampled["n_tokens"].sum() > sampled["n_readable"].sum()  # long documents: tails the loader skips
    assert (sampled["n_readable"] <= 33).all()
    assert splits[("unfiltered", "corpus")]["held_out"].sum() == len(splits[("unfiltered", "val")])


def test_max_val_tokens_caps_only_validation(tokenizer):
    k5, unfiltered = make_corpora()
    full = matched_splits(k5, unfiltered, tokenizer, seq_len=32, held_out_fraction=0.2)
    capped = matched_splits(k5, unfiltered, tokenizer, seq_len=32, held_out_fraction=0.2, max_val_tokens=500)
    assert (
        capped[("unfiltered", "val")]["n_tokens"].sum() <= 500 < full[("unfiltered", "val")]["n_tokens"].sum()
    )
    assert set(capped[("unfiltered", "val")]["id"]) <= set(full[("unfiltered", "val")]["id"])
    assert capped[("unfiltered", "train")].equals(full[("unfiltered", "train")])


def test_prepare_writes_the_shards_the_table_describes(tokenizer, tmp_path):
    k5, unfiltered = make_corpora()
    matched = prepare_matched_shards(k5, unfiltered, tokenizer, tmp_path, seq_len=32, held_out_fraction=0.2)
    table = matched.table.set_index(["name", "split"])
    for (name, split), directory in matched.dirs.items():
        shards = TokenShards(directory)
        assert shards.n_tokens == table.loc[(name, split), "tokens"]
        assert len(shards) == table.loc[(name, split), "documents"]
    assert table.loc[("littlelearner", "corpus"), "share"] == pytest.approx(1.0)
    assert matched.train("unfiltered") == tmp_path / "unfiltered" / "train"


def test_training_corpora_inputs_reads_what_the_run_holds(tokenizer, tmp_path):
    k5, unfiltered = make_corpora(30)
    folder = runs.path(tmp_path, "training_corpora")
    write_corpus(k5, folder / K5_CORPUS)
    write_corpus(unfiltered, folder / UNFILTERED_CORPUS)
    math = pair_exposure(per_unit=2, fmt="plain")
    for name, file in MATH_FILES.items():
        write_jsonl(math[name], folder / file)
    tokenizer.save_pretrained(folder / TOKENIZER)
    read = training_corpora_inputs(tmp_path)
    assert read.note.startswith("Read the training corpora")
    assert list(read.k5["id"]) == list(k5["id"]) and len(read.unfiltered) == len(unfiltered)
    assert read.tokenizer_dir == folder / TOKENIZER
    assert read.math == math
    assert exposure_format(tmp_path) == "plain"


def test_exposure_format_says_what_is_missing(tmp_path):
    with pytest.raises(runs.MissingProduct, match="tokenizer chapter"):
        exposure_format(tmp_path)
    folder = runs.path(tmp_path, "training_corpora")
    folder.mkdir(parents=True)
    (folder / MATH_FILES["littlelearner"]).write_text("not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match="k5_math.jsonl line 1"):
        exposure_format(tmp_path)


def test_exposure_is_k5_units_for_littlelearner_and_k8_for_unfiltered():
    math = pair_exposure(per_unit=3, fmt="scratchpad", seed=1)
    assert set(EXPOSURE_UNITS) == set(math)
    assert {r["band"] for r in math["littlelearner"]} == {"K5"}
    assert {r["band"] for r in math["unfiltered"]} == {"K5", "BEYOND"}
    k5_ids = {r["id"] for r in math["unfiltered"] if r["band"] == "K5"}
    assert k5_ids == {r["id"] for r in math["littlelearner"]}  # the same K-5 problems in both
    per_unit = pd.Series([r["unit"] for r in math["unfiltered"]]).value_counts()
    assert (per_unit == 3).all()
    units = [r["unit"] for r in math["littlelearner"]]
    assert units != sorted(units, key=units.index)  # shuffled together, not unit after unit
    assert exposure_records("K5", 3, "scratchpad", seed=1) == math["littlelearner"]  # seeded
    assert exposure_records("K5", 3, "scratchpad", seed=2) != math["littlelearner"]


def test_math_shards_and_the_training_mixture(tokenizer, tmp_path):
    k5, unfiltered = make_corpora()
    math = {"littlelearner": exposure_records("add_sub_within_10", 20, "plain")}
    matched = prepare_matched_shards(
        k5, unfiltered, tokenizer, tmp_path, seq_len=32, held_out_fraction=0.2, math=math
    )
    shards = TokenShards(matched.math("littlelearner"))
    assert len(shards) == 20
    assert matched.math("unfiltered") is None
    table = matched.table.set_index(["name", "split"])
    assert table.loc[("littlelearner", "math"), "tokens"] == shards.n_tokens
    data = matched.training_data("littlelearner", 0.25)
    assert data == {str(matched.train("littlelearner")): 0.75, str(matched.math("littlelearner")): 0.25}
    assert matched.training_data("unfiltered", 0.0) == str(matched.train("unfiltered"))
    with pytest.raises(ValueError, match="no math exposure"):
        matched.training_data("unfiltered", 0.25)
    with pytest.raises(ValueError, match="math_share"):
        matched.training_data("littlelearner", 1.0)
    with pytest.raises(ValueError, match="the pair is"):
        prepare_matched_shards(k5, unfiltered, tokenizer, tmp_path, seq_len=32, math={"other": []})


def test_the_tokenizer_is_fitted_on_littlelearners_text_and_math():
    k5, _ = make_corpora(12)
    math = exposure_records("add_sub_within_10", 2, "plain")
    texts = tokenizer_texts(k5, math)
    assert texts == [*k5["text"], *(r["text"] for r in math)]


def test_split_table_and_text_summary_say_what_each_model_trains_on(tokenizer):
    from littlekit.lm.matched_corpora import split_table, text_summary

    k5, unfiltered = make_corpora()
    splits = matched_splits(k5, unfiltered, tokenizer, seq_len=32, held_out_fraction=0.2)
    table = split_table(splits).set_index(["name", "split"])
    for (name, split), frame in splits.items():
        row = table.loc[(name, split)]
        assert row["documents"] == len(frame) and row["readable_tokens"] == frame["n_readable"].sum()
    held = splits[("unfiltered", "corpus")]["held_out"].sum()
    assert table.loc[("unfiltered", "corpus"), "held_out"] == held
    assert table.loc[("unfiltered", "train"), "held_out"] == 0
    ll, un = text_summary(split_table(splits), 32, {"littlelearner": "LL", "unfiltered": "UN"})
    train = table.loc[("littlelearner", "train")]
    documents, readable = int(train["documents"]), int(train["readable_tokens"])
    assert ll.startswith(f"LL trains on {documents:,} documents of the K-5 corpus (its {len(k5)} less")
    assert f"{readable:,} tokens as the loader reads them (at most 33 tokens" in ll
    sampled = int(table.loc[("unfiltered", "train"), "documents"])
    drawn = f"UN trains on {sampled:,} documents of the pool (a random draw to LL's readable tokens"
    assert un.startswith(drawn)


def test_reading_table_counts_the_tokens_training_reads(tokenizer, tmp_path):
    from littlekit.lm.matched_corpora import reading_table
    from littlekit.lm.shards import BatchLoader

    k5, unfiltered = make_corpora()
    math = pair_exposure(per_unit=1, fmt="plain")
    matched = prepare_matched_shards(
        k5, unfiltered, tokenizer, tmp_path, seq_len=32, held_out_fraction=0.2, math=math
    )
    rows, seq_len = 50, 32
    reads = reading_table(matched, 0.5, seq_len, rows, seed=1)
    assert list(reads.index) == ["littlelearner", "unfiltered"]
    assert (reads["tokens read"] == rows * seq_len).all()
    assert (reads["text tokens read"] + reads["math tokens read"] == reads["tokens read"]).all()
    table = matched.table.set_index(["name", "split"])
    ll = reads.loc["littlelearner"]
    assert ll["text readable tokens"] == table.loc[("littlelearner", "train"), "readable_tokens"]
    assert ll["math documents"] == len(math["littlelearner"])
    assert ll["text passes"] == pytest.approx(ll["text tokens read"] / ll["text readable tokens"])
    loader = BatchLoader(matched.training_data("littlelearner", 0.5), seq_len, 10, seed=1)
    math_rows = sum(loader._source_of_row(r) == 1 for r in range(rows))
    assert ll["math tokens read"] == math_rows * seq_len
    text_only = reading_table(matched, 0.0, seq_len, rows)
    assert (text_only["math tokens read"] == 0).all()
    assert (text_only["text tokens read"] == rows * seq_len).all()


def test_chapter_8_counts_the_pairs_tokens_with_chapter_9s_defaults():
    import ast

    import nbformat

    from littlekit.config import REPO_ROOT
    from littlekit.lm.matched_corpora import HELD_OUT_FRACTION

    def defaults(name):
        cells = nbformat.read(REPO_ROOT / "notebooks" / name, as_version=4).cells
        (cell,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
        tree = ast.parse(cell.source)
        kinds = (ast.Assign, ast.AnnAssign)
        assigned = [n for n in tree.body if isinstance(n, kinds) and n.value is not None]
        return {
            (n.target if isinstance(n, ast.AnnAssign) else n.targets[0]).id: ast.literal_eval(n.value)
            for n in assigned
        }

    chapter_8, chapter_9 = defaults("08_tokenizer.ipynb"), defaults("09_training.ipynb")
    assert chapter_8["seq_len"] == chapter_9["seq_len"]
    assert chapter_9["held_out_fraction"] == HELD_OUT_FRACTION
    assert chapter_8["seed"] == chapter_9["seed"]


def test_text_summary_says_when_the_web_text_cannot_match_littlelearners_tokens(tokenizer):
    from littlekit.lm.matched_corpora import split_table, text_summary

    k5, unfiltered = make_corpora()
    few = unfiltered[~unfiltered["kept"]].head(6)  # six web pages, kept by none: fewer readable tokens
    table = split_table(matched_splits(k5, few, tokenizer, seq_len=32, held_out_fraction=0.2))
    _, line = text_summary(table, 32)
    train = table.set_index(["name", "split"])
    readable = train["readable_tokens"]
    short = int(readable[("littlelearner", "train")] - readable[("unfiltered", "train")])
    assert "(all of the unfiltered corpus, its 6 less the" in line
    assert f"That is {short:,} readable tokens short of littlelearner's" in line
    assert "not matched in tokens" in line
