"""datatrove readers that turn every record into a document or an error document, never skipping one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from datatrove.data import Document as DTDocument
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.readers import JsonlReader, ParquetReader

from littlekit.filter.datatrove.blocks import DETAIL_KEY, ERROR_KEY, SafeDocStats, set_aside
from littlekit.io import (
    BAD_ENCODING,
    BAD_JSON,
    DEFAULT_MAX_BYTES,
    PREVIEW_CHARS,
    TOO_LARGE,
    RecordError,
    input_format,
    record_to_document,
)


def _to_datatrove(
    data: Any, source_file: str, index: int, text_key: str, id_key: str, max_bytes: int, preview: str = ""
) -> DTDocument:
    """A datatrove Document for one parsed record; a record that is not a document keeps ERROR_KEY."""
    record = record_to_document(data, index + 1, text_key, id_key, max_bytes, preview)
    if isinstance(record, RecordError):
        return _error_document(record, source_file, index)
    doc_id = data.get(id_key)
    if doc_id is None:
        doc_id = f"{source_file}/{index}"  # datatrove's own default id
    metadata = {key: value for key, value in data.items() if key not in (text_key, id_key)}
    return DTDocument(text=record.text, id=doc_id, metadata=set_aside(metadata))


def _error_document(error: RecordError, source_file: str, index: int) -> DTDocument:
    metadata = {ERROR_KEY: error.reason, DETAIL_KEY: error.detail, "source_file": source_file}
    metadata["line"] = index + 1
    return DTDocument(text=error.preview, id=error.id or f"{source_file}/{index}", metadata=metadata)


class LittleKitJsonlReader(SafeDocStats, JsonlReader):
    """datatrove's JSONL reader, except that no line is skipped silently.

    datatrove's reader logs and skips a line that is not JSON or has no text, and abandons the
    rest of a file at the first non-UTF-8 byte. Here each line is decoded on its own and every
    non-blank line becomes a Document; those that are not documents carry `littlekit_record_error`
    (the reason codes of `littlekit.io`) for RecordErrorFilter to count and set aside. Every other
    field of the record goes to the metadata as it is (`media` and `metadata` too, which
    datatrove's reader would take for its own), a reserved name renamed (see `set_aside`).
    """

    def __init__(self, data_folder, *, max_bytes: int = DEFAULT_MAX_BYTES, **kwargs: Any):
        super().__init__(data_folder, **kwargs)
        self.max_bytes = max_bytes

    def read_file(self, filepath: str) -> Iterator[DTDocument]:
        with self.data_folder.open(filepath, "rb", compression=self.compression) as handle:
            for index, raw in enumerate(handle):
                if index == 0 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte-order mark
                raw = raw.rstrip(b"\r\n")
                if not raw.strip():
                    continue
                with self.track_time():
                    document = self._parse(raw, filepath, index)
                yield document

    def _parse(self, raw: bytes, filepath: str, index: int) -> DTDocument:
        preview = raw[:PREVIEW_CHARS].decode("utf-8", "replace")
        line = index + 1
        if len(raw) > self.max_bytes:
            detail = f"line of {len(raw):,} bytes is over {self.max_bytes:,}"
            return _error_document(RecordError(line, TOO_LARGE, detail, preview=preview), filepath, index)
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            detail = f"not UTF-8 at byte {exc.start}"
            return _error_document(RecordError(line, BAD_ENCODING, detail, preview=preview), filepath, index)
        except (json.JSONDecodeError, RecursionError) as exc:
            detail = str(exc)[:200]
            return _error_document(RecordError(line, BAD_JSON, detail, preview=preview), filepath, index)
        return _to_datatrove(data, filepath, index, self.text_key, self.id_key, self.max_bytes, preview)


class LittleKitParquetReader(SafeDocStats, ParquetReader):
    """datatrove's Parquet reader, keeping every column and turning rows without usable text into
    error documents instead of skipping them."""

    def __init__(self, data_folder, *, max_bytes: int = DEFAULT_MAX_BYTES, **kwargs: Any):
        kwargs.setdefault("read_metadata", True)
        super().__init__(data_folder, **kwargs)
        self.max_bytes = max_bytes

    def get_document_from_dict(self, data: dict, source_file: str, id_in_file: int | str) -> DTDocument:
        return _to_datatrove(data, source_file, int(id_in_file), self.text_key, self.id_key, self.max_bytes)


def make_reader(
    path: str | os.PathLike,
    text_key: str = "text",
    id_key: str = "id",
    input_format: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> PipelineStep:
    """A reader of one file, or of every .jsonl(.gz) or .parquet file under a folder.

    datatrove shards by file (task r reads files r, r + tasks, ...), so a run has at most as
    many busy tasks as input files: split a big single file first (`shard_jsonl`).
    """
    path = Path(path)
    if path.is_file():
        folder, glob = path.parent, path.name
        fmt = input_format or _format_of(path.name)
    elif path.is_dir():
        fmt = input_format or ("parquet" if next(path.rglob("*.parquet"), None) else "jsonl")
        folder, glob = path, "**/*.parquet" if fmt == "parquet" else "**/*.jsonl*"
    else:
        raise FileNotFoundError(f"input {path} is neither a file nor a folder")
    common = {"text_key": text_key, "id_key": id_key, "glob_pattern": glob, "max_bytes": max_bytes}
    if fmt == "jsonl":
        return LittleKitJsonlReader(str(folder), **common)
    if fmt == "parquet":
        return LittleKitParquetReader(str(folder), **common)
    raise ValueError(f"unknown input format {fmt!r} (expected jsonl or parquet)")


def _format_of(name: str) -> str:
    return input_format(name)  # littlekit.io's: inside make_reader a parameter shadows the name
