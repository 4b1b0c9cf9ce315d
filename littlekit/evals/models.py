"""The causal language models the evaluations compare.

By default these are the run's two best nano checkpoints (`<name>/best/` in the run product
`nano_models`, `save_pretrained` directories with the tokenizer beside the weights). Any other
model is a label mapped to a local directory or a Hub id (the released LittleLearner, Gemma 2B,
...): the same transformers loaders read both, so the evaluations never special-case the nano models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from littlekit import runs

# the nano models' folder names in the run product `nano_models` -> the names the paper uses
NANO_MODELS: dict[str, str] = {"littlelearner": "LittleLearner", "unfiltered": "UNFILTERED"}


def nano_checkpoints(run: str | os.PathLike) -> dict[str, str]:
    """{label: checkpoint directory} of the run's best nano LittleLearner and nano UNFILTERED.

    `runs.MissingProduct` (a FileNotFoundError) says what makes them when one is missing.
    """
    folder = runs.path(run, "nano_models")
    found, missing = {}, []
    for name, label in NANO_MODELS.items():
        best = folder / name / "best"
        if (best / "config.json").is_file():
            found[label] = str(best)
        else:
            missing.append(best)
    if missing:
        raise runs.MissingProduct(
            f"{runs.missing_note(run, 'nano_models', missing=missing)}; run it with the same run_name "
            "first, or pass the models explicitly as {label: path or Hub id}"
        )
    return found


def seed_checkpoints(run: str | os.PathLike) -> dict[int, dict[str, str]]:
    """{seed: {label: checkpoint directory}} of the nano pair retrained with other training seeds
    (the run product `seed_replicas`: `seed<N>/<name>/best`), for the spread a verdict has over
    retraining. Only seeds with both models are listed; none gives {}."""
    folder = runs.path(run, "seed_replicas")
    found: dict[int, dict[str, str]] = {}
    for seed_dir in sorted(folder.glob("seed*"), key=lambda p: p.name):
        number = seed_dir.name.removeprefix("seed")
        pair = {label: str(seed_dir / name / "best") for name, label in NANO_MODELS.items()}
        if number.lstrip("-").isdigit() and all((Path(p) / "config.json").is_file() for p in pair.values()):
            found[int(number)] = pair
    return dict(sorted(found.items()))


def resolve_models(run: str | os.PathLike, models: Mapping[str, str] | None = None) -> dict[str, str]:
    """The models to evaluate: `models` ({label: path or Hub id}) when given, else the run's nano pair."""
    if models is None:
        return nano_checkpoints(run)
    if not isinstance(models, Mapping) or not models:
        raise ValueError(f"models must be a non-empty mapping of label -> path or Hub id, got {models!r}")
    for label, where in models.items():
        if not isinstance(label, str) or not isinstance(where, str) or not where:
            raise ValueError(f"models: label and location must be non-empty strings: {label!r}: {where!r}")
    return dict(models)


def pick_device(device: str | None = None) -> torch.device:
    """An explicit device, else CUDA when present, else the CPU."""
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_causal_lm(
    where: str | os.PathLike, device: str | None = None, dtype: torch.dtype | None = None
) -> tuple[Any, Any]:
    """(model in eval mode on `device`, tokenizer with a pad token) from a directory or Hub id."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(where)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    model.to(pick_device(device)).eval()
    return model, tokenizer


def load_models(
    run: str | os.PathLike, models: Mapping[str, str] | None = None, device: str | None = None
) -> dict[str, tuple[Any, Any]]:
    """{label: (model, tokenizer)} for `resolve_models(run, models)`."""
    return {label: load_causal_lm(where, device) for label, where in resolve_models(run, models).items()}
