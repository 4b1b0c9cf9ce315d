"""Document input and output: every line becomes a Document or a RecordError with a reason code."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tracemalloc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from littlekit.io import (
    READ_REASONS,
    Document,
    JsonlWriter,
    ParquetWriter,
    RecordError,
    input_format,
    open_writer,
    read_documents,
    read_hf,
    read_jsonl,
    read_parquet,
    sha256_file,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# One line per failure mode, each followed by its expected reason code.
BAD_LINES = [
    (b'{"id": "ok1", "text": "A cat sat on a mat."}', None),
    (b'{"id": "j", "text": "unterminated', "bad_json"),
    (b'["a", "list"]', "not_object"),
    (b'"just a string"', "not_object"),
    (b'{"id": "m", "body": "no text field"}', "missing_text_field"),
    (b'{"id": "n", "text": 42}', "text_not_string"),
    (b'{"id": "nul", "text": null}', "text_not_string"),
    (b'{"id": "e", "text": "caf\xe9 latin-1"}', "bad_encoding"),
    (b'{"id": "s", "text": "lone \\ud800 surrogate"}', "bad_encoding"),
    (b'{"id": "w", "text": "  \\n\\t "}', "empty_text"),
    (b'{"id": "ok2", "text": "The dog ran home."}', None),
]


def write_lines(path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_every_bad_line_gets_its_reason_and_line_number(tmp_path):
    path = tmp_path / "bad.jsonl"
    write_lines(path, [line for line, _ in BAD_LINES])
    records = list(read_jsonl(path))
    assert len(records) == len(BAD_LINES)
    for line_no, (record, (_, expected)) in enumerate(zip(records, BAD_LINES, strict=True), start=1):
        assert record.line == line_no
        if expected is None:
            assert isinstance(record, Document)
        else:
            assert isinstance(record, RecordError), record
            assert record.reason == expected
            assert record.reason in READ_REASONS
    missing = records[4]
    assert "body" in missing.detail and "--text-field" in missing.detail
    assert missing.id == "m"  # the id is known even though the text is not


def test_ids_come_from_the_id_field_else_the_line_number(tmp_path):
    path = tmp_path / "ids.jsonl"
    write_lines(path, [b'{"id": 17, "text": "one"}', b'{"text": "two"}', b'{"key": "k", "text": "three"}'])
    assert [r.id for r in read_jsonl(path)] == ["17", "2", "3"]
    assert [r.id for r in read_jsonl(path, id_field="key")] == ["1", "2", "k"]


def test_blank_lines_are_skipped_and_line_numbers_stay_physical(tmp_path):
    path = tmp_path / "blank.jsonl"
    # A byte-order mark, CRLF endings, blank lines, and no newline at the end.
    path.write_bytes(b'\xef\xbb\xbf{"text": "bom first"}\r\n\r\n   \n{"text": "fourth"}')
    records = list(read_jsonl(path))
    assert [(r.line, r.text) for r in records] == [(1, "bom first"), (4, "fourth")]


def test_text_field_is_configurable(tmp_path):
    path = tmp_path / "content.jsonl"
    write_lines(path, [b'{"content": "hello there", "text": 3}'])
    (doc,) = read_jsonl(path, text_field="content")
    assert doc.text == "hello there" and doc.meta == {"content": "hello there", "text": 3}


def test_huge_line_is_too_large_and_reading_goes_on(tmp_path):
    path = tmp_path / "huge.jsonl"
    huge = json.dumps({"id": "big", "text": "word " * 1_000_000}).encode()  # ~5 MB
    write_lines(path, [b'{"text": "before"}', huge, b'{"text": "after"}', huge])
    records = list(read_jsonl(path, max_bytes=1_000_000))
    assert [getattr(r, "reason", None) for r in records] == [None, "too_large", None, "too_large"]
    assert [r.line for r in records] == [1, 2, 3, 4]
    assert records[2].text == "after"
    assert "5,000,0" in records[1].detail  # the size it had


def test_huge_line_is_never_held_in_memory(tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as handle:
        handle.write(b'{"text": "' + b"a" * 30_000_000 + b'"}\n{"text": "small"}\n')
    tracemalloc.start()
    try:
        records = list(read_jsonl(path, max_bytes=100_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [getattr(r, "reason", "doc") for r in records] == ["too_large", "doc"]
    assert peak < 8_000_000  # a 30 MB line, skipped in 1 MiB pieces


def test_text_size_limit_counts_utf8_bytes(tmp_path):
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"text": ["é" * 600, "e" * 600]}), path)  # 1200 vs 600 bytes
    reasons = [getattr(r, "reason", "doc") for r in read_parquet(path, max_bytes=1000)]
    assert reasons == ["too_large", "doc"]


def test_gzipped_jsonl(tmp_path):
    path = tmp_path / "docs.jsonl.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(b'{"text": "zipped"}\nnot json\n')
    records = list(read_documents(path))
    assert records[0].text == "zipped" and records[1].reason == "bad_json"


def test_parquet_rows_become_documents_with_all_fields(tmp_path):
    path = tmp_path / "docs.parquet"
    table = pa.table({"id": [10, 11, 12], "text": ["first one", None, " "], "score": [0.5, 0.25, 1.0]})
    pq.write_table(table, path)
    records = list(read_documents(path, batch_rows=2))
    assert records[0] == Document("10", "first one", {"id": 10, "text": "first one", "score": 0.5}, 1)
    assert [(r.line, r.reason) for r in records[1:]] == [(2, "text_not_string"), (3, "empty_text")]


def test_parquet_without_the_text_column_is_an_error_up_front(tmp_path):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"body": ["x"]}), path)
    with pytest.raises(ValueError, match=r"column 'text' not in docs.parquet; columns: \['body'\]"):
        read_documents(path)


def test_input_format_from_the_name():
    assert input_format("a/b.jsonl.gz") == "jsonl"
    assert input_format("B.PARQUET") == "parquet"
    with pytest.raises(ValueError, match="cannot tell the format of 'b.csv'"):
        input_format("b.csv")


def test_jsonl_writer_keeps_every_field_and_batches(tmp_path):
    out = tmp_path / "out" / "kept.jsonl"
    records = [{"id": i, "text": f"doc {i}", "nested": {"a": [i, None]}, "ünï": "çødé"} for i in range(5)]
    with JsonlWriter(out, batch_rows=2) as writer:
        for record in records:
            writer.write(record)
        assert writer.rows == 4  # two full batches written, one record still buffered
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == records
    assert not (tmp_path / "out" / "kept.jsonl.partial").exists()


def test_a_failed_write_leaves_no_output_file(tmp_path):
    out = tmp_path / "kept.jsonl"
    with pytest.raises(RuntimeError), JsonlWriter(out) as writer:
        writer.write({"text": "a"})
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def test_parquet_writer_keeps_the_input_schema(tmp_path):
    schema = pa.schema([("id", pa.int32()), ("text", pa.string()), ("when", pa.timestamp("ms"))])
    source = pa.table({"id": [1, 2], "text": ["a", "b"], "when": [0, 1000]}, schema=schema)
    out = tmp_path / "kept.parquet"
    with open_writer(out, batch_rows=1, schema=schema) as writer:
        for row in source.to_pylist():
            writer.write(row)
    written = pq.read_table(out)
    assert written.schema == schema and written.equals(source)
    assert pq.ParquetFile(out).metadata.num_row_groups == 2


def test_parquet_writer_adds_fields_later_records_bring(tmp_path):
    # without a schema (JSONL input) the batches are spooled and get one schema on close (was: refused)
    out = tmp_path / "kept.parquet"
    with ParquetWriter(out, batch_rows=1) as writer:
        writer.write({"text": "a"})
        writer.write({"text": "b", "extra": 1})
    assert pq.read_table(out).to_pylist() == [{"text": "a", "extra": None}, {"text": "b", "extra": 1}]
    assert [p.name for p in tmp_path.iterdir()] == ["kept.parquet"]  # no spool file left
    fixed = pa.schema([("text", pa.string())])
    writer = ParquetWriter(tmp_path / "fixed.parquet", batch_rows=1, schema=fixed)
    with pytest.raises(ValueError, match=r"fields \['extra'\] that the input's schema lacks"):
        writer.write({"text": "b", "extra": 1})
    writer.close(ok=False)
    assert [p.name for p in tmp_path.iterdir()] == ["kept.parquet"]


def test_empty_parquet_output_is_still_a_valid_file(tmp_path):
    out = tmp_path / "kept.parquet"
    ParquetWriter(out).close()
    assert pq.read_table(out).num_rows == 0


@pytest.mark.slow  # importing datasets pulls in torch (~5 s on the first call)
def test_hf_streaming_reads_local_json_files(tmp_path):
    shard_a, shard_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_lines(shard_a, [b'{"id": "a1", "text": "first", "n": 1}', b'{"id": "a2", "text": "", "n": 2}'])
    write_lines(shard_b, [b'{"id": "b1", "text": "third", "n": 3}'])
    records = list(read_hf("json", data_files=[str(shard_a), str(shard_b)], split="train"))
    assert [(r.id, r.line, getattr(r, "reason", None)) for r in records] == [
        ("a1", 1, None),
        ("a2", 2, "empty_text"),
        ("b1", 3, None),
    ]
    assert records[0].meta == {"id": "a1", "text": "first", "n": 1}


@pytest.mark.slow
def test_hf_streaming_reads_a_local_dataset_folder(tmp_path):
    folder = tmp_path / "my_dataset"
    folder.mkdir()
    write_lines(folder / "train.jsonl", [b'{"content": "one"}', b'{"content": "two"}'])
    records = read_hf(str(folder), text_field="content")
    assert [(r.id, r.text) for r in records] == [("1", "one"), ("2", "two")]


def test_sha256_file_reads_in_blocks_and_matches_hashlib(tmp_path):
    path = tmp_path / "blob.bin"
    data = os.urandom(3 * (1 << 20) + 17)  # more than one block, not a whole number of them
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    assert sha256_file(str(path)) == sha256_file(path)
