"""`littlekit train`: pretraining a Qwen3 model on packed token shards, on one CPU or many GPUs.

    littlekit train --data shards/k5 --val-data shards/val --tokenizer tok/ --size nano \\
        --seq-len 256 --global-batch 32 --micro-batch 8 --max-steps 2000 --run-dir runs/nano
    torchrun --nproc_per_node 8 -m littlekit.cli train ... --parallel fsdp   # as `littlekit launch` writes

The loop: each optimizer step takes `global_batch` sequences of `seq_len` tokens from the
BOS-aligned `shards.BatchLoader` (one source, several weighted ones, or a named mixture such as
the paper's cool-off mix), split over the processes (`micro_batch` each per forward/backward)
and gradient accumulation. Loss is the mean next-token cross-entropy over every token of the
global batch, computed in fp32 (in one fp32 process the LM head and the loss are fused,
`linear_cross_entropy`: the same loss without the full logits tensor). Muon updates the 2-D
hidden matrices and AdamW the embeddings, norms and head (`littlekit.lm.optim`), both under the
warmup-stable-cool-off schedule, after clipping the global gradient norm. On a GPU the forward
runs under bf16 autocast (fp32 weights and optimizer state); on the CPU in fp32, seeded and
deterministic.

Processes: started by torchrun (WORLD_SIZE > 1) the trainer joins the process group (nccl on
GPUs, gloo on CPUs) unless the caller already did, leaves it up for later calls, and wraps the
model in DDP (default) or FSDP2 `fully_shard` (each decoder layer, then the root). The loader
hands rank r its contiguous share of each global batch, so N processes see the same rows per step
as one process accumulating them.

Every `eval_every` steps (and at the start and the end) validation bits per byte is measured on
the held-out stream of `val_data` (`shards.eval_batches`, split over ranks, Σ nats / (ln 2 · Σ
bytes) from the shards' byte counts); the checkpoint with the lowest value is kept in `best/`.
`last/` is written every `save_every` steps and at the end. A checkpoint directory holds the
model in `save_pretrained` format (config.json, model.safetensors), the tokenizer, and
`trainer_state.pt` (optimizer, step, loader position, RNG; `last/` only) with a readable
`trainer_state.json`, so `AutoModelForCausalLM.from_pretrained` and
`AutoTokenizer.from_pretrained` load it and `resume` continues the run exactly. `metrics.jsonl`
in the run directory gets one record per logged step: step, tokens, loss, lr, lr_muon,
grad_norm, tokens_per_s, elapsed_s and cpu_s (this process's wall and CPU seconds of training,
evaluation and saving excluded; CPU time is what a shared machine cannot steal), and
val_bpb/val_loss at evaluations.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from littlekit.argtypes import fraction, int_range, non_negative
from littlekit.lm.shards import (
    PAPER_COOLOFF_MIX,
    BatchLoader,
    TokenShards,
    count_eval_batches,
    mixture_sources,
)
from littlekit.lm.sizes import QWEN3_SIZES

MIXES: dict[str, dict[str, float]] = {"paper-cooloff": PAPER_COOLOFF_MIX}
PARALLEL = ("ddp", "fsdp")
PRECISIONS = ("auto", "bf16", "fp32")
OPTIMIZERS = ("muon", "adamw")
LAST, BEST = "last", "best"
METRICS = "metrics.jsonl"
STATE_PT, STATE_JSON = "trainer_state.pt", "trainer_state.json"
CONFIG_JSON = "train_config.json"
MAX_COUNT = 2**31 - 1  # batch sizes, lengths and steps: beyond this something was mistyped
MAX_SEED = 2**32 - 1


@dataclass
class TrainConfig:
    """Everything a training run is told; `train(config)` runs it. Defaults suit the nano model."""

    data: str | dict[str, float]  # a shard directory, {directory: weight}, or with `mix` a root
    tokenizer: str  # tokenizer directory (its vocabulary must be the shards')
    run_dir: str
    val_data: str | None = None  # held-out shard directory for validation bits per byte
    mix: str | None = None  # a named mixture of MIXES: data is the root holding its sources
    size: str = "nano"  # a littlekit.lm.sizes.QWEN3_SIZES name (ignored with resume/init_from)
    model_overrides: dict[str, Any] = field(default_factory=dict)  # extra Qwen3Config kwargs
    init_from: str | None = None  # start from these save_pretrained weights (fresh optimizer)
    seq_len: int = 256
    global_batch: int = 32  # sequences per optimizer step, all processes together
    micro_batch: int = 8  # sequences per process per forward/backward
    max_steps: int = 1000
    stop_at: int | None = None  # end this invocation after this step (last/ saved), resume later
    warmup_steps: int | None = None  # default 2% of max_steps
    cooldown_steps: int | None = None  # default 20% of max_steps
    min_lr_ratio: float = 0.0
    optimizer: str = "muon"  # "muon": Muon + AdamW; "adamw": AdamW for everything
    muon_lr: float = 0.02
    adamw_lr: float = 3e-3
    weight_decay: float = 0.0  # decoupled, on the hidden matrices only
    grad_clip: float = 1.0  # global gradient-norm clip; 0 disables
    seed: int = 0
    eval_every: int = 100  # 0: only at the start and the end
    val_batches: int | None = None  # global validation batches per evaluation; None: all
    val_batch_size: int | None = None  # default micro_batch
    save_every: int = 0  # write last/ every N steps; 0: only at the end (and at stop_at)
    resume: str | None = None  # a checkpoint directory, or "auto": run_dir/last/ when it exists
    device: str = "auto"  # "auto": cuda when available, else cpu
    precision: str = "auto"  # "bf16" autocast or "fp32"; "auto": bf16 on cuda, fp32 on cpu
    compile: bool = False  # torch.compile the training forward
    parallel: str = "ddp"  # with several processes: "ddp" or "fsdp" (FSDP2 fully_shard)
    activation_checkpointing: bool = False
    log_every: int = 1
    progress: bool = True  # rank 0: a tqdm bar on a terminal, progress lines elsewhere

    def sources(self) -> dict[str, float]:
        """{shard directory: weight} for the loader."""
        if self.mix is not None:
            if self.mix not in MIXES:
                raise ValueError(f"unknown mixture {self.mix!r}; known: {', '.join(MIXES)}")
            if not isinstance(self.data, (str, os.PathLike)):
                raise ValueError("with a named mixture, data is the root directory holding its sources")
            return mixture_sources(self.data, MIXES[self.mix])
        if isinstance(self.data, (str, os.PathLike)):
            return {str(self.data): 1.0}
        sources = {str(k): float(v) for k, v in self.data.items()}
        for directory, weight in sources.items():
            if not (math.isfinite(weight) and weight > 0):
                raise ValueError(
                    f"--data {directory}:{weight:g}: a source's weight must be a positive number"
                )
        return sources


@dataclass
class TrainResult:
    """What a `train` call did (the same on every rank)."""

    run_dir: str
    steps: int  # optimizer steps completed in all (including resumed ones)
    tokens: int  # training tokens consumed in all
    losses: list[float]  # global mean loss of each logged step of this call, in order
    final_loss: float | None
    best_val_bpb: float | None
    best_step: int | None
    last_val_bpb: float | None
    last_checkpoint: str
    best_checkpoint: str | None
    metrics_path: str
    world_size: int
    resumed_from_step: int = 0


# --- processes and devices --------------------------------------------------------------------


@dataclass
class _Dist:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0


def _setup(config: TrainConfig) -> _Dist:
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if config.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(config.device)
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if world_size > 1 and not dist.is_initialized():
        # Joined once per process and left up for later train() calls: a process group cannot be
        # joined again after it is destroyed under torchrun's rendezvous. Destroyed at exit.
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        atexit.register(_destroy_group)
    if dist.is_initialized():
        return _Dist(dist.get_rank(), dist.get_world_size(), local_rank, device)
    return _Dist(0, 1, 0, device)


def _destroy_group() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def _all_sum(values: list[float], d: _Dist) -> list[float]:
    if d.world_size == 1:
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=d.device)
    dist.all_reduce(tensor)
    return tensor.tolist()


def _barrier(d: _Dist) -> None:
    if d.world_size > 1:
        dist.barrier()


def _precision(config: TrainConfig, device: torch.device) -> str:
    if config.precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {config.precision!r}")
    if config.precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return config.precision


def _autocast(precision: str, device: torch.device):
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


# --- checks -------------------------------------------------------------------------------------


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


def _check_config(config: TrainConfig) -> None:
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


def _check_seq_len(config: TrainConfig) -> None:
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


def _check_vocabulary(tokenizer: Any, directories: list[str]) -> None:
    from littlekit.lm.shards import ShardError, _vocab_sha256

    own = _vocab_sha256(tokenizer)
    for directory in directories:
        if TokenShards(directory).require_documents().manifest["vocab_sha256"] != own:
            raise ShardError(
                f"{directory} was tokenised with another vocabulary than {tokenizer.name_or_path}: pass "
                f"the tokenizer the shards were written with, or rebuild them with this one (write_shards)"
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
        resolve_resume(config)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"argument --resume: {exc}") from None
    for directory in list(sources) + ([config.val_data] if config.val_data else []):
        TokenShards(directory).require_documents()


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


# --- model, wrapping, optimizer -----------------------------------------------------------------


def _build_model(config: TrainConfig, tokenizer: Any, weights_from: str | None):
    from transformers import AutoModelForCausalLM

    from littlekit.lm.sizes import build_model, qwen3_config

    torch.manual_seed(config.seed)
    if weights_from is not None:
        with _no_transformers_bars():
            model = AutoModelForCausalLM.from_pretrained(weights_from, dtype=torch.float32)
    else:
        bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
        model_config = qwen3_config(
            config.size,
            len(tokenizer),
            bos_token_id=bos,
            eos_token_id=eos,
            pad_token_id=pad if pad is not None else eos,
            **config.model_overrides,
        )
        model = build_model(model_config)
    if len(tokenizer) > model.config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} ids, the model {model.config.vocab_size}")
    if config.seq_len > model.config.max_position_embeddings:
        raise ValueError(
            f"seq_len {config.seq_len} exceeds the model's max_position_embeddings "
            f"{model.config.max_position_embeddings}"
        )
    model.config.use_cache = False
    return model


def _wrap(model: torch.nn.Module, config: TrainConfig, d: _Dist) -> torch.nn.Module:
    """The module the training forward runs through: the model, DDP(model) or the FSDP2 model."""
    if config.activation_checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model.to(d.device)
    if d.world_size == 1:
        return model
    if config.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[d.device.index] if d.device.type == "cuda" else None)


def _sync_context(wrapped: torch.nn.Module, config: TrainConfig, d: _Dist, sync: bool):
    """Gradient all-reduce only on the last micro batch of a step."""
    if d.world_size == 1 or sync:
        if d.world_size > 1 and config.parallel == "fsdp":
            wrapped.set_requires_gradient_sync(True)
        return contextlib.nullcontext()
    if config.parallel == "fsdp":
        wrapped.set_requires_gradient_sync(False)
        return contextlib.nullcontext()
    return wrapped.no_sync()


def build_optimizer(model: torch.nn.Module, config: TrainConfig):
    from littlekit.lm.optim import MuonAdamW

    return MuonAdamW(
        model,
        muon_lr=config.muon_lr,
        adamw_lr=config.adamw_lr,
        weight_decay=config.weight_decay,
        use_muon=config.optimizer == "muon",
    )


def build_schedule(config: TrainConfig):
    from littlekit.lm.optim import wsd_schedule

    return wsd_schedule(config.max_steps, config.warmup_steps, config.cooldown_steps, config.min_lr_ratio)


# --- checkpoints ---------------------------------------------------------------------------------


def _tied_names(model: torch.nn.Module) -> list[str]:
    """Names of parameters that are another name's parameter (a tied LM head), without wrappers."""
    seen: set[int] = set()
    tied = []
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            tied.append(name.removeprefix("module."))
        seen.add(id(param))
    return tied


def _full_state(wrapped: torch.nn.Module, optimizer) -> tuple[dict[str, Any], dict[str, Any] | None]:
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
def _no_transformers_bars():
    """save_pretrained/from_pretrained draw progress bars of their own; not inside our loop's."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _write_checkpoint(
    path: Path,
    raw: torch.nn.Module,
    tokenizer: Any,
    model_state: dict[str, Any],
    info: dict[str, Any],
    trainer_state: dict[str, Any] | None,
) -> None:
    """Write into a fresh sibling directory, then swap it in, so a crash never leaves half a checkpoint."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with _no_transformers_bars():
        raw.save_pretrained(tmp, state_dict=model_state)
    tokenizer.save_pretrained(tmp)
    if trainer_state is not None:
        torch.save(trainer_state, tmp / STATE_PT)
    (tmp / STATE_JSON).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def _rng_state(device: torch.device) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def resolve_resume(config: TrainConfig) -> Path | None:
    """The checkpoint to resume from: config.resume, or with "auto" run_dir/last/ if it exists."""
    if config.resume is None:
        return None
    if config.resume == "auto":
        last = Path(config.run_dir) / LAST
        return last if (last / STATE_PT).exists() else None
    path = Path(config.resume)
    if not (path / STATE_PT).exists():
        raise FileNotFoundError(f"{path / STATE_PT} not found: not a `last/` checkpoint of littlekit train")
    return path


def load_trainer_state(checkpoint: str | os.PathLike) -> dict[str, Any]:
    return torch.load(Path(checkpoint) / STATE_PT, map_location="cpu", weights_only=True)


def _truncate_metrics(path: Path, step: int) -> None:
    """Drop records after `step` (written by a run that went on past its last checkpoint)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["step"] <= step]  # fmt: skip
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


# --- validation ----------------------------------------------------------------------------------


def _validate(
    raw: torch.nn.Module, config: TrainConfig, d: _Dist, precision: str, total_batches: int
) -> dict[str, float]:
    """Validation bits per byte over the first val_batches global batches of the held-out stream.

    The same sums as `evals.bpb.stream_bpb`, but under no_grad rather than inference_mode (FSDP2's
    all-gather buffers must stay ordinary tensors for the next training step), and under FSDP a
    rank with one batch fewer runs a dummy forward so every rank joins every all-gather.
    """
    from littlekit.evals.bpb import bpb_from_token_losses
    from littlekit.lm.shards import IGNORE_INDEX, eval_batches

    batch_size = config.val_batch_size or config.micro_batch
    n = total_batches if config.val_batches is None else min(config.val_batches, total_batches)
    mine = len(range(d.rank, n, d.world_size))  # batches are dealt round-robin
    stream = eval_batches(config.val_data, config.seq_len, batch_size, d.rank, d.world_size)
    nats, n_bytes, tokens = 0.0, 0, 0
    raw.eval()
    try:
        with torch.no_grad(), _autocast(precision, d.device):
            for _, (input_ids, labels, batch_bytes) in zip(range(mine), stream, strict=False):
                logits = raw(input_ids=input_ids.to(d.device)).logits
                labels = labels.to(d.device)
                nats += F.cross_entropy(
                    logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
                ).item()
                n_bytes += batch_bytes
                tokens += int((labels != IGNORE_INDEX).sum())
            if d.world_size > 1 and config.parallel == "fsdp":
                dummy = torch.zeros((1, config.seq_len), dtype=torch.long, device=d.device)
                for _ in range(math.ceil(n / d.world_size) - mine):
                    raw(input_ids=dummy)
    finally:
        raw.train()
    nats, n_bytes, tokens = _all_sum([nats, n_bytes, tokens], d)
    return {
        "val_bpb": bpb_from_token_losses(nats, int(n_bytes)),
        "val_loss": nats / tokens,
        "val_tokens": int(tokens),
        "val_bytes": int(n_bytes),
    }


def _norm_value(norm: torch.Tensor | None) -> float | None:
    if norm is None:
        return None
    if hasattr(norm, "full_tensor"):  # a DTensor under FSDP
        norm = norm.full_tensor()
    return float(norm)


# --- the loop ------------------------------------------------------------------------------------


def _loss(forward: torch.nn.Module, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logits = forward(input_ids=input_ids).logits
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


# --- the fused loss head ---------------------------------------------------------------------------

CHUNK_ELEMENTS = 2**18  # logits per chunk (1 MiB in fp32): a chunk's softmax stays in a CPU core's L2


def chunk_rows(vocab_size: int) -> int:
    """Token rows per chunk of the fused loss: about CHUNK_ELEMENTS logits, 32 to 1,024 rows."""
    return max(32, min(1024, CHUNK_ELEMENTS // max(vocab_size, 1)))


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of softmax(hidden @ weight.T) against labels, with its gradients.

    Nothing comes after the loss, so its gradients are known (up to the scalar backward brings)
    as soon as it is computed: the forward goes through the tokens in chunks and, per chunk,
    turns the logits into softmax - onehot in place and multiplies them back into d hidden and
    d weight. No (tokens x vocabulary) tensor exists at once, nor passes through memory three
    times (log-softmax, its backward, the zero-filled gradient of the gather): on a nano CPU
    step that traffic was a third of the time.
    """

    @staticmethod
    def forward(ctx, hidden, weight, labels, ignore_index):
        rows = chunk_rows(weight.shape[0])
        wanted = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        grad_hidden = torch.empty_like(hidden) if wanted else None  # every row is written below
        grad_weight_t = weight.new_zeros(weight.shape[1], weight.shape[0]) if wanted else None
        total = torch.zeros((), dtype=torch.float64, device=hidden.device)
        count = (labels != ignore_index).sum()
        for start in range(0, hidden.shape[0], rows):
            part, targets = hidden[start : start + rows], labels[start : start + rows, None]
            keep = targets != ignore_index
            targets = targets.clamp(min=0)
            logits = part @ weight.T
            probs = torch.softmax(logits, dim=-1)
            nats = _token_nats(logits, probs, targets)
            total += torch.where(keep, nats, 0.0).sum()
            if wanted:
                probs.scatter_add_(1, targets, torch.full_like(nats, -1.0))
                if not bool(keep.all()):
                    probs.mul_(keep)
                grad_hidden[start : start + rows] = probs @ weight
                grad_weight_t.addmm_(part.T, probs)
        scale = 1.0 / count.clamp(min=1).to(hidden.dtype)
        if wanted:
            ctx.save_for_backward(grad_hidden.mul_(scale), grad_weight_t.mul_(scale))
        loss = (total / count).to(hidden.dtype)  # nan without a scored token, as F.cross_entropy
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        grad_hidden, grad_weight_t = ctx.saved_tensors
        return grad_hidden * grad_output, (grad_weight_t * grad_output).T.contiguous(), None, None


def _token_nats(logits: torch.Tensor, probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log p(target) per row; where p underflows (a target scored > ~87 nats below the best),
    logsumexp - logit instead, so the loss stays finite and exact."""
    picked = probs.gather(1, targets)
    nats = -torch.log(picked)
    tiny = picked < 1e-30
    if bool(tiny.any()):
        exact = torch.logsumexp(logits, dim=-1, keepdim=True) - logits.gather(1, targets)
        nats = torch.where(tiny, exact, nats)
    return nats


def linear_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100
) -> torch.Tensor:
    """F.cross_entropy(hidden @ weight.T, labels) (mean over labels != ignore_index), fused and
    chunked: the same loss and gradients (to float rounding) without the full logits tensor."""
    return _LinearCrossEntropy.apply(hidden.flatten(0, -2), weight, labels.flatten(), ignore_index)


def _fusable(raw: torch.nn.Module, world_size: int, precision: str) -> bool:
    """Whether the training loss may skip the model's LM head for `linear_cross_entropy`: one
    process (DDP and FSDP hooks expect the whole model's forward), fp32 (autocast would change the
    head's precision), and a plain bias-free linear head right after the decoder, as Qwen3 has."""
    from transformers import Qwen3ForCausalLM

    head = raw.get_output_embeddings()
    return (
        world_size == 1
        and precision == "fp32"
        and isinstance(raw, Qwen3ForCausalLM)
        and isinstance(head, torch.nn.Linear)
        and head.bias is None
    )


def make_loss(
    raw: torch.nn.Module,
    wrapped: torch.nn.Module | None = None,
    compile: bool = False,
    world_size: int = 1,
    precision: str = "fp32",
):
    """loss(input_ids, labels): the mean next-token cross-entropy of a micro batch, as `train`
    computes it (`wrapped`: the DDP/FSDP module the forward runs through; default `raw`).

    Single-process fp32 runs (the CPU runs of the book) take the decoder's last hidden states and
    `linear_cross_entropy` with the head's weight; other runs the model's logits and
    F.cross_entropy in fp32. Both are the same loss; `compile` compiles what runs the decoder
    (the decoder alone, or the wrapped model).
    """
    wrapped = raw if wrapped is None else wrapped
    if _fusable(raw, world_size, precision):
        decoder = torch.compile(raw.get_decoder()) if compile else raw.get_decoder()
        weight = raw.get_output_embeddings().weight

        def fused(input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return linear_cross_entropy(decoder(input_ids=input_ids).last_hidden_state, weight, labels)

        return fused
    forward = torch.compile(wrapped) if compile else wrapped
    return lambda input_ids, labels: _loss(forward, input_ids, labels)


class _Log:
    """metrics.jsonl and the progress (a bar on a terminal, else `littlekit.progress` lines, as in
    a notebook or a batch log), on rank 0 only."""

    def __init__(self, config: TrainConfig, d: _Dist, start_step: int):
        from littlekit.progress import Progress

        self.main = d.main
        self.path = Path(config.run_dir) / METRICS
        self.bar = self.lines = None
        self.shown: dict[str, float] = {}
        if self.main and config.progress and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=config.max_steps, initial=start_step, desc="train", unit="step")
        elif self.main and config.progress:
            label = f"train {Path(config.run_dir).name}"
            self.lines = Progress(config.max_steps - start_step, label, "steps")

    def write(self, record: dict[str, Any]) -> None:
        if not self.main:
            return
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        self.shown.update({k: record[k] for k in ("loss", "val_bpb") if k in record})
        if self.bar is not None and self.shown:
            self.bar.set_postfix({k: f"{v:.4f}" for k, v in self.shown.items()}, refresh=False)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.update(1)
        if self.lines is not None:
            self.lines.update(**self.shown)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) the training run `config` describes; see the module docstring."""
    from littlekit.lm.tokenizer import load_tokenizer

    _check_config(config)
    d = _setup(config)
    return _train(config, d, load_tokenizer(config.tokenizer))


def train_side_by_side(configs: list[TrainConfig], processes: int = 2, threads: int = 1) -> list[TrainResult]:
    """Independent single-process runs, `processes` at a time, each in its own process with
    `threads` CPU threads (`littlekit.processes.side_by_side`); results in the order of `configs`.
    Each run is exactly what `train(config)` does alone."""
    from littlekit.processes import side_by_side

    for config in configs:
        _check_config(config)
    return side_by_side(train, configs, processes, threads)


def _train(config: TrainConfig, d: _Dist, tokenizer: Any) -> TrainResult:
    run_dir = Path(config.run_dir)
    sources = config.sources()
    _check_vocabulary(tokenizer, list(sources) + ([config.val_data] if config.val_data else []))
    accumulation = accumulation_steps(config.global_batch, config.micro_batch, d.world_size)
    precision = _precision(config, d.device)
    schedule = build_schedule(config)
    resume = resolve_resume(config)
    state = load_trainer_state(resume) if resume is not None else None

    raw = _build_model(config, tokenizer, str(resume) if resume is not None else config.init_from)
    wrapped = _wrap(raw, config, d)
    loss_of = make_loss(raw, wrapped, config.compile, d.world_size, precision)
    optimizer = build_optimizer(raw, config)
    loader = BatchLoader(sources, config.seq_len, config.micro_batch, config.seed, d.rank, d.world_size)
    tokens_per_step = config.global_batch * config.seq_len
    step, best_bpb, best_step, last_bpb = 0, None, None, None
    if state is not None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        set_optimizer_state_dict(
            wrapped, optimizer.optimizers, state["optimizer"], options=StateDictOptions(full_state_dict=True)
        )
        loader.load_state_dict(state["loader"])
        _set_rng_state(state["rng"], d.device)
        step, best_bpb, best_step = state["step"], state["best_val_bpb"], state["best_step"]
        last_bpb = state.get("last_val_bpb")
    if d.main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / CONFIG_JSON).write_text(json.dumps(asdict(config), indent=2) + "\n", encoding="utf-8")
        if state is not None:
            _truncate_metrics(run_dir / METRICS, step)
        elif (run_dir / METRICS).exists():
            (run_dir / METRICS).unlink()  # a fresh run in an old directory starts a fresh log
    _barrier(d)
    start_step = step
    end_step = config.stop_at or config.max_steps
    val_total = (
        count_eval_batches(config.val_data, config.seq_len, config.val_batch_size or config.micro_batch)
        if config.val_data
        else 0
    )
    log = _Log(config, d, step)
    losses: list[float] = []
    train_seconds = state["elapsed_s"] if state is not None else 0.0
    cpu_seconds = state.get("cpu_s", 0.0) if state is not None else 0.0
    mark_step, window_seconds, window_cpu = step, 0.0, 0.0

    def evaluate() -> dict[str, float]:
        return _validate(raw, config, d, precision, val_total) if config.val_data else {}

    def info() -> dict[str, Any]:
        return {
            "step": step,
            "tokens": step * tokens_per_step,
            "max_steps": config.max_steps,
            "last_val_bpb": last_bpb,
            "best_val_bpb": best_bpb,
            "best_step": best_step,
            "world_size": d.world_size,
            "elapsed_s": train_seconds,
            "cpu_s": cpu_seconds,
            "config": asdict(config),
        }

    def save(which: str, with_state: bool) -> None:
        model_state, optim_state = _full_state(wrapped, optimizer if with_state else None)
        if d.main:
            trainer_state = None
            if with_state:
                trainer_state = {**info(), "optimizer": optim_state, "loader": loader.state_dict(),
                                 "rng": _rng_state(d.device)}  # fmt: skip
            _write_checkpoint(run_dir / which, raw, tokenizer, model_state, info(), trainer_state)
        _barrier(d)

    if state is None and config.val_data:
        log.write({"step": 0, "tokens": 0, **evaluate()})
    raw.train()
    while step < end_step:
        factor = schedule(step)
        optimizer.set_lr_factor(factor)
        started, started_cpu = time.perf_counter(), time.process_time()
        total = torch.zeros((), device=d.device)
        for micro in range(accumulation):
            input_ids, labels = next(loader)
            input_ids, labels = input_ids.to(d.device), labels.to(d.device)
            with _sync_context(wrapped, config, d, micro == accumulation - 1), _autocast(precision, d.device):
                loss = loss_of(input_ids, labels)
            (loss / accumulation).backward()
            total += loss.detach()
        grad_norm = None
        if config.grad_clip > 0:
            grad_norm = torch.nn.utils.clip_grad_norm_(raw.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        evaluating = config.val_data is not None and (
            step == config.max_steps or (config.eval_every and step % config.eval_every == 0)
        )
        logging = step % config.log_every == 0 or evaluating or step == end_step
        rank_loss = total.item() / accumulation if logging else 0.0  # waits for the GPU's step
        window_seconds += time.perf_counter() - started
        window_cpu += time.process_time() - started_cpu
        if logging:
            mean_loss = _all_sum([rank_loss], d)[0] / d.world_size
            train_seconds += window_seconds
            cpu_seconds += window_cpu
            record = {
                "step": step,
                "tokens": step * tokens_per_step,
                "loss": mean_loss,
                "lr": optimizer.lrs().get("adamw"),
                "lr_muon": optimizer.lrs().get("muon") if config.optimizer == "muon" else None,
                "lr_factor": factor,
                "grad_norm": _norm_value(grad_norm),
                "tokens_per_s": (step - mark_step) * tokens_per_step / max(window_seconds, 1e-9),
                "elapsed_s": train_seconds,
                "cpu_s": cpu_seconds,
            }
            losses.append(mean_loss)
            mark_step, window_seconds, window_cpu = step, 0.0, 0.0
            if evaluating:
                record.update(evaluate())
                last_bpb = record["val_bpb"]
                if best_bpb is None or last_bpb < best_bpb:
                    best_bpb, best_step = last_bpb, step
                    save(BEST, with_state=False)
            log.write(record)
        log.advance()
        if step < end_step and config.save_every and step % config.save_every == 0:
            save(LAST, with_state=True)
    save(LAST, with_state=True)
    log.close()
    return TrainResult(
        run_dir=str(run_dir),
        steps=step,
        tokens=step * tokens_per_step,
        losses=losses,
        final_loss=losses[-1] if losses else None,
        best_val_bpb=best_bpb,
        best_step=best_step,
        last_val_bpb=last_bpb,
        last_checkpoint=str(run_dir / LAST),
        best_checkpoint=str(run_dir / BEST) if best_step is not None else None,
        metrics_path=str(run_dir / METRICS),
        world_size=d.world_size,
        resumed_from_step=start_step,
    )


# --- command line ------------------------------------------------------------------------------


def parse_source(text: str) -> tuple[str, float]:
    """'DIR' -> (DIR, 1.0); 'DIR:WEIGHT' -> (DIR, WEIGHT) when what follows the last ':' is a number."""
    head, sep, tail = text.rpartition(":")
    if sep and head:
        try:
            return head, float(tail)
        except ValueError:
            pass
    return text, 1.0


COUNT = int_range(1, MAX_COUNT)
STEPS = int_range(0, MAX_COUNT)


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Register `littlekit train` on the CLI's subparsers."""
    defaults = TrainConfig(data="", tokenizer="", run_dir="")
    p = subparsers.add_parser(
        "train",
        help="train a Qwen3 model on token shards (Muon + AdamW, WSD schedule, DDP/FSDP under torchrun)",
        description="Pretrain a Qwen3 model on packed token shards; checkpoints in save_pretrained format "
        "(best/ by validation bits per byte, last/ with the trainer state for --resume). Run under "
        "torchrun for several processes.",
    )
    data = p.add_argument_group("data")
    data.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="DIR[:WEIGHT]",
        help="training shard directory, repeatable with weights for a mixture; with --mix, the root",
    )
    data.add_argument("--mix", choices=sorted(MIXES), help="a named mixture of sources under --data")
    data.add_argument("--val-data", help="held-out shard directory for validation bits per byte")
    data.add_argument("--tokenizer", required=True, help="tokenizer directory (the shards' vocabulary)")
    data.add_argument("--run-dir", help="checkpoints and metrics.jsonl (default: runs/default/train)")
    model = p.add_argument_group("model")
    model.add_argument("--size", default=defaults.size, choices=list(QWEN3_SIZES))
    model.add_argument("--init-from", help="start from these save_pretrained weights (fresh optimizer)")
    model.add_argument("--activation-checkpointing", action="store_true")
    model.add_argument("--compile", action="store_true", help="torch.compile the training forward")
    batch = p.add_argument_group("batch and steps")
    batch.add_argument("--seq-len", type=COUNT, default=defaults.seq_len)
    batch.add_argument("--global-batch", type=COUNT, default=defaults.global_batch,
                       help="sequences per optimizer step (all processes)")  # fmt: skip
    batch.add_argument("--micro-batch", type=COUNT, default=defaults.micro_batch,
                       help="sequences per process per forward/backward")  # fmt: skip
    batch.add_argument("--max-steps", type=COUNT, default=defaults.max_steps)
    batch.add_argument("--stop-at", type=COUNT, help="end this invocation after this step; --resume later")
    batch.add_argument("--seed", type=int_range(0, MAX_SEED), default=defaults.seed)
    opt = p.add_argument_group("optimizer and schedule")
    opt.add_argument("--optimizer", choices=OPTIMIZERS, default=defaults.optimizer)
    opt.add_argument("--muon-lr", type=non_negative, default=defaults.muon_lr)
    opt.add_argument("--adamw-lr", type=non_negative, default=defaults.adamw_lr)
    opt.add_argument("--weight-decay", type=non_negative, default=defaults.weight_decay)
    opt.add_argument("--grad-clip", type=non_negative, default=defaults.grad_clip, help="0 disables")
    opt.add_argument("--warmup-steps", type=STEPS, help="default 2%% of --max-steps")
    opt.add_argument("--cooldown-steps", type=STEPS, help="default 20%% of --max-steps")
    opt.add_argument("--min-lr-ratio", type=fraction, default=defaults.min_lr_ratio)
    run = p.add_argument_group("evaluation, checkpoints, hardware")
    run.add_argument("--eval-every", type=STEPS, default=defaults.eval_every, help="0: start and end only")
    run.add_argument("--val-batches", type=COUNT, help="validation batches per evaluation (default: all)")
    run.add_argument("--val-batch-size", type=COUNT, help="default --micro-batch")
    run.add_argument("--save-every", type=STEPS, default=defaults.save_every, help="last/ every N steps")
    run.add_argument("--resume", metavar="CHECKPOINT|auto", help="continue from a last/ checkpoint")
    run.add_argument("--device", default=defaults.device, help="auto, cpu, cuda")
    run.add_argument("--precision", choices=PRECISIONS, default=defaults.precision)
    run.add_argument("--parallel", choices=PARALLEL, default=defaults.parallel)
    run.add_argument("--log-every", type=COUNT, default=defaults.log_every)
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    if args.mix is not None:
        if len(args.data) != 1:
            raise ValueError("--mix takes one --data root")
        data: str | dict[str, float] = args.data[0]
    elif len(args.data) == 1 and parse_source(args.data[0])[1] == 1.0:
        data = parse_source(args.data[0])[0]
    else:
        data = dict(parse_source(item) for item in args.data)
    if args.run_dir is None:
        from littlekit.config import run_dir

        args.run_dir = str(run_dir("default") / "train")
    return TrainConfig(
        data=data,
        tokenizer=args.tokenizer,
        run_dir=args.run_dir,
        val_data=args.val_data,
        mix=args.mix,
        size=args.size,
        init_from=args.init_from,
        seq_len=args.seq_len,
        global_batch=args.global_batch,
        micro_batch=args.micro_batch,
        max_steps=args.max_steps,
        stop_at=args.stop_at,
        warmup_steps=args.warmup_steps,
        cooldown_steps=args.cooldown_steps,
        min_lr_ratio=args.min_lr_ratio,
        optimizer=args.optimizer,
        muon_lr=args.muon_lr,
        adamw_lr=args.adamw_lr,
        weight_decay=args.weight_decay,
        grad_clip=args.grad_clip,
        seed=args.seed,
        eval_every=args.eval_every,
        val_batches=args.val_batches,
        val_batch_size=args.val_batch_size,
        save_every=args.save_every,
        resume=args.resume,
        device=args.device,
        precision=args.precision,
        compile=args.compile,
        parallel=args.parallel,
        activation_checkpointing=args.activation_checkpointing,
        log_every=args.log_every,
        progress=not args.no_progress,
    )


def run_train_command(args: argparse.Namespace) -> int:
    """Check the configuration (a mistake is a usage error, exit 2), train, print a summary on rank 0."""
    from littlekit.argtypes import UsageError
    from littlekit.lm.shards import ShardError
    from littlekit.lm.tokenizer import TokenizerError

    try:
        config = config_from_args(args)
        _check_config(config)
        config.sources()
        accumulation_steps(config.global_batch, config.micro_batch, int(os.environ.get("WORLD_SIZE", "1")))
        build_schedule(config)
        check_inputs(config)
        _check_seq_len(config)
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
