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
from littlekit.filter.paths import folder_files
from littlekit.io import (
    BAD_ENCODING,
    BAD_JSON,
    DEFAULT_MAX_BYTES,
    PREVIEW_CHARS,
    TOO_LARGE,
    InputFileError,
    RecordError,
    compression_problem,
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


class LittleKitInputReader(LittleKitJsonlReader):
    """The input files of a run, each read by its own format: a JSONL file as LittleKitJsonlReader
    reads it, a Parquet file as LittleKitParquetReader does, so a folder of mixed formats is read
    whole. `files` (relative to `data_folder`): the ones given, else the folder's input files by
    `littlekit.filter.paths.folder_files`, listed when asked (the manifest, each task), as
    datatrove's readers list theirs.

    Task `rank` of `world_size` reads files[rank::world_size], datatrove's own sharding of a
    sorted listing. A file that cannot be read on (cut-short gzip, damaged Parquet, gzip data
    under a name without .gz) ends the task with an InputFileError naming it, how far it was read
    and what to do, rather than a bare EOFError or ArrowInvalid.
    """

    def __init__(
        self,
        data_folder,
        files: list[str] | None = None,
        *,
        input_format: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        batch_size: int = 1000,
        **kwargs: Any,
    ):
        super().__init__(data_folder, max_bytes=max_bytes, **kwargs)
        self.given_files = None if files is None else list(files)
        self.input_format = input_format
        self.batch_size = batch_size  # Parquet record batches, as ParquetReader's
        self.read_metadata = True

    @property
    def files(self) -> list[str]:
        if self.given_files is not None:
            return self.given_files
        return folder_files(self.data_folder.path, self.input_format)[0]

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        for document in self.read_files_shard(self.files[rank::world_size]):
            self.update_doc_stats(document)
            yield document

    def read_file(self, filepath: str) -> Iterator[DTDocument]:
        fmt = self.input_format or input_format(filepath)
        shown = self.data_folder.resolve_paths(filepath)
        read = 0
        try:
            if fmt == "parquet":
                documents = ParquetReader.read_file(self, filepath)
            else:
                with self.data_folder.open(filepath, "rb") as handle:
                    problem = compression_problem(filepath, handle.read(2))
                if problem:
                    raise InputFileError(problem.replace(filepath, shown, 1))
                documents = LittleKitJsonlReader.read_file(self, filepath)
            for document in documents:
                read += 1
                yield document
        except InputFileError:
            raise
        except Exception as exc:  # EOFError, zlib.error, ArrowInvalid, OSError, ...
            raise InputFileError(_unreadable(shown, fmt, read, exc)) from exc

    def get_document_from_dict(self, data: dict, source_file: str, id_in_file: int | str) -> DTDocument:
        return _to_datatrove(data, source_file, int(id_in_file), self.text_key, self.id_key, self.max_bytes)


def _unreadable(path: str, fmt: str, read: int, exc: Exception) -> str:
    where = f"after {read:,} records (those were read)" if read else "before its first record"
    detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    if fmt == "parquet":
        fix = "it is not a whole Parquet file: write or fetch it again"
    elif path.lower().endswith(".gz"):
        fix = f"its gzip data is cut short or damaged: fetch or compress it again (`gzip -t {path}` checks)"
    else:
        fix = "fix or replace the file"
    return f"input file {path} cannot be read on, {where} ({detail}); {fix}"


def make_reader(
    path: str | os.PathLike,
    text_key: str = "text",
    id_key: str = "id",
    input_format: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> PipelineStep:
    """A reader of one file, or of the input files of a folder (`littlekit.filter.paths.folder_files`:
    every .jsonl, .ndjson, .parquet, ... file under it, gzipped or not, mixed formats included,
    and nothing else), each file read by its own format unless `input_format` is given (a folder
    is then read for the files of that format only).

    datatrove shards by file (task r reads files r, r + tasks, ...), so a run has at most as
    many busy tasks as input files: split a big single file first (`shard_jsonl`).
    """
    path = Path(path)
    if path.is_file():
        folder, files = path.parent, [path.name]
        input_format = input_format or _format_of(path.name)
    elif path.is_dir():
        folder, files = path, None  # listed when read: folder_files
    else:
        raise FileNotFoundError(f"input {path} is neither a file nor a folder")
    if input_format not in (None, "jsonl", "parquet"):
        raise ValueError(f"unknown input format {input_format!r} (expected jsonl or parquet)")
    common = {"text_key": text_key, "id_key": id_key, "max_bytes": max_bytes, "input_format": input_format}
    return LittleKitInputReader(str(folder), files, **common)


def _format_of(name: str) -> str:
    return input_format(name)  # littlekit.io's: inside make_reader a parameter shadows the name
