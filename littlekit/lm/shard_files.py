"""The token files of shard directories: written with the facts a reader checks, mapped on demand.

`ShardWriter` appends documents to numbered shard files and records, per shard, its token and
document counts and its largest token id, so a reader checks each file against its manifest from
the file's size and that id alone, without reading its tokens.

A training mixture can list thousands of shard files (80B tokens is ~1,200 shards of 64M tokens),
and each memory map holds a file descriptor (Python before 3.13 keeps a duplicate of the file's
for the life of the map) where many clusters allow a process 1,024. So a shard is mapped when a
batch reads it, into one least-recently-used pool per process: when the pool holds
`max_open_shards()` maps, the oldest is closed, releasing its descriptor, and mapped again should
a later batch read it (its pages stay in the page cache).
"""

from __future__ import annotations

import itertools
import mmap
import os
import sys
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

MANIFEST = "manifest.json"
DOCUMENTS = "documents.npy"
DTYPES = ("uint16", "uint32")
DEFAULT_MAX_OPEN = 64
MAX_OPEN_ENV = "LITTLEKIT_MAX_OPEN_SHARDS"
NOFILE_SHARE = 4  # maps take at most a quarter of the soft open-file limit; the rest is the process's


class ShardWriter:
    """Appends documents to numbered shard files, closing a shard once it holds shard_tokens.

    `shards` lists, per file, its name, start in the concatenated stream, tokens, documents and
    max_id (its largest token id), as the manifest records them."""

    def __init__(self, out_dir: Path, dtype: np.dtype, shard_tokens: int):
        self.out_dir, self.dtype, self.shard_tokens = out_dir, dtype, shard_tokens
        self.shards: list[dict[str, Any]] = []
        self.handle = None
        self.total = 0

    def add(self, ids: np.ndarray) -> int:
        """Writes one document (a non-empty id array); returns its start index in the concatenated stream."""
        if self.handle is None or self.shards[-1]["tokens"] >= self.shard_tokens:
            self._open()
        start = self.total
        self.handle.write(ids.astype(self.dtype).tobytes())
        shard = self.shards[-1]
        shard["tokens"] += len(ids)
        shard["docs"] += 1
        shard["max_id"] = max(shard["max_id"], int(ids.max()))
        self.total += len(ids)
        return start

    def _open(self) -> None:
        self.close()
        name = f"shard_{len(self.shards):05d}.bin"
        self.handle = open(self.out_dir / name, "wb")  # noqa: SIM115 - closed in close()
        self.shards.append({"file": name, "start": self.total, "tokens": 0, "docs": 0, "max_id": 0})

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def rebuild_hint(folder: Path) -> str:
    """What to do about a damaged shard directory, for the end of a message."""
    return (
        f"rebuild it with littlekit.lm.shards.write_shards(texts, tokenizer, {str(folder)!r}, "
        f"overwrite=True) (the book's matched corpora: matched_corpora.prepare_matched_shards)"
    )


def no_manifest_problem(folder: Path) -> str:
    """Why a folder without a manifest is not a shard directory, and what to do."""
    names = sorted(p.name for p in folder.iterdir())
    if not names:
        return f"{folder} is empty: no {MANIFEST}, so no shards were written there; {rebuild_hint(folder)}"
    if any(name.startswith("shard_") or name in (DOCUMENTS, MANIFEST + ".tmp") for name in names):
        return (
            f"{folder / MANIFEST} is missing: the shards there were never finished (write_shards "
            f"writes the manifest last); {rebuild_hint(folder)}"
        )
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    kind = " (it looks like a tokenizer directory)" if "tokenizer.json" in names else ""
    return (
        f"{folder} is not a shard directory{kind}: it has no {MANIFEST} (it holds {shown}); pass "
        f"the folder write_shards wrote, or {rebuild_hint(folder)}"
    )


def size_problem(file: Path, size: int, tokens: int, dtype: np.dtype) -> str:
    """What is wrong with a shard file of `size` bytes listed with `tokens` tokens of `dtype`."""
    expected = tokens * dtype.itemsize
    what = "truncated (an interrupted write or copy?)" if size < expected else "longer than its manifest says"
    for other in DTYPES:
        if other != dtype.name and size == tokens * np.dtype(other).itemsize:
            what = f"its size fits {other}, so it was written with another dtype than the manifest's"
    return (
        f"{file} holds {size:,} bytes, but the manifest lists {tokens:,} {dtype.name} tokens = "
        f"{expected:,} bytes: {what}"
    )


def first_id_at_or_above(tokens: np.ndarray, vocab_size: int) -> int | None:
    """The position of the first id >= vocab_size in tokens, or None when there is none."""
    if not len(tokens) or int(tokens.max()) < vocab_size:
        return None
    return int(np.argmax(tokens >= vocab_size))


# --- the pool of open maps ----------------------------------------------------------------------

_configured: int | None = None  # set_max_open_shards


def _soft_file_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def max_open_shards() -> int:
    """How many shard files this process keeps mapped at once: `set_max_open_shards`'s value, else
    the LITTLEKIT_MAX_OPEN_SHARDS environment variable, else 64; never over a quarter of the soft
    open-file limit (`ulimit -n`), read at each call so a raised limit counts at once."""
    wanted = _configured
    if wanted is None:
        text = os.environ.get(MAX_OPEN_ENV, str(DEFAULT_MAX_OPEN))
        if not text.strip().isdigit() or int(text) < 1:
            raise ValueError(f"{MAX_OPEN_ENV}={text!r}: give a whole number of shard files, at least 1")
        wanted = int(text)
    soft = _soft_file_limit()
    return wanted if soft is None else max(1, min(wanted, soft // NOFILE_SHARE))


def set_max_open_shards(limit: int | None) -> None:
    """Caps the shard files this process keeps mapped at once (None: back to the default); maps
    over the new cap are closed now."""
    global _configured
    if limit is not None and limit < 1:
        raise ValueError(f"the open shard limit must be at least 1, got {limit}")
    _configured = limit
    _POOL.trim(max_open_shards())


class _Map(NamedTuple):
    view: mmap.mmap | None  # None for an empty file, which cannot be mapped
    tokens: np.ndarray


# From Python 3.13 a map can drop its duplicate of the file's descriptor: then it holds none.
_NO_FD: dict[str, Any] = {"trackfd": False} if sys.version_info >= (3, 13) else {}


def _map(path: Path, dtype: np.dtype) -> _Map:
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < dtype.itemsize:
            return _Map(None, np.empty(0, dtype=dtype))
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ, **_NO_FD)
    return _Map(view, np.frombuffer(view, dtype=dtype, count=size // dtype.itemsize))


def _close(view: mmap.mmap | None) -> None:
    if view is None:
        return
    try:
        view.close()
    except BufferError:  # an array over it is still alive elsewhere: the map closes when that goes
        pass


class _Pool:
    """The process's open maps, least recently used first, keyed by (owner, shard index)."""

    def __init__(self) -> None:
        self._maps: OrderedDict[tuple[int, int], _Map] = OrderedDict()
        self._lock = threading.Lock()

    def tokens(self, key: tuple[int, int], path: Path, dtype: np.dtype) -> np.ndarray:
        with self._lock:
            entry = self._maps.get(key)
            if entry is not None:
                self._maps.move_to_end(key)
                return entry.tokens
            self._trim(max_open_shards() - 1)
            entry = self._maps[key] = _map(path, dtype)
            return entry.tokens

    def trim(self, keep: int) -> None:
        with self._lock:
            self._trim(keep)

    def _trim(self, keep: int) -> None:
        while len(self._maps) > keep:
            _, (view, tokens) = self._maps.popitem(last=False)
            del tokens  # the array over the map goes first, so the map can close
            _close(view)

    def release(self, owner: int) -> None:
        with self._lock:
            for key in [key for key in self._maps if key[0] == owner]:
                view, tokens = self._maps.pop(key)
                del tokens
                _close(view)

    def __len__(self) -> int:
        return len(self._maps)


_POOL = _Pool()
_OWNERS = itertools.count()


def open_shard_maps() -> int:
    """How many shard files this process has mapped now."""
    return len(_POOL)


class ShardMaps:
    """One reader's shard files, mapped through the process's pool; its maps are closed when it
    is closed or dropped."""

    def __init__(self) -> None:
        self._owner = next(_OWNERS)
        self._finalizer = weakref.finalize(self, _POOL.release, self._owner)

    def tokens(self, index: int, path: Path, dtype: np.dtype) -> np.ndarray:
        """The tokens of shard `index` (the file at path) as a read-only array over its map; copy
        what is kept, for an array still alive keeps its map (and descriptor) open past eviction."""
        return _POOL.tokens((self._owner, index), path, dtype)

    def close(self) -> None:
        self._finalizer()
