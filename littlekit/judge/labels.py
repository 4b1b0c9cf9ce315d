"""The one label format shared by judge labels and the embedded default's source labels.

See the package docstring (`littlekit.judge`) for the fields.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from littlekit.grades import BANDS
from littlekit.judge.redact import scrub_record
from littlekit.swap import file_beside

REQUIRED_KEYS: tuple[str, ...] = ("id", "text_sha256", "band", "votes", "judge", "source")
JUDGE_SOURCE = "llm-judge"


def text_sha256(text: str) -> str:
    """SHA-256 of the UTF-8 text: the document's identity in caches and labels."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_label(
    id: str,
    text: str,
    band: str | None,
    source: str,
    votes: Mapping[str, str | None] | None = None,
    judge: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A label record; sources other than the judge leave `votes` empty and `judge` None."""
    record = {
        "id": str(id),
        "text_sha256": text_sha256(text),
        "band": band,
        "votes": dict(votes or {}),
        "judge": dict(judge) if judge is not None else None,
        "source": source,
    }
    return validate_label(record)


def validate_label(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return the record as a dict, or raise ValueError naming what is wrong."""
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        raise ValueError(f"label {record.get('id')!r} lacks {missing}")
    bands = [record["band"], *record["votes"].values()]
    bad = [band for band in bands if band is not None and band not in BANDS]
    if bad:
        raise ValueError(f"label {record['id']!r} has unknown bands {bad}; expected {BANDS} or null")
    if len(record["text_sha256"]) != 64:
        raise ValueError(f"label {record['id']!r}: text_sha256 is not a SHA-256 hex digest")
    return dict(record)


def write_labels(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write records as JSON lines (validated, scrubbed of API keys); returns how many were written.

    Written beside, then swapped (`littlekit.swap.file_beside`): the lines go to a sibling
    `NAME.partial-<pid>.SUFFIX`, flushed to disk and renamed onto `path` only when every record is
    written, so an error, an interruption or a kill leaves an earlier file at `path` whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with file_beside(path) as partial, partial.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(scrub_record(validate_label(record)), ensure_ascii=False) + "\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a labels file written by `write_labels` (gzip-compressed when its name ends
    in .gz); a line that is not JSON is an error naming the file and the line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(validate_label(json.loads(line)))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
    return records
