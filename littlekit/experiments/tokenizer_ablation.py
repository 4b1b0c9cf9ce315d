"""The single-digit tokenizer ablation (the paper's 2B ablation): both models retrained
with every digit its own token, everything else equal.

`retokenized_recipe` carries a trained run's recipe to shards written with another tokenizer: each
source keeps its split (text, math) and its weight, the token budget stays the same (so a model
whose tokenizer spends more tokens per number sees fewer problems, as in the paper, which keeps
its budget). `PAPER_BEYOND` holds the paper's Beyond-K-5 MathCAMPS pass@1 (in %) for the default
and the single-digit tokenizer, read from `littlekit.paper.NUMBERS` (`digits_*`; the ablation's
model size is `digits_model`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pandas as pd

from littlekit.lm.matched_corpora import MatchedShards
from littlekit.lm.train.config import TrainConfig
from littlekit.paper import number


def _percent(name: str) -> float:
    return round(100 * number(name).value, 6)


PAPER_BEYOND = pd.DataFrame(
    {
        "model": ["LittleLearner", "UNFILTERED"],
        "default": [_percent("digits_ll_before"), _percent("digits_unf_before")],
        "single digits": [_percent("digits_ll_after"), _percent("digits_unf_after")],
    }
).set_index("model")  # % Beyond-K-5 MathCAMPS pass@1 of the paper's ablation models (digits_model)
CONDITIONS = ("default", "single digits")


def retokenized_recipe(
    recipe: TrainConfig,
    shards: MatchedShards,
    name: str,
    tokenizer: str | os.PathLike,
    run_dir: str | os.PathLike,
) -> TrainConfig:
    """`recipe` (model `name`'s run) reading `shards` (written with `tokenizer`) instead: each data
    source is matched by its split folder (train, math) and keeps its weight."""
    sources = recipe.sources()
    mapped = {}
    for directory, weight in sources.items():
        split = Path(directory).name
        if (name, split) not in shards.dirs:
            raise ValueError(f"{directory}: no {name} {split} shards among {sorted(shards.dirs)}")
        mapped[str(shards.dirs[(name, split)])] = weight
    data: str | dict[str, float] = next(iter(mapped)) if len(mapped) == 1 else mapped
    return replace(recipe, data=data, mix=None, val_data=str(shards.val(name)), tokenizer=str(tokenizer),
                   run_dir=str(run_dir), init_from=None, resume=None, stop_at=None)  # fmt: skip
