"""The Beyond-K-5 units (grades 6-8): integers, rational operations, exponents, expressions,
equations, ratios and percent, exponent laws and roots, linear functions.

Each unit declares the features it may use (negative numbers, exponents, variables, equations to
solve) and the stage-4 notation families its compact statements trigger; the audit checks both.
SymPy computes every answer: rationals for arithmetic, `sqrt` for roots (so `√12` becomes `2√3`
in the steps, never an unsimplified template answer), exact rational solutions of linear
equations (`18x + 22 = 20` gives `-1/9`). The grader reads numbers only, so a root problem asks for
a whole number and shows the simplified radicals on the way.
"""

from __future__ import annotations

import math

import sympy

from littlekit.curriculum.formats import decimal_text, fraction_text, signed
from littlekit.curriculum.prose import NAMES, as_fraction, as_int
from littlekit.curriculum.registry import Problem, unit, vocab

Z = sympy.Integer
R = sympy.Rational
X = sympy.Symbol("x")
WHAT_IS = "What is {expr}?"
ALGEBRA = "+-×÷=()^/"


def _nonzero(draw, low: int, high: int) -> int:
    value = 0
    while value == 0:
        value = draw.randint(low, high)
    return value


def _text(value: sympy.Rational) -> str:
    return fraction_text(as_fraction(value))


def _quotient(top: int, bottom: int, value: sympy.Rational) -> str:
    """`top/bottom = value`, without repeating a quotient already in lowest terms."""
    shown = f"{top}/{signed(bottom)}"
    return shown if shown == _text(value) else f"{shown} = {_text(value)}"


def _term(coefficient: int, var: str = "x") -> str:
    """A coefficient times a variable as written: 3x, -x, x, -12x."""
    if coefficient == 1:
        return var
    if coefficient == -1:
        return f"-{var}"
    return f"{coefficient}{var}"


def _linear(p: int, q: int, var: str = "x") -> tuple[str, str]:
    """(written, SymPy-readable) forms of p·var + q: ("3x - 5", "3*x - 5")."""
    written = _term(p, var)
    code = f"{p}*{var}"
    if q:
        sign = "+" if q > 0 else "-"
        written += f" {sign} {abs(q)}"
        code += f" {sign} {abs(q)}"
    return written, code


# --- grade 6: the number system ---------------------------------------------------------------

NEG_PROSE = (
    "At noon it is {a} degrees. By night the temperature falls {b} degrees. What is the temperature "
    "at night, in degrees?"
)
NEG_STEPS = ("{b} is more than {a}, so the result is negative", "{b} - {a} = {d}", "{a} - {b} = {v}")


@unit(
    "negative_results",
    "Subtraction with a negative result: positive and negative numbers together",
    "6.NS.C.5",
    "6",
    words=vocab(WHAT_IS, NEG_PROSE, NEG_STEPS),
    symbols="-=,",
    allows=("negative",),
)
def negative_results(draw) -> Problem:
    a = draw.number(1, 99)
    b = draw.number(a + 1, a + 99)
    value = Z(a) - Z(b)
    return Problem(
        compact=WHAT_IS.format(expr=f"{a} - {b}"),
        prose=NEG_PROSE.format(a=a, b=b),
        expression=f"{a} - {b}",
        answer=str(value),
        steps=tuple(s.format(a=a, b=b, d=b - a, v=value) for s in NEG_STEPS),
        digits=(len(str(a)), len(str(b))),
    )


ORDER = {
    "compare": (
        "Compare {a} and {b}. Write <, > or =.",
        "In the morning it is {a} degrees and at noon it is {b} degrees. Compare the morning temperature "
        "with the noon temperature: write <, > or =.",
    ),
    "distance": (
        "What is |{a} - {b}|?",
        "What is the distance between {a} and {b} on a number line?",
    ),
}
ORDER_STEPS = (
    "{a} is to the {side} of {b} on a number line, so {a} {sign} {b}",
    "{a} - {b} = {d}",
    "the absolute value of {d} is {v}",
)


@unit(
    "order_and_absolute_value",
    "Order integers and find distances with absolute value",
    "6.NS.C.7",
    "6",
    words=vocab(*(t for pair in ORDER.values() for t in pair), ORDER_STEPS, "left right"),
    symbols="<>=|-(),",
    allows=("negative",),
)
def order_and_absolute_value(draw) -> Problem:
    a, b = _nonzero(draw, -30, 30), _nonzero(draw, -30, 30)
    while a == b or min(a, b) > 0:
        a, b = _nonzero(draw, -30, 30), _nonzero(draw, -30, 30)
    kind = draw.choice(tuple(ORDER))
    compact, prose = ORDER[kind]
    if kind == "compare":
        difference = sympy.sign(Z(a) - Z(b))
        sign = {1: ">", -1: "<"}[int(difference)]
        side = "right" if sign == ">" else "left"
        steps = (ORDER_STEPS[0].format(a=a, side=side, b=b, sign=sign),)
        answer, expression = sign, f"Compare({a}, {b})"
    else:
        d = Z(a) - Z(b)
        value = sympy.Abs(d)
        steps = (ORDER_STEPS[1].format(a=a, b=signed(b), d=d), ORDER_STEPS[2].format(d=d, v=value))
        answer, expression = str(value), f"Abs({a} - ({b}))"
    fill = {"a": a, "b": b if kind == "compare" else signed(b)}
    return Problem(
        compact=compact.format(**fill),
        prose=prose.format(a=a, b=b),
        expression=expression,
        answer=answer,
        steps=steps,
    )


# --- grade 7: rational number operations ------------------------------------------------------

INTEGER_CASES = {
    "rise": "The temperature is {a} degrees. It rises {m} degrees. What is the temperature now, in degrees?",
    "fall": "The temperature is {a} degrees. It falls {m} degrees. What is the temperature now, in degrees?",
    "colder": "At noon it is {a} degrees and at night it is {b} degrees. How many degrees colder is "
    "the night?",
    "drop": "The temperature is {a} degrees. It drops {b} degrees. What is the temperature now, in degrees?",
}
INTEGER_STEPS = (
    "subtracting {b} is adding {nb}: {a} + {nbs}",
    "both are negative: add the sizes, {x} + {y} = {s}, and keep the sign: {v}",
    "the signs differ: subtract the sizes, {big} - {small} = {d}, and take the sign of {larger}: {v}",
)


def _add_integers_steps(a: int, b: int) -> str:
    value = Z(a) + Z(b)
    if a < 0 and b < 0:
        return INTEGER_STEPS[1].format(x=-a, y=-b, s=-(a + b), v=value)
    if a > 0 and b > 0:
        return f"{a} + {b} = {value}"
    big, small = max(abs(a), abs(b)), min(abs(a), abs(b))
    larger = a if abs(a) >= abs(b) else b
    return INTEGER_STEPS[2].format(big=big, small=small, d=big - small, larger=larger, v=value)


@unit(
    "integer_addition_subtraction",
    "Add and subtract integers",
    "7.NS.A.1",
    "7",
    words=vocab(WHAT_IS, INTEGER_CASES.values(), INTEGER_STEPS),
    symbols="+-=(),:",
    allows=("negative",),
)
def integer_addition_subtraction(draw) -> Problem:
    case = draw.choice(tuple(INTEGER_CASES))
    m = draw.randint(2, 40)
    if case == "rise":  # a negative number plus a positive one
        a, b, op = -draw.randint(1, 40), m, "+"
    elif case == "fall":  # any number plus a negative one
        a, b, op = _nonzero(draw, -40, 40), -m, "+"
    elif case == "colder":  # subtracting a negative number
        b, op = -m, "-"
        a = _nonzero(draw, b + 1, 40)
    else:  # a negative number minus a positive one
        a, b, op = -draw.randint(1, 40), m, "-"
    value = Z(a) + Z(b) if op == "+" else Z(a) - Z(b)
    expr = f"{a} {op} {signed(b)}"
    steps = []
    if op == "-":
        steps.append(INTEGER_STEPS[0].format(b=signed(b), nb=-b, a=a, nbs=signed(-b)))
    steps.append(_add_integers_steps(a, b if op == "+" else -b))
    return Problem(
        compact=WHAT_IS.format(expr=expr),
        prose=INTEGER_CASES[case].format(a=a, b=b, m=m),
        expression=expr,
        answer=str(value),
        steps=tuple(steps),
    )


PRODUCT_PROSE = {
    "loss": "A tank loses {a} liters of water each hour. What is the change in the water after {b} "
    "hours, in liters?",
    "rate": "The temperature falls {n} degrees in {b} hours at a steady rate. What is the change per "
    "hour, in degrees?",
    "times": "What do you get when you multiply {x} by {y}?",
    "divide": "What do you get when you divide {x} by {y}?",
}
SIGN_STEPS = (
    "{a} × {b} = {p}",
    "{a} ÷ {b} = {p}",
    "one negative number, so the result is negative: {v}",
    "two negative numbers, so the result is positive: {v}",
)


@unit(
    "integer_multiplication_division",
    "Multiply and divide integers with the sign rules",
    "7.NS.A.2",
    "7",
    words=vocab(WHAT_IS, PRODUCT_PROSE.values(), SIGN_STEPS),
    symbols="×÷-=(),:",
    allows=("negative",),
)
def integer_multiplication_division(draw) -> Problem:
    a, b = draw.fact(2, 12)
    signs = draw.choice(((-1, 1), (1, -1), (-1, -1)))
    x, y = signs[0] * a, signs[1] * b
    divide = draw.chance(0.5)
    if divide:
        x = signs[0] * a * b  # an exact quotient
        value = R(x, y)
        compact = f"{x} ÷ {signed(y)}"
        expression = f"{x} / ({y})"
        first = SIGN_STEPS[1].format(a=abs(x), b=abs(y), p=abs(x) // abs(y))
        prose_key = "rate" if x < 0 < y else "divide"
    else:
        value = Z(x) * Z(y)
        compact = f"{x} × {signed(y)}"
        expression = f"({x}) * ({y})"
        first = SIGN_STEPS[0].format(a=abs(x), b=abs(y), p=abs(x * y))
        prose_key = "loss" if x < 0 < y else "times"
    rule = SIGN_STEPS[3 if x < 0 and y < 0 else 2].format(v=value)
    fill = {"a": -x if x < 0 else x, "b": y, "n": -x, "x": x, "y": y}
    return Problem(
        compact=WHAT_IS.format(expr=compact),
        prose=PRODUCT_PROSE[prose_key].format(**fill),
        expression=expression,
        answer=str(value),
        steps=(first, rule),
    )


RATIONAL_PROSE = {
    "fraction": "A price changes by {x} of a dollar on Monday and by {y} of a dollar on Tuesday. What is "
    "the total change, in dollars?",
    "decimal": "The temperature changes by {x} degrees and then by {y} degrees. What is the total change, "
    "in degrees?",
}
RATIONAL_STEPS = (
    "a common denominator is {m}: {x} = {xm} and {y} = {ym}",
    "{xm} + {ym} = {s}/{m}",
    "in lowest terms: {v}",
)


@unit(
    "rational_addition",
    "Add positive and negative fractions and decimals",
    ("7.NS.A.1", "7.NS.A.3"),
    "7",
    words=vocab(WHAT_IS, RATIONAL_PROSE.values(), RATIONAL_STEPS, "in hundredths is"),
    symbols="/+-=(),:",
    allows=("negative",),
)
def rational_addition(draw) -> Problem:
    kind = draw.choice(tuple(RATIONAL_PROSE))
    if kind == "fraction":
        b, d = draw.randint(2, 12), draw.randint(2, 12)
        while b == d:
            d = draw.randint(2, 12)
        x = R(_nonzero(draw, -2 * b + 1, 2 * b - 1), b)
        y = R(_nonzero(draw, -2 * d + 1, 2 * d - 1), d)
        while x.q != b or y.q != d or (x > 0 and y > 0) or x + y == 0:
            x = R(_nonzero(draw, -2 * b + 1, 2 * b - 1), b)
            y = R(_nonzero(draw, -2 * d + 1, 2 * d - 1), d)
        m = b * d // math.gcd(b, d)
        xm, ym = int(x * m), int(y * m)
        value = x + y
        xs, ys = _text(x), _text(y)
        steps = [
            RATIONAL_STEPS[0].format(m=m, x=xs, y=ys, xm=f"{xm}/{m}", ym=f"{ym}/{m}"),
            RATIONAL_STEPS[1].format(xm=f"{xm}/{m}", ym=f"{signed(ym)}/{m}", s=xm + ym, m=m),
        ]
        if value.q != m:
            steps.append(RATIONAL_STEPS[2].format(v=_text(value)))
        expression = f"{x.p}/{x.q} + ({y.p})/{y.q}"
        answer = _text(value)
    else:
        p, q = _nonzero(draw, -999, 999), _nonzero(draw, -999, 999)
        while (p > 0 and q > 0) or p + q == 0:
            p, q = _nonzero(draw, -999, 999), _nonzero(draw, -999, 999)
        x, y = R(p, 100), R(q, 100)
        value = x + y
        xs, ys = decimal_text(as_fraction(x)), decimal_text(as_fraction(y))
        answer = decimal_text(as_fraction(value))
        steps = [f"in hundredths: {p} + {signed(q)} = {p + q}", f"{p + q} hundredths is {answer}"]
        expression = f"{xs} + ({ys})"
    ys_shown = ys if not ys.startswith("-") else f"({ys})"
    return Problem(
        compact=WHAT_IS.format(expr=f"{xs} + {ys_shown}"),
        prose=RATIONAL_PROSE[kind].format(x=xs, y=ys),
        expression=expression,
        answer=answer,
        steps=tuple(steps),
    )


# --- grade 6: expressions and equations -------------------------------------------------------

POWER_COMPACT = "Evaluate {expr}."
POWER_PROSE_ONE = (
    "A cell splits into {b} cells every hour. Starting with one cell, how many cells "
    "are there after {e} hours?"
)
POWER_PROSE_TWO = "What is {b} to the power of {e} {word} {c} to the power of {f}?"
POWER_STEP = "{b}^{e} = {product} = {v}"


def _power(b: int, e: int) -> tuple[sympy.Integer, str]:
    value = Z(b) ** e
    return value, POWER_STEP.format(b=b, e=e, product=" × ".join([str(b)] * e), v=value)


def _power_pair(draw) -> tuple[int, int]:
    b = draw.randint(2, 9)
    e = draw.randint(2, max(2, min(5, int(math.log(10_000, b)))))
    return b, e


@unit(
    "whole_number_exponents",
    "Evaluate numerical expressions with whole-number exponents",
    "6.EE.A.1",
    "6",
    words=vocab(POWER_COMPACT, POWER_PROSE_ONE, POWER_PROSE_TWO, "plus minus", POWER_STEP),
    symbols="^×+-=",
    allows=("exponent", "negative"),
    families=("exponents",),
)
def whole_number_exponents(draw) -> Problem:
    b, e = _power_pair(draw)
    one, step_one = _power(b, e)
    if draw.chance(0.4):
        return Problem(
            compact=POWER_COMPACT.format(expr=f"{b}^{e}"),
            prose=POWER_PROSE_ONE.format(b=b, e=e),
            expression=f"{b}**{e}",
            answer=str(one),
            steps=(step_one,),
        )
    c, f = _power_pair(draw)
    while (c, f) == (b, e):
        c, f = _power_pair(draw)
    op = draw.choice("+-")
    two, step_two = _power(c, f)
    value = one + two if op == "+" else one - two
    return Problem(
        compact=POWER_COMPACT.format(expr=f"{b}^{e} {op} {c}^{f}"),
        prose=POWER_PROSE_TWO.format(b=b, e=e, c=c, f=f, word="plus" if op == "+" else "minus"),
        expression=f"{b}**{e} {op} {c}**{f}",
        answer=str(value),
        steps=(step_one, step_two, f"{one} {op} {two} = {value}"),
    )


EXPRESSION_FORMS = {
    "ax+b": "Tickets cost ${a} each plus a ${b} fee. How much do {v} tickets cost, in dollars?",
    "ax-b": "{name} earns ${a} each hour and spends ${b} on lunch. How many dollars does {name} keep "
    "after {v} hours?",
    "a(x+b)": "Each of {a} teams has {v} players and {b} coaches. How many people are on the teams in all?",
    "ax+by": "Apples cost ${a} each and pears cost ${b} each. How much do {v} apples and {w} pears "
    "cost, in dollars?",
}
EXPRESSION_COMPACT = "Evaluate {expr} when {assign}."
SUBSTITUTE = "substitute {assign}: {filled} = {v}"


@unit(
    "evaluate_expressions",
    "Evaluate expressions with variables at given values",
    "6.EE.A.2",
    "6",
    words=vocab(EXPRESSION_COMPACT, EXPRESSION_FORMS.values(), SUBSTITUTE, "and x y", NAMES),
    symbols="+-×=()$,:",
    allows=("variable",),
    families=("equations",),  # stage 4 matches a(x + b); 3x + 2 and 3x + 2y pass it
)
def evaluate_expressions(draw) -> Problem:
    form = draw.choice(tuple(EXPRESSION_FORMS))
    a, b, v, w = draw.randint(2, 12), draw.randint(2, 30), draw.randint(2, 12), draw.randint(2, 12)
    y = sympy.Symbol("y")
    if form == "ax+b":
        written, code, filled = f"{a}x + {b}", f"{a}*x + {b}", f"{a} × {v} + {b}"
        expr = a * X + b
    elif form == "ax-b":
        b = draw.randint(2, a * v - 1)
        written, code, filled = f"{a}x - {b}", f"{a}*x - {b}", f"{a} × {v} - {b}"
        expr = a * X - b
    elif form == "a(x+b)":
        written, code, filled = f"{a}(x + {b})", f"{a}*(x + {b})", f"{a} × ({v} + {b})"
        expr = a * (X + b)
    else:
        written, code, filled = f"{a}x + {b}y", f"{a}*x + {b}*y", f"{a} × {v} + {b} × {w}"
        expr = a * X + b * y
    values = {X: Z(v), y: Z(w)}
    value = expr.xreplace(values)
    assign = f"x = {v}" + (f" and y = {w}" if form == "ax+by" else "")
    subs = f"Subs({code}, x, {v}" + (f", y, {w})" if form == "ax+by" else ")")
    return Problem(
        compact=EXPRESSION_COMPACT.format(expr=written, assign=assign),
        prose=EXPRESSION_FORMS[form].format(a=a, b=b, v=v, w=w, name=draw.choice(NAMES)),
        expression=subs,
        answer=str(value),
        steps=(SUBSTITUTE.format(assign=assign, filled=filled, v=value),),
    )


SOLVE = "Solve {equation} for x."
ONE_STEP_PROSE = {
    "+": "A number plus {p} is {q}. What is the number?",
    "×": "{p} times a number is {q}. What is the number?",
}
ONE_STEP_STEPS = {
    "+": "subtract {p} from both sides: x = {q} - {p} = {v}",
    "×": "divide both sides by {p}: x = {q}/{p} = {v}",
}


@unit(
    "one_step_equations",
    "Solve one-step equations x + p = q and px = q",
    "6.EE.B.7",
    "6",
    words=vocab(SOLVE, ONE_STEP_PROSE.values(), ONE_STEP_STEPS.values(), "x"),
    symbols="+-=/,:",
    allows=("variable", "equation"),
    families=("equations",),
)
def one_step_equations(draw) -> Problem:
    op = draw.choice("+×")
    if op == "+":
        p, v = draw.number(2, 99), draw.number(2, 99)
        q = p + v
        value = Z(q) - Z(p)
        equation, code = f"x + {p} = {q}", f"Eq(x + {p}, {q})"
    else:
        p = draw.randint(2, 12)
        q = p * draw.randint(2, 15) if draw.chance(0.75) else draw.randint(2, 12 * p)
        while q == p:  # x = 1
            q += 1
        value = R(q, p)
        equation, code = f"{p}x = {q}", f"Eq({p}*x, {q})"
    return Problem(
        compact=SOLVE.format(equation=equation),
        prose=ONE_STEP_PROSE[op].format(p=p, q=q),
        expression=code,
        answer=_text(value),
        steps=(ONE_STEP_STEPS[op].format(p=p, q=q, v=_text(value)),),
    )


# --- grade 6: ratios and percent --------------------------------------------------------------

RATIO_COMPACT = "The ratio {a} : {b} is equal to {c} : n. What is n?"
RATIO_PROSE = "{a} pens cost ${b}. At the same rate, how many dollars do {c} pens cost?"
RATIO_STEPS = ("the rate for one is {b} ÷ {a} = {u}", "{c} × {u} = {v}")


@unit(
    "ratios_and_rates",
    "Unit rates and equivalent ratios",
    ("6.RP.A.2", "6.RP.A.3"),
    "6",
    words=vocab(RATIO_COMPACT, RATIO_PROSE, RATIO_STEPS),
    symbols=":÷×=/$",
    allows=("variable", "equation"),
)
def ratios_and_rates(draw) -> Problem:
    a = draw.randint(2, 12)
    b = a * draw.randint(2, 9) if draw.chance(0.5) else draw.randint(2, 60)
    c = draw.randint(2, 30)
    while c == a or (b * c) % a:
        c = draw.randint(2, 30)
    unit_rate = R(b, a)
    value = unit_rate * c
    return Problem(
        compact=RATIO_COMPACT.format(a=a, b=b, c=c),
        prose=RATIO_PROSE.format(a=a, b=b, c=c),
        expression=f"{b}/{a} * {c}",
        answer=str(value),
        steps=tuple(s.format(a=a, b=b, c=c, u=_text(unit_rate), v=value) for s in RATIO_STEPS),
    )


PERCENT = {
    "of": (
        "What is {p}% of {n}?",
        "A jacket costs ${n} and is {p}% off. How many dollars do you save?",
        ("{p}% is {p}/100", "{p}/100 × {n} = {v}"),
    ),
    "what": (
        "{k} is what percent of {n}?",
        "{name} gets {k} of {n} questions right. What percent is that?",
        ("{k}/{n} = {f}", "{f} × 100 = {v}"),
    ),
    "whole": (
        "{k} is {p}% of what number?",
        "{name} has read {k} pages, which is {p}% of a book. How many pages does the book have?",
        ("{p}% is {p}/100", "{k} ÷ {p}/100 = {v}"),
    ),
}


@unit(
    "percent",
    "Percent of a quantity, and finding the whole or the percent",
    "6.RP.A.3",
    "6",
    words=vocab(*(t for three in PERCENT.values() for t in (three[0], three[1], *three[2])), NAMES),
    symbols="%$/×÷=",
    constants=(100,),
)
def percent(draw) -> Problem:
    kind = draw.choice(tuple(PERCENT))
    p = draw.choice((5, 10, 15, 20, 25, 30, 40, 45, 50, 60, 75, 80, 90))
    n = 20 * draw.randint(1, 25)
    share = R(p, 100)
    k = share * n
    while n == 100 or not k.is_Integer or k == 0:
        n = 20 * draw.randint(1, 25)
        k = share * n
    if kind == "of":
        value, expression = share * n, f"{p}/100 * {n}"
    elif kind == "what":
        value, expression = R(as_int(k), n) * 100, f"{k}/{n} * 100"
    else:
        value, expression = k / share, f"{k} / ({p}/100)"
    compact, prose, steps = PERCENT[kind]
    fill = {"p": p, "n": n, "k": k, "v": value, "f": _text(R(as_int(k), n)), "name": draw.choice(NAMES)}
    return Problem(
        compact=compact.format(**fill),
        prose=prose.format(**fill),
        expression=expression,
        answer=str(value),
        steps=tuple(s.format(**fill) for s in steps),
    )


# --- grade 7: two-step equations --------------------------------------------------------------

TWO_STEP_WORDS = (
    "{name} buys {p} notebooks at the same price and a ${q} pen, and pays ${r} in all. "
    "What is the price of one notebook, in dollars?"
)
TWO_STEP_VERBAL = "{p} times a number, {sign} {m}, is {r}. What is the number?"
TWO_STEP_STEPS = (
    "{how} both sides: {px} = {rest}",
    "divide both sides by {p}: x = {quotient}",
)


@unit(
    "two_step_equations",
    "Solve equations px + q = r with integer coefficients",
    "7.EE.B.4",
    "7",
    words=vocab(
        SOLVE, TWO_STEP_WORDS, TWO_STEP_VERBAL, "plus minus", TWO_STEP_STEPS, "subtract from add to", NAMES
    ),
    symbols="+-=/$(),:",
    allows=("variable", "equation", "negative"),
    families=("equations",),
)
def two_step_equations(draw) -> Problem:
    p, q = _nonzero(draw, -12, 12), _nonzero(draw, -50, 50)
    while abs(p) == 1:
        p = _nonzero(draw, -12, 12)
    x = _nonzero(draw, -20, 20) if draw.chance(0.7) else R(_nonzero(draw, -40, 40), abs(p))
    r = Z(p) * x + q
    while not r.is_Integer or r == 0 or x == r:
        x = _nonzero(draw, -20, 20)
        r = Z(p) * x + q
    r = as_int(r)
    value = (Z(r) - q) / p
    written, code = _linear(p, q)
    how = f"subtract {q} from" if q > 0 else f"add {-q} to"
    steps = (
        TWO_STEP_STEPS[0].format(how=how, px=_term(p), rest=r - q),
        TWO_STEP_STEPS[1].format(p=p, quotient=_quotient(r - q, p, value)),
    )
    if p > 0 and q > 0 and value.is_Integer and value > 0:
        prose = TWO_STEP_WORDS.format(name=draw.choice(NAMES), p=p, q=q, r=r)
    else:
        prose = TWO_STEP_VERBAL.format(p=p, sign="plus" if q > 0 else "minus", m=abs(q), r=r)
    return Problem(
        compact=SOLVE.format(equation=f"{written} = {r}"),
        prose=prose,
        expression=f"Eq({code}, {r})",
        answer=_text(value),
        steps=steps,
    )


# --- grade 8: expressions and equations -------------------------------------------------------

LAWS = {
    "product": (
        "{b}^{me} × {b}^{ne}",
        "Multiply {b} to the power of {m} by {b} to the power of {n}. What is the result?",
    ),
    "quotient": (
        "{b}^{me} ÷ {b}^{ne}",
        "Divide {b} to the power of {m} by {b} to the power of {n}. What is the result?",
    ),
    "power": (
        "({b}^{me})^{ne}",
        "Raise {b} to the power of {m}, then raise that to the power of {n}. What is the result?",
    ),
}
LAW_STEPS = {
    "product": "same base: add the exponents, {m} + {ns} = {k}",
    "quotient": "same base: subtract the exponents, {m} - {ns} = {k}",
    "power": "a power of a power: multiply the exponents, {m} × {ns} = {k}",
}
LAW_VALUE = ("{b}^{k} = {v}", "{b}^({k}) = 1/{b}^{a} = {v}", "any nonzero number to the power 0 is 1")


@unit(
    "exponent_laws",
    "Properties of integer exponents on numerical expressions",
    "8.EE.A.1",
    "8",
    words=vocab(POWER_COMPACT, [t for pair in LAWS.values() for t in pair], LAW_STEPS.values(), LAW_VALUE),
    symbols="^()×÷+-=/,:",
    allows=("exponent", "negative"),
    families=("exponents",),
)
def exponent_laws(draw) -> Problem:
    law = draw.choice(tuple(LAWS))
    b = draw.randint(2, 6)
    k_max = max(1, min(4, int(math.log(2000, b))))
    while True:
        m, n = _nonzero(draw, -6, 7), _nonzero(draw, -6, 7)
        if law == "power" and (abs(n) == 1 or abs(m) == 1) or law == "quotient" and m == n:
            continue  # (b^1)^n is no law at work; b^m ÷ b^m cancels itself (the review log's find)
        k = {"product": m + n, "quotient": m - n, "power": m * n}[law]
        if -k_max <= k <= k_max and m != 1 and n != 1:
            break
    base = Z(b)
    value = {"product": base**m * base**n, "quotient": base**m / base**n, "power": (base**m) ** n}[law]
    symbols, words = LAWS[law]
    steps = [LAW_STEPS[law].format(m=m, ns=signed(n), k=k)]
    if k > 0:
        steps.append(LAW_VALUE[0].format(b=b, k=k, v=value))
    elif k < 0:
        steps.append(LAW_VALUE[1].format(b=b, k=k, a=-k, d=base**-k, v=_text(value)))
    else:
        steps.append(LAW_VALUE[2])
    code = {
        "product": f"{b}**({m}) * {b}**({n})",
        "quotient": f"{b}**({m}) / {b}**({n})",
        "power": f"({b}**({m}))**({n})",
    }
    fill = {"b": b, "m": m, "n": n, "me": m if m > 0 else f"({m})", "ne": n if n > 0 else f"({n})"}
    return Problem(
        compact=POWER_COMPACT.format(expr=symbols.format(**fill)),
        prose=words.format(**fill),
        expression=code[law],
        answer=_text(value),
        steps=tuple(steps),
    )


ROOTS = {
    "square": (
        "What is √{a}?",
        "A square garden has an area of {a} square meters. How long is one side, in meters?",
    ),
    "cube": (
        "What is ∛{a}?",
        "A cube box holds {a} cubic centimeters. How long is one edge, in centimeters?",
    ),
    "product": ("What is √{a} × √{b}?", "What is the square root of {a} times the square root of {b}?"),
    "solve": (
        "Solve x^2 = {a}. Give the positive solution.",
        "A number times itself is {a}. What is the positive number?",
    ),
}
ROOT_STEPS = (
    "{n} × {n} = {a}, so √{a} = {n}",
    "{n} × {n} × {n} = {a}, so ∛{a} = {n}",
    "simplify: {simplified}",
    "{ra} × {rb} = {factors} = {v}",
    "x = √{a} = {n}",
)


def _radical(n: int) -> tuple[int, int, str]:
    """(coefficient, square-free part, text) of √n as SymPy simplifies it: √12 -> (2, 3, '2√3')."""
    root = sympy.sqrt(n)
    coefficient, rest = root.as_coeff_Mul()
    inside = int(rest.args[0]) if rest != 1 else 1
    c = int(coefficient)
    text = f"√{inside}" if c == 1 else (str(c) if inside == 1 else f"{c}√{inside}")
    return c, inside, text


@unit(
    "square_and_cube_roots",
    "Square roots and cube roots of perfect squares and cubes; products of roots",
    "8.EE.A.2",
    "8",
    words=vocab([t for pair in ROOTS.values() for t in pair], ROOT_STEPS, "x and"),
    symbols="√∛×^=,",
    allows=("exponent", "variable", "equation"),
    families=("exponents", "roots"),
)
def square_and_cube_roots(draw) -> Problem:
    kind = draw.choice(tuple(ROOTS))
    compact, prose = ROOTS[kind]
    if kind == "cube":
        n = draw.randint(2, 10)
        a, b = n**3, 0
        value = sympy.cbrt(Z(a))
        steps, expression = (ROOT_STEPS[1].format(n=n, a=a),), f"cbrt({a})"
    elif kind == "product":
        s = draw.choice((2, 3, 5, 6, 7))
        ca, cb = draw.randint(1, 5), draw.randint(1, 5)
        a, b = ca * ca * s, cb * cb * s
        value = sympy.sqrt(a) * sympy.sqrt(b)
        _, _, ra = _radical(a)
        _, _, rb = _radical(b)
        simplified = [f"√{n} = {r}" for n, r in ((a, ra), (b, rb)) if r != f"√{n}"]
        factors = " × ".join(str(f) for f in (ca, cb, s) if f != 1)  # √s × √s = s
        steps = (
            *([ROOT_STEPS[2].format(simplified=" and ".join(simplified))] if simplified else []),
            ROOT_STEPS[3].format(ra=ra, rb=rb, factors=factors, v=value),
        )
        expression = f"sqrt({a}) * sqrt({b})"
    else:
        n = draw.randint(2, 20)
        a, b = n * n, 0
        value = sympy.sqrt(Z(a))
        steps = (ROOT_STEPS[0].format(n=n, a=a),) if kind == "square" else (ROOT_STEPS[4].format(a=a, n=n),)
        expression = f"sqrt({a})"
    return Problem(
        compact=compact.format(a=a, b=b),
        prose=prose.format(a=a, b=b),
        expression=expression,
        answer=str(as_int(value)),
        steps=steps,
    )


BOTH_WORDS = (
    "Gym A charges ${b} plus ${a} a visit. Gym B charges ${d} plus ${c} a visit. After how many visits do "
    "they cost the same?"
)
BOTH_VERBAL = "{a} times a number, {sb} {mb}, equals {c} times the number, {sd} {md}. What is the number?"
BOTH_STEPS = (
    "{move} both sides: {left} = {d}",
    "{how} both sides: {kx} = {rest}",
    "divide both sides by {k}: x = {quotient}",
)


@unit(
    "linear_equations",
    "Solve linear equations with the variable on both sides",
    "8.EE.C.7",
    "8",
    words=vocab(SOLVE, BOTH_WORDS, BOTH_VERBAL, BOTH_STEPS, "plus minus subtract from add to", "a b"),
    symbols="+-=/$(),:",
    allows=("variable", "equation", "negative"),
    families=("equations",),
)
def linear_equations(draw) -> Problem:
    while True:
        a, c = _nonzero(draw, -9, 12), _nonzero(draw, -9, 12)
        b, d = _nonzero(draw, -40, 40), _nonzero(draw, -40, 40)
        if a != c and abs(a) != 1 and abs(c) != 1 and b != d:
            break
    value = (Z(d) - b) / (Z(a) - c)
    k, rest = a - c, d - b
    left, _ = _linear(k, b)
    move = f"subtract {_term(c)} from" if c > 0 else f"add {_term(-c)} to"
    how = f"subtract {b} from" if b > 0 else f"add {-b} to"
    steps = [
        BOTH_STEPS[0].format(move=move, left=left, d=d),
        BOTH_STEPS[1].format(how=how, kx=_term(k), rest=rest),
    ]
    if k != 1:
        steps.append(BOTH_STEPS[2].format(k=k, quotient=_quotient(rest, k, value)))
    lhs, lhs_code = _linear(a, b)
    rhs, rhs_code = _linear(c, d)
    if min(a, b, c, d) > 0 and value.is_Integer and value > 0:
        prose = BOTH_WORDS.format(a=a, b=b, c=c, d=d)
    else:
        prose = BOTH_VERBAL.format(
            a=a, sb="plus" if b > 0 else "minus", mb=abs(b), c=c, sd="plus" if d > 0 else "minus", md=abs(d)
        )
    return Problem(
        compact=SOLVE.format(equation=f"{lhs} = {rhs}"),
        prose=prose,
        expression=f"Eq({lhs_code}, {rhs_code})",
        answer=_text(value),
        steps=tuple(steps),
    )


# --- grade 8: functions -----------------------------------------------------------------------

FUNCTION_COMPACT = "f(x) = {rule}. What is f({v})?"
FUNCTION_WORDS = (
    "A taxi charges ${b} plus ${m} for each mile. How many dollars does a ride of {v} miles cost?"
)
FUNCTION_VERBAL = "A function multiplies a number by {m} and then {verb} {b}. What does it give for {v}?"
FUNCTION_STEP = "f({v}) = {filled} = {value}"


@unit(
    "linear_functions",
    "Evaluate a linear function given by a rule",
    "8.F.A.1",
    "8",
    words=vocab(FUNCTION_COMPACT, FUNCTION_WORDS, FUNCTION_VERBAL, FUNCTION_STEP, "f x adds subtracts"),
    symbols="+-×=()$.:",
    allows=("variable", "negative"),
    families=("equations", "functions"),
)
def linear_functions(draw) -> Problem:
    m, b = _nonzero(draw, -9, 12), _nonzero(draw, -30, 30)
    while abs(m) == 1:
        m = _nonzero(draw, -9, 12)
    v = _nonzero(draw, -10, 15)
    while v == 1:
        v = _nonzero(draw, -10, 15)
    value = (m * X + b).xreplace({X: Z(v)})
    rule, code = _linear(m, b)
    filled = f"{m} × {signed(v)} {'+' if b > 0 else '-'} {abs(b)}"
    if m > 0 and b > 0 and v > 0:
        prose = FUNCTION_WORDS.format(b=b, m=m, v=v)
    else:
        prose = FUNCTION_VERBAL.format(m=m, verb="adds" if b > 0 else "subtracts", b=abs(b), v=v)
    return Problem(
        compact=FUNCTION_COMPACT.format(rule=rule, v=v),
        prose=prose,
        expression=f"Subs({code}, x, {v})",
        answer=str(value),
        steps=(FUNCTION_STEP.format(v=v, filled=filled, value=value),),
    )


SLOPE_COMPACT = "What is the slope of the line through ({x1}, {y1}) and ({x2}, {y2})?"
SLOPE_PROSE = {
    "grow": "A plant is {y1} cm tall on day {x1} and {y2} cm tall on day {x2}, growing at a steady rate. "
    "How many cm does it grow per day?",
    "drain": "A tank holds {y1} liters after {x1} minutes and {y2} liters after {x2} minutes, draining at a "
    "steady rate. What is the rate of change, in liters per minute?",
}
SLOPE_STEPS = ("change in y: {y2} - {y1} = {dy}", "change in x: {x2} - {x1} = {dx}", "slope: {quotient}")


@unit(
    "slope_and_rate_of_change",
    "The rate of change of a linear function from two points",
    "8.F.B.4",
    "8",
    words=vocab(SLOPE_COMPACT, SLOPE_PROSE.values(), SLOPE_STEPS, "x y"),
    symbols="()-=/,:",
    allows=("negative", "variable"),
)
def slope_and_rate_of_change(draw) -> Problem:
    x1 = draw.randint(1, 10)
    x2 = x1 + draw.randint(1, 8)
    y1, y2 = draw.randint(1, 60), draw.randint(1, 60)
    while y2 == y1:
        y2 = draw.randint(1, 60)
    dy, dx = y2 - y1, x2 - x1
    value = R(dy, dx)
    fill = {"x1": x1, "y1": y1, "x2": x2, "y2": y2}
    steps = tuple(s.format(**fill, dy=dy, dx=dx, quotient=_quotient(dy, dx, value)) for s in SLOPE_STEPS)
    return Problem(
        compact=SLOPE_COMPACT.format(**fill),
        prose=SLOPE_PROSE["grow" if dy > 0 else "drain"].format(**fill),
        expression=f"({y2} - {y1}) / ({x2} - {x1})",
        answer=_text(value),
        steps=steps,
    )
