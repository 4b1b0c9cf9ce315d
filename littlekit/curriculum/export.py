"""Where records go: JSONL (deterministic bytes), a `datasets.Dataset`, MathCAMPS-shaped records
for `littlekit.evals.mathcamps`, and pretraining mixtures.

- `write_jsonl`: one `json.dumps` line per record, keys in the record's fixed order, UTF-8 as is
  (`ensure_ascii=False`), `\\n` endings; written to a file of this process's own beside it, then
  renamed (`littlekit.swap.file_beside`), and never over an existing file unless `force`. The
  same records give the same bytes, so the same seed does.
  A NaN or infinity in a record is refused (ValueError naming the record), never written as the
  `NaN` / `Infinity` tokens no strict JSON reader takes: no record here should hold one.
- `to_mathcamps` / `write_mathcamps_root`: records as MathCAMPS rows (`id, standard, statement,
  answer, type, followup_to`, all `original-problem`), laid out as a data root so
  `littlekit.evals.mathcamps.load(root)` reads them and `evaluate` scores a model on them with the
  same prompt and grader as MathCAMPS itself.
- `mixture`: the order a pretraining corpus sees the records in. `curriculum` puts grade K first
  and grade 8 last (units of one grade shuffled together); `uniform` shuffles everything, the
  control seed 004 insists on (no fixed ordering dominates in arXiv:2510.19099; Saxton et al.'s
  headline numbers are the uniform mix). `unit` keeps generation order.
"""

from __future__ import annotations

import json
import os
import random
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from littlekit.curriculum.registry import GRADE_ORDER
from littlekit.swap import file_beside

ORDERS: tuple[str, ...] = ("unit", "curriculum", "uniform")
MATHCAMPS_FILE = "mathcamps/mathcamps.jsonl"


def dumps(record: dict[str, Any]) -> str:
    """One JSONL line (no newline); ValueError on a NaN or infinity (no strict JSON holds one)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False)


def _line(record: Any, number: int, path: Path) -> str:
    """dumps(record), or a ValueError naming the record (its number and id) and the file."""
    try:
        return dumps(record)
    except ValueError as exc:
        ident = record.get("id") if isinstance(record, dict) else None
        named = f"record {number:,}" + ("" if ident is None else f" (id {ident!r})")
        what = "a NaN or infinite number, which JSON cannot hold" if "float" in str(exc) else str(exc)
        raise ValueError(f"{named} for {path} holds {what}; nothing was written") from None


def write_jsonl(records: Iterable[dict[str, Any]], path: str | os.PathLike, force: bool = False) -> int:
    """Write records as JSONL; refuse an existing `path` unless `force`. Returns the count."""
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(f"{path} exists; pass force=True (--force) to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    # this process's own NAME.partial-<pid>.SUFFIX, renamed onto path once every line is written
    with file_beside(path) as partial, partial.open("w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(_line(record, count + 1, path) + "\n")
            count += 1
    return count


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def to_dataset(records: Sequence[dict[str, Any]]):
    """The records as a `datasets.Dataset` (one column per field)."""
    from datasets import Dataset

    return Dataset.from_list(list(records))


def to_mathcamps(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """MathCAMPS rows: the record's first CCSS code is the standard, the statement the question."""
    return [mathcamps_row(record) for record in records]


def mathcamps_row(record: dict[str, Any]) -> dict[str, Any]:
    """One MathCAMPS row of a record (`to_mathcamps`)."""
    return {
        "id": record["id"],
        "standard": record["ccss"][0],
        "statement": record["statement"],
        "answer": record["answer"],
        "type": "original-problem",
        "followup_to": None,
    }


def write_mathcamps_root(
    records: Iterable[dict[str, Any]], root: str | os.PathLike, force: bool = False
) -> Path:
    """Write `root/mathcamps/mathcamps.jsonl` so `evals.mathcamps.load(root)` reads the records."""
    path = Path(root) / MATHCAMPS_FILE
    write_jsonl(map(mathcamps_row, records), path, force=force)
    return path


def mixture(
    records: Sequence[dict[str, Any]], order: str = "curriculum", seed: int = 0
) -> list[dict[str, Any]]:
    """The records in pretraining order: `curriculum` (grade-ordered), `uniform` (shuffled) or
    `unit` (as generated)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; choose from {', '.join(ORDERS)}")
    if order == "unit":
        return list(records)
    rng = random.Random(seed)
    shuffled = list(records)
    rng.shuffle(shuffled)
    if order == "uniform":
        return shuffled
    return sorted(shuffled, key=lambda r: GRADE_ORDER.index(r["grade"]))  # stable: shuffled in-grade


def mixture_order(
    grades: Sequence[str], per_unit: int, order: str = "curriculum", seed: int = 0
) -> Iterator[tuple[int, int]]:
    """(unit position, record index) in `mixture`'s order for `per_unit` records of units of these
    grades, without the records: the same shuffle over positions, 8 bytes each (57M records of
    every unit at the largest --per-unit would not fit in memory as records)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; choose from {', '.join(ORDERS)}")
    positions = array("q", range(len(grades) * per_unit))
    if order != "unit":
        random.Random(seed).shuffle(positions)
    if order != "curriculum":
        yield from (divmod(position, per_unit) for position in positions)
        return
    rank = [GRADE_ORDER.index(grade) for grade in grades]
    for wanted in sorted(set(rank)):  # a grade at a time: `mixture`'s stable sort, shuffled in-grade
        for position in positions:
            unit, index = divmod(position, per_unit)
            if rank[unit] == wanted:
                yield unit, index


def texts(records: Iterable[dict[str, Any]]) -> list[str]:
    """The training texts of the records, in order."""
    return [record["text"] for record in records]
