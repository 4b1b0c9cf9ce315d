"""Packed token shards, a BOS-aligned mixture loader with exact resume, and a held-out eval stream.

Layout of a shard directory written by `write_shards`:

- `shard_00000.bin`, ...: flat token ids (uint16 when the vocabulary has < 65,536 ids, else
  uint32), each document stored as BOS + tokens + EOS; a document never spans two shards.
- `documents.npy`: int64 array of shape (n_docs, 3) holding, per document, its start index in the
  concatenated stream, its token count (BOS and EOS included) and its UTF-8 byte count (what
  bits per byte divides by). Kept out of the JSON so millions of documents stay cheap to load.
- `manifest.json`: dtype, vocabulary, special ids, shard files with their token and document
  counts and largest token id (max_id), totals.

Shards are checked once, when written: `TokenShards` checks a directory against its manifest when
it opens it (every shard file's size against its token count and dtype, its max_id against the
vocabulary, the documents table against the totals) and raises ShardError, one message naming the
file and how to rebuild it, rather than failing later inside a batch. Opening reads no token file;
a shard is memory-mapped when a batch reads it, within the process's budget of open maps
(`littlekit.lm.shard_files`), and the ids a read returns are checked against the vocabulary as it
copies them. A manifest written before max_id was recorded still reads: each of its shards is then
scanned for ids outside the vocabulary when first read, and a warning says how to record them.

`BatchLoader` builds every row from whole documents: a row starts at a document's BOS, the
following documents (in the source's seeded per-epoch order) are packed after it, and the
document that overflows the row is cropped; its tail is not used. The rows of a global batch are
planned from document lengths alone, so every rank plans the same global batch and reads only
its own contiguous slice of rows.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from littlekit.lm.shard_files import (
    DOCUMENTS,
    DTYPES,
    MANIFEST,
    ShardMaps,
    ShardWriter,
    first_id_at_or_above,
    no_manifest_problem,
    rebuild_hint,
    size_problem,
)

FORMAT_VERSION = 1
IGNORE_INDEX = -100

# The paper's cool-off mixture: 91% K-5 pretraining data, 5% K-5-rewritten math reasoning, 2% K-5
# math instruction data, 2% general instruction data. BatchLoader draws rows with these weights
# (every row holds seq_len tokens, so they are token shares too); mixture_sources(root) maps each
# name to the shard directory root/<name>.
PAPER_COOLOFF_MIX: dict[str, float] = {
    "k5_pretrain": 0.91,
    "k5_math_reasoning": 0.05,
    "k5_math_instruct": 0.02,
    "general_instruct": 0.02,
}

_CHOICE_BLOCK = 4096  # rows whose sources are drawn from one seeded generator


def special_ids(tokenizer: Any) -> tuple[int, int]:
    """(bos_id, eos_id) of a tokenizer; a tokenizer without BOS (Qwen's own) uses EOS for both."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer needs an eos_token to separate documents")
    bos = tokenizer.bos_token_id
    return (eos if bos is None else bos), eos


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits in 16 bits, else uint32."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def _text_of(item: str | Mapping[str, Any], text_key: str) -> str:
    if isinstance(item, str):
        return item
    return item[text_key]


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _vocab_sha256(tokenizer: Any) -> str:
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode("utf-8")).hexdigest()


def write_shards(
    texts: Iterable[str | Mapping[str, Any]],
    tokenizer: Any,
    out_dir: str | os.PathLike,
    shard_tokens: int = 1 << 26,
    batch_size: int = 512,
    text_key: str = "text",
    overwrite: bool = False,
) -> dict[str, Any]:
    """Tokenises documents into packed shards under out_dir and returns the manifest.

    texts holds strings or dicts with a `text_key` field; empty texts are skipped (and counted).
    Output depends only on the texts, their order and the tokenizer, so it is reproducible.
    """
    if shard_tokens < 1 or batch_size < 1:
        raise ValueError("shard_tokens and batch_size must be positive")
    out = Path(out_dir)
    if (out / MANIFEST).exists() and not overwrite:
        raise FileExistsError(f"{out / MANIFEST} exists; pass overwrite=True to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("shard_*.bin"):
        old.unlink()
    bos, eos = special_ids(tokenizer)
    vocab_size = len(tokenizer)
    dtype = token_dtype(vocab_size)
    writer = ShardWriter(out, dtype, shard_tokens)
    rows: list[tuple[int, int, int]] = []
    skipped = 0
    try:
        for batch in _batched((_text_of(item, text_key) for item in texts), batch_size):
            kept = [text for text in batch if text]
            skipped += len(batch) - len(kept)
            if not kept:
                continue
            encoded = tokenizer(kept, add_special_tokens=False)["input_ids"]
            for text, ids in zip(kept, encoded, strict=True):
                doc = np.asarray([bos, *ids, eos], dtype=np.int64)
                if doc.max() >= vocab_size:
                    raise ValueError(f"token id {doc.max()} outside the vocabulary of {vocab_size}")
                rows.append((writer.add(doc), len(doc), len(text.encode("utf-8"))))
    finally:
        writer.close()
    documents = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    np.save(out / DOCUMENTS, documents)
    manifest = {
        "format": FORMAT_VERSION,
        "dtype": dtype.name,
        "vocab_size": vocab_size,
        "vocab_sha256": _vocab_sha256(tokenizer),
        "bos_id": int(bos),
        "eos_id": int(eos),
        "n_docs": int(len(documents)),
        "n_tokens": int(writer.total),
        "total_bytes": int(documents[:, 2].sum()),
        "skipped_empty": skipped,
        "documents": DOCUMENTS,
        "shards": writer.shards,
    }
    _write_manifest(out, manifest)  # last, so a half-written directory is never read
    return manifest


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / MANIFEST)


class ShardError(ValueError):
    """A shard directory that cannot be read as `write_shards` wrote it; the message names the
    file, what is wrong with it and what to do."""


class ShardsNotFound(ShardError, FileNotFoundError):
    """No shard directory there: the path does not exist, or the folder holds no manifest.json."""


_MANIFEST_KEYS = ("dtype", "bos_id", "eos_id", "n_docs", "n_tokens", "total_bytes", "documents", "shards")
_MANIFEST_KEYS += ("vocab_sha256",)


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a shard directory, or ShardError (ShardsNotFound when there is none) naming
    the file and what to do: a missing or empty folder, another kind of folder, a half-written or
    corrupt manifest."""
    folder = Path(directory)
    path = folder / MANIFEST
    if not folder.exists():
        raise ShardsNotFound(
            f"shard directory {folder} does not exist; check the path, or {rebuild_hint(folder)}"
        )
    if not folder.is_dir():
        raise ShardError(
            f"{folder} is a file, not a shard directory (the folder write_shards writes, holding {MANIFEST})"
        )
    if not path.is_file():
        raise ShardsNotFound(no_manifest_problem(folder))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ShardError(f"{path} is corrupt ({type(exc).__name__}: {exc}); {rebuild_hint(folder)}") from None
    if not isinstance(manifest, dict) or (missing := [k for k in _MANIFEST_KEYS if k not in manifest]):
        what = f"lacks {', '.join(missing)}" if isinstance(manifest, dict) else "is not a JSON object"
        raise ShardError(f"{path} is not a write_shards manifest (it {what}); {rebuild_hint(folder)}")
    if manifest.get("format", FORMAT_VERSION) != FORMAT_VERSION:
        raise ShardError(
            f"{path} has format {manifest['format']!r}, this littlekit reads format "
            f"{FORMAT_VERSION}; {rebuild_hint(folder)}"
        )
    return manifest


class TokenShards:
    """Read-only view of a shard directory; token files are memory-mapped when read, never loaded whole.

    Opening checks the directory against its manifest (ShardError naming the file otherwise): the
    documents table's shape and length, every shard file's size against its token count and dtype
    and its recorded max_id against the vocabulary, so a truncated or mis-typed file fails here
    rather than deep in a batch. It reads the manifest, the documents table and the files' sizes,
    no token file.
    """

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.manifest: dict[str, Any] = read_manifest(self.dir)
        try:
            self._check_manifest()
            docs = self._documents()
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ShardError):
                raise
            raise ShardError(
                f"{self.dir / MANIFEST} is not a valid write_shards manifest "
                f"({type(exc).__name__}: {exc}); {rebuild_hint(self.dir)}"
            ) from None
        self.dtype = np.dtype(self.manifest["dtype"])
        self.bos_id: int = self.manifest["bos_id"]
        self.eos_id: int = self.manifest["eos_id"]
        self.starts, self.lengths, self.doc_bytes = docs[:, 0], docs[:, 1], docs[:, 2]
        self._shard_starts = [int(s["start"]) for s in self.manifest["shards"]]
        self._shard_tokens = [int(s["tokens"]) for s in self.manifest["shards"]]
        self._paths = [self.dir / s["file"] for s in self.manifest["shards"]]
        vocab = self.manifest.get("vocab_size")
        self._vocab = None if vocab is None else int(vocab)
        self._files = ShardMaps()
        # Shards of a manifest written before max_id was recorded: scanned when first read.
        self._unscanned = {i for i, s in enumerate(self.manifest["shards"]) if "max_id" not in s}
        if self._unscanned and self._vocab is not None:
            _warn_unscanned(self.dir)

    def _check_manifest(self) -> None:
        m, path = self.manifest, self.dir / MANIFEST
        if m["dtype"] not in DTYPES:
            raise ShardError(
                f"{path} gives dtype {m['dtype']!r}, not one of {', '.join(DTYPES)}; {rebuild_hint(self.dir)}"
            )
        dtype = np.dtype(m["dtype"])
        vocab = m.get("vocab_size")
        if vocab is not None and int(vocab) - 1 > np.iinfo(dtype).max:
            raise ShardError(
                f"{path} gives dtype {dtype.name}, too small for its vocabulary of {vocab:,} "
                f"ids; {rebuild_hint(self.dir)}"
            )
        start = 0
        for entry in m["shards"]:
            file = self.dir / str(entry["file"])
            tokens = int(entry["tokens"])
            if int(entry["start"]) != start:
                raise ShardError(
                    f"{path} lists {entry['file']} at token {entry['start']}, after "
                    f"{start:,} tokens of earlier shards; {rebuild_hint(self.dir)}"
                )
            if not file.is_file():
                raise ShardError(
                    f"{file} is missing (listed in {path}); copy it again or {rebuild_hint(self.dir)}"
                )
            size, expected = file.stat().st_size, tokens * dtype.itemsize
            if size != expected:
                raise ShardError(size_problem(file, size, tokens, dtype) + f"; {rebuild_hint(self.dir)}")
            if vocab is not None and int(entry.get("max_id", -1)) >= int(vocab):
                raise ShardError(
                    f"{file} holds token id {int(entry['max_id']):,} ({path} records its max_id), outside "
                    f"the vocabulary of {int(vocab):,} ids it gives; {rebuild_hint(self.dir)}"
                )
            start += tokens
        if start != int(m["n_tokens"]):
            raise ShardError(
                f"{path} lists shards of {start:,} tokens in all but n_tokens {m['n_tokens']:,}; "
                f"{rebuild_hint(self.dir)}"
            )

    def _documents(self) -> np.ndarray:
        path = self.dir / str(self.manifest["documents"])
        if not path.is_file():
            raise ShardError(f"{path} is missing (listed in {self.dir / MANIFEST}); {rebuild_hint(self.dir)}")
        with path.open("rb") as handle:
            if handle.read(6) != b"\x93NUMPY":
                raise ShardError(f"{path} is corrupt (not a .npy array file); {rebuild_hint(self.dir)}")
        try:  # a plain ndarray view of the mapping: indexing a np.memmap costs ~10x more per call
            docs = np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
        except (ValueError, OSError, EOFError) as exc:
            raise ShardError(
                f"{path} is corrupt ({type(exc).__name__}: {exc}); {rebuild_hint(self.dir)}"
            ) from None
        n_docs, n_tokens = int(self.manifest["n_docs"]), int(self.manifest["n_tokens"])
        if docs.ndim != 2 or docs.shape[1] != 3 or docs.dtype.kind not in "iu":
            raise ShardError(
                f"{path} holds a {docs.dtype} array of shape {docs.shape}, not the "
                f"(documents, 3) integers write_shards writes; {rebuild_hint(self.dir)}"
            )
        if len(docs) != n_docs:
            raise ShardError(
                f"{path} lists {len(docs):,} documents, {self.dir / MANIFEST} {n_docs:,}; "
                f"{rebuild_hint(self.dir)}"
            )
        if n_docs and int(docs[-1, 0]) + int(docs[-1, 1]) != n_tokens:
            raise ShardError(
                f"{path} ends its documents at token {int(docs[-1, 0]) + int(docs[-1, 1]):,}, "
                f"but the shards hold {n_tokens:,}; {rebuild_hint(self.dir)}"
            )
        return docs

    def __len__(self) -> int:
        return int(self.manifest["n_docs"])

    def require_documents(self) -> TokenShards:
        """self, or ShardError when the directory holds no documents (nothing to train or validate on)."""
        if len(self) == 0:
            raise ShardError(
                f"{self.dir} holds no documents ({self.dir / MANIFEST} lists n_docs 0: were all the "
                f"texts empty?); write non-empty texts into it with littlekit.lm.shards.write_shards(texts, "
                f"tokenizer, {str(self.dir)!r}, overwrite=True)"
            )
        return self

    @property
    def n_tokens(self) -> int:
        return int(self.manifest["n_tokens"])

    @property
    def total_bytes(self) -> int:
        return int(self.manifest["total_bytes"])

    def _shard(self, index: int) -> np.ndarray:
        path, expected = self._paths[index], self._shard_tokens[index]
        tokens = self._files.tokens(index, path, self.dtype)
        if len(tokens) != expected:  # changed since it was opened
            raise ShardError(
                size_problem(path, path.stat().st_size, expected, self.dtype) + f"; {rebuild_hint(self.dir)}"
            )
        if index in self._unscanned:
            self._check_ids(index, tokens, 0)
            self._unscanned.discard(index)
        return tokens

    def _check_ids(self, shard: int, tokens: np.ndarray, offset: int) -> None:
        """ShardError naming the file when one of tokens (from position offset of shard) is outside
        the manifest's vocabulary (a damaged file, or one written with another tokenizer), before a
        batch carries it into a model."""
        if self._vocab is None or (position := first_id_at_or_above(tokens, self._vocab)) is None:
            return
        raise ShardError(
            f"{self._paths[shard]} holds token id {int(tokens[position]):,} at position "
            f"{offset + position:,}, outside the vocabulary of {self._vocab:,} ids that "
            f"{self.dir / MANIFEST} gives (a damaged file, or one written with another tokenizer); "
            f"{rebuild_hint(self.dir)}"
        )

    def document(self, index: int, max_tokens: int | None = None) -> np.ndarray:
        """Document `index` as int64 ids (BOS ... EOS), optionally only its first max_tokens."""
        start, length = int(self.starts[index]), int(self.lengths[index])
        if max_tokens is not None:
            length = min(length, max_tokens)
        shard = bisect.bisect_right(self._shard_starts, start) - 1
        local = start - self._shard_starts[shard]
        piece = self._shard(shard)[local : local + length]
        self._check_ids(shard, piece, local)  # the ids read: a file damaged after it was written
        return piece.astype(np.int64)

    def close(self) -> None:
        """Closes the shard files this view has mapped (dropping the view does it too)."""
        self._files.close()


_WARNED: set[Path] = set()


def _warn_unscanned(folder: Path) -> None:
    """Once per folder: its manifest predates max_id, so its shards are scanned when first read."""
    if folder.resolve() in _WARNED:
        return
    _WARNED.add(folder.resolve())
    warnings.warn(
        f"{folder / MANIFEST} records no max_id per shard (written by an older littlekit), so each "
        f"shard there is scanned for token ids outside the vocabulary when first read: a full read "
        f"of every shard, at every start and resume. Record them once with "
        f"littlekit.lm.shards.record_max_ids({str(folder)!r}), or {rebuild_hint(folder)}",
        stacklevel=3,
    )


def record_max_ids(directory: str | os.PathLike) -> dict[str, Any]:
    """Scans every shard of a directory written before max_id was recorded (ShardError naming the
    file if one holds an id outside the vocabulary), records each shard's max_id in its manifest
    and returns the manifest; readers then check the shards without reading them."""
    _WARNED.add(Path(directory).resolve())  # no warning that says to call this
    shards = TokenShards(directory)
    for index, entry in enumerate(shards.manifest["shards"]):
        entry["max_id"] = int(shards._shard(index).max()) if entry["tokens"] else 0
    shards.close()
    _write_manifest(shards.dir, shards.manifest)
    return shards.manifest


def mixture_sources(
    root: str | os.PathLike, weights: Mapping[str, float] = PAPER_COOLOFF_MIX
) -> dict[str, float]:
    """Maps named mixture weights (e.g. PAPER_COOLOFF_MIX) to {root/<name>: weight} for BatchLoader."""
    return {str(Path(root) / name): float(weight) for name, weight in weights.items()}


class BatchLoader:
    """Endless BOS-aligned (input_ids, labels) batches of shape (batch_size, seq_len) from weighted sources.

    sources is one shard directory or {directory: weight}; each global row draws its source with
    probability proportional to the weight (seeded, independent of batch size and world size).
    Each source walks its documents in a seeded random order that is reshuffled every epoch.

    batch_size is the rows per rank; the global batch is batch_size * world_size rows and rank r
    receives rows [r * batch_size, (r + 1) * batch_size). Rows are consumed in one global order,
    so one process with batch_size B * W reading one batch, W processes with batch_size B, or one
    process with batch_size B reading W batches (gradient accumulation) all see the same rows.
    The state (rows consumed, per-source epoch and position) is global, identical on every rank,
    and `load_state_dict` continues exactly where `state_dict` was taken.
    """

    def __init__(
        self,
        sources: str | os.PathLike | Mapping[str | os.PathLike, float],
        seq_len: int,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
    ):
        if isinstance(sources, (str, os.PathLike)):
            sources = {sources: 1.0}
        if not sources:
            raise ValueError("no sources given")
        if seq_len < 1 or batch_size < 1:
            raise ValueError("seq_len and batch_size must be positive")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world_size {world_size}")
        weights = np.asarray([float(w) for w in sources.values()], dtype=np.float64)
        if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ValueError(f"source weights must be positive, got {list(sources.values())}")
        self.names = [str(name) for name in sources]
        self.weights = weights / weights.sum()
        self.shards = [TokenShards(name) for name in self.names]
        for shards in self.shards:
            shards.require_documents()
        self.seq_len, self.batch_size, self.seed = seq_len, batch_size, seed
        self.rank, self.world_size, self.shuffle = rank, world_size, shuffle
        self.rows = 0  # global rows planned so far
        self.cursors = [[0, 0] for _ in self.names]  # per source: [epoch, position in epoch order]
        self._orders: dict[int, tuple[int, np.ndarray]] = {}
        self._choices: tuple[int, np.ndarray] | None = None

    def __iter__(self) -> BatchLoader:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.next_batch()

    def _order(self, source: int, epoch: int) -> np.ndarray:
        cached = self._orders.get(source)
        if cached is None or cached[0] != epoch:
            n = len(self.shards[source])
            order = (
                np.random.default_rng([self.seed, 2, source, epoch]).permutation(n)
                if self.shuffle
                else np.arange(n)
            )
            self._orders[source] = cached = (epoch, order)
        return cached[1]

    def _source_of_row(self, row: int) -> int:
        if len(self.names) == 1:
            return 0
        block = row // _CHOICE_BLOCK
        if self._choices is None or self._choices[0] != block:
            rng = np.random.default_rng([self.seed, 1, block])
            self._choices = (block, rng.choice(len(self.names), size=_CHOICE_BLOCK, p=self.weights))
        return int(self._choices[1][row % _CHOICE_BLOCK])

    def _plan_row(self) -> tuple[int, list[tuple[int, int]]]:
        """Advances the global state by one row: its source and (document, tokens taken) pieces."""
        source = self._source_of_row(self.rows)
        self.rows += 1
        shards, cursor = self.shards[source], self.cursors[source]
        pieces: list[tuple[int, int]] = []
        need = self.seq_len + 1
        while need > 0:
            doc = int(self._order(source, cursor[0])[cursor[1]])
            take = min(int(shards.lengths[doc]), need)
            pieces.append((doc, take))
            need -= take
            cursor[1] += 1
            if cursor[1] == len(shards):
                cursor[0], cursor[1] = cursor[0] + 1, 0
        return source, pieces

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        plans = [self._plan_row() for _ in range(self.batch_size * self.world_size)]
        mine = plans[self.rank * self.batch_size : (self.rank + 1) * self.batch_size]
        rows = np.empty((self.batch_size, self.seq_len + 1), dtype=np.int64)
        for i, (source, pieces) in enumerate(mine):
            rows[i] = np.concatenate([self.shards[source].document(doc, take) for doc, take in pieces])
        return torch.from_numpy(rows[:, :-1].copy()), torch.from_numpy(rows[:, 1:].copy())

    def _fingerprints(self) -> list[dict[str, Any]]:
        # What the rows depend on, so a moved or renamed shard directory still resumes.
        return [
            {key: shards.manifest[key] for key in ("n_docs", "n_tokens", "vocab_sha256")}
            for shards in self.shards
        ]

    def state_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable state; the same on every rank."""
        return {
            "format": FORMAT_VERSION,
            "rows": self.rows,
            "cursors": [list(c) for c in self.cursors],
            "sources": list(self.names),
            "fingerprints": self._fingerprints(),
            "weights": self.weights.tolist(),
            "seed": self.seed,
            "seq_len": self.seq_len,
            "shuffle": self.shuffle,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continues from `state`; refuses one taken on other data, weights, seed or seq_len.

        Sources are matched by position and by content (documents, tokens, vocabulary), not by
        path; batch_size, rank and world_size may differ from the run that saved the state.
        """
        own = self.state_dict()
        for key in ("fingerprints", "seed", "seq_len", "shuffle"):
            if state[key] != own[key]:
                raise ValueError(f"loader state has {key}={state[key]!r}, this loader {own[key]!r}")
        if not np.allclose(state["weights"], self.weights, rtol=0, atol=1e-12):
            raise ValueError(
                f"loader state has weights {state['weights']}, this loader {self.weights.tolist()}"
            )
        self.rows = int(state["rows"])
        self.cursors = [[int(epoch), int(pos)] for epoch, pos in state["cursors"]]


def planned_reads(
    sources: str | os.PathLike | Mapping[str | os.PathLike, float], seq_len: int, rows: int, seed: int = 0
) -> list[dict[str, Any]]:
    """What the first `rows` global rows of `BatchLoader(sources, seq_len, ..., seed)` read, per
    source, planned from document lengths alone (no token is loaded; the batch size, rank and world
    size do not change the global rows): the source's name, rows, tokens (seq_len per row, the
    row's inputs, as the trainer counts training tokens), documents and distinct_tokens (the
    documents the rows' inputs touch and how many of their tokens are an input at least once; a
    row's last token is only a label)."""
    if rows < 0:
        raise ValueError(f"rows must be >= 0, got {rows}")
    loader = BatchLoader(sources, seq_len, batch_size=1, seed=seed)
    counts = [0] * len(loader.names)
    furthest: list[dict[int, int]] = [{} for _ in loader.names]  # per source: document -> tokens read
    for _ in range(rows):
        source, pieces = loader._plan_row()
        counts[source] += 1
        *whole, (last, take) = pieces
        for doc, taken in [*whole, (last, take - 1)]:  # the last token is only a label
            if taken:
                furthest[source][doc] = max(taken, furthest[source].get(doc, 0))
    return [
        {
            "source": name,
            "rows": counts[i],
            "tokens": counts[i] * seq_len,
            "documents": len(furthest[i]),
            "distinct_tokens": sum(furthest[i].values()),
        }
        for i, name in enumerate(loader.names)
    ]


class EvalBatch(NamedTuple):
    """A held-out batch: labels are -100 where nothing is scored; n_bytes of the documents it starts."""

    input_ids: torch.Tensor
    labels: torch.Tensor
    n_bytes: int


def _eval_rows(
    shards: TokenShards, seq_len: int, pack: bool = True
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """(tokens, scored flags, bytes) rows of width seq_len + 1 covering every document once, in order."""
    width = seq_len + 1
    tokens: list[np.ndarray] = []
    flags: list[np.ndarray] = []
    used = row_bytes = 0

    def emit() -> tuple[np.ndarray, np.ndarray, int]:
        nonlocal tokens, flags, used, row_bytes
        pad = width - used
        row = np.concatenate([*tokens, np.full(pad, shards.eos_id, dtype=np.int64)])
        flag = np.concatenate([*flags, np.zeros(pad, dtype=bool)])
        out = (row, flag, row_bytes)
        tokens, flags, used, row_bytes = [], [], 0, 0
        return out

    for index in range(len(shards)):
        doc = shards.document(index)
        scored = np.ones(len(doc), dtype=bool)
        scored[[0, -1]] = False  # BOS and EOS are never targets: they carry no bytes
        if used and (not pack or used + len(doc) > width):
            yield emit()
        row_bytes += int(shards.doc_bytes[index])
        start = 0
        # A document longer than a row continues in the next row; the token at a row boundary is
        # the last target of one row and the first input of the next, so each target is scored once.
        while len(doc) - start > width:
            tokens.append(doc[start : start + width])
            flags.append(scored[start : start + width])
            used = width
            yield emit()
            start += seq_len
        tokens.append(doc[start:])
        flags.append(scored[start:])
        used += len(doc) - start
    if used:
        yield emit()


def eval_batches(
    directory: str | os.PathLike,
    seq_len: int,
    batch_size: int,
    rank: int = 0,
    world_size: int = 1,
    pack: bool = True,
) -> Iterator[EvalBatch]:
    """The fixed held-out stream of a shard directory for validation loss and bits per byte.

    Documents are taken in stored order, each starting a new row unless it fits after the previous
    one (pack=False: every document starts a new row); rows are padded at the end (EOS in input_ids,
    -100 in labels), so no attention mask is needed. Every real token of every document is a target
    exactly once, predicted from its document's BOS onwards; EOS is not scored, as in `corpus_bpb`.
    Unlike corpus_bpb, a packed document also sees the earlier documents of its row, and a document
    longer than a row continues in the next row with only the boundary token as context. Batches
    are dealt round-robin to ranks. Over the whole stream (all ranks) Σ n_bytes = total_bytes, so
    BPB = bpb_from_token_losses(Σ nats over labels != -100, Σ n_bytes).
    """
    if seq_len < 1 or batch_size < 1:
        raise ValueError("seq_len and batch_size must be positive")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world_size {world_size}")
    rows = _eval_rows(TokenShards(directory), seq_len, pack)
    batch_index = 0
    while True:
        chunk = [row for _, row in zip(range(batch_size), rows, strict=False)]
        if not chunk:
            return
        if batch_index % world_size == rank:
            tokens = np.stack([row for row, _, _ in chunk])
            scored = np.stack([flag for _, flag, _ in chunk])
            labels = np.where(scored[:, 1:], tokens[:, 1:], IGNORE_INDEX)
            yield EvalBatch(
                torch.from_numpy(tokens[:, :-1].copy()),
                torch.from_numpy(labels),
                sum(n for _, _, n in chunk),
            )
        batch_index += 1


def count_eval_batches(directory: str | os.PathLike, seq_len: int, batch_size: int, pack: bool = True) -> int:
    """How many batches eval_batches yields in total (all ranks together)."""
    rows = sum(1 for _ in _eval_rows(TokenShards(directory), seq_len, pack))
    return math.ceil(rows / batch_size)
