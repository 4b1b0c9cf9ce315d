"""What a training run reports: validation bits per byte, metrics.jsonl and the progress display.

Validation bits per byte is Σ nats / (ln 2 · Σ bytes) over the held-out stream of `val_data`
(`shards.eval_batches`, split over ranks), from the shards' byte counts (`littlekit.stats`).

Throughput (`rate_fields`): tokens_per_s_summed is each rank's own tokens over its own seconds,
all-reduced (summed) over the ranks; on a GPU mfu is the ranks' mean model FLOPs utilisation
(`sizes.flops_per_token` x each rank's tokens/s over its device's dense BF16 peak,
`sizes.gpu_peak_bf16`; left out for a GPU not in that table) and peak_mem_gib the most memory any
rank's allocator has held (torch.cuda.max_memory_allocated, GiB).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from littlekit.lm.shards import IGNORE_INDEX, eval_batches
from littlekit.lm.sizes import gpu_peak_bf16
from littlekit.lm.train.config import METRICS, TrainConfig
from littlekit.lm.train.distributed import Dist, all_max, all_sum, autocast
from littlekit.stats import bits_per_byte


def validate(
    raw: torch.nn.Module, config: TrainConfig, d: Dist, precision: str, total_batches: int
) -> dict[str, float]:
    """Validation bits per byte over the first val_batches global batches of the held-out stream.

    The same sums as `evals.bpb.stream_bpb`, but under no_grad rather than inference_mode (FSDP2's
    all-gather buffers must stay ordinary tensors for the next training step), and under FSDP a
    rank with one batch fewer runs a dummy forward so every rank joins every all-gather.
    """
    batch_size = config.val_batch_size or config.micro_batch
    n = total_batches if config.val_batches is None else min(config.val_batches, total_batches)
    mine = len(range(d.rank, n, d.world_size))  # batches are dealt round-robin
    stream = eval_batches(config.val_data, config.seq_len, batch_size, d.rank, d.world_size)
    nats, n_bytes, tokens = 0.0, 0, 0
    raw.eval()
    try:
        with torch.no_grad(), autocast(precision, d.device):
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
    # Sums first, then one division: bits per byte of the whole stream, not a mean of batches'.
    nats, n_bytes, tokens = all_sum([nats, n_bytes, tokens], d)
    return {
        "val_bpb": bits_per_byte(nats, int(n_bytes)),
        "val_loss": nats / tokens,
        "val_tokens": int(tokens),
        "val_bytes": int(n_bytes),
    }


def device_peak_flops(device: torch.device) -> float | None:
    """The dense BF16 peak FLOP/s of a CUDA device (None on the CPU or for an unknown GPU)."""
    return gpu_peak_bf16(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def model_flops_utilization(tokens_per_s: float, flops_per_token: float, device_name: str) -> float | None:
    """MFU: the model's training FLOP/s at this rate over the named GPU's dense BF16 peak (None unknown)."""
    peak = gpu_peak_bf16(device_name)
    return None if peak is None else tokens_per_s * flops_per_token / peak


def rate_fields(
    d: Dist, rank_loss: float, rank_tokens: float, seconds: float, flops_per_token: float | None
) -> tuple[float, dict[str, float]]:
    """(the ranks' mean loss, the record's throughput fields) from this rank's loss, tokens and
    seconds since the last record; collective. GPU-only fields are left out on the CPU."""
    rate = rank_tokens / max(seconds, 1e-9)
    mfu = None
    if flops_per_token and d.device.type == "cuda":
        mfu = model_flops_utilization(rate, flops_per_token, torch.cuda.get_device_name(d.device))
    mfu = math.nan if mfu is None else mfu  # NaN: some rank's GPU has no known peak, so no mean
    loss, rates, mfus = all_sum([rank_loss, rate, mfu], d)
    fields = {"tokens_per_s_summed": rates}
    if d.device.type == "cuda":
        if math.isfinite(mfus):
            fields["mfu"] = mfus / d.world_size
        fields["peak_mem_gib"] = all_max([torch.cuda.max_memory_allocated(d.device) / 2**30], d)[0]
    return loss / d.world_size, fields


def finite_or_none(record: dict[str, Any]) -> dict[str, Any]:
    """The record with every NaN or infinite number as None (JSON null)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()}


def json_line(record: dict[str, Any]) -> str:
    """One metrics.jsonl line: strict JSON, a non-finite number written as null (never NaN)."""
    return json.dumps(finite_or_none(record), allow_nan=False)


class TrainLog:
    """metrics.jsonl and the progress (a bar on a terminal, else `littlekit.progress` lines, as in
    a notebook or a batch log), on rank 0 only."""

    def __init__(self, config: TrainConfig, d: Dist, start_step: int, path: Path | None = None):
        from littlekit.progress import Progress

        self.main = d.main
        self.path = Path(config.run_dir) / METRICS if path is None else path  # moved by a replacing run
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
            handle.write(json_line(record) + "\n")
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
