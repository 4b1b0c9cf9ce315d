"""The K-5 units: counting, operations, base ten, fractions, decimals, measurement and money.

Each unit is a generator registered with its CCSS codes and its declared words and symbols.
Answers are computed with SymPy (`Integer`, `Rational`); the column algorithms of
`littlekit.curriculum.arithmetic` write the steps, and `agree` stops generation when the two
disagree. Cumulative K-5 rules hold by construction and are audited: no negative number, no
exponent, no variable, no equation to solve (statements ask questions; steps only write `=`
between known numbers). Explicit constraints keep out the degenerate problems the audit's
detector looks for (adding 0, multiplying by 1, `n - n`, an answer already in the question).
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy

from littlekit.curriculum.arithmetic import (
    PLACES,
    add_columns,
    long_division,
    multiply_columns,
    subtract_columns,
)
from littlekit.curriculum.arithmetic import WORDS as COLUMN_WORDS
from littlekit.curriculum.formats import decimal_text, fraction_text, list_text, money_text
from littlekit.curriculum.prose import CONTAINERS, ITEMS, NAMES, agree, as_fraction, as_int, two_names
from littlekit.curriculum.registry import Problem, unit, vocab

Z = sympy.Integer
R = sympy.Rational
ARITH = "+-×÷="


def _add(a: int, b: int) -> tuple[int, tuple[str, ...], int]:
    value = Z(a) + Z(b)
    derived = add_columns(a, b)
    agree(derived.result, value)
    return as_int(value), (*derived.steps, f"{a} + {b} = {value}"), derived.carries


def _subtract(a: int, b: int) -> tuple[int, tuple[str, ...], int]:
    value = Z(a) - Z(b)
    derived = subtract_columns(a, b)
    agree(derived.result, value)
    return as_int(value), (*derived.steps, f"{a} - {b} = {value}"), derived.carries


def _multiply(a: int, b: int) -> tuple[int, tuple[str, ...], int]:
    value = Z(a) * Z(b)
    derived = multiply_columns(a, b)
    agree(derived.result, value)
    return as_int(value), (*derived.steps, f"{a} × {b} = {value}"), derived.carries


def _divide(n: int, d: int) -> tuple[int, tuple[str, ...]]:
    value = R(n, d)
    quotient, remainder, steps = long_division(n, d)
    if remainder:
        raise ArithmeticError(f"{n} ÷ {d} leaves {remainder}; this unit divides exactly")
    agree(quotient, value)
    return as_int(value), (*steps, f"{n} ÷ {d} = {value}")


def _width(n: int) -> int:
    return len(str(abs(n)))


# --- K ---------------------------------------------------------------------------------------

COUNT_COMPACT = "Count on: {a}, {b}, {c}. What number comes next?"
COUNT_PROSE = "{name} counts {items}: {a}, {b}, {c}. What number does {name} say next?"
COUNT_STEP = "the number after {c} is {d}"


@unit(
    "count_on",
    "Count forward from a given number within 100",
    "K.CC.A.2",
    "K",
    words=vocab(COUNT_COMPACT, COUNT_PROSE, COUNT_STEP, NAMES, ITEMS),
    symbols=",",
    constants=(1,),
)
def count_on(draw) -> Problem:
    a = draw.number(1, 96)
    value = Z(a) + 3
    fill = {"a": a, "b": a + 1, "c": a + 2, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    return Problem(
        compact=COUNT_COMPACT.format(**fill),
        prose=COUNT_PROSE.format(**fill),
        expression=f"{a + 2} + 1",
        answer=str(value),
        steps=(COUNT_STEP.format(c=a + 2, d=value),),
        digits=(_width(a),),
    )


WITHIN_10 = {
    "+": (
        "{name} has {a} {items}. {name} gets {b} more. How many {items} does {name} have now?",
        "count on {b} from {a}: {seq}",
    ),
    "-": (
        "{name} has {a} {items}. {name} gives {b} away. How many {items} does {name} have left?",
        "count back {b} from {a}: {seq}",
    ),
}
WHAT_IS = "What is {expr}?"


@unit(
    "add_sub_within_10",
    "Add and subtract within 10",
    ("K.OA.A.2", "K.OA.A.5"),
    "K",
    words=vocab(WHAT_IS, *(t for pair in WITHIN_10.values() for t in pair), NAMES, ITEMS),
    symbols="+-=,",
)
def add_sub_within_10(draw) -> Problem:
    op = draw.choice("+-")
    if draw.balanced:  # the answer first, uniformly, then the split
        result = draw.randint(2, 10) if op == "+" else draw.randint(1, 8)
        b = draw.randint(1, result - 1) if op == "+" else draw.randint(1, 10 - result)
        a = result - b if op == "+" else result + b
    else:  # operands uniformly, redrawn until they fit
        a, b = draw.randint(1, 10), draw.randint(1, 9)
        while (a + b > 10) if op == "+" else (b >= a):
            a, b = draw.randint(1, 10), draw.randint(1, 9)
    value = Z(a) + Z(b) if op == "+" else Z(a) - Z(b)
    seq = range(a + 1, a + b + 1) if op == "+" else range(a - 1, a - b - 1, -1)
    text, count = WITHIN_10[op]
    fill = {"a": a, "b": b, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} {op} {b}"),
        prose=text.format(**fill),
        expression=f"{a} {op} {b}",
        answer=str(value),
        steps=(count.format(a=a, b=b, seq=", ".join(map(str, seq))), f"{a} {op} {b} = {value}"),
    )


# --- grade 1 ---------------------------------------------------------------------------------

WITHIN_20_PROSE = {
    "+": "There are {a} {items} on a table. {name} puts {b} more on the table. How many {items} are "
    "on the table now?",
    "-": "{name} had {a} {items} and lost {b} of them. How many {items} does {name} have now?",
}
MAKE_TEN = "make ten"


@unit(
    "add_sub_within_20",
    "Add and subtract within 20, making ten",
    ("1.OA.C.6", "1.OA.A.1"),
    "1",
    words=vocab(WHAT_IS, *WITHIN_20_PROSE.values(), MAKE_TEN, NAMES, ITEMS),
    symbols="+-=,:",
)
def add_sub_within_20(draw) -> Problem:
    x, y = draw.addends((1,))  # balanced: crossing ten or not, half each
    carries = int(x + y >= 10)
    op = draw.choice("+-")
    a, b = (x, y) if op == "+" else (x + y, y)
    value = Z(a) + Z(b) if op == "+" else Z(a) - Z(b)
    if op == "+" and carries and a + b > 10:
        need = 10 - a
        steps = (f"{MAKE_TEN}: {a} + {need} = 10, 10 + {b - need} = {value}",)
    elif op == "-" and carries and a > 10:
        over = a - 10
        steps = (f"{MAKE_TEN}: {a} - {over} = 10, 10 - {b - over} = {value}",)
    else:
        steps = ()
    fill = {"a": a, "b": b, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} {op} {b}"),
        prose=WITHIN_20_PROSE[op].format(**fill),
        expression=f"{a} {op} {b}",
        answer=str(value),
        steps=(*steps, f"{a} {op} {b} = {value}"),
        carries=carries,
        digits=(1, 1),
    )


THREE_PROSE = (
    "{name} picks {a} red flowers, {b} yellow flowers and {c} white flowers. How many "
    "flowers does {name} pick?"
)


@unit(
    "add_three_numbers",
    "Add three whole numbers with a sum within 20",
    "1.OA.A.2",
    "1",
    words=vocab(WHAT_IS, THREE_PROSE, NAMES),
    symbols="+=",
)
def add_three_numbers(draw) -> Problem:
    if draw.balanced:
        total = draw.randint(7, 20)
        a = draw.randint(2, total - 5)
        b = draw.randint(2, total - a - 3)
        c = total - a - b
    else:
        a, b, c = (draw.randint(2, 9) for _ in range(3))
        while a + b + c > 20:
            a, b, c = (draw.randint(2, 9) for _ in range(3))
    first = Z(a) + Z(b)
    value = first + Z(c)
    fill = {"a": a, "b": b, "c": c, "name": draw.choice(NAMES)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} + {b} + {c}"),
        prose=THREE_PROSE.format(**fill),
        expression=f"{a} + {b} + {c}",
        answer=str(value),
        steps=(f"{a} + {b} = {first}", f"{first} + {c} = {value}"),
    )


TEN_COMPACT = {"+": "What is 10 more than {n}?", "-": "What is 10 less than {n}?"}
TEN_PROSE = {
    "+": "A jar holds {n} {items}. {name} adds 10 more. How many {items} are in the jar now?",
    "-": "A jar holds {n} {items}. {name} takes 10 out. How many {items} are in the jar now?",
}
TEN_STEP = "the tens digit goes from {t} to {u} and the ones digit stays {o}"


@unit(
    "ten_more_less",
    "Mentally find 10 more or 10 less than a two-digit number",
    "1.NBT.C.5",
    "1",
    words=vocab(*TEN_COMPACT.values(), *TEN_PROSE.values(), TEN_STEP, NAMES, ITEMS),
    symbols="+-=",
)
def ten_more_less(draw) -> Problem:
    op = draw.choice("+-")
    n = draw.randint(10, 89) if op == "+" else draw.randint(20, 99)
    value = Z(n) + 10 if op == "+" else Z(n) - 10
    fill = {"n": n, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    step = TEN_STEP.format(t=n // 10, u=as_int(value) // 10, o=n % 10)
    return Problem(
        compact=TEN_COMPACT[op].format(n=n),
        prose=TEN_PROSE[op].format(**fill),
        expression=f"{n} {op} 10",
        answer=str(value),
        steps=(step, f"{n} {op} 10 = {value}"),
    )


# --- grade 2 ---------------------------------------------------------------------------------

GAIN_PROSE = "{name} has {a} {items} and gets {b} more. How many {items} does {name} have now?"
LOSS_PROSE = "{name} has {a} {items} and gives {b} to a friend. How many {items} does {name} have left?"
COLUMN_VOCAB = vocab(WHAT_IS, GAIN_PROSE, LOSS_PROSE, COLUMN_WORDS, NAMES, ITEMS)


def _column_problem(draw, op: str, widths_a, widths_b, gain=GAIN_PROSE, loss=LOSS_PROSE, **extra) -> Problem:
    if op == "+":
        a, b = draw.addends(widths_a, widths_b, **extra)
        value, steps, carries = _add(a, b)
    else:
        a, b = draw.subtraction(widths_a, widths_b)
        value, steps, carries = _subtract(a, b)
    fill = {"a": a, "b": b, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} {op} {b}"),
        prose=(gain if op == "+" else loss).format(**fill),
        expression=f"{a} {op} {b}",
        answer=str(value),
        steps=steps,
        carries=carries,
        digits=(_width(a), _width(b)),
    )


@unit(
    "add_sub_within_100",
    "Add and subtract within 100 with carries and borrows",
    "2.NBT.B.5",
    "2",
    words=COLUMN_VOCAB,
    symbols="+-=,:",
)
def add_sub_within_100(draw) -> Problem:
    return _column_problem(draw, draw.choice("+-"), (2,), (1, 2), final_carry=False)


@unit(
    "add_within_1000",
    "Add within 1000, column by column",
    "2.NBT.B.7",
    "2",
    words=COLUMN_VOCAB,
    symbols="+=,:",
)
def add_within_1000(draw) -> Problem:
    return _column_problem(draw, "+", (3,), (2, 3), final_carry=False)


@unit(
    "subtract_within_1000",
    "Subtract within 1000, borrowing column by column",
    "2.NBT.B.7",
    "2",
    words=COLUMN_VOCAB,
    symbols="+-=,:",
)
def subtract_within_1000(draw) -> Problem:
    return _column_problem(draw, "-", (3,), (2, 3))


PLACE_DIGIT = "What digit is in the {place} place of {n}?"
PLACE_VALUE = "What is the value of the digit {d} in {n}?"
PLACE_PROSE_DIGIT = "{name} writes the number {n}. What digit is in the {place} place?"
PLACE_PROSE_VALUE = "{name} writes the number {n}. How much is the digit {d} worth?"
PLACE_STEPS = (
    "{n} is {parts}",
    "the {place} digit is {d}",
    "{d} in the {place} place is worth {d} × {unit} = {v}",
)


@unit(
    "place_value",
    "Place value of three-digit numbers: hundreds, tens and ones",
    "2.NBT.A.1",
    "2",
    words=vocab(PLACE_DIGIT, PLACE_VALUE, PLACE_PROSE_DIGIT, PLACE_PROSE_VALUE, PLACE_STEPS, PLACES, NAMES),
    symbols="+=×",
    constants=(1, 10, 100),
)
def place_value(draw) -> Problem:
    n = draw.randint(100, 999)
    digits = [int(c) for c in reversed(str(n))]
    i = draw.randint(0, 2)
    d = digits[i]
    ask_value = draw.chance(0.5) and d and digits.count(d) == 1 and i > 0
    unit_size = 10**i
    digit = sympy.floor(R(n, unit_size)) % 10
    value = digit * unit_size if ask_value else digit
    parts = " + ".join(str(x * 10**j) for j, x in reversed(list(enumerate(digits))) if x)
    steps = [PLACE_STEPS[0].format(n=n, parts=parts), PLACE_STEPS[1].format(place=PLACES[i], d=d)]
    if ask_value:
        steps.append(PLACE_STEPS[2].format(d=d, place=PLACES[i], unit=unit_size, v=value))
    fill = {"n": n, "d": d, "place": PLACES[i], "name": draw.choice(NAMES)}
    compact, prose = (PLACE_VALUE, PLACE_PROSE_VALUE) if ask_value else (PLACE_DIGIT, PLACE_PROSE_DIGIT)
    return Problem(
        compact=compact.format(**fill),
        prose=prose.format(**fill),
        expression=f"Digit({n}, {unit_size})" + (f" * {unit_size}" if ask_value else ""),
        answer=str(value),
        steps=tuple(steps),
    )


COMPARE_COMPACT = "Compare {a} and {b}. Write <, > or =."
COMPARE_PROSE = (
    "{name} has {a} {items} and {other} has {b} {items}. Compare the first number with the second: "
    "write <, > or =."
)
COMPARE_STEPS = (
    "{place}: {x} and {y} are the same",
    "{place}: {x} is greater than {y}",
    "{place}: {x} is less than {y}",
    "so {a} {sign} {b}",
)


def _compare_digits(a: int, b: int) -> tuple[str, ...]:
    xs, ys = str(a), str(b)
    steps = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        where = PLACES[len(xs) - 1 - i]
        if x == y:
            steps.append(COMPARE_STEPS[0].format(place=where, x=x, y=y))
            continue
        steps.append(COMPARE_STEPS[1 if x > y else 2].format(place=where, x=x, y=y))
        break
    return tuple(steps)


def _sign(a: sympy.Rational, b: sympy.Rational) -> str:
    """`<`, `>` or `=`, from the sign SymPy gives a - b."""
    return {1: ">", -1: "<", 0: "="}[int(sympy.sign(sympy.Rational(a) - sympy.Rational(b)))]


@unit(
    "compare_three_digit",
    "Compare three-digit numbers with <, > and =",
    "2.NBT.A.4",
    "2",
    words=vocab(COMPARE_COMPACT, COMPARE_PROSE, COMPARE_STEPS, PLACES, NAMES, ITEMS),
    symbols="<>=,:",
)
def compare_three_digit(draw) -> Problem:
    a = draw.randint(100, 999)
    if draw.balanced:  # the first differing place uniformly: hundreds, tens or ones
        i = draw.randint(0, 2)
        keep, xs = str(a)[:i], list(str(a))
        choices = [c for c in "0123456789" if c != xs[i] and (i or c != "0")]
        rest = "".join(draw.choice("0123456789") for _ in range(2 - i))
        b = int(keep + draw.choice(choices) + rest)
    else:
        b = draw.randint(100, 999)
        while b == a:
            b = draw.randint(100, 999)
    sign = _sign(Z(a), Z(b))
    name, other = two_names(draw)
    fill = {"a": a, "b": b, "name": name, "other": other, "items": draw.choice(ITEMS)}
    return Problem(
        compact=COMPARE_COMPACT.format(**fill),
        prose=COMPARE_PROSE.format(**fill),
        expression=f"Compare({a}, {b})",
        answer=sign,
        steps=(*_compare_digits(a, b), COMPARE_STEPS[3].format(a=a, sign=sign, b=b)),
    )


LENGTH_UNITS = ("cm", "inches", "feet", "meters")
LENGTH_COMPACT = "What is {a} {u} {op} {b} {u}?"
LENGTH_PROSE = {
    "+": "{name} jumps {a} {u} and then {b} {u} more. How far does {name} jump in all, in {u}?",
    "-": "A ribbon is {a} {u} long. {name} cuts off {b} {u}. How long is the ribbon now, in {u}?",
}


@unit(
    "length_word_problems",
    "Add and subtract lengths within 100",
    "2.MD.B.5",
    "2",
    words=vocab(LENGTH_COMPACT, *LENGTH_PROSE.values(), LENGTH_UNITS, COLUMN_WORDS, NAMES),
    symbols="+-=,:",
)
def length_word_problems(draw) -> Problem:
    op = draw.choice("+-")
    if op == "+":
        a, b = draw.addends((2,), (1, 2), final_carry=False)
        value, steps, carries = _add(a, b)
    else:
        a, b = draw.subtraction((2,), (1, 2))
        value, steps, carries = _subtract(a, b)
    u = draw.choice(LENGTH_UNITS)
    fill = {"a": a, "b": b, "u": u, "op": op, "name": draw.choice(NAMES)}
    return Problem(
        compact=LENGTH_COMPACT.format(**fill),
        prose=LENGTH_PROSE[op].format(**fill),
        expression=f"{a} {op} {b}",
        answer=str(value),
        steps=steps,
        carries=carries,
        digits=(_width(a), _width(b)),
    )


COINS = (
    ("quarter", "quarters", 25),
    ("dime", "dimes", 10),
    ("nickel", "nickels", 5),
    ("penny", "pennies", 1),
)
COINS_COMPACT = "How many cents are {coins}?"
COINS_PROSE = "{name} has {coins} in a pocket. How many cents does {name} have?"
COIN_STEP = "{count} {coin} are {count} × {worth} = {value} cents"
COIN_STEP_ONE = "{count} {coin} {verb} {value} {cents}"
COINS_TOTAL = "in all: {terms} = {total} cents"


def _listing(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@unit(
    "money_coins",
    "Count the value of quarters, dimes, nickels and pennies",
    "2.MD.C.8",
    "2",
    words=vocab(
        COINS_COMPACT,
        COINS_PROSE,
        COIN_STEP,
        COIN_STEP_ONE,
        COINS_TOTAL,
        "is are cent and",
        [c[0] for c in COINS],
        [c[1] for c in COINS],
        NAMES,
    ),
    symbols="+=×,:",
    constants=(25, 10, 5, 1),
)
def money_coins(draw) -> Problem:
    kinds = sorted(draw.sample(range(4), draw.randint(2, 4)))
    counts = {k: draw.randint(1, 4) for k in kinds}
    parts, steps, terms, total = [], [], [], Z(0)
    for k in kinds:
        single, plural, worth = COINS[k]
        count = counts[k]
        coin = single if count == 1 else plural
        value = Z(count) * worth
        parts.append(f"{count} {coin}")
        template = COIN_STEP_ONE if count == 1 or worth == 1 else COIN_STEP
        verb, cents = ("is", "cent" if value == 1 else "cents") if count == 1 else ("are", "cents")
        steps.append(
            template.format(count=count, coin=coin, worth=worth, value=value, verb=verb, cents=cents)
        )
        terms.append(str(value))
        total += value
    steps.append(COINS_TOTAL.format(terms=" + ".join(terms), total=total))
    coins = _listing(parts)
    return Problem(
        compact=COINS_COMPACT.format(coins=coins),
        prose=COINS_PROSE.format(coins=coins, name=draw.choice(NAMES)),
        expression=" + ".join(f"{counts[k]} * {COINS[k][2]}" for k in kinds),
        answer=str(total),
        steps=tuple(steps),
    )


# --- grade 3 ---------------------------------------------------------------------------------

MULT_PROSE = "There are {a} {containers} with {b} {items} in each. How many {items} are there in all?"
MULT_STEP = "skip count by {b}, {a} times: {seq}"


@unit(
    "multiplication_facts",
    "Multiply within 100: the one-digit facts",
    "3.OA.C.7",
    "3",
    words=vocab(WHAT_IS, MULT_PROSE, MULT_STEP, CONTAINERS, ITEMS),
    symbols="×=,:",
)
def multiplication_facts(draw) -> Problem:
    a, b = draw.fact(2, 9)  # balanced: the product uniformly over the distinct products
    value = Z(a) * Z(b)
    seq = ", ".join(str(b * k) for k in range(1, a + 1))
    fill = {"a": a, "b": b, "containers": draw.choice(CONTAINERS), "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} × {b}"),
        prose=MULT_PROSE.format(**fill),
        expression=f"{a} * {b}",
        answer=str(value),
        steps=(MULT_STEP.format(a=a, b=b, seq=seq), f"{a} × {b} = {value}"),
        digits=(1, 1),
    )


DIV_PROSE = "{name} shares {n} {items} equally among {d} friends. How many {items} does each friend get?"
DIV_STEP = "skip count by {d} up to {n}: {seq}, that is {q} groups of {d}"


@unit(
    "division_facts",
    "Divide within 100 as an unknown-factor problem",
    ("3.OA.A.2", "3.OA.C.7"),
    "3",
    words=vocab(WHAT_IS, DIV_PROSE, DIV_STEP, NAMES, ITEMS),
    symbols="÷=,:",
)
def division_facts(draw) -> Problem:
    q, d = draw.fact(2, 9)
    n = q * d
    value = R(n, d)
    seq = ", ".join(str(d * k) for k in range(1, q + 1))
    fill = {"n": n, "d": d, "name": draw.choice(NAMES), "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{n} ÷ {d}"),
        prose=DIV_PROSE.format(**fill),
        expression=f"{n} / {d}",
        answer=str(value),
        steps=(DIV_STEP.format(d=d, n=n, seq=seq, q=value), f"{n} ÷ {d} = {value}"),
    )


ROUND_COMPACT = "Round {n} to the nearest {place}."
ROUND_PROSE = "A school has {n} students. About how many students is that, to the nearest {place}?"
ROUND_STEPS = (
    "the digit after the {place} place is {d}",
    "{d} is 5 or more, so round up",
    "{d} is less than 5, so round down",
    "{n} rounds to {r}",
)


@unit(
    "round_numbers",
    "Round whole numbers to the nearest 10 or 100",
    "3.NBT.A.1",
    "3",
    words=vocab(ROUND_COMPACT, ROUND_PROSE, ROUND_STEPS, "ten hundred", PLACES),
    symbols="",
    constants=(10, 100),
)
def round_numbers(draw) -> Problem:
    size = draw.choice((10, 100))
    n = draw.number(11, 999) if size == 10 else draw.randint(101, 999)
    while n % size == 0:
        n += 1
    value = sympy.floor(R(n, size) + R(1, 2)) * size
    d = n // (size // 10) % 10
    place = "ten" if size == 10 else "hundred"
    steps = (
        ROUND_STEPS[0].format(place=place + "s", d=d),
        ROUND_STEPS[1 if d >= 5 else 2].format(d=d),
        ROUND_STEPS[3].format(n=n, r=value),
    )
    return Problem(
        compact=ROUND_COMPACT.format(n=n, place=place),
        prose=ROUND_PROSE.format(n=n, place=place),
        expression=f"RoundTo({n}, {size})",
        answer=str(value),
        steps=steps,
        digits=(_width(n),),
    )


TENS_PROSE = "Each box holds {b} {items}. How many {items} are in {a} boxes?"
TENS_STEPS = ("{a} × {t} = {p}", "{a} × {b} is {p} tens, which is {v}")


@unit(
    "multiply_by_tens",
    "Multiply one-digit numbers by multiples of 10",
    "3.NBT.A.3",
    "3",
    words=vocab(WHAT_IS, TENS_PROSE, TENS_STEPS, ITEMS),
    symbols="×=,",
)
def multiply_by_tens(draw) -> Problem:
    a, t = draw.fact(2, 9)
    b = t * 10
    value = Z(a) * Z(b)
    fill = {"a": a, "b": b, "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} × {b}"),
        prose=TENS_PROSE.format(**fill),
        expression=f"{a} * {b}",
        answer=str(value),
        steps=(TENS_STEPS[0].format(a=a, t=t, p=a * t), TENS_STEPS[1].format(a=a, b=b, p=a * t, v=value)),
    )


EQUIV_COMPACT = "Write {a}/{b} as a fraction with denominator {m}. What is the numerator?"
EQUIV_PROSE = (
    "A pizza is cut into {m} equal slices. {name} eats {a}/{b} of the pizza. How many slices does {name} eat?"
)
EQUIV_STEPS = ("{m} ÷ {b} = {k}", "{a} × {k} = {n}", "{a}/{b} = {n}/{m}")
GRADE3_DENOMINATORS = (2, 3, 4, 6, 8)


@unit(
    "equivalent_fractions",
    "Generate equivalent fractions",
    ("3.NF.A.3", "4.NF.A.1"),
    "3",
    words=vocab(EQUIV_COMPACT, EQUIV_PROSE, EQUIV_STEPS, NAMES),
    symbols="/×÷=",
)
def equivalent_fractions(draw) -> Problem:
    b = draw.choice(GRADE3_DENOMINATORS)
    a = draw.choice([x for x in range(1, b) if math.gcd(x, b) == 1])
    k = draw.randint(2, 4)
    m = b * k
    value = R(a, b) * m
    fill = {"a": a, "b": b, "m": m, "name": draw.choice(NAMES)}
    return Problem(
        compact=EQUIV_COMPACT.format(**fill),
        prose=EQUIV_PROSE.format(**fill),
        expression=f"{a}/{b} * {m}",
        answer=str(value),
        steps=tuple(s.format(a=a, b=b, m=m, k=k, n=value) for s in EQUIV_STEPS),
    )


TIME_COMPACT = "How many minutes are there from {start} to {end}?"
TIME_PROSE = "{name} starts reading at {start} and stops at {end}. For how many minutes does {name} read?"
TIME_STEPS = ("from {a} to {b} is {m} minutes", "in all: {terms} = {total} minutes")


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


@unit(
    "elapsed_time",
    "Elapsed time in minutes",
    "3.MD.A.1",
    "3",
    words=vocab(TIME_COMPACT, TIME_PROSE, TIME_STEPS, NAMES),
    symbols=":+=",
)
def elapsed_time(draw) -> Problem:
    start = draw.randint(60, 12 * 60 + 30)  # 1:00 to 12:30 on a 12-hour clock
    end = start + draw.number(5, 180)
    if end > 12 * 60 + 59:  # stay before 1:00 comes round again
        end = start + draw.randint(5, 12 * 60 + 59 - start)
    value = Z(end) - Z(start)
    pieces, at = [], start
    for mark in range((start // 60 + 1) * 60, end + 1, 60):
        pieces.append((at, mark))
        at = mark
    if at < end:
        pieces.append((at, end))
    steps = [TIME_STEPS[0].format(a=_clock(a), b=_clock(b), m=b - a) for a, b in pieces]
    if len(pieces) > 1:
        steps.append(TIME_STEPS[1].format(terms=" + ".join(str(b - a) for a, b in pieces), total=value))
    fill = {"start": _clock(start), "end": _clock(end), "name": draw.choice(NAMES)}
    return Problem(
        compact=TIME_COMPACT.format(**fill),
        prose=TIME_PROSE.format(**fill),
        expression=f"Clock({end // 60}, {end % 60}) - Clock({start // 60}, {start % 60})",
        answer=str(value),
        steps=tuple(steps),
    )


AREA_COMPACT = "What is the area of a rectangle {l} {u} long and {w} {u} wide, in square {u}?"
AREA_PROSE = (
    "{name} has a garden shaped like a rectangle, {l} {u} long and {w} {u} wide. What is "
    "its area in square {u}?"
)
AREA_STEP = "area is length × width: {l} × {w} = {a}"
AREA_UNITS = ("cm", "meters", "feet", "inches")


@unit(
    "rectangle_area",
    "Area of a rectangle by multiplying side lengths",
    "3.MD.C.7",
    "3",
    words=vocab(AREA_COMPACT, AREA_PROSE, AREA_STEP, AREA_UNITS, NAMES),
    symbols="×=,:",
)
def rectangle_area(draw) -> Problem:
    length, w = draw.fact(2, 12)
    value = Z(length) * Z(w)
    fill = {"l": length, "w": w, "u": draw.choice(AREA_UNITS), "name": draw.choice(NAMES)}
    return Problem(
        compact=AREA_COMPACT.format(**fill),
        prose=AREA_PROSE.format(**fill),
        expression=f"{length} * {w}",
        answer=str(value),
        steps=(AREA_STEP.format(l=length, w=w, a=value),),
    )


PERIMETER = {
    "rectangle": (
        "What is the perimeter of a rectangle {l} cm long and {w} cm wide, in cm?",
        "A park is a rectangle {l} meters long and {w} meters wide. {name} walks once around it. How many "
        "meters does {name} walk?",
    ),
    "side": (
        "A rectangle has a perimeter of {p} cm and a length of {l} cm. What is its width, in cm?",
        "{name} makes a rectangle frame with {p} cm of wire. The frame is {l} cm long. How wide is "
        "it, in cm?",
    ),
    "polygon": (
        "What is the perimeter of a shape with sides of {sides} cm, in cm?",
        "{name} walks around a field with sides of {sides} meters. How many meters does {name} walk?",
    ),
}
PERIMETER_STEPS = (
    "add the four sides: {l} + {w} + {l} + {w} = {p}",
    "half the perimeter is {p} ÷ 2 = {h}",
    "length and width make half: {h} - {l} = {w}",
    "add the sides: {terms} = {p}",
)


@unit(
    "perimeter",
    "Perimeter of polygons, and an unknown side of a rectangle",
    "3.MD.D.8",
    "3",
    words=vocab(*(t for pair in PERIMETER.values() for t in pair), PERIMETER_STEPS, NAMES),
    symbols="+-÷=,:",
    constants=(2,),
)
def perimeter(draw) -> Problem:
    kind = draw.choice(tuple(PERIMETER))
    name = draw.choice(NAMES)
    if kind == "polygon":
        sides = [draw.number(2, 30) for _ in range(draw.randint(3, 6))]
        value = sum((Z(s) for s in sides), Z(0))
        terms = " + ".join(map(str, sides))
        fill = {"sides": _listing([str(s) for s in sides]), "name": name}
        steps, expression = (PERIMETER_STEPS[3].format(terms=terms, p=value),), terms
    else:
        side, w = draw.number(3, 40), draw.number(2, 40)
        p = 2 * (side + w)
        if kind == "rectangle":
            value = 2 * (Z(side) + Z(w))
            steps = (PERIMETER_STEPS[0].format(l=side, w=w, p=value),)
            expression = f"{side} + {w} + {side} + {w}"
        else:
            value = R(p, 2) - side
            h = p // 2
            steps = (PERIMETER_STEPS[1].format(p=p, h=h), PERIMETER_STEPS[2].format(h=h, l=side, w=value))
            expression = f"{p} / 2 - {side}"
        fill = {"l": side, "w": w, "p": p, "name": name}
    compact, prose = PERIMETER[kind]
    return Problem(
        compact=compact.format(**fill),
        prose=prose.format(**fill),
        expression=expression,
        answer=str(value),
        steps=steps,
    )


# --- grade 4 ---------------------------------------------------------------------------------

TOWN_GAIN = "A town has {a} people. Then {b} more people move in. How many people live in the town now?"
TOWN_LOSS = "A library has {a} books and gives away {b} of them. How many books does the library have left?"


@unit(
    "multi_digit_add_sub",
    "Add and subtract multi-digit whole numbers with the standard algorithm",
    "4.NBT.B.4",
    "4",
    words=vocab(WHAT_IS, TOWN_GAIN, TOWN_LOSS, COLUMN_WORDS),
    symbols="+-=,:",
)
def multi_digit_add_sub(draw) -> Problem:
    op = draw.choice("+-")
    return _column_problem(draw, op, (4, 5, 6), (3, 4, 5, 6), gain=TOWN_GAIN, loss=TOWN_LOSS)


PACK_PROSE = "A farm packs {b} {items} in each crate. How many {items} are in {a} crates?"


def _multiply_problem(draw, a: int, b: int) -> Problem:
    value, steps, carries = _multiply(a, b)
    fill = {"a": a, "b": b, "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} × {b}"),
        prose=PACK_PROSE.format(**fill),
        expression=f"{a} * {b}",
        answer=str(value),
        steps=steps,
        carries=carries,
        digits=(_width(a), _width(b)),
    )


def _two_digit(draw) -> int:
    n = draw.randint(11, 99)
    return n + 1 if n % 10 == 0 else n


@unit(
    "multi_digit_multiplication",
    "Multiply up to four digits by one digit, and two digits by two digits",
    "4.NBT.B.5",
    "4",
    words=vocab(WHAT_IS, PACK_PROSE, COLUMN_WORDS, ITEMS),
    symbols="×+=,:",
)
def multi_digit_multiplication(draw) -> Problem:
    if draw.chance(0.25):
        return _multiply_problem(draw, _two_digit(draw), _two_digit(draw))
    a = draw.with_digits(draw.randint(2, 4)) if draw.balanced else draw.randint(10, 9999)
    return _multiply_problem(draw, a, draw.randint(2, 9))


SHARE_PROSE = "{n} {items} are packed equally into {d} boxes. How many {items} go in each box?"


def _division_problem(draw, n: int, d: int) -> Problem:
    value, steps = _divide(n, d)
    fill = {"n": n, "d": d, "items": draw.choice(ITEMS)}
    return Problem(
        compact=WHAT_IS.format(expr=f"{n} ÷ {d}"),
        prose=SHARE_PROSE.format(**fill),
        expression=f"{n} / {d}",
        answer=str(value),
        steps=steps,
        digits=(_width(n), _width(d)),
    )


@unit(
    "long_division",
    "Divide up to four digits by one digit with the standard algorithm",
    "4.NBT.B.6",
    "4",
    words=vocab(WHAT_IS, SHARE_PROSE, COLUMN_WORDS, ITEMS),
    symbols="÷×-=:;",
)
def long_division_unit(draw) -> Problem:
    d = draw.randint(2, 9)
    q = draw.number(11, 9999 // d)
    return _division_problem(draw, q * d, d)


REMAINDER = {
    "up": (
        "How many groups of {d} are needed to hold {n} in all?",
        "{n} children go on a trip. Each van holds {d} children. How many vans are needed?",
        "{q} full groups leave {r}, so one more is needed: {q} + 1 = {v}",
    ),
    "down": (
        "How many whole groups of {d} are in {n}?",
        "{name} has {n} {items} and puts {d} in each bag. How many bags can {name} fill?",
        "{q} whole groups, and the {r} left over do not fill another",
    ),
    "left": (
        "What is the remainder when {n} is divided by {d}?",
        "{name} shares {n} {items} equally among {d} friends. How many {items} are left over?",
        "{q} each, and {r} left over",
    ),
}
REMAINDER_STEP = "{d} × {q} = {dq}, {n} - {dq} = {r}"


@unit(
    "division_remainders",
    "Division word problems where the remainder must be interpreted",
    "4.OA.A.3",
    "4",
    words=vocab(*(t for three in REMAINDER.values() for t in three), REMAINDER_STEP, NAMES, ITEMS),
    symbols="×+-=,",
)
def division_remainders(draw) -> Problem:
    d = draw.randint(3, 9)
    n = draw.randint(2 * d + 1, 99)
    while n % d == 0:
        n += 1
    kind = draw.choice(tuple(REMAINDER))
    q, r = n // d, n % d
    value = {
        "up": sympy.ceiling(R(n, d)),
        "down": sympy.floor(R(n, d)),
        "left": sympy.Mod(Z(n), Z(d)),
    }[kind]
    compact, prose, step = REMAINDER[kind]
    fill = {
        "n": n,
        "d": d,
        "q": q,
        "r": r,
        "v": value,
        "name": draw.choice(NAMES),
        "items": draw.choice(ITEMS),
    }
    expression = {"up": f"ceiling({n} / {d})", "down": f"floor({n} / {d})", "left": f"Mod({n}, {d})"}[kind]
    return Problem(
        compact=compact.format(**fill),
        prose=prose.format(**fill),
        expression=expression,
        answer=str(value),
        steps=(REMAINDER_STEP.format(d=d, q=q, dq=d * q, n=n, r=r), step.format(**fill)),
    )


FACTORS_COMPACT = "List all the factors of {n}."
FACTORS_PROSE = "{name} puts {n} chairs in equal rows. List every number of chairs a row could have."
FACTORS_STEPS = ("factor pairs: {pairs}", "the factors are {factors}")


@unit(
    "factor_pairs",
    "Find all factor pairs of a whole number from 1 to 100",
    "4.OA.B.4",
    "4",
    words=vocab(FACTORS_COMPACT, FACTORS_PROSE, FACTORS_STEPS, NAMES),
    symbols="[],×:",
)
def factor_pairs(draw) -> Problem:
    n = draw.randint(4, 100)
    factors = [int(f) for f in sympy.divisors(n)]
    pairs = [f"{f} × {n // f}" for f in factors if f * f <= n]
    return Problem(
        compact=FACTORS_COMPACT.format(n=n),
        prose=FACTORS_PROSE.format(n=n, name=draw.choice(NAMES)),
        expression=f"Divisors({n})",
        answer=list_text(factors),
        steps=(
            FACTORS_STEPS[0].format(pairs=", ".join(pairs)),
            FACTORS_STEPS[1].format(factors=", ".join(map(str, factors))),
        ),
    )


SIMPLIFY_COMPACT = "Write {n}/{m} in lowest terms."
SIMPLIFY_PROSE = (
    "{name} eats {n} of the {m} slices of a pie. What fraction of the pie does {name} eat, in lowest terms?"
)
SIMPLIFY_STEPS = (
    "the greatest common factor of {n} and {m} is {g}",
    "{n} ÷ {g} = {a}, {m} ÷ {g} = {b}",
    "{n}/{m} = {a}/{b}",
)


@unit(
    "simplify_fractions",
    "Write a fraction in lowest terms by dividing by a common factor",
    "4.NF.A.1",
    "4",
    words=vocab(SIMPLIFY_COMPACT, SIMPLIFY_PROSE, SIMPLIFY_STEPS, NAMES),
    symbols="/÷=,",
)
def simplify_fractions(draw) -> Problem:
    b = draw.randint(2, 12)
    a = draw.choice([x for x in range(1, b) if math.gcd(x, b) == 1])
    k = draw.randint(2, 6)
    n, m = a * k, b * k
    value = R(n, m)
    g = math.gcd(n, m)
    fill = {"n": n, "m": m, "g": g, "a": as_fraction(value).numerator, "b": as_fraction(value).denominator}
    return Problem(
        compact=SIMPLIFY_COMPACT.format(**fill),
        prose=SIMPLIFY_PROSE.format(**fill, name=draw.choice(NAMES)),
        expression=f"{n}/{m}",
        answer=fraction_text(as_fraction(value)),
        steps=tuple(s.format(**fill) for s in SIMPLIFY_STEPS),
    )


FRACTION_COMPARE_COMPACT = "Compare {x} and {y}. Write <, > or =."
FRACTION_COMPARE_PROSE = (
    "{name} runs {x} of a mile and {other} runs {y} of a mile. Compare the "
    "first distance with the second: write <, > or =."
)
FRACTION_COMPARE_STEPS = (
    "a common denominator of {b} and {d} is {m}",
    "{x} = {xm}, {y} = {ym}",
    "{p} {sign} {q}, so {x} {sign} {y}",
)
GRADE4_DENOMINATORS = (2, 3, 4, 5, 6, 8, 10, 12)


def _proper(draw, denominators=GRADE4_DENOMINATORS) -> tuple[int, int]:
    b = draw.choice(denominators)
    return draw.choice([x for x in range(1, b) if math.gcd(x, b) == 1]), b


def _lcm_steps(b: int, d: int) -> int:
    return b * d // math.gcd(b, d)


@unit(
    "compare_fractions",
    "Compare two fractions with different numerators and denominators",
    "4.NF.A.2",
    "4",
    words=vocab(FRACTION_COMPARE_COMPACT, FRACTION_COMPARE_PROSE, FRACTION_COMPARE_STEPS, NAMES),
    symbols="/<>=,:",
)
def compare_fractions(draw) -> Problem:
    a, b = _proper(draw)
    if draw.balanced and draw.chance(1 / 3):  # an equivalent fraction: the "=" answer
        k = draw.randint(2, 3)
        c, d = a * k, b * k
    else:
        c, d = _proper(draw)
        while d == b or c == a:
            c, d = _proper(draw)
    sign = _sign(R(a, b), R(c, d))
    m = _lcm_steps(b, d)
    x, y = f"{a}/{b}", f"{c}/{d}"
    xm, ym = a * (m // b), c * (m // d)
    name, other = two_names(draw)
    steps = (
        FRACTION_COMPARE_STEPS[0].format(b=b, d=d, m=m),
        FRACTION_COMPARE_STEPS[1].format(x=x, y=y, xm=f"{xm}/{m}", ym=f"{ym}/{m}"),
        FRACTION_COMPARE_STEPS[2].format(p=f"{xm}/{m}", q=f"{ym}/{m}", sign=sign, x=x, y=y),
    )
    return Problem(
        compact=FRACTION_COMPARE_COMPACT.format(x=x, y=y),
        prose=FRACTION_COMPARE_PROSE.format(x=x, y=y, name=name, other=other),
        expression=f"Compare({a}/{b}, {c}/{d})",
        answer=sign,
        steps=steps,
    )


LIKE_PROSE = {
    "+": "{name} walks {x} of a mile in the morning and {y} of a mile in the afternoon. How far does "
    "{name} walk in all, in miles?",
    "-": "A jug holds {x} of a liter of juice. {name} drinks {y} of a liter. How much juice is left, "
    "in liters?",
}
SIMPLIFIED = "{a} = {b} in lowest terms"


def _fraction_answer(value: sympy.Rational) -> str:
    return fraction_text(as_fraction(value))


@unit(
    "add_like_fractions",
    "Add and subtract fractions with like denominators",
    "4.NF.B.3",
    "4",
    words=vocab(WHAT_IS, *LIKE_PROSE.values(), SIMPLIFIED, NAMES),
    symbols="/+-=,",
)
def add_like_fractions(draw) -> Problem:
    d = draw.randint(3, 12)
    op = draw.choice("+-")
    a, b = draw.randint(1, d - 1), draw.randint(1, d - 1)
    if op == "-":
        while a == b:
            b = draw.randint(1, d - 1)
        a, b = max(a, b), min(a, b)
    value = R(a, d) + R(b, d) if op == "+" else R(a, d) - R(b, d)
    top = a + b if op == "+" else a - b
    steps = [f"{a}/{d} {op} {b}/{d} = {top}/{d}"]
    if as_fraction(value).denominator != d:
        steps.append(SIMPLIFIED.format(a=f"{top}/{d}", b=_fraction_answer(value)))
    x, y = f"{a}/{d}", f"{b}/{d}"
    return Problem(
        compact=WHAT_IS.format(expr=f"{x} {op} {y}"),
        prose=LIKE_PROSE[op].format(x=x, y=y, name=draw.choice(NAMES)),
        expression=f"{a}/{d} {op} {b}/{d}",
        answer=_fraction_answer(value),
        steps=tuple(steps),
    )


WHOLE_PROSE = "Each glass holds {x} of a liter of water. How many liters do {n} glasses hold?"


@unit(
    "fraction_times_whole",
    "Multiply a fraction by a whole number",
    "4.NF.B.4",
    "4",
    words=vocab(WHAT_IS, WHOLE_PROSE, SIMPLIFIED),
    symbols="/×=",
)
def fraction_times_whole(draw) -> Problem:
    a, b = _proper(draw)
    n = draw.randint(2, 9)
    value = n * R(a, b)
    steps = [f"{n} × {a}/{b} = {n * a}/{b}"]
    if as_fraction(value).denominator != b:
        steps.append(SIMPLIFIED.format(a=f"{n * a}/{b}", b=_fraction_answer(value)))
    x = f"{a}/{b}"
    return Problem(
        compact=WHAT_IS.format(expr=f"{n} × {x}"),
        prose=WHOLE_PROSE.format(x=x, n=n),
        expression=f"{n} * {a}/{b}",
        answer=_fraction_answer(value),
        steps=tuple(steps),
    )


DECIMAL_COMPACT = "Write {a}/{d} as a decimal."
DECIMAL_PROSE = "{a} of the {d} squares on a grid are shaded. Write the shaded part as a decimal."
DECIMAL_STEPS = ("{a}/{d} is {a} {part}", "{a} {part} is {v}")


@unit(
    "decimal_fractions",
    "Write fractions with denominator 10 or 100 as decimals",
    "4.NF.C.6",
    "4",
    words=vocab(DECIMAL_COMPACT, DECIMAL_PROSE, DECIMAL_STEPS, "tenths hundredths"),
    symbols="/",
    constants=(10, 100),
)
def decimal_fractions(draw) -> Problem:
    d = draw.choice((10, 100))
    a = draw.randint(1, d - 1)
    value = R(a, d)
    part = "tenths" if d == 10 else "hundredths"
    text = decimal_text(as_fraction(value))
    return Problem(
        compact=DECIMAL_COMPACT.format(a=a, d=d),
        prose=DECIMAL_PROSE.format(a=a, d=d),
        expression=f"{a}/{d}",
        answer=text,
        steps=tuple(s.format(a=a, d=d, part=part, v=text) for s in DECIMAL_STEPS),
    )


DECIMAL_COMPARE_COMPACT = "Compare {x} and {y}. Write <, > or =."
DECIMAL_COMPARE_PROSE = (
    "A red ribbon is {x} meters long and a blue ribbon is {y} meters long. "
    "Compare the red length with the blue: write <, > or =."
)
DECIMAL_COMPARE_STEPS = (
    "{x} is {p} hundredths and {y} is {q} hundredths",
    "{p} {sign} {q}, so {x} {sign} {y}",
)


@unit(
    "compare_decimals",
    "Compare decimals to hundredths",
    "4.NF.C.7",
    "4",
    words=vocab(DECIMAL_COMPARE_COMPACT, DECIMAL_COMPARE_PROSE, DECIMAL_COMPARE_STEPS),
    symbols="<>=,",
)
def compare_decimals(draw) -> Problem:
    p = draw.randint(1, 999)
    if draw.balanced and draw.chance(1 / 3):  # the "=" answer: 0.4 against 0.40
        p = 10 * draw.randint(1, 99)
        q = p
    else:
        q = draw.randint(max(1, p - 60), min(999, p + 60))
        while q == p:
            q = draw.randint(1, 999)
    x = decimal_text(Fraction(p, 100))
    y = decimal_text(Fraction(q, 100), places=2) if q == p else decimal_text(Fraction(q, 100))
    sign = _sign(R(p, 100), R(q, 100))
    return Problem(
        compact=DECIMAL_COMPARE_COMPACT.format(x=x, y=y),
        prose=DECIMAL_COMPARE_PROSE.format(x=x, y=y),
        expression=f"Compare({x}, {y})",
        answer=sign,
        steps=tuple(s.format(x=x, y=y, p=p, q=q, sign=sign) for s in DECIMAL_COMPARE_STEPS),
    )


CONVERSIONS = (
    ("kilometer", "kilometers", "meters", 1000),
    ("meter", "meters", "centimeters", 100),
    ("kilogram", "kilograms", "grams", 1000),
    ("liter", "liters", "milliliters", 1000),
    ("hour", "hours", "minutes", 60),
    ("minute", "minutes", "seconds", 60),
    ("day", "days", "hours", 24),
    ("week", "weeks", "days", 7),
    ("foot", "feet", "inches", 12),
    ("yard", "yards", "feet", 3),
    ("pound", "pounds", "ounces", 16),
)
CONVERT_COMPACT = "How many {small} are in {n} {big}?"
CONVERT_PROSE = "A trip takes {n} {big}. How long is that in {small}?"
CONVERT_PROSE_MASS = "A bag weighs {n} {big}. How much is that in {small}?"
CONVERT_PROSE_LENGTH = "A rope is {n} {big} long. How long is it in {small}?"
CONVERT_PROSE_VOLUME = "A bottle holds {n} {big}. How much is that in {small}?"
CONVERT_STEPS = ("1 {one} is {f} {small}", "{n} × {f} = {v}")
_MASS = {"kilograms", "pounds"}
_TIME = {"hours", "minutes", "days", "weeks"}


@unit(
    "convert_units",
    "Convert a larger measurement unit to a smaller one",
    "4.MD.A.1",
    "4",
    words=vocab(
        CONVERT_COMPACT,
        CONVERT_PROSE,
        CONVERT_PROSE_MASS,
        CONVERT_PROSE_LENGTH,
        CONVERT_PROSE_VOLUME,
        CONVERT_STEPS,
        [w for c in CONVERSIONS for w in c[:3]],
    ),
    symbols="×=",
    constants=tuple(c[3] for c in CONVERSIONS),
)
def convert_units(draw) -> Problem:
    one, big, small, f = draw.choice(CONVERSIONS)
    n = draw.randint(2, 12)
    value = Z(n) * f
    prose = CONVERT_PROSE if big in _TIME else CONVERT_PROSE_MASS if big in _MASS else CONVERT_PROSE_LENGTH
    if big == "liters":
        prose = CONVERT_PROSE_VOLUME
    fill = {"n": n, "big": big, "small": small, "one": one, "f": f, "v": value}
    return Problem(
        compact=CONVERT_COMPACT.format(**fill),
        prose=prose.format(**fill),
        expression=f"{n} * {f}",
        answer=str(value),
        steps=tuple(s.format(**fill) for s in CONVERT_STEPS),
    )


MONEY_COMPACT = "What is {x} {op} {y}?"
MONEY_PROSE = {
    "+": "A book costs {x} and a pen costs {y}. How much do they cost together, in dollars?",
    "-": "{name} pays for a {y} toy with a {x} bill. How much change does {name} get, in dollars?",
}
MONEY_STEPS = ("in cents: {p} {op} {q} = {r}", "{r} cents is {v} dollars")


@unit(
    "money_word_problems",
    "Word problems with money in dollars and cents",
    "4.MD.A.2",
    "4",
    words=vocab(MONEY_COMPACT, MONEY_PROSE.values(), MONEY_STEPS, NAMES),
    symbols="$+-=:,",
    constants=(100,),
)
def money_word_problems(draw) -> Problem:
    op = draw.choice("+-")
    if op == "+":
        p, q = 5 * draw.randint(5, 199), 5 * draw.randint(5, 199)
    else:
        p, q = 100 * draw.choice((5, 10, 20)), 0
        q = 5 * draw.randint(5, p // 5 - 1)
        while q % 100 == 0:
            q += 5
    x, y = R(p, 100), R(q, 100)
    value = x + y if op == "+" else x - y
    r = p + q if op == "+" else p - q
    xs, ys = money_text(as_fraction(x)), money_text(as_fraction(y))
    fill = {"x": f"${xs}", "y": f"${ys}", "op": op, "name": draw.choice(NAMES)}
    return Problem(
        compact=MONEY_COMPACT.format(**fill),
        prose=MONEY_PROSE[op].format(**fill),
        expression=f"{xs} {op} {ys}",
        answer=money_text(as_fraction(value)),
        steps=tuple(s.format(p=p, q=q, op=op, r=r, v=money_text(as_fraction(value))) for s in MONEY_STEPS),
    )


# --- grade 5 ---------------------------------------------------------------------------------

BRACKETS = (
    ("({a} + {b}) × {c}", "Add {a} and {b}, then multiply by {c}."),
    ("{c} × ({a} + {b})", "Multiply {c} by the sum of {a} and {b}."),
    ("({a} - {b}) × {c}", "Subtract {b} from {a}, then multiply by {c}."),
    ("({a} + {b}) ÷ {c}", "Add {a} and {b}, then divide by {c}."),
    ("{a} + {b} × {c}", "Multiply {b} by {c}, then add {a}."),
    ("{a} × {b} - {c}", "Multiply {a} by {b}, then subtract {c}."),
)
ORDER_STEPS = ("first {inner} = {v}", "then {outer} = {w}")
ORDER_PROSE_TAIL = " What number do you get?"


def _order_parts(form: int, a: int, b: int, c: int) -> tuple[str, sympy.Integer, str, sympy.Integer]:
    """(first step, its value, second step, the answer) for bracket form `form`."""
    if form in (0, 1):
        inner = Z(a) + Z(b)
        outer = f"{inner} × {c}" if form == 0 else f"{c} × {inner}"
        return f"{a} + {b}", inner, outer, inner * c
    if form == 2:
        inner = Z(a) - Z(b)
        return f"{a} - {b}", inner, f"{inner} × {c}", inner * c
    if form == 3:
        inner = Z(a) + Z(b)
        return f"{a} + {b}", inner, f"{inner} ÷ {c}", inner / c
    if form == 4:
        inner = Z(b) * Z(c)
        return f"{b} × {c}", inner, f"{a} + {inner}", a + inner
    inner = Z(a) * Z(b)
    return f"{a} × {b}", inner, f"{inner} - {c}", inner - c


@unit(
    "order_of_operations",
    "Evaluate expressions with parentheses; write an expression from words",
    ("5.OA.A.1", "5.OA.A.2"),
    "5",
    words=vocab(WHAT_IS, [p for _, p in BRACKETS], ORDER_STEPS, ORDER_PROSE_TAIL),
    symbols="()+-×÷=",
)
def order_of_operations(draw) -> Problem:
    form = draw.randint(0, len(BRACKETS) - 1)
    a, b, c = draw.number(2, 50), draw.number(2, 30), draw.randint(2, 9)
    if form == 2 and a <= b:
        a, b = max(a, b) + 1, min(a, b)
    if form == 3:  # a + b a multiple of c, a >= 2
        low = max(2, -(-(b + 2) // c))
        a = c * draw.randint(low, low + 10) - b
    if form == 5:
        c = draw.randint(2, a * b - 1)
    inner, v, outer, value = _order_parts(form, a, b, c)
    symbols, words = BRACKETS[form]
    expr = symbols.format(a=a, b=b, c=c)
    return Problem(
        compact=WHAT_IS.format(expr=expr),
        prose=words.format(a=a, b=b, c=c) + ORDER_PROSE_TAIL,
        expression=expr.replace("×", "*").replace("÷", "/"),
        answer=str(value),
        steps=(ORDER_STEPS[0].format(inner=inner, v=v), ORDER_STEPS[1].format(outer=outer, w=value)),
    )


@unit(
    "multi_digit_multiplication_fluent",
    "Multiply multi-digit whole numbers with the standard algorithm",
    "5.NBT.B.5",
    "5",
    words=vocab(WHAT_IS, PACK_PROSE, COLUMN_WORDS, ITEMS),
    symbols="×+=,:",
)
def multi_digit_multiplication_fluent(draw) -> Problem:
    a = draw.with_digits(draw.randint(3, 4)) if draw.balanced else draw.randint(100, 9999)
    return _multiply_problem(draw, a, _two_digit(draw))


@unit(
    "long_division_two_digit",
    "Divide up to four digits by a two-digit divisor",
    "5.NBT.B.6",
    "5",
    words=vocab(WHAT_IS, SHARE_PROSE, COLUMN_WORDS, ITEMS),
    symbols="÷×-=:;",
)
def long_division_two_digit(draw) -> Problem:
    d = _two_digit(draw)
    q = draw.number(11, 9999 // d)
    return _division_problem(draw, q * d, d)


DEC_ADD_PROSE = {
    "+": "{name} runs {x} kilometers on Monday and {y} kilometers on Tuesday. How many kilometers does "
    "{name} run in all?",
    "-": "A jug holds {x} liters of water. {name} pours out {y} liters. How many liters are left?",
}
DEC_STEPS = ("in hundredths: {x} is {p} and {y} is {q}", "{r} hundredths is {v}")


def _decimal(draw) -> int:
    """A value in hundredths with one or two decimals, 0.1 to 99.99 (balanced over digit counts)."""
    value = draw.number(1, 9999)
    return value * 10 if draw.chance(0.3) and value < 1000 else value


@unit(
    "add_subtract_decimals",
    "Add and subtract decimals to hundredths",
    "5.NBT.B.7",
    "5",
    words=vocab(WHAT_IS, *DEC_ADD_PROSE.values(), DEC_STEPS, COLUMN_WORDS, NAMES),
    symbols="+-=,:",
)
def add_subtract_decimals(draw) -> Problem:
    op = draw.choice("+-")
    p, q = _decimal(draw), _decimal(draw)
    if op == "-":
        while p == q:
            q = _decimal(draw)
        p, q = max(p, q), min(p, q)
    x, y = R(p, 100), R(q, 100)
    value = x + y if op == "+" else x - y
    r, column, carries = _add(p, q) if op == "+" else _subtract(p, q)
    xs, ys, vs = (decimal_text(as_fraction(v)) for v in (x, y, value))
    steps = (DEC_STEPS[0].format(x=xs, y=ys, p=p, q=q), *column, DEC_STEPS[1].format(r=r, v=vs))
    return Problem(
        compact=WHAT_IS.format(expr=f"{xs} {op} {ys}"),
        prose=DEC_ADD_PROSE[op].format(x=xs, y=ys, name=draw.choice(NAMES)),
        expression=f"{xs} {op} {ys}",
        answer=vs,
        steps=steps,
        carries=carries,
        digits=(_width(p), _width(q)),
    )


DEC_MUL_PROSE = "Each bottle holds {x} liters. How many liters do {n} bottles hold?"
DEC_MUL_STEPS = ("{x} is {p} tenths", "{p} × {n} = {r}", "{r} tenths is {v}")


@unit(
    "multiply_decimals",
    "Multiply a decimal in tenths by a whole number",
    "5.NBT.B.7",
    "5",
    words=vocab(WHAT_IS, DEC_MUL_PROSE, DEC_MUL_STEPS),
    symbols="×=",
)
def multiply_decimals(draw) -> Problem:
    p = draw.number(11, 999)
    while p % 10 == 0:
        p += 1
    n = draw.randint(2, 9)
    x = R(p, 10)
    value = x * n
    xs, vs = decimal_text(as_fraction(x)), decimal_text(as_fraction(value))
    return Problem(
        compact=WHAT_IS.format(expr=f"{xs} × {n}"),
        prose=DEC_MUL_PROSE.format(x=xs, n=n),
        expression=f"{xs} * {n}",
        answer=vs,
        steps=tuple(s.format(x=xs, p=p, n=n, r=p * n, v=vs) for s in DEC_MUL_STEPS),
    )


UNLIKE_PROSE = {
    "+": "{name} eats {x} of a pizza and {other} eats {y} of the same pizza. How much of the pizza "
    "do they eat together?",
    "-": "{name} has {x} of a cup of flour and uses {y} of a cup. How much flour is left, in cups?",
}
UNLIKE_STEPS = (
    "a common denominator of {b} and {d} is {m}",
    "{rewritten}",
    "{xm} {op} {ym} = {s}/{m}",
)


def _rewrites(*pairs: tuple[str, str]) -> list[str]:
    """The `a/b = c/d` lines for the fractions that the common denominator changes."""
    return [f"{old} = {new}" for old, new in pairs if old != new]


@unit(
    "add_unlike_fractions",
    "Add and subtract fractions with unlike denominators",
    "5.NF.A.1",
    "5",
    words=vocab(WHAT_IS, *UNLIKE_PROSE.values(), UNLIKE_STEPS, SIMPLIFIED, NAMES),
    symbols="/+-=,",
)
def add_unlike_fractions(draw) -> Problem:
    op = draw.choice("+-")
    (a, b), (c, d) = _proper(draw), _proper(draw)
    while d == b or (op == "-" and Fraction(a, b) == Fraction(c, d)):
        c, d = _proper(draw)
    if op == "-" and Fraction(a, b) < Fraction(c, d):
        (a, b), (c, d) = (c, d), (a, b)
    value = R(a, b) + R(c, d) if op == "+" else R(a, b) - R(c, d)
    m = _lcm_steps(b, d)
    xm, ym = a * (m // b), c * (m // d)
    s = xm + ym if op == "+" else xm - ym
    x, y = f"{a}/{b}", f"{c}/{d}"
    steps = [
        UNLIKE_STEPS[0].format(b=b, d=d, m=m),
        UNLIKE_STEPS[1].format(rewritten=" and ".join(_rewrites((x, f"{xm}/{m}"), (y, f"{ym}/{m}")))),
        UNLIKE_STEPS[2].format(xm=f"{xm}/{m}", ym=f"{ym}/{m}", op=op, s=s, m=m),
    ]
    if as_fraction(value).denominator != m:
        steps.append(SIMPLIFIED.format(a=f"{s}/{m}", b=_fraction_answer(value)))
    name, other = two_names(draw)
    return Problem(
        compact=WHAT_IS.format(expr=f"{x} {op} {y}"),
        prose=UNLIKE_PROSE[op].format(x=x, y=y, name=name, other=other),
        expression=f"{a}/{b} {op} {c}/{d}",
        answer=_fraction_answer(value),
        steps=tuple(steps),
    )


TIMES_PROSE = "{name} has {y} of a cake and eats {x} of it. What fraction of the whole cake does {name} eat?"
TIMES_STEPS = (
    "multiply the numerators: {a} × {c} = {n}",
    "multiply the denominators: {b} × {d} = {m}",
    "{x} × {y} = {n}/{m}",
)


@unit(
    "multiply_fractions",
    "Multiply a fraction by a fraction",
    "5.NF.B.4",
    "5",
    words=vocab(WHAT_IS, TIMES_PROSE, TIMES_STEPS, SIMPLIFIED, NAMES),
    symbols="/×=,:",
)
def multiply_fractions(draw) -> Problem:
    (a, b), (c, d) = _proper(draw), _proper(draw)
    value = R(a, b) * R(c, d)
    n, m = a * c, b * d
    x, y = f"{a}/{b}", f"{c}/{d}"
    steps = [s.format(a=a, b=b, c=c, d=d, n=n, m=m, x=x, y=y) for s in TIMES_STEPS]
    if as_fraction(value).denominator != m:
        steps.append(SIMPLIFIED.format(a=f"{n}/{m}", b=_fraction_answer(value)))
    return Problem(
        compact=WHAT_IS.format(expr=f"{x} × {y}"),
        prose=TIMES_PROSE.format(x=x, y=y, name=draw.choice(NAMES)),
        expression=f"{a}/{b} * {c}/{d}",
        answer=_fraction_answer(value),
        steps=tuple(steps),
    )


VOLUME_COMPACT = "What is the volume of a box {l} cm long, {w} cm wide and {h} cm high, in cubic cm?"
VOLUME_PROSE = (
    "A toy box is {l} inches long, {w} inches wide and {h} inches high. How many cubic inches does it hold?"
)
VOLUME_STEPS = ("the base is {l} × {w} = {b} square units", "volume is base × height: {b} × {h} = {v}")


@unit(
    "volume_of_prisms",
    "Volume of a right rectangular prism",
    "5.MD.C.5",
    "5",
    words=vocab(VOLUME_COMPACT, VOLUME_PROSE, VOLUME_STEPS),
    symbols="×=,:",
)
def volume_of_prisms(draw) -> Problem:
    length, w, h = draw.number(2, 20), draw.number(2, 12), draw.number(2, 12)
    base = Z(length) * Z(w)
    value = base * h
    fill = {"l": length, "w": w, "h": h, "b": base, "v": value}
    return Problem(
        compact=VOLUME_COMPACT.format(**fill),
        prose=VOLUME_PROSE.format(**fill),
        expression=f"{length} * {w} * {h}",
        answer=str(value),
        steps=tuple(s.format(**fill) for s in VOLUME_STEPS),
    )
