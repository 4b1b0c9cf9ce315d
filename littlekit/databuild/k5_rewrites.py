"""`k5_rewrites/`: K-5 versions of real web passages, each paired with its original in `judge_labels/`.

The real data's `k5_rewrites/rewrites.jsonl` is copied record by record, in its order, with the
fields of its format (`id, text, text_sha256, band, source, form, source_id, source_band, corpus,
origin, url, licence`; empty fields dropped). Every record is checked: the required fields are
there, `text` matches `text_sha256`, `band` is K5 and ids are unique; a bad record raises a
ValueError naming the file, the line and the id. The rule of `judge_labels/` applies: records whose
licence is non-commercial (NC) are left out, and `SOURCE.md` counts them. The rewrites are training
labels only, never validation and never pretraining text; a rewrite and its original share a fold
by `source_id`.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

from littlekit.databuild.common import BuildLog, json_lines, write_bytes, write_text
from littlekit.databuild.judge_labels import is_non_commercial
from littlekit.grades import BANDS
from littlekit.judge.labels import text_sha256

FOLDER = "k5_rewrites"
SOURCE_FILE = "rewrites.jsonl"
REWRITES_FILE = "rewrites.jsonl.gz"
FIELDS = (
    "id", "text", "text_sha256", "band", "source", "form", "source_id", "source_band", "corpus",
    "origin", "url", "licence",
)
REQUIRED = ("id", "text", "text_sha256", "band", "source_id", "licence")
BAND = "K5"
SOURCE_NAME = "k5_rewrites/rewrites.jsonl (LLM rewrites of judge_labels passages, see its README)"


def read_records(path: Path) -> list[dict]:
    """The rewrites, each checked: required fields, text matching its SHA-256, band K5, unique id."""
    records: list[dict] = []
    seen: dict[str, int] = {}
    for number, record in json_lines(path):
        where = f"{path}:{number}: record {record.get('id')!r}"
        missing = [key for key in REQUIRED if not isinstance(record.get(key), str) or not record[key]]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(missing)}")
        if text_sha256(record["text"]) != record["text_sha256"]:
            raise ValueError(f"{where} has no text matching text_sha256")
        if record["band"] != BAND:
            raise ValueError(f"{where} has band {record['band']!r}, not {BAND}")
        if record["id"] in seen:
            raise ValueError(f"{where} repeats the id of line {seen[record['id']]}")
        seen[record["id"]] = number
        records.append({key: record[key] for key in FIELDS if record.get(key) not in (None, "")})
    return records


def build_k5_rewrites(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    """Copy the shippable rewrites into `out/k5_rewrites/rewrites.jsonl.gz` and write its SOURCE.md."""
    records = read_records(Path(source) / FOLDER / SOURCE_FILE)
    shipped = [r for r in records if not is_non_commercial(r["licence"])]
    left_out = Counter(r.get("corpus", "") for r in records if is_non_commercial(r["licence"]))
    target = out / FOLDER
    lines = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in shipped)
    # gzip with no name and no time in its header, so two builds write the same bytes
    data = gzip.compress(lines.encode("utf-8"), compresslevel=9, mtime=0)
    write_bytes(target / REWRITES_FILE, data, log, SOURCE_NAME)
    write_text(target / "SOURCE.md", source_md(shipped, left_out), log, "littlekit.databuild")
    return {"records": len(shipped), "left_out_nc": sum(left_out.values())}


def _table(header: str, counts: Counter) -> str:
    rows = [f"| {name} | {n} |" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join([header, "|---|---|", *rows, f"| all | {sum(counts.values())} |"])


def source_md(records: list[dict], left_out: Counter) -> str:
    """The folder's SOURCE.md: what the rewrites are, how they were made, counts, licences, use."""
    by_corpus: dict[str, Counter] = {}
    for record in records:
        by_corpus.setdefault(record.get("corpus", ""), Counter())[record.get("source_band", "")] += 1
    order = {band: i for i, band in enumerate(BANDS)}
    seen = {band for c in by_corpus.values() for band in c}
    source_bands = sorted(seen, key=lambda band: (order.get(band, len(order)), band))
    corpus_rows = [
        f"| {corpus} | {sum(c.values())} | " + " | ".join(str(c[b]) for b in source_bands) + " |"
        for corpus, c in sorted(by_corpus.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    ]
    total = Counter()
    for c in by_corpus.values():
        total.update(c)
    corpus_rows.append(f"| all | {len(records)} | " + " | ".join(str(total[b]) for b in source_bands) + " |")
    forms = Counter(r.get("form", "") for r in records)
    licences = Counter(r["licence"] for r in records)
    n_left = sum(left_out.values())
    nc = ", ".join(f"{corpus} {n}" for corpus, n in sorted(left_out.items()))
    if n_left:
        left = f"the {n_left} records whose licence is non-commercial (CC BY-NC / BY-NC-SA: {nc})"
    else:
        left = "none: no record of this build has a non-commercial (NC) licence"
    band_header = " | ".join(f"original {b}" for b in source_bands)
    return f"""# k5_rewrites/: K-5 versions of real web passages, paired with their originals

`rewrites.jsonl.gz` (gzip-compressed JSON lines): {len(records):,} passages written for US grade 3-5
readers, each a version of one real web passage of `judge_labels/labels.jsonl.gz` (web text from
DCLM, FineWeb, FineWeb-Edu, RefinedWeb, C4, Dolma, Common Crawl, news, and Simple English
Wikipedia) that the judge labelled K8 or K12. The original stays in `judge_labels/` with its band
(`source_id` is its `id`), so each pair holds the topic fixed and varies the reading level: what a
grade classifier trained on stories and school books misses. Every record is labelled `band` K5.
`littlekit.databuild.corpora.load_k5_rewrites` reads it.

## How they were made

An LLM writer, briefed as a writer for a children's magazine and kids' news site, read each source
passage and, where the topic can honestly be explained to a child of 8-10, wrote a version a typical
grade 3-5 pupil could read alone: the same topic and true facts of the passage (details may be
dropped, terms explained, only common knowledge added), 80-220 words, mostly short sentences and
everyday words, subject content within the elementary standards, in the form that fits the source
(`form`). No template, program or word list produced any text. About half of the source passages
were skipped as unsuitable for children (adult, violent, legal, financial, medical, spam,
navigation, or needing Beyond-K-5 science). Measured blind on a sample of the first 1,349 (120
rewrites mixed with 120 judge-labelled web passages under random ids, labelled by an independent
judge pass with `judge_labels/RUBRIC.md`): 117 of 120 rewrites were judged K5 (3 K8). Writers
re-read their work and removed the 4 versions with a slip they found (a wrong fact, an invented
quote or name); a few dozen others add a detail of general knowledge that the source does not state
(a state inferred from its towns, a well-known date) and were kept. The real data's
`k5_rewrites/README.md` gives the details.

Built by `littlekit data build` from the real data's `k5_rewrites/rewrites.jsonl`, record by record
in its order; every record is checked (required fields, `text` matching `text_sha256`, band K5,
unique id). Records whose licence is non-commercial are left out, by the rule of `judge_labels/`
(an original left out there has the same licence, so its rewrite is left out here too).
Left out: {left}.
Each record carries its original's terms (field `licence`); attribute the original's source.

## Fields

`id` (`rw-<source_id>`), `text`, `text_sha256` (SHA-256 of the UTF-8 text), `band` (K5), `source`
(`llm-rewrite`), `form`, `source_id` (the original's `id` in `judge_labels/`), `source_band` (the
original's judge band), `corpus`, `origin` (repository@commit:path of the original), `url` (dropped
where the original has none) and `licence`: the original's, per record. A rewrite is a derivative of
its source passage and carries the same terms.

## Use: training labels only

- Training labels beside `judge_labels/`, **never validation**: a rewrite and its original must share
  a fold (group by `source_id`), and text shared with a validation passage must be removed as for
  any label.
- **Never pretraining text** and never evidence about what the web holds: they are written text, not
  text found on the web. Report results with and without them.

## Counts by source corpus and the original's band

| source corpus | rewrites | {band_header} |
|---|---|{"---|" * len(source_bands)}
{chr(10).join(corpus_rows)}

{_table("| form | rewrites |", forms)}

## Licences (per record, field `licence`: the original's)

{_table("| licence | rewrites |", licences)}
"""
