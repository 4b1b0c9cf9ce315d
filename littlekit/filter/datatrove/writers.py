"""The datatrove JSONL writer of flat records: every input field at the top level, as `littlekit
filter` writes them in process."""

from __future__ import annotations

import dataclasses
import math
import os
from functools import partial
from typing import Any

from datatrove.data import Document as DTDocument
from datatrove.pipeline.writers import JsonlWriter

from littlekit.filter.datatrove.blocks import SCORES_KEY, SafeDocStats
from littlekit.io import (
    json_default,
    to_json_line,
)


def flat_record(
    writer: Any, document: DTDocument, text_key: str = "text", id_key: str = "id", keep_scores: bool = True
) -> dict:
    """The record as it was read (every field at the top level) plus what the filters added.

    A datatrove writer adapter (called as a method of the writer): the same shape as
    `littlekit filter` writes, rather than datatrove's nested `{"text", "id", "metadata"}`.
    `keep_scores=False` leaves out the stages' scores (`littlekit_scores`).
    """
    metadata = document.metadata
    if not keep_scores:
        metadata = {key: value for key, value in metadata.items() if key != SCORES_KEY}
    record = {id_key: document.id, text_key: document.text, **metadata}
    if document.media and "media" not in record:  # a datatrove reader's Media objects
        record["media"] = [dataclasses.asdict(media) | {"media_bytes": None} for media in document.media]
    return record


class LittleKitJsonlWriter(SafeDocStats, JsonlWriter):
    """datatrove's JSONL writer, for flat records whose fields are the input's, whatever they are.

    datatrove's writer reads three things of a record as its own: a top-level `media` field
    (each entry must be a dict with `media_bytes`, else KeyError), the metadata as tags of the
    file name (an input field `rank` would send the record to another task's file) and
    `token_count` (see SafeDocStats); and orjson refuses integers over 64 bits, lone surrogates
    and keys that are not strings. Here none of these can end a task: the file name uses the
    task's rank alone, and a record orjson refuses is written by `littlekit.io.to_json_line`
    (the in-process writer's JSON) instead. Either way a NaN or infinity is written as null, as
    orjson does, so the lines stay strict JSON that datatrove's own readers parse.
    """

    def _write(self, document: dict, file_handler, _filename: str) -> None:
        import orjson  # datatrove's JsonlWriter requires it

        try:
            line = orjson.dumps(document, option=orjson.OPT_APPEND_NEWLINE, default=json_default)
        except TypeError:  # orjson.JSONEncodeError: a big integer, a lone surrogate, a non-str key
            line = to_json_line(_finite(document)).encode("utf-8") + b"\n"
        file_handler.write(line)

    def _get_output_filename(self, document: DTDocument, rank: int | str = 0, **kwargs) -> str:
        return self.output_filename.substitute({"id": document.id, **kwargs, "rank": str(rank).zfill(5)})


def _finite(value: Any) -> Any:
    """The value with every NaN or infinite float in it replaced by None (as orjson writes them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def make_writer(
    folder: str | os.PathLike, text_key: str, id_key: str, compression: str | None, keep_scores: bool = True
) -> JsonlWriter:
    adapter = partial(flat_record, text_key=text_key, id_key=id_key, keep_scores=keep_scores)
    return LittleKitJsonlWriter(
        str(folder), output_filename="${rank}.jsonl", compression=compression, adapter=adapter
    )
