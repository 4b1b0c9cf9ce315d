"""Reading Jeopardy! clues: either public dump, or the project-written set, as one normalised frame.

Schemas (the two public dumps name the columns the other way round):
- season TSV (jwolle1/jeopardy_clue_dataset): `round clue_value daily_double_value category
  comments answer question air_date notes [season]`, tab-separated and unquoted; `answer` is the
  CLUE shown to contestants and `question` the correct RESPONSE. Fields that pandas quoted on
  export (`"...""pop""..."`) are unquoted here.
- Kaggle (216,930 questions, JSON list or CSV): `category, air_date, question, value, answer,
  round, show_number`; `question` is the clue and `answer` the response. The CSV's headers carry
  leading spaces (" Air Date"), values look like "$200" or "None".

Normalised frame: `id, clue, response, category, air_date, round, value, source` (id = first 16
hex digits of the SHA-256 of `judge_text`, so labels join on content).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.evals.answers import HTML_TAG
from littlekit.judge.labels import read_labels, text_sha256

COLUMNS: tuple[str, ...] = ("id", "clue", "response", "category", "air_date", "round", "value", "source")
TSV_COLUMNS: tuple[str, ...] = (
    "round",
    "clue_value",
    "daily_double_value",
    "category",
    "comments",
    "answer",
    "question",
    "air_date",
    "notes",
)
KAGGLE_COLUMNS: tuple[str, ...] = (
    "category",
    "air_date",
    "question",
    "value",
    "answer",
    "round",
    "show_number",
)
SOURCE_TSV = "season-tsv"
SOURCE_KAGGLE = "kaggle"
AUTHORED_DIR = "science_clues"  # data/science_clues/: the project-written default set
AUTHORED_SOURCE = "littlecurriculum-authors"


class JeopardyFormatError(ValueError):
    """A malformed file or row; the message names the file and line."""


@dataclass
class LoadReport:
    """What came in and what was dropped; `read == kept + sum(dropped.values())`."""

    path: str
    source: str
    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    bad_lines: list[int] = field(default_factory=list)  # first malformed line numbers (skip mode)

    def check(self) -> None:
        if self.read != self.kept + sum(self.dropped.values()):
            raise AssertionError(f"counts do not add up: {self}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "read": self.read,
            "kept": self.kept,
            "dropped": dict(self.dropped),
            "bad_lines": list(self.bad_lines),
        }


def load_jeopardy(path: str | Path, on_error: str = "raise") -> tuple[pd.DataFrame, LoadReport]:
    """Read a season TSV (.tsv), a Kaggle JSON (.json) or a Kaggle CSV (.csv) into the normal frame.

    `on_error="raise"` stops at the first malformed row with its line (or JSON index);
    `"skip"` drops it and counts it under `dropped["malformed"]`. Rows with an empty clue or
    response, clues that point at pictures or sound (`<a href`, "(Video Daily Double)") and exact
    duplicates (same clue and response) are always dropped and counted.
    """
    if on_error not in {"raise", "skip"}:
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Jeopardy file at {path}")
    suffix = path.suffix.lower()
    if suffix == ".tsv":
        report, rows = LoadReport(str(path), SOURCE_TSV), _read_tsv(path, on_error)
    elif suffix == ".json":
        report, rows = LoadReport(str(path), SOURCE_KAGGLE), _read_kaggle_json(path, on_error)
    elif suffix == ".csv":
        report, rows = LoadReport(str(path), SOURCE_KAGGLE), _read_kaggle_csv(path, on_error)
    else:
        raise JeopardyFormatError(f"{path}: unknown Jeopardy format {suffix!r}; expected .tsv, .json or .csv")
    return _normalise_rows(rows, report)


_Row = tuple[int, dict[str, str] | None, str]  # (line, fields or None when malformed, reason)


def _fail_or_skip(on_error: str, path: Path, where: str, problem: str) -> _Row:
    if on_error == "raise":
        raise JeopardyFormatError(f"{path}:{where}: {problem}")
    line = int(where.split()[-1]) if where.split()[-1].isdigit() else -1
    return (line, None, "malformed")


def _read_tsv(path: Path, on_error: str) -> list[_Row]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None:
            raise JeopardyFormatError(f"{path}: empty file, expected a header")
        header = [h.strip() for h in header]
        if tuple(header[: len(TSV_COLUMNS)]) != TSV_COLUMNS or len(header) > len(TSV_COLUMNS) + 1:
            raise JeopardyFormatError(
                f"{path}:line 1: header {header} is not the season-TSV schema {list(TSV_COLUMNS)} [+ season]"
            )
        rows: list[_Row] = []
        for line, fields in enumerate(reader, start=2):
            if not fields:
                continue
            if len(fields) != len(header):
                rows.append(
                    _fail_or_skip(
                        on_error,
                        path,
                        f"line {line}",
                        f"expected {len(header)} tab-separated fields, got {len(fields)}",
                    )
                )
                continue
            record = dict(zip(header, (_unquote(f) for f in fields), strict=True))
            problem = _check_number(record["clue_value"], "clue_value") or _check_round(record["round"])
            if problem:
                rows.append(_fail_or_skip(on_error, path, f"line {line}", problem))
                continue
            rows.append(
                (
                    line,
                    {
                        "clue": record["answer"],
                        "response": record["question"],
                        "category": record["category"],
                        "air_date": record["air_date"],
                        "round": record["round"],
                        "value": record["clue_value"],
                    },
                    "",
                )
            )
    return rows


def _unquote(value: str) -> str:
    """Undo pandas' CSV quoting in the unquoted TSV: wrapped fields with doubled quotes, escaped quotes."""
    if len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1].replace('""', ""):
        value = value[1:-1].replace('""', '"')
    return value.replace('\\"', '"')


def _check_number(value: str, name: str) -> str:
    text = value.strip().replace("$", "").replace(",", "")
    if text in {"", "None", "null"} or text.isdigit():
        return ""
    return f"{name} {value!r} is not a number"


def _check_round(value: str) -> str:
    return "" if value.strip() else "round is empty"


def _read_kaggle_json(path: Path, on_error: str) -> list[_Row]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise JeopardyFormatError(f"{path}:line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, list):
        raise JeopardyFormatError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    rows: list[_Row] = []
    for index, item in enumerate(data):
        where = f"item {index}"
        if not isinstance(item, dict):
            problem = f"expected an object, got {type(item).__name__}"
            rows.append(_fail_or_skip(on_error, path, where, problem))
            continue
        missing = [key for key in ("category", "question", "answer") if key not in item]
        if missing:
            rows.append(_fail_or_skip(on_error, path, where, f"missing fields {missing}"))
            continue
        rows.append((index, _kaggle_record(item), ""))
    return rows


def _read_kaggle_csv(path: Path, on_error: str) -> list[_Row]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise JeopardyFormatError(f"{path}: empty file, expected a header")
        names = [h.strip().lower().replace(" ", "_") for h in header]
        missing = [key for key in ("category", "question", "answer") if key not in names]
        if missing:
            raise JeopardyFormatError(f"{path}:line 1: header {header} lacks {missing} (Kaggle schema)")
        rows: list[_Row] = []
        for fields in reader:
            line = reader.line_num
            if not fields:
                continue
            if len(fields) != len(names):
                rows.append(
                    _fail_or_skip(
                        on_error,
                        path,
                        f"line {line}",
                        f"expected {len(names)} comma-separated fields, got {len(fields)}",
                    )
                )
                continue
            rows.append((line, _kaggle_record(dict(zip(names, fields, strict=True))), ""))
    return rows


def _kaggle_record(item: Mapping[str, Any]) -> dict[str, str]:
    value = item.get("value")
    value = "" if value in (None, "None") else str(value).replace("$", "").replace(",", "")
    return {
        "clue": _strip_wrapping_quotes(str(item.get("question") or "")),
        "response": str(item.get("answer") or ""),
        "category": str(item.get("category") or ""),
        "air_date": str(item.get("air_date") or ""),
        "round": str(item.get("round") or ""),
        "value": value,
    }


def _strip_wrapping_quotes(text: str) -> str:
    """The Kaggle JSON wraps every clue in single quotes ("'This organ ...'")."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == "'" else text


_MEDIA_RE = re.compile(r"<a\s+href|\((?:video|audio|sound|picture|photo)[^)]*\)", re.IGNORECASE)


def _normalise_rows(rows: Iterable[_Row], report: LoadReport) -> tuple[pd.DataFrame, LoadReport]:
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line, record, reason in rows:
        report.read += 1
        if record is None:
            report.dropped[reason] += 1
            if len(report.bad_lines) < 20:
                report.bad_lines.append(line)
            continue
        if _MEDIA_RE.search(record["clue"]):
            report.dropped["media clue"] += 1
            continue
        clue, response = _clean_text(record["clue"]), _clean_text(record["response"])
        if not clue or not response:
            report.dropped["empty clue or response"] += 1
            continue
        row = {
            "clue": clue,
            "response": response,
            "category": _clean_text(record["category"]).upper(),
            "air_date": record["air_date"].strip(),
            "round": record["round"].strip(),
            "value": pd.to_numeric(record["value"] or None, errors="coerce"),
            "source": report.source,
        }
        row["id"] = clue_id(row)
        if row["id"] in seen:
            report.dropped["duplicate"] += 1
            continue
        seen.add(row["id"])
        kept.append(row)
    report.kept = len(kept)
    report.check()
    frame = pd.DataFrame(kept, columns=list(COLUMNS))
    frame["value"] = frame["value"].astype("Float64")
    return frame, report


def _clean_text(text: str) -> str:
    text = HTML_TAG.sub("", text.replace("\\'", "'"))
    return " ".join(text.split())


def judge_text(row: Mapping[str, Any]) -> str:
    """The text the judge sees and labels are keyed on: category, clue and correct response."""
    return f"Category: {row['category']}\nClue: {row['clue']}\nCorrect response: {row['response']}"


def clue_id(row: Mapping[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of `judge_text` (the judge's default document id)."""
    return text_sha256(judge_text(row))[:16]


def load_authored(root: str | Path | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The project-written clue set and its author labels (data/science_clues/)."""
    from littlekit.config import data_path

    frame, _ = load_jeopardy(data_path(f"{AUTHORED_DIR}/clues.tsv", root))
    return frame, read_labels(data_path(f"{AUTHORED_DIR}/labels.jsonl", root))
