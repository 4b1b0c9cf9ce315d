"""A small real training set for the trainer's tests: a tokenizer and train/validation shards.

Built from the first documents of the embedded demo corpus (cut to a few hundred characters, so
rows pack several documents), with the project's own tokenizer and shard writer.
"""

from __future__ import annotations

import json
from pathlib import Path

from littlekit import config
from littlekit.lm.shards import write_shards
from littlekit.lm.tokenizer import train_tokenizer


def demo_texts(n: int, max_chars: int = 400) -> list[str]:
    path = config.data_path("demo_corpus/demo_web.jsonl")
    texts = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            text = (json.loads(line).get("text") or "").strip()
            if text:
                texts.append(text[:max_chars])
            if len(texts) == n:
                break
    return texts


def make_train_data(root: Path, n_train: int = 160, n_val: int = 24, vocab_size: int = 384) -> dict[str, str]:
    """{tokenizer, train, val} directories under root."""
    texts = demo_texts(n_train + n_val)
    train, val = texts[:n_train], texts[n_train:]
    paths = {name: root / name for name in ("tokenizer", "train", "val")}
    tokenizer = train_tokenizer(train, vocab_size=vocab_size, out_dir=paths["tokenizer"])
    write_shards(train, tokenizer, paths["train"])
    write_shards(val, tokenizer, paths["val"])
    return {name: str(path) for name, path in paths.items()}


def tiny_qwen3(tokenizer, seed: int = 0, max_positions: int = 128, **overrides):
    """A random 2-layer Qwen3 (hidden 32) over `tokenizer`'s vocabulary, in eval mode.

    initializer_range 0.3 (Qwen3's default is 0.02) makes predictions depend visibly on context, so
    a test comparing two computations of the same quantity can fail when one of them is wrong.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    settings = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=max_positions,
        initializer_range=0.3,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(Qwen3Config(**{**settings, **overrides})).eval()


def nano_lm(texts: list[str], vocab_size: int, seed: int = 0):
    """(model, tokenizer): littlekit's "nano" Qwen3, the size chapter 9 trains, random, over a BPE of `texts`.

    initializer_range 0.3 so that its predictions differ visibly between texts.
    """
    import torch

    from littlekit.lm.sizes import build_model, qwen3_config

    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    config = qwen3_config(
        "nano",
        len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=0.3,
    )
    torch.manual_seed(seed)
    return build_model(config).eval(), tokenizer


def saved_curriculum_qwen3(folder: Path, fmt: str, max_positions: int = 256) -> Path:
    """A random tiny Qwen3 over a BPE trained on curriculum texts in `fmt`, saved with its tokenizer
    (save_pretrained) in `folder`: a model directory any loader of a path or Hub id takes."""
    from littlekit.curriculum.generate import generate
    from littlekit.curriculum.units import all_units

    texts = [r["text"] for r in generate(all_units(), 4, seed=0, fmt=fmt)]
    tokenizer = train_tokenizer(texts, vocab_size=400)
    tiny_qwen3(tokenizer, max_positions=max_positions).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return Path(folder)
