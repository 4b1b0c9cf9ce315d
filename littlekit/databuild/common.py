"""Deterministic writers and small helpers shared by every dataset builder.

Every file is written with fixed key order, LF line endings and no timestamps, so two builds
from the same sources are byte-identical.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20261129


@dataclass
class BuildLog:
    """What one build wrote: relative path -> the source it came from (for MANIFEST.tsv)."""

    out: Path
    sources: dict[str, str] = field(default_factory=dict)

    def record(self, path: Path, source: str) -> None:
        self.sources[path.relative_to(self.out).as_posix()] = source


def stable_hash(text: str) -> int:
    """A hash of a string that, unlike hash(), is the same in every process."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16)


def rng(name: str, seed: int = SEED) -> random.Random:
    """A random generator seeded by a name, so each dataset's sample is independent and fixed."""
    return random.Random(f"{seed}:{name}")


def write_bytes(path: Path, data: bytes, log: BuildLog, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    log.record(path, source)
    return path


def write_text(path: Path, text: str, log: BuildLog, source: str) -> Path:
    if not text.endswith("\n"):
        text += "\n"
    return write_bytes(path, text.encode("utf-8"), log, source)


def write_jsonl(path: Path, rows: Iterable[dict], log: BuildLog, source: str) -> Path:
    lines = [json.dumps(row, ensure_ascii=False, allow_nan=False) for row in rows]
    return write_text(path, "\n".join(lines), log, source)


def write_csv(
    path: Path, header: Sequence[str], rows: Iterable[Sequence], log: BuildLog, source: str
) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if value is None else value for value in row])
    return write_text(path, buffer.getvalue(), log, source)


def format_float(value: float | None, digits: int = 6) -> str:
    """Float text rounded to `digits` decimals, shortest form ('' for missing): deterministic."""
    if value is None or value != value:
        return ""
    number = round(float(value), digits)
    return str(int(number)) if number.is_integer() else repr(number)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, record) for each non-blank line of a JSON-lines file; a line that is not a JSON
    object raises a ValueError naming the file and the line."""
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: not a JSON object")
            yield number, record
