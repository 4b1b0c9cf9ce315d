"""The causal language models the evaluations compare.

By default these are the run's two best checkpoints of the trained pair (`<name>/best/` in the run product
`pair_models`, `save_pretrained` directories with the tokenizer beside the weights). Any other
model is a label mapped to a local directory or a Hub id (the released LittleLearner, Gemma 2B,
...): the same transformers loaders read both, so the evaluations never special-case the pair.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from littlekit import runs

# the pair's folder names in the run product `pair_models` -> the names the paper uses
PAIR_MODELS: dict[str, str] = {"littlelearner": "LittleLearner", "unfiltered": "UNFILTERED"}


def pair_checkpoints(run: str | os.PathLike) -> dict[str, str]:
    """{label: checkpoint directory} of the run's best LittleLearner and UNFILTERED.

    `runs.MissingProduct` (a FileNotFoundError) says what makes them when one is missing.
    """
    folder = runs.path(run, "pair_models")
    found, missing = {}, []
    for name, label in PAIR_MODELS.items():
        best = folder / name / "best"
        if (best / "config.json").is_file():
            found[label] = str(best)
        else:
            missing.append(best)
    if missing:
        raise runs.MissingProduct(
            f"{runs.missing_note(run, 'pair_models', missing=missing)}; run it with the same run_name "
            "first, or pass the models explicitly as {label: path or Hub id}"
        )
    return found


SEED_MANIFEST = "manifest.json"  # in the run product `seed_replicas`: the seed study chapter 9 ran last


def write_seed_manifest(run: str | os.PathLike, seeds: list[int], steps: int, main_steps: int) -> Path:
    """Record which seeds the seed study trained, and for how many steps (against the main pair's),
    so readers of `seed_replicas` take those runs and no others left in the folder."""
    path = runs.path(run, "seed_replicas") / SEED_MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"seeds": [int(s) for s in seeds], "steps": int(steps), "main_steps": int(main_steps)}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def seed_study(run: str | os.PathLike) -> dict[str, Any]:
    """The seed study's manifest ({"seeds", "steps", "main_steps"}), or {} when none was written."""
    path = runs.path(run, "seed_replicas") / SEED_MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a seed-study manifest ({error})") from error


def seed_checkpoints(run: str | os.PathLike) -> dict[int, dict[str, str]]:
    """{seed: {label: checkpoint directory}} of the pair retrained with other training seeds
    (the run product `seed_replicas`: `seed<N>/<name>/best`), for the spread a verdict has over
    retraining. Only the seeds the manifest names (`write_seed_manifest`) and that hold both models
    are listed, so runs left from an earlier study never enter a verdict; none gives {}."""
    folder = runs.path(run, "seed_replicas")
    named = seed_study(run).get("seeds", [])
    found: dict[int, dict[str, str]] = {}
    for seed in sorted(named):
        pair = {label: str(folder / f"seed{seed}" / name / "best") for name, label in PAIR_MODELS.items()}
        if all((Path(p) / "config.json").is_file() for p in pair.values()):
            found[int(seed)] = pair
    return found


def resolve_models(run: str | os.PathLike, models: Mapping[str, str] | None = None) -> dict[str, str]:
    """The models to evaluate: `models` ({label: path or Hub id}) when given, else the run's trained pair."""
    if models is None:
        return pair_checkpoints(run)
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
    check_loaded(model, tokenizer, where)
    model.to(pick_device(device)).eval()
    return model, tokenizer


def check_loaded(model: Any, tokenizer: Any, where: str | os.PathLike) -> None:
    """ValueError when the pair cannot give a true score: a tokenizer with ids past the model's
    embedding rows (an IndexError deep in generation), or weights that are not finite (a model that
    scores 0 on everything and looks merely weak)."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        raise ValueError(
            f"{where}: the tokenizer has {len(tokenizer):,} tokens but the model embeds {rows:,}: "
            "they do not belong together (a tokenizer from another model?)"
        )
    for name, parameter in model.named_parameters():
        if not torch.isfinite(parameter).all():
            raise ValueError(f"{where}: the weights {name} hold NaN or infinite values (a diverged run?)")


def load_models(
    run: str | os.PathLike, models: Mapping[str, str] | None = None, device: str | None = None
) -> dict[str, tuple[Any, Any]]:
    """{label: (model, tokenizer)} for `resolve_models(run, models)`."""
    return {label: load_causal_lm(where, device) for label, where in resolve_models(run, models).items()}
