"""Stage 4's regular-expression pieces: numbers, terms, exponents, comparisons, element symbols
and the anchors' look-arounds, from which `rules.RULES` builds each pattern.

Every piece starts with a character class or a literal where it can (token-boundary tests are
look-behinds placed after that first character) and bounds every repeat, so the patterns run in
linear time (see the package docstring).
"""

from __future__ import annotations

from collections.abc import Iterable


def word_start(alternatives: str) -> str:
    """Literal alternatives ("sin|cos") that may not continue a word, as a fast-scanning pattern.

    Same as `\b(?:sin|cos)` but each branch checks the word boundary after its literal, so the
    pattern starts with literals and the regex engine jumps straight to candidate letters.
    """
    return "(?:" + "|".join(rf"{word}(?<!\w{word})" for word in alternatives.split("|")) + ")"


# Shared pieces. Spaces are bounded so that no pattern rescans a long run of blanks.
SP = r"[ \t]{0,3}"
NUM = r"[0-9]{1,12}(?:\.[0-9]{1,12})?"
NUM_START = r"(?<![\w.])"  # a number begins here, not inside a longer number or word
# The same number with the boundary test after its first digit: a pattern that starts with a
# character class lets the scan skip ahead to candidates, which keeps 1 MB texts fast.
NUM_TOKEN = r"[0-9](?<![\w.][0-9])[0-9]{0,11}(?:\.[0-9]{1,12})?"
WORD_END = r"(?![\w])"
OP = r"[-+−]"
# A term of a two-variable equation: 4 * b, 50c, ax, x. Its first character is a digit or a
# letter that starts a token; the look-behinds after it pick the rest of the term.
TERM_TOKEN = (
    r"[0-9a-z](?<![\w.][0-9a-z])"
    r"(?:(?<=[0-9])[0-9]{0,11}(?:\.[0-9]{1,12})?(?:[ \t]{0,3}[*×·][ \t]{0,3})?[a-z]|(?<=[a-z])[a-z]?)(?![\w])"
)
VAR_COEF = r"[abefijnqrtuvwxyz]"  # letters after a coefficient; unit letters c d g h k l m o p s left out
SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
# ¹ and ⁰ may not start a power: after a word they are footnote marks.
SUPERSCRIPT_POWER = rf"(?:[²³⁴⁵⁶⁷⁸⁹ⁿ]|⁻[¹²³⁴⁵⁶⁷⁸⁹ⁿ])[{SUPERSCRIPT_DIGITS}]{{0,5}}"
CARET = rf"(?:{SP}\^{SP}|<sup>{SP})"  # ^ or an HTML superscript tag
CARET_OR_SUPERSCRIPT = rf"(?:{CARET}|(?=[{SUPERSCRIPT_DIGITS}]))"
AREA_VOLUME_UNIT = r"(?:[mcdk]?m|in|ft|yd|mi)"

NOT_FRACTION_EXPONENT = rf"(?![({{]{SP}1{SP}/)"  # x^(1/3) and x^{1/2} belong to the roots family


def not_starting_here(pattern: str) -> str:
    """Placed right after a token's first character: `pattern` does not match from that character.

    `(?<!(?=X).)` looks back one character and asks whether X matches from there. It lets a
    pattern start with a plain character class (fast scanning) and still test an exclusion that
    is anchored at the start of the token.
    """
    return rf"(?<!(?={pattern}).)"


SUPERSCRIPT_OR_DIGIT = rf"[0-9{SUPERSCRIPT_DIGITS}]"
# Caret and superscript forms that are not exponents, anchored at the start of the base:
NOT_EXPONENTS = "|".join(
    [
        # area and volume units (cm², m^3, ft³): K-5 measurement, 3.MD.C and 5.MD.C
        rf"(?:[mcdk]?m|in|ft|yd|mi){CARET_OR_SUPERSCRIPT}\{{?[23²³]\}}?(?!{SUPERSCRIPT_OR_DIGIT}|\.[0-9])",
        # powers of ten with a one-digit whole exponent (10^3, 10³, 10^{3}): 5.NBT.A.2
        rf"10{CARET_OR_SUPERSCRIPT}\{{?{SUPERSCRIPT_OR_DIGIT}\}}?(?!{SUPERSCRIPT_OR_DIGIT}|\.[0-9])",
        # superscript abbreviations of books transcribed for Project Gutenberg (M^r, M^{rs.},
        # S^t, y^e, w^{ch}, 1^{st}, 2^d) and the emoticon T^T
        rf"(?:[A-Z]|[yw]){SP}\^{SP}\{{?[a-z]{{1,4}}\.?\}}?(?![\w(])",
        r"[0-9]{1,4}\^\{?(?:st|nd|rd|th|d)\}?(?![\w(])",
        r"[A-Z]\^[A-Z](?![\w(])",
    ]
)
# An exponent's base: a run of at most three letters that is not the tail of a longer word, a
# number, or a closing bracket. It starts with one character class (so the scan skips ahead);
# the look-behinds after that character reject a letter inside a word or a digit inside a
# number, and the exclusions above.
EXP_BASE = (
    r"[A-Za-z0-9)\]}](?<![A-Za-z][A-Za-z])(?<![\w.][0-9])"
    + not_starting_here(NOT_EXPONENTS)
    + r"(?:(?<=[A-Za-z])[A-Za-z]{0,2}|(?<=[0-9])[0-9]{0,11}(?:\.[0-9]{1,12})?|(?<=[)\]}]))"
)
# An exponent: a number (2, 2n), one letter, a bracketed group, a LaTeX command, or just an
# opening bracket; never a word ("1 ^ Lesnar" is a wiki citation mark).
EXPONENT = (
    r"(?:[0-9]{1,12}(?:\.[0-9]{1,12})?[A-Za-z]?(?![A-Za-z])|[A-Za-z](?![A-Za-z])"
    r"|\([^()\n]{0,30}\)|\{[^{}\n]{0,30}\}|\\[A-Za-z]{1,12}|[({])"
)
# After "**": a number, a single letter or a bracket, so markdown bold ("**THE") is not a power.
CODE_EXPONENT = r"(?:[0-9]{1,12}(?![A-Za-z])|[A-Za-z](?![A-Za-z])|\([^()\n]{0,30}\)|\()"
ORDINAL_POWER = (
    r"(?:[0-9]{1,3}(?:st|nd|rd|th)|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|nth)"
)

LT = r"(?:<=?|≤|⩽|\\le(?:q|qslant)?(?![A-Za-z])|\\lt(?![A-Za-z]))"
GT = r"(?:>=?|≥|⩾|\\ge(?:q|qslant)?(?![A-Za-z])|\\gt(?![A-Za-z]))"
NON_STRICT = r"(?:<=|>=|≤|≥|⩽|⩾|\\[lg]e(?:q|qslant)?(?![A-Za-z]))"
CHAIN_END = rf"(?:[-−]?{NUM}|[A-Za-z])"
# The left end of a chain (-3, 2.5, a) at a token start, written to begin with a character class.
CHAIN_START = (
    r"[-−0-9A-Za-z](?<![\w.<>][-−0-9A-Za-z])"
    r"(?:(?<=[A-Za-z])|(?<=[-−])[0-9]{1,12}(?:\.[0-9]{1,12})?|(?<=[0-9])[0-9]{0,11}(?:\.[0-9]{1,12})?)"
)
CHAIN_MIDDLE = rf"(?:[0-9]{{1,12}})?[A-Za-z]{WORD_END}"

FUNCTION_NAMES = "arcsin|arccos|arctan|asin|acos|atan|sinh|cosh|tanh|sin|cos|tan|cot|sec|csc|exp|log|ln"

# Element symbols of the periodic table.
ELEMENTS = frozenset(
    (
        "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As "
        "Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd "
        "Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am "
        "Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og"
    ).split()
)


def element_pattern(symbols: Iterable[str]) -> str:
    """One alternative per initial, e.g. `C[adeflmnorsu]?`, for the given element symbols."""
    symbols = set(symbols)
    by_initial: dict[str, set[str]] = {}
    for symbol in symbols:
        by_initial.setdefault(symbol[0], set()).update(symbol[1:])
    parts = []
    for initial, seconds in sorted(by_initial.items()):
        if not seconds:
            parts.append(initial)
            continue
        optional = "?" if initial in symbols else ""
        parts.append(f"{initial}[{''.join(sorted(seconds))}]{optional}")
    return "(?:" + "|".join(parts) + ")"


ELEMENT = element_pattern(ELEMENTS) + "(?![a-z])"  # a whole symbol: "Co", not "C" of "Co"
COUNT = r"(?:[0-9]{1,3}|[₀-₉]{1,3})"
GROUP_REST = rf"(?:{ELEMENT}{COUNT}?){{1,8}}+\){COUNT}?"  # after "(": OH)2, SO4)3
FORMULA_UNIT = rf"(?:{ELEMENT}{COUNT}?|\({GROUP_REST})"
# The first symbol: a capital that starts a token (not glued to a word or a hyphen, as in
# SARS-CoV-2) and begins an element symbol; written to start with a character class so the
# scan skips ahead.
FIRST_SYMBOL = r"[A-IK-PR-Z](?<![\w\-].)" + rf"(?<=(?={ELEMENT}).)[a-z]?"
# A formula is a group, or a symbol followed by a subscript count or by another unit, so a lone
# symbol (I, He, In) is never handed to the check.
FORMULA_TOKEN = (
    rf"(?:{FIRST_SYMBOL}(?:[₀-₉]{{1,3}}|[0-9]{{0,3}}{FORMULA_UNIT})|\((?<![\w\-].){GROUP_REST})"
    rf"{FORMULA_UNIT}{{0,19}}+{WORD_END}"
)


# A formula after a stoichiometric coefficient (6CO2, 2H2O, 6O2): a 1-2 digit number at a token
# start (not a count inside a formula, as the 14 of CH3(CH2)14CO2H), glued to a formula token.
# The token must be a formula on its own with counts of at most two digits, or one of the
# elements that come in molecules of two (or ozone): 6O2 and 3H2 count, but 5KW, 100HP, 3BHK,
# 6CO, 2K12, 3B12 or the coupon code 50OFF699 do not.
# Capitals and brackets only (CO, KW, BHK) are never a formula after a coefficient: a count or a
# two-letter symbol must come (within 40 characters, far more than any formula needs).
NOT_ALL_CAPITALS = r"(?=[A-Z()]{0,40}+[a-z0-9₀-₉])"
COEFFICIENT_FORMULA_TOKEN = (
    rf"[1-9](?<![\w.\-)\]][1-9])[0-9]?{NOT_ALL_CAPITALS}"
    rf"(?:{ELEMENT}{COUNT}?|\({GROUP_REST}){FORMULA_UNIT}{{0,19}}+{WORD_END}"
)


def preceded_by(left: str) -> str:
    """Placed right after one consumed character: `left` and 0-3 blanks come before it.

    Python's look-behinds have a fixed width, so this is one look-behind per number of blanks,
    tested in an atomic group (once one holds, a later failure does not retry the others).
    An anchor can then start with a literal, which the regex engine scans for quickly, and
    still test what precedes it.
    """
    blanked = "|".join(rf"(?<={left}[ \t]{{{blanks}}}.)" for blanks in range(1, 4))
    return rf"(?>(?<={left}.)|(?<=[ \t].)(?:{blanked}))"


# Anchors. Each regex starts with the rarest required character of its rule and then tests,
# with one cheap character class or look-around after another, what the rule would reject at
# once, so a text full of near misses costs one scan. Alternations and repeats such as
# `{0,3}` are kept off this path where they can be: a failed attempt costs a few nanoseconds
# per simple test but tens per branch or repeat, and a 1 MB adversarial text makes hundreds of
# thousands of attempts.
EXP_BASE_END = r"[A-Za-z0-9)\]}]"  # the last character of an exponent's base
STAR_BASE_END = r"[A-Za-z0-9)\]]"  # the same before "**"
# NOT_EXPONENTS seen from the exponent's first character, for a caret right after its base
# (one character back is the caret, two back the end of the base). "At a token start" is a
# character before the base that is not part of a word (so at the very start of a text these
# do not reject; the pattern then decides). Their `\.?\}?(?![\w(])` reads "not followed by a
# word character or a bracket", the cheaper `(?![\w(])` here.
BOOK_BASE = r"[^A-Za-z][A-Zyw]\^"  # M^r, y^e: a one-letter base at a word start
TEN_BASE = r"[^\w.]10\^"  # 10^3


def after_ordinal_base(then: str) -> str:
    """Look-behind: a 1-4 digit number at a token start, a caret, then `then` (1^{st}, 2^d)."""
    return "(?:" + "|".join(rf"(?<=[^\w.]{'[0-9]' * n}\^{then})" for n in range(1, 5)) + ")"


AFTER_ORDINAL_D = after_ordinal_base("d")  # 2^d
# cm^2, m^3, ft^2: an area or volume unit at a word start, a caret, the exponent (5.MD.C)
AFTER_AREA_UNIT = r"(?:(?<=[^A-Za-z][mcdk]m\^.)|(?<=[^A-Za-z]m\^.)|(?<=[^A-Za-z](?:in|ft|yd|mi)\^.))"
AFTER_ORDINAL_BRACE = after_ordinal_base(r"\{")  # 1^{st}
NOT_POWER_OF_TEN_AFTER = rf"(?!{SUPERSCRIPT_OR_DIGIT}|\.[0-9])"
# What makes a caret (right after its base) no exponent, by the character after it: one
# negative look-ahead whose branches the regex engine skips by their first character, so a
# caret costs about one test whatever the fragment.
NOT_AN_EXPONENT_AFTER_CARET = "|".join(
    [
        rf"[a-z](?<={BOOK_BASE}.)(?![\w(])",  # M^r
        r"[A-Za-z][A-Za-z]",  # a word
        rf"[0-9](?<={TEN_BASE}.){NOT_POWER_OF_TEN_AFTER}",  # 10^3
        rf"[23]{AFTER_AREA_UNIT}{NOT_POWER_OF_TEN_AFTER}",  # cm^2
        rf"\{{(?<={BOOK_BASE}\{{)[a-z]{{1,4}}(?![\w(])",  # M^{rs.}
        rf"\{{{AFTER_ORDINAL_BRACE}(?:st|nd|rd|th|d)(?![\w(])",  # 1^{st}
        rf"\{{(?<={TEN_BASE}\{{){SUPERSCRIPT_OR_DIGIT}\}}?{NOT_POWER_OF_TEN_AFTER}",  # 10^{3}
        rf"[({{]{SP}1{SP}/",  # x^(1/3) is a root
        r"[^0-9A-Za-z{(\\ \t\-−]",  # nothing that starts an exponent, blanks or a sign
        rf"d{AFTER_ORDINAL_D}(?![\w(])",  # 2^d
        r"[A-Z](?<=[^A-Za-z][A-Z]\^.)(?![\w(])",  # T^T
        r"\Z",
    ]
)
# A caret with no reason above to reject it, after the end of a base (or after blanks); in this
# order, as near misses fail the first test.
CARET_ANCHOR = rf"\^(?!{NOT_AN_EXPONENT_AFTER_CARET})(?<=[A-Za-z0-9)\]}} \t]\^)"
SUP_TAG_ANCHOR = rf"<sup>(?<={EXP_BASE_END}<sup>)"
# A chain (a < x < b): a sign, the middle term, the first character of the next sign; one anchor
# regex per spelling of the first sign (and the plain "<x" apart, the most common).


def chain_anchors(ascii_sign: str, unicode_signs: str, latex: str) -> tuple[str, ...]:
    """Anchor regexes for a chain of `ascii_sign` ("<"), its unicode forms, or LaTeX ("l")."""
    next_sign = rf"{SP}[{ascii_sign}{unicode_signs}\\]"
    return (
        rf"{ascii_sign}[A-Za-z](?![\w]){next_sign}",
        rf"{ascii_sign}(?=[0-9 \t=])=?{SP}{CHAIN_MIDDLE}{next_sign}",
        *(rf"{sign}{SP}{CHAIN_MIDDLE}{next_sign}" for sign in unicode_signs),
        rf"\\{latex}t(?![A-Za-z]){SP}{CHAIN_MIDDLE}{next_sign}",
        rf"\\{latex}e(?=[q \t0-9])(?:q(?:slant)?)?(?![A-Za-z]){SP}{CHAIN_MIDDLE}{next_sign}",
    )


def sign_after(left: str, signs: str) -> str:
    """A non-strict comparison (≤ <= \\le ...) with `left` and 0-3 blanks before it.

    `signs` is "<" or ">"; the look-behind sits after the sign's first character.
    """
    unicode_signs = {"<": "≤⩽", ">": "≥⩾"}[signs]
    latex = {"<": "l", ">": "g"}[signs]
    before = preceded_by(left)
    return rf"(?:[{unicode_signs}]{before}|{signs}{before}=|\\{before}{latex}e(?:q|qslant)?(?![A-Za-z]))"


NON_STRICT_AFTER_LETTER = f"(?:{sign_after('[a-z]', '<')}|{sign_after('[a-z]', '>')})"
NON_STRICT_AFTER_DIGIT = f"(?:{sign_after('[0-9]', '<')}|{sign_after('[0-9]', '>')})"
# f(x): the bracket, then x, y or z and a closing bracket or comma, then f, g or h before it.
F_OF_X_ANCHORS = (
    r"\([xyz][ \t,)](?:(?<=[fgh]\(..)|(?<=[fgh] \(..))",
    r"\([ \t](?:(?<=[fgh]\(.)|(?<=[fgh] \(.))",
)
