"""Processes and devices of a training run: the process group, the device, precision, DDP/FSDP2.

Started by torchrun (WORLD_SIZE > 1) the trainer joins the process group (nccl on GPUs, gloo on
CPUs) unless the caller already did, leaves it up for later calls, and wraps the model in DDP
(default) or FSDP2 `fully_shard` (each decoder layer, then the root). The group's timeout (how long a
collective waits for the other ranks) is the trainer's, sized to the checkpoint rank 0 writes while
the others wait at the barrier (`checkpoint.process_group_timeout`), not NCCL's 10 minutes. Under
bf16, FSDP gathers the layers in bf16 and reduces the gradients in fp32 (`fsdp_mixed_precision`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from littlekit.lm.train.config import PRECISIONS, TrainConfig


@dataclass
class Dist:
    """This process's place in the run."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0


def setup(config: TrainConfig, timeout: timedelta | None = None) -> Dist:
    """Pick the device and join the process group torchrun describes (if any), its collectives
    waiting up to `timeout` (None: torch's default) for the other ranks."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if config.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(config.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        # asked for a GPU: never train on the CPU instead (a 5B plan would run for years there)
        build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise ValueError(
            f"--device {config.device} asks for a GPU, but torch {torch.__version__} ({build}) sees none: "
            "install a CUDA build of torch on this machine (see the README's launch section) or pass "
            "--device cpu"
        )
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if world_size > 1 and not dist.is_initialized():
        # Joined once per process and left up for later train() calls: a process group cannot be
        # joined again after it is destroyed under torchrun's rendezvous. Destroyed at exit.
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=timeout)
        atexit.register(_destroy_group)
    if dist.is_initialized():
        return Dist(dist.get_rank(), dist.get_world_size(), local_rank, device)
    return Dist(0, 1, 0, device)


def _destroy_group() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def all_sum(values: list[float], d: Dist) -> list[float]:
    """The values summed over the processes (float64, so counts of bytes and tokens stay exact)."""
    if d.world_size == 1:
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=d.device)
    dist.all_reduce(tensor)
    return tensor.tolist()


def all_max(values: list[float], d: Dist) -> list[float]:
    """The values' maxima over the processes."""
    if d.world_size == 1:
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=d.device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def barrier(d: Dist) -> None:
    if d.world_size > 1:
        dist.barrier()


def resolve_precision(config: TrainConfig, device: torch.device) -> str:
    """ "bf16" or "fp32" ("auto": bf16 on cuda, fp32 on cpu)."""
    if config.precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {config.precision!r}")
    if config.precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return config.precision


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast for the forward (weights and optimizer state stay fp32), or nothing."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def fsdp_mixed_precision(precision: str) -> Any:
    """FSDP2's MixedPrecisionPolicy for a resolved precision, or None (fp32: FSDP's default, no casts).

    bf16: each layer is all-gathered and computed in bf16 (half the gather traffic and the gathered
    layer's memory) and its gradients reduce-scattered in fp32; the sharded weights, their
    gradients and the optimizer states stay fp32, as under DDP's autocast."""
    if precision != "bf16":
        return None
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def wrap_model(
    model: torch.nn.Module, config: TrainConfig, d: Dist, precision: str | None = None
) -> torch.nn.Module:
    """The module the training forward runs through: the model, DDP(model) or the FSDP2 model
    (`precision`, resolved: its mixed-precision policy; None: resolved from config here)."""
    if config.activation_checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model.to(d.device)
    if d.world_size == 1:
        return model
    if config.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard

        policy = fsdp_mixed_precision(precision or resolve_precision(config, d.device))
        kwargs = {} if policy is None else {"mp_policy": policy}
        for layer in model.model.layers:
            fully_shard(layer, **kwargs)
        fully_shard(model, **kwargs)
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[d.device.index] if d.device.type == "cuda" else None)


def sync_context(
    wrapped: torch.nn.Module, config: TrainConfig, d: Dist, sync: bool
) -> contextlib.AbstractContextManager[Any]:
    """Gradient all-reduce only on the last micro batch of a step."""
    if d.world_size == 1 or sync:
        if d.world_size > 1 and config.parallel == "fsdp":
            wrapped.set_requires_gradient_sync(True)
        return contextlib.nullcontext()
    if config.parallel == "fsdp":
        # FSDP2 has no no_sync(): with sync off it accumulates unsharded gradients and skips the
        # reduce-scatter until the last micro batch turns sync back on.
        wrapped.set_requires_gradient_sync(False)
        return contextlib.nullcontext()
    return wrapped.no_sync()
