"""The demo corpus: real web documents mixed with graded text, so every filter has work to do."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd

from littlekit.databuild.chunking import spread_sample
from littlekit.databuild.common import BuildLog, read_jsonl, rng, write_bytes, write_jsonl, write_text
from littlekit.databuild.openstax import OPENSTAX_BUNDLES, bundle_passages
from littlekit.grades import grade_to_band

N_TINYSTORIES = 600
# The cased TinyStories subset; the lower-cased copy (tinystories_lowercased_Arnoochka_derived.jsonl)
# would teach the classifiers and the models that children's text is lower case.
TINYSTORIES_CASED = "webtext/tinystories_val_subset_yuninxia.txt"
TINYSTORIES_OPENER = "Once upon a time"
N_ONESTOP_ARTICLES = 60
N_GSM8K = 300
N_MATHCAMPS_PER_STANDARD = 8
N_CLEAR = 300
N_OPENSTAX = 150
_WIKI_TITLE_RE = re.compile(r"^ = ([^=].*?) = $", re.MULTILINE)


def tinystories_stories(raw: str) -> list[str]:
    """The cased TinyStories file as stories. The file runs stories together, paragraphs separated
    by blank lines and no marker between stories, so a story starts at each paragraph opening with
    "Once upon a time" (most do); a story opening otherwise stays attached to the one before it.
    The text before the first such paragraph (the end of a story cut off by the subset) is dropped."""
    paragraphs = [p.strip() for p in raw.replace("\r\n", "\n").split("\n\n") if p.strip()]
    stories: list[list[str]] = []
    for paragraph in paragraphs:
        if paragraph.startswith(TINYSTORIES_OPENER):
            stories.append([paragraph])
        elif stories:
            stories[-1].append(paragraph)
    return ["\n\n".join(story) for story in stories]


def clean(text: str) -> str:
    """Line endings normalised; the text is otherwise kept as is (the filters must see real web text)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def doc(source: str, text: str, band: str | None = None) -> dict:
    return {"id": None, "text": clean(text), "source": source, "band": band}


def wikitext_articles(raw: str) -> list[str]:
    """WikiText-2 raw split at its top-level ` = Title = ` headings (one article each)."""
    starts = [m.start() for m in _WIKI_TITLE_RE.finditer(raw)]
    return [raw[a:b].strip() for a, b in zip(starts, starts[1:] + [len(raw)], strict=True)]


def web_docs(source: Path) -> list[dict]:
    web = source / "webtext"
    docs = []
    with (web / "fineweb_edu_sample10BT_150.csv").open(encoding="utf-8", newline="") as handle:
        docs += [doc("fineweb_edu", row["text"]) for row in csv.DictReader(handle)]
    seen: set[str] = set()
    for name in ("dclm_human_quality_agreement_data.jsonl", "dclm_human_quality_majority_data.jsonl"):
        for row in read_jsonl(web / name):
            if row["text"] not in seen:
                seen.add(row["text"])
                docs.append(doc("dclm", row["text"]))
    for name in ("dolma_tests_cc_en_head-0091.jsonl", "dolma_tests_cc_en_head-0174.jsonl"):
        docs += [doc("dolma_cc", row["text"]) for row in read_jsonl(web / name)]
    articles = json.loads(
        (web / "scrapinghub_article_extraction_ground_truth.json").read_text(encoding="utf-8")
    )
    docs += [doc("scrapinghub", articles[key]["articleBody"]) for key in sorted(articles)]
    raw = (web / "wikitext-2-raw_wiki.test.raw").read_text(encoding="utf-8")
    docs += [doc("wikitext2", article) for article in wikitext_articles(raw)]
    return [d for d in docs if d["text"]]


def graded_docs(source: Path, clear: pd.DataFrame) -> list[dict]:
    docs = []
    stories = tinystories_stories((source / TINYSTORIES_CASED).read_text(encoding="utf-8"))
    docs += [
        doc("tinystories", story, "K5")
        for story in spread_sample(stories, N_TINYSTORIES, rng("demo:tinystories"))
    ]
    onestop = read_jsonl(source / "onestopenglish/onestopenglish_3levels.jsonl")
    articles = sorted({row["id"] for row in onestop})
    picked = set(rng("demo:onestop").sample(articles, N_ONESTOP_ARTICLES))
    docs += [doc(f"onestopenglish:{row['level']}", row["text"]) for row in onestop if row["id"] in picked]
    gsm8k = read_jsonl(source / "gsm8k/train.jsonl")
    docs += [doc("gsm8k", row["question"]) for row in spread_sample(gsm8k, N_GSM8K, rng("demo:gsm8k"))]
    docs += mathcamps_docs(source)
    for record in spread_sample(list(clear.itertuples(index=False)), N_CLEAR, rng("demo:clear")):
        docs.append(doc("clear", record.text, record.band if isinstance(record.band, str) else None))
    passages = [
        p for bundle in OPENSTAX_BUNDLES for p in bundle_passages(source / f"openstax/{bundle}.jsonl")
    ]
    docs += [
        doc("openstax", p["text"], "OOS") for p in spread_sample(passages, N_OPENSTAX, rng("demo:openstax"))
    ]
    return docs


def mathcamps_docs(source: Path) -> list[dict]:
    """Original MathCAMPS problems, a few per standard, banded by the standard's grade."""
    problems = json.loads((source / "mathcamps/mathcamps.json").read_text(encoding="utf-8"))
    by_standard: dict[str, list[dict]] = {}
    for problem in problems:
        if problem["type"] == "original-problem":
            by_standard.setdefault(problem["standard"], []).append(problem)
    docs = []
    for standard in sorted(by_standard):
        grade = standard.split(".")[0]
        chosen = spread_sample(
            by_standard[standard], N_MATHCAMPS_PER_STANDARD, rng(f"demo:mathcamps:{standard}")
        )
        docs += [doc(f"mathcamps:{standard}", p["statement"], grade_to_band(grade)) for p in chosen]
    return docs


def demo_rows(source: Path, clear: pd.DataFrame) -> list[dict]:
    """All demo documents, shuffled with a fixed seed, with ids `demo-00000`, ..."""
    docs = web_docs(source) + graded_docs(source, clear)
    rng("demo:order").shuffle(docs)
    for number, row in enumerate(docs):
        row["id"] = f"demo-{number:05d}"
    return docs


def build_demo(source: Path, out: Path, log: BuildLog, clear: pd.DataFrame) -> dict[str, int]:
    rows = demo_rows(source, clear)
    write_jsonl(out / "demo_corpus/demo_web.jsonl", rows, log, "several; see demo_corpus/SOURCE.md")
    for licence in sorted((source / "webtext/licenses").iterdir()):
        write_bytes(
            out / "demo_corpus/licenses" / licence.name, licence.read_bytes(), log, "webtext/licenses"
        )
    counts: dict[str, int] = {}
    for row in rows:
        key = row["source"].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    bands: dict[str, int] = {}
    for row in rows:
        bands[str(row["band"])] = bands.get(str(row["band"]), 0) + 1
    table = "\n".join(f"| `{name}` | {counts[name]} |" for name in sorted(counts))
    band_table = "\n".join(f"| {name} | {bands[name]} |" for name in sorted(bands))
    write_text(
        out / "demo_corpus/SOURCE.md",
        SOURCE_MD.format(n=len(rows), table=table, bands=band_table),
        log,
        "littlekit.databuild",
    )
    return {"docs": len(rows)}


SOURCE_MD = """\
# demo_corpus/: a small mixed corpus for the filter demos

`demo_web.jsonl`: {n} documents `{{"id", "text", "source", "band"}}`, shuffled with a fixed seed.
Real web text (which every filter stage should mostly drop) mixed with graded text (some of which
it should keep). `band` is given only where the source fixes it; otherwise it is null.

| source | documents |
|---|---|
{table}

| band | documents |
|---|---|
{bands}

## Sources, licences and choices

- `fineweb_edu`: all 150 FineWeb-Edu `sample-10BT` documents of Mohamed-Elsafty23/fineweb-edu-scorer
  @ d5e08528. FineWeb-Edu: ODC-BY 1.0 (HuggingFaceFW). Band null.
- `dclm`: the 780 Common Crawl documents with human quality labels of mlfoundations/dclm @ 361714bd
  (agreement + majority files, exact duplicates dropped). Repository MIT; text from Common Crawl.
- `dolma_cc`: 20 Common Crawl documents from allenai/dolma @ 669f5348 test fixtures (Apache-2.0).
- `scrapinghub`: 181 news/article bodies from scrapinghub/article-extraction-benchmark @ 4a3bc979
  (MIT).
- `wikitext2`: the WikiText-2 raw test split (Tylogi/TyloQuant @ 7989d038) cut into one document per
  article at its ` = Title = ` headings, kept in WikiText's tokenised form (` @-@ `, spaces before
  punctuation). CC BY-SA 3.0 / GFDL (Merity et al., 2016).
- `tinystories`: 600 stories (seeded, spread) of the cased TinyStories validation subset of
  yuninxia/moe-routing-bench @ bb9bb0bd (`tinystories_val_subset_yuninxia.txt`). The file runs the
  stories together, so a story starts at each paragraph opening with "Once upon a time" (714 of
  them); a story opening otherwise stays attached to the one before. The lower-cased copy
  (Arnoochka/Transformer-Parallelism @ 911b9e73) is not used: it would teach the classifiers and
  the models that children's text is lower case. Band K5 (stories written for a 3-4 year old's
  vocabulary). TinyStories: CDLA-Sharing-1.0 (Eldan & Li, 2023).
- `onestopenglish:<level>`: all three levels of 60 articles (seeded) of OneStopEnglish (CC BY-SA 4.0,
  see `onestopenglish/SOURCE.md`). Band null: the levels grade adult English learners, not school
  grades, and the articles are adult news.
- `gsm8k`: 300 training questions (spread sample) of GSM8K (MIT). Band null: the authors describe
  the problems as needing 2-8 steps and solvable by "a bright middle school student", which spans
  K5 and K8 with no per-problem grade.
- `mathcamps:<standard>`: up to 8 original (non-follow-up) problems per MathCAMPS standard (MIT);
  band from the standard's grade (K-5 -> K5, 6-8 -> K8).
- `clear`: 300 CLEAR excerpts (spread sample over all 4,724, so some have the ambiguous Lexile range
  and band null); band as in `clear/clear.csv`. **CC BY-NC-SA 4.0**, Crossley et al.
- `openstax`: 150 passages (80-300 words) from the OpenStax books, band OOS, CC BY 4.0
  ("Access for free at openstax.org").

Encodings: every source decodes as UTF-8. Line endings are
LF; web text is otherwise unchanged so that the filters meet its boilerplate, lists and markup.
`licenses/` holds the licence files of the repositories the web samples came from.
"""
