"""Fine-tuning stage 3's classifier: the loop `fit.encoder`'s tiny ModernBERT and any pretrained
encoder share, and the training settings.

The loop is plain PyTorch: AdamW (no decay on biases and norms), linear warmup then linear
decay, length-bucketed batches padded to the longest text, cross-entropy (optionally weighted
by inverse band frequency), gradient clipping, seeded shuffling, evaluation on the validation
set after every epoch, and the best epoch's weights kept and saved with `save_pretrained`
(model + tokenizer + labels.json). Labels are K5, K8, K12, OOS with K5 = class 0.
"""

from __future__ import annotations

import copy
import json
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from littlekit.filter.encoder import (
    LABELS,
    MAX_LENGTH,
    default_attention,
    pick_device,
    predict_probs,
    save_label_map,
)

if TYPE_CHECKING:  # annotations only: training takes DataFrames, but these modules never load pandas
    import pandas as pd

log = logging.getLogger("littlekit.fit.encoder")  # the epoch lines keep the logger they always had
TINY_MAX_LENGTH = 256  # the embedded default's truncation: most passages fit, the CPU stays fast


@dataclass
class EncoderTrainConfig:
    """Fine-tuning settings. The defaults suit the tiny random-init model; a pretrained
    ModernBERT-base wants lr ~3e-5, max_length 2048 and a GPU."""

    epochs: int = 3  # the tiny model overfits after epoch 2 on the default labels (best epoch 2 of 4)
    lr: float = 5e-4
    head_lr: float | None = None  # train_top only: the new classifier's learning rate (None: lr)
    uniform_query: bool = True  # train_top only: the [CLS] query starts at zero (see train_top)
    batch_size: int = 16
    eval_batch_size: int = 64
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    max_length: int = TINY_MAX_LENGTH
    class_weights: bool = True  # weight the loss by inverse band frequency
    max_steps: int | None = None  # stop early after this many optimiser steps (tests, smoke runs)
    seed: int = 0
    device: str | None = None  # None: cuda when available, else cpu
    attn_implementation: str | None = None  # None: sdpa on cuda, eager on cpu (default_attention)

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.max_length < 3 or self.lr <= 0:
            raise ValueError(f"bad training settings: {self}")


@dataclass
class TrainResult:
    """What `fine_tune` did: where the model went, per-epoch metrics and per-step losses."""

    out_dir: Path
    best_epoch: int
    seconds: float
    n_train: int
    n_parameters: int
    history: list[dict[str, Any]] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)


def band_ids(bands: Iterable[str]) -> list[int]:
    """Class indices of bands (K5 -> 0 ...); ValueError names an unknown band."""
    index = {band: i for i, band in enumerate(LABELS)}
    try:
        return [index[band] for band in bands]
    except KeyError as err:
        raise ValueError(f"unknown band {err.args[0]!r}; expected one of {LABELS}") from None


def fine_tune(
    model_dir_or_id: str | Path,
    train: pd.DataFrame,
    valid: pd.DataFrame | None = None,
    out_dir: str | Path = "encoder",
    config: EncoderTrainConfig | None = None,
) -> TrainResult:
    """Fine-tune a sequence classifier on DataFrames with columns `text` and `band`; save the best.

    The best epoch is the one with the highest validation macro-F1 (ties: lower loss); without a
    validation set it is the last epoch. The saved directory reloads with EncoderStage(out_dir).
    """
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    config = config or EncoderTrainConfig()
    started = time.perf_counter()
    _seed_everything(config.seed)
    device = pick_device(config.device)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir_or_id))
    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir_or_id),
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={band: i for i, band in enumerate(LABELS)},
        attn_implementation=config.attn_implementation or default_attention(device),
    ).to(device)

    texts, labels = list(train["text"]), band_ids(train["band"])
    encoded = tokenizer(texts, truncation=True, max_length=config.max_length)["input_ids"]
    batches_per_epoch = -(-len(texts) // config.batch_size)
    total_steps = batches_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    optimizer = torch.optim.AdamW(_param_groups(model, config.weight_decay), lr=config.lr)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(config.warmup_ratio * total_steps), total_steps
    )
    weight = _class_weights(labels, device) if config.class_weights else None
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    rng = random.Random(config.seed)

    def batch_loss(batch: list[int]):
        input_ids, attention_mask = _pad([encoded[i] for i in batch], tokenizer.pad_token_id, device)
        target = torch.tensor([labels[i] for i in batch], device=device)
        return loss_fn(model(input_ids=input_ids, attention_mask=attention_mask).logits.float(), target)

    def validate() -> dict[str, float]:
        return evaluate(model, tokenizer, valid, config.eval_batch_size, config.max_length)

    history, step_losses, best_epoch = _fit(
        model,
        lambda: _length_bucketed_batches(encoded, config.batch_size, rng),
        batch_loss,
        validate if valid is not None and len(valid) else None,
        optimizer,
        scheduler,
        config,
        total_steps,
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.model_max_length = config.max_length  # EncoderStage(out) then cuts where training did
    tokenizer.save_pretrained(out)
    save_label_map(out)
    result = TrainResult(
        out_dir=out,
        best_epoch=best_epoch,
        seconds=time.perf_counter() - started,
        n_train=len(texts),
        n_parameters=sum(p.numel() for p in model.parameters()),
        history=history,
        step_losses=step_losses,
    )
    summary = {**asdict(result), "out_dir": str(out), "config": asdict(config)}
    (out / "train_history.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return result


def _fit(module, epoch_batches, batch_loss, validate, optimizer, scheduler, config, total_steps: int):
    """The epoch loop both recipes share; returns (history, step losses, best epoch).

    Each epoch draws its batches from `epoch_batches()`, steps on `batch_loss(batch)` with gradient
    clipping, then scores `validate()` when given. The state of the best epoch (macro-F1, then loss,
    on the validation labels; without them the last epoch) is loaded back into `module` at the end.
    """
    import torch

    from littlekit.progress import Progress

    history, step_losses = [], []
    best_key, best_state, best_epoch, step = None, None, 0, 0
    progress = Progress(total_steps, "fitting the encoder", "steps")
    for epoch in range(1, config.epochs + 1):
        module.train()
        epoch_losses = []
        for batch in epoch_batches():
            loss = batch_loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            epoch_losses.append(loss.detach().item())
            step += 1
            progress.update(epoch=epoch, loss=epoch_losses[-1])
            if step >= total_steps:
                break
        step_losses.extend(epoch_losses)
        row = {"epoch": epoch, "step": step, "train_loss": float(np.mean(epoch_losses))}
        key = (epoch, 0.0)
        if validate is not None:
            row.update(validate())
            key = (row["macro_f1"], -row["loss"])
        history.append(row)
        log.info("epoch %s: %s", epoch, {k: round(v, 4) for k, v in row.items()})
        if best_key is None or key > best_key:
            best_key, best_epoch = key, epoch
            best_state = copy.deepcopy({k: v.detach().cpu() for k, v in module.state_dict().items()})
        if step >= total_steps:
            break
    module.load_state_dict(best_state)
    return history, step_losses, best_epoch


def evaluate(
    model: Any, tokenizer: Any, frame: pd.DataFrame, batch_size: int = 64, max_length: int = MAX_LENGTH
) -> dict[str, float]:
    """Validation loss (mean cross-entropy), accuracy and macro-F1 over the bands present."""
    model.eval()
    probs, _ = predict_probs(model, tokenizer, list(frame["text"]), batch_size, max_length)
    truth = np.array(band_ids(frame["band"]))
    predicted = probs.argmax(axis=1)
    loss = float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, None))))
    return {
        "loss": loss,
        "accuracy": float(np.mean(predicted == truth)),
        "macro_f1": macro_f1(truth, predicted),
    }


def macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Mean F1 over the classes that occur in `truth` (a class never predicted scores 0)."""
    scores = []
    for label in np.unique(truth):
        tp = np.sum((predicted == label) & (truth == label))
        n_pred, n_true = np.sum(predicted == label), np.sum(truth == label)
        scores.append(2 * tp / (n_pred + n_true) if n_pred + n_true else 0.0)
    return float(np.mean(scores))


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _param_groups(model, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: decay on weight matrices, none on biases, norms and other 1-D parameters."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    other = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": other, "weight_decay": 0.0}]


def _class_weights(labels: Sequence[int], device: str):
    """Inverse-frequency weights (mean 1 over present classes); an absent class gets weight 0."""
    import torch

    counts = np.bincount(labels, minlength=len(LABELS)).astype(np.float64)
    weights = np.where(counts > 0, counts.sum() / (np.count_nonzero(counts) * np.maximum(counts, 1)), 0.0)
    return torch.tensor(weights, dtype=torch.float32, device=device)


def _length_bucketed_batches(encoded: Sequence[Sequence[int]], batch_size: int, rng: random.Random):
    """Shuffled batches of similar length: shuffle, sort within pools of 50 batches, shuffle batches."""
    order = list(range(len(encoded)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: len(encoded[i]))
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _pad(sequences: Sequence[Sequence[int]], pad_id: int, device: str):
    import torch

    width = max(len(seq) for seq in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return ids.to(device), mask.to(device)
