"""`littlekit launch`: a Slurm batch script running `littlekit train` under torchrun on N x 8 GPUs.

    littlekit launch --size 5B --tokens 80B --nodes 1 --gpu B200 --dry-run
    littlekit launch --size 5B --tokens 80B --data /shards/k5 --val-data /shards/val \\
        --tokenizer /tok --run-dir /runs/5b --out 5b.sbatch

The plan (`make_plan`) counts the model's parameters and training FLOPs (littlekit.lm.sizes), checks
the configuration (batch divisible by GPUs x micro batch, sequence length within the model's
positions, the peak memory per GPU, with the optimizer step's temporaries, within the GPU's
(`littlekit.lm.launch_memory`), at least one step) and estimates wall time and
GPU-hours as FLOPs / (GPUs x peak x MFU). Every number it assumes is printed with it. The
paper's 5B run is the check: pretrained for 100 h on 8 B200 (section 3.2) towards an 80B-token
target (sections 3.3 and A.4; the corpus itself is 88B tokens). `paper_check` prints the MFU
those figures imply for our 5B shape at 80B and 88B tokens.

The trainer's command line is generated from `TrainConfig`'s fields (`train_argv`, through
`littlekit.lm.train.config.setting_argv`), and every trainer setting the plan does not size or
derive itself is a launch flag too, parsed as `littlekit train` parses it and with its default
(but the script's own: --precision bf16, --resume auto, no progress bar); `check_script` parses
the result with the trainer's own parser. The script passes `--resume auto` and saves `last/`
about every `--checkpoint-hours` (at most half a job's time limit, and at most the run's steps),
so when a job hits its time limit, submitting the same script again continues the run; a plan
whose single step would outlast a job is refused. `--save-every`/`--eval-every` replace the computed
intervals; a `--train-arg` that sets what the plan or another launch flag sets is refused (it would
silently override the plan), naming the launch flag to use instead. Every value the script holds
is checked or quoted (`littlekit.lm.launch_checks`: #SBATCH values must be plain). The command line
itself is `littlekit.lm.launch_command`; an existing --out script is replaced only with
`--overwrite` (`--force` is the trainer's, passed on), and then whole (written beside it, then
renamed over it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import re
import shlex
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from littlekit import __version__, paper
from littlekit.argtypes import Parser, UsageError
from littlekit.lm.launch_checks import not_an_option, script_problems, shell_join, train_arg_problems
from littlekit.lm.launch_memory import MemoryPlan, memory_lines, memory_problem, plan_memory
from littlekit.lm.sizes import (
    DEFAULT_VOCAB_SIZE,
    GPU_PEAK_BF16,
    QWEN3_SIZES,
    RECIPES,
    flops_per_token,
    param_counts,
    qwen3_config,
)
from littlekit.lm.train.config import TrainConfig, add_train_parser, parse_source, setting_argv


@dataclass(frozen=True)
class GPU:
    """Per-GPU peak dense throughput and usable memory, with where the numbers come from."""

    name: str
    peak_bf16: float  # FLOP/s, dense (no 2:4 sparsity)
    peak_fp8: float
    memory_bytes: float
    source: str


GPUS: dict[str, GPU] = {  # dense BF16 peaks from sizes.GPU_PEAK_BF16, which the trainer's MFU uses too
    "B200": GPU(
        "B200", GPU_PEAK_BF16["B200"], 4.5e15, 180e9,
        "NVIDIA HGX B200 (1,000 W) datasheet figures halved from sparse to dense: 2.25 PFLOPS BF16, "
        "4.5 PFLOPS FP8; 1,440 GB HBM3e per 8 GPUs = 180 GB each (192 GB physical, ~179 GB usable)",
    ),
    "H100": GPU(
        "H100", GPU_PEAK_BF16["H100"], 1979e12, 80e9,
        "NVIDIA H100 SXM5 datasheet: 989 TFLOPS dense BF16, 1,979 TFLOPS dense FP8, 80 GB HBM3",
    ),
    "H200": GPU(
        "H200", GPU_PEAK_BF16["H200"], 1979e12, 141e9,
        "NVIDIA H200 SXM datasheet: 989 TFLOPS dense BF16, 1,979 TFLOPS dense FP8, 141 GB HBM3e",
    ),
}  # fmt: skip

DEFAULT_MFU = 0.40  # our assumption: well-tuned dense-model training reaches 35-50% of BF16 peak
TIME_MARGIN = 0.20  # the Slurm time limit is the estimate plus this fraction, rounded up to an hour
JOB_SAVE_SHARE = 0.5  # last/ is saved at least this often, as a share of one job's time limit

# The paper's 5B run: 100 h on 8 B200 (section 3.2); 80B training tokens (3.3, A.4), 88B corpus.
_P = {k: paper.number(k).value for k in ("train_gpus", "train_hours", "train_tokens_low", "corpus_tokens")}
PAPER_RUN = {
    "size": paper.number("largest_model").shown,
    "gpu": "B200",
    "n_gpus": int(_P["train_gpus"]),
    "hours": _P["train_hours"],
    "tokens": (_P["train_tokens_low"], _P["corpus_tokens"]),
}

_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
MAX_TOKENS = 10**15  # 1,000T: far beyond any corpus; a larger budget is a typo (1e30, an extra suffix)
MAX_COUNT = 2**31 - 1  # nodes, GPUs, batch sizes, lengths, CPUs
MAX_VOCAB = 2**32  # token ids are stored as uint32 at most
MAX_HOURS = 24 * 365 * 100  # checkpoint interval and time limits: a century is a typo


def parse_count(text: str | int | float) -> int:
    """'80B' -> 80_000_000_000; also '500M', '1.5T', '88e9', '120k', plain integers."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmbgt]?)\s*", str(text).lower())
        if not match:
            raise ValueError(f"expected a count like 80B, 500M or 88e9, got {text!r}")
        value = float(match.group(1)) * _SUFFIXES[match.group(2)]
    if math.isnan(value) or value < 1:
        raise ValueError(f"expected a positive count, got {text!r}")
    if not value <= MAX_TOKENS:  # also inf
        raise ValueError(f"{text!r} is more than 1,000T (10^15) tokens, beyond any corpus; a typo?")
    return int(round(value))


def token_count(text: str) -> int:
    """parse_count as an argument type: one line naming the flag and the value when it is refused."""
    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass
class TrainArgs:
    """What `littlekit train` is told: the plan's settings, and in `settings` any other TrainConfig
    field by name. The defaults here are the script's (`train_argv` spells them as flags)."""

    size: str
    seq_len: int
    global_batch: int  # sequences per optimizer step, all GPUs together
    micro_batch: int  # sequences per GPU per forward/backward
    max_steps: int
    data: list[str] = field(default_factory=list)  # DIR or DIR:WEIGHT, one per source
    mix: str | None = None  # a named mixture (the trainer's MIXES); data is then its root
    val_data: str | None = None
    tokenizer: str | None = None
    run_dir: str | None = None
    parallel: str = "ddp"
    precision: str = "bf16"
    device: str = "cuda"  # a GPU plan never falls back to the CPU (the trainer's "auto" would)
    activation_checkpointing: bool = False
    save_every: int = 0
    eval_every: int = 0
    resume: str | None = "auto"  # a resubmitted job continues from run_dir/last/
    progress: bool = False  # no progress bar in a batch log
    settings: dict[str, Any] = field(default_factory=dict)  # other TrainConfig fields; override the above
    extra: list[str] = field(default_factory=list)  # passed through verbatim, after everything else


# The plan's numbers are written out even where they are the trainer's defaults, so the script says
# what it trains; every other setting is written when it differs from `littlekit train`'s default.
STATED = ("size", "seq_len", "global_batch", "micro_batch", "max_steps", "parallel", "precision",
          "save_every", "eval_every")  # fmt: skip
# TrainConfig fields the plan computes: --tokens gives max_steps, --checkpoint-hours save_every and
# eval_every, unless launch's own --save-every and --eval-every give them.
DERIVED = ("max_steps", "save_every", "eval_every")


def train_argv(args: TrainArgs, config_class: type[TrainConfig] = TrainConfig) -> list[str]:
    """The `littlekit train` arguments (after the subcommand) for these settings."""
    values = {f.name: getattr(args, f.name) for f in fields(args) if f.name not in ("settings", "extra")}
    return setting_argv({**values, **args.settings}, config_class, always=STATED) + list(args.extra)


@dataclass
class LaunchConfig:
    """Everything `littlekit launch` is asked for."""

    size: str
    tokens: int
    nodes: int = 1
    gpus_per_node: int = 8
    gpu: str = "B200"
    mfu: float = DEFAULT_MFU
    seq_len: int = 4096
    global_batch: int = 256
    micro_batch: int = 1
    vocab_size: int = DEFAULT_VOCAB_SIZE
    activation_checkpointing: bool = False
    parallel: str = "ddp"  # the trainer's --parallel, and the memory recipe (littlekit.lm.sizes.RECIPES)
    checkpoint_hours: float = 1.0  # save last/ and evaluate about this often
    save_every: int | None = None  # last/ every N steps (0: at the end only); None: from checkpoint_hours
    eval_every: int | None = None  # validation every N steps (0: start and end); None: with each save
    data: list[str] = field(default_factory=list)
    mix: str | None = None
    val_data: str | None = None
    tokenizer: str | None = None
    run_dir: str | None = None
    train_extra: list[str] = field(default_factory=list)
    # The trainer's other settings by TrainConfig field name (`passed_settings`; the command line
    # fills every one); a name missing here takes TrainArgs' default, else the trainer's.
    train_settings: dict[str, Any] = field(default_factory=dict)
    job_name: str | None = None
    time: str | None = None  # Slurm time limit; None = the estimate plus TIME_MARGIN
    partition: str | None = None
    account: str | None = None
    cpus_per_gpu: int = 8
    log_dir: str = "logs"
    venv: str | None = None
    workdir: str | None = None
    master_port: int = 29500

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass
class Plan:
    """The checked configuration and its estimates; `problems` empty means it can be launched."""

    config: LaunchConfig
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    params: dict[str, int] = field(default_factory=dict)
    flops_per_token: int = 0
    steps: int = 0
    accumulation: int = 0
    train_tokens: int = 0
    total_flops: float = 0.0
    memory: dict[str, int] = field(default_factory=dict)  # held through forward/backward (memory.parts)
    memory_plan: MemoryPlan = field(default_factory=MemoryPlan)  # and the optimizer step, and the peak
    hours: float = 0.0
    gpu_hours: float = 0.0
    save_every: int = 0
    save_hours: float = 0.0  # the estimated hours between two saves of last/
    eval_every: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def train_args(self) -> TrainArgs:
        c = self.config
        return TrainArgs(
            size=c.size,
            seq_len=c.seq_len,
            global_batch=c.global_batch,
            micro_batch=c.micro_batch,
            max_steps=self.steps,
            data=list(c.data),
            mix=c.mix,
            val_data=c.val_data,
            tokenizer=c.tokenizer,
            run_dir=c.run_dir,
            parallel=c.parallel,
            activation_checkpointing=c.activation_checkpointing,
            save_every=self.save_every,
            eval_every=self.eval_every,
            settings=dict(c.train_settings),
            extra=list(c.train_extra),
        )


def _positive(plan: Plan, **values: float) -> bool:
    bad = [f"{name.replace('_', ' ')} must be positive, got {v}" for name, v in values.items() if v < 1]
    plan.problems += bad
    return not bad


def _batch_problem(c: LaunchConfig) -> str | None:
    step = c.world_size * c.micro_batch
    if c.global_batch % step == 0:
        return None
    lower, upper = c.global_batch // step * step, (c.global_batch // step + 1) * step
    choices = f"{lower} or {upper}" if lower else f"{upper}"
    return (
        f"global batch {c.global_batch} sequences is not divisible by GPUs x micro batch "
        f"= {c.world_size} x {c.micro_batch} = {step}; use {choices}, or change --micro-batch"
    )


def estimate_hours(total_flops: float, n_gpus: int, gpu: GPU, mfu: float) -> float:
    """Wall-clock hours for total_flops on n_gpus running at mfu of their dense BF16 peak."""
    return total_flops / (n_gpus * gpu.peak_bf16 * mfu) / 3600.0


def make_plan(config: LaunchConfig) -> Plan:
    """Check a launch configuration and estimate its cost; problems are collected, not raised."""
    plan, c = Plan(config), config
    if c.size not in QWEN3_SIZES:
        plan.problems.append(f"unknown model size {c.size!r}; known: {', '.join(QWEN3_SIZES)}")
    if c.gpu not in GPUS:
        plan.problems.append(f"unknown GPU {c.gpu!r}; known: {', '.join(GPUS)}")
    if not 0.0 < c.mfu <= 1.0:
        plan.problems.append(f"MFU must be a fraction in (0, 1], got {c.mfu}")
    numbers_ok = _positive(
        plan,
        nodes=c.nodes,
        gpus_per_node=c.gpus_per_node,
        seq_len=c.seq_len,
        global_batch=c.global_batch,
        micro_batch=c.micro_batch,
        vocab_size=c.vocab_size,
        tokens=c.tokens,
        cpus_per_gpu=c.cpus_per_gpu,
    )
    if c.parallel not in ("ddp", "fsdp"):
        plan.problems.append(f"parallel must be ddp or fsdp, got {c.parallel!r}")
    if not 0 < c.checkpoint_hours <= MAX_HOURS:
        plan.problems.append(
            f"checkpoint hours must be positive (at most {MAX_HOURS:,}), got {c.checkpoint_hours}"
        )
    if not 1 <= c.master_port <= 65535:
        plan.problems.append(f"master port must be between 1 and 65535, got {c.master_port}")
    if c.tokens > MAX_TOKENS:
        plan.problems.append(f"token budget {c.tokens:.3g} is more than 1,000T (10^15) tokens; a typo?")
    if planned := sorted(set(c.train_settings) & (_planned_names() | set(DERIVED))):
        plan.problems.append(f"train_settings names what the plan sets itself: {', '.join(planned)}")
    for flag, value in (("--save-every", c.save_every), ("--eval-every", c.eval_every)):
        if value is not None and not 0 <= value <= MAX_COUNT:
            plan.problems.append(f"{flag} must be a whole number of steps, 0 to {MAX_COUNT:,}, got {value}")
    plan.problems += script_problems(c) + _train_arg_problems(c)
    if not numbers_ok or c.size not in QWEN3_SIZES or c.parallel not in ("ddp", "fsdp"):
        return plan
    if problem := _batch_problem(c):
        plan.problems.append(problem)
    try:  # the trainer's --model-override settings change what is counted too
        model = qwen3_config(c.size, c.vocab_size, **c.train_settings.get("model_overrides", {}))
    except (TypeError, ValueError) as exc:
        plan.problems.append(f"--model-override: {exc}")
        return plan
    if c.seq_len > model.max_position_embeddings:
        plan.problems.append(
            f"sequence length {c.seq_len} exceeds the {c.size} model's max_position_embeddings "
            f"{model.max_position_embeddings}"
        )
    tokens_per_step = c.global_batch * c.seq_len
    plan.steps = math.ceil(c.tokens / tokens_per_step)
    plan.accumulation = max(1, c.global_batch // (c.world_size * c.micro_batch))
    plan.train_tokens = plan.steps * tokens_per_step
    plan.params = param_counts(model)
    plan.flops_per_token = flops_per_token(model, c.seq_len)
    plan.total_flops = float(plan.flops_per_token) * plan.train_tokens
    if c.tokens < tokens_per_step:
        plan.problems.append(
            f"token budget {c.tokens:,} is less than one step of {tokens_per_step:,} tokens "
            f"(global batch {c.global_batch} x seq {c.seq_len})"
        )
    optimizer = c.train_settings.get("optimizer", "muon")
    if optimizer not in ("muon", "adamw"):
        plan.problems.append(f"optimizer must be muon or adamw, got {optimizer!r}")
        return plan
    plan.memory_plan = plan_memory(
        model, c.world_size, c.seq_len, c.micro_batch, c.global_batch, parallel=c.parallel,
        activation_checkpointing=c.activation_checkpointing, optimizer=optimizer,
    )  # fmt: skip
    plan.memory = plan.memory_plan.parts
    if c.gpu in GPUS:
        if problem := memory_problem(plan.memory_plan, c.gpu, GPUS[c.gpu].memory_bytes):
            plan.problems.append(problem)
        if 0.0 < c.mfu <= 1.0:
            plan.hours = estimate_hours(plan.total_flops, c.world_size, GPUS[c.gpu], c.mfu)
            plan.gpu_hours = plan.hours * c.world_size
            if not plan.hours <= MAX_HOURS:  # also inf, from an MFU too small to be meant
                plan.problems.append(
                    f"estimated wall time {plan.hours:.3g} h is more than a century: check --tokens, "
                    f"--mfu ({c.mfu:g}) and the number of GPUs"
                )
                return plan
            limit = _check_time(plan)  # None without --time, or when it is refused
            if c.checkpoint_hours > 0 and plan.hours > 0 and (limit is not None or c.time is None):
                _plan_saves(plan, limit)
    return plan


def _plan_saves(plan: Plan, limit: float | None) -> None:
    """save_every: about every --checkpoint-hours, but at most JOB_SAVE_SHARE of one job's time
    limit (--time, else the script's own), so every job of a resubmitted run writes last/ before
    Slurm stops it, and at most the run's steps. A problem when one step outlasts a job."""
    c = plan.config
    if limit is None:  # the script's own limit: the estimate plus TIME_MARGIN
        limit = parse_slurm_time(slurm_time(plan.hours * (1.0 + TIME_MARGIN)))
    step_hours = plan.hours / plan.steps
    if step_hours >= limit:
        plan.problems.append(
            f"--time {time_limit(plan)}: one optimizer step is estimated at {step_hours * 3600:,.0f} s, "
            f"longer than a job's time limit, so no job could ever save last/ and each resubmission "
            f"would start over; give a longer --time, or more GPUs"
        )
        return
    if c.save_every is not None:  # as given; 0 (the trainer's: at the end only) or beyond the run too
        plan.save_every = c.save_every
        _check_saves(plan, limit, step_hours)
    else:
        wanted = round(plan.steps * c.checkpoint_hours / plan.hours)
        fit = math.floor(plan.steps * limit * JOB_SAVE_SHARE / plan.hours)  # the most steps of half a job
        plan.save_every = max(1, min(plan.steps, wanted, fit))
    plan.save_hours = _steps_between_saves(plan) * step_hours
    plan.eval_every = plan.save_every if c.eval_every is None else c.eval_every


def _steps_between_saves(plan: Plan) -> int:
    """Steps from one save of last/ to the next: save_every, or the whole run when saved at its end only."""
    return plan.save_every if 0 < plan.save_every < plan.steps else plan.steps


def _check_saves(plan: Plan, limit: float, step_hours: float) -> None:
    """An explicit --save-every against one job's time limit: refused when a run of several jobs
    would never save last/ before a job is stopped, a warning when a stopped job may lose most of
    its time."""
    every, hours = plan.save_every, _steps_between_saves(plan) * step_hours
    said = f"--save-every {every}" + (" (at the end only)" if every == 0 or every >= plan.steps else "")
    if hours >= limit and plan.hours > limit:
        plan.problems.append(
            f"{said}: last/ would be saved every ~{hours:.3g} h of training, but a job's time limit is "
            f"{time_limit(plan)} and the run needs several jobs, so no job would save last/ before Slurm "
            f"stops it and each resubmission would start over; give a smaller --save-every, or leave it "
            f"out to save about every --checkpoint-hours"
        )
    elif hours > limit * JOB_SAVE_SHARE:
        plan.warnings.append(
            f"{said}: last/ is saved every ~{hours:.3g} h of training, more than half of a job's time "
            f"limit {time_limit(plan)}: a job stopped at its limit loses up to that much training"
        )


def _check_time(plan: Plan) -> float | None:
    """--time in hours (None without one, or when it is refused)."""
    if plan.config.time is None:
        return None
    try:
        limit = parse_slurm_time(plan.config.time)
    except ValueError as exc:
        plan.problems.append(str(exc))
        return None
    if not 0 < limit <= MAX_HOURS:
        plan.problems.append(
            f"--time {plan.config.time}: a time limit must be more than 0 and at most {MAX_HOURS:,} h"
        )
        return None
    if limit < plan.hours:
        jobs = math.ceil(plan.hours / limit)
        plan.warnings.append(
            f"time limit {plan.config.time} is shorter than the {plan.hours:.1f} h estimate: "
            f"about {jobs} jobs, each resuming from the last checkpoint"
        )
    return limit


def check_script(plan: Plan) -> list[str]:
    """Problems with the script's inputs: the trainer's required paths, and whether
    `littlekit train`'s own parser accepts the generated arguments."""
    c = plan.config
    problems = [
        f"the script needs {flag} (a path on the cluster)"
        for flag, value in (("--data", c.data), ("--tokenizer", c.tokenizer))
        if not value
    ]
    if problems:
        return problems
    parser = Parser(prog="littlekit")  # a refused argument raises UsageError naming it
    add_train_parser(parser.add_subparsers(dest="command"))
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse prints usage before exiting
            parser.parse_args(["train", *train_argv(plan.train_args())])
    except (UsageError, argparse.ArgumentError, SystemExit) as exc:
        problems.append(f"`littlekit train` refuses the generated arguments: {exc}")
    for source in c.data if c.mix is None else []:
        weight = parse_source(source)[1]
        if not (math.isfinite(weight) and weight > 0):
            problems.append(f"--data {source}: a source's weight must be a positive number")
    return problems


def _train_arg_problems(c: LaunchConfig) -> list[str]:
    """--train-arg arguments setting what the script sets: TrainArgs' fields, the model the plan
    counts, and every other setting whose launch flag was given (launch_checks.train_arg_problems)."""
    owned = {f.name for f in fields(TrainArgs)} - {"settings", "extra"} | {"model_overrides"}
    written = {name for name, value in c.train_settings.items() if setting_argv({name: value})}
    return train_arg_problems(list(c.train_extra), owned | written, passed_settings())


def parse_slurm_time(text: str) -> float:
    """Hours in a Slurm time limit: 'D-HH:MM:SS', 'D-HH', 'HH:MM:SS', 'MM:SS' or minutes."""
    match = re.fullmatch(r"(?:([0-9]+)-)?([0-9]+)(?::([0-9]+))?(?::([0-9]+))?", text)  # no spaces: #SBATCH
    if not match:
        raise ValueError(f"time limit {text!r} is not in a Slurm format such as 4-04:00:00")
    days, a, b, c = (int(g) if g else None for g in match.groups())
    if days is not None:  # D-HH[:MM[:SS]]
        h, m, s = a, b or 0, c or 0
        return days * 24 + h + m / 60 + s / 3600
    if c is not None:  # HH:MM:SS
        return a + b / 60 + c / 3600
    if b is not None:  # MM:SS
        return a / 60 + b / 3600
    return a / 60  # minutes


def slurm_time(hours: float) -> str:
    """'D-HH:MM:SS' for a number of hours, rounded up to the whole hour."""
    whole = max(1, math.ceil(hours - 1e-9))
    return f"{whole // 24}-{whole % 24:02d}:00:00"


def time_limit(plan: Plan) -> str:
    """The configured Slurm time limit, or the estimate plus TIME_MARGIN."""
    return plan.config.time or slurm_time(plan.hours * (1.0 + TIME_MARGIN))


def torchrun_argv(plan: Plan) -> list[str]:
    """torchrun over all nodes, rendezvous (c10d) at the first node of the allocation."""
    c = plan.config
    return [
        "torchrun",
        "--nnodes", str(c.nodes),
        "--nproc_per_node", str(c.gpus_per_node),
        "--rdzv_id", "$SLURM_JOB_ID",
        "--rdzv_backend", "c10d",
        "--rdzv_endpoint", "$MASTER_ADDR:$MASTER_PORT",
        "-m", "littlekit.cli", "train",
        *train_argv(plan.train_args()),
    ]  # fmt: skip


def slurm_script(plan: Plan) -> str:
    """The sbatch script: one task per node, torchrun starting gpus_per_node processes in each.
    Only for a plan without problems: its values are then the checked ones (`script_problems`)."""
    if not plan.ok:
        raise ValueError(f"a plan with problems has no script: {'; '.join(plan.problems)}")
    c, gpu, argv = plan.config, GPUS[plan.config.gpu], torchrun_argv(plan)
    name = c.job_name or f"littlelearner-{c.size}"
    sbatch = {
        "job-name": name,
        "nodes": c.nodes,
        "ntasks-per-node": 1,
        "gpus-per-node": c.gpus_per_node,
        "cpus-per-task": c.cpus_per_gpu * c.gpus_per_node,
        "time": time_limit(plan),
        "output": f"{c.log_dir}/%x-%j.out",
        "partition": c.partition,
        "account": c.account,
    }
    lines = [
        "#!/bin/bash",
        *(f"#SBATCH --{key}={value}" for key, value in sbatch.items() if value is not None),
        "#SBATCH --exclusive",
        "",
        f"# Written by `littlekit launch` (littlekit {__version__}).",
        *(f"# {line}" for line in plan_lines(plan)),
        f"# Peak: {gpu.source}.",
        f"# Memory: {RECIPES[c.parallel].description}.",
        "",
        "set -euo pipefail",
        *([f"cd {shlex.quote(not_an_option(c.workdir))}"] if c.workdir else []),
        *([f"source {shlex.quote(not_an_option(c.venv))}/bin/activate"] if c.venv else []),
        "export HF_HUB_OFFLINE=1 LITTLEKIT_DEBUG=1  # a failing rank prints its traceback",
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # less fragmentation at peak",
        'ulimit -n "$(ulimit -Hn)"  # memory-mapped shards each hold a file descriptor',
        f"export OMP_NUM_THREADS={c.cpus_per_gpu}",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',
        f"MASTER_PORT={c.master_port}",
        "export MASTER_ADDR MASTER_PORT",
        "",
        "srun --kill-on-bad-exit=1 " + shell_join(argv, len(argv) - len(train_argv(plan.train_args()))),
        "",
    ]
    return "\n".join(lines)


def plan_lines(plan: Plan) -> list[str]:
    """The plan in a few lines, every assumption named."""
    c, p = plan.config, plan.params
    gpu = GPUS[c.gpu]
    tokens_per_step = c.global_batch * c.seq_len
    return [
        f"{c.size} on {c.tokens / 1e9:.2f}B tokens: {c.nodes} node(s) x {c.gpus_per_node} {gpu.name} "
        f"= {c.world_size} GPUs",
        f"model: {p['total'] / 1e9:.3f}B parameters ({p['embedding'] / 1e9:.3f}B embedding, "
        f"{p['non_embedding'] / 1e9:.3f}B non-embedding), vocab {c.vocab_size:,}, seq {c.seq_len}",
        f"batch: global {c.global_batch} sequences ({tokens_per_step:,} tokens) = {c.world_size} GPUs "
        f"x micro {c.micro_batch} x {plan.accumulation} accumulation; {plan.steps:,} steps "
        f"({plan.train_tokens / 1e9:.2f}B tokens)",
        f"compute: {plan.flops_per_token:.3e} FLOPs/token (6N + 12·L·d_attn·seq, PaLM), "
        f"{plan.total_flops:.3e} FLOPs in all",
        *memory_lines(plan.memory_plan, gpu.memory_bytes),
        f"time: {plan.hours:.1f} h wall, {plan.gpu_hours:,.0f} GPU-hours at an assumed MFU of "
        f"{c.mfu:.0%} of {gpu.peak_bf16 / 1e12:,.0f} TFLOPS dense BF16 per GPU; "
        f"Slurm limit {time_limit(plan)}; {_saves_line(plan)}",
    ]


def _saves_line(plan: Plan) -> str:
    """How often last/ is saved and validation runs, as the script tells the trainer."""
    if 0 < plan.save_every < plan.steps:
        saves = f"every {plan.save_every:,} steps (~{plan.save_hours:.3g} h)"
    else:
        saves = f"only at the end (step {plan.steps:,}, ~{plan.save_hours:.3g} h)"
    if plan.eval_every == plan.save_every and 0 < plan.save_every < plan.steps:
        return f"last/ saved and validation run {saves}"
    evals = (f"every {plan.eval_every:,} steps" if 0 < plan.eval_every < plan.steps
             else "at the start and the end only")  # fmt: skip
    return f"last/ saved {saves}; validation run {evals}"


def paper_check(vocab_size: int = DEFAULT_VOCAB_SIZE, seq_len: int = 4096) -> dict[str, Any]:
    """The MFU the paper's 5B run implies for our 5B shape: FLOPs / (8 B200 x 100 h x peak)."""
    config = qwen3_config(PAPER_RUN["size"], vocab_size)
    gpu = GPUS[PAPER_RUN["gpu"]]
    per_token = flops_per_token(config, seq_len)
    gpu_seconds = PAPER_RUN["n_gpus"] * PAPER_RUN["hours"] * 3600.0
    rows = []
    for tokens in PAPER_RUN["tokens"]:
        achieved = per_token * tokens / gpu_seconds
        rows.append(
            {
                "tokens": tokens,
                "flops": per_token * tokens,
                "flops_per_gpu_s": achieved,
                "mfu_bf16": achieved / gpu.peak_bf16,
                "mfu_fp8": achieved / gpu.peak_fp8,
            }
        )
    return {"params": param_counts(config)["total"], "flops_per_token": per_token, "rows": rows}


def paper_check_lines(vocab_size: int = DEFAULT_VOCAB_SIZE, seq_len: int = 4096) -> list[str]:
    check = paper_check(vocab_size, seq_len)
    low, high = check["rows"][0], check["rows"][-1]
    return [
        f"paper check: the paper pretrains 5B for 100 h on 8 B200 (its section 3.2) on 80-88B "
        f"tokens (its 80B-token target, its 88B-token corpus). "
        f"For our 5B shape ({check['params'] / 1e9:.2f}B, seq {seq_len}) that is "
        f"{low['flops']:.2e}-{high['flops']:.2e} FLOPs, i.e. an MFU of "
        f"{low['mfu_bf16']:.0%}-{high['mfu_bf16']:.0%} of dense BF16 peak "
        f"({low['mfu_fp8']:.0%}-{high['mfu_fp8']:.0%} of FP8 peak; the paper computes in MXFP8)."
    ]


def plan_table(
    tokens: int | str = "80B",
    sizes: tuple[str, ...] = ("0.6B", "1.3B", "5B"),
    **launch: Any,
) -> list[dict[str, Any]]:
    """One checked plan per size with the same budget and launch settings, as rows for a table."""
    rows = []
    for size in sizes:
        plan = make_plan(LaunchConfig(size=size, tokens=parse_count(tokens), **launch))
        rows.append(
            {
                "size": size,
                "params": plan.params.get("total", 0),
                "non_embedding": plan.params.get("non_embedding", 0),
                "flops_per_token": plan.flops_per_token,
                "total_flops": plan.total_flops,
                "memory_per_gpu_gb": plan.memory.get("total", 0) / 1e9,  # forward/backward
                "peak_memory_gb": plan.memory_plan.peak / 1e9,  # with the optimizer step's temporaries
                "steps": plan.steps,
                "hours": plan.hours,
                "gpu_hours": plan.gpu_hours,
                "problems": "; ".join(plan.problems),
            }
        )
    return rows


# --- which trainer settings launch passes on -----------------------------------------------------


def _planned_names() -> set[str]:
    return {f.name for f in fields(LaunchConfig)}


def passed_settings(config_class: type[TrainConfig] = TrainConfig) -> list[Field]:
    """The trainer's settings launch passes on as given: every TrainConfig field that is neither
    one the plan sizes itself (a LaunchConfig field: its own flag, a cluster-sized default) nor
    DERIVED. Each is a launch flag with the trainer's default, or TrainArgs' where it has one."""
    skip = _planned_names() | set(DERIVED)
    return [f for f in fields(config_class) if f.init and f.name not in skip]


def script_defaults() -> dict[str, Any]:
    """The defaults the script has of its own (TrainArgs'), where they are not the trainer's."""
    return {f.name: f.default for f in fields(TrainArgs) if f.default is not MISSING}
