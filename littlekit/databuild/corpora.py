"""Loaders for the embedded data (`data/`) or any data root laid out the same way.

Every loader takes an optional `root` (default: `config.data_root()`, i.e. `$LITTLEKIT_DATA` or the
embedded default: a checkout's `data/`, or in a real install only the filter's default tables)
and returns a pandas DataFrame with the documented columns. A file a given root lacks is not
taken from the embedded copy (only the shipped default tables are, `config.SHIPPED_FILES`): a
missing file raises FileNotFoundError naming the file, the root (or `LITTLEKIT_DATA`) and how
to build it. `load_weebit(path)` is the exception: WeeBit is never shipped, so it reads a file the
user supplies.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from littlekit import config, grades
from littlekit.databuild.columns import (
    AOA_51715_COLUMNS,
    AOA_COLUMNS,
    ARC_COLUMNS,
    CLEAR_COLUMNS,
    DEMO_COLUMNS,
    GSM8K_COLUMNS,
    INFORMATIONAL_COLUMNS,
    INFORMATIONAL_SPLITS,
    JUDGE_LABEL_COLUMNS,
    JUDGE_PROVENANCE_COLUMNS,
    K5_REWRITE_COLUMNS,
    K5_REWRITE_PROVENANCE_COLUMNS,
    MATHCAMPS_COLUMNS,
    ONESTOP_COLUMNS,
    PASSAGE_COLUMNS,
    STANDARDS_COLUMNS,
)

Root = str | os.PathLike | None

AOA_TABLES = {"lemma": "aoa/aoa_lemma.csv", "kuperman": "aoa/kuperman_aoa.csv"}
JUDGE_LABELS_FILE = "judge_labels/labels.jsonl.gz"
JUDGE_QUALITY_FILE = "judge_labels/quality.json"
JUDGE_RUBRIC_FILE = "judge_labels/RUBRIC.md"
K5_REWRITES_FILE = "k5_rewrites/rewrites.jsonl.gz"
_BUILD_HINT = "a checkout builds data/ with `littlekit data build --from ../shared/data --out data`"


def _path(relative: str, root: Root) -> Path:
    try:
        return config.data_path(relative, root)
    except FileNotFoundError as error:  # the message names the file and LITTLEKIT_DATA
        raise FileNotFoundError(f"{error}; {_BUILD_HINT}") from None


def _read_jsonl(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return _check(pd.DataFrame(rows, columns=None if rows else list(columns)), columns, path)


def _check(frame: pd.DataFrame, columns: tuple[str, ...], path: Path) -> pd.DataFrame:
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    return frame


def _read_csv(path: Path, columns: tuple[str, ...], **kwargs) -> pd.DataFrame:
    # keep_default_na=False: 'null', 'none' and 'nan' are words in the AoA tables
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], **kwargs)
    return _check(frame, columns, path)


def load_aoa_table(root: Root = None, full: bool = False, table: str = "lemma") -> pd.DataFrame:
    """AoA `word, aoa` (lower-cased words, years); `full=True` gives the 51,715-word master table.

    `table="lemma"` (default) is `aoa/aoa_lemma.csv`, the master file's lemma-propagated
    `AoA_Kup_lem`, which the AoA stage reads by default (the published Zipf coefficients are a fit
    on it); `table="kuperman"` is `aoa/kuperman_aoa.csv`, Kuperman's `Rating.Mean` of rated words.
    """
    if table not in AOA_TABLES:
        raise ValueError(f"table must be one of {sorted(AOA_TABLES)}, not {table!r}")
    if full:
        return _read_csv(_path("aoa/aoa_51715.csv", root), AOA_51715_COLUMNS, dtype={"word": str})
    return _read_csv(_path(AOA_TABLES[table], root), AOA_COLUMNS, dtype={"word": str, "aoa": float})


def load_standards(root: Root = None) -> pd.DataFrame:
    """CCSS-Math, CCSS-ELA and NGSS: `framework, code, grade, band, subject, text` (all strings)."""
    return _read_csv(_path("standards/standards.csv", root), STANDARDS_COLUMNS, dtype=str)


def load_commoncoretext(root: Root = None, split: str | None = None) -> pd.DataFrame:
    """CommonCoreText-PD passages; `split` ('train' or 'validation') selects one side."""
    frame = _read_jsonl(_path("commoncoretext_pd/passages.jsonl", root), PASSAGE_COLUMNS)
    if split is not None:
        if split not in {"train", "validation"}:
            raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
        frame = frame[frame["split"] == split].reset_index(drop=True)
    return frame


def load_graded_informational(root: Root = None, split: str | None = None) -> pd.DataFrame:
    """Passages of 31 school books labelled by the book's own preface: `band` K5, BEYOND or BOUNDARY.

    Columns: those of `load_commoncoretext` plus `pg_id` and `label_basis` (stated|inferred).
    `split` selects 'train', 'validation' (whole authors, K5 and BEYOND only) or 'boundary' (the
    BOUNDARY books, never training labels).
    """
    if split is not None and split not in INFORMATIONAL_SPLITS:
        raise ValueError(f"split must be one of {', '.join(INFORMATIONAL_SPLITS)}, not {split!r}")
    frame = _read_jsonl(_path("graded_informational/passages.jsonl", root), INFORMATIONAL_COLUMNS)
    if split is not None:
        frame = frame[frame["split"] == split].reset_index(drop=True)
    return frame


def load_arc(
    root: Root = None, split: str | None = None, path: str | os.PathLike | None = None
) -> pd.DataFrame:
    """ARC question stems with the grade of their exam: `band` K5 (grades 3-5) or BEYOND (6-9).

    Without `path`, the small extract in `graded_informational/arc/stems.jsonl` (CC BY-SA 4.0).
    With `path`, every usable stem read from the user's folder of ARC CSVs (`ARC-Easy-Train.csv`,
    ... flat or in `ARC-Easy/` and `ARC-Challenge/`), by the same rules. `split` selects 'train'
    (ARC Train) or 'validation' (ARC Dev and Test).
    """
    if split is not None and split not in {"train", "validation"}:
        raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
    if path is not None:
        from littlekit.databuild.informational import arc_stems

        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"ARC folder {folder} does not exist (it should hold ARC-Easy-Train.csv, ...)"
            )
        frame = arc_stems(folder)
    else:
        frame = _read_jsonl(_path("graded_informational/arc/stems.jsonl", root), ARC_COLUMNS)
    if split is not None:
        frame = frame[frame["split"] == split].reset_index(drop=True)
    return frame


def load_demo_corpus(root: Root = None) -> pd.DataFrame:
    """The demo corpus: `id, text, source, band` (band None where the source does not fix one)."""
    return _read_jsonl(_path("demo_corpus/demo_web.jsonl", root), DEMO_COLUMNS)


def load_mathcamps(root: Root = None) -> pd.DataFrame:
    """MathCAMPS v1: `id, standard, statement, answer, type, followup_to`."""
    return _read_jsonl(_path("mathcamps/mathcamps.jsonl", root), MATHCAMPS_COLUMNS)


def load_gsm8k(split: str = "test", root: Root = None) -> pd.DataFrame:
    """GSM8K `question, answer` for split 'train' or 'test'."""
    if split not in {"train", "test"}:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    return _read_jsonl(_path(f"gsm8k/{split}.jsonl", root), GSM8K_COLUMNS)


def load_clear(root: Root = None) -> pd.DataFrame:
    """CLEAR excerpts with `bt_easiness`, the Lexile columns, the derived `band` and `ambiguous`."""
    frame = _read_csv(_path("clear/clear.csv", root), CLEAR_COLUMNS)
    frame["band"] = pd.Series([b if isinstance(b, str) else None for b in frame["band"]], dtype=object)
    return frame


def load_science_clue_texts(root: Root = None) -> list[str]:
    """The clue texts of the project-written Jeopardy science set (`science_clues/clues.tsv`,
    season-TSV schema: the clue is the `answer` column); `evals.jeopardy` loads the whole set."""
    path = _path("science_clues/clues.tsv", root)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    if rows and "answer" not in rows[0]:
        raise ValueError(f"{path}: no `answer` column (the clue text) in the header")
    return [row["answer"] for row in rows if row.get("answer")]


def load_onestopenglish(root: Root = None) -> pd.DataFrame:
    """OneStopEnglish: `id, level, text`, level in ele / int / adv."""
    return _read_jsonl(_path("onestopenglish/onestop.jsonl", root), ONESTOP_COLUMNS)


def load_judge_labels(root: Root = None) -> pd.DataFrame:
    """Passages an LLM judge labelled K5, K8, K12 or OOS (`judge_labels/labels.jsonl.gz`), one row a record.

    Columns: `id, text, text_sha256, band, votes, judge, source, corpus, licence` and the provenance
    fields `origin` (repository@commit:path), `url`, and `book, level, genre, genre_basis` for
    children's books (None where a record lacks one). `votes` is `{"pass_1": band}`, with `pass_2`
    for passages judged twice; `judge` is `{kind, rubric, grade, evidence}`.
    """
    frame = _read_jsonl(_path(JUDGE_LABELS_FILE, root), JUDGE_LABEL_COLUMNS)
    frame = frame.reindex(columns=[*frame.columns, *(c for c in JUDGE_PROVENANCE_COLUMNS if c not in frame)])
    return frame.astype({c: object for c in JUDGE_PROVENANCE_COLUMNS}).where(frame.notna(), None)


def load_judge_quality(root: Root = None) -> dict:
    """The judge's measured quality (`judge_labels/quality.json`): counts as `[hits, total]` pairs.

    Keys: `released` (records judged and released, before the data build left any out),
    `calibration_n`, `k5_precision`, `k5_recall`, `beyond_called_k5`,
    `exact_band_agreement_on_repeats`, `k5_agreement_on_repeats`, `calibration_confusion`
    (`"reference->judge": count` on the blind CommonCoreText-PD validation passages) and
    `by_corpus` (`{corpus: {band: count}}` of the released records).
    """
    path = _path(JUDGE_QUALITY_FILE, root)
    quality = json.loads(path.read_text(encoding="utf-8"))
    missing = [key for key in ("k5_precision", "k5_recall", "calibration_confusion") if key not in quality]
    if missing:
        raise ValueError(f"{path} lacks keys {missing}")
    return quality


def load_judge_rubric(root: Root = None) -> str:
    """The instructions the judge labelled every passage with (`judge_labels/RUBRIC.md`)."""
    return _path(JUDGE_RUBRIC_FILE, root).read_text(encoding="utf-8")


def load_k5_rewrites(root: Root = None) -> pd.DataFrame:
    """K-5 rewrites of web passages (`k5_rewrites/rewrites.jsonl.gz`), one row a record, all `band` K5.

    Columns: `id, text, text_sha256, band, source, form, source_id, source_band, corpus, licence` and
    the provenance fields `origin` (repository@commit:path of the original) and `url` (None where a
    record lacks one). `source_id` is the original's `id` in `load_judge_labels`, `source_band` its
    judge band. Training labels only: keep a rewrite in its original's fold (group by `source_id`),
    never use one for validation or as pretraining text.
    """
    frame = _read_jsonl(_path(K5_REWRITES_FILE, root), K5_REWRITE_COLUMNS)
    extra = [c for c in K5_REWRITE_PROVENANCE_COLUMNS if c not in frame]
    frame = frame.reindex(columns=[*frame.columns, *extra])
    return frame.astype({c: object for c in K5_REWRITE_PROVENANCE_COLUMNS}).where(frame.notna(), None)


# --- WeeBit (user-supplied, never shipped) -------------------------------------------------------

WEEBIT_COLUMNS = ("id", "text", "level", "grade", "band", "group")
WEEBIT_FILE_COLUMNS = ("Text", "Grade", "Type")
# `Type` -> band: Weekly Reader levels 2-4 (US grades 2-4) are K-5; BBC Bitesize KS3 (England's
# Key Stage 3, ages 11-14, US grades 6-8) is K8 and GCSE (ages 14-16, US grades 9-10) is K12
WEEBIT_TYPES: dict[str, str] = {
    "WRLevel2": "K5",
    "WRLevel3": "K5",
    "WRLevel4": "K5",
    "BitKS3": "K8",
    "BitGCSE": "K12",
}
# Lines (whitespace-stripped, matched whole, case-insensitive) that are publisher or web-page
# boilerplate rather than passage text. Written from what scraped reading corpora typically carry,
# not from WeeBit's files (which this project never reads): copyright and rights lines, "read more"
# and "click here" links, navigation words alone on a line, page counters, bare URLs, photo credits.
WEEBIT_BOILERPLATE: tuple[str, ...] = (
    r"©.*",  # "© Publisher 2004"
    # "Copyright 2004 ...", "Copyright (c) 2004", "(c) 2007 ...", "Copyright by ..." (not "Copyright law ...")
    r"(?:copyright|\(c\))\s*(?:©|\(c\))?\s*(?:(?:19|20)\d\d|by)\b.*",
    r".*\ball rights reserved\b.*",
    r"(?:read (?:more|the (?:full|whole|rest of the) (?:story|article))|continue reading)\b\W*(?::.*)?",
    r"click here\b.*",
    r"(?:(?:back to top|top of page|home(?: ?page)?|next(?: page)?|prev(?:ious)?(?: page)?|back|print"
    r"(?: this (?:page|story|article))?|e-?mail(?: this (?:page|story|article))?|share(?: this (?:page|story"
    r"|article))?|skip to (?:main )?content|menu|sign in|log in)\s*[|/<>«»‹›:-]*\s*)+",
    r"page \d+(?: of \d+)?",
    r"(?:https?://|www\.)\S+",
    r"(?:photo|image|picture)s?(?: credits?)?\s*:.*",
)


class WeeBitFormatError(ValueError):
    """A WeeBit file that is not in the public CSV shape; the message names the file and line."""


@dataclass
class WeeBitReport:
    """What `load_weebit` read and dropped: `rows == empty + duplicates + conflicting + passages`."""

    path: str
    sep: str
    rows: int = 0
    boilerplate_lines: int = 0  # lines removed by the boilerplate patterns
    texts_with_boilerplate: int = 0  # rows that lost at least one line
    empty: int = 0  # rows with no text left (empty, or nothing but boilerplate)
    duplicates: int = 0  # repeats of a text kept once under the same Type
    conflicting: int = 0  # rows whose text also appears under another Type (every copy dropped)
    passages: int = 0
    by_type: dict[str, int] = field(default_factory=dict)  # passages kept per Type

    def check(self) -> None:
        if self.rows != self.empty + self.duplicates + self.conflicting + self.passages:
            raise AssertionError(f"WeeBit counts do not add up: {self}")

    def summary(self) -> str:
        kinds = {"\t": "tab", ",": "comma"}
        return (
            f"{self.path} ({kinds.get(self.sep, repr(self.sep))}-separated): {self.rows:,} rows -> "
            f"{self.passages:,} passages; {self.boilerplate_lines:,} boilerplate lines removed from "
            f"{self.texts_with_boilerplate:,} texts; dropped {self.empty:,} empty, {self.duplicates:,} "
            f"duplicates, {self.conflicting:,} whose text appears under two Types"
        )


def _weebit_sep(header_line: str, sep: str | None) -> str:
    if sep is not None:
        if sep not in {",", "\t"}:
            raise ValueError(f"sep must be ',', '\\t' or None (detect), not {sep!r}")
        return sep
    return "\t" if "\t" in header_line else ","


def load_weebit(
    path: str | os.PathLike,
    boilerplate: Iterable[str | re.Pattern[str]] = WEEBIT_BOILERPLATE,
    sep: str | None = None,
    encoding: str = "utf-8-sig",
) -> pd.DataFrame:
    """WeeBit (Vajjala & Meurers 2012) from a CSV the user supplies: `id, text, level, grade, band, group`.

    The file has WeeBit's public CSV shape: a header with (at least) `Text`, `Grade` and `Type`
    (names matched case-insensitively; other columns, such as a leading unnamed index, are
    ignored), one passage per row, multi-line texts quoted. Copies in circulation are
    comma-separated or tab-separated; `sep=None` takes tab when the header line holds one, else
    comma. `level` is the Type (`WEEBIT_TYPES`), `band` follows from it (WRLevel2-4 -> K5, BitKS3 ->
    K8, BitGCSE -> K12) and `group` is `grades.beyond_label(band)`; `grade` is the file's Grade as a
    string (not used for the band). `id` is `<Type>:<row>`, the row's 1-based position in the file.

    Cleaning, in order: each line of a text that matches one of `boilerplate` in full (after
    stripping; case-insensitive; default `WEEBIT_BOILERPLATE`, `()` keeps every line) is removed;
    rows left with no text are dropped; texts equal after whitespace normalisation are kept once
    (first row) when they share a Type, and dropped entirely when they appear under two Types
    (they have no single label). The counts are in `frame.attrs["report"]`: the fields of a
    `WeeBitReport` as a plain dict, and its one-line `summary`.

    Raises FileNotFoundError for a missing file and WeeBitFormatError (a ValueError) naming the
    file and line for an empty file, a header without the three columns, a row with the wrong
    number of fields, an unknown Type, or a file with no rows.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"no WeeBit file at {path}; WeeBit is not shipped: "
            "get it from its authors (Vajjala & Meurers 2012)"
        )
    patterns = [p if isinstance(p, re.Pattern) else re.compile(p, re.IGNORECASE) for p in boilerplate]
    try:
        text = path.read_text(encoding=encoding)
    except UnicodeDecodeError as error:
        raise WeeBitFormatError(f"{path}: not {encoding} text ({error}); pass encoding=") from None
    if not text.strip():
        expected = ", ".join(WEEBIT_FILE_COLUMNS)
        raise WeeBitFormatError(f"{path}: empty file, expected a header with {expected}")
    sep = _weebit_sep(text.splitlines()[0], sep)
    report = WeeBitReport(path=str(path), sep=sep)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header = [name.strip() for name in next(reader)]
    where = {name.lower(): i for i, name in reversed(list(enumerate(header)))}
    missing = [name for name in WEEBIT_FILE_COLUMNS if name.lower() not in where]
    if missing:
        raise WeeBitFormatError(
            f"{path}:line 1: header {header} lacks column(s) {missing}; expected WeeBit's "
            f"{', '.join(WEEBIT_FILE_COLUMNS)} ({'tab' if sep == chr(9) else 'comma'}-separated)"
        )
    i_text, i_grade, i_type = (where[name.lower()] for name in WEEBIT_FILE_COLUMNS)
    rows = []
    line = reader.line_num + 1
    try:
        for fields in reader:
            start, line = line, reader.line_num + 1
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line between records
            report.rows += 1
            if len(fields) != len(header):
                raise WeeBitFormatError(
                    f"{path}:line {start} (row {report.rows}): "
                    f"expected {len(header)} fields, got {len(fields)}"
                )
            kind = fields[i_type].strip()
            if kind not in WEEBIT_TYPES:
                raise WeeBitFormatError(
                    f"{path}:line {start} (row {report.rows}): unknown Type {kind!r}; "
                    f"expected one of {', '.join(WEEBIT_TYPES)}"
                )
            kept_lines = []
            for text_line in fields[i_text].splitlines():
                if any(p.fullmatch(text_line.strip()) for p in patterns):
                    report.boilerplate_lines += 1
                else:
                    kept_lines.append(text_line.rstrip())
            report.texts_with_boilerplate += len(kept_lines) < len(fields[i_text].splitlines())
            passage = "\n".join(kept_lines).strip()
            if not passage:
                report.empty += 1
                continue
            grade = fields[i_grade].strip()
            rows.append((f"{kind}:{report.rows}", passage, kind, grade or None, " ".join(passage.split())))
    except csv.Error as error:
        raise WeeBitFormatError(f"{path}:line {line}: {error}") from None
    if report.rows == 0:
        raise WeeBitFormatError(f"{path}: a header but no rows")
    frame = pd.DataFrame(rows, columns=["id", "text", "level", "grade", "_key"])
    types_per_text = frame.groupby("_key")["level"].transform("nunique")
    report.conflicting = int((types_per_text > 1).sum())
    frame = frame[types_per_text == 1]
    repeated = frame["_key"].duplicated()
    report.duplicates = int(repeated.sum())
    frame = frame[~repeated].drop(columns="_key").reset_index(drop=True)
    frame["band"] = frame["level"].map(WEEBIT_TYPES)
    frame["group"] = frame["band"].map(grades.beyond_label)
    frame = frame[list(WEEBIT_COLUMNS)]
    report.passages = len(frame)
    counts = frame["level"].value_counts()
    report.by_type = {kind: int(counts[kind]) for kind in WEEBIT_TYPES if kind in counts.index}
    report.check()
    frame.attrs["report"] = {**asdict(report), "summary": report.summary()}  # plain, so parquet can store it
    return frame


def load_dolch(root: Root = None) -> list[str]:
    """The Dolch sight words, lower-cased."""
    path = _path("wordlists/dolch.txt", root)
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
