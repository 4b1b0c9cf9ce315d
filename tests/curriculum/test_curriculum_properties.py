"""Hypothesis properties of `littlekit.curriculum`: the scratchpads reproduce the arithmetic, the
formats round-trip, the sampler covers what it claims, and every seed of every unit verifies."""

from __future__ import annotations

import random
import re
from fractions import Fraction

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from littlekit.curriculum import audit as au
from littlekit.curriculum.answers import grade
from littlekit.curriculum.arithmetic import (
    PLACES,
    add_columns,
    count_borrows,
    count_carries,
    long_division,
    multiply_by_digit,
    multiply_columns,
    subtract_columns,
)
from littlekit.curriculum.formats import (
    FORMATS,
    decimal_text,
    fraction_text,
    read_answer,
    render,
    reverse_digits,
)
from littlekit.curriculum.generate import make_record
from littlekit.curriculum.registry import UNITS
from littlekit.curriculum.sampling import Draw, carry_patterns
from littlekit.curriculum.units import all_units

# No example database: a run leaves nothing behind in the checkout (.hypothesis/ is not ignored).
SETTINGS = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
_WRITE = re.compile(r"^(" + "|".join(sorted(PLACES, key=len, reverse=True)) + r"): .*?write (\d)")


def written_number(steps) -> int:
    """The number a column scratchpad writes: its `write d` digits by place."""
    digits = {}
    for line in steps:
        found = _WRITE.match(line)
        if found:
            digits[PLACES.index(found.group(1))] = int(found.group(2))
    return sum(d * 10**i for i, d in digits.items())


@SETTINGS
@given(st.integers(0, 10**7), st.integers(0, 10**7))
def test_addition_scratchpad_reproduces_the_sum_and_its_carries(a, b):
    derived = add_columns(a, b)
    assert derived.result == a + b == written_number(derived.steps)
    assert derived.carries == count_carries(a, b) == sum("carry 1" in line for line in derived.steps)


@SETTINGS
@given(st.integers(0, 10**7), st.integers(0, 10**7))
def test_subtraction_scratchpad_reproduces_the_difference_without_negatives(a, b):
    a, b = max(a, b), min(a, b)
    derived = subtract_columns(a, b)
    assert derived.result == a - b == written_number(derived.steps)
    assert derived.carries == count_borrows(a, b) == sum("borrow 1" in line for line in derived.steps)
    assert "negative" not in au.features("\n".join(derived.steps))


@SETTINGS
@given(st.integers(0, 10**6), st.integers(0, 9), st.integers(10, 999))
def test_multiplication_and_long_division(a, d, b):
    assert multiply_by_digit(a, d).result == a * d == written_number(multiply_by_digit(a, d).steps)
    assert multiply_columns(a, b).result == a * b
    divisor = max(2, b % 97)
    quotient, remainder, steps = long_division(a, divisor)
    assert quotient * divisor + remainder == a and 0 <= remainder < divisor
    for line in steps:  # every "k × d = p, c - p = r" in the steps is true arithmetic
        for k, dd, p in re.findall(r"(\d+) × (\d+) = (\d+)", line):
            assert int(k) * int(dd) == int(p)
        for c, p, r in re.findall(r"(\d+) - (\d+) = (\d+)", line):
            assert int(c) - int(p) == int(r)


ANSWERS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.fractions(max_denominator=500).map(fraction_text),
    st.integers(-99999, 99999).map(lambda n: decimal_text(Fraction(n, 100))),
    st.sampled_from(["<", ">", "="]),
    st.lists(st.integers(1, 500), min_size=1, max_size=6, unique=True).map(lambda xs: str(sorted(xs))),
)


@SETTINGS
@given(st.text(max_size=60))
def test_reversing_digits_twice_gives_the_text_back(text):
    assert reverse_digits(reverse_digits(text)) == text


@SETTINGS
@given(ANSWERS, st.sampled_from(FORMATS))
def test_every_format_reads_back_its_answer(answer, fmt):
    text = render("What is it?", ["step one", "step two"], answer, fmt)
    assert read_answer(text, fmt) == answer
    if fmt == "reversed" and re.search(r"\d\d", answer) and answer != answer[::-1]:
        assert reverse_digits(answer) in text


@SETTINGS
@given(st.integers(-(10**8), 10**8), st.integers(0, 6))
def test_decimal_text_is_exact(n, places):
    value = Fraction(n, 10**places)
    text = decimal_text(value)
    assert Fraction(text) == value and not (("." in text) and text.endswith("0"))
    assert grade("Answer: " + text, text)


@SETTINGS
@given(st.fractions(max_denominator=1000))
def test_a_rederived_value_is_graded_correct_in_the_gold_kind(value):
    gold = fraction_text(value)
    assert grade("Answer: " + au.written(sympy.Rational(value.numerator, value.denominator), gold), gold)


@settings(max_examples=60, deadline=None, database=None)
@given(st.integers(-12, 12).filter(bool), st.integers(-50, 50), st.integers(-12, 12), st.integers(-50, 50))
def test_linear_solver_agrees_with_sympy_solve(p, q, c, d):
    if p == c:
        return
    x = sympy.Symbol("x")
    expected = sympy.solve(sympy.Eq(p * x + q, c * x + d), x)
    assert [au.rederive(f"Eq({p}*x + ({q}), {c}*x + ({d}))")] == expected


@SETTINGS
@given(st.sampled_from(["+", "-"]), st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32))
def test_balanced_addends_have_the_carries_their_pattern_promises(op, width_a, width_b, seed):
    if op == "-" and width_b > width_a:
        width_a, width_b = width_b, width_a
    draw = Draw(random.Random(seed))
    if op == "+":
        a, b = draw.addends((width_a,), (width_b,))
        count = count_carries(a, b)
    else:
        a, b = draw.subtraction((width_a,), (width_b,))
        count = count_borrows(a, b)
    assert (len(str(a)), len(str(b))) == (width_a, width_b)
    assert count in carry_patterns(op, width_a, width_b)


@settings(max_examples=25, deadline=None, database=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32))
def test_balanced_sampler_covers_every_carry_count(width_a, width_b, seed):
    draw = Draw(random.Random(seed))
    feasible = set(carry_patterns("+", width_a, width_b))
    seen = {count_carries(*draw.addends((width_a,), (width_b,))) for _ in range(60 * len(feasible))}
    assert seen == feasible
    assert feasible == set(range(max(feasible) + 1))


@settings(max_examples=40, deadline=None, database=None)
@given(st.integers(0, 2**63 - 1))
def test_uniform_sampling_is_uniform_over_the_range(seed):
    draw = Draw(random.Random(seed), "uniform")
    values = [draw.number(1, 999) for _ in range(50)]
    assert all(1 <= v <= 999 for v in values)
    assert Draw(random.Random(seed), "uniform").number(1, 999) == values[0]


UNIT_IDS = [u.id for u in all_units()]


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(UNIT_IDS), st.integers(0, 2**63 - 1), st.sampled_from(["compact", "prose"]),
       st.sampled_from(FORMATS), st.sampled_from(["balanced", "uniform"]))  # fmt: skip
def test_any_seed_of_any_unit_verifies_and_rebuilds(unit_id, seed, register, fmt, mode):
    unit = UNITS[unit_id]
    record = make_record(unit, seed, register, fmt, mode)
    assert au.verify_record(record, unit) == []
    assert au.degenerate_reasons(record) == []
    assert make_record(unit, seed, register, fmt, mode) == record
