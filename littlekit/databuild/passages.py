"""CommonCoreText-PD: graded passages from public-domain CCSS exemplar books, CLEAR and OpenStax.

Every passage carries a train/validation split that assigns whole sources (an author's books, an
OpenStax book) to one side, so no validation source is ever seen in training.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pandas as pd

from littlekit.databuild.chunking import count_words, spread_sample
from littlekit.databuild.clear import mapping_table
from littlekit.databuild.common import BuildLog, rng, stable_hash, write_bytes, write_jsonl, write_text
from littlekit.databuild.gutenberg import book_passages
from littlekit.databuild.openstax import OPENSTAX_BUNDLES, SOURCE_NOTE, bundle_passages

GUTENBERG_BANDS = {"K-1": "K5", "2-3": "K5", "4-5": "K5", "6-8": "K8", "9-10": "K12", "11-12": "K12"}
BAND_FOLDERS = {
    "K-1": "band_K_1",
    "2-3": "band_2_3",
    "4-5": "band_4_5",
    "6-8": "band_6_8",
    "9-10": "band_9_10",
    "11-12": "band_11_12",
}
INFORMATIONAL_BOOKS = frozenset({"frederick_douglass_narrative", "walden", "common_sense"})
PER_BOOK = 40
PER_OPENSTAX_BUNDLE = 150
PER_CLEAR_LEXILE_RANGE = 400
VALIDATION_SHARE = 0.30
FIELDS = ("id", "text", "source", "source_kind", "genre", "label", "band", "split", "n_words", "split_group")


def author_key(author: str) -> str:
    """A split group for an author: the first author's surname, accents and initials ignored.

    'Aesop (tr. G. F. Townsend)' -> 'aesop', 'Louisa M. Alcott.' -> 'alcott',
    'Guy de Maupassant Translated by ...' -> 'maupassant'.
    """
    text = unicodedata.normalize("NFKD", str(author)).encode("ascii", "ignore").decode().lower().strip()
    text = re.sub(r"^by\s+", "", text)
    text = re.split(r"\(|\btranslated\b", text)[0]
    first = re.split(r"[,&;]|\band\b", text)[0]
    tokens = re.findall(r"[a-z]+", first)
    return tokens[-1] if tokens else "unknown"


def passage(
    pid: str, text: str, source: str, kind: str, genre: str, label: str, band: str, group: str
) -> dict:
    return {
        "id": pid,
        "text": text,
        "source": source,
        "source_kind": kind,
        "genre": genre,
        "label": label,
        "band": band,
        "split": None,
        "n_words": count_words(text),
        "split_group": group,
    }


def gutenberg_rows(source: Path) -> list[dict]:
    folder = source / "commoncore_gutenberg"
    manifest = pd.read_csv(folder / "manifest.tsv", sep="\t", dtype=str)
    rows = []
    for book in manifest.itertuples(index=False):
        raw = (folder / BAND_FOLDERS[book.band] / f"{book.short}.txt").read_bytes()
        candidates = list(enumerate(book_passages(raw, book.encoding)))
        genre = "informational" if book.short in INFORMATIONAL_BOOKS else "literature"
        for index, text in spread_sample(candidates, PER_BOOK, rng(f"gutenberg:{book.short}")):
            rows.append(
                passage(
                    f"gut-{book.short}-{index:04d}",
                    text,
                    book.short,
                    "gutenberg",
                    genre,
                    book.band,
                    GUTENBERG_BANDS[book.band],
                    f"author:{author_key(book.author)}",
                )
            )
    return rows


def clear_rows(clear: pd.DataFrame) -> list[dict]:
    """Unambiguous CLEAR excerpts, at most PER_CLEAR_LEXILE_RANGE per Lexile range (seeded)."""
    usable = clear[~clear["ambiguous"]]
    chosen: list[int] = []
    for label, group in usable.groupby("lexile_range", sort=True):
        ids = sorted(int(i) for i in group["id"])
        if len(ids) > PER_CLEAR_LEXILE_RANGE:
            ids = sorted(rng(f"clear:{label}").sample(ids, PER_CLEAR_LEXILE_RANGE))
        chosen.extend(ids)
    picked = usable[usable["id"].isin(set(chosen))].sort_values("id")
    rows = []
    for record in picked.itertuples(index=False):
        genre = "literature" if record.category == "Lit" else "informational"
        row = passage(
            f"clear-{int(record.id)}",
            record.text,
            f"clear:{int(record.id)}",
            "clear",
            genre,
            record.lexile_range,
            record.band,
            f"author:{author_key(record.author)}",
        )
        if 80 <= row["n_words"] <= 300:
            rows.append(row)
    return rows


def openstax_rows(source: Path) -> list[dict]:
    rows = []
    for bundle in OPENSTAX_BUNDLES:
        candidates = bundle_passages(source / f"openstax/{bundle}.jsonl")
        for item in spread_sample(candidates, PER_OPENSTAX_BUNDLE, rng(f"openstax:{bundle}")):
            rows.append(
                passage(
                    f"openstax-{bundle}-{item['module_id']}-{item['index']}",
                    item["text"],
                    f"openstax:{bundle}:{item['module_id']}",
                    "openstax",
                    "informational",
                    "college",
                    "OOS",
                    f"openstax:{bundle}",
                )
            )
    return rows


def split_problems(rows: list[dict]) -> list[str]:
    """Why a split is not acceptable (empty list = acceptable).

    Each band's validation share of passages must lie in 20-40%, and within each (source kind,
    band) cell with two or more groups, in 15-45% with at least one validation group.
    """
    problems = []
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    by_band: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        cells[(row["source_kind"], row["band"])].append(row)
        by_band[row["band"]].append(row)
    for band, members in by_band.items():
        share = sum(r["split"] == "validation" for r in members) / len(members)
        if not 0.20 <= share <= 0.40:
            problems.append(f"band {band}: validation share {share:.2f}")
    for cell, members in cells.items():
        if len({r["split_group"] for r in members}) < 2:
            continue
        share = sum(r["split"] == "validation" for r in members) / len(members)
        if not 0.15 <= share <= 0.45:
            problems.append(f"{cell}: validation share {share:.2f}")
    return problems


def assign_splits(rows: list[dict], max_salt: int = 10_000) -> int:
    """Put whole split groups in validation by a salted hash; return the first salt that balances.

    A group goes to validation when hash(salt:group) mod 100 < 30. Salts are tried in order, so the
    result is deterministic and every band keeps roughly 30% of its passages in validation.
    """
    groups = sorted({row["split_group"] for row in rows})
    for salt in range(max_salt):
        validation = {g for g in groups if stable_hash(f"{salt}:{g}") % 100 < VALIDATION_SHARE * 100}
        for row in rows:
            row["split"] = "validation" if row["split_group"] in validation else "train"
        if not split_problems(rows):
            return salt
    raise RuntimeError("no salt gives a balanced split")


def commoncoretext_rows(source: Path, clear: pd.DataFrame) -> tuple[list[dict], int]:
    rows = gutenberg_rows(source) + clear_rows(clear) + openstax_rows(source)
    salt = assign_splits(rows)
    return [{name: row[name] for name in FIELDS} for row in rows], salt


def count_table(rows: list[dict]) -> str:
    """Markdown table of passages per source kind, band and split."""
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"train": 0, "validation": 0})
    for row in rows:
        counts[(row["source_kind"], row["band"])][row["split"]] += 1
    lines = ["| source kind | band | train | validation |", "|---|---|---|---|"]
    for (kind, band), split in sorted(counts.items()):
        lines.append(f"| {kind} | {band} | {split['train']} | {split['validation']} |")
    total = {s: sum(v[s] for v in counts.values()) for s in ("train", "validation")}
    lines.append(f"| all | | {total['train']} | {total['validation']} |")
    return "\n".join(lines)


def validation_sources(rows: list[dict]) -> str:
    """The validation side in words: Gutenberg books and OpenStax bundles by name, CLEAR by count."""
    validation = [row for row in rows if row["split"] == "validation"]
    books = sorted({row["source"] for row in validation if row["source_kind"] == "gutenberg"})
    bundles = sorted({row["split_group"] for row in validation if row["source_kind"] == "openstax"})
    clear_groups = {row["split_group"] for row in rows if row["source_kind"] == "clear"}
    clear_validation = {row["split_group"] for row in validation if row["source_kind"] == "clear"}
    named_books = ", ".join(f"`{b}`" for b in books)
    named_bundles = ", ".join(f"`{b}`" for b in bundles)
    return (
        f"Gutenberg books {named_books}; OpenStax {named_bundles}; "
        f"{len(clear_validation)} of the {len(clear_groups)} CLEAR author groups"
    )


def build_commoncoretext(source: Path, out: Path, log: BuildLog, clear: pd.DataFrame) -> dict[str, int]:
    rows, salt = commoncoretext_rows(source, clear)
    folder = out / "commoncoretext_pd"
    write_jsonl(
        folder / "passages.jsonl",
        rows,
        log,
        "commoncore_gutenberg (see SOURCE.md); scrosseye/CLEAR-Corpus@dbf1cf0d; openstax/osbooks-*",
    )
    licence = (source / "openstax/LICENSE_anatomy-physiology_at_b0058a74.txt").read_bytes()
    write_bytes(
        folder / "LICENSE_openstax_CC-BY-4.0.txt", licence, log, OPENSTAX_BUNDLES["anatomy-physiology"]
    )
    manifest = pd.read_csv(source / "commoncore_gutenberg/manifest.tsv", sep="\t", dtype=str)
    books = "\n".join(
        f"| {b.band} | `{b.short}` | {b.author} | {b.title} | {b.pg_id} | {b.repo} @ {b.commit[:8]} |"
        for b in manifest.itertuples(index=False)
    )
    text = SOURCE_MD.format(
        n=len(rows),
        counts=count_table(rows),
        books=books,
        salt=salt,
        validation=validation_sources(rows),
        openstax=SOURCE_NOTE,
        mapping=mapping_table(clear),
    )
    write_text(folder / "SOURCE.md", text, log, "littlekit.databuild")
    return {"passages": len(rows)}


SOURCE_MD = """\
# commoncoretext_pd/: CommonCoreText-PD

`passages.jsonl`: {n} graded passages, our public reconstruction of the paper's CommonCoreText (which
is not published). Fields: `id, text, source, source_kind (gutenberg|clear|openstax), genre
(literature|informational), label (the original grade label), band (K5|K8|K12|OOS), split
(train|validation), n_words (whitespace words), split_group (the unit the split assigns)`.

{counts}

## Gutenberg: public-domain CCSS exemplar books

32 books named (or commonly used) in the CCSS ELA Appendix B text exemplars, from
`commoncore_gutenberg/`. Band from the exemplar grade band: K-1, 2-3, 4-5 -> K5; 6-8 -> K8; 9-10,
11-12 -> K12. Genre informational for Douglass's *Narrative*, *Walden* and *Common Sense*,
literature otherwise.

How each book became passages:

1. Decoded with the manifest's encoding (Latin-1 files read as cp1252; a stray cp1252 byte in an
   "us-ascii" file too), BOM dropped, CRLF and CR -> LF, Unicode NFC.
2. Project Gutenberg header and footer stripped: text after the last `*** START OF THE/THIS PROJECT
   GUTENBERG ...` line (or the older `*END*THE SMALL PRINT!` line) and before the first `*** END OF
   ...`, `End of (the) Project Gutenberg ...` or `*** START: FULL LICENSE` line.
3. Paragraphs are blank-line separated blocks (a line over 200 characters is its own paragraph).
   Dropped, and treated as a break no passage runs across: headings (`CHAPTER`, `BOOK`, `ACT`,
   `SCENE`, ..., or under 12 words without sentence-final punctuation), blocks with no lower-case
   letter or over 30% all-caps words (title pages, cast lists), contents pages (most lines end in a
   number or are chapter entries), and blocks that mention Gutenberg, e-texts, transcribers,
   producers, URLs or copyright. `[Illustration: ...]` notes and `_italic_` underscores removed.
   Prose lines are joined with spaces; verse (all lines under 60 characters) keeps its line breaks.
4. Consecutive paragraphs are joined (with a blank line) until a passage has at least 80 words; a
   passage never exceeds 300 words. A paragraph over 300 words is first split at sentence ends into
   near-equal parts; a short run that cannot grow without passing 300 words is dropped.
5. At most 40 passages per book: the candidates are cut into 40 equal strata in book order and one
   is drawn from each with a generator seeded by the book's name, so the sample spreads across the
   book.

Known weaknesses: front matter that survives the rules (a translator's preface, a publisher's
notice, the title page of *Common Sense*) can be sampled; plays keep speaker names.

| band | short | author | title | PG id | repository @ commit |
|---|---|---|---|---|---|
{books}

Public domain in the USA. The Project Gutenberg licence asks that its trademark and header be
removed before text is redistributed, which step 2 does.

## CLEAR excerpts

From `clear/clear.csv` (see `clear/SOURCE.md`). Licence **CC BY-NC-SA 4.0**: these passages may be
used non-commercially only, with attribution to Crossley et al. (CLEAR corpus), and derivatives
shared alike. Ambiguous Lexile ranges (those overlapping both K5 and a Beyond-K-5 band) are left
out; at most 400 excerpts per Lexile range are kept (seeded sample); only excerpts of 80-300 words.
`label` is the Lexile range, `band` the mapped band:

{mapping}

## OpenStax (band OOS, label `college`)

{openstax}

The modules of each bundle are chunked like the Gutenberg paragraphs (80-300 words) and 150
passages per bundle are drawn spread across the bundle.

## Split

`split` assigns whole `split_group`s: an author (`author:<surname>`, shared by the Gutenberg books
and CLEAR excerpts of one author, so e.g. Carroll's CLEAR excerpts follow *Alice*, and the three
Aesop translations go together) or an OpenStax bundle. A group is in validation when
`sha256("<salt>:<group>") mod 100 < 30`; the build tries salts 0, 1, 2, ... and keeps the first for
which every band has 20-40% of its passages in validation and every (source kind, band) cell with
two or more groups has 15-45% (salt {salt}). No group is in both splits.

Validation: {validation}.
"""
