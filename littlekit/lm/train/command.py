"""`littlekit train` itself: check the parsed arguments (a mistake is exit 2), train, print a summary."""

from __future__ import annotations

import argparse
import os

from littlekit.lm.train.checks import accumulation_steps, check_config, check_inputs, check_seq_len
from littlekit.lm.train.config import TrainResult, config_from_args
from littlekit.lm.train.loop import build_schedule, train


def run_train_command(args: argparse.Namespace) -> int:
    """Check the configuration (a mistake is a usage error, exit 2), train, print a summary on rank 0."""
    from littlekit.argtypes import UsageError
    from littlekit.lm.shards import ShardError
    from littlekit.lm.tokenizer import TokenizerError

    try:
        config = config_from_args(args)
        check_config(config)
        config.sources()
        accumulation_steps(config.global_batch, config.micro_batch, int(os.environ.get("WORLD_SIZE", "1")))
        build_schedule(config)
        check_inputs(config)
        check_seq_len(config)
    except (ShardError, TokenizerError):
        raise  # a directory that is there but damaged or of another kind: exit 1, the message says the fix
    except (ValueError, FileNotFoundError) as exc:  # a mistyped value or a path that is not there
        raise UsageError(str(exc), "littlekit train") from None
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
