"""`littlekit launch`'s command line: the plan's flags, one flag per trainer setting it passes on
(generated from TrainConfig, `littlekit.lm.launch.passed_settings`), and the command itself.
`--preset NAME` sets them as `littlekit train --preset NAME` does (its max_steps as --tokens, that
many steps of its batch), and a flag given too overrides it."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from littlekit.argtypes import int_range, port, positive_float
from littlekit.lm.launch import (
    DEFAULT_MFU,
    GPUS,
    MAX_COUNT,
    MAX_VOCAB,
    LaunchConfig,
    check_script,
    make_plan,
    paper_check_lines,
    passed_settings,
    plan_lines,
    script_defaults,
    slurm_script,
    token_count,
)
from littlekit.lm.presets import PRESETS
from littlekit.lm.sizes import DEFAULT_VOCAB_SIZE, QWEN3_SIZES
from littlekit.lm.train.config import (
    TrainConfig,
    add_setting_flags,
    preset_namespace,
    read_presets_first,
    value_from_args,
)
from littlekit.swap import file_beside, unwritable

COUNT = int_range(1, MAX_COUNT)
STEPS = int_range(0, MAX_COUNT)


def add_launch_parser(
    subparsers: Any, config_class: type[TrainConfig] = TrainConfig
) -> argparse.ArgumentParser:
    """Register `littlekit launch` on the CLI's subparsers (with a flag for each of
    `config_class`'s `passed_settings`)."""
    p = subparsers.add_parser(
        "launch",
        help="write a Slurm + torchrun script for training on N x 8 GPUs, with its cost estimate",
        description="Plan a `littlekit train` run on Slurm: check it, estimate wall time and "
        "GPU-hours from FLOPs and an assumed MFU, and write the batch script.",
    )
    p.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="a named recipe of `littlekit train` (littlekit.lm.presets); its max_steps become --tokens; "
        "a flag given too overrides it",
    )
    what = p.add_argument_group("what to train")
    what.add_argument("--size", required=True, help=f"model size: {', '.join(QWEN3_SIZES)}")
    what.add_argument("--tokens", required=True, type=token_count, help="token budget, e.g. 80B")
    what.add_argument("--seq-len", type=COUNT, default=4096)
    what.add_argument("--global-batch", type=COUNT, default=256, help="sequences per step (all GPUs)")
    what.add_argument("--micro-batch", type=COUNT, default=1, help="sequences per GPU per pass")
    what.add_argument(
        "--vocab-size",
        type=int_range(1, MAX_VOCAB),
        help=f"for counts and memory (default: the --tokenizer's when it is a local directory, "
        f"else {DEFAULT_VOCAB_SIZE:,})",
    )
    what.add_argument("--activation-checkpointing", action="store_true")
    what.add_argument(
        "--parallel",
        choices=("ddp", "fsdp"),
        default="ddp",
        help="the trainer's data parallelism; also picks the memory recipe",
    )
    what.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="DIR[:WEIGHT]",
        help="training shards on the cluster, repeatable with weights; with --mix, the root",
    )
    what.add_argument("--mix", help="a named mixture of `littlekit train` (e.g. paper-cooloff)")
    what.add_argument("--val-data", help="validation shard directory on the cluster")
    what.add_argument("--tokenizer", help="tokenizer directory on the cluster")
    what.add_argument("--run-dir", help="where the trainer writes checkpoints and logs")
    what.add_argument(
        "--train-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for `littlekit train`, repeatable (e.g. --train-arg=--compile); one that "
        "sets what launch sets (--max-steps, --save-every, --resume, ...) is refused: use launch's flag",
    )
    where = p.add_argument_group("where and how long")
    where.add_argument("--nodes", type=COUNT, default=1)
    where.add_argument("--gpus-per-node", type=COUNT, default=8)
    where.add_argument("--gpu", default="B200", help=f"peak FLOPS and memory of: {', '.join(GPUS)}")
    where.add_argument(
        "--mfu", type=positive_float, default=DEFAULT_MFU, help="assumed model FLOPs utilisation"
    )
    where.add_argument("--time", help="Slurm time limit (default: estimate + 20%%, whole hours)")
    where.add_argument(
        "--checkpoint-hours",
        type=positive_float,
        default=1.0,
        help="save last/ and validate about this often (default 1 h of estimated training), "
        "unless --save-every / --eval-every say otherwise",
    )
    where.add_argument(
        "--save-every",
        type=STEPS,
        metavar="STEPS",
        help="save last/ every STEPS steps (0: only at the end; default: about every --checkpoint-hours, "
        "at most half a job's time limit)",
    )
    where.add_argument(
        "--eval-every",
        type=STEPS,
        metavar="STEPS",
        help="validate every STEPS steps (0: at the start and the end only; default: with each save)",
    )
    where.add_argument("--partition")
    where.add_argument("--account")
    where.add_argument("--job-name")
    where.add_argument("--cpus-per-gpu", type=COUNT, default=8)
    where.add_argument("--log-dir", default="logs")
    where.add_argument("--venv", help="virtual environment to activate on the nodes")
    where.add_argument("--workdir", help="directory to cd into on the nodes")
    where.add_argument("--master-port", type=port, default=29500, help="torchrun rendezvous port (1-65535)")
    settings = p.add_argument_group(
        "the trainer's other settings", "passed to `littlekit train`; defaults as there, unless shown"
    )
    add_setting_flags(settings, passed_settings(config_class), script_defaults())
    p.add_argument("--out", type=Path, help="script path (default: littlelearner-<size>.sbatch)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out script (--force is the trainer's own flag, passed on to it)",
    )
    p.add_argument("--dry-run", action="store_true", help="check and print; write nothing")
    read_presets_first(p, lambda name: launch_preset(p, name, config_class))
    return p


def launch_preset(
    parser: argparse.ArgumentParser, name: str, config_class: type[TrainConfig] = TrainConfig
) -> dict[str, Any]:
    """A preset as launch's namespace holds it: the trainer's settings by name, its max_steps as
    the token budget of that many steps (with the preset's batch and length, else launch's)."""
    values = preset_namespace(name, config_class)
    if (steps := values.pop("max_steps", None)) is not None:
        batch, length = (values.get(k, parser.get_default(k)) for k in ("global_batch", "seq_len"))
        values["tokens"] = steps * batch * length
    return values


def vocab_size_for(tokenizer: str | None, vocab_size: int | None) -> int:
    """An explicit vocabulary size, else a local tokenizer's length (the trainer's model vocabulary)."""
    if vocab_size is not None:
        return vocab_size
    if tokenizer and Path(tokenizer).is_dir():
        from littlekit.lm.tokenizer import load_tokenizer

        return len(load_tokenizer(tokenizer))
    return DEFAULT_VOCAB_SIZE


def config_from_args(args: argparse.Namespace, config_class: type[TrainConfig] = TrainConfig) -> LaunchConfig:
    """The LaunchConfig `littlekit launch`'s parsed arguments describe."""
    return LaunchConfig(
        size=args.size,
        tokens=args.tokens,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        gpu=args.gpu,
        mfu=args.mfu,
        seq_len=args.seq_len,
        global_batch=args.global_batch,
        micro_batch=args.micro_batch,
        vocab_size=vocab_size_for(args.tokenizer, args.vocab_size),
        activation_checkpointing=args.activation_checkpointing,
        parallel=args.parallel,
        checkpoint_hours=args.checkpoint_hours,
        save_every=args.save_every,
        eval_every=args.eval_every,
        data=list(args.data),
        mix=args.mix,
        val_data=args.val_data,
        tokenizer=args.tokenizer,
        run_dir=args.run_dir,
        train_extra=list(args.train_arg),
        train_settings={f.name: value_from_args(f, args) for f in passed_settings(config_class)},
        job_name=args.job_name,
        time=args.time,
        partition=args.partition,
        account=args.account,
        cpus_per_gpu=args.cpus_per_gpu,
        log_dir=args.log_dir,
        venv=args.venv,
        workdir=args.workdir,
        master_port=args.master_port,
    )


def run_launch_command(args: argparse.Namespace) -> int:
    """Check the plan; print it (and the script on --dry-run) or write the script. 2 on problems,
    among them an existing --out without --overwrite."""
    plan = make_plan(config_from_args(args))
    if plan.ok:
        plan.problems += check_script(plan)
    for warning in plan.warnings:
        print(f"littlekit launch: warning: {warning}", file=sys.stderr)
    if not plan.ok:
        for problem in plan.problems:
            print(f"littlekit launch: error: {problem}", file=sys.stderr)
        return 2
    script = slurm_script(plan)
    out = args.out or Path(f"littlelearner-{plan.config.size}.sbatch")
    if not args.dry_run and (problem := out_problem(out, args.overwrite)):
        print(f"littlekit launch: error: {problem}", file=sys.stderr)
        return 2
    for line in plan_lines(plan) + paper_check_lines(plan.config.vocab_size, args.seq_len):
        print(line)
    if args.dry_run:
        print("dry run: configuration OK; nothing written. The script would be:\n")
        print(script)
        return 0
    write_script(script, out)
    print(f"wrote {out}; submit with: mkdir -p {shlex.quote(args.log_dir)} && sbatch {shlex.quote(str(out))}")
    return 0


def out_problem(out: Path, overwrite: bool) -> str | None:
    """Why the script cannot be written to `out` (checked before anything is written), or None."""
    if out.is_dir():
        return f"--out {out} is a folder; give the script's file name"
    if (out.exists() or out.is_symlink()) and not overwrite:
        return f"--out {out} exists; pass --overwrite to replace it"
    if problem := unwritable(out):
        return f"--out {out}: {problem}"
    return None


def write_script(script: str, out: Path) -> None:
    """Write the script beside `out`, then rename it over: an existing script is replaced whole."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with file_beside(out) as partial:
        partial.write_text(script, encoding="utf-8")
        partial.chmod(0o755)
