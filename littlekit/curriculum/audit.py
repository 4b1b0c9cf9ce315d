"""Audits: what every record must satisfy, checked by machine rather than asserted by a template.

Per record (`verify_record`, run during generation and by the tests):
1. **Re-derivation.** `rederive` reads `expression` with its own small parser (Python's `ast`,
   numbers as SymPy `Integer`/`Rational`, decimals exact) and evaluates it with SymPy: linear
   equations solved from their coefficients, `Subs` substituted, roots simplified. The value,
   written in the gold answer's kind, must be graded correct against `answer` by
   `littlekit.curriculum.answers.grade`; the answer line of `text` must read back as `answer`.
2. **Statement and expression agree.** Every number of `expression` appears in the statement
   (or is one of the unit's declared constants, such as 60 minutes in an hour).
3. **Declared vocabulary.** Every word of `text` is in the unit's declared words and every other
   character in its declared symbols; whitespace is single spaces and newlines.
4. **Cumulative K-5 rules.** A K-5 text holds no negative number, no exponent, no variable and no
   equation to solve; a Beyond text only the features its unit declares (`features`).

Across records: `degenerate_reasons` (identity operations, `n - n`, `Solve x = 1`, trivial
fractions, the answer in the question) feeds a review log; `symbolic_matrix` runs filter stage 4
(`littlekit.filter.symbolic`) and gives, per unit, the share of texts each notation family matches
and the share the stage keeps; `audit_table` counts everything per unit.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import sympy

from littlekit.curriculum.answers import answer_in_statement, answer_kind, grade
from littlekit.curriculum.formats import decimal_text, fraction_text, list_text, read_answer
from littlekit.curriculum.registry import UNITS, Unit
from littlekit.curriculum.units import all_units

# --- 1. re-derivation ------------------------------------------------------------------------

_DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+)")


def _compare(a: sympy.Expr, b: sympy.Expr) -> str:
    return {1: ">", -1: "<", 0: "="}[int(sympy.sign(a - b))]


def _solve(lhs: sympy.Expr, rhs: sympy.Expr) -> sympy.Expr:
    """The one solution of a linear equation in one symbol, from its coefficients."""
    difference = sympy.expand(lhs - rhs)
    symbols = difference.free_symbols
    if len(symbols) != 1:
        raise ValueError(f"an equation in one unknown was expected, got {lhs} = {rhs}")
    (symbol,) = symbols
    slope, intercept = difference.coeff(symbol, 1), difference.coeff(symbol, 0)
    if slope == 0 or sympy.expand(difference - slope * symbol - intercept) != 0:
        raise ValueError(f"not a linear equation with one solution: {lhs} = {rhs}")
    return -intercept / slope


def _subs(expr: sympy.Expr, *pairs: sympy.Expr) -> sympy.Expr:
    if len(pairs) % 2:
        raise ValueError("Subs takes (expression, symbol, value, symbol, value, ...)")
    return expr.xreplace(dict(zip(pairs[::2], pairs[1::2], strict=True)))


FUNCTIONS = {
    "D": lambda text: sympy.Rational(text),
    "sqrt": sympy.sqrt,
    "cbrt": sympy.cbrt,
    "Abs": sympy.Abs,
    "floor": sympy.floor,
    "ceiling": sympy.ceiling,
    "Mod": sympy.Mod,
    "Digit": lambda n, place: sympy.Mod(sympy.floor(n / place), 10),
    "RoundTo": lambda n, place: sympy.floor(n / place + sympy.Rational(1, 2)) * place,
    "Clock": lambda hours, minutes: 60 * hours + minutes,
    "Divisors": lambda n: [sympy.Integer(d) for d in sympy.divisors(int(n))],
    "Compare": _compare,
    "Eq": _solve,
    "Subs": _subs,
}
_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
    ast.Mod: sympy.Mod,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | str):
            raise ValueError(f"unsupported constant {node.value!r}")
        return sympy.Integer(node.value) if isinstance(node.value, int) else node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and len(node.id) == 1:
        return sympy.Symbol(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        return FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:80]}")


@functools.lru_cache(maxsize=65536)
def rederive(expression: str) -> Any:
    """The value of an expression of the curriculum's language, computed by SymPy: a rational
    number, a comparison sign, or a list (of divisors)."""
    code = _DECIMAL.sub(lambda m: f'D("{m.group(1)}")', expression)
    return _evaluate(ast.parse(code, mode="eval"))


def written(value: Any, gold: str) -> str:
    """A re-derived value written as an answer of the gold's kind (a decimal gold gets decimals)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return list_text([int(v) for v in value])
    if not value.is_Rational:
        raise ValueError(f"the expression did not evaluate to a rational number: {value}")
    exact = Fraction(int(value.p), int(value.q))
    if answer_kind(gold) == "decimal":
        return decimal_text(exact)
    return fraction_text(exact)


def rederivation_problems(record: dict[str, Any]) -> list[str]:
    """The re-derived value must be graded correct against the answer, and the text's answer
    line must read back as the answer."""
    problems = []
    try:
        value = written(rederive(record["expression"]), record["answer"])
    except (ValueError, TypeError, ZeroDivisionError, SyntaxError) as exc:
        return [f"expression {record['expression']!r} does not evaluate: {exc}"]
    if not grade(f"Answer: {value}", record["answer"]):
        problems.append(
            f"SymPy re-derives {value} from {record['expression']!r}, the answer is {record['answer']!r}"
        )
    try:
        if read_answer(record["text"], record["format"]) != record["answer"]:
            problems.append("the text's answer line does not read back as the answer")
    except ValueError as exc:
        problems.append(str(exc))
    return problems


# --- 2. statement and expression ----------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _numbers(text: str) -> set[int | Fraction]:
    """The unsigned numbers of a text, decimals exact ("10.00" and "10" are the same number)."""
    return {Fraction(m) if "." in m else int(m) for m in _NUMBER.findall(text)}


def expression_problems(record: dict[str, Any], unit: Unit) -> list[str]:
    """Numbers of the expression missing from the statement (and not declared constants)."""
    missing = _numbers(record["expression"]) - _numbers(record["statement"]) - unit.constants
    return [f"expression number {fraction_text(n)} is not in the statement" for n in sorted(missing)]


# --- 3. declared vocabulary ---------------------------------------------------------------------

_WORDS = re.compile(r"[A-Za-z]+")
_SYMBOLS = re.compile(r"[^\sA-Za-z0-9]")


def vocabulary_problems(text: str, unit: Unit) -> list[str]:
    """Words and symbols of `text` outside the unit's declaration, and odd whitespace."""
    bad_words = {w for w in set(_WORDS.findall(text)) if w.lower() not in unit.allowed_words}
    bad_symbols = set(_SYMBOLS.findall(text)) - unit.allowed_symbols
    problems = [f"undeclared word {w!r}" for w in sorted(bad_words)]
    problems += [f"undeclared symbol {s!r}" for s in sorted(bad_symbols)]
    if set(text) & set("\t\r\f\v\u00a0") or "  " in text or " \n" in text or "\n " in text:
        problems.append("whitespace other than single spaces and newlines")
    return problems


# --- 4. cumulative K-5 rules -------------------------------------------------------------------

# A minus sign glued to a digit and not preceded by a word or a closing bracket: "-5", "(-3)",
# "3^-5". Subtraction is always written with spaces ("12 - 5") by every template.
_NEGATIVE = re.compile(r"(?<![\w)\]|])[-\u2212](?=\d)")
_EXPONENT = re.compile(r"\^|\*\*|[²³⁴⁵⁶⁷⁸⁹⁰¹⁻]|\b(?:squared|cubed|to the power)\b", re.IGNORECASE)
_ORDINAL = re.compile(r"^(?:st|nd|rd|th)$")
_GLUED = re.compile(r"\d([A-Za-z]+)")
_LONE_LETTER = re.compile(r"(?<![A-Za-z])[B-HJ-Zb-z](?![A-Za-z])")  # not a, A or I
_EQUATION = re.compile(r"[?_□][ \t]*[-+×÷*/=]|[-+×÷*/=][ \t]*[?_□]|\bWhat is [b-z]\s*\?|\bfor [b-z]\b")
_SOLVE = re.compile(r"\bsolve\b", re.IGNORECASE)


def features(text: str) -> set[str]:
    """Which Beyond-K-5 features a text uses: negative (a minus sign that is not subtraction),
    exponent, variable (a lone letter other than a/A/I, or a letter glued to a number other than an
    ordinal such as 7th), equation (to solve: `solve`, a blank or ? in an equation, "What is n?")."""
    found = set()
    if _NEGATIVE.search(text):
        found.add("negative")
    if _EXPONENT.search(text):
        found.add("exponent")
    glued = any(not _ORDINAL.match(m.group(1)) for m in _GLUED.finditer(text))
    if glued or _LONE_LETTER.search(text):
        found.add("variable")
    if _EQUATION.search(text) or _SOLVE.search(text):
        found.add("equation")
    return found


def feature_problems(text: str, unit: Unit) -> list[str]:
    """Features the unit's band and declaration do not allow (a K-5 unit allows none)."""
    extra = features(text) - set(unit.allows)
    return [
        f"{'K-5 ' if unit.band == 'K5' else ''}text uses {feature} (not declared)"
        for feature in sorted(extra)
    ]


def verify_record(record: dict[str, Any], unit: Unit | None = None) -> list[str]:
    """Every per-record audit; an empty list when the record passes."""
    unit = UNITS[record["unit"]] if unit is None else unit
    return [
        *rederivation_problems(record),
        *expression_problems(record, unit),
        *vocabulary_problems(record["text"], unit),
        *feature_problems(record["text"], unit),
    ]


# --- degenerate problems ----------------------------------------------------------------------

DEGENERATE_RULES: dict[str, re.Pattern[str]] = {
    # adding, subtracting or multiplying by zero; a zero standing alone as an operand
    "zero_operand": re.compile(r"(?<![\d.:$])0(?![\d.:])"),
    # multiplying or dividing by one, or one to a power
    "identity_operand": re.compile(
        r"[×÷*]\s*1(?![\d./])|(?<![\d./:])1\s*[×*]|(?<![\d./])1\s*\^|\^\s*\(?1(?![\d./])"
    ),
    # the same term subtracted from or divided by itself: 1^2 - 1^2, 7 ÷ 7 (not 3 × 2 - 2)
    "cancels_itself": re.compile(
        r"(?<![\w.^/-])(?<![×÷*] )([\w.^/]+)[ \t]*[-÷][ \t]*\1(?![\w^/]|\.\d)(?![ \t]*[×÷*^])"
    ),
    # an equation that is already solved: Solve x = 1
    "solved_equation": re.compile(r"(?i)\bsolve\s+[a-z]\s*=\s*-?\d+(?:[./]\d+)?\s*(?:for\b|[.?]|$)"),
    # a coefficient of one (1x), a fraction over one (5/1) or over itself (4/4)
    "trivial_form": re.compile(r"(?<![\d./])1[a-z]\b|/1(?![\d.])|(?<![\d./])(\d+)/\1(?![\d.])"),
}


def degenerate_reasons(record: dict[str, Any]) -> list[str]:
    """Why a record's problem is degenerate (empty when it is not): the rules above on the
    statement, and the answer repeated in the statement."""
    statement = record["statement"]
    reasons = [name for name, pattern in DEGENERATE_RULES.items() if pattern.search(statement)]
    if answer_in_statement(statement, record["answer"]):
        reasons.append("answer_in_statement")
    return reasons


def review_log(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The degenerate records with their reasons: the artifact to read, constrain, regenerate."""
    log = []
    for record in records:
        reasons = degenerate_reasons(record)
        if reasons:
            log.append({k: record[k] for k in ("id", "unit", "statement", "answer")} | {"reasons": reasons})
    return log


# --- stage 4 ----------------------------------------------------------------------------------


def symbolic_matrix(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per unit and register: the share of texts each stage-4 family matches, and the share the
    stage keeps (no family matches)."""
    from littlekit.filter.symbolic.rules import FAMILIES
    from littlekit.filter.symbolic.stage import match_all

    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for record in records:
        key = (record["unit"], record["register"])
        matched = match_all(record["text"])
        counts[key]["n"] += 1
        counts[key]["kept"] += not any(matched.values())
        for family in FAMILIES:
            counts[key][family] += bool(matched[family])
    rows = []
    for (unit_id, register), c in counts.items():
        unit = UNITS[unit_id]
        row = {
            "unit": unit_id,
            "band": unit.band,
            "register": register,
            "n": c["n"],
            "kept": c["kept"] / c["n"],
        }
        row.update({family: c[family] / c["n"] for family in FAMILIES})
        row["declared"] = ", ".join(unit.families)
        rows.append(row)
    return rows


def family_problems(rows: Sequence[dict[str, Any]], register: str = "compact") -> list[str]:
    """Stage 4 must keep every K-5 text (any register); a Beyond unit's compact texts must match
    exactly the families it declares (each declared family at least once, no other family)."""
    from littlekit.filter.symbolic.rules import FAMILIES

    problems = []
    for row in rows:
        if row["band"] == "K5":
            if row["kept"] < 1:
                problems.append(
                    f"{row['unit']} ({row['register']}): stage 4 drops {1 - row['kept']:.1%} of its texts"
                )
        elif row["register"] == register:
            seen = {f for f in FAMILIES if row[f] > 0}
            declared = set(UNITS[row["unit"]].families)
            if seen != declared:
                problems.append(
                    f"{row['unit']}: stage 4 matches {sorted(seen)}, the unit declares {sorted(declared)}"
                )
    return problems


# --- everything, per unit -----------------------------------------------------------------------


def audit_table(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per unit: records, verification failures, degenerate records, duplicate statements, the
    distinct answers, and the features found."""
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_unit[record["unit"]].append(record)
    order = {u.id: i for i, u in enumerate(all_units())}
    rows = []
    for unit_id in sorted(by_unit, key=order.__getitem__):
        unit, group = UNITS[unit_id], by_unit[unit_id]
        found = set().union(*(features(r["text"]) for r in group))
        rows.append(
            {
                "unit": unit_id,
                "band": unit.band,
                "records": len(group),
                "failures": sum(bool(verify_record(r, unit)) for r in group),
                "degenerate": sum(bool(degenerate_reasons(r)) for r in group),
                "duplicates": len(group) - len({r["statement"] for r in group}),
                "distinct_answers": len({r["answer"] for r in group}),
                "features": ", ".join(sorted(found)),
                "declared": ", ".join(sorted(unit.allows)),
            }
        )
    return rows
