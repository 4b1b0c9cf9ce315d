"""Stage 4's rule table, `RULES`: one entry per notation pattern, with its gate and anchors, and
the checks that tell a chemical formula from a name or code (`is_chemical_formula`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from littlekit.filter.symbolic.engine import Anchor, Needles, Rule, _reach, anchor, needles
from littlekit.filter.symbolic.patterns import (
    CARET,
    CARET_ANCHOR,
    CHAIN_END,
    CHAIN_MIDDLE,
    CHAIN_START,
    CODE_EXPONENT,
    COEFFICIENT_FORMULA_TOKEN,
    COUNT,
    ELEMENT,
    ELEMENTS,
    EXP_BASE,
    EXP_BASE_END,
    EXPONENT,
    F_OF_X_ANCHORS,
    FORMULA_TOKEN,
    FUNCTION_NAMES,
    GT,
    LT,
    NON_STRICT,
    NON_STRICT_AFTER_DIGIT,
    NON_STRICT_AFTER_LETTER,
    NOT_ALL_CAPITALS,
    NOT_EXPONENTS,
    NOT_FRACTION_EXPONENT,
    NUM,
    NUM_START,
    NUM_TOKEN,
    OP,
    ORDINAL_POWER,
    SP,
    STAR_BASE_END,
    SUP_TAG_ANCHOR,
    SUPERSCRIPT_POWER,
    TERM_TOKEN,
    VAR_COEF,
    WORD_END,
    chain_anchors,
    element_pattern,
    not_starting_here,
    preceded_by,
    word_start,
)

FAMILIES = (
    "equations",
    "exponents",
    "roots",
    "inequalities",
    "calculus",
    "functions",
    "chemical_formulas",
)
MAX_MATCH_CHARS = 80


# Tokens that parse as formulas but are names or codes.
NOT_FORMULAS = frozenset({"C3PO", "NaN", "VO2"})  # a droid, not-a-number, "VO2 max"
INFLUENZA_SUBTYPE = re.compile(r"\(?H[0-9]{1,2}N[0-9]{1,2}\)?")  # H5N8, H3N2: flu strains, not hydrides
# A formula written without counts (NaCl, KBr, NaOH) starts with a metal or H and ends with a
# nonmetal, which keeps names such as McK, HeLa, CoV or LuPS out.
FORMULA_FIRST = frozenset(
    "H Li Na K Rb Cs Be Mg Ca Sr Ba Al Ga In Sn Pb Fe Cu Zn Ag Au Hg Ni Co Mn Cr Ti Pt Cd".split()
)
FORMULA_LAST = frozenset("H C N O F P S Cl Br I Se Te As Sb".split())
_SYMBOL_COUNT_RE = re.compile(rf"([A-Z][a-z]?)({COUNT}?)")


@functools.lru_cache(maxsize=4096)
def is_chemical_formula(token: str) -> bool:
    """Whether a token made of element symbols reads as a formula rather than a name or code.

    `token` is what `FORMULA_TOKEN` matched. A unicode subscript (H₂O, O₂) is enough. Otherwise
    at least two symbols, and either ASCII counts of 2 or more (H2O, CO2, Ca(OH)2) with H, O or a
    two-letter symbol somewhere (so codes such as W3C, PC2, NW25, PS4, Y2K are not formulas),
    or no counts, a two-letter symbol, no symbol repeated next to itself (GaGa), a metal or H
    first and a nonmetal last (NaCl, KCl, NaOH).
    """
    if token in NOT_FORMULAS or INFLUENZA_SUBTYPE.fullmatch(token):
        return False
    parts = _SYMBOL_COUNT_RE.findall(token)
    symbols = [symbol for symbol, _ in parts]
    if not all(symbol in ELEMENTS for symbol in symbols):
        return False
    ascii_counts = [count for _, count in parts if count.isascii() and count]
    if any(count == "1" or count.startswith("0") for count in ascii_counts):
        return False  # H1N1, B0: not how formulas are written
    if any(char in "₀₁₂₃₄₅₆₇₈₉" for char in token):
        return True
    if len(symbols) < 2:
        return False
    has_two_letter_symbol = any(len(symbol) == 2 for symbol in symbols)
    if ascii_counts:
        return has_two_letter_symbol or "H" in symbols or "O" in symbols
    repeats = any(a == b for a, b in zip(symbols, symbols[1:], strict=False))
    return (
        has_two_letter_symbol and not repeats and symbols[0] in FORMULA_FIRST and symbols[-1] in FORMULA_LAST
    )


MOLECULAR_ELEMENT = re.compile(r"(?:H|N|O|F|Cl|Br|I)[2₂]|O[3₃]")
_LONG_COUNT_RE = re.compile(r"[0-9]{3}")


def is_formula_with_coefficient(token: str) -> bool:
    """Whether "6CO2"-like text is a coefficient and a formula (see COEFFICIENT_FORMULA_TOKEN)."""
    formula = token.lstrip("0123456789")
    if MOLECULAR_ELEMENT.fullmatch(formula):
        return True
    return is_chemical_formula(formula) and not _LONG_COUNT_RE.search(formula)


_LEFT_RIGHT_RE = re.compile(r"[-+−]")


def has_two_variables(matched: str) -> bool:
    """Whether the two terms of "term op term =" end in different letters (x + y, not 5m + 3m)."""
    left, right = _LEFT_RIGHT_RE.split(matched, maxsplit=1)
    return left.rstrip()[-1] != right.rstrip(" \t=")[-1]


def _rule(
    family: str,
    name: str,
    example: str,
    needs: Needles,
    pattern: str,
    check: Callable[[str], bool] | None = None,
    anchors: tuple[Anchor, ...] = (),
    flags: int = 0,
) -> Rule:
    compiled = re.compile(pattern, flags)
    return Rule(family, name, example, needs, compiled, check, anchors, _reach(compiled) if anchors else 0)


DIGITS = "0123456789"
LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = "ABCDEFGHIKLMNOPRSTUVWXYZ"  # capitals that start an element symbol (no J, Q)
LETTERS = LOWER + LOWER.upper()
OPS = "+-−"
VAR_COEF_LETTERS = "abefijnqrtuvwxyz"
SUBSCRIPT_DIGITS = "₀₁₂₃₄₅₆₇₈₉"
LT_SIGNS = ("<", "≤", "⩽", "\\le", "\\lt")
GT_SIGNS = (">", "≥", "⩾", "\\ge", "\\gt")
NON_STRICT_SIGNS = ("<=", ">=", "≤", "≥", "⩽", "⩾", "\\le", "\\ge")
LATEX_CALCULUS = ("frac", "lim", "int", "sum", "prod", "partial", "infty", "nabla")  # after "\"
FUNCTION_STEMS = ("sin", "cos", "tan", "cot", "sec", "csc", "exp", "log", "ln")  # in every name
SUPERSCRIPTS = "²³⁴⁵⁶⁷⁸⁹ⁿ⁻"

# A formula starts a token: the anchor is the character before it (or the start of the text),
# then the first element and what must follow it. Without counts anywhere in the text, only a
# salt such as NaCl can match, and it starts with a metal or H (so one of those symbols occurs).
# A count follows a letter or a bracket: without one in the text, the salt anchor is enough.
NOT_WORD = r"[^A-Za-z0-9_\-]"
COUNT_AFTER_SYMBOL = re.compile(r"[0-9₀-₉](?<=[A-Za-z)].)")
WITH_COUNTS = needles(DIGITS + SUBSCRIPT_DIGITS, (COUNT_AFTER_SYMBOL,))


def symbol_then(singles: str, initials: str, symbols: str, then: str) -> str:
    """A symbol, then a character of class `then`: a one-letter symbol of `singles`, or a capital
    of `initials` and a lowercase letter that make one of `symbols` (tested last, by a look-ahead
    from the capital, as it is the expensive part)."""
    return rf"(?:[{singles}]{then}|[{initials}][a-z]{then}(?<=(?={symbols})...))"


FORMULA_ANCHOR = NOT_WORD + symbol_then("BCFHIKNOPSUVWY", "A-IK-PR-Z", ELEMENT, "[0-9₀-₉A-Z(]")
# The coefficient's first digit, then a digit, a symbol or a bracket, the digit at a token start,
# not capitals only after it, and a symbol or a bracket after a second digit.
COEFFICIENT_ANCHOR = (
    rf"[1-9][0-9A-IK-PR-Z(](?<=[^A-Za-z0-9_.\-)\]]..){NOT_ALL_CAPITALS}"
    r"(?:(?<=[A-IK-PR-Z(])|(?=[A-IK-PR-Z(]))"
)
SALT_ANCHOR = NOT_WORD + symbol_then(
    "HK", "ABCFGILMNPRSTZ", element_pattern(FORMULA_FIRST) + "(?![a-z])", "[A-Z(]"
)

# fmt: off
RULES: tuple[Rule, ...] = (
    # --- equations: a coefficient juxtaposed with a variable, two variables, polynomials ------
    _rule("equations", "coefficient_equation", "2x + 3 = 7", needles("=", DIGITS, VAR_COEF_LETTERS),
          rf"{NUM_TOKEN}{VAR_COEF}{WORD_END}{SP}(?:[-+−/]{SP}{NUM}{SP})?={SP}[-−]?{NUM}",
          anchors=(anchor(rf"[0-9]{VAR_COEF}{WORD_END}{SP}[-+−/=]"),)),
    _rule("equations", "coefficient_right_side", "y = 3x + 1", needles("=", DIGITS, VAR_COEF_LETTERS),
          rf"=(?<![<>!=]=){SP}{NUM}{VAR_COEF}{WORD_END}(?!{SP}[A-Za-z])"),
    _rule("equations", "two_variable_equation", "ax + by = c", needles("=", OPS, LOWER),
          rf"{TERM_TOKEN}{SP}{OP}{SP}(?:{NUM}(?:{SP}[*×·]{SP})?|[a-z])?[a-z]{WORD_END}{SP}=",
          check=has_two_variables, anchors=(anchor(f"={preceded_by('[a-z]')}"),)),
    _rule("equations", "polynomial", "x^2 + 2x", needles("^²³⁴⁵⁶⁷⁸⁹", OPS, LOWER),
          rf"[a-z](?<![A-Za-z][a-z]){not_starting_here(NOT_EXPONENTS)}(?:{SP}\^{SP}\{{?[2-9]\}}?|[²³⁴⁵⁶⁷⁸⁹]){SP}{OP}{SP}(?:{NUM})?[a-z]{WORD_END}",
          anchors=(anchor(rf"(?:\^{SP}\{{?[2-9]\}}?|[²³⁴⁵⁶⁷⁸⁹]){SP}{OP}"),)),
    _rule("equations", "bracketed_variable_product", "61 = ((5 * d) - 7)", needles("(", "*×·", ")"),
          rf"\({SP}(?:{NUM}{SP}[*×·]{SP}[a-z]|[a-z]{SP}[*×·]{SP}{NUM}){WORD_END}{SP}\)"),
    _rule("equations", "coefficient_times_bracket", "2(x + 3)", needles("(", DIGITS, OPS, ")"),
          rf"{NUM_TOKEN}\({SP}[a-z]{SP}{OP}{SP}{NUM}{SP}\)",
          anchors=(anchor(rf"\((?<=[0-9]\(){SP}[a-z]{SP}{OP}"),)),
    # --- exponents ----------------------------------------------------------------------------
    _rule("exponents", "caret", "x^2", needles(("^", "<sup>")),
          rf"{EXP_BASE}{CARET}{NOT_FRACTION_EXPONENT}(?:[-−]{SP})?{EXPONENT}",
          anchors=(anchor(CARET_ANCHOR, SUP_TAG_ANCHOR),)),
    _rule("exponents", "unicode_superscript", "5³", needles(SUPERSCRIPTS),
          rf"{EXP_BASE}{SUPERSCRIPT_POWER}",
          anchors=(anchor(rf"(?:[²³⁴⁵⁶⁷⁸⁹ⁿ]|⁻(?=[¹²³⁴⁵⁶⁷⁸⁹ⁿ]))(?<={EXP_BASE_END}.)"),)),
    _rule("exponents", "double_star", "2**10", needles(("**",)),
          rf"[A-Za-z0-9)\]](?:\*\*{NOT_FRACTION_EXPONENT}[-−]?{CODE_EXPONENT}"
          rf"|[ \t]{{1,3}}\*\*[ \t]{{1,3}}[-−]?[0-9]{{1,12}})",
          anchors=(anchor(rf"\*{preceded_by(STAR_BASE_END)}\*{SP}[-−]?[\w(]"),)),
    _rule("exponents", "squared_cubed_words", "x squared", needles(("squared", "cubed")),
          rf"{NUM_START}(?!10\b)(?:{NUM}|[b-hj-z])[ \t]{{1,3}}(?:squared|cubed)\b",
          anchors=(anchor(r"(?:squared|cubed)\b"),)),
    _rule("exponents", "power_words", "2 to the power of 5", needles(("power",)),
          rf"{NUM_START}(?!10\b)(?:{NUM}|[b-hj-z])[ \t]{{1,3}}(?:raised[ \t]{{1,3}})?"
          rf"to[ \t]{{1,3}}the[ \t]{{1,3}}(?:power[ \t]{{1,3}}of\b|{ORDINAL_POWER}[ \t]{{1,3}}power\b)",
          anchors=(anchor(r"power\b"),)),
    _rule("exponents", "raised_to_power", "5 is raised to the power of 2", needles(("raised",)),
          rf"{word_start('raised')}(?<!\b10 raised)(?<!\b10 is raised)"
          rf"[ \t]{{1,3}}to[ \t]{{1,3}}the[ \t]{{1,3}}(?:power\b|{ORDINAL_POWER}[ \t]{{1,3}}power\b)"),
    # --- roots --------------------------------------------------------------------------------
    _rule("roots", "cube_fourth_root_sign", "∛8", needles("∛∜"), r"[∛∜]"),
    _rule("roots", "root_sign", "√x", needles("√", " \t([{" + DIGITS + LETTERS),
          rf"√[ \t]?(?:{NUM}|[(\[{{]|[A-Za-z]{{1,2}}(?![A-Za-z]))",
          anchors=(anchor(r"√[0-9(\[{A-Za-z]", r"√[ \t][0-9(\[{A-Za-z]"),)),
    _rule("roots", "latex_sqrt", r"\sqrt[3]{x}", needles("\\", ("sqrt",)), r"\\sqrt(?![A-Za-z])"),
    _rule("roots", "root_function", "cbrt(27)", needles("(", ("sqrt", "cbrt", "nthroot")),
          rf"{word_start('sqrt|cbrt|nthroot')}{SP}\("),
    _rule("roots", "fractional_exponent", "x^{1/3}", needles(("^", "**", "<sup>"), "/", "1"),
          rf"[\w)\]}}](?:{CARET}|\*\*){SP}[({{]{SP}1{SP}/{SP}(?:[0-9]{{1,3}}|[a-z]){SP}[)}}]?",
          anchors=(anchor(rf"/{preceded_by('1')}{SP}[0-9a-z]"),)),
    _rule("roots", "root_words", "the square root of x", needles(("root", "Root", "ROOT")),
          r"\b(?:square|cube|fourth|fifth|nth|n-th|[0-9]{1,2}(?:st|nd|rd|th))[ \t-]{1,3}roots?\b",
          anchors=(anchor(r"(?i:roots?)\b"),), flags=re.IGNORECASE),
    # --- inequalities -------------------------------------------------------------------------
    _rule("inequalities", "chained_less", "a < x < b", needles(LT_SIGNS, LETTERS),
          rf"{CHAIN_START}{SP}{LT}{SP}{CHAIN_MIDDLE}{SP}{LT}{SP}{CHAIN_END}{WORD_END}",
          anchors=(anchor(*chain_anchors("<", "≤⩽", "l")),)),
    _rule("inequalities", "chained_greater", "b > x > a", needles(GT_SIGNS, LETTERS),
          rf"{CHAIN_START}{SP}{GT}{SP}{CHAIN_MIDDLE}{SP}{GT}{SP}{CHAIN_END}{WORD_END}",
          anchors=(anchor(*chain_anchors(">", "≥⩾", "g")),)),
    _rule("inequalities", "variable_at_most", "x ≥ 3", needles(NON_STRICT_SIGNS, LOWER, DIGITS),
          rf"[a-z](?<![\w.][a-z]){SP}{NON_STRICT}{SP}[-−]?[0-9]",
          anchors=(anchor(rf"{NON_STRICT_AFTER_LETTER}{SP}[-−]?[0-9]"),)),
    _rule("inequalities", "number_at_most_variable", "3 ≤ x", needles(NON_STRICT_SIGNS, LOWER, DIGITS),
          rf"[0-9]{SP}{NON_STRICT}{SP}[a-z]{WORD_END}",
          anchors=(anchor(rf"{NON_STRICT_AFTER_DIGIT}{SP}[a-z]{WORD_END}"),)),
    _rule("inequalities", "variable_strict", "x > 5", needles("<>", "nxyz", DIGITS),
          rf"[nxyz](?<![\w.][nxyz]){SP}[<>]{SP}[-−]?[0-9]",
          anchors=(anchor(rf"[<>](?={SP}[-−]?[0-9]){preceded_by('[nxyz]')}"),)),
    # --- calculus and operators ---------------------------------------------------------------
    _rule("calculus", "operator_symbol", "∑", needles("∑∫∬∭∮∂∇∞"), r"[∑∫∬∭∮∂∇∞]"),
    _rule("calculus", "sigma_outside_greek", "Σ a_i", needles("Σ"),
          r"Σ(?<![\u0370-\u03ff]Σ)(?![\u0370-\u03ff])"),
    _rule("calculus", "latex_command", r"\frac{a}{b}", needles("\\", LATEX_CALCULUS),
          r"\\(?:d?frac|tfrac|lim(?:sup|inf)?|i{0,2}int|oint|sum|prod|partial|infty|nabla)(?![A-Za-z])"),
    _rule("calculus", "derivative", "dy/dx", needles("/", "d"),
          r"d(?<![\w/]d)(?:\^?[2-9]|[²³])?[A-Za-z]?/d[a-z](?:\^?[2-9]|[²³])?(?![\w])",
          anchors=(anchor(r"/d[a-z](?![A-Za-z_01])"),)),
    _rule("calculus", "limit", "lim x→0", needles(("lim",), ("_", "→", "->", "\\to")),
          rf"{word_start('lim')}(?:_|{SP}\(?{SP}[a-z]{SP}(?:→|->|\\to\b))"),
    # --- functions ----------------------------------------------------------------------------
    _rule("functions", "f_of_x", "f(x)", needles("(", "fgh", "xyz"),
          rf"[fgh](?<!\w[fgh]) ?\({SP}[xyz]{SP}[,)]",
          anchors=(anchor(*F_OF_X_ANCHORS),)),
    _rule("functions", "f_of_x_words", "f of x", needles((" of x", " of y", " of z")),
          r"[fgh](?<!\w[fgh]) of [xyz]\b", anchors=(anchor(r" of [xyz]\b"),)),
    _rule("functions", "named_function", "sin(x)", needles("(", FUNCTION_STEMS),
          rf"{word_start(FUNCTION_NAMES)}(?:_?[0-9]{{1,2}}|[₀-₉]{{1,2}}|_\{{[0-9]{{1,2}}\}})?\((?!(?:s|[a-z]{{2,40}})\))",
          anchors=(anchor(r"\((?<=[a-z0-9₀-₉}]\()(?!(?:s|[a-z]{2,40})\))"),)),
    _rule("functions", "latex_function", r"\log x", needles("\\", FUNCTION_STEMS),
          rf"\\(?:{FUNCTION_NAMES})(?![A-Za-z])"),
    _rule("functions", "trig_of_angle", "cos θ", needles("θφαβγπ", ("sin", "cos", "tan")),
          rf"{word_start('sin|cos|tan')}[ \t]?[θφαβγπ]"),
    # --- chemical formulas --------------------------------------------------------------------
    _rule("chemical_formulas", "formula", "H2O", needles(UPPER), FORMULA_TOKEN,
          check=is_chemical_formula,
          anchors=(anchor(FORMULA_ANCHOR, needs=WITH_COUNTS, back=0),
                   anchor(SALT_ANCHOR, needs=needles(tuple(sorted(FORMULA_FIRST))), back=0))),
    _rule("chemical_formulas", "formula_with_coefficient", "6CO2 + 6H2O",
          needles(DIGITS, UPPER), COEFFICIENT_FORMULA_TOKEN,
          check=is_formula_with_coefficient, anchors=(anchor(COEFFICIENT_ANCHOR, back=0),)),
)
# fmt: on

assert {rule.family for rule in RULES} == set(FAMILIES)


def _rules_for(families: Iterable[str] | None) -> tuple[Rule, ...]:
    if families is None:
        return RULES
    wanted = set(families)
    unknown = wanted - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown symbolic families {sorted(unknown)}; choose from {', '.join(FAMILIES)}")
    return tuple(rule for rule in RULES if rule.family in wanted)
