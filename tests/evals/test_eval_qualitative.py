"""The qualitative prompts answered by real tiny Qwen3 models."""

from __future__ import annotations

import random

import pytest
from train_data import tiny_qwen3
from transformers import Qwen3ForCausalLM

from littlekit.evals.generate import generate
from littlekit.evals.qualitative import PAPER_ANSWERS, PAPER_PROMPTS, answer_prompts, qualitative_table
from littlekit.lm.tokenizer import train_tokenizer

WORDS = "what is a magnet gravity DNA cat the force pulls it mean E = mc² Schrödinger's ? .".split()

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def tokenizer():
    rng = random.Random(0)
    texts = [" ".join(rng.choices(WORDS, k=rng.choice([2, 5, 8]))) + "\n" for _ in range(300)]
    return train_tokenizer(texts, vocab_size=300)


def tiny_model(tokenizer, seed: int) -> Qwen3ForCausalLM:
    return tiny_qwen3(tokenizer, seed=seed)


def test_every_paper_prompt_answered_greedily_by_every_model(tokenizer):
    models = {"LittleLearner": (tiny_model(tokenizer, 0), tokenizer),
              "UNFILTERED": (tiny_model(tokenizer, 1), tokenizer)}
    answers = answer_prompts(models, max_new_tokens=6)
    assert len(answers) == len(PAPER_PROMPTS) * 2
    assert list(answers.columns) == ["band", "prompt", "model", "completion"]
    assert set(answers["band"]) == {"K-5", "Beyond K-5"}
    # the same as calling generate directly, greedily, on the templated prompt
    model, tok = models["UNFILTERED"]
    direct = generate(model, tok, [f"{p}\n" for _, p in PAPER_PROMPTS], max_new_tokens=6, temperature=0.0)
    assert answers[answers["model"] == "UNFILTERED"]["completion"].tolist() == [d[0].strip() for d in direct]
    # two different models answer differently somewhere, and greedy answers repeat exactly
    little = answers[answers["model"] == "LittleLearner"]["completion"].tolist()
    assert little != answers[answers["model"] == "UNFILTERED"]["completion"].tolist()
    again = answer_prompts({"LittleLearner": models["LittleLearner"]}, max_new_tokens=6)
    assert again["completion"].tolist() == little

    table = qualitative_table(answers)
    assert table["prompt"].tolist() == [p for _, p in PAPER_PROMPTS]
    assert list(table.columns) == ["band", "prompt", "nano LittleLearner", "nano UNFILTERED",
                                   "paper LittleLearner", "paper UNFILTERED"]
    assert table["paper UNFILTERED"].iloc[2].startswith("DNA stands for deoxyribonucleic acid")


def test_paper_answers_cover_every_prompt_and_template_is_checked(tokenizer):
    assert set(PAPER_ANSWERS) == {p for _, p in PAPER_PROMPTS}
    with pytest.raises(ValueError, match="template must contain"):
        answer_prompts({"m": (tiny_model(tokenizer, 0), tokenizer)}, template="no placeholder")
