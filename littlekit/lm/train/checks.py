"""What a training run is told, checked before anything is built: values, paths, shards, tokenizer.

Each failure is one message naming the flag or the file (`littlekit train` turns a ValueError or
FileNotFoundError into a usage error, exit 2).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from littlekit.lm.shards import TokenShards
from littlekit.lm.sizes import QWEN3_SIZES
from littlekit.lm.train.checkpoint import check_resume_settings, resolve_resume, saved_config
from littlekit.lm.train.config import (
    CONFIG_JSON,
    MAX_COUNT,
    MAX_SEED,
    MAX_TIMEOUT_MINUTES,
    METRICS,
    OPTIMIZERS,
    PARALLEL,
    RESULTS,
    TrainConfig,
)
from littlekit.swap import check_not_held, hold_output, unwritable


def accumulation_steps(global_batch: int, micro_batch: int, world_size: int) -> int:
    """Forward/backward passes per optimizer step; refuses a batch that does not divide."""
    if global_batch < 1 or micro_batch < 1:
        raise ValueError("global_batch and micro_batch must be positive")
    per_pass = micro_batch * world_size
    if global_batch % per_pass:
        raise ValueError(
            f"global batch {global_batch} is not divisible by processes x micro batch = "
            f"{world_size} x {micro_batch} = {per_pass}"
        )
    return global_batch // per_pass


def check_config(config: TrainConfig) -> None:
    if config.parallel not in PARALLEL:
        raise ValueError(f"parallel must be one of {PARALLEL}, got {config.parallel!r}")
    if config.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {config.optimizer!r}")
    if config.size not in QWEN3_SIZES:
        raise ValueError(f"unknown model size {config.size!r}; known: {', '.join(QWEN3_SIZES)}")
    for name in ("seq_len", "max_steps", "log_every"):
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")
    if config.stop_at is not None and not 1 <= config.stop_at <= config.max_steps:
        raise ValueError(f"stop_at must be in [1, max_steps={config.max_steps}], got {config.stop_at}")
    if config.eval_every < 0 or config.save_every < 0:
        raise ValueError("eval_every and save_every must be >= 0")
    for name in ("global_batch", "micro_batch", "val_batches", "val_batch_size"):
        value = getattr(config, name)
        if value is not None and not 1 <= value <= MAX_COUNT:
            raise ValueError(f"{name} must be between 1 and {MAX_COUNT:,}, got {value}")
    if not 0 <= config.seed <= MAX_SEED:
        raise ValueError(f"seed must be between 0 and {MAX_SEED:,}, got {config.seed}")
    for name in ("muon_lr", "adamw_lr", "weight_decay", "grad_clip"):
        value = getattr(config, name)
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    if not 0 <= config.dist_timeout_minutes <= MAX_TIMEOUT_MINUTES:
        raise ValueError(
            f"dist_timeout_minutes must be 0 (sized from the checkpoint) to {MAX_TIMEOUT_MINUTES:,}, "
            f"got {config.dist_timeout_minutes}"
        )


def check_seq_len(config: TrainConfig) -> None:
    """A fresh model's positions bound seq_len (a resumed or initialised one is checked on loading)."""
    if config.init_from is not None or resolve_resume(config) is not None:
        return
    positions = config.model_overrides.get(
        "max_position_embeddings", QWEN3_SIZES[config.size]["max_position_embeddings"]
    )
    if config.seq_len > positions:
        raise ValueError(
            f"--seq-len {config.seq_len} exceeds the {config.size} model's max_position_embeddings "
            f"{positions}"
        )


def check_vocabulary(tokenizer: Any, directories: list[str]) -> None:
    from littlekit.lm.shards import ShardError, _vocab_sha256

    own = _vocab_sha256(tokenizer)
    for directory in directories:
        manifest = TokenShards(directory).require_documents().manifest
        if manifest["vocab_sha256"] != own:
            raise ShardError(
                f"{directory} was tokenised with another vocabulary than {tokenizer.name_or_path}: pass "
                f"the tokenizer the shards were written with, or rebuild them with this one (write_shards)"
            )
        if int(manifest.get("vocab_size", len(tokenizer))) > len(tokenizer):
            # TokenShards bounds each shard's ids by this size, so it may not exceed the tokenizer's.
            raise ShardError(
                f"{Path(directory) / 'manifest.json'} gives vocab_size {manifest['vocab_size']:,}, but "
                f"its vocabulary ({tokenizer.name_or_path}) has {len(tokenizer):,} ids; rebuild the "
                f"shards with write_shards"
            )


def check_inputs(config: TrainConfig) -> None:
    """What a run reads, checked before anything is built, each failure one message naming the file.

    UsageError-worthy mistakes (a path that does not exist) raise FileNotFoundError naming the
    flag; a directory that is there but is not what it should be raises ShardError or
    TokenizerError (from littlekit.lm.shards / littlekit.lm.tokenizer) naming the file and the fix.
    """
    from littlekit.lm.tokenizer import TokenizerError, TokenizerNotFound, locate_tokenizer

    sources = config.sources()
    if config.mix is not None or isinstance(config.data, (str, os.PathLike)):
        typed = [str(config.data)]  # with --mix the root; its sources are checked as shards below
    else:
        typed = list(sources)
    for directory in typed:
        if not Path(directory).exists():
            raise FileNotFoundError(f"argument --data: {directory} does not exist")
    if config.val_data is not None and not Path(config.val_data).exists():
        raise FileNotFoundError(f"argument --val-data: {config.val_data} does not exist")
    try:
        locate_tokenizer(config.tokenizer)
    except TokenizerNotFound as exc:
        raise FileNotFoundError(f"argument --tokenizer: {exc}") from None
    except TokenizerError as exc:  # a folder or file that is there, but not a tokenizer
        raise TokenizerError(f"argument --tokenizer: {exc}") from None
    if config.init_from is not None:
        _check_weights_source(config.init_from)
    run_dir = Path(config.run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise FileNotFoundError(f"argument --run-dir: {run_dir} is a file, not a directory")
    try:
        checkpoint = resolve_resume(config)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"argument --resume: {exc}") from None
    if checkpoint is not None:  # a changed --global-batch, before anything is built
        check_resume_settings(config, checkpoint, saved_config(checkpoint))
    for directory in list(sources) + ([config.val_data] if config.val_data else []):
        TokenShards(directory).require_documents()
    check_writable(run_dir)
    if _rank() == 0:  # a live run in it is told of before what it holds
        check_not_held(run_dir, PROG, "--run-dir")
    check_fresh_run_dir(config)


PROG = "littlekit train"


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def hold_run_dir(config: TrainConfig) -> contextlib.AbstractContextManager:
    """(rank 0) --run-dir held while the run writes it (`littlekit.swap.hold_output`): a second run
    into it is refused (OutputLocked, naming this one's pid), so two runs never write one
    metrics.jsonl or checkpoint. The other ranks hold nothing: rank 0 writes the run's files."""
    if _rank() != 0:
        return contextlib.nullcontext()
    return hold_output(config.run_dir, PROG, "--run-dir")


def check_writable(run_dir: str | os.PathLike) -> None:
    """ValueError naming --run-dir unless a file can be written there (or, while it does not
    exist yet, in the folder it will be made in), so an unwritable one fails before any work."""
    if problem := unwritable(Path(run_dir) / "probe"):
        raise ValueError(f"argument --run-dir: {problem}; pass a run directory you can write to")


def check_fresh_run_dir(config: TrainConfig) -> None:
    """ValueError when a run without --resume would start over in a run_dir holding a run's
    results (last/, best/, metrics.jsonl), unless config.force.

    A run_dir holding no checkpoint, only the metrics.jsonl of a run that stopped before its last
    step (it failed before saving one), is no run to keep: the new run starts fresh, says so in one
    line, and replaces those files once its first checkpoint is written (nothing is deleted before)."""
    if config.resume is not None or config.force:
        return
    run_dir = Path(config.run_dir)
    held = [name + ("/" * (run_dir / name).is_dir()) for name in RESULTS if (run_dir / name).exists()]
    if not held:
        return
    if held == [METRICS]:  # no checkpoint
        stopped = _stopped_early(run_dir)
        if stopped is None:
            raise ValueError(
                f"--run-dir {run_dir} holds the {METRICS} of a training run that ran to its end, but no "
                f"checkpoint: pass --force to start over there (its {METRICS} is replaced once the new "
                f"run's first checkpoint is written), or pass another --run-dir"
            )
        if _rank() == 0:
            files = ", ".join(name for name in (METRICS, CONFIG_JSON) if (run_dir / name).exists())
            print(f"{PROG}: note: --run-dir {run_dir} holds no checkpoint, only the {files} of a run "
                  f"that {stopped} before saving one: starting fresh (they are replaced once this run's "
                  f"first checkpoint is written)", file=sys.stderr, flush=True)  # fmt: skip
        return
    raise ValueError(
        f"--run-dir {run_dir} already holds a training run ({', '.join(held)}): pass --resume auto "
        f"to continue it, or --force to start over (it is replaced once the new run's first "
        f"checkpoint is written)"
    )


def _stopped_early(run_dir: Path) -> str | None:
    """'stopped at step N of M' when run_dir's metrics.jsonl ends before the last step its
    train_config.json asked for (a run that ends writes its last/ there), else None (it ran to its
    end, or either file cannot be read: not known to have failed)."""
    try:
        asked = json.loads((run_dir / CONFIG_JSON).read_text(encoding="utf-8"))
        end = int(asked.get("stop_at") or asked["max_steps"])
        lines = (run_dir / METRICS).read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    step = 0
    for line in reversed(lines):
        try:  # a killed run may leave half a last line
            step = int(json.loads(line)["step"])
            break
        except (ValueError, TypeError, KeyError):
            continue
    return f"stopped at step {step:,} of {end:,}" if step < end else None


def _check_weights_source(text: str) -> None:
    """--init-from: a save_pretrained directory, or a Hub id (offline: one in the local cache)."""
    from littlekit.lm.tokenizer import _hub_id, _offline

    path = Path(text)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"argument --init-from: {path} holds no config.json; pass a save_pretrained directory "
                f"(a checkpoint's best/ or last/)"
            )
        return
    if path.exists():
        raise FileNotFoundError(f"argument --init-from: {text} is a file; give a save_pretrained directory")
    if not _hub_id(text):
        raise FileNotFoundError(f"argument --init-from: {text} does not exist; check the path")
    if _offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(text, "config.json"), str):
            raise FileNotFoundError(
                f"argument --init-from: {text} is not a local directory, nor a Hub model in the local "
                f"cache (offline mode: HF_HUB_OFFLINE is set)"
            )
