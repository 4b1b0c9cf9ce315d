"""Checkpoints of a training run: writing them whole or not at all, and resuming from them exactly.

A checkpoint directory holds the model in `save_pretrained` format (config.json,
model.safetensors), the tokenizer, `trainer_state.json` and, in `last/` only, `trainer_state.pt`
(optimizer, step, loader position, RNG), so `AutoModelForCausalLM.from_pretrained` loads it and
`resume` continues the run where it stopped.

Rank 0 writes the checkpoint while the other ranks wait at a barrier, so the process group's
timeout is sized to it (`process_group_timeout`). On resume every rank reads `trainer_state.pt`
memory-mapped (`load_trainer_state`): the ranks of a node share the file's pages in the page cache
instead of each holding its own copy of the optimizer state in host RAM (at 5B, ~21 GB per rank).
On a GPU each rank's optimizer copies its state onto the device and the mapping is let go; on the
CPU the optimizer keeps the mapped tensors (copy-on-write: the file is never written through them).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from littlekit.lm.train.config import LAST, OLD, STATE_JSON, STATE_PT, TrainConfig, option
from littlekit.lm.train.distributed import Dist, barrier

# What a resumed run keeps from the run it continues: its tokens per step (global_batch x seq_len,
# which `tokens` counts by), its data order (seed; other data the loader refuses itself) and the
# optimizer whose state it saved. max_steps, stop_at, the schedule, micro_batch and the number of
# processes may change on resume (the loader's global rows do not depend on the last two).
KEPT_ON_RESUME = ("global_batch", "seq_len", "seed", "optimizer")


class CheckpointError(ValueError):
    """A checkpoint that a run cannot continue from: saved with other settings, or not finite."""


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
    and before either rename. A save that fails (a full disk) removes path.tmp and leaves path/ or
    path.old/ as they were; an OSError says which checkpoint and where the previous one is."""
    tmp = path.with_name(path.name + ".tmp")
    old = path.with_name(path.name + OLD)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with no_transformers_bars():
            raw.save_pretrained(tmp, state_dict=model_state)
        tokenizer.save_pretrained(tmp)
        if trainer_state is not None:
            torch.save(trainer_state, tmp / STATE_PT)
        (tmp / STATE_JSON).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        if before_swap is not None:
            before_swap()
        if path.exists():  # complete (only a finished sibling is ever renamed in), so old/ may go
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
        # Until the rename below, old/ is the complete checkpoint (`resolve_resume` looks there too);
        # without path/ (a crash here last time) it is the only one, and it is kept until now.
        tmp.rename(path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)  # never the only complete checkpoint: path/ or old/ is
        if isinstance(exc, OSError):
            raise _save_failed(exc, path, tmp, old) from exc
        raise
    shutil.rmtree(old, ignore_errors=True)


def _save_failed(exc: OSError, path: Path, tmp: Path, old: Path) -> OSError:
    """The error of a checkpoint that could not be written: which one, why, what is left."""
    why = exc.strerror or str(exc)
    if exc.errno:
        why += f" [{errno.errorcode.get(exc.errno, exc.errno)}]"
    kept = next((p for p in (path, old) if (p / STATE_JSON).exists()), None)
    left = f"{kept} holds the previous checkpoint, untouched" if kept else f"{path} was not written"
    message = f"cannot write the checkpoint {path}: {why}; {tmp.name}/ was removed and {left}"
    return OSError(exc.errno, message) if exc.errno else OSError(message)


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
    """last/'s trainer state, its tensors mapped from the file (copy-on-write), not read into RAM."""
    return torch.load(Path(checkpoint) / STATE_PT, map_location="cpu", weights_only=True, mmap=True)


MIN_TIMEOUT_MINUTES = 30.0  # the process group's timeout at least; NCCL's own default is 10 minutes
WRITE_RATE = 200e6  # bytes/s a checkpoint is assumed to be written at (a slow shared file system)


def checkpoint_bytes(config: TrainConfig, vocab_size: int) -> int:
    """Estimated bytes of a last/ checkpoint: fp32 weights and the optimizer's fp32 states (Muon one
    per hidden-matrix element, AdamW two per element), of the model the run resumes or starts from
    (its config.json) or else of config.size with `vocab_size` ids."""
    from littlekit.lm.sizes import FP32, optimizer_split, param_counts, qwen3_config

    weights_from = resolve_resume(config) or config.init_from
    if weights_from is not None and (Path(weights_from) / "config.json").is_file():
        from transformers import AutoConfig

        model = AutoConfig.from_pretrained(weights_from)
    else:
        model = qwen3_config(config.size, vocab_size, **config.model_overrides)
    counts, split = param_counts(model), optimizer_split(model)
    states = split["muon"] + 2 * split["adamw"] if config.optimizer == "muon" else 2 * counts["total"]
    return FP32 * (counts["total"] + states)


def process_group_timeout(config: TrainConfig, vocab_size: int) -> timedelta:
    """How long a collective waits: --dist-timeout-minutes, or with 0 MIN_TIMEOUT_MINUTES or twice
    the checkpoint's write at WRITE_RATE, whichever is longer (the other ranks wait while rank 0
    writes)."""
    if config.dist_timeout_minutes:
        return timedelta(minutes=config.dist_timeout_minutes)
    try:
        size = checkpoint_bytes(config, vocab_size)
    except (OSError, AttributeError, TypeError, ValueError):  # a bad setting is named when the model is built
        size = 0
    return timedelta(seconds=max(MIN_TIMEOUT_MINUTES * 60, 2 * size / WRITE_RATE))


def saved_config(checkpoint: Path) -> dict[str, Any] | None:
    """The settings of the run that wrote `checkpoint` (its trainer_state.json), or None unreadable."""
    try:
        saved = json.loads((checkpoint / STATE_JSON).read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError, AttributeError):
        return None
    return saved if isinstance(saved, dict) else None


def check_resume_settings(config: TrainConfig, checkpoint: Path, saved: Mapping[str, Any] | None) -> None:
    """CheckpointError naming each KEPT_ON_RESUME setting `config` gives otherwise than the run that
    saved `checkpoint` (its settings `saved`; None: not known, nothing to compare)."""
    if not saved:
        return
    changed = [name for name in KEPT_ON_RESUME if name in saved and saved[name] != getattr(config, name)]
    if not changed:
        return
    flags = {f.name: option(f) for f in fields(TrainConfig)}
    said = "; ".join(f"{flags[n]} {saved[n]} when saved, {getattr(config, n)} now" for n in changed)
    keep = " ".join(f"{flags[n]} {saved[n]}" for n in changed)
    raise CheckpointError(
        f"--resume {config.resume}: {checkpoint} was saved by a run with other settings ({said}). A "
        f"resumed run keeps its tokens per step (--global-batch x --seq-len), its data order (--seed) "
        f"and its optimizer (--optimizer): pass {keep} to continue it, or start a new run in another "
        f"--run-dir"
    )


def first_non_finite(tensors: Any, name: str = "") -> str | None:
    """The name (dotted keys) of the first floating-point tensor in a nested dict or list holding
    NaN or inf, or None."""
    if isinstance(tensors, torch.Tensor):
        bad = tensors.is_floating_point() and not bool(torch.isfinite(tensors).all())
        return name if bad else None
    if isinstance(tensors, Mapping):
        items: Any = tensors.items()
    elif isinstance(tensors, (list, tuple)):
        items = enumerate(tensors)
    else:
        return None
    for key, value in items:
        found = first_non_finite(value, f"{name}.{key}" if name else str(key))
        if found is not None:
            return found
    return None


RESUME_ELSEWHERE = "resume from an earlier checkpoint (--resume DIR) or start over (--force without --resume)"


def check_finite(checkpoint: str | os.PathLike, tensors: Any, what: str, fix: str = RESUME_ELSEWHERE) -> None:
    """CheckpointError naming `checkpoint` and the first tensor of `tensors` (its `what`) that is
    not finite (training from it would only go on with NaN), and what to do (`fix`)."""
    bad = first_non_finite(tensors)
    if bad is not None:
        raise CheckpointError(
            f"{checkpoint} holds {what} with numbers that are not finite (NaN or inf), first in {bad}: a "
            f"run cannot continue from it; {fix}"
        )


def restore(state: dict[str, Any], wrapped: torch.nn.Module, optimizer: Any, loader: Any, d: Dist) -> None:
    """Put the optimizer, the loader's position and the RNG back as `last/` recorded them (the
    weights come with the model, loaded from the same checkpoint)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    # Saved as full (unsharded) state dicts keyed by parameter name: under FSDP each rank takes its shard.
    set_optimizer_state_dict(
        wrapped, optimizer.optimizers, state["optimizer"], options=StateDictOptions(full_state_dict=True)
    )
    try:
        loader.load_state_dict(state["loader"])
    except ValueError as exc:  # other shards or weights (seed and seq_len are compared before)
        raise CheckpointError(
            f"--resume: the checkpoint was trained on other data than this run's --data/--mix ({exc}); "
            f"a resumed run keeps its data: pass the data it was started with, or start a new run"
        ) from None
    set_rng_state(state["rng"], d.device)
    _own_optimizer_state(optimizer)


def _own_optimizer_state(optimizer: Any) -> None:
    """Copy out any optimizer state still backed by last/'s mapped file: loading keeps some tensors
    as they came (on the CPU all of them, on a GPU AdamW's `step` scalars), and a tensor still mapped
    pins the file, which the next save's swap must be able to delete (on NFS a deleted open file
    lingers as .nfsXXXX and `last.old/` cannot be removed)."""
    for inner in getattr(optimizer, "optimizers", [optimizer]):
        for param_state in inner.state.values():
            for key, value in param_state.items():
                if isinstance(value, torch.Tensor) and value.device.type == "cpu":
                    param_state[key] = value.clone()


def truncate_metrics(path: Path, step: int) -> None:
    """Drop records after `step` (written by a run that went on past its last checkpoint)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["step"] <= step]  # fmt: skip
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
