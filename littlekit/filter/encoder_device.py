"""Where stage 3's encoder runs, and in which precision its scores are computed.

A device string names the device exactly: "cuda:1" stays cuda:1 for the model, its inputs and
its self check (only its type would send the inputs to cuda:0). None, "" and "auto" pick CUDA
when torch sees a GPU, else the CPU; a CUDA device asked for where torch sees no GPU (or not that
many) is a ValueError saying so, never a silent run on the CPU.

Precision. On CUDA the encoder scores under bf16 autocast, on the CPU in fp32 (PRECISION_CPU).
bf16 moves P(K5) by about 0.01, so a threshold fitted in one precision can flip documents lying
near it in the other: `precision_warning` says so when a run's precision is not the one its
thresholds were fitted in (filter_config.json records that, `littlekit.filter.filter_config`).
A precision is written "DEVICE_TYPE/DTYPE", e.g. "cpu/float32", "cuda/bfloat16".

torch is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import Any

AUTO = "auto"
PRECISION_CPU = "cpu/float32"  # the precision every fit so far scored its thresholds in
SCORE_SHIFT = 0.01  # about how far bf16 autocast moves P(K5) from the CPU's fp32 (issue 40)


class DeviceUnavailable(ValueError):
    """A device this machine does not have: the machine's fault, not the model's (no rebuild helps)."""


def resolve_device(device: str | Any | None = None):
    """The torch.device a device string names, its index kept ("cuda:1" -> cuda:1); None, "" or
    "auto": cuda when torch sees a GPU, else cpu. Checks nothing about the machine (see
    require_device)."""
    import torch

    if device is None or (isinstance(device, str) and device in ("", AUTO)):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def require_device(device):
    """`device` (a torch.device) when this machine has it; DeviceUnavailable (a ValueError) when it
    is a CUDA device and torch sees no GPU, or fewer than its index needs."""
    import torch

    if device.type != "cuda":
        return device
    if not torch.cuda.is_available():
        build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise DeviceUnavailable(
            f"encoder device {device} asks for a GPU, but torch {torch.__version__} ({build}) sees none: "
            "install a CUDA build of torch on this machine, give the Slurm tasks a GPU "
            "(--slurm-gpus-per-task 1), or pass --device cpu"
        )
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise DeviceUnavailable(
            f"encoder device {device} does not exist: torch sees {count} GPU(s) here "
            f"(cuda:0 to cuda:{count - 1}; CUDA_VISIBLE_DEVICES renumbers them from 0)"
        )
    return device


def encoder_device(device: str | Any | None = None):
    """The torch.device the encoder, its inputs and its self check use: resolve_device, checked
    by require_device."""
    return require_device(resolve_device(device))


def scoring_precision(device) -> str:
    """The precision `littlekit.filter.encoder.predict_probs` scores in on `device` (a device
    string or torch.device): bf16 autocast on CUDA, fp32 elsewhere."""
    kind = resolve_device(device).type
    return "cuda/bfloat16" if kind == "cuda" else f"{kind}/float32"


def check_precision(name: str, value: Any) -> str | None:
    """A precision as "DEVICE_TYPE/DTYPE" (e.g. cpu/float32), or None (not stated)."""
    if value is None:
        return None
    parts = value.split("/") if isinstance(value, str) else []
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise ValueError(f"{name} must be DEVICE_TYPE/DTYPE, e.g. {PRECISION_CPU}, got {value!r}")
    return value


def precision_warning(run: str, fitted: str | None) -> str | None:
    """What to tell the user when the encoder scores in `run` precision but its thresholds were
    fitted in `fitted` (None: not stated, nothing to compare); None when they agree."""
    if fitted is None or run == fitted:
        return None
    return (
        f"the encoder scores in {run}, but its thresholds (filter_config.json) were fitted in {fitted}: "
        f"P(K5) differs by about {SCORE_SHIFT:g} between the two, so documents near a threshold may be "
        f"kept or dropped differently than at the fit (pass --device {fitted.split('/')[0]} to match it, "
        "or refit the thresholds in this precision)"
    )
