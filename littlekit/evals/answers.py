"""The evaluations' answer graders: MathCAMPS' numbers and Jeopardy's responses.

MathCAMPS answers (`grade`, `answer_kind`, `numbers`, ...): the rules of MathCAMPS' own grader
with its known slips fixed, written out in `littlekit.curriculum.answers`, whose audit grades
every generated record with them; import them from there.

Jeopardy responses (`grade_response`, `littlekit.evals.jeopardy.grade`): the completion's first
line, up to its first sentence end, is normalised (`normalise_answer`: lowercase, accents and HTML
removed, "what is / who are ..." framing, articles and punctuation dropped, number words as
digits); it is correct when its words equal the words of one gold variant or begin with them (the
gold as whole words at the start: "trunk of the elephant" counts for "the trunk"). Gold variants
(`gold_variants`) come from Jeopardy's conventions: "(the) Beagle" -> optional part dropped and
kept, "Hawaii (or the Aloha State)" and "a or b" -> aliases, "(1 of) a, b or c" -> any one item.
A period after a single letter or an abbreviation ("Dr.", "H.G.") does not end the answer.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["HTML_TAG", "first_answer", "gold_variants", "grade_response", "normalise_answer"]


# --- Jeopardy responses ---------------------------------------------------------------------------

HTML_TAG = re.compile(r"<[^>]{0,200}>")  # also stripped from the clues as they are read
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
    text = unicodedata.normalize("NFKD", HTML_TAG.sub(" ", text))
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
    text = HTML_TAG.sub(" ", response)
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


def grade_response(completion: str, response: str) -> bool:
    """True when the completion's answer equals a gold variant or begins with it as whole words."""
    answer = normalise_answer(first_answer(completion)).split()
    if not answer:
        return False
    for gold in gold_variants(response):
        words = gold.split()
        if answer[: len(words)] == words:
            return True
    return False
