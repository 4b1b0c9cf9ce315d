"""Corpus-level bits per byte of a causal language model.

BPB = Σ nats / (ln 2 · Σ UTF-8 bytes), summed over the whole corpus before dividing (not a mean
of per-document values): the definition of lm-evaluation-harness's `bits_per_byte`.

Scoring policy. A document is BOS + its tokens (tokenizer without special tokens); every real
token is a target exactly once, the first one predicted from BOS alone, and no EOS is scored (it
has no bytes). A document of at most max_length ids is one window. A longer one is scored with a
sliding window: the first window is ids[0:max_length]; each next window ends `stride` ids later
(or at the end), spans at most max_length ids, and scores only the targets the previous windows
did not. So every target after the first window sees between max_length - stride and
max_length - 1 ids of context (stride = max_length - 1 reproduces lm-eval's rolling windows).
A (context, text) pair scores only text's tokens, conditioned on context (both tokenised
separately, as lm-eval does), and counts only text's bytes, e.g. the student turns of a dialogue.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from littlekit.lm.shards import IGNORE_INDEX, eval_batches, special_ids
from littlekit.progress import Progress
from littlekit.stats import bits_per_byte

DEFAULT_MAX_LENGTH = 2048


def bpb_from_token_losses(sum_nats: float, n_bytes: int) -> float:
    """Bits per byte from summed token negative log-likelihoods (natural log) and UTF-8 bytes."""
    return bits_per_byte(sum_nats, n_bytes)


def sliding_windows(
    n_ids: int, max_length: int, stride: int, first_target: int = 1
) -> list[tuple[int, int, int]]:
    """(start, end, first scored target) windows over ids[:n_ids]; each target >= first_target once."""
    if max_length < 2 or not 1 <= stride < max_length:
        raise ValueError(f"need max_length >= 2 and 1 <= stride < max_length, got {max_length}, {stride}")
    windows = []
    end = min(n_ids, max_length)
    scored_from = 1
    while True:
        start = max(0, end - max_length)
        lo = max(scored_from, first_target)
        if lo < end:
            windows.append((start, end, lo))
        if end >= n_ids:
            return windows
        scored_from, end = end, min(end + stride, n_ids)


def _encode_all(
    tokenizer: Any, items: list[str | Sequence[str]], bos: int
) -> list[tuple[list[int], int, int]]:
    """(ids, first scored position, bytes) per document or (context, text) pair, one tokenizer call."""
    pairs = [("", item) if isinstance(item, str) else tuple(item) for item in items]
    strings = [part for pair in pairs for part in pair]
    encoded = tokenizer(strings, add_special_tokens=False)["input_ids"] if strings else []
    out = []
    for i, (_, text) in enumerate(pairs):
        head, body = encoded[2 * i], encoded[2 * i + 1]
        out.append(([bos, *head, *body], 1 + len(head), len(text.encode("utf-8"))))
    return out


def _model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.inference_mode()
def _score_windows(
    model: torch.nn.Module, rows: list[tuple[list[int], int]], pad_id: int, device: torch.device
) -> list[float]:
    """Summed nats of each (window ids, index of its first scored target) in one padded batch."""
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, _) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = 1
    logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device), use_cache=False).logits
    out = []
    for i, (ids, first) in enumerate(rows):
        # logits at position p predict ids[p + 1]; scored targets are ids[first:]
        predicted = logits[i, first - 1 : len(ids) - 1].float()
        targets = torch.tensor(ids[first:], device=predicted.device)
        out.append(F.cross_entropy(predicted, targets, reduction="sum").item())
    return out


def corpus_bpb(
    model: torch.nn.Module,
    tokenizer: Any,
    texts: Iterable[str | Sequence[str]],
    max_length: int | None = None,
    stride: int | None = None,
    batch_size: int = 8,
    device: str | torch.device | None = None,
    per_doc: bool = False,
) -> dict[str, Any]:
    """Bits per byte of `model` on texts (strings or (context, text) pairs); see the module policy.

    max_length defaults to the model's max_position_embeddings capped at 2,048, stride to half of
    it. Windows are batched batch_size at a time (longest first, right-padded with an attention
    mask; peak memory holds batch_size x max_length x vocabulary logits). Returns bpb, nats, bytes,
    tokens (targets scored), docs, max_length and stride, plus per_doc (nats, bytes, tokens per
    input, in order) when asked, for per-bin or per-category sums.
    """
    if max_length is None:
        max_length = min(
            getattr(model.config, "max_position_embeddings", DEFAULT_MAX_LENGTH), DEFAULT_MAX_LENGTH
        )
    if stride is None:
        stride = max(1, max_length // 2)
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    bos, eos = special_ids(tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    device = torch.device(device) if device is not None else _model_device(model)

    docs: list[dict[str, Any]] = []
    jobs: list[tuple[int, list[int], int]] = []  # (document, window ids, first scored index in window)
    for index, (ids, first_target, n_bytes) in enumerate(_encode_all(tokenizer, list(texts), bos)):
        docs.append({"nats": 0.0, "bytes": n_bytes, "tokens": len(ids) - first_target})
        for start, end, lo in sliding_windows(len(ids), max_length, stride, first_target):
            jobs.append((index, ids[start:end], lo - start))
    jobs.sort(key=lambda job: -len(job[1]))  # similar lengths share a batch: less padding

    was_training = model.training
    model.eval()
    progress = Progress(len(jobs), "scoring bits per byte", "windows")
    try:
        for b in range(0, len(jobs), batch_size):
            batch = jobs[b : b + batch_size]
            nats = _score_windows(model, [(ids, first) for _, ids, first in batch], pad_id, device)
            for (index, _, _), value in zip(batch, nats, strict=True):
                docs[index]["nats"] += value
            progress.update(len(batch))
    finally:
        model.train(was_training)

    total_nats = math.fsum(d["nats"] for d in docs)
    total_bytes = sum(d["bytes"] for d in docs)
    result: dict[str, Any] = {
        "bpb": bpb_from_token_losses(total_nats, total_bytes),
        "nats": total_nats,
        "bytes": total_bytes,
        "tokens": sum(d["tokens"] for d in docs),
        "docs": len(docs),
        "max_length": max_length,
        "stride": stride,
    }
    if per_doc:
        result["per_doc"] = docs
    return result


def bpb_by(frame: Any, field: str | Sequence[str], sort: bool = True) -> Any:
    """Corpus-level bits per byte of each group of documents: Σ nats / (ln 2 · Σ bytes) within a group.

    `frame` holds one row per document with its `nats` and `bytes` (`corpus_bpb(per_doc=True)`'s
    per_doc, with the grouping columns beside them); `field` is the column (or columns) to group
    by, empty groups of a categorical left out. Returns a frame indexed by the groups, in sorted
    order (in order of appearance with sort=False), with columns nats, bytes and bpb.
    """
    sums = frame.groupby(field, sort=sort, observed=True)[["nats", "bytes"]].sum()
    sums["bpb"] = [bpb_from_token_losses(n, int(b)) for n, b in zip(sums["nats"], sums["bytes"], strict=True)]
    return sums


def paired_bootstrap_table(
    labels: Sequence[str], point: Any, boots: Any, confidence: float = 0.95, value: str = "value"
) -> Any:
    """A table of percentile bootstrap intervals for per-model statistics and their paired differences.

    point: one value per model (in `labels` order); boots: (resamples, models), each resample the
    same texts for every model. Rows `what`: each model, then "A - B" for every pair in order, with
    columns `value` (the point estimate), ci_low, ci_high.
    """
    import numpy as np
    import pandas as pd

    point, boots = np.asarray(point, dtype=float), np.asarray(boots, dtype=float)
    alpha = (1 - confidence) / 2
    pairs = [(i, None) for i in range(len(labels))]
    pairs += [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    rows = []
    for i, j in pairs:
        estimate = point[i] - (point[j] if j is not None else 0.0)
        sample = boots[:, i] - (boots[:, j] if j is not None else 0.0)
        rows.append(
            {
                "what": labels[i] if j is None else f"{labels[i]} - {labels[j]}",
                value: float(estimate),
                "ci_low": float(np.quantile(sample, alpha)),
                "ci_high": float(np.quantile(sample, 1 - alpha)),
            }
        )
    return pd.DataFrame(rows).set_index("what")


@torch.inference_mode()
def stream_bpb(
    model: torch.nn.Module,
    directory: str | os.PathLike,
    seq_len: int,
    batch_size: int,
    device: str | torch.device | None = None,
    rank: int = 0,
    world_size: int = 1,
    max_batches: int | None = None,
    pack: bool = True,
) -> dict[str, Any]:
    """Bits per byte on a shard directory's held-out stream (`shards.eval_batches`), as training validates.

    Returns this rank's nats, bytes and tokens and their bpb; with world_size > 1, all-reduce (sum)
    nats and bytes over ranks and call bpb_from_token_losses. With max_batches (this rank's batches),
    a document cut off at the last batch still counts its bytes, so the value is approximate;
    the full stream is exact. pack=False, with documents shorter than seq_len, gives the same
    value as corpus_bpb on the documents' texts.
    """
    device = torch.device(device) if device is not None else _model_device(model)
    was_training = model.training
    model.eval()
    nats, n_bytes, tokens = 0.0, 0, 0
    try:
        for index, (input_ids, labels, batch_bytes) in enumerate(
            eval_batches(directory, seq_len, batch_size, rank, world_size, pack)
        ):
            if max_batches is not None and index >= max_batches:
                break
            logits = model(input_ids=input_ids.to(device), use_cache=False).logits
            labels = labels.to(device)
            nats += F.cross_entropy(
                logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
            ).item()
            n_bytes += batch_bytes
            tokens += int((labels != IGNORE_INDEX).sum())
    finally:
        model.train(was_training)
    bpb = bpb_from_token_losses(nats, n_bytes) if n_bytes else float("nan")
    return {"bpb": bpb, "nats": nats, "bytes": n_bytes, "tokens": tokens}


def rise_bootstrap(
    per_item: Any, low: str, high: str, group: str = "band", n_boot: int = 1000, seed: int = 0
) -> Any:
    """Each model's corpus-level BPB rise from group `low` to group `high` (BPB of `high` minus
    BPB of `low`, each Σ nats / (ln 2 · Σ bytes)) and its percentile bootstrap interval, resampling
    items (rows of one model, in the same order for every model) alike for all models; with the
    pairwise differences of the rises (`paired_bootstrap_table`, indexed by `what`).

    `per_item`: one row per (model, item) with columns model, `group`, nats, bytes."""
    import numpy as np

    labels = list(dict.fromkeys(per_item["model"]))
    parts = [per_item[per_item["model"] == label].reset_index(drop=True) for label in labels]
    if len({len(p) for p in parts}) != 1:
        raise ValueError("every model must score the same items")
    groups = parts[0][group].to_numpy()
    if any(not np.array_equal(p[group].to_numpy(), groups) for p in parts):
        raise ValueError(f"every model must score the same items in the same order ({group} differs)")
    nats = np.stack([p["nats"].to_numpy(dtype=float) for p in parts], axis=1)
    nbytes = np.stack([p["bytes"].to_numpy(dtype=float) for p in parts], axis=1)
    lo, hi = (groups == low).astype(float), (groups == high).astype(float)

    def rises(weights: Any) -> Any:  # weights: (resamples, items) counts of each item
        def bpb(mask: Any) -> Any:
            w = weights * mask
            return (w @ nats) / (np.log(2) * (w @ nbytes))

        return bpb(hi) - bpb(lo)

    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, len(groups), len(groups)), minlength=len(groups))
                       for _ in range(n_boot)])  # fmt: skip
    point = rises(np.ones((1, len(groups))))[0]
    return paired_bootstrap_table(labels, point, rises(counts), value="rise")
