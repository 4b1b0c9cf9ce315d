"""The paper's qualitative prompts (Table 1 / Table 6) answered greedily by each model.

The paper shows free-form base-model completions of short questions on K-5 concepts ("What is a
magnet?") and Beyond-K-5 concepts ("What is DNA?"): LittleLearner answers the first kind simply
and correctly and the second kind confidently and wrongly, UNFILTERED answers both. `PAPER_ANSWERS`
keeps the paper's reported completions beside ours for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

# (band, prompt) as in the paper's Table 6
PAPER_PROMPTS: tuple[tuple[str, str], ...] = (
    ("K-5", "What is a magnet?"),
    ("K-5", "What is gravity?"),
    ("Beyond K-5", "What is DNA?"),
    ("Beyond K-5", "What is Schrödinger's cat?"),
    ("Beyond K-5", "What does E = mc² mean?"),
)

# The completions the paper reports for the released 5B base models (Table 6, "..." where cut).
PAPER_ANSWERS: dict[str, dict[str, str]] = {
    "What is a magnet?": {
        "LittleLearner": "A magnet is a piece of metal that is made to attract or pull other metal pieces.",
        "UNFILTERED": "A magnet is a material that has a property called magnetism.",
    },
    "What is gravity?": {
        "LittleLearner": "Gravity is the force that pulls everything down.",
        "UNFILTERED": "Gravity is the force between any two objects that is inversely proportional to the "
        "square of the separation between them...",
    },
    "What is DNA?": {
        "LittleLearner": "DNA is the instructions that tell us how we are going to look when we get old..",
        "UNFILTERED": "DNA stands for deoxyribonucleic acid. It is a genetic molecule present in all living "
        "things, including humans. It is composed of two long strands of nucleotides...",
    },
    "What is Schrödinger's cat?": {
        "LittleLearner": "Schrödinger's cat is a cat with two faces.",
        "UNFILTERED": "Schrödinger's cat is a thought experiment in quantum mechanics, proposed by Austrian "
        "physicist Erwin Schrödinger in 1935...",
    },
    "What does E = mc² mean?": {
        "LittleLearner": "It's the name of a mathematical constant. It's also the name of a very famous "
        "character from the Star Wars movies.",
        "UNFILTERED": "Einstein's famous equation says that energy is equivalent to mass times the square of "
        "the speed of light.",
    },
}

TEMPLATE = "{prompt}\n"  # a base model continues the line after the question


def answer_prompts(
    models: Mapping[str, tuple[Any, Any]],
    prompts: Sequence[tuple[str, str]] = PAPER_PROMPTS,
    max_new_tokens: int = 48,
    template: str = TEMPLATE,
    batch_size: int = 8,
) -> pd.DataFrame:
    """Greedy completions: one row per (prompt, model) with `band, prompt, model, completion`."""
    from littlekit.evals.generate import greedy

    if "{prompt}" not in template:
        raise ValueError(f"template must contain '{{prompt}}', got {template!r}")
    texts = [template.format(prompt=prompt) for _, prompt in prompts]
    rows = []
    for label, (model, tokenizer) in models.items():
        completions = greedy(model, tokenizer, texts, max_new_tokens, batch_size, stop=("\n\n",))
        for (band, prompt), completion in zip(prompts, completions, strict=True):
            rows.append({"band": band, "prompt": prompt, "model": label, "completion": completion.strip()})
    return pd.DataFrame(rows, columns=["band", "prompt", "model", "completion"])


def qualitative_table(answers: pd.DataFrame, with_paper: bool = True) -> pd.DataFrame:
    """One row per prompt, one column per model (and the paper's answers when `with_paper`)."""
    table = answers.pivot(index=["band", "prompt"], columns="model", values="completion")
    order = dict.fromkeys(zip(answers["band"], answers["prompt"], strict=True))
    table = table.reindex(list(order))
    table.columns = [f"nano {c}" for c in table.columns]
    if with_paper:
        for model in ("LittleLearner", "UNFILTERED"):
            table[f"paper {model}"] = [PAPER_ANSWERS.get(p, {}).get(model, "") for _, p in table.index]
    return table.reset_index()
