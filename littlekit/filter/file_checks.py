"""What is wrong with a file a filter stage loads: the checks behind the artifacts directory's
report (`littlekit.filter.artifacts`) and a file given by flag, declared by each stage's `Artifact`.

Each check returns a short problem ("not found", "lacks column(s) ...", "truncated: ...") or None.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")


def table_problem(path: Path, required: Mapping[str, str]) -> str | None:
    """A parquet table with the required columns ({name: "string" | "numeric"}) and rows; a table
    that is not parquet (csv) is only checked to be a file, and left to its loader's checks."""
    path = Path(path)
    if not path.is_file():
        return "not found" if not path.exists() else "is not a file"
    if path.suffix.lower() not in (".parquet", ".pq"):
        return None
    return _check_columns(path, required)


def model_folder_problem(path: Path) -> str | None:
    """A transformers model folder: config.json, whole weights, tokenizer files."""
    return _check_encoder(Path(path))


def _check_encoder(path: Path) -> str | None:
    if not path.is_dir():
        return "not found" if not path.exists() else "is not a directory"
    if not (path / "config.json").is_file():
        return "no config.json (not a transformers model directory)"
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return f"config.json is not valid JSON ({exc})"
    if not isinstance(config, dict):
        return "config.json is not a JSON object"
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        return f"no weights ({' or '.join(WEIGHT_FILES[:2])})"
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt")):
        return "no tokenizer files (save the tokenizer into the same directory)"
    return _check_weights(path)


def _check_weights(path: Path) -> str | None:
    """The weight files are whole: each safetensors file's size is what its header says; a torch
    .bin (a zip archive) opens; a sharded index's shards are there and whole."""
    files = []
    if (path / "model.safetensors").is_file():
        files.append(path / "model.safetensors")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            return f"{index.name} is not a safetensors index ({type(exc).__name__}: {exc})"
        missing = [name for name in shards if not (path / name).is_file()]
        if missing:
            return f"{index.name} names shard(s) that are not there: {missing[:3]}"
        files += [path / name for name in shards]
    for file in files:
        problem = safetensors_problem(file)
        if problem:
            return f"{file.name}: {problem}"
    torch_bin = path / "pytorch_model.bin"
    if not files and torch_bin.is_file():
        with torch_bin.open("rb") as handle:
            zipped = handle.read(2) == b"PK"
        if zipped:
            try:
                with zipfile.ZipFile(torch_bin):
                    pass
            except (zipfile.BadZipFile, OSError) as exc:
                return f"{torch_bin.name} is damaged or truncated ({exc})"
    return None


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a .safetensors file (header unreadable, file cut short); None if whole.

    The format: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's
    byte range, then the data; the file ends where the last tensor does."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"not a safetensors file (only {size} bytes)"
        n = int.from_bytes(head, "little")
        if n > size - 8 or n > 100_000_000:
            return f"not a safetensors file, or cut short (its header does not fit in its {size:,} bytes)"
        try:
            header = json.loads(handle.read(n).decode("utf-8"))
            ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as exc:
            return f"not a safetensors file (its header is not readable: {type(exc).__name__})"
    expected = 8 + n + max(ends, default=0)
    if size < expected:
        return f"truncated: its header says {expected:,} bytes but the file has {size:,}"
    return None


def _check_columns(path: Path, required: Mapping[str, str]) -> str | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # pyarrow raises several types for a file that is not parquet
        return f"not a readable parquet file ({type(exc).__name__}: {exc})"
    columns = schema.names
    missing = [name for name in required if name not in columns]
    if missing:
        return f"lacks column(s) {missing}; has {columns}"
    for name, kind in required.items():
        dtype = schema.field(name).type
        ok = (
            pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)
            if kind == "numeric"
            else pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_dictionary(dtype)
        )
        if not ok:
            return f"column {name!r} is {dtype}, not {kind}"
    return None if rows else "has no rows"
