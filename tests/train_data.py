"""A small real training set for the trainer's tests: a tokenizer and train/validation shards.

Built from the first documents of the embedded demo corpus (cut to a few hundred characters, so
rows pack several documents), with the project's own tokenizer and shard writer.
"""

from __future__ import annotations

import json
from pathlib import Path

from littlekit import config
from littlekit.shards import write_shards
from littlekit.tokenizer import train_tokenizer


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
