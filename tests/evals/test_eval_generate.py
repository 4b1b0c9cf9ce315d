"""generate() on a real tiny Qwen3 and tokenizer, against a direct token-by-token loop."""

from __future__ import annotations

import random

import pytest
import torch
from train_data import tiny_qwen3
from transformers import Qwen3ForCausalLM

from littlekit.evals.generate import (
    cut_at_stop,
    end_of_line_starting,
    filtered_probs,
    generate,
    greedy,
    prompt_ids,
    row_seed,
    token_kinds,
    vllm_available,
)
from littlekit.lm.tokenizer import train_tokenizer

WORDS = "the cat dog sun ran sat hop big red blue fish tree 12 345 + = Answer: play jump".split()
PROMPTS = ["the cat", "12 + 345 =", "big red fish ran to the tree and", "Answer:", "sun"]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def make_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.choice([1, 3, 6, 9]))) + "\n\n" for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(make_texts(300, 0), vocab_size=300)


@pytest.fixture(scope="module")
def model(tokenizer) -> Qwen3ForCausalLM:
    # float64: left padding changes logits only by rounding, far below what could flip a draw
    return tiny_qwen3(tokenizer).double()


@torch.no_grad()
def direct(
    model,
    tokenizer,
    prompt: str,
    steps: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: int = 0,
    prompt_index: int = 0,
    sample_index: int = 0,
) -> str:
    """Token by token, one full forward pass per step, no cache, no padding, no stop strings."""
    ids = prompt_ids(tokenizer, prompt)
    start = len(ids)
    generator = torch.Generator().manual_seed(row_seed(seed, prompt_index, sample_index))
    for _ in range(steps):
        logits = model(torch.tensor([ids])).logits[0, -1]
        if temperature == 0:
            token = int(logits.argmax())
        else:
            token = int(
                torch.multinomial(
                    filtered_probs(logits.float(), temperature, top_p, top_k), 1, generator=generator
                )[0]
            )
        ids.append(token)
        if token == tokenizer.eos_token_id:
            break
    return tokenizer.decode(ids[start:], skip_special_tokens=True)


def test_prompt_starts_with_bos(tokenizer):
    ids = prompt_ids(tokenizer, "the cat")
    assert ids[0] == tokenizer.bos_token_id == 0
    assert ids[1:] == tokenizer("the cat", add_special_tokens=False)["input_ids"]


def test_greedy_matches_direct_loop_batched_and_one_by_one(model, tokenizer):
    batched = generate(model, tokenizer, PROMPTS, max_new_tokens=10, batch_size=3, stop=())
    single = [generate(model, tokenizer, [p], max_new_tokens=10, batch_size=1, stop=())[0] for p in PROMPTS]
    expected = [[direct(model, tokenizer, p, 10)] for p in PROMPTS]
    assert batched == single == expected
    assert len({c[0] for c in batched}) > 1  # the prompts lead somewhere different


def test_sampling_matches_direct_loop_and_seed_reproduces(model, tokenizer):
    kwargs = dict(n_samples=3, max_new_tokens=8, temperature=1.0, top_p=0.9, top_k=20, stop=())
    first = generate(model, tokenizer, PROMPTS, batch_size=4, seed=7, **kwargs)
    again = generate(model, tokenizer, PROMPTS, batch_size=16, seed=7, **kwargs)
    other = generate(model, tokenizer, PROMPTS, batch_size=4, seed=8, **kwargs)
    assert first == again
    assert first != other
    assert [len(c) for c in first] == [3] * len(PROMPTS)
    expected = [
        [
            direct(model, tokenizer, p, 8, 1.0, 0.9, 20, seed=7, prompt_index=i, sample_index=j)
            for j in range(3)
        ]
        for i, p in enumerate(PROMPTS)
    ]
    assert first == expected
    assert any(len(set(c)) > 1 for c in first)  # samples of one prompt differ


def test_stop_strings_cut_the_completion(model, tokenizer):
    full = generate(model, tokenizer, PROMPTS, max_new_tokens=12, stop=())
    for prompt, (text,) in zip(PROMPTS, full, strict=True):
        if len(text) < 6:
            continue
        stop = text[3:5]
        (cut,) = generate(model, tokenizer, [prompt], max_new_tokens=12, stop=(stop,))[0:1]
        assert cut == [text[: text.find(stop)]]
        assert stop not in cut[0]


def test_a_row_that_stopped_is_not_decoded_again(model, tokenizer, monkeypatch):
    full = generate(model, tokenizer, PROMPTS, max_new_tokens=12, stop=(), batch_size=len(PROMPTS))
    stop = next(text[2:4] for (text,) in full if len(text) >= 6)
    decoded = []
    batch_decode = tokenizer.batch_decode

    def counting(rows, **kwargs):
        decoded.append(len(rows))
        return batch_decode(rows, **kwargs)

    monkeypatch.setattr(tokenizer, "batch_decode", counting)
    cut = generate(model, tokenizer, PROMPTS, max_new_tokens=12, stop=(stop,), batch_size=len(PROMPTS))
    assert cut == [[cut_at_stop(text, (stop,))] for (text,) in full]  # the same completions
    steps = len(decoded) - 1  # the last call decodes the finished batch's completions
    assert max(decoded[:steps]) == len(PROMPTS)
    assert sum(decoded[:steps]) < steps * len(PROMPTS)  # finished rows dropped out of the checks


def test_cut_at_stop_takes_the_earliest():
    assert cut_at_stop("a b\n\nc Q:", ("Q:", "\n\n")) == "a b"
    assert cut_at_stop("no stop here", ("\n\n",)) == "no stop here"


def test_a_stop_line_ends_the_completion_after_that_whole_line():
    steps = "ones: 6 + 1 = 7\nAnswer: 787\nWhat is 2 + 2?\nAnswer: 4\n"
    assert cut_at_stop(steps, ("\n\n",), ("Answer:",)) == "ones: 6 + 1 = 7\nAnswer: 787"
    assert cut_at_stop("Answer: 12\nmore", (), ("Answer:",)) == "Answer: 12"  # a first line counts too
    assert cut_at_stop("ones: 1\nAnswer: 1", (), ("Answer:",)) == "ones: 1\nAnswer: 1"  # not ended yet
    assert cut_at_stop("x Answer: 3\n\nnext", ("\n\n",), ("Answer:",)) == "x Answer: 3"  # mid-line: no
    assert end_of_line_starting("a\nAnswer: 5\n", "Answer:") == 11
    assert end_of_line_starting("a\nAnswer: 5", "Answer:") == -1


def test_generation_stops_at_a_stop_line(model, tokenizer):
    full = generate(model, tokenizer, PROMPTS, max_new_tokens=16, stop=())
    lines = [text.split("\n")[0] for (text,) in full if "\n" in text and text.split("\n")[0]]
    assert lines, "the tiny model should write at least one whole line"
    prefix = lines[0][:2]
    cut = generate(model, tokenizer, PROMPTS, max_new_tokens=16, stop=(), stop_lines=(prefix,))
    for (text,), (short,) in zip(full, cut, strict=True):
        assert short == cut_at_stop(text, (), (prefix,))
    with pytest.raises(ValueError, match="stop_lines"):
        generate(model, tokenizer, PROMPTS, stop_lines=("",))


def test_filtered_probs_top_k_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert filtered_probs(logits, 1.0, 1.0, 2).tolist()[0] == pytest.approx([0.625, 0.375, 0, 0])
    assert filtered_probs(logits, 1.0, 0.75, 0).tolist()[0] == pytest.approx([0.625, 0.375, 0, 0])
    assert filtered_probs(logits, 1.0, 0.85, 0).tolist()[0] == pytest.approx(
        [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0]
    )
    assert filtered_probs(logits, 1.0, 0.4, 0).tolist()[0] == pytest.approx([1, 0, 0, 0])


def test_bad_arguments_fail_clearly(model, tokenizer):
    with pytest.raises(ValueError, match="greedy decoding: n_samples must be 1"):
        generate(model, tokenizer, ["a"], n_samples=2)
    with pytest.raises(TypeError, match="not one string"):
        generate(model, tokenizer, "a")
    with pytest.raises(ValueError, match="top_p"):
        generate(model, tokenizer, ["a"], temperature=1.0, top_p=0.0)
    with pytest.raises(ValueError, match="backend"):
        generate(model, tokenizer, ["a"], backend="tgi")


@pytest.mark.skipif(vllm_available(), reason="vllm is installed here")
def test_vllm_asked_for_but_not_installed(model, tokenizer):
    with pytest.raises(ImportError, match="vllm is not installed"):
        generate(model, tokenizer, ["a"], backend="vllm")
    assert generate(model, tokenizer, ["a"], backend="auto", max_new_tokens=3, stop=()) == [
        [direct(model, tokenizer, "a", 3)]
    ]


def test_sampling_prints_progress_lines_once_it_runs_a_while(model, tokenizer, monkeypatch, capsys):
    from littlekit import progress
    from littlekit.evals.bpb import corpus_bpb

    monkeypatch.setattr(progress, "QUIET_FOR", 0.0)
    generate(
        model, tokenizer, ["one two", "three"], n_samples=5, max_new_tokens=2, batch_size=5, temperature=1.0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "sampling: 5/10 completions (50%), 0s, about 0s left",
        "sampling: 10/10 completions (100%), 0s",
    ]
    corpus_bpb(model, tokenizer, ["one two three four"] * 3, max_length=8, batch_size=1)
    assert capsys.readouterr().out.splitlines()[-1].startswith("scoring bits per byte: ")
    monkeypatch.setattr(progress, "QUIET_FOR", 5.0)
    generate(model, tokenizer, ["one two"], n_samples=2, max_new_tokens=2, temperature=1.0)
    assert capsys.readouterr().out == ""  # a quick call says nothing


def newline_first(tokenizer, seed: int = 0) -> Qwen3ForCausalLM:
    """A real tiny Qwen3 whose first choice is mostly a newline, like the nano models after the
    Jeopardy prompt's "Response:": every position's residual stream leans on dimension 0 and the
    newline's output row reads it. Context still decides the other tokens' order."""
    model = tiny_qwen3(tokenizer, seed=seed).double()
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] += 6.0
        model.lm_head.weight[newline, 0] = 4.0
    return model


@torch.no_grad()
def direct_answer_first(model, tokenizer, prompt: str, steps: int) -> str:
    """Greedy token by token, newlines and special tokens masked while the completion is blank,
    stopping at the first newline after it: the rule, written out without batching or a processor."""
    ids = prompt_ids(tokenizer, prompt)
    start = len(ids)
    special = set(tokenizer.all_special_ids)
    vocab = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    banned = [i for i, t in enumerate(vocab) if i in special or "\n" in t[: len(t) - len(t.lstrip())]]
    for _ in range(steps):
        logits = model(torch.tensor([ids])).logits[0, -1]
        if not tokenizer.decode(ids[start:], skip_special_tokens=True).strip():
            logits[banned] = float("-inf")
        ids.append(int(logits.argmax()))
        if ids[-1] == tokenizer.eos_token_id or "\n" in tokenizer.decode(ids[start:]):
            break
    return cut_at_stop(tokenizer.decode(ids[start:], skip_special_tokens=True), ("\n",))


def test_token_kinds_mark_tokens_that_open_a_line(tokenizer):
    opens_line, has_text = token_kinds(tokenizer, len(tokenizer) + 4)  # a padded embedding: 4 ids past it
    texts = {i: tokenizer.decode([i]) for i in range(len(tokenizer))}
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    word = tokenizer(" cat", add_special_tokens=False)["input_ids"][-1]
    assert opens_line[newline] and not has_text[newline]
    assert not opens_line[word] and has_text[word]
    assert opens_line[tokenizer.eos_token_id] and opens_line[tokenizer.bos_token_id]
    assert not opens_line[-4:].any() and not has_text[-4:].any()
    for i, text in texts.items():
        if i not in tokenizer.all_special_ids and text.startswith("\n"):
            assert opens_line[i]


def test_require_text_gives_an_answer_where_the_plain_rule_gives_none(tokenizer):
    model = newline_first(tokenizer)
    plain = greedy(model, tokenizer, PROMPTS, max_new_tokens=8, batch_size=2, stop=("\n",))
    answered = greedy(model, tokenizer, PROMPTS, 8, batch_size=2, stop=("\n",), require_text=True)
    assert sum(not c.strip() for c in plain) >= 3  # the old rule: mostly empty completions
    assert all(c.strip() for c in answered)  # the answer-first rule: none empty
    assert answered == [direct_answer_first(model, tokenizer, p, 8) for p in PROMPTS]
    for before, after in zip(plain, answered, strict=True):
        if before.strip():  # a row whose first choice was text is unchanged
            assert after == before
    one_by_one = [greedy(model, tokenizer, [p], 8, 1, stop=("\n",), require_text=True)[0] for p in PROMPTS]
    assert one_by_one == answered


def test_require_text_samples_without_a_leading_newline(tokenizer):
    model = newline_first(tokenizer)
    samples = generate(model, tokenizer, PROMPTS, n_samples=4, max_new_tokens=6, temperature=1.0, seed=3,
                       stop=(), require_text=True)
    for row in samples:
        for text in row:
            assert text.strip() and not text.lstrip(" ").startswith("\n")
    with pytest.raises(ValueError, match="require_text"):
        generate(model, tokenizer, ["a"], backend="vllm", require_text=True)
