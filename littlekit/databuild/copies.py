"""Datasets shipped nearly as they are: GSM8K, MathCAMPS, OneStopEnglish and the Dolch words."""

from __future__ import annotations

import json
from pathlib import Path

from littlekit.databuild.common import BuildLog, read_jsonl, write_bytes, write_jsonl, write_text

GSM8K_SOURCE = "openai/grade-school-math@3101c7d5"
MATHCAMPS_SOURCE = "gpoesia/mathcamps@46593eb0"
ONESTOP_SOURCE = "nishkalavallabhi/OneStopEnglishCorpus@37f8db39"
DOLCH_SOURCE = "nltk/nltk_data@5db857e6 corpora/dolch"
DOLCH_FILES = ("adjectives", "adverbs", "conjunctions", "nouns", "prepositions", "pronouns", "verbs")


def build_gsm8k(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    counts = {}
    for name in ("train.jsonl", "test.jsonl"):
        data = (source / "gsm8k" / name).read_bytes()
        write_bytes(out / "gsm8k" / name, data, log, GSM8K_SOURCE)
        counts[name] = data.count(b"\n")
    write_bytes(out / "gsm8k/LICENSE", (source / "gsm8k/LICENSE.txt").read_bytes(), log, GSM8K_SOURCE)
    write_text(
        out / "gsm8k/SOURCE.md",
        GSM8K_MD.format(**{k.split(".")[0]: v for k, v in counts.items()}),
        log,
        "littlekit.databuild",
    )
    return counts


def build_mathcamps(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    problems = json.loads((source / "mathcamps/mathcamps.json").read_text(encoding="utf-8"))
    write_jsonl(out / "mathcamps/mathcamps.jsonl", problems, log, MATHCAMPS_SOURCE)
    write_bytes(
        out / "mathcamps/LICENSE", (source / "mathcamps/LICENSE.txt").read_bytes(), log, MATHCAMPS_SOURCE
    )
    n_standards = len({p["standard"] for p in problems})
    write_text(
        out / "mathcamps/SOURCE.md",
        MATHCAMPS_MD.format(n=len(problems), standards=n_standards),
        log,
        "littlekit.databuild",
    )
    return {"problems": len(problems)}


def build_onestop(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    rows = [
        {"id": r["id"], "level": r["level"], "text": r["text"].replace("\r\n", "\n")}
        for r in read_jsonl(source / "onestopenglish/onestopenglish_3levels.jsonl")
    ]
    write_jsonl(out / "onestopenglish/onestop.jsonl", rows, log, ONESTOP_SOURCE)
    write_bytes(
        out / "onestopenglish/LICENSE.md",
        (source / "onestopenglish/LICENSE.md").read_bytes(),
        log,
        ONESTOP_SOURCE,
    )
    articles = len({r["id"] for r in rows})
    write_text(
        out / "onestopenglish/SOURCE.md",
        ONESTOP_MD.format(n=len(rows), articles=articles),
        log,
        "littlekit.databuild",
    )
    return {"texts": len(rows)}


def dolch_words(folder: Path) -> list[str]:
    """All Dolch words (the 220 service words and the 95 nouns), lower-cased, sorted, unique."""
    words = set()
    for name in DOLCH_FILES:
        words |= {line.strip().lower() for line in (folder / name).read_text(encoding="utf-8").splitlines()}
    words.discard("")
    return sorted(words)


def build_wordlists(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    words = dolch_words(source / "wordlists/dolch")
    write_text(out / "wordlists/dolch.txt", "\n".join(words), log, DOLCH_SOURCE)
    write_text(out / "wordlists/SOURCE.md", DOLCH_MD.format(n=len(words)), log, "littlekit.databuild")
    return {"dolch": len(words)}


GSM8K_MD = """\
# gsm8k/: Grade School Math 8K

`train.jsonl` ({train} problems) and `test.jsonl` ({test}), byte-for-byte copies of
openai/grade-school-math @ 3101c7d5 (`grade_school_math/data/`). Each line is
`{{"question", "answer"}}`; answers show the working with `<<calc>>` annotations and end in `#### N`.

Licence: MIT, © 2021 OpenAI (`LICENSE`, copied from upstream).
Cobbe, K., et al. (2021). Training Verifiers to Solve Math Word Problems. arXiv:2110.14168.
"""

MATHCAMPS_MD = """\
# mathcamps/: MathCAMPS v1

`mathcamps.jsonl`: the {n} problems of `mathcamps.json` from gpoesia/mathcamps @ 46593eb0, one JSON
object per line, fields and order unchanged (`id, standard, statement, answer, type, followup_to`),
over {standards} CCSS math standards (K-8). Nothing was filtered: the paper's evaluation filters
(standards with < 30 unique answers, answers quoted in the question, 6.EE.B.7) are applied by the
evaluation code, not here.

Licence: MIT (`LICENSE`, copied from upstream).
Mishra, S., Poesia, G., et al. (2024). MathCAMPS: Fine-grained Synthesis of Mathematical Problems
From Human Curricula. arXiv:2407.00900.
"""

ONESTOP_MD = """\
# onestopenglish/: OneStopEnglish

`onestop.jsonl`: {n} texts, {articles} articles each written at three levels, `{{"id", "level",
"text"}}` with `level` in `ele` (elementary), `int` (intermediate), `adv` (advanced). From
`onestopenglish_3levels.jsonl` (flattened from nishkalavallabhi/OneStopEnglishCorpus @ 37f8db39,
`Texts-SeparatedByReadingLevel/`); `level_num` dropped, text unchanged.

The levels are for adult learners of English (Guardian news rewritten by onestopenglish.com), not
school grades, so no grade band is given.

Licence: CC BY-SA 4.0 (`LICENSE.md`, copied from upstream). Cite: Vajjala, S., & Lučić, I. (2018).
OneStopEnglish corpus: A new corpus for automatic readability assessment and text simplification.
*Proceedings of BEA@NAACL 2018*, 297-304.
"""

DOLCH_MD = """\
# wordlists/: Dolch sight words

`dolch.txt`: the {n} Dolch words, one per line, lower-cased and sorted: the 220 "service" words
(adjectives, adverbs, conjunctions, prepositions, pronouns, verbs) and the 95 nouns, merged from the
part-of-speech files of nltk/nltk_data @ 5db857e6 (`corpora/dolch`). A word listed under two parts of
speech appears once.

Dolch, E. W. (1936). A basic sight vocabulary. *The Elementary School Journal*, 36(6), 456-460.
The list is in the public domain.
"""
