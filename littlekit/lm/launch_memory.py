"""The memory side of `littlekit launch`'s plan, per GPU: the parts held through the forward and
backward (`sizes.memory_per_gpu`), the optimizer step's temporaries (`sizes.optimizer_step_bytes`:
Muon's Nesterov update, its fp32 stack and the Newton-Schulz iteration), the peak of the two
phases (`sizes.peak_memory`), which the plan checks against the GPU, and the plan's lines.

Under DDP every rank runs the whole Muon step on every matrix (StackedMuon on plain tensors): its
memory is per GPU whatever the number of GPUs, and so is its Newton-Schulz arithmetic, which the
plan states as an estimated share of a step's time (`sizes.muon_step_flops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import Qwen3Config

from littlekit.lm.sizes import (
    flops_per_token,
    memory_per_gpu,
    muon_step_flops,
    optimizer_step_bytes,
    peak_memory,
)

MEMORY_HEADROOM = 0.10  # kept free for the CUDA context, NCCL buffers, workspaces, fragmentation


@dataclass
class MemoryPlan:
    """Bytes per GPU: `parts` held through forward and backward (and "total"), `step` the optimizer
    step's temporaries (and "total"), `phases` the two phases and "peak"; `muon_share` the
    estimated share of a step's time the Muon step takes on every rank under DDP (else None)."""

    parallel: str = "ddp"
    activation_checkpointing: bool = False
    optimizer: str = "muon"
    parts: dict[str, int] = field(default_factory=dict)
    step: dict[str, int] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)
    muon_flops: int = 0
    muon_share: float | None = None

    @property
    def peak(self) -> int:
        return self.phases.get("peak", 0)


def plan_memory(
    model: Qwen3Config,
    n_gpus: int,
    seq_len: int,
    micro_batch: int,
    global_batch: int,
    *,
    parallel: str = "ddp",
    activation_checkpointing: bool = False,
    optimizer: str = "muon",
) -> MemoryPlan:
    """The memory per GPU of a launch: both phases of a step on the GPUs (the step's iteration in bf16)."""
    parts = memory_per_gpu(model, n_gpus, seq_len, micro_batch, recipe=parallel, optimizer=optimizer,
                           activation_checkpointing=activation_checkpointing)  # fmt: skip
    step = optimizer_step_bytes(model, n_gpus, recipe=parallel, optimizer=optimizer)
    plan = MemoryPlan(parallel, activation_checkpointing, optimizer, parts, step, peak_memory(parts, step))
    if optimizer == "muon":
        plan.muon_flops = muon_step_flops(model)
        if parallel == "ddp" or n_gpus == 1:  # each GPU's share of the model's arithmetic, all of Muon's
            train = flops_per_token(model, seq_len) * global_batch * seq_len / n_gpus
            plan.muon_share = plan.muon_flops / (plan.muon_flops + train)
    return plan


def memory_problem(memory: MemoryPlan, gpu_name: str, gpu_bytes: float) -> str | None:
    """The plan's problem when the peak per GPU exceeds the GPU's memory less MEMORY_HEADROOM."""
    usable = gpu_bytes * (1.0 - MEMORY_HEADROOM)
    if memory.peak <= usable:
        return None
    hint = "try a smaller --micro-batch"
    if not memory.activation_checkpointing:
        hint += ", --activation-checkpointing"
    if memory.parallel == "ddp":
        hint += ", --parallel fsdp"
    phase = "the optimizer step" if memory.phases["step"] > memory.phases["backward"] else "forward/backward"
    return (
        f"estimated memory per GPU {memory.peak / 1e9:.1f} GB at its peak ({phase}) exceeds "
        f"{usable / 1e9:.0f} GB ({gpu_name} {gpu_bytes / 1e9:.0f} GB less {MEMORY_HEADROOM:.0%} headroom): "
        f"{hint}"
    )


def _gb(value: float) -> str:
    return f"{value / 1e9:.1f}"


def memory_lines(memory: MemoryPlan, gpu_bytes: float) -> list[str]:
    """The plan's memory lines: the forward/backward parts, the optimizer step and the peak, and
    under DDP the Muon step every rank runs whole."""
    parts, step, phases = memory.parts, memory.step, memory.phases
    held = ", ".join(f"{part} {_gb(parts[part])}" for part in parts if part != "total")
    checkpointing = "with" if memory.activation_checkpointing else "without"
    lines = [
        f"memory/GPU (GB, --parallel {memory.parallel}, {checkpointing} activation checkpointing): {held}; "
        f"forward/backward total {_gb(parts['total'])}",
    ]
    if memory.optimizer == "muon":
        temporaries = (
            f"Muon's Nesterov update {_gb(step['muon_update'])}, fp32 stack {_gb(step['muon_stack'])} and "
            f"Newton-Schulz temporaries {_gb(step['muon_temporaries'])}, then AdamW's "
            f"{_gb(step['adamw_temporaries'])}"
        )
    else:
        temporaries = f"AdamW's denominators {_gb(step['adamw_temporaries'])}"
    lines.append(
        f"optimizer step/GPU (GB): {temporaries}; at the step (activations and autocast copies freed) "
        f"{_gb(phases['step'])}; peak {_gb(phases['peak'])} of {_gb(gpu_bytes)} "
        f"({MEMORY_HEADROOM:.0%} kept free)"
    )
    if memory.muon_share is not None:
        lines.append(
            f"Muon under --parallel {memory.parallel}: every rank runs the whole Muon step on every matrix, "
            f"{memory.muon_flops:.2e} FLOPs of Newton-Schulz per step, ~{memory.muon_share:.0%} of a step's "
            f"time at the same MFU (estimated; not in the time below)"
        )
    elif memory.optimizer == "muon":
        lines.append("Muon under --parallel fsdp: torch's Muon on each rank's shards, one matrix at a time")
    return lines
