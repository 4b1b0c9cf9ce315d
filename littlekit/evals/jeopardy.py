"""Jeopardy science questions split by NGSS grade band (the paper's Figure 5).

Pipeline: `load_jeopardy` (season TSV or Kaggle JSON/CSV -> one normalised frame) ->
`select_science` (category keywords) -> `label_clues` (an LLM judge with its own NGSS prompt,
cached, written as label records) or `read_labels` (the project-written set's author labels) ->
`attach_split` (K-5 vs Beyond K-5) -> `evaluate_generation` (few-shot prompt, greedy answer,
`grade`) and `evaluate_likelihood` (bits per byte of the gold response given the prompt).

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

Grading rule (`grade`): the completion's first line, up to its first sentence end, is
normalised (`normalise_answer`: lowercase, accents and HTML removed, "what is / who are ..."
framing, articles and punctuation dropped, number words as digits); it is correct when its
words equal the words of one gold variant or begin with them (the gold as whole words at the
start: "trunk of the elephant" counts for "the trunk"). Gold variants (`gold_variants`) come
from Jeopardy's conventions: "(the) Beagle" -> optional part dropped and kept, "Hawaii (or the
Aloha State)" and "a or b" -> aliases, "(1 of) a, b or c" -> any one item. A period after a
single letter or an abbreviation ("Dr.", "H.G.") does not end the answer.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.grades import BANDS
from littlekit.io import sha256_file
from littlekit.judge.labels import make_label, read_labels, text_sha256, write_labels

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
SPLITS: tuple[str, ...] = ("K-5", "Beyond K-5")


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


# ---------------------------------------------------------------------------------------- loading


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
_TAG_RE = re.compile(r"<[^>]{0,200}>")


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
    text = _TAG_RE.sub("", text.replace("\\'", "'"))
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


# -------------------------------------------------------------------------------------- selection

# Categories whose clues are about science: a keyword as a whole word of the category decides.
SCIENCE_KEYWORDS: tuple[str, ...] = (
    "SCIENCE",
    "SCIENTIFIC",
    "SCIENTISTS",
    "BIOLOGY",
    "CHEMISTRY",
    "CHEMICAL",
    "PHYSICS",
    "ASTRONOMY",
    "ANATOMY",
    "BOTANY",
    "ZOOLOGY",
    "GEOLOGY",
    "METEOROLOGY",
    "ECOLOGY",
    "GENETICS",
    "ELEMENTS",
    "ANIMALS",
    "MAMMALS",
    "BIRDS",
    "INSECTS",
    "REPTILES",
    "FISH",
    "DINOSAURS",
    "PLANTS",
    "TREES",
    "FLOWERS",
    "NATURE",
    "WEATHER",
    "PLANETS",
    "SPACE",
    "HUMAN BODY",
    "ROCKS",
    "MINERALS",
    "OCEANS",
    "VOLCANOES",
    "ENERGY",
    "MAGNETS",
    "ELECTRICITY",
)
# Categories that contain a keyword but are not science (fiction, social sciences, trivia on names).
EXCLUDE_KEYWORDS: tuple[str, ...] = (
    "SCIENCE FICTION",
    "SOCIAL SCIENCE",
    "POLITICAL SCIENCE",
    "CHRISTIAN SCIENCE",
    "FICTION",
    "FICTIONAL",
    "LITERARY",
    "LITERATURE",
    "MOVIE",
    "MOVIES",
    "FILM",
    "TV",
    "SONG",
    "SONGS",
    "STATE BIRDS",
    "HUMAN NATURE",
    "RHYME TIME",
    "BEFORE & AFTER",
    "STUPID ANSWERS",
    "CROSSWORD",
    "MUSIC",
    "ROCK",
    "SPORTS",
    "TEAMS",
)


def _keyword_re(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![A-Z])({alternatives})(?![A-Z])")


_SCIENCE_RE = _keyword_re(SCIENCE_KEYWORDS)
_EXCLUDE_RE = _keyword_re(EXCLUDE_KEYWORDS)


def science_keyword(category: str) -> str | None:
    """The first science keyword in a category, or None (also when an exclusion word appears)."""
    text = category.upper()
    if _EXCLUDE_RE.search(text):
        return None
    match = _SCIENCE_RE.search(text)
    return match.group(1) if match else None


def select_science(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Clues whose category is science; returns (selection with a `keyword` column, counts).

    counts: input, selected, excluded (a science keyword but an exclusion word too), no keyword,
    and selected per keyword; input == selected + excluded + no_keyword.
    """
    upper = frame["category"].astype(str).str.upper()
    has_science = upper.map(lambda c: _SCIENCE_RE.search(c) is not None)
    keyword = upper.map(science_keyword)
    selected = frame[keyword.notna()].assign(keyword=keyword[keyword.notna()]).reset_index(drop=True)
    counts = {
        "input": len(frame),
        "selected": len(selected),
        "excluded": int((has_science & keyword.isna()).sum()),
        "no_keyword": int((~has_science).sum()),
        "by_keyword": selected["keyword"].value_counts().to_dict(),
    }
    if counts["input"] != counts["selected"] + counts["excluded"] + counts["no_keyword"]:
        raise AssertionError(f"selection counts do not add up: {counts}")
    return selected, counts


# ------------------------------------------------------------------------------------ NGSS judge

NGSS_SYSTEM = """You are a science curriculum specialist. You place quiz facts in the grade band \
of United States schooling where the Next Generation Science Standards (NGSS) teach them.

You will see a Jeopardy! clue and its correct response. Decide which idea a student must know \
to give the response, and find the band in which NGSS first teaches that idea:
- K5: kindergarten to grade 5 (the codes K-, 1- to 5- below)
- K8: middle school, grades 6 to 8 (MS- codes)
- K12: high school, grades 9 to 12 (HS- codes)
- OOS: beyond school science (university or specialist knowledge, or no NGSS idea at all)

Judge the scientific idea, not the wording of the clue: a hard word for a simple idea is still \
the band of the idea, and a trivia detail (a name, a date, a record) belongs to the band of the \
idea it is about. If you are unsure between two bands, choose the higher one.

NGSS disciplinary core ideas, with one performance expectation each:
{dci_text}

Respond with one JSON object and nothing else:
{{"rationale": "<one sentence naming the idea>", "dci": "<the closest code, e.g. 2-LS4 or MS-PS1>", \
"band": "<K5|K8|K12|OOS>"}}"""

NGSS_USER = """{text}

In which grade band does NGSS teach the fact needed for this response? Answer with the JSON object only."""

_DCI_RE = re.compile(r"^((?:K|\d|MS|HS)-(?:ESS|LS|PS)\d)")


def dci_code(performance_expectation: str) -> str | None:
    """'2-LS4-1' -> '2-LS4'; None for engineering (ETS) and codes of other shapes."""
    match = _DCI_RE.match(performance_expectation)
    return match.group(1) if match else None


def ngss_dci_table(
    standards: pd.DataFrame | None = None, per_dci: int = 1, max_chars: int = 200
) -> pd.DataFrame:
    """NGSS disciplinary core ideas: `dci, band, subject, text` (the first `per_dci` expectations)."""
    from littlekit.databuild.corpora import load_standards

    frame = load_standards() if standards is None else standards
    ngss = frame[frame["framework"].str.upper() == "NGSS"].copy()
    ngss["dci"] = ngss["code"].map(dci_code)
    ngss = ngss[ngss["dci"].notna()]
    rows = []
    for dci, group in ngss.groupby("dci", sort=False):
        texts = [
            t if len(t) <= max_chars else t[: max_chars - 3].rsplit(" ", 1)[0] + "..."
            for t in group["text"].head(per_dci)
        ]
        rows.append(
            {
                "dci": dci,
                "band": group["band"].iloc[0],
                "subject": group["subject"].iloc[0],
                "text": " ".join(texts),
            }
        )
    return pd.DataFrame(rows, columns=["dci", "band", "subject", "text"])


def ngss_prompt(standards: pd.DataFrame | None = None, per_dci: int = 1):
    """The judge prompt (a `littlekit.judge.JudgePrompt` named "ngss_science") quoting every NGSS DCI."""
    from littlekit.judge.prompts import JudgePrompt

    table = ngss_dci_table(standards, per_dci=per_dci)
    lines = [f"- {r.dci} ({r.band}, {r.subject}): {r.text}" for r in table.itertuples(index=False)]
    system = NGSS_SYSTEM.format(dci_text="\n".join(lines))
    return JudgePrompt(name="ngss_science", system=system, user_template=NGSS_USER)


def label_clues(
    frame: pd.DataFrame,
    backend: Any,
    cache: Any = None,
    prompt: Any = None,
    batch_size: int = 64,
) -> list[dict[str, Any]]:
    """Judge labels (label records, `source` "llm-judge") for every clue, keyed by `id`.

    Answers are cached (`littlekit.judge.JudgeCache`), so a re-run asks the backend nothing.
    The DCI the judge names is kept under `judge["dci"]` when its answer holds one.
    """
    from littlekit.judge.annotate import annotate

    prompt = prompt or ngss_prompt()
    texts = [judge_text(row) for row in frame.to_dict("records")]
    records = annotate(texts, [prompt], backend, cache, ids=list(frame["id"]), batch_size=batch_size)
    keys = [(prompt.version, backend.model_id, r["text_sha256"]) for r in records]
    answers = cache.get_many(keys) if cache is not None else {}
    for record in records:
        key = (prompt.version, backend.model_id, record["text_sha256"])
        record["judge"]["dci"] = _answer_dci(answers[key].text) if key in answers else None
    return records


_ANSWER_DCI_RE = re.compile(r'"dci"\s*:\s*"([^"]{1,20})"')


def _answer_dci(answer: str) -> str | None:
    match = _ANSWER_DCI_RE.search(answer)
    return dci_code(match.group(1).strip().upper()) if match else None


def author_label(row: Mapping[str, Any], band: str, dci: str) -> dict[str, Any]:
    """A label record assigned by the clue's author (no votes, no judge) with its NGSS DCI code."""
    record = make_label(row["id"], judge_text(row), band, source=AUTHORED_SOURCE)
    record["dci"] = dci
    return record


def save_labels(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write label records as JSON lines (see `littlekit.judge.labels`)."""
    return write_labels(records, path)


def attach_split(
    frame: pd.DataFrame, labels: Sequence[Mapping[str, Any]]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Join labels on `id` (checking the text hash) and add `band` and `split` (K-5 / Beyond K-5).

    Clues without a label or with a null band are dropped and counted:
    counts input == labelled + unlabelled + null_band.
    """
    by_id = {str(r["id"]): r for r in labels}
    bands, unlabelled, null_band = [], 0, 0
    for row in frame.to_dict("records"):
        record = by_id.get(row["id"])
        if record is None:
            unlabelled += 1
            bands.append(None)
            continue
        if record["text_sha256"] != text_sha256(judge_text(row)):
            raise ValueError(f"label {row['id']} was made for a different clue text (text_sha256 differs)")
        if record["band"] is None:
            null_band += 1
        bands.append(record["band"])
    out = frame.assign(band=bands)
    out = out[out["band"].notna()].reset_index(drop=True)
    bad = sorted(set(out["band"]) - set(BANDS))
    if bad:
        raise ValueError(f"labels have unknown bands {bad}")
    out["split"] = out["band"].map(lambda b: "K-5" if b == "K5" else "Beyond K-5")
    counts = {"input": len(frame), "labelled": len(out), "unlabelled": unlabelled, "null_band": null_band}
    return out, counts


def sample_per_split(clues: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """At most `n` clues of each split (a seeded sample), in the splits' order of appearance."""
    parts = [
        group.sample(n=min(len(group), n), random_state=seed)
        for _, group in clues.groupby("split", sort=False)
    ]
    return pd.concat(parts).reset_index(drop=True) if parts else clues.head(0)


# -------------------------------------------------------------------------------- normalisation

_FRAMING_RE = re.compile(
    r"^(?:what|who|where|when|which|whom)(?:\s+(?:is|are|was|were|am)|'s|'re)\s+", re.IGNORECASE
)
_ARTICLES = {"a", "an", "the"}
_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1000000,
}


def normalise_answer(text: str) -> str:
    """Lowercase words without framing, articles, punctuation, accents or parentheses; numbers as digits."""
    text = unicodedata.normalize("NFKD", _TAG_RE.sub(" ", text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower().strip()
    text = _FRAMING_RE.sub("", text)
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 1,000 -> 1000
    text = re.sub(r"[()\[\]]", " ", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)  # keep decimal points
    text = re.sub(r"'s\b", "", text)
    text = re.sub(r"[^\w\s.]", " ", text).replace("_", " ")
    words = [str(_NUMBER_WORDS.get(w, w)) for w in text.split() if w not in _ARTICLES]
    return " ".join(words) if words else " ".join(text.split())  # the letter "A" is an answer too


_PAREN_RE = re.compile(r"\(([^()]*)\)")
_ONE_OF_RE = re.compile(r"^\s*\((?:1|one|any 1|any one) of\)\s*", re.IGNORECASE)
_LIST_SPLIT_RE = re.compile(r"\s*,\s*(?:or\s+|and\s+|&\s+)?|\s+(?:or|and|&)\s+")


def gold_variants(response: str) -> list[str]:
    """Every accepted form of a Jeopardy response, normalised, without duplicates.

    "(the) Beagle" -> beagle; "Hawaii (or the Aloha State)" -> hawaii, aloha state;
    "Mercury (the planet)" -> mercury, mercury planet; "a cat or a lion" -> cat or lion, cat, lion.
    """
    text = _TAG_RE.sub(" ", response)
    if _ONE_OF_RE.match(text):  # "(1 of) nitrogen, phosphorus or potassium": any one item
        items = _LIST_SPLIT_RE.split(_ONE_OF_RE.sub("", text))
        return list(dict.fromkeys(v for item in items if item.strip() for v in gold_variants(item)))
    aliases = [m.group(1).strip()[3:] for m in _PAREN_RE.finditer(text) if _is_alias(m.group(1))]
    without_alias = _PAREN_RE.sub(lambda m: "" if _is_alias(m.group(1)) else m.group(0), text)
    optional_dropped = _PAREN_RE.sub(" ", without_alias)
    optional_kept = _PAREN_RE.sub(lambda m: f" {m.group(1)} ", without_alias)
    forms = [optional_dropped, optional_kept, *aliases]
    for form in (optional_dropped, *aliases):
        parts = re.split(r"\s+or\s+|\s*/\s*", form, flags=re.IGNORECASE)
        if len(parts) > 1:
            forms.extend(parts)
    variants = [normalise_answer(f) for f in forms]
    return [v for v in dict.fromkeys(variants) if v]


def _is_alias(inside: str) -> bool:
    return inside.strip().lower().startswith("or ")


_SENTENCE_END_RE = re.compile(r"[.?!](?:\s|$)")
# a period after these (or after a single letter, or inside "H.G.") is not a sentence end
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st mt ft jr sr vs no co inc lt gen col capt sgt prof rev gov sen rep pres".split()
)


def first_answer(completion: str) -> str:
    """The part of a completion that is the answer: its first line, up to the first sentence end."""
    line = completion.strip().split("\n", 1)[0] if completion.strip() else ""
    for match in _SENTENCE_END_RE.finditer(line):
        before = line[: match.start()].split()
        word = re.sub(r"[^\w.]", "", before[-1]).lower() if before else ""
        if match.group(0)[0] == "." and (len(word) == 1 or word in _ABBREVIATIONS or "." in word):
            continue
        return line[: match.start()]
    return line


def grade(completion: str, response: str) -> bool:
    """True when the completion's answer equals a gold variant or begins with it as whole words."""
    answer = normalise_answer(first_answer(completion)).split()
    if not answer:
        return False
    for gold in gold_variants(response):
        words = gold.split()
        if answer[: len(words)] == words:
            return True
    return False


# --------------------------------------------------------------------------------- evaluation

# Fixed few-shot examples (written for this project; not in the clue set).
SHOTS: tuple[tuple[str, str, str], ...] = (
    ("ANIMALS", "This large gray animal uses its long trunk to drink and to pick up food", "an elephant"),
    ("WEATHER", "Water falling from clouds as drops is called this", "rain"),
    ("THE HUMAN BODY", "This organ in your chest pumps blood around your body", "the heart"),
)
PROMPT_HEADER = "Jeopardy! science clues and their correct responses.\n\n"


def format_prompt(category: str, clue: str, shots: Sequence[tuple[str, str, str]] = SHOTS) -> str:
    """A few-shot base-model prompt ending in "Response:"; the answer follows after a space."""
    blocks = [f"Category: {c}\nClue: {q}\nResponse: {r}\n\n" for c, q, r in shots]
    return PROMPT_HEADER + "".join(blocks) + f"Category: {category}\nClue: {clue}\nResponse:"


def evaluate_generation(
    model: Any,
    tokenizer: Any,
    clues: pd.DataFrame,
    max_new_tokens: int = 16,
    batch_size: int = 16,
    shots: Sequence[tuple[str, str, str]] = SHOTS,
) -> pd.DataFrame:
    """Greedy answers (pass@1) for every clue: the clue frame plus `completion` and `correct`."""
    from littlekit.evals.generate import greedy

    prompts = [format_prompt(c, q, shots) for c, q in zip(clues["category"], clues["clue"], strict=True)]
    completions = greedy(model, tokenizer, prompts, max_new_tokens, batch_size, stop=("\n",))
    correct = [grade(c, r) for c, r in zip(completions, clues["response"], strict=True)]
    return clues.assign(completion=completions, correct=correct)


def pass_at_1(results: pd.DataFrame, by: Sequence[str] = ("model", "split")) -> pd.DataFrame:
    """Accuracy per group with 95% Wilson intervals: `n, correct, accuracy, ci_low, ci_high`."""
    from littlekit.stats import wilson_interval

    table = results.groupby(list(by), sort=False)["correct"].agg(n="size", correct="sum").reset_index()
    table["correct"] = table["correct"].astype(int)
    table["accuracy"] = table["correct"] / table["n"]
    low, high = wilson_interval(table["correct"].to_numpy(), table["n"].to_numpy())
    table["ci_low"], table["ci_high"] = low, high
    return table


def evaluate_likelihood(
    model: Any,
    tokenizer: Any,
    clues: pd.DataFrame,
    batch_size: int = 16,
    shots: Sequence[tuple[str, str, str]] = SHOTS,
) -> pd.DataFrame:
    """Per clue: nats, bytes and tokens of " <gold response>" given the few-shot prompt.

    `logprob` is the response's total log-probability (nats, negative); bits per byte per split
    come from `likelihood_table`, summed over clues as `corpus_bpb` does.
    """
    from littlekit.evals.bpb import corpus_bpb

    pairs = [
        (format_prompt(c, q, shots), " " + r)
        for c, q, r in zip(clues["category"], clues["clue"], clues["response"], strict=True)
    ]
    result = corpus_bpb(model, tokenizer, pairs, batch_size=batch_size, per_doc=True)
    docs = result["per_doc"]
    return clues.assign(
        nats=[d["nats"] for d in docs],
        bytes=[d["bytes"] for d in docs],
        tokens=[d["tokens"] for d in docs],
        logprob=[-d["nats"] for d in docs],
    )


def likelihood_table(scored: pd.DataFrame, by: Sequence[str] = ("model", "split")) -> pd.DataFrame:
    """Per group: clues, corpus bits per byte of the gold responses, mean log-prob per response and token."""
    import math

    table = (
        scored.groupby(list(by), sort=False)
        .agg(
            n=("nats", "size"),
            nats=("nats", "sum"),
            bytes=("bytes", "sum"),
            tokens=("tokens", "sum"),
            mean_logprob=("logprob", "mean"),
        )
        .reset_index()
    )
    table["bpb"] = table["nats"] / (math.log(2) * table["bytes"])
    table["logprob_per_token"] = -table["nats"] / table["tokens"]
    return table


# to record which Jeopardy file a run read
file_sha256 = sha256_file
