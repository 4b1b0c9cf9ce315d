"""graded_informational: passages of 31 grade-labelled school books and a small ARC extract.

Books (public domain) are cut into passages with the CommonCoreText-PD helpers
(`gutenberg.decode_book`, `strip_gutenberg`, `skip_front_matter`, `book_paragraphs`,
`chunking.chunk_paragraphs`, `spread_sample`); what those rules do not know about school books
(teachers' prefaces, drill tables, publishers' lists, glossaries, page headers) is cut by a
per-book table of body markers checked against each file. Every passage keeps its book's band
(K5 / BEYOND / BOUNDARY); whole author groups go to train or validation, and BOUNDARY books get
split "boundary" so they are never training labels.

ARC question stems (CC BY-SA 4.0, with a conflicting AI2 redistribution note) ship only as a small
seeded extract, stems without options or answers; `arc_stems` reads the full CSVs from a path
the user gives (`corpora.load_arc(path=...)`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from littlekit.databuild.chunking import MAX_WORDS, MIN_WORDS, chunk_paragraphs, count_words, spread_sample
from littlekit.databuild.columns import ARC_COLUMNS, INFORMATIONAL_COLUMNS
from littlekit.databuild.common import BuildLog, rng, write_bytes, write_jsonl, write_text
from littlekit.databuild.gutenberg import book_paragraphs, decode_book, skip_front_matter, strip_gutenberg
from littlekit.databuild.passages import assign_splits, author_key

FOLDER = "graded_informational"
PER_BOOK = 80
BOOK_BANDS = ("K5", "BEYOND", "BOUNDARY")
SPLITS = ("train", "validation", "boundary")
FIELDS = INFORMATIONAL_COLUMNS  # the loader's columns: CommonCoreText-PD's plus pg_id, label_basis
ARC_FIELDS = ARC_COLUMNS
ARC_FILES = tuple(
    f"ARC-{subset}-{part}.csv" for subset in ("Easy", "Challenge") for part in ("Train", "Dev", "Test")
)
ARC_SPLITS = {"Train": "train", "Dev": "validation", "Test": "validation"}
# The extract: per band, this many stems from the Train files and from the Dev + Test files.
ARC_PER_BAND = {"train": 200, "validation": 100}
ARC_MIN_WORDS = 5
# Set to False to build data/ without the ARC extract (see SOURCE.md: a person may overrule it).
SHIP_ARC = True
CC_BY_SA_TEXT = "onestopenglish/LICENSE.md"  # the CC BY-SA 4.0 legal code, as shipped by OneStopEnglish
CC_BY_SA_SOURCE = (
    "CC BY-SA 4.0 legal code (text from nishkalavallabhi/OneStopEnglishCorpus@37f8db39 LICENSE.md)"
)
BOOKS_SOURCE = "graded_informational/gutenberg (GITenberg/*, see SOURCE.md)"
ARC_SOURCE = "graded_informational/arc: RazvanDu/TemporalRNNs@979116de (ARC-Easy), @93811e3f (ARC-Challenge)"


@dataclass(frozen=True)
class BookSpec:
    """Where a book's pupil text lies, as full lines (whitespace-stripped) that must occur.

    `start`: patterns found one after the other; the body begins at the last (default: the
    CommonCoreText rule, `skip_front_matter`). `end`: the first line after the start that ends the
    body. `drop`: (from, to) pairs; every stretch from a `from` line up to the next `to` line is cut
    (title pages and prefaces of the later parts of a three-part volume). `remove`: lines deleted
    without a break (page headers; lesson headings of a catechism whose lessons are shorter than a
    passage); the blank lines around them go too, so a paragraph cut by a page header reads on.
    `numbered`: paragraphs are not blank-line separated, so a numbered line (`7. "I started ...`)
    or a lesson heading begins a paragraph. `rejoin`: the book prints words split into syllables
    (`In-di-ans`).
    """

    start: tuple[str, ...] = ()
    end: str | None = None
    drop: tuple[tuple[str, str], ...] = ()
    remove: str | None = None
    numbered: bool = False
    rejoin: bool = False


TRANSCRIBER = r"(?i)\W*Transcriber[’']s notes?:?\W*"
BOOK_SPECS: dict[str, BookSpec] = {
    "71462": BookSpec(start=(r"LESSON I\.",), end=TRANSCRIBER),
    "71843": BookSpec(start=(r"LESSON I\.",), end=TRANSCRIBER),
    "18217": BookSpec(start=(r"CHAMBERS'S SCIENCE READERS\.", r"THE CAT\."), end=r"THE END\."),
    "58421": BookSpec(start=(r"CHAPTER I\.",), drop=((r"THE CHILD’S BOOK OF NATURE\.", r"CHAPTER I\."),)),
    "12228": BookSpec(start=(r"LESSON I\.",)),
    "10070": BookSpec(start=(r"STORIES OF GREAT AMERICANS\.",), rejoin=True),
    "52775": BookSpec(start=(r"TO THE FEMALE TEACHER\.", r"CHAPTER I\."), end=TRANSCRIBER),
    "25646": BookSpec(start=(r"CHAPTER I\.",), end=TRANSCRIBER),
    "15435": BookSpec(start=(r"PART I\.",), end=r"Practical Work in the School-Room\."),
    "11722": BookSpec(
        start=(r"LESSON I\.",), end=r"NATIONAL SERIES OF STANDARD SCHOOL BOOKS,", remove=r"LESSON [IVXLC]+\."
    ),
    "50236": BookSpec(start=(r"I\.—HOW PLANTS TAKE FOOD FROM THE SOIL \(1\)\.",), end=r"Footnotes"),
    "50237": BookSpec(start=(r"I\.—BIRDS IN WINTER\.",), end=r"APPENDIX\."),
    "14640": BookSpec(start=(r"LESSON I\.",), end=r"PHONIC CHART\."),
    "14668": BookSpec(start=(r"LESSON I\.",)),
    "14766": BookSpec(
        start=(r"LESSON I\.",),
        remove=r"(\d+\s+)?ECLECTIC SERIES[.,]?|THIRD READER\.\s+\d+|\(\d+\)",
        numbered=True,
    ),
    "12631": BookSpec(start=(r"THE SEVEN LITTLE SISTERS\.", r"THE BALL ITSELF\.")),
    "38762": BookSpec(start=(r"THE PAST AND THE PRESENT",), end=r"STORIES OF CALIFORNIA"),
    "9995": BookSpec(end=r"TEACHER'S SUPPLEMENT"),
    "18790": BookSpec(start=(r"OUR PRETTY DRAGON FLIES",), end=r"GLOSSARY"),
    "28853": BookSpec(end=r"THE END"),
    "22911": BookSpec(end=r"\|\s*Transcriber's notes\s*\|"),
    "14880": BookSpec(start=(r"I\. PERSEVERANCE\. \(25\)",)),
    "15040": BookSpec(start=(r"1\. THE GOOD READER\.",)),
    "18779": BookSpec(end=r"APPENDIX"),
    "11313": BookSpec(end=r"APPENDIX"),
    "16751": BookSpec(start=(r"I\. ANECDOTE OF THE DUKE OF NEWCASTLE\.",)),
    "45112": BookSpec(start=(r"THE CONSTELLATIONS",), end=r"TABLES"),
    "22302": BookSpec(
        start=(r"THE WESTERN UNITED STATES", r"THE WORK OF THE COLORADO RIVER"), end=r"ADVERTISEMENTS\."
    ),
    "30287": BookSpec(start=(r"CALVIN COOLIDGE",), end=r"ADDENDA"),
}
# Authors the Gutenberg header of a file does not name.
AUTHORS = {"71843": "Julia McNair Wright"}

_AUTHOR_RE = re.compile(r"^Author:\s*(.+?)\s*$", re.MULTILINE)
_DROP_CAP_RE = re.compile(r"\[Illustration:\s*([A-Z])\]")
_SIDENOTE_RE = re.compile(r"\[Sidenote:[^\]]*\]\n?")
_CONTRACTION_RE = re.compile(r"\b(\w+) n't\b")
# Transcribers' emphasis markup: %bold% (McMaster), *italic* (Walters), ~term~ (Morley), =bold=.
_MARKUP_RE = re.compile(r"([%*~=])(?=[^\s%*~=])([^%*~=\n]*?[^\s%*~=])\1")
# Curly quotes and em dashes depend on the transcription (UTF-8 files have them, Latin-1 and ASCII
# files write "--"), not on the book's grade: one ASCII form for all.
_TYPOGRAPHY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "—": "--"})
_LETTER_NOTE_RE = re.compile(r"\[[A-Z]\d*\]")
_NUMBERED_RE = re.compile(r"\d+\.\s|LESSON [IVXLC]+\.")
_HYPHENATED_RE = re.compile(r"\b[A-Za-z]+(?:-[A-Za-z]+)+\b")
_WORD_RE = re.compile(r"[A-Za-z]+")
# Paragraphs for the teacher, editorial notes and glossary entries inside the body.
_NOT_PUPIL_TEXT_RE = re.compile(
    r"^(\[(Footnote|[A-Z\d]+\])"
    r"|(DEFINITIONS|NOTES?|SUGGESTIONS?( TO TEACHERS)?|Note to the Teacher|TO THE TEACHER|Footnotes?)"
    r"(\s*\d+)?\s*[.:—-])",
    re.IGNORECASE,
)
_TABLE_RE = re.compile(r"\||={3,}|\+-{3,}|-{6,}")


def encoding_hint(encoding: str) -> str:
    """The manifest's encoding ('utf-8 with BOM, CRLF') as `decode_book` reads it ('utf-8')."""
    text = encoding.lower()
    for name in ("utf-8", "us-ascii", "iso-8859-1"):
        if text.startswith(name):
            return name
    raise ValueError(f"unknown encoding {encoding!r}")


def _find(lines: list[str], pattern: str, start: int, where: str) -> int:
    compiled = re.compile(pattern)
    for index in range(start, len(lines)):
        if compiled.fullmatch(lines[index].strip()):
            return index
    raise ValueError(f"{where}: no line matches {pattern!r} after line {start}")


def book_body(text: str, spec: BookSpec, where: str = "book") -> str:
    """The pupil text of a header-stripped book, cut by its `BookSpec`."""
    if not spec.start:
        text = skip_front_matter(text)
    lines = text.split("\n")
    begin = 0
    for pattern in spec.start:
        begin = _find(lines, pattern, begin, where)
    end = _find(lines, spec.end, begin + 1, where) if spec.end else len(lines)
    lines = lines[begin:end]
    for first, last in spec.drop:
        position, cuts = 0, 0
        compiled = re.compile(first)
        while True:
            found = next(
                (i for i in range(position, len(lines)) if compiled.fullmatch(lines[i].strip())), None
            )
            if found is None:
                break
            stop = _find(lines, last, found + 1, where)
            lines = lines[:found] + lines[stop:]
            position, cuts = found + 1, cuts + 1
        if not cuts:
            raise ValueError(f"{where}: no line matches {first!r}")
    if spec.remove:
        lines = _remove_lines(lines, re.compile(spec.remove))
    if spec.numbered:
        lines = [
            f"\n{line}" if _NUMBERED_RE.match(line.strip()) and index and lines[index - 1].strip() else line
            for index, line in enumerate(lines)
        ]
    return "\n".join(lines)


def _remove_lines(lines: list[str], pattern: re.Pattern) -> list[str]:
    """Lines without those matching `pattern`; the blank lines around a removed line go too, so a
    paragraph broken by a page header reads on."""
    kept: list[str] = []
    skip_blank = False
    for line in lines:
        if pattern.fullmatch(line.strip()):
            while kept and not kept[-1].strip():
                kept.pop()
            skip_blank = True
        elif skip_blank and not line.strip():
            continue
        else:
            kept.append(line)
            skip_blank = False
    return kept


def rejoin_syllables(text: str, vocabulary: set[str]) -> str:
    """`In-di-ans` -> `Indians`: join a hyphenated token when the joined word occurs unhyphenated in
    the books (`vocabulary`, lower case) or when it has 3+ parts of at most 4 letters each
    (`Kas-kas-ki-a`); real compounds (`strange-looking`, `twenty-five`) stay."""

    def join(match: re.Match) -> str:
        token = match.group(0)
        parts = token.split("-")
        joined = "".join(parts)
        if joined.lower() in vocabulary or (len(parts) >= 3 and max(map(len, parts)) <= 4):
            return joined
        return token

    return _HYPHENATED_RE.sub(join, text)


def is_pupil_paragraph(paragraph: str) -> bool:
    """False for teacher and editorial notes, footnotes, tables and word lists (spelling drills)."""
    if _NOT_PUPIL_TEXT_RE.match(paragraph):
        return False
    if len(_TABLE_RE.findall(paragraph)) >= 3:
        return False
    lines = paragraph.split("\n")
    return not (len(lines) >= 4 and count_words(paragraph) / len(lines) <= 2)


def informational_passages(
    raw: bytes, encoding: str, spec: BookSpec, vocabulary: set[str], where: str
) -> list[str]:
    """All candidate passages of one school book."""
    text = strip_gutenberg(decode_book(raw, encoding_hint(encoding)))
    body = book_body(text, spec, where)
    if spec.rejoin:
        body = rejoin_syllables(body, vocabulary)
    body = _SIDENOTE_RE.sub("", _DROP_CAP_RE.sub(r"\1", body))
    body = _MARKUP_RE.sub(r"\2", _CONTRACTION_RE.sub(r"\1n't", body.translate(_TYPOGRAPHY)))
    paragraphs = [
        _LETTER_NOTE_RE.sub("", p) if p is not None and is_pupil_paragraph(p) else None
        for p in book_paragraphs(body)
    ]
    return chunk_paragraphs(paragraphs)


def book_author(raw_text: str, pg_id: str) -> str:
    found = _AUTHOR_RE.search(raw_text)
    if found:
        return found.group(1)
    if pg_id in AUTHORS:
        return AUTHORS[pg_id]
    raise ValueError(f"book {pg_id}: no 'Author:' line and no entry in AUTHORS")


def coarse_genre(genre: str) -> str:
    """The manifest's genre ('informational (history/biography)') as informational / literature / mixed."""
    head = genre.split()[0].lower()
    return {"informational": "informational", "literary": "literature", "mixed": "mixed"}.get(head, head)


def read_manifest(source: Path) -> pd.DataFrame:
    path = source / FOLDER / "manifest.tsv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the real data has no {FOLDER}/ folder")
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)


def book_rows(source: Path, per_book: int = PER_BOOK) -> list[dict]:
    """At most `per_book` passages per book (seeded, spread across the book), split unassigned."""
    manifest = read_manifest(source)
    books = manifest[manifest["file"].str.startswith("gutenberg/")]
    raws = {b.file: (source / FOLDER / b.file).read_bytes() for b in books.itertuples(index=False)}
    vocabulary: set[str] = set()
    for book in books.itertuples(index=False):
        text = decode_book(raws[book.file], encoding_hint(book.encoding))
        vocabulary |= {word.lower() for word in _WORD_RE.findall(_HYPHENATED_RE.sub(" ", text))}
    rows = []
    for book in books.itertuples(index=False):
        if book.band not in BOOK_BANDS:
            raise ValueError(f"{book.file}: band {book.band!r} is not one of {BOOK_BANDS}")
        stem = Path(book.file).stem
        pg_id = stem.split("_")[0]
        spec = BOOK_SPECS.get(pg_id, BookSpec())
        candidates = list(
            enumerate(informational_passages(raws[book.file], book.encoding, spec, vocabulary, book.file))
        )
        author = book_author(decode_book(raws[book.file], encoding_hint(book.encoding)), pg_id)
        for index, text in spread_sample(candidates, per_book, rng(f"graded_informational:{stem}")):
            rows.append(
                {
                    "id": f"gi-{pg_id}-{index:04d}",
                    "text": text,
                    "source": stem,
                    "source_kind": "gutenberg",
                    "genre": coarse_genre(book.genre),
                    "label": book.grade_or_age,
                    "band": book.band,
                    "split": None,
                    "n_words": count_words(text),
                    "split_group": f"author:{author_key(author)}",
                    "pg_id": pg_id,
                    "label_basis": "inferred" if book.evidence.startswith("inferred") else "stated",
                }
            )
    return rows


def split_books(rows: list[dict]) -> int:
    """BOUNDARY passages -> 'boundary'; K5 and BEYOND author groups -> train or validation whole.

    The K5 and BEYOND passages go through CommonCoreText-PD's `assign_splits` (salted hash of the
    group, first salt with 20-40% of each band's passages in validation); returns that salt.
    """
    labelled = [row for row in rows if row["band"] != "BOUNDARY"]
    salt = assign_splits(labelled)
    for row in rows:
        if row["band"] == "BOUNDARY":
            row["split"] = "boundary"
    return salt


def informational_rows(source: Path, per_book: int = PER_BOOK) -> tuple[list[dict], int]:
    rows = book_rows(source, per_book)
    salt = split_books(rows)
    return [{name: row[name] for name in FIELDS} for row in rows], salt


# --- ARC ----------------------------------------------------------------------------------------

_OPTIONS_RE = re.compile(r"^(.*?)\s*\((?:A|1)\)\s.*\((?:B|2)\)", re.DOTALL)


def arc_stem(question: str) -> str:
    """The stem of an ARC `question` cell ('stem (A) ... (B) ...' or '(1) ... (2) ...')."""
    found = _OPTIONS_RE.match(question)
    stem = found.group(1) if found else question
    return " ".join(stem.split())


def arc_band(grade: int) -> str:
    if 3 <= grade <= 5:
        return "K5"
    if 6 <= grade <= 9:
        return "BEYOND"
    raise ValueError(f"ARC schoolGrade {grade} is outside 3-9")


def arc_stems(folder: str | Path) -> pd.DataFrame:
    """Every usable ARC stem from a folder of the ARC CSVs (flat, or in ARC-Easy/ and ARC-Challenge/).

    One row per question: `id` (questionID), `text` (the stem, options and answer dropped),
    `grade` (schoolGrade), `band` (3-5 K5, 6-9 BEYOND), `split` (Train -> train, Dev/Test ->
    validation), `arc_set`, `arc_split`, `exam`, `year`, `n_words`. Stems under ARC_MIN_WORDS words
    and stems that occur more than once (in any file, at any grade) are left out, so no stem is on
    both sides or carries two grades.
    """
    folder = Path(folder)
    frames = []
    for name in ARC_FILES:
        subset = name.rsplit("-", 1)[0]
        path = next((p for p in (folder / name, folder / subset / name) if p.is_file()), None)
        if path is None:
            raise FileNotFoundError(f"ARC file {name} is missing under {folder} (nor in {folder / subset})")
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        missing = [c for c in ("questionID", "schoolGrade", "question", "examName", "year") if c not in frame]
        if missing:
            raise ValueError(f"{path} lacks columns {missing}")
        frame["arc_set"], frame["arc_split"] = subset, name.rsplit("-", 1)[1].removesuffix(".csv")
        frames.append(frame)
    arc = pd.concat(frames, ignore_index=True)
    texts = [arc_stem(q) for q in arc["question"]]
    counts = Counter(" ".join(t.lower().split()) for t in texts)
    rows = []
    for record, text in zip(arc.itertuples(index=False), texts, strict=True):
        grade = int(record.schoolGrade)
        if count_words(text) < ARC_MIN_WORDS or counts[" ".join(text.lower().split())] > 1:
            continue
        rows.append(
            {
                "id": record.questionID,
                "text": text,
                "grade": grade,
                "band": arc_band(grade),
                "split": ARC_SPLITS[record.arc_split],
                "arc_set": record.arc_set,
                "arc_split": record.arc_split,
                "exam": record.examName,
                "year": record.year,
                "n_words": count_words(text),
            }
        )
    return pd.DataFrame(rows, columns=list(ARC_FIELDS))


def arc_extract(stems: pd.DataFrame, per_band: dict[str, int] = ARC_PER_BAND) -> list[dict]:
    """The shipped extract: per band and split, a seeded sample of ids, in id order."""
    chosen = []
    for (band, split), group in stems.groupby(["band", "split"], sort=True):
        ids = sorted(group["id"])
        if len(ids) > per_band[split]:
            ids = sorted(rng(f"arc:{band}:{split}").sample(ids, per_band[split]))
        chosen.extend(ids)
    picked = stems[stems["id"].isin(set(chosen))].sort_values("id")
    return [{name: getattr(r, name) for name in ARC_FIELDS} for r in picked.itertuples(index=False)]


# --- build --------------------------------------------------------------------------------------


def count_table(rows: list[dict], column: str = "split") -> str:
    """Markdown table of passages (and books) per band and split."""
    counts: dict[str, Counter] = defaultdict(Counter)
    books: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        counts[row["band"]][row[column]] += 1
        books[row["band"]][row[column]].add(row.get("source"))
    lines = ["| band | split | books | passages |", "|---|---|---|---|"]
    for band in sorted(counts, key=lambda b: BOOK_BANDS.index(b) if b in BOOK_BANDS else 9):
        for split in SPLITS:
            if counts[band][split]:
                lines.append(f"| {band} | {split} | {len(books[band][split])} | {counts[band][split]} |")
    lines.append(f"| all | | {len({r['source'] for r in rows})} | {len(rows)} |")
    return "\n".join(lines)


def book_table(source: Path, rows: list[dict]) -> str:
    manifest = read_manifest(source)
    per_book = Counter(row["source"] for row in rows)
    split_of = {row["source"]: (row["split"], row["split_group"]) for row in rows}
    lines = [
        "| band | split | split group | file | passages | repository @ commit (path) | evidence |",
        "|---|---|---|---|---|---|---|",
    ]
    books = manifest[manifest["file"].str.startswith("gutenberg/")]
    order = {band: i for i, band in enumerate(BOOK_BANDS)}
    for book in sorted(books.itertuples(index=False), key=lambda b: (order[b.band], b.file)):
        stem = Path(book.file).stem
        split, group = split_of.get(stem, ("-", "-"))
        evidence = book.evidence.replace("|", "/")
        lines.append(
            f"| {book.band} | {split} | `{group}` | `{stem}` | {per_book[stem]} | "
            f"{book.source_repo} @ {book.commit[:8]} (`{book.upstream_path}`) | {evidence} |"
        )
    return "\n".join(lines)


def arc_count_table(rows: list[dict]) -> str:
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in rows:
        counts[(row["band"], row["split"])][row["grade"]] += 1
    lines = ["| band | split | stems | by grade |", "|---|---|---|---|"]
    for (band, split), grades in sorted(counts.items()):
        by_grade = ", ".join(f"{g}: {n}" for g, n in sorted(grades.items()))
        lines.append(f"| {band} | {split} | {sum(grades.values())} | {by_grade} |")
    lines.append(f"| all | | {len(rows)} | |")
    return "\n".join(lines)


def build_graded_informational(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    source, out = Path(source), Path(out)
    rows, salt = informational_rows(source)
    folder = out / FOLDER
    write_jsonl(folder / "passages.jsonl", rows, log, BOOKS_SOURCE)
    validation = sorted({r["split_group"] for r in rows if r["split"] == "validation"})
    manifest = read_manifest(source)
    arc_files = manifest[manifest["file"].str.startswith("arc/")]
    arc_sources = "\n".join(
        f"| `{a.upstream_path}` | {a.source_repo} @ {a.commit[:8]} | {a.grade_or_age} |"
        for a in arc_files.itertuples(index=False)
    )
    counts = {"passages": len(rows)}
    if SHIP_ARC:
        stems = arc_stems(source / FOLDER / "arc")
        extract = arc_extract(stems)
        write_jsonl(folder / "arc/stems.jsonl", extract, log, ARC_SOURCE)
        write_bytes(
            folder / "arc/LICENSE_CC-BY-SA-4.0.md",
            (source / CC_BY_SA_TEXT).read_bytes(),
            log,
            CC_BY_SA_SOURCE,
        )
        write_text(
            folder / "arc/SOURCE.md",
            ARC_MD.format(
                n=len(extract),
                usable=len(stems),
                counts=arc_count_table(extract),
                sources=arc_sources,
                train=ARC_PER_BAND["train"],
                validation=ARC_PER_BAND["validation"],
                min_words=ARC_MIN_WORDS,
            ),
            log,
            "littlekit.databuild",
        )
        counts["arc_stems"] = len(extract)
    text = SOURCE_MD.format(
        n=len(rows),
        per_book=PER_BOOK,
        min_words=MIN_WORDS,
        max_words=MAX_WORDS,
        counts=count_table(rows),
        books=book_table(source, rows),
        salt=salt,
        validation=", ".join(f"`{g}`" for g in validation),
        arc=ARC_NOTE if SHIP_ARC else NO_ARC_NOTE,
    )
    write_text(folder / "SOURCE.md", text, log, "littlekit.databuild")
    return counts


SOURCE_MD = """\
# graded_informational/: grade-labelled school books (K5 / BEYOND / BOUNDARY)

`passages.jsonl`: {n} passages of 31 public-domain school and children's books (nature study,
science readers, geography, health, history, school readers), from `graded_informational/` of
the real data. It is meant for a K-5-vs-beyond classifier that learns **grade, not genre**: both
sides are mostly informational text. Fields, in the shape of `commoncoretext_pd/`: `id, text,
source (the book's file name), source_kind (gutenberg), genre (informational|literature|mixed),
label (the grade or age the book gives, as quoted in the source manifest), band
(K5|BEYOND|BOUNDARY), split (train|validation|boundary), n_words, split_group (the unit the split
assigns), pg_id (Project Gutenberg id), label_basis (stated|inferred)`.

{counts}

## Labels: one per book, from the book itself

Every passage inherits its book's band, which the source manifest took from the book's own title
page, preface or introduction (quoted under *evidence* below; `label_basis` is `inferred` where
no grade is printed and the band follows from a convention, e.g. McGuffey reader number = grade).

- `K5`: the book says it is for primary grades or classes, beginners in reading, "little" pupils
  or readers, ages 6-9, UK Standard I or the third-reader grade; McGuffey First to Third Readers.
- `BEYOND`: for secondary or high schools, the upper grammar grades or upper grades, ages 12-14;
  McMaster's *School History* and McGuffey's *Sixth Reader* (inferred).
- `BOUNDARY`: weak evidence ("for children", no grade or age), a span across grade 5/6
  ("intermediate and upper grades"), or a read-aloud for small children in adult prose.
  **BOUNDARY passages are never training labels**: they have split `boundary`, not `train` or
  `validation`. Use them as a held-out ambiguous set, or relabel them after reading.

## How each book became passages

1. Decoded with the manifest's encoding (Latin-1 as cp1252, BOM dropped, CRLF -> LF, NFC) and the
   Project Gutenberg header and footer stripped, as for `commoncoretext_pd/`
   (`littlekit.databuild.gutenberg`).
2. Front and back matter cut by a per-book table of body markers (`BOOK_SPECS` in
   `littlekit/databuild/informational.py`; each marker must occur in its file): the body starts
   at the first lesson or chapter (after title pages, prefaces and "To the Teacher" notes,
   contents, pronunciation drills of the McGuffey readers) and ends before indexes, glossaries,
   appendices for teachers, the Declaration and Constitution appended to McMaster, tables,
   publishers' lists and transcribers' notes. Books without a start marker use the
   CommonCoreText rule (from the first `CHAPTER I` in the first quarter). *The Child's Book of
   Nature* drops the publisher's list, preface and contents of its Parts II and III. The McGuffey
   *Third Reader*'s page headers are removed; *First Lessons in Geography*'s lesson headings are
   removed so its short catechism lessons can form passages.
3. *Stories of Great Americans for Little Americans* prints words split into syllables: a
   hyphenated token is joined when the joined word occurs unhyphenated somewhere in the 31 books,
   or when it has three or more parts of at most four letters (`Kas-kas-ki-a`); compounds such as
   `strange-looking` stay. In every book: McGuffey's spaced contractions (`do n't`) are closed
   (`don't`); curly quotes become straight ones and em dashes `--` (the UTF-8 transcriptions have
   them, the Latin-1 and ASCII ones do not, so they would tell books apart, not grades); the
   transcribers' emphasis marks (`%bold%`, `*italic*`, `~term~`, `=bold=`), footnote marks
   (`[B]`, `[A3]`) and `[Sidenote: ...]` tags are removed; drop-cap illustrations
   (`[Illustration: L]ITTLE`) keep their letter. The McGuffey *Third Reader* does not separate its
   numbered paragraphs by blank lines, so there a numbered line or a lesson heading starts one.
4. Paragraphs as for `commoncoretext_pd/` (headings, contents, all-caps lines and boilerplate are
   breaks; `[Illustration: ...]` removed; verse keeps its line breaks), and also dropped as breaks:
   definitions, notes and suggestions for the teacher, footnotes, tables and word lists (spelling
   drills: four or more lines of at most two words a line on average).
5. Consecutive paragraphs joined to passages of {min_words}-{max_words} words that never cross a break;
   at most {per_book} passages per book, one drawn from each of {per_book} equal stretches of the book
   with a generator seeded by the book's file name (books with fewer candidates give all of them).

## Split

`split` assigns whole `split_group`s, an author (`author:<surname>` from the file's Gutenberg
`Author:` line): the two *Nature Readers* go together, as do the two *Look About You* books and
the McGuffey readers (First to Third K5, Sixth BEYOND), so no author is on both sides. The K5 and
BEYOND passages are split by CommonCoreText-PD's rule: a group is in validation when
`sha256("<salt>:<group>") mod 100 < 30`, with the first salt for which each band has 20-40% of its
passages in validation (salt {salt}). BOUNDARY books are `boundary`, whatever their author.

Validation groups: {validation}. Every other K5 and BEYOND group is train.

## Books

{books}

Repositories are `GITenberg/<repo>` at the commit shown, the file at the repository root.

## Licence

Public domain in the USA (each repository's `metadata.yaml`: `rights: Public domain in the
USA.`). Public-domain status is for the USA only: some authors died after 1953 (Burgess in 1965,
I. M. Lewis in 1966), so a few books may still be in copyright in life+70 countries. The Project
Gutenberg licence and trademark cover the PG-branded file; the header, footer and every paragraph
mentioning Project Gutenberg are removed here, which leaves the public-domain text.

## Known weaknesses

- The labels are per book and coarse: a K5 book's hardest lesson is K5 here. The books are
  1850s-1920s (dated spelling and science, temperance moralising, period racial and ethnic
  language); the Chambers and *Look About You* books are British. A classifier trained only on
  this also learns "old text": mix it with modern text on both sides.
- Review questions and question-and-answer drills are pupil text and are kept, so some passages
  are lists of questions; both sides have them, the K5 side more.
- *First Lessons in Geography* (a question-and-answer catechism whose `Q.`/`A.` lines the
  all-caps rule mostly drops) gives 8 passages and McGuffey's *First Reader* 31.
- Only six BEYOND books (four train, two validation) against fifteen K5 books: the BEYOND side
  is narrow, and a validation score on it rests on two books.
- Body markers were checked by reading the start and end of each book's passages; stray
  non-pupil text (a blackboard outline in *Object Lessons*, an author's note in a McGuffey
  reader) can remain.

{arc}
"""

ARC_NOTE = """\
## ARC question stems: `arc/`

`arc/stems.jsonl` is a small extract of ARC science-exam question stems with the grade of the
exam each came from (3-5 -> K5, 6-9 -> BEYOND). Its licence is CC BY-SA 4.0 (© AI2, share-alike),
not public domain: see `arc/SOURCE.md` and `arc/LICENSE_CC-BY-SA-4.0.md`.
"""

NO_ARC_NOTE = """\
## ARC question stems

Not shipped (`SHIP_ARC = False`): `corpora.load_arc(path=...)` reads the ARC CSVs from a folder
the user gives.
"""

ARC_MD = """\
# graded_informational/arc/: ARC question stems with school grades (extract)

`stems.jsonl`: {n} question stems of the AI2 Reasoning Challenge (ARC), a small extract (of
{usable} usable stems; ARC has 7,787 questions). Fields: `id` (ARC questionID), `text` (the
question stem), `grade` (`schoolGrade`: the grade of the real state or national science exam the
question came from), `band` (grade 3-5 -> `K5`, 6-9 -> `BEYOND`; ARC has no K-2), `split` (ARC
Train -> `train`, Dev and Test -> `validation`), `arc_set` (ARC-Easy|ARC-Challenge), `arc_split`
(Train|Dev|Test), `exam` (examName), `year`, `n_words`.

{counts}

## What was taken and how

- The stem only: the answer options (`(A) ...` or `(1) ...`) and the answer key are dropped. The
  options are a multiple-choice format, not running text, and without them the extract cannot be
  used as the ARC benchmark.
- Stems under {min_words} words and stems that occur more than once in ARC (66 rows, some at two
  grades or in two ARC splits) are left out, so no stem is on both sides or carries two labels.
- Per band, a seeded sample of {train} stems from the Train files and {validation} from the Dev and
  Test files together; the split follows ARC's own (whole ARC splits, never a question on both
  sides). ARC-Challenge questions were filtered to be hard, so difficulty and grade are confounded
  in them; `arc_set` lets you leave them out. Grade 8 dominates ARC.
- `littlekit.databuild.corpora.load_arc(path=...)` reads **all** the stems, by the same rules,
  from a folder of the ARC CSVs the user has (AI2's download, or `graded_informational/arc/` of
  the real data).

| file | repository @ commit | grades |
|---|---|---|
{sources}

The repository (RazvanDu/TemporalRNNs) has no licence file; the same questions are AI2's
`allenai/ai2_arc`.

## Licence: CC BY-SA 4.0, and a conflicting note

ARC © Allen Institute for AI (AI2), licensed **CC BY-SA 4.0** (the Hugging Face dataset card
`allenai/ai2_arc`, `license: cc-by-sa-4.0`; AI2's ARC page, allenai.org/data/arc: "License: CC
BY-SA"). This extract is a derivative (stems cut from the questions) and is shared under the same
licence, `LICENSE_CC-BY-SA-4.0.md` (the licence's legal code). Cite: Clark, P., Cowhey, I.,
Etzioni, O., Khot, T., Sabharwal, A., Schoenick, C., & Tafjord, O. (2018). Think you have Solved
Question Answering? Try ARC, the AI2 Reasoning Challenge. arXiv:1803.05457.

**Conflict.** The same AI2 page also says "This data should not be distributed except by the Allen
Institute for Artificial Intelligence (AI2) ... This data is to be used for non-commercial,
research purposes only." The real data's README allows only a small extract, with this
attribution and notice, rather than the full CSVs, or a person's confirmation. So the project ships
this extract of stems ({n} of 7,787 questions, no options or answers) and reads the full set from
the user's own copy. A person should confirm the decision before any release; setting `SHIP_ARC =
False` in `littlekit/databuild/informational.py` builds `data/` without this folder. Treat the
extract as non-commercial, research use unless that is settled.
"""
