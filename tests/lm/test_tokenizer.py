"""The K-5 byte-level BPE: training, saving and reloading as a transformers tokenizer, the
single-digit ablation, and the reports (bytes per token, number shapes)."""

from __future__ import annotations

import pytest

from littlekit.lm.tokenizer import (
    BOS,
    EOS,
    IM_END,
    IM_START,
    MIN_VOCAB_SIZE,
    PAD,
    bytes_per_token,
    compression_table,
    load_tokenizer,
    number_shape_table,
    number_splits,
    shape_counts,
    train_tokenizer,
    training_record,
)

STORY = (
    "Once upon a time there was a little cat. The cat liked to play in the sun with her friend the dog. "
    "One day they found 12 red apples and 1234 blue stones near the big tree. "
)
TEXTS = [
    STORY * 3,
    "Tom has 1234 marbles. Sam has 1234 marbles too. " * 5,
    "The sun is hot. " * 10,
    "1234\n" * 5,
]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "k5_bpe"
    train_tokenizer(TEXTS, vocab_size=400, out_dir=out)
    return out


def test_saved_tokenizer_reloads_with_auto_tokenizer_and_its_special_tokens(saved):
    from transformers import PreTrainedTokenizerFast

    tokenizer = load_tokenizer(saved)
    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == (BOS, EOS, PAD)
    assert tokenizer.convert_tokens_to_ids([BOS, EOS, PAD, IM_START, IM_END]) == [0, 1, 2, 3, 4]
    assert len(tokenizer) <= 400
    record = training_record(saved)
    assert record["vocab_size"] == len(tokenizer) and record["training_documents"] == len(TEXTS)


def test_encoding_adds_no_special_tokens_and_any_text_round_trips(saved):
    tokenizer = load_tokenizer(saved)
    text = "The cat saw 1234 stars — ünïcödé, 漢字 and 🙂 too!\n\tx"
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.bos_token_id not in ids and tokenizer.eos_token_id not in ids
    assert tokenizer.unk_token_id is None
    assert tokenizer.decode(ids) == text


def test_chat_template_writes_chatml_turns_after_bos(saved):
    tokenizer = load_tokenizer(saved)
    messages = [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "5"}]
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    assert rendered == f"{BOS}{IM_START}user\nWhat is 2 + 3?{IM_END}\n{IM_START}assistant\n5{IM_END}\n"
    prompt = tokenizer.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith(f"{IM_START}assistant\n")
    ids = tokenizer.apply_chat_template(messages[:1], tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert ids[:2] == [tokenizer.bos_token_id, tokenizer.convert_tokens_to_ids(IM_START)]


def test_training_is_deterministic(tmp_path):
    for name in ("a", "b"):
        train_tokenizer(TEXTS, vocab_size=350, out_dir=tmp_path / name)
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (
        tmp_path / "b" / "tokenizer.json"
    ).read_bytes()


def test_vocab_size_below_bytes_and_specials_is_refused():
    with pytest.raises(ValueError, match=f"at least {MIN_VOCAB_SIZE}"):
        train_tokenizer(TEXTS, vocab_size=MIN_VOCAB_SIZE - 1)
    with pytest.raises(ValueError, match="no text"):
        train_tokenizer(["", ""], vocab_size=300)


def test_default_merges_a_frequent_number_single_digit_never_does():
    default = train_tokenizer(TEXTS, vocab_size=400)
    single = train_tokenizer(TEXTS, vocab_size=400, single_digit=True)
    assert default.tokenize("1234") == ["1234"]
    assert single.tokenize("1234") == ["1", "2", "3", "4"]
    digits_in_vocab = [t for t in single.get_vocab() if any(c.isdigit() for c in t)]
    assert all(sum(c.isdigit() for c in t) == 1 for t in digits_in_vocab)


def test_bytes_per_token_is_bytes_over_tokens():
    single = train_tokenizer(TEXTS, vocab_size=300, single_digit=True)
    assert bytes_per_token(single, ["1234", "56"]) == pytest.approx(6 / 6)
    assert bytes_per_token(single, ["é"]) == pytest.approx(2 / len(single.tokenize("é")))
    with pytest.raises(ValueError):
        bytes_per_token(single, [""])
    default = train_tokenizer(TEXTS, vocab_size=400)
    table = compression_table(
        {"default": default, "single": single}, {"story": [STORY], "numbers": ["1234 1234"]}
    )
    assert list(table["tokenizer"]) == ["default", "default", "single", "single"]
    story = table[table["text"] == "story"].set_index("tokenizer")["bytes_per_token"]
    assert story["default"] > 1.0 and story["default"] >= story["single"]


def test_number_shapes_of_the_single_digit_variant_are_one_per_length():
    single = train_tokenizer(TEXTS, vocab_size=300, single_digit=True)
    splits = number_splits(single)
    assert len(splits) == 10_000
    assert (splits["n_tokens"] == splits["digits"]).all()
    table = number_shape_table(splits)
    assert list(table.index) == [1, 2, 3, 4]
    assert list(table["count"]) == [10, 90, 900, 9000]
    assert list(table["distinct_shapes"]) == [1, 1, 1, 1]
    assert table.loc[4, "3+ tokens"] == 1.0 and table.loc[1, "1 token"] == 1.0
    shapes = shape_counts(splits)
    assert list(shapes["shape"]) == [(1, 1, 1, 1)] and shapes.loc[0, "numbers"] == 9000
    # inside running text the space is its own token, not counted as a piece of the number
    spaced = number_splits(single, [7, 1234], prefix=" ")
    assert list(spaced["shape"]) == [(1,), (1, 1, 1, 1)]


def test_number_shapes_of_the_default_variant_follow_its_merges():
    default = train_tokenizer(TEXTS, vocab_size=400)
    splits = number_splits(default, [12, 1234, 1235, 5])
    assert splits.set_index("number").loc[1234, "shape"] == (4,)
    assert splits.set_index("number").loc[1234, "tokens"] == ["1234"]
    assert sum(splits.set_index("number").loc[1235, "shape"]) == 4
    table = number_shape_table(splits)
    assert table.loc[4, "count"] == 2 and table.loc[4, "1 token"] == 0.5
    shapes = shape_counts(splits)
    assert shapes["numbers"].sum() == 2 and shapes["share"].sum() == pytest.approx(1.0)
    assert "1234 -> 1234" in " ".join(shapes["examples"])
    with pytest.raises(ValueError):
        number_splits(default, [-1])
