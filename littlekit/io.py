"""Reading documents and writing what survives: JSONL (optionally gzipped), Parquet, Hugging Face streams.

Every input record becomes either a `Document` or a `RecordError` carrying a reason code, so a
filter run can account for every line it read. Readers are generators: memory stays bounded by
one record (JSONL), one Parquet record batch, or one streamed row.

Reason codes for records that cannot become documents:

    bad_json            the line is not valid JSON
    not_object          the line is valid JSON but not an object ({...})
    missing_text_field  the object has no field named by --text-field
    text_not_string     the text field holds a number, list, null, ...
    bad_encoding        the line is not valid UTF-8 (or the text holds lone surrogates)
    empty_text          the text is empty or only whitespace
    too_large           the record is over the byte limit (the JSONL line, or the text of a row)

Non-UTF-8 lines are dropped with `bad_encoding` rather than decoded with replacement: a filter
that judges vocabulary should not score mojibake, and the error record says which line to fix.

A file that cannot be read on (a gzip file cut short, damaged compressed data, a Parquet file
that is not one) is not a record error but an `InputFileError`, naming the file, how far it was
read and what to do: the records before it were read, the rest of the file cannot be.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import math
import os
import pickle
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

DEFAULT_MAX_BYTES = 1_000_000  # one record; the released filter had no limit
PREVIEW_CHARS = 200
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")

BAD_JSON = "bad_json"
NOT_OBJECT = "not_object"
MISSING_TEXT_FIELD = "missing_text_field"
TEXT_NOT_STRING = "text_not_string"
BAD_ENCODING = "bad_encoding"
EMPTY_TEXT = "empty_text"
TOO_LARGE = "too_large"
READ_REASONS = (
    BAD_JSON,
    NOT_OBJECT,
    MISSING_TEXT_FIELD,
    TEXT_NOT_STRING,
    BAD_ENCODING,
    EMPTY_TEXT,
    TOO_LARGE,
)


@dataclass(slots=True)
class Document:
    """One input document: its id, its text, and the full original record (every field kept)."""

    id: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # 1-based line (JSONL) or row (Parquet, Hugging Face) number


@dataclass(slots=True)
class RecordError:
    """An input record that could not become a document, and why."""

    line: int
    reason: str  # one of READ_REASONS
    detail: str = ""
    id: str | None = None
    preview: str = ""  # the start of the raw record, for the rejected file


Record = Document | RecordError


class InputFileError(ValueError):
    """An input file that cannot be read (on): the message names it, where, and what to do."""


def input_format(path: str | os.PathLike) -> str:
    """'jsonl' or 'parquet' from the file name; ValueError for anything else."""
    name = Path(path).name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    known = ", ".join(JSONL_SUFFIXES + PARQUET_SUFFIXES)
    raise ValueError(f"cannot tell the format of {Path(path).name!r}: expected a name ending in {known}")


def read_documents(
    path: str | os.PathLike,
    text_field: str = "text",
    id_field: str = "id",
    max_bytes: int = DEFAULT_MAX_BYTES,
    fmt: str | None = None,
    batch_rows: int = 10_000,
) -> Iterator[Record]:
    """Documents and record errors from a local JSONL (.gz) or Parquet file, chosen by its name."""
    fmt = fmt or input_format(path)
    if fmt == "jsonl":
        return read_jsonl(path, text_field, id_field, max_bytes)
    if fmt == "parquet":
        return read_parquet(path, text_field, id_field, max_bytes, batch_rows)
    raise ValueError(f"unknown input format {fmt!r} (expected jsonl or parquet)")


# --- records to documents ---------------------------------------------------------------------


def record_to_document(
    record: Any, line: int, text_field: str, id_field: str, max_bytes: int, preview: str = ""
) -> Record:
    """Turn one parsed record into a Document, or a RecordError saying what is wrong with it."""
    if not isinstance(record, dict):
        return RecordError(line, NOT_OBJECT, f"got a JSON {_json_type(record)}", preview=preview)
    doc_id = _document_id(record, id_field, line)
    if text_field not in record:
        fields = ", ".join(sorted(map(str, record))[:20])
        detail = f"no field {text_field!r}; fields: {fields} (choose one with --text-field)"
        return RecordError(line, MISSING_TEXT_FIELD, detail, doc_id, preview)
    text = record[text_field]
    if not isinstance(text, str):
        return RecordError(line, TEXT_NOT_STRING, f"{text_field!r} is a {_json_type(text)}", doc_id, preview)
    if _too_large(text, max_bytes):
        return RecordError(line, TOO_LARGE, f"text over {max_bytes:,} bytes", doc_id, text[:PREVIEW_CHARS])
    if not _encodable(text):
        return RecordError(line, BAD_ENCODING, "text holds lone surrogates", doc_id, preview)
    if not text.strip():
        return RecordError(line, EMPTY_TEXT, "text is empty or whitespace", doc_id, preview)
    return Document(doc_id, text, record, line)


def _document_id(record: dict, id_field: str, line: int) -> str:
    value = record.get(id_field)
    return str(line) if value is None else str(value)


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else type(value).__name__)


def _too_large(text: str, max_bytes: int) -> bool:
    # len() counts characters, a lower bound on UTF-8 bytes: only encode when it could matter.
    if len(text) > max_bytes:
        return True
    return len(text) * 4 > max_bytes and len(text.encode("utf-8", "surrogatepass")) > max_bytes


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- JSONL ------------------------------------------------------------------------------------


def read_jsonl(
    path: str | os.PathLike,
    text_field: str = "text",
    id_field: str = "id",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[Record]:
    """Records of a JSONL file (gzip when the name ends in .gz). Blank lines are skipped, not counted.

    A .gz file that is not gzip data, or a regular file of gzip data under a name without .gz, is
    an InputFileError at once (naming the fix); one that is cut short or
    damaged is an InputFileError when the reading reaches the damage (after the lines before it).
    """
    problem = None
    if os.path.isfile(path) or str(path).lower().endswith(".gz"):  # a pipe is read once, not sniffed
        with open(path, "rb") as handle:
            problem = compression_problem(path, handle.read(2))
    if problem:
        raise InputFileError(problem)
    return _jsonl_records(path, text_field, id_field, max_bytes)


def compression_problem(path: str | os.PathLike, head: bytes) -> str | None:
    """What is wrong when a JSONL file's name and its first bytes disagree on gzip, or None."""
    gzipped = head[:2] == b"\x1f\x8b"
    if str(path).lower().endswith(".gz"):
        if head and not gzipped:
            return (
                f"{path} is not gzip data although its name ends in .gz; "
                "rename it without .gz if it is plain JSONL, or compress it again"
            )
    elif gzipped:
        return (
            f"{path} is gzip-compressed but its name does not end in .gz, so it would be read as plain "
            f"text (every line unreadable); rename it to {Path(path).name}.gz"
        )
    return None


def _jsonl_records(path, text_field: str, id_field: str, max_bytes: int) -> Iterator[Record]:
    line_no = 0
    try:
        with _open_binary(path) as handle:
            for line_no, raw, size in _bounded_lines(handle, max_bytes):
                if raw is None:
                    yield RecordError(line_no, TOO_LARGE, f"line of {size:,} bytes is over {max_bytes:,}")
                    continue
                if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte-order mark
                if not raw.strip():
                    continue
                yield _parse_line(raw, line_no, text_field, id_field, max_bytes)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        what = "ends early (cut short: an interrupted download or copy?)" if isinstance(exc, EOFError) else (
            f"is damaged ({exc})"
        )
        where = "before its first line"
        if line_no:
            where = f"after line {line_no:,}; the lines up to there were read"
        keep = f", or keep its good part (`zcat {path} | head -n {line_no}`)" if line_no else ""
        raise InputFileError(
            f"{path}: its gzip data {what} {where}. Fetch or compress the file again "
            f"(`gzip -t {path}` checks one){keep}"
        ) from exc
    except OSError as exc:
        raise InputFileError(f"{path}: reading stopped after line {line_no:,}: {exc}") from exc


def _parse_line(raw: bytes, line_no: int, text_field: str, id_field: str, max_bytes: int) -> Record:
    preview = raw[:PREVIEW_CHARS].decode("utf-8", "replace")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RecordError(line_no, BAD_ENCODING, f"not UTF-8 at byte {exc.start}", preview=preview)
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        return RecordError(line_no, BAD_JSON, str(exc)[:200], preview=preview)
    return record_to_document(record, line_no, text_field, id_field, max_bytes, preview)


def _open_binary(path: str | os.PathLike) -> IO[bytes]:
    if str(path).lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _bounded_lines(handle: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, line without its newline or None when over max_bytes, size in bytes).

    A line over the limit is skipped in 1 MiB pieces, so one enormous line never sits in memory.
    """
    line_no = 0
    while True:
        chunk = handle.readline(max_bytes + 1)
        if not chunk:
            return
        line_no += 1
        if chunk.endswith(b"\n"):
            yield line_no, chunk.rstrip(b"\r\n"), len(chunk)
            continue
        if len(chunk) <= max_bytes:  # the last line, without a newline
            yield line_no, chunk.rstrip(b"\r"), len(chunk)
            continue
        size = len(chunk)
        while chunk and not chunk.endswith(b"\n"):
            chunk = handle.readline(1 << 20)
            size += len(chunk)
        yield line_no, None, size


# --- Parquet ----------------------------------------------------------------------------------


def read_parquet(
    path: str | os.PathLike,
    text_field: str = "text",
    id_field: str = "id",
    max_bytes: int = DEFAULT_MAX_BYTES,
    batch_rows: int = 10_000,
) -> Iterator[Record]:
    """Records of a Parquet file, one record batch in memory at a time.

    A text column missing from the schema is a ValueError up front (every row would fail).
    """
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a file that is not parquet
        raise InputFileError(
            f"{path} is not a readable Parquet file ({type(exc).__name__}: {exc}); "
            "write it again, or pass --format jsonl if it is JSON lines"
        ) from None
    names = parquet.schema_arrow.names
    if text_field not in names:
        raise ValueError(
            f"column {text_field!r} not in {Path(path).name}; columns: {names} (use --text-field)"
        )
    return _parquet_rows(parquet, path, text_field, id_field, max_bytes, batch_rows)


def _parquet_rows(
    parquet, path, text_field: str, id_field: str, max_bytes: int, batch_rows: int
) -> Iterator[Record]:
    row = 0
    batches = parquet.iter_batches(batch_size=batch_rows)
    while True:
        try:
            batch = next(batches, None)
        except Exception as exc:  # a damaged row group: pyarrow's OSError or ArrowInvalid
            raise InputFileError(
                f"{path}: cannot read on after row {row:,} ({type(exc).__name__}: {exc}); "
                "the rows up to there were read; write the file again"
            ) from exc
        if batch is None:
            return
        for record in batch.to_pylist():
            row += 1
            yield record_to_document(record, row, text_field, id_field, max_bytes)


def parquet_schema(path: str | os.PathLike):
    """The Arrow schema of a Parquet file (so Parquet output keeps the input's exact types)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).schema_arrow


# --- Hugging Face datasets --------------------------------------------------------------------


def read_hf(
    name: str,
    config: str | None = None,
    split: str = "train",
    text_field: str = "text",
    id_field: str = "id",
    max_bytes: int = DEFAULT_MAX_BYTES,
    data_files: str | list[str] | None = None,
) -> Iterator[Record]:
    """Stream a Hugging Face dataset (Hub id, local dataset folder, or a builder such as "json"
    with data_files) and turn each row into a record. Nothing is downloaded ahead of use."""
    from datasets import load_dataset

    kwargs: dict[str, Any] = {"split": split, "streaming": True}
    if data_files:
        kwargs["data_files"] = data_files
    stream = load_dataset(name, config, **kwargs)
    return _hf_rows(stream, text_field, id_field, max_bytes)


def _hf_rows(stream: Iterable[dict], text_field: str, id_field: str, max_bytes: int) -> Iterator[Record]:
    # The json/csv builders log an error line of their own before raising; the caller names the
    # file and row instead, so the builders' logger is muted while this stream is read.
    builders = logging.getLogger("datasets.packaged_modules")
    level = builders.level
    builders.setLevel(logging.CRITICAL)
    try:
        for row, record in enumerate(stream, start=1):
            yield record_to_document(dict(record), row, text_field, id_field, max_bytes)
    finally:
        builders.setLevel(level)


# --- writers ----------------------------------------------------------------------------------


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (the file need not fit in memory)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def json_default(value: Any) -> Any:
    """JSON for values json cannot encode itself: numpy scalars and arrays, dates, bytes."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, TypeError):
            pass
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    return str(value)


def to_json_line(record: Any) -> str:
    """One JSONL line (no newline); text with lone surrogates falls back to escaped ASCII. NaN and
    infinity (JSON has neither) are written as null, as the datatrove writer's orjson does."""
    try:
        line = json.dumps(record, ensure_ascii=False, default=json_default, allow_nan=False)
    except ValueError:
        return to_json_line(_finite(record))
    return line if _encodable(line) else json.dumps(record, default=json_default)


def _finite(value: Any) -> Any:
    """The value with each NaN or infinite number in it replaced by None (arrays, numpy scalars too)."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or hasattr(value, "tolist"):
        return _finite(value.tolist()) if hasattr(value, "tolist") else [_finite(item) for item in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


class JsonlWriter:
    """Write records as JSON lines (gzip when the name ends in .gz), `batch_rows` lines per write.

    Output goes to `<path>.partial` and is renamed on a clean close, so a crashed run never
    leaves a file that looks complete. `close(final=False)` (a run that stopped part-way) leaves
    what was written, whole lines only, in `<path>.partial` (`written_to`).
    """

    def __init__(self, path: str | os.PathLike, batch_rows: int = 10_000):
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.written_to: Path | None = None  # where the records are once closed (None: removed)
        self.batch_rows = batch_rows
        self.rows = 0
        self._buffer: list[str] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        raw = gzip.open(self.partial, "wb") if self.path.name.endswith(".gz") else open(self.partial, "wb")
        self._handle = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")

    def write(self, record: dict) -> None:
        self._buffer.append(to_json_line(record))
        if len(self._buffer) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._handle.write("\n".join(self._buffer) + "\n")
            self.rows += len(self._buffer)
            self._buffer.clear()

    def close(self, ok: bool = True, final: bool = True) -> None:
        """ok: keep what was written (renamed to `path`, or left as `.partial` when not final);
        not ok: remove it."""
        try:
            if ok:
                self._flush()
        except BaseException:
            ok = False
            raise
        finally:
            self._handle.close()
            self.written_to = _finish_partial(self.partial, self.path, ok, final)

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)


class ParquetWriter:
    """Write records to Parquet, one row group per `batch_rows` records (zstd).

    With `schema` (the input's, for Parquet input) every column keeps its type and row groups are
    written as they fill. Without it (JSONL or streamed input, whose fields may differ from record
    to record) the batches wait in a spool file beside the output, and on close the file gets one
    schema for them all: every field any record has (null where a record lacks it), each with the
    type its values share (ints and floats: double; structs: the union of their fields). A field
    whose values have no common type (1 in one record, "x" in another) is written as strings (a
    string as it is, anything else as its JSON) and listed in `string_fields`, field -> the
    Python types seen, so nothing is lost and the run is not stopped by it.
    """

    def __init__(self, path: str | os.PathLike, batch_rows: int = 10_000, schema=None):
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.written_to: Path | None = None
        self.batch_rows = batch_rows
        self.schema = schema
        self.rows = 0
        self.string_fields: dict[str, list[str]] = {}
        self._fixed = schema is not None
        self._buffer: list[dict] = []
        self._writer = None
        self._spool: IO[bytes] | None = None
        self._types: dict[str, Any] = {}  # field -> common Arrow type so far, None: no common type
        self._seen: dict[str, set[str]] = {}  # field -> Python type names of its values
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict) -> None:
        self._buffer.append(record)
        if len(self._buffer) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._fixed:
            self._write_fixed()
        else:
            self._observe(self._buffer)
            if self._spool is None:
                self._spool = tempfile.NamedTemporaryFile(  # closed (and so removed) by close
                    prefix=self.path.name + ".", suffix=".spool", dir=self.path.parent
                )
            pickle.dump(self._buffer, self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        self.rows += len(self._buffer)
        self._buffer.clear()

    def _write_fixed(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._check_fields()
        try:
            table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            name, line = _failing_field(self._buffer, self.schema)
            raise ValueError(
                f"cannot write field {name!r} of kept record {self.rows + line} as {self.path.name}'s "
                f"{self.schema.field(name).type if name else 'schema'} ({exc}); write .jsonl instead"
            ) from exc
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.partial, self.schema, compression="zstd")
        self._writer.write_table(table)

    def _check_fields(self) -> None:
        known = set(self.schema.names)
        for record in self._buffer:
            extra = set(record) - known
            if extra:
                raise ValueError(
                    f"record has fields {sorted(extra)} that the input's schema lacks; "
                    "Parquet needs one schema (write .jsonl instead)"
                )

    def _observe(self, batch: list[dict]) -> None:
        """Widen each field's type by this batch's values (None once they share none)."""
        import pyarrow as pa

        for record in batch:
            for name in record:
                if name not in self._types:
                    self._types[name] = pa.null()
                    self._seen[name] = set()
        for name, known in self._types.items():
            values = [record.get(name) for record in batch]
            self._seen[name].update(type(value).__name__ for value in values if value is not None)
            if known is None:
                continue
            try:
                found = pa.array(values).type
            except (pa.ArrowException, ValueError, TypeError, OverflowError):
                self._types[name] = None
                continue
            self._types[name] = _common_type(known, found)

    def _final_schema(self):
        """The spooled batches' schema; a field some batch cannot be converted to becomes strings."""
        import pyarrow as pa

        for batch in self._spooled():
            for name, dtype in self._types.items():
                if dtype is None:
                    continue
                try:
                    pa.array([record.get(name) for record in batch], type=dtype)
                except (pa.ArrowException, ValueError, TypeError, OverflowError):
                    self._types[name] = None
        self.string_fields = {
            name: sorted(self._seen[name]) for name, dtype in self._types.items() if dtype is None
        }
        return pa.schema([(name, pa.string() if t is None else t) for name, t in self._types.items()])

    def _spooled(self) -> Iterator[list[dict]]:
        assert self._spool is not None
        self._spool.flush()
        self._spool.seek(0)
        while True:
            try:
                yield pickle.load(self._spool)
            except EOFError:
                return

    def _write_spool(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.schema = self._final_schema()
        strings = list(self.string_fields)
        self._writer = pq.ParquetWriter(self.partial, self.schema, compression="zstd")
        for batch in self._spooled():
            for record in batch:
                for name in strings:
                    value = record.get(name)
                    if value is not None and not isinstance(value, str):
                        record[name] = to_json_line(value)
            self._writer.write_table(pa.Table.from_pylist(batch, schema=self.schema))

    def close(self, ok: bool = True, final: bool = True) -> None:
        """ok: keep what was written (renamed to `path`, or left as `.partial` when not final);
        not ok: remove it."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            if ok:
                self._flush()
                if self._spool is not None:
                    self._write_spool()
                if self._writer is None:  # nothing kept: still leave a valid, empty file
                    self.schema = self.schema if self.schema is not None else pa.schema([])
                    self._writer = pq.ParquetWriter(self.partial, self.schema, compression="zstd")
        except BaseException:
            ok = False
            raise
        finally:
            if self._spool is not None:
                self._spool.close()  # a NamedTemporaryFile: closing removes it
            if self._writer is not None:
                self._writer.close()
            self.written_to = _finish_partial(self.partial, self.path, ok, final)

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)


def _common_type(known, found):
    """The type both kinds of values convert to (pyarrow's permissive promotion), else None."""
    import pyarrow as pa

    if known == found or pa.types.is_null(found):
        return known
    if pa.types.is_null(known):
        return found
    try:
        schemas = [pa.schema([("f", known)]), pa.schema([("f", found)])]
        return pa.unify_schemas(schemas, promote_options="permissive").field("f").type
    except (pa.ArrowException, ValueError, TypeError):
        return None


def _failing_field(batch: list[dict], schema) -> tuple[str | None, int]:
    """The first field (and 1-based record in the batch) that cannot be converted to the schema."""
    import pyarrow as pa

    for column in schema:
        for line, record in enumerate(batch, start=1):
            try:
                pa.array([record.get(column.name)], type=column.type)
            except (pa.ArrowException, ValueError, TypeError, OverflowError):
                return column.name, line
    return None, 1


def partial_path(path: Path) -> Path:
    """Where a writer puts its output until it is closed cleanly."""
    return path.with_name(path.name + ".partial")


def _finish_partial(partial: Path, path: Path, ok: bool, final: bool = True) -> Path | None:
    """Rename the partial file to its path (ok and final), leave it (ok, not final), or remove it."""
    if not ok:
        partial.unlink(missing_ok=True)
        return None
    if not final:
        return partial
    os.replace(partial, path)
    return path


def open_writer(
    path: str | os.PathLike, batch_rows: int = 10_000, schema=None
) -> JsonlWriter | ParquetWriter:
    """A writer chosen by the output name: .parquet/.pq or .jsonl/.jsonl.gz."""
    fmt = input_format(path)
    if fmt == "parquet":
        return ParquetWriter(path, batch_rows, schema)
    return JsonlWriter(path, batch_rows)
