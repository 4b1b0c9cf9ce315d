"""OpenStax college science modules -> 80-300 word passages (band OOS)."""

from __future__ import annotations

import re
from pathlib import Path

from littlekit.databuild.chunking import chunk_paragraphs, count_words
from littlekit.databuild.common import read_jsonl

OPENSTAX_BUNDLES: dict[str, str] = {
    "anatomy-physiology": "openstax/osbooks-anatomy-physiology@b0058a74",
    "chemistry-bundle": "openstax/osbooks-chemistry-bundle@32c71962",
    "college-physics-bundle": "openstax/osbooks-college-physics-bundle@f98d7a79",
}
MAX_MATH_SHARE = 0.02
_SENTENCE_END = (".", "!", "?", ")", '"', "”")
# AP editions interleave curriculum-framework boxes that are lists of codes, not textbook prose
_FRAMEWORK_RE = re.compile(
    r"^(Essential Knowledge|Learning Objective|Science Practice|Enduring Understanding|Big Idea)\b"
)


def is_prose(paragraph: str) -> bool:
    """False for headings, learning-objective lists and other fragments without a sentence end."""
    words = paragraph.split()
    if _FRAMEWORK_RE.match(paragraph):
        return False
    return len(words) >= 8 and paragraph.rstrip().endswith(_SENTENCE_END)


def math_share(text: str) -> float:
    """Fraction of a passage's words that are `[math]` placeholders for removed equations."""
    return text.count("[math]") / max(count_words(text), 1)


def module_passages(text: str, seen: set[str]) -> list[str]:
    """Passages of one module; paragraphs already seen in the bundle (reused modules) break runs."""
    paragraphs: list[str | None] = []
    for raw in re.split(r"\n\s*\n", text):
        paragraph = " ".join(raw.split())
        if not paragraph or not is_prose(paragraph) or paragraph in seen:
            paragraphs.append(None)
            continue
        seen.add(paragraph)
        paragraphs.append(paragraph)
    return [p for p in chunk_paragraphs(paragraphs) if math_share(p) <= MAX_MATH_SHARE]


def bundle_passages(path: Path) -> list[dict]:
    """Every passage of a bundle file in module order: {module_id, book, title, text}."""
    seen: set[str] = set()
    passages = []
    for module in read_jsonl(path):
        for index, text in enumerate(module_passages(module["text"], seen)):
            passages.append(
                {
                    "module_id": module["module_id"],
                    "index": index,
                    "book": module["book"],
                    "title": module["title"],
                    "text": text,
                }
            )
    return passages


SOURCE_NOTE = """\
OpenStax *Anatomy and Physiology 2e*, *Chemistry 2e* (bundle with *Chemistry: Atoms First 2e*) and
*College Physics 2e* (bundle with *College Physics for AP Courses 2e*), from openstax/osbooks-*
at their last CC BY 4.0 commits (anatomy-physiology @ b0058a74, chemistry-bundle @ 32c71962,
college-physics-bundle @ f98d7a79). Licence: CC BY 4.0. Attribution: "Access for free at
openstax.org", © OpenStax, Rice University. Math in the source modules was replaced by `[math]`
before it reached us; passages where such placeholders exceed 2% of the words are skipped,
paragraphs that are not sentences (headings, learning objectives) break passages, and paragraphs
repeated across the two books of a bundle are used once."""
