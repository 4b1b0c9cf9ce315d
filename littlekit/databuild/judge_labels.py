"""`judge_labels/`: passages an LLM judge labelled one by one with the paper's four bands.

The real data's `judge_labels/labels.jsonl` is copied record by record, in its order, with the
fields the judge's label format has plus provenance (`corpus`, `origin`, `url`, `licence`, and
`book`, `level`, `genre`, `genre_basis` for children's books; empty fields dropped). Records whose
licence is non-commercial (NC) are left out, so everything in the folder may be redistributed
commercially with attribution; `SOURCE.md` counts what was left out. The rubric and the judge's
measured quality (`quality.json`) are copied unchanged.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

from littlekit.databuild.common import BuildLog, json_lines, write_bytes, write_text
from littlekit.judge.labels import text_sha256

FOLDER = "judge_labels"
LABELS_FILE = "labels.jsonl.gz"
FIELDS = (
    "id", "text", "text_sha256", "band", "votes", "judge", "source", "corpus", "origin", "url",
    "licence", "book", "level", "genre", "genre_basis",
)
# Which judge corpora are web text, the text a FineWeb-Edu run meets: crawl text, and the wikis
WEB_CRAWL_CORPORA = (
    "c4", "commoncrawl", "dclm", "dolma_cc", "fineweb", "fineweb_edu", "news_benchmark", "refinedweb",
)
WIKI_CORPORA = ("simplewiki", "wikijunior")
WEB_CORPORA = (*WEB_CRAWL_CORPORA, *WIKI_CORPORA)
NON_COMMERCIAL = re.compile(r"\bNC\b|-NC\b")
SOURCE_NAME = "judge_labels/labels.jsonl (LLM judge, see its README)"


def is_non_commercial(licence: str | None) -> bool:
    """Whether a licence string names a non-commercial (NC) Creative Commons licence."""
    return bool(licence) and bool(NON_COMMERCIAL.search(str(licence)))


def read_records(path: Path) -> list[dict]:
    """The judge's records, each checked: known fields, text matching its SHA-256."""
    records = []
    for number, record in json_lines(path):
        text = record.get("text")
        if not isinstance(text, str) or text_sha256(text) != record.get("text_sha256"):
            raise ValueError(f"{path}:{number}: record {record.get('id')!r} has no text matching text_sha256")
        records.append({key: record[key] for key in FIELDS if record.get(key) not in (None, "")})
    return records


def build_judge_labels(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    """Copy the shippable judge labels, the rubric and the quality figures into `out/judge_labels/`."""
    folder = Path(source) / FOLDER
    records = read_records(folder / "labels.jsonl")
    shipped = [r for r in records if not is_non_commercial(r.get("licence"))]
    left_out = Counter(r["corpus"] for r in records if is_non_commercial(r.get("licence")))
    target = out / FOLDER
    lines = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in shipped)
    # gzip with no name and no time in its header, so two builds write the same bytes
    data = gzip.compress(lines.encode("utf-8"), compresslevel=9, mtime=0)
    write_bytes(target / LABELS_FILE, data, log, SOURCE_NAME)
    for name in ("RUBRIC.md", "quality.json"):
        write_text(target / name, (folder / name).read_text(encoding="utf-8"), log, f"judge_labels/{name}")
    quality = json.loads((folder / "quality.json").read_text(encoding="utf-8"))
    write_text(target / "SOURCE.md", source_md(shipped, left_out, quality), log, "littlekit.databuild")
    return {"records": len(shipped), "left_out_nc": sum(left_out.values())}


def source_md(records: list[dict], left_out: Counter, quality: dict) -> str:
    """The folder's SOURCE.md: what the labels are, counts per corpus and band, licences."""
    bands = ("K5", "K8", "K12", "OOS")
    counts: dict[str, Counter] = {}
    licences: dict[str, Counter] = {}
    for record in records:
        counts.setdefault(record["corpus"], Counter())[record["band"]] += 1
        licences.setdefault(record["corpus"], Counter())[record.get("licence", "")] += 1
    rows = [
        f"| {corpus} | {sum(c.values())} | " + " | ".join(str(c[b]) for b in bands) + " |"
        for corpus, c in sorted(counts.items())
    ]
    licence_rows = [
        f"| {corpus} | " + "; ".join(f"{name} ({n})" for name, n in sorted(c.items())) + " |"
        for corpus, c in sorted(licences.items())
    ]
    precision, recall = quality["k5_precision"], quality["k5_recall"]
    agreement = quality["exact_band_agreement_on_repeats"]
    nc = ", ".join(f"{corpus} {n}" for corpus, n in sorted(left_out.items())) or "none"
    return f"""# judge_labels/: passages labelled by an LLM judge with the paper's four bands

`labels.jsonl.gz` (gzip-compressed JSON lines): {len(records):,} passages (web text, Simple
English Wikipedia and Wikijunior, openly licensed children's books with publisher levels, and the
train and boundary passages of `graded_informational/`), each labelled K5, K8, K12 or OOS by an LLM
judge that read it and applied `RUBRIC.md` (the paper's bands and three signals: language, context
and subject content; highest band wins, ties go to the higher band). It stands in for the paper's
Gemini judge ensemble, which cannot run offline. The records are in `littlekit.judge`'s label format
with their `text` (at most 1,500 characters, cut at a sentence end) and provenance: `corpus`,
`origin` (repository@commit:path), `url`, `licence`, and `book`, `level`, `genre`, `genre_basis` for
children's books. `littlekit.fit.labels.load_labels` reads it.

Built by `littlekit data build` from the real data's `judge_labels/` (its README describes how the
judge worked). Left out: the {sum(left_out.values())} records whose licence is non-commercial
(CC BY-NC / BY-NC-SA: {nc}),
so every record here may be redistributed with attribution.

## The judge's measured quality (`quality.json`)

Measured blind on {quality["calibration_n"]} CommonCoreText-PD validation passages mixed into its
batches (they are not in this file): K-5 precision {precision[0]}/{precision[1]} = \
{precision[0] / precision[1]:.2f}, K-5 recall {recall[0]}/{recall[1]} = {recall[0] / recall[1]:.2f} \
(conservative by design: unsure means the higher band). Passages judged twice: exact band agreement
{agreement[0]}/{agreement[1]} = {agreement[0] / agreement[1]:.2f}.

## Counts by corpus and band

| corpus | passages | K5 | K8 | K12 | OOS |
|---|---|---|---|---|---|
{chr(10).join(rows)}

## Licences (per record, field `licence`)

| corpus | licences (records) |
|---|---|
{chr(10).join(licence_rows)}

Sources: DCLM pool pages (CodeCreator/WebOrganizer@87b50f388bf4, mlfoundations/dclm@361714bdd60b;
CC BY 4.0 and Common Crawl terms), FineWeb (TurkuNLP/LLM_document_descriptors@09246a3db004, ODC-BY
1.0), FineWeb-Edu (Mohamed-Elsafty23/fineweb-edu-scorer@d5e08528a97e,
tqmsh/FastText-trainer-finewebedu-climate@9640574c2f87, ODC-BY 1.0), RefinedWeb
(TurkuNLP/register-qa@b001e860fe9b, ODC-BY 1.0), C4 (allenai/OLMo@59a53e3f68e5, ODC-BY 1.0), Dolma
(allenai/dolma@669f534823b0, ODC-BY 1.0), Common Crawl pages (ham-zhao/fineweb-pipeline@4bba6a3dcb6c,
Common Crawl terms), news articles (scrapinghub/article-extraction-benchmark@4a3bc979f76c: MIT; the
article text is its publishers'), Simple English Wikipedia (mathematiguy/SDG-Global-Village@afab6d248da8,
taminemelissa/quiz-generator@d21d03334ce8; CC BY-SA 3.0), Wikijunior (saeub/item-evaluation@c6332925bd19;
CC BY-SA), StoryWeaver (Shashankss1205/DMP, elimu-ai/webapp; CC BY 4.0), African Storybook
(global-asp/asp-source@99e022369a98; per story), Book Dash (bookdash/bookdash-books@54916310c5c0;
CC BY 4.0), Global Digital Library and Let's Read (elimu-ai/webapp; per record), graded_informational
(this folder's sibling `graded_informational/`; public domain). Web documents sharing two or more
10-word sequences with the evaluation texts the project keeps were dropped before judging; nothing
comes from WeeBit, OneStopEnglish, CLEAR, CoMTA, TinyStories or LLM-generated text.
"""
