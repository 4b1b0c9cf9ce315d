"""`littlekit train` itself: check the parsed arguments (a mistake is exit 2), train, print a summary;
with --dry-run, print the resolved settings (a --preset's and the flags') and train nothing."""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import fields

from littlekit.lm.train.checks import accumulation_steps, check_config, check_inputs, check_seq_len
from littlekit.lm.train.config import TrainConfig, TrainResult, config_from_args, setting_argv
from littlekit.lm.train.loop import build_schedule, train


def run_train_command(args: argparse.Namespace) -> int:
    """Check the configuration (a mistake is a usage error, exit 2), train, print a summary on rank 0."""
    from littlekit.argtypes import UsageError
    from littlekit.lm.shards import ShardError
    from littlekit.lm.tokenizer import TokenizerError

    dry_run = getattr(args, "dry_run", False)
    try:
        config = config_from_args(args)
        check_config(config)
        if not dry_run or config.data is not None:
            config.sources()
        accumulation_steps(config.global_batch, config.micro_batch, int(os.environ.get("WORLD_SIZE", "1")))
        build_schedule(config)
        if not dry_run:
            check_inputs(config)
        check_seq_len(config)
    except (ShardError, TokenizerError):
        raise  # a directory that is there but damaged or of another kind: exit 1, the message says the fix
    except (ValueError, FileNotFoundError) as exc:  # a mistyped value or a path that is not there
        raise UsageError(str(exc), "littlekit train") from None
    if dry_run:
        for line in dry_run_lines(config, getattr(args, "preset", None)):
            print(line)
        return 0
    result = train(config)
    if int(os.environ.get("RANK", "0")) == 0:
        for line in summary_lines(result):
            print(line)
    return 0


def summary_lines(result: TrainResult) -> list[str]:
    lines = [
        f"trained {result.steps:,} steps ({result.tokens:,} tokens) on {result.world_size} process(es)"
        + (f", resumed at step {result.resumed_from_step:,}" if result.resumed_from_step else ""),
        f"final loss {result.final_loss:.4f}" if result.final_loss is not None else "no step run",
    ]
    if result.best_val_bpb is not None:
        lines.append(
            f"validation bits per byte: last {result.last_val_bpb:.4f}, "
            f"best {result.best_val_bpb:.4f} at step {result.best_step:,} -> {result.best_checkpoint}"
        )
    lines.append(f"last checkpoint: {result.last_checkpoint}   metrics: {result.metrics_path}")
    return lines


def dry_run_lines(config: TrainConfig, preset: str | None = None) -> list[str]:
    """Every setting as `name = value` (Python literals), between a heading and the same run spelt
    as `littlekit train` flags (none for a setting at its default)."""
    given = f" --preset {preset}" if preset else ""
    lines = [f"# littlekit train{given} --dry-run: the resolved settings; nothing is trained"]
    lines += [f"{f.name} = {getattr(config, f.name)!r}" for f in fields(config) if f.init]
    argv = setting_argv({f.name: getattr(config, f.name) for f in fields(config) if f.init})
    lines.append(f"# as flags: littlekit train {shlex.join(argv)}")
    return lines
