"""Grading MathCAMPS answers: the rules of MathCAMPS' own grader, with its known slips fixed.

It lives in the curriculum, below `littlekit.evals`, because the curriculum's audit grades every
generated record with it; the evaluations import it from here.

We follow `evaluate.py` of gpoesia/mathcamps (commit 2d601cbe: `extract_answer`,
`infer_answer_extractor`, `grade_prediction`, `compare_floats`):
- the answer line is the text after the first `Answer:` if there is one, else the last (non-empty)
  line of the completion;
- thousands separators are dropped ("1,234" is 1234), LaTeX `\\frac{a}{b}` reads as a/b;
- the gold answer decides the kind: `<`, `>`, `=` is a comparison (the first of those symbols on
  the answer line); `[...]` or `{...}` is a set (all numbers on the line, order-free, compared
  with all numbers of the gold: factor pairs, the values of a system's solution); a gold with `/`
  is an exact fraction; a gold with `.` a decimal; otherwise an integer;
- for the other kinds the first number on the answer line is the prediction, whatever words,
  units or currency surround it; "3 1/2", "7/2" and "3.5" are the same number;
- a fraction gold equals a decimal prediction within 1e-6 (upstream's `abstol`);
- a percentage "p%" reads as p/100 (upstream), and, where the gold is p itself ("how many
  percent ..."), as p.
Where we differ from upstream, on purpose: negative numbers keep their sign (upstream's number
pattern drops it, so -5 matched 5); commas only count as thousands separators in groups of three
("(1,6)" is two numbers); an integer gold accepts any equal value ("14/2", "7.0"); a decimal is
compared at the precision of the gold, read without its trailing zeros (MathCAMPS stores decimals
with 15 significant digits, "27.3000000000000"): a short gold (<= 6 decimals, an exact decimal)
needs the prediction to round to it at that precision; a long gold (a rounded repeating decimal)
accepts a prediction with at least 2 decimals within one unit of its own last decimal place
(rounded or truncated). Upstream accepted any prediction whose decimals, all but the last, start
the gold's, so "3.9" passed for 3.14.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

KINDS = ("comparison", "set", "fraction", "decimal", "integer")
LONG_DECIMALS = 6  # a gold with more decimals than this is a rounded repeating decimal
MIN_DECIMALS_FOR_LONG = 2
FRACTION_TOLERANCE = Fraction(1, 10**6)

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>(?<![\w)])-)?\s*"
    r"(?:(?P<whole>\d+)\s+(?=\d+\s*/\s*\d))?"
    r"(?P<int>\d+)(?:\.(?P<dec>\d+))?(?:\s*/\s*(?P<den>\d+))?"
    r"(?P<pct>\s*%)?"
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_FRAC_LATEX = re.compile(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}")
_MIXED_AND = re.compile(r"(\d)\s+and\s+(?=\d+\s*/\s*\d)")
_COMPARISON_WORDS = (("less than", "<"), ("greater than", ">"), ("more than", ">"), ("equal", "="))


class Number(NamedTuple):
    """A number read from text: its exact value, its decimals as written, and whether it had %."""

    value: Fraction
    decimals: int
    percent: bool
    text: str


def answer_kind(gold: str) -> str:
    """The kind of a gold answer: comparison, set, fraction, decimal or integer."""
    gold = gold.strip()
    if not gold:
        raise ValueError("empty gold answer")
    if gold in {"<", ">", "="}:
        return "comparison"
    if gold[0] in "[{":
        return "set"
    if "/" in gold:
        return "fraction"
    if "." in gold:
        return "decimal"
    return "integer"


def answer_line(completion: str) -> str:
    """The text after the first `Answer:` (to the end of its line), else the last non-empty line."""
    found = re.search(r"Answer:(.*)", completion)
    if found:
        return found.group(1).strip()
    lines = [line.strip() for line in completion.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def normalise(text: str) -> str:
    """Unicode minus to '-', LaTeX fractions to a/b, "3 and 1/2" to "3 1/2", thousands commas out."""
    text = text.replace("\u2212", "-").replace("\u2013", "-")
    text = _FRAC_LATEX.sub(r"\1/\2", text)
    text = _MIXED_AND.sub(r"\1 ", text)
    return _THOUSANDS.sub("", text)


def numbers(text: str) -> list[Number]:
    """Every number in `text`, left to right (fractions with a zero denominator are skipped)."""
    out = []
    for match in _NUMBER.finditer(normalise(text)):
        den = match["den"]
        if den is not None and int(den) == 0:
            continue
        value = Fraction(f"{match['int']}.{match['dec']}") if match["dec"] else Fraction(int(match["int"]))
        if den is not None:
            value /= int(den)
        if match["whole"]:
            value += int(match["whole"])
        if match["sign"]:
            value = -value
        decimals = len(match["dec"]) if match["dec"] and den is None else 0
        out.append(Number(value, decimals, bool(match["pct"]), match.group(0).strip()))
    return out


def gold_value(gold: str) -> Number:
    """The one number a non-set, non-comparison gold answer holds."""
    found = numbers(gold)
    if len(found) != 1:
        raise ValueError(f"gold answer {gold!r} should hold exactly one number, found {len(found)}")
    return found[0]


def significant_decimals(number: Number) -> int:
    """Decimals of a written decimal without its trailing zeros ("27.3000" -> 1)."""
    if number.decimals == 0:
        return 0
    return len(number.text.split(".")[1].rstrip("%").strip().rstrip("0"))


def decimal_matches(prediction: Number, gold: Number) -> bool:
    """A decimal prediction against a decimal gold, at the gold's precision (see the module doc)."""
    gold_decimals = significant_decimals(gold)
    if gold_decimals == 0:  # an integer-valued decimal gold, "87.0000000000000"
        return prediction.value == gold.value
    if gold_decimals <= LONG_DECIMALS:
        return abs(prediction.value - gold.value) * 2 * 10**gold_decimals < 1 and prediction.decimals >= 1
    if prediction.decimals < MIN_DECIMALS_FOR_LONG:
        return False
    return abs(prediction.value - gold.value) <= Fraction(1, 10**prediction.decimals)


def value_matches(prediction: Number, gold: Number, kind: str) -> bool:
    """One predicted number against the gold number of a fraction, decimal or integer answer."""
    candidates = [prediction]
    if prediction.percent:
        candidates = [
            prediction._replace(value=prediction.value / 100, decimals=prediction.decimals + 2),
            prediction,
        ]
    for candidate in candidates:
        if kind == "decimal" and decimal_matches(candidate, gold):
            return True
        if (
            kind == "fraction"
            and candidate.decimals
            and abs(candidate.value - gold.value) < FRACTION_TOLERANCE
        ):
            return True
        if kind in {"fraction", "integer"} and candidate.value == gold.value:
            return True
    return False


def predicted_comparison(line: str) -> str | None:
    """The first of <, >, = on the line, else the first comparison written in words."""
    found = re.search(r"[<>=]", line)
    if found:
        return found.group(0)
    lowered = line.lower()
    hits = [(lowered.find(words), sign) for words, sign in _COMPARISON_WORDS if words in lowered]
    return min(hits)[1] if hits else None


def grade(completion: str, gold: str) -> bool:
    """Whether a model's completion answers a MathCAMPS question whose gold answer is `gold`."""
    kind = answer_kind(gold)
    line = answer_line(completion)
    if kind == "comparison":
        return predicted_comparison(line) == gold.strip()
    if kind == "set":
        expected = {n.value for n in numbers(gold)}
        return bool(expected) and {n.value for n in numbers(line)} == expected
    found = numbers(line)
    return bool(found) and value_matches(found[0], gold_value(gold), kind)


def answer_in_question(statement: str, answer: str, whole_number: bool = True) -> bool:
    """Whether the gold answer appears verbatim in the question; with `whole_number`, only where it
    is not part of a longer number ("7" in "76" or "0.7" does not count)."""
    if not whole_number:
        return answer in statement
    pattern = r"(?<![\d.])" + re.escape(answer) + r"(?!\d|\.\d)"
    return re.search(pattern, statement) is not None


def answer_in_statement(statement: str, answer: str) -> bool:
    """The generator's degenerate-problem rule: a numeric answer that appears in the statement as a
    whole number (`answer_in_question`, MathCAMPS' filter). Comparisons and lists are not checked
    (their symbols and members belong in the question)."""
    if answer in {"<", ">", "="} or answer.startswith("["):
        return False
    return answer_in_question(statement, answer)
