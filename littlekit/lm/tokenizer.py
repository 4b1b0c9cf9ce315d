"""The K-5 tokenizer: byte-level BPE trained on the filtered corpus only, and how it splits numbers.

`train_tokenizer` fits a byte-level BPE (HF `tokenizers`: the GPT-2 byte-level pre-tokenizer, every
one of the 256 bytes in the base alphabet, so no text is ever unknown) and wraps it as a
transformers `PreTrainedTokenizerFast` with

    <|bos|> <|eos|> <|pad|>            bos_token, eos_token, pad_token (ids 0, 1, 2)
    <|im_start|> <|im_end|>            the chat turns of CHAT_TEMPLATE (ids 3, 4)

Encoding adds no special token by itself: the shard writer puts BOS + tokens + EOS around each
document, and the chat template writes its own. `single_digit=True` is the paper's ablation: a
Digits(individual_digits=True) pre-tokenizer runs before the byte-level one, so no merge can join
two digits and every digit is its own token.

Reports: `bytes_per_token` (UTF-8 bytes per token, higher = better compression) and the number
shapes: how each integer 0-9999 splits into tokens, tabulated by digit count, and the distinct
split shapes of four-digit numbers (shape = the tuple of token lengths in digits, e.g. 1234 ->
['12', '34'] has shape (2, 2)).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS: tuple[str, ...] = (BOS, EOS, PAD, IM_START, IM_END)
BYTE_ALPHABET = 256
MIN_VOCAB_SIZE = BYTE_ALPHABET + len(SPECIAL_TOKENS)
TRAINING_RECORD = "littlekit_tokenizer.json"

# ChatML turns (as Qwen3 writes them), after the BOS every training document starts with.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_bpe(single_digit: bool = False) -> Tokenizer:
    """An untrained byte-level BPE tokenizer (pre-tokenizer and decoder set, no vocabulary yet)."""
    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if single_digit:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level]
        )
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int,
    single_digit: bool = False,
    out_dir: str | os.PathLike | None = None,
    min_frequency: int = 2,
):
    """Train a byte-level BPE on `texts`; return it as a PreTrainedTokenizerFast (saved to out_dir).

    `vocab_size` counts the 256 byte tokens and the 5 special tokens; the trainer stops earlier
    when no pair occurs `min_frequency` times, so a tiny corpus can give a smaller vocabulary
    (`len(tokenizer)` says what it got). Training is deterministic for the same texts.
    """
    from transformers import PreTrainedTokenizerFast

    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size must be at least {MIN_VOCAB_SIZE} (256 bytes + {len(SPECIAL_TOKENS)} special "
            f"tokens), got {vocab_size}"
        )
    texts = [text for text in texts if text]
    if not texts:
        raise ValueError("no text to train the tokenizer on")
    tokenizer = build_bpe(single_digit)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=[IM_START, IM_END],
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    if out_dir is not None:
        save_tokenizer(fast, out_dir, _record(texts, vocab_size, single_digit, min_frequency, len(fast)))
    return fast


def _record(texts: Sequence[str], vocab_size: int, single_digit: bool, min_frequency: int, got: int) -> dict:
    import tokenizers

    return {
        "vocab_size_asked": vocab_size,
        "vocab_size": got,
        "single_digit": single_digit,
        "min_frequency": min_frequency,
        "training_documents": len(texts),
        "training_bytes": sum(len(text.encode("utf-8")) for text in texts),
        "tokenizers_version": tokenizers.__version__,
    }


def save_tokenizer(tokenizer, out_dir: str | os.PathLike, record: Mapping | None = None) -> Path:
    """save_pretrained into out_dir, plus a small JSON record of how it was trained."""
    out = Path(out_dir)
    tokenizer.save_pretrained(out)
    if record is not None:
        (out / TRAINING_RECORD).write_text(json.dumps(dict(record), indent=1) + "\n", encoding="utf-8")
    return out


class TokenizerError(ValueError):
    """A tokenizer that cannot be found or read; the message names the file and what to do."""


class TokenizerNotFound(TokenizerError, FileNotFoundError):
    """Neither a local tokenizer directory nor (offline) a Hub tokenizer in the local cache."""


RESAVE = (
    "save it again with littlekit.lm.tokenizer.train_tokenizer(texts, vocab_size, out_dir=...) "
    "(chapter 8 does) or copy the directory again"
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def _offline() -> bool:
    from huggingface_hub import constants

    flags = (os.environ.get(name, "") for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return bool(constants.HF_HUB_OFFLINE) or any(flag.upper() in {"1", "ON", "YES", "TRUE"} for flag in flags)


def _hub_id(text: str) -> bool:
    """Whether `text` can be a Hub repository id ('name' or 'owner/name') rather than only a path."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if text.startswith(("~", ".")) or "\\" in text:
        return False
    try:
        validate_repo_id(text)
    except HFValidationError:
        return False
    owner = text.split("/")[0]
    return "/" not in text or not Path(owner).is_dir()  # 'tok/typo' beside a local tok/ is a path


def locate_tokenizer(path_or_id: str | os.PathLike) -> str:
    """Where load_tokenizer will read from: a local tokenizer directory, or a Hub id (offline: one
    in the local cache). Looks at the disk only, never the network, so a mistyped path fails at
    once rather than after the Hub client's retries: TokenizerNotFound (a FileNotFoundError) when
    nothing is there, TokenizerError when a folder is there but holds no tokenizer."""
    text = str(path_or_id)
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in TOKENIZER_FILES):
            names = sorted(p.name for p in path.iterdir())
            held = (
                f"it holds {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}"
                if names
                else "it is empty"
            )
            raise TokenizerError(
                f"{path} is not a tokenizer directory: no tokenizer.json ({held}); pass the folder "
                f"that train_tokenizer(texts, vocab_size, out_dir=...) wrote (chapter 8 writes one)"
            )
        return str(path)
    if path.exists():
        raise TokenizerError(
            f"{path} is a file; give the tokenizer's directory (the one holding tokenizer.json)"
        )
    if not _hub_id(text):
        raise TokenizerNotFound(f"tokenizer directory {text} does not exist; check the path")
    if _offline():
        from huggingface_hub import try_to_load_from_cache

        if not any(isinstance(try_to_load_from_cache(text, name), str) for name in TOKENIZER_FILES):
            raise TokenizerNotFound(
                f"tokenizer {text} is not a local directory, nor a Hub tokenizer in the local cache "
                f"(offline mode: HF_HUB_OFFLINE is set, so the Hub is not asked); check the path, or "
                f"download it first"
            )
    return text


def load_tokenizer(path_or_id: str | os.PathLike):
    """AutoTokenizer.from_pretrained(path_or_id): a directory saved by train_tokenizer, or a Hub id.

    A missing directory fails at once (TokenizerNotFound, see locate_tokenizer); a damaged one with
    TokenizerError naming the file (e.g. a tokenizer.json that is not JSON) and what to do.
    """
    from transformers import AutoTokenizer

    where = locate_tokenizer(path_or_id)
    try:
        return AutoTokenizer.from_pretrained(where, local_files_only=_offline())
    except Exception as exc:
        if not Path(where).is_dir():
            raise TokenizerError(f"could not load tokenizer {where} ({_short(exc)})") from None
        raise TokenizerError(_damage(Path(where), exc)) from None


def _damage(folder: Path, exc: Exception) -> str:
    """Which file of a tokenizer directory is damaged, for the message."""
    for file in sorted(folder.glob("*.json")):
        try:
            json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as bad:
            return f"{file} is corrupt ({type(bad).__name__}: {bad}); {RESAVE}"
    if not (folder / "tokenizer.json").is_file():
        return f"{folder} has no tokenizer.json ({_short(exc)}); {RESAVE}"
    return f"{folder / 'tokenizer.json'} could not be read as a tokenizer ({_short(exc)}); {RESAVE}"


def _short(exc: Exception, limit: int = 200) -> str:
    """'Type: first line of the message', cut to about `limit` characters."""
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def training_record(path: str | os.PathLike) -> dict | None:
    """The record train_tokenizer saved beside a tokenizer, or None (TokenizerError when damaged)."""
    file = Path(path) / TRAINING_RECORD
    if not file.is_file():
        return None
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{file} is corrupt ({type(exc).__name__}: {exc}); {RESAVE}") from None


# --- reports ------------------------------------------------------------------------------------


def count_tokens(tokenizer, texts: Iterable[str]) -> tuple[int, int]:
    """(UTF-8 bytes, tokens) of the texts, without special tokens."""
    texts = [text for text in texts if text]
    if not texts:
        return 0, 0
    encodings = tokenizer(texts, add_special_tokens=False)["input_ids"]
    n_bytes = sum(len(text.encode("utf-8")) for text in texts)
    return n_bytes, sum(len(ids) for ids in encodings)


def bytes_per_token(tokenizer, texts: Iterable[str]) -> float:
    """Σ UTF-8 bytes / Σ tokens over the texts (higher: the tokenizer compresses them better)."""
    n_bytes, n_tokens = count_tokens(tokenizer, texts)
    if n_tokens == 0:
        raise ValueError("no text to measure")
    return n_bytes / n_tokens


def compression_table(
    tokenizers: Mapping[str, object], text_sets: Mapping[str, Sequence[str]]
) -> pd.DataFrame:
    """One row per (tokenizer, text set): documents, bytes, tokens, bytes_per_token."""
    rows = []
    for name, tokenizer in tokenizers.items():
        for text_set, texts in text_sets.items():
            n_bytes, n_tokens = count_tokens(tokenizer, texts)
            rows.append(
                {
                    "tokenizer": name,
                    "text": text_set,
                    "documents": len(texts),
                    "bytes": n_bytes,
                    "tokens": n_tokens,
                    "bytes_per_token": n_bytes / n_tokens if n_tokens else float("nan"),
                }
            )
    return pd.DataFrame(rows)


def number_splits(tokenizer, numbers: Iterable[int] = range(10_000), prefix: str = "") -> pd.DataFrame:
    """How each number, written `prefix + str(n)`, splits into tokens.

    Columns: number, digits, tokens (the decoded pieces holding digits), n_tokens, shape (the
    tuple of the pieces' lengths in digits). A piece without digits (a lone space from `prefix`)
    is not counted. prefix=" " shows a number inside running text, where byte-level BPE glues
    the space to the first digits ('7' and ' 7' are different tokens).
    """
    numbers = [int(n) for n in numbers]
    if any(n < 0 for n in numbers):
        raise ValueError("number_splits takes non-negative integers")
    encodings = tokenizer([f"{prefix}{n}" for n in numbers], add_special_tokens=False)["input_ids"]
    pieces = _decoded_pieces(tokenizer, {i for ids in encodings for i in ids})
    rows = []
    for n, ids in zip(numbers, encodings, strict=True):
        tokens = [pieces[i] for i in ids if any(c.isdigit() for c in pieces[i])]
        shape = tuple(sum(c.isdigit() for c in token) for token in tokens)
        rows.append(
            {"number": n, "digits": len(str(n)), "tokens": tokens, "n_tokens": len(tokens), "shape": shape}
        )
    return pd.DataFrame(rows)


def _decoded_pieces(tokenizer, ids: Iterable[int]) -> dict[int, str]:
    return {i: tokenizer.decode([i], clean_up_tokenization_spaces=False) for i in ids}


def number_shape_table(splits: pd.DataFrame, max_tokens: int = 3) -> pd.DataFrame:
    """Per digit count: how many numbers, mean tokens per number, the share split into 1, 2, ...,
    `max_tokens`+ tokens, and how many distinct shapes the numbers of that length get."""
    rows = []
    for digits, group in splits.groupby("digits", sort=True):
        low, high = group["number"].min(), group["number"].max()
        row = {
            "numbers": f"{low}-{high}",
            "count": len(group),
            "mean_tokens": group["n_tokens"].mean(),
        }
        for k in range(1, max_tokens + 1):
            label = f"{k}+ tokens" if k == max_tokens else f"{k} token{'s' if k > 1 else ''}"
            hit = group["n_tokens"] >= k if k == max_tokens else group["n_tokens"] == k
            row[label] = hit.mean()
        row["distinct_shapes"] = group["shape"].nunique()
        rows.append({"digits": digits, **row})
    return pd.DataFrame(rows).set_index("digits")


def shape_counts(splits: pd.DataFrame, digits: int = 4, examples: int = 3) -> pd.DataFrame:
    """The distinct split shapes of the `digits`-digit numbers, most frequent first, with the
    number of such numbers, their share and the first few as examples ('1234 -> 12|34')."""
    group = splits[splits["digits"] == digits]
    if group.empty:
        return pd.DataFrame(columns=["shape", "numbers", "share", "examples"])
    rows = []
    for shape, members in group.groupby("shape", sort=False):
        shown = members.head(examples)
        rows.append(
            {
                "shape": shape,
                "numbers": len(members),
                "share": len(members) / len(group),
                "examples": ", ".join(
                    f"{n} -> {'|'.join(t)}" for n, t in zip(shown["number"], shown["tokens"], strict=True)
                ),
            }
        )
    table = pd.DataFrame(rows).sort_values(["numbers", "shape"], ascending=[False, True])
    return table.reset_index(drop=True)


# GPT-2's BPE on the same integers, as the issue's seed note reports it (not measured here: the
# GPT-2 vocabulary is not in this repository). Shares of numbers split into 1, 2 and 3 tokens;
# for 100-999 the note says only "20.1% split", entered under 2 tokens.
SEED_NOTE_GPT2 = pd.DataFrame(
    {
        "numbers": ["0-99", "100-999", "1000-9999"],
        "1 token": [1.0, 0.799, 0.010],
        "2 tokens": [0.0, 0.201, 0.987],
        "3+ tokens": [0.0, 0.0, 0.003],
        "distinct_shapes": [None, None, 5],
    }
).set_index("numbers")
