"""Conformance cases for the MathCAMPS grader, for every answer type (issue 5, acceptance 3).

Golds are written as MathCAMPS stores them (decimals with 15 significant digits, fractions a/b,
factor pairs as a list of tuples, a system's solution as a dict). Each case is a completion as a
base model would continue a prompt ending in "Answer:" (or a full reasoning trace).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from littlekit.curriculum.answers import answer_kind, answer_line, grade, numbers

# (completion, gold, correct)
CASES = {
    "answer_line": [
        ("First 3 + 4 = 7.\nAnswer: 7", "7", True),
        ("Answer: 7\nThen 7 + 1 = 8", "7", True),  # the Answer: line wins over the last line
        ("3 + 4 = 8?\nNo.\nSo 7\n\n", "7", True),  # no Answer: -> the last non-empty line
        ("The answer is 7\nbut also 9", "7", False),
        ("", "7", False),
        ("Answer: none", "7", False),
    ],
    "integer": [
        (" 42", "42", True),
        (" 42 apples", "42", True),
        (" 41", "42", False),
        (" 420", "42", False),
        (" There are 42 left.", "42", True),
        (" 42.0", "42", True),
        (" 84/2", "42", True),
        (" 42.5", "42", False),
        (" 12 + 30 = 42", "42", False),  # the first number on the line is the prediction
    ],
    "thousands": [
        (" 1,234", "1234", True),
        (" $12,345,678 dollars", "12345678", True),
        (" 1,234.50", "1234.50000000000", True),
        (" 1,23", "123", False),  # not a thousands group: two numbers, the first is 1
    ],
    "negative": [
        (" -5", "-5", True),
        (" −5", "-5", True),  # unicode minus
        (" 5", "-5", False),
        (" -5", "5", False),
        (" The temperature is -12.5 degrees", "-12.5000000000000", True),
        (" -3/4", "-3/4", True),
        (" 3/4", "-3/4", False),
        (" 10-4", "6", False),  # a difference, not a negative number: the first number is 10
    ],
    "fraction": [
        (" 7/2", "7/2", True),
        (" 14/4", "7/2", True),
        (" 3 1/2", "7/2", True),
        (" 3 and 1/2", "7/2", True),
        (" 3.5", "7/2", True),
        (r" \frac{7}{2}", "7/2", True),
        (" 7 / 2", "7/2", True),
        (" 2/7", "7/2", False),
        (" 3", "7/2", False),
        (" 0.333", "1/3", False),  # a decimal must equal the fraction within 1e-6
        (" 0.3333333", "1/3", True),
        (" 295/63 cups", "295/63", True),
        (" 1/0", "1/3", False),
    ],
    "decimal": [
        (" 27.3", "27.3000000000000", True),
        (" 27.30", "27.3000000000000", True),
        (" 27", "27.3000000000000", False),
        (" 27.4", "27.3000000000000", False),
        (" 2.73", "27.3000000000000", False),
        (" $2664.24", "2664.24000000000", True),
        (" 2664.2", "2664.24000000000", False),  # short gold: its precision is required
        (" 87", "87.0000000000000", True),
        (" 87.0", "87.0000000000000", True),
        (" 1.03", "1.03448275862069", True),  # long gold: rounded at the prediction's precision
        (" 1.034", "1.03448275862069", True),
        (" 1.0345", "1.03448275862069", True),
        (" 1.0", "1.03448275862069", False),  # fewer than 2 decimals for a long gold
        (" 1.04", "1.03448275862069", True),  # within one unit of the last place (rounding up)
        (" 1.05", "1.03448275862069", False),
        (" 3.9", "3.14000000000000", False),  # upstream accepted this
    ],
    "percent": [
        (" 45%", "45", True),  # "how much battery percentage": the gold is p
        (" 45 %", "0.450000000000000", True),  # p% as p / 100
        (" 50%", "45", False),
        (" 45", "45", True),
    ],
    "comparison": [
        (" <", "<", True),
        (" >", "<", False),
        (" (1 / 8) < (4 / 1)", "<", True),
        (" =", "=", True),
        (" 7/2 is greater than 10/6", ">", True),
        (" they are equal", "=", True),
        (" less", "<", False),
        ("Comparing them.\nAnswer: >", ">", True),
    ],
    "set": [
        (" (1, 64), (2, 32), (4, 16), (8, 8)", "[(1, 64), (2, 32), (4, 16), (8, 8)]", True),
        (" (8, 8), (4, 16), (2, 32), (1, 64)", "[(1, 64), (2, 32), (4, 16), (8, 8)]", True),
        (" 1 and 64, 2 and 32, 4 and 16, 8 and 8", "[(1, 64), (2, 32), (4, 16), (8, 8)]", True),
        (" (1, 64), (2, 32), (4, 16)", "[(1, 64), (2, 32), (4, 16), (8, 8)]", False),
        (" (1, 64), (2, 32), (4, 16), (8, 8), (3, 21)", "[(1, 64), (2, 32), (4, 16), (8, 8)]", False),
        (" q = 373/321, s = 2291/642", "{q: 373/321, s: 2291/642}", True),
        (" s = 2291/642 and q = 373/321", "{q: 373/321, s: 2291/642}", True),
        (" q = 373/321", "{q: 373/321, s: 2291/642}", False),
        (" 2, 3, 5", "[2, 3, 5]", True),
        (" 5, 3, 2", "[2, 3, 5]", True),
        (" 2, 3", "[2, 3, 5]", False),
    ],
}


@pytest.mark.parametrize(
    "completion, gold, correct",
    [case for cases in CASES.values() for case in cases],
    ids=[f"{kind}-{i}" for kind, cases in CASES.items() for i in range(len(cases))],
)
def test_conformance(completion, gold, correct):
    assert grade(completion, gold) is correct


def test_every_answer_kind_has_cases():
    kinds = {answer_kind(gold) for cases in CASES.values() for _, gold, _ in cases}
    assert kinds == {"comparison", "set", "fraction", "decimal", "integer"}
    for name, cases in CASES.items():
        assert {c for *_, c in cases} == {True, False}, f"{name} needs right and wrong cases"


def test_answer_line_rules():
    assert answer_line("work\nAnswer: 12 apples\nmore") == "12 apples"
    assert answer_line("a\n\nb  \n\n") == "b"
    assert answer_line("") == ""


def test_numbers_reads_every_form():
    read = [n.value for n in numbers("-3 1/2, 7/2, 3.25, 1,000 and 12% and −4")]
    assert read == [Fraction(-7, 2), Fraction(7, 2), Fraction(13, 4), 1000, 12, -4]
    assert [n.percent for n in numbers("12% 12")] == [True, False]


def test_bad_gold_fails_clearly():
    with pytest.raises(ValueError, match="empty gold"):
        grade(" 1", "  ")
    with pytest.raises(ValueError, match="exactly one number"):
        grade(" 1", "1 2")


def test_gold_answers_of_the_real_dataset_grade_themselves():
    """Every MathCAMPS gold, written after 'Answer:', is graded correct; a perturbed one is not."""
    from littlekit.databuild.corpora import load_mathcamps

    frame = load_mathcamps()
    for gold in frame["answer"]:
        assert grade(f"Answer: {gold}", gold), gold
    wrong = 0
    for gold in frame["answer"]:
        if answer_kind(gold) in {"integer", "decimal", "fraction"}:
            wrong += grade(f"Answer: 9{gold}", gold)  # 42 -> 942, 27.3 -> 927.3, 7/2 -> 97/2
    assert wrong == 0
