"""Checkpoints of a training run: writing them whole or not at all, and resuming from them exactly.

A checkpoint directory holds the model in `save_pretrained` format (config.json,
model.safetensors), the tokenizer, `trainer_state.json` and, in `last/` only, `trainer_state.pt`
(optimizer, step, loader position, RNG), so `AutoModelForCausalLM.from_pretrained` loads it and
`resume` continues the run where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from littlekit.lm.train.config import LAST, OLD, STATE_JSON, STATE_PT, TrainConfig
from littlekit.lm.train.distributed import Dist, barrier


def _tied_names(model: torch.nn.Module) -> list[str]:
    """Names of parameters that are another name's parameter (a tied LM head), without wrappers."""
    seen: set[int] = set()
    tied = []
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            tied.append(name.removeprefix("module."))
        seen.add(id(param))
    return tied


def full_state(wrapped: torch.nn.Module, optimizer: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Full (unsharded, CPU) model and optimizer state dicts keyed by parameter name; collective."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_state = get_model_state_dict(wrapped, options=options)
    for name in _tied_names(wrapped):  # gathered as separate copies; save_pretrained keeps one
        model_state.pop(name, None)
    optim_state = None
    if optimizer is not None:
        optim_state = get_optimizer_state_dict(wrapped, optimizer.optimizers, options=options)
    return model_state, optim_state


@contextlib.contextmanager
def no_transformers_bars() -> Iterator[None]:
    """save_pretrained/from_pretrained draw progress bars of their own; not inside our loop's."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def write_checkpoint(
    path: Path,
    raw: torch.nn.Module,
    tokenizer: Any,
    model_state: dict[str, Any],
    info: dict[str, Any],
    trainer_state: dict[str, Any] | None,
    before_swap: Callable[[], None] | None = None,
) -> None:
    """Write into a fresh sibling directory, then swap it in, so a crash never leaves half a checkpoint.

    The previous checkpoint is renamed to path.old while the new one is renamed in, so at every
    moment path/ or path.old/ holds a complete one. `before_swap` runs once the new one is complete
    and before either rename."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with no_transformers_bars():
        raw.save_pretrained(tmp, state_dict=model_state)
    tokenizer.save_pretrained(tmp)
    if trainer_state is not None:
        torch.save(trainer_state, tmp / STATE_PT)
    (tmp / STATE_JSON).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    if before_swap is not None:
        before_swap()
    old = path.with_name(path.name + OLD)
    if path.exists():  # complete (only a finished sibling is ever renamed in), so old/ may go
        shutil.rmtree(old, ignore_errors=True)
        path.rename(old)
    # Until the rename below, old/ is the complete checkpoint (`resolve_resume` looks there too);
    # without path/ (a crash here last time) it is the only one, and it is kept until now.
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def save_checkpoint(
    path: Path,
    wrapped: torch.nn.Module,
    raw: torch.nn.Module,
    tokenizer: Any,
    d: Dist,
    info: dict[str, Any],
    optimizer: Any = None,
    loader: Any = None,
    before_swap: Callable[[], None] | None = None,
) -> None:
    """Gather the model (every rank) and write `path` (rank 0); with the optimizer and the loader
    also the trainer state that `resume` continues from (last/), without them the weights (best/).
    `before_swap` (rank 0) as in `write_checkpoint`."""
    model_state, optim_state = full_state(wrapped, optimizer)
    if d.main:
        trainer_state = None
        if optimizer is not None:
            trainer_state = {**info, "optimizer": optim_state, "loader": loader.state_dict(),
                             "rng": rng_state(d.device)}  # fmt: skip
        write_checkpoint(path, raw, tokenizer, model_state, info, trainer_state, before_swap)
    barrier(d)


def rng_state(device: torch.device) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def resolve_resume(config: TrainConfig) -> Path | None:
    """The checkpoint to resume from: config.resume, or with "auto" run_dir/last/ if it exists
    (else last.old/, the complete one a crash between write_checkpoint's two renames leaves)."""
    if config.resume is None:
        return None
    if config.resume == "auto":
        # A first submission finds no last/ and starts fresh; a resubmitted job continues.
        last = Path(config.run_dir) / LAST
        for candidate in (last, last.with_name(LAST + OLD)):
            if (candidate / STATE_PT).exists():
                return candidate
        return None
    path = Path(config.resume)
    if not (path / STATE_PT).exists():
        raise FileNotFoundError(f"{path / STATE_PT} not found: not a `last/` checkpoint of littlekit train")
    return path


def load_trainer_state(checkpoint: str | os.PathLike) -> dict[str, Any]:
    return torch.load(Path(checkpoint) / STATE_PT, map_location="cpu", weights_only=True)


def restore(state: dict[str, Any], wrapped: torch.nn.Module, optimizer: Any, loader: Any, d: Dist) -> None:
    """Put the optimizer, the loader's position and the RNG back as `last/` recorded them (the
    weights come with the model, loaded from the same checkpoint)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    # Saved as full (unsharded) state dicts keyed by parameter name: under FSDP each rank takes its shard.
    set_optimizer_state_dict(
        wrapped, optimizer.optimizers, state["optimizer"], options=StateDictOptions(full_state_dict=True)
    )
    loader.load_state_dict(state["loader"])
    set_rng_state(state["rng"], d.device)


def truncate_metrics(path: Path, step: int) -> None:
    """Drop records after `step` (written by a run that went on past its last checkpoint)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["step"] <= step]  # fmt: skip
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
