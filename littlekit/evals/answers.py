"""The evaluations' answer graders.

MathCAMPS answers (`grade`, `answer_kind`, `numbers`, ...): the rules of MathCAMPS' own grader
with its known slips fixed, written out in `littlekit.curriculum.answers`, whose audit grades
every generated record with them; they are re-exported here, where the evaluations read them.
"""

from __future__ import annotations

from littlekit.curriculum.answers import (
    FRACTION_TOLERANCE,
    KINDS,
    LONG_DECIMALS,
    MIN_DECIMALS_FOR_LONG,
    Number,
    answer_in_question,
    answer_kind,
    answer_line,
    decimal_matches,
    gold_value,
    grade,
    normalise,
    numbers,
    predicted_comparison,
    significant_decimals,
    value_matches,
)

__all__ = [
    "FRACTION_TOLERANCE", "KINDS", "LONG_DECIMALS", "MIN_DECIMALS_FOR_LONG", "Number", "answer_in_question",
    "answer_kind", "answer_line", "decimal_matches", "gold_value", "grade", "normalise", "numbers",
    "predicted_comparison", "significant_decimals", "value_matches",
]
