"""Filter stage 4: drop a document that uses Beyond-K-5 symbolic notation.

The paper (Sec. 3.1.4, App. A.3, Table 3) scans each document with high-precision regular
expressions for *structured* notation and drops it on the first match. This module keeps one
table, `RULES`, of (family, name, example, gate, pattern) entries over the seven families in
`FAMILIES`. It covers every notation family of Table 3 (equations, exponents, roots,
inequalities, calculus/operators, functions) and the released filter's chemical formulas, in
unicode, LaTeX and plain-text spellings. Score, then threshold: `score` reports the first
family (in `FAMILIES` order) with a match and the matched text (at most 80 characters);
`decide` drops with reason `symbolic_<family>`. `match_all` lists every match per family,
`match_spans` every match with its rule and offsets.

What counts as K-5 and is therefore never matched (each choice is tested):

- Arithmetic with numbers only: `8 + 6 = 14`, `3 × 4 = 12`, `4 x 3 = 12`, `3x4=12`, `5 < 8`,
  `3 < 5 < 8` (ordering numbers, K.CC.C.7 / 2.NBT.A.4), `1/2 of 10`, `3/4/2020`, `$3.50`.
- One letter for an unknown with explicit operators: `n + 3 = 7`, `4 × n = 24`, `x = 5`.
  CCSS 3.OA.D.8 asks for "equations with a letter standing for the unknown quantity"; what
  grade 6 adds (6.EE.A.2) is the juxtaposed coefficient `2x`, two different variables, and
  expressions such as `2(x + 3)` or `(5 * d)`. So `2x + 3 = 7`, `y = 3x`, `a + b = 10` match;
  `x = 5` does not, and neither does `x + x = 8` (one letter).
- Measurement units: a number with a unit letter (`5m = 500 cm`, `483g`, `3h + 2h = 5h`) is not
  a coefficient, and area/volume units (`cm²`, `m^3`, `ft²`) are not exponents (3.MD.C, 5.MD.C).
- Powers of ten with a one-digit whole exponent (`10^3`, `10³`, `10^{3}`, "10 to the third
  power", "10 raised to the power of 3", also inside `2.5 × 10^3`): CCSS 5.NBT.A.2 is "use
  whole-number exponents to denote powers of 10", so they are grade-5 notation. `10^-3` and
  `10^12` still match. The released filter matches every `n^m`; we deliberately do not.

Borderline choices made for precision (the paper's "high-precision rules ... rather than
isolated symbols"):

- The variable after a juxtaposed coefficient excludes the unit letters c, d, g, h, k, l, m, o,
  p, s; two-variable equations and chained inequalities accept any lowercase letter. A single
  inequality with a variable matches with ≤ ≥ <= >= (`x ≥ 3`) and, for n, x, y, z only, with
  < > (`x > 5`, not "u <3").
- Exponent bases are a number, a closing bracket, or a run of at most three letters that is not
  part of a longer word, so footnote marks (`Washington²`) and markdown (`[^1]`) do not match;
  the exponent is a number, one letter or a bracket, never a word (`1 ^ Lesnar`). Superscript
  ¹ and ⁰ may not start a power (footnotes); `x⁻¹` matches. Caret abbreviations of books
  transcribed for Project Gutenberg (`M^r`, `y^e`, `1^{st}`) and `T^T` are not exponents. `**`
  needs a number, one letter or a bracket after it, so markdown bold (`**THE`) is prose.
- `√` must be followed by a number, a bracket or a short symbol (`√x`, `√ 16`), not by a word,
  since it is sometimes typed as a check mark ("√ Done"). `∛`, `∑`, `∫`, `∂`, `∞`, `\\sqrt`
  always match; so do "square root" and "cube root". `Σ` matches only outside Greek words
  (`ΣΧ` is a fraternity, not a sum). `\\frac` matches, as in the released filter, even for
  `\\frac{1}{2}`.
- `f(x)`, `g(y)`, `h(z)` only (Table 3). Named functions (sin, log, ln, exp, ...) need the
  bracket straight after the name and an argument that is not a plural ending or a word, so
  "a reading log (see page 3)", "sin(s)" and "tan(ned)" are prose; `console.log(` matches.
- Chemical formulas (released filter, not Table 3): element symbols of the periodic table, at
  least two, with counts (`H2O`, `CO2`, `C6H12O6`, `Ca(OH)2`) or, without counts, a two-letter
  symbol, a metal or H first and a nonmetal last (`NaCl`, `KCl`, `NaOH`); a unicode subscript
  alone suffices (`O₂`). Not formulas: counts of 1 or 0 (`H1N1`), flu subtypes (`H5N8`), codes
  with counts but without H, O or a two-letter symbol (`W3C`, `PC2`, `PS4`, `Y2K`, `B2B`,
  `NW25`), names (`McK`, `HeLa`, `CoV`, `GaGa`, `UFOs`, `C3PO`, `NaN`, "VO2 max"), all-capital
  words without digits (`USA`, `NASA`, `OK`, `CO`, `NO`; the formula `KOH` is lost to this
  rule), a single element with a count (`O2`, `K12`, `B12`, `N95`, `V8`) and anything after a
  hyphen (`SARS-CoV-2`). A stoichiometric coefficient may come first (`6CO2 + 6H2O`, `2H2O`):
  what follows it must be a formula by these rules, or a molecular element (`6O2`, `3H2`,
  `2Cl2`, `O3`), so `6CO`, `5KW`, `100HP`, `3BHK` and `2K12` stay prose.

Linear time: each pattern starts with a character class or a literal (token-boundary tests are
look-behinds placed after that first character), and every repeat that could meet itself again
is bounded (`{0,3}` spaces, `{1,12}` digits) or possessive, so the work per position is
constant. Speed on adversarial text comes from three layers, cheapest first:

1. a gate (`needles`): substring tests that skip a rule when a character it needs is missing;
2. an anchor (`Anchor`): regexes that start with the rule's rarest required literal and reject
   near misses themselves, one scan of the text;
3. the pattern itself, run only on a window around each anchor hit (`Rule.reach` characters,
   computed from the pattern), so its matches are exactly those of a whole-text scan (tested).

After `MAX_MISSED_HITS` anchor hits without a match a rule scans the rest of the text with its
pattern, so no text costs more than that plain scan plus those windows. A 1 MB adversarial
string (`adversarial_inputs(size)`, timed by the tests and the benchmark) costs a few to a few
tens of milliseconds of CPU. Digits are the ASCII digits 0-9 throughout.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass
from re import _constants, _parser  # Python's own regex parser, to size match windows
from typing import Any

from littlekit.filter.base import Decision, Stage

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


Needle = str | re.Pattern[str]


class Needles:
    """A gate: groups of needles, of which every group must have one in the text.

    Build it with `needles`. Each group is kept as its single characters, its longer substrings
    and, rarely, compiled regexes. Given the text's set of characters (`characters_of`, built
    once per text for all rules), single characters and the characters of substrings are set
    tests; without it, each character is a memchr. A substring is searched for only when all
    its characters occur: in a text of one repeated character a substring search is slow.
    """

    def __init__(self, groups: Iterable[Iterable[Needle]] = ()):
        self.groups = tuple(
            (
                frozenset(n for n in group if isinstance(n, str) and len(n) == 1),
                tuple((n, frozenset(n)) for n in group if isinstance(n, str) and len(n) > 1),
                tuple(n for n in group if isinstance(n, re.Pattern)),
            )
            for group in (tuple(group) for group in groups)
        )

    def __repr__(self) -> str:
        return f"Needles({self.groups!r})"

    def opens(self, text: str, chars: Set[str] | None = None) -> bool:
        """Whether text holds a needle of every group (`chars`: the text's characters, if known)."""
        for singles, words, patterns in self.groups:
            if chars is not None:
                if not singles.isdisjoint(chars):
                    continue
            elif any(char in text for char in singles):
                continue
            if words and any(
                (letters <= chars if chars is not None else all(char in text for char in letters))
                and word in text
                for word, letters in words
            ):
                continue
            if patterns and any(pattern.search(text) for pattern in patterns):
                continue
            return False
        return True


SHORT_TEXT = 100_000  # longer texts skip the character set: building it costs more than it saves


def characters_of(text: str) -> set[str] | None:
    """The set of characters of a text up to SHORT_TEXT long, for the gates; None beyond."""
    return set(text) if len(text) <= SHORT_TEXT else None


def needles(*groups: str | tuple[Needle, ...]) -> Needles:
    """A gate (see `Needles`): a group given as a str is its characters ("<>" means "<" or ">"); a
    tuple lists substrings (or compiled regexes that must be found). `needles("=", DIGITS)`
    reads "an equals sign and a digit"."""
    return Needles(tuple(group) if isinstance(group, str) else group for group in groups)


NO_NEEDLES = Needles()


def gate_opens(gate: Needles, text: str) -> bool:
    """Whether text holds a needle of every group of the gate: substring tests, far cheaper than
    a regex scan."""
    return gate.opens(text, characters_of(text))


def preceded_by(left: str) -> str:
    """Placed right after one consumed character: `left` and 0-3 blanks come before it.

    Python's look-behinds have a fixed width, so this is one look-behind per number of blanks,
    tested in an atomic group (once one holds, a later failure does not retry the others).
    An anchor can then start with a literal, which the regex engine scans for quickly, and
    still test what precedes it.
    """
    blanked = "|".join(rf"(?<={left}[ \t]{{{blanks}}}.)" for blanks in range(1, 4))
    return rf"(?>(?<={left}.)|(?<=[ \t].)(?:{blanked}))"


@dataclass(frozen=True)
class Anchor:
    """A fast necessary condition for a rule: regexes of which one hits inside, or one
    character before, every match the rule accepts.

    Each regex starts with a literal (or a small character class), so the regex engine jumps
    from candidate to candidate, and rejects the usual near misses itself with cheap
    look-arounds, so a text full of near misses costs one fast scan per regex. Several regexes
    are one anchor whose hits are their union: one literal each scans faster than one regex
    with an alternation at its start. `needs` gates the anchor; a rule uses its first anchor
    whose gate opens. `back` bounds how far before the hit a match can start (None: as far as
    the rule's longest match).
    """

    patterns: tuple[re.Pattern[str], ...]
    needs: Needles = NO_NEEDLES
    back: int | None = None

    def hits(self, text: str) -> Callable[[int], int | None]:
        """A function from a position to the first hit at or after it (None: no more hits).

        Positions asked for never decrease, so each regex searches again only once the
        position passes its last hit.
        """
        upcoming: list[int | None] = [-1] * len(self.patterns)  # -1: not searched yet

        def next_hit(position: int) -> int | None:
            best = None
            for index, pattern in enumerate(self.patterns):
                hit = upcoming[index]
                if hit is not None and hit < position:
                    found = pattern.search(text, position)
                    hit = upcoming[index] = None if found is None else found.start()
                if hit is not None and (best is None or hit < best):
                    best = hit
            return best

        return next_hit


def anchor(*patterns: str, needs: Needles = NO_NEEDLES, back: int | None = None) -> Anchor:
    return Anchor(tuple(re.compile(pattern) for pattern in patterns), needs, back)


def _reach(pattern: re.Pattern[str]) -> int:
    """Characters a match attempt can read from where it starts: longest match + look-ahead.

    From Python's own regex parser. A window that ends `reach` characters after a start gives
    the same answer at that start as the whole text. At least one character is read past the
    match, for `\\b` and a failed attempt to match more.
    """
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    reach = parsed.getwidth()[1] + max(1, _look_around(parsed))
    if reach >= _constants.MAXREPEAT:
        raise ValueError(f"unbounded pattern {pattern.pattern!r}: a window cannot hold its match")
    return reach


def _look_around(items: Iterable[tuple[Any, Any]]) -> int:
    """Longest look-around inside a parsed pattern, nested ones added to their container."""
    widest = 0
    for op, arg in items:
        if op in (_constants.ASSERT, _constants.ASSERT_NOT):
            widest = max(widest, arg[1].getwidth()[1] + _look_around(arg[1]))
        elif op is _constants.BRANCH:
            widest = max([widest, *(_look_around(branch) for branch in arg[1])])
        elif op is _constants.SUBPATTERN:
            widest = max(widest, _look_around(arg[-1]))
        elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT):
            widest = max(widest, _look_around(arg[2]))
        elif op is _constants.ATOMIC_GROUP:
            widest = max(widest, _look_around(arg))
    return widest


# After this many anchor hits without a match, a rule scans the rest of the text with its
# pattern directly (linear, as before anchors), so a text built to defeat an anchor costs at
# most this many windows more than the plain scan.
MAX_MISSED_HITS = 1000


@dataclass(frozen=True)
class Rule:
    """One pattern of the filter: its family, a name, an example it must match, and its gates.

    `needs` (see `needles`) must open for the rule to run at all. `pattern` defines what
    matches; `check`, when set, must accept the matched text. With `anchors`, the pattern is
    only run on short windows around the hits of the first anchor whose gate opens (see
    `Anchor`); the matches are the same as a scan of the whole text (tested), found faster.
    """

    family: str
    name: str
    example: str
    needs: Needles
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    anchors: tuple[Anchor, ...] = ()
    reach: int = 0

    def could_match(self, text: str, chars: Set[str] | None = None) -> bool:
        """False when a needle is missing, so the pattern cannot match (`chars`: see `Needles`)."""
        return self._anchor_for(text, chars) is not False

    def _anchor_for(self, text: str, chars: Set[str] | None = None) -> Anchor | None | bool:
        """The anchor to scan with; None to scan the whole text; False when nothing can match."""
        if not self.needs.opens(text, chars):
            return False
        if not self.anchors:
            return None
        return next((a for a in self.anchors if a.needs.opens(text, chars)), False)

    def matches(self, text: str, chars: Set[str] | None = None) -> Iterator[re.Match[str]]:
        """Every accepted match object of this rule in text, in text order (as `finditer`).

        `chars`, the text's set of characters (`characters_of`), makes the gates faster when
        several rules look at the same text.
        """
        chosen = self._anchor_for(text, chars)
        if chosen is False:
            return
        found = self.pattern.finditer(text) if chosen is None else self._around_hits(text, chosen)
        for match in found:
            if self.check is None or self.check(match.group(0)):
                yield match

    def finditer(self, text: str, chars: Set[str] | None = None) -> Iterator[str]:
        """Every accepted match of this rule in text, as strings."""
        for found in self.matches(text, chars):
            yield found.group(0)

    def _around_hits(self, text: str, anchor: Anchor) -> Iterator[re.Match[str]]:
        """The pattern's matches, looked for only next to the anchor's hits.

        Every match the rule accepts starts in [hit - back, hit + 1] for some hit, so the
        leftmost match at or after `pos` is the leftmost match starting in that range for the
        first hit at or after `pos - 1`, or there is none before the next hit. The start of the
        text counts as a hit just before it (an anchor may need the character before a match,
        as the formula anchor does). Matches do not overlap, as with `finditer`.
        """
        back = self.reach if anchor.back is None else anchor.back
        next_hit = anchor.hits(text)
        pos, hit, missed = 0, -1, 0
        while True:
            found = self._first_match_near(text, max(pos, hit - back), hit + 1)
            if found is None:
                pos = hit + 2
                missed += 1
                if missed > MAX_MISSED_HITS:
                    yield from self.pattern.finditer(text, pos)
                    return
            else:
                yield found
                pos = found.end()
            upcoming = next_hit(pos - 1)
            if upcoming is None:
                return
            hit = upcoming

    def _first_match_near(self, text: str, low: int, high: int) -> re.Match[str] | None:
        """The leftmost match starting in [low, high], read through a window of `reach`."""
        end = high + self.reach
        if high - low < 3:
            for start in range(low, high + 1):
                found = self.pattern.match(text, start, end)
                if found is not None:
                    return found
            return None
        found = self.pattern.search(text, low, end)
        return found if found is not None and found.start() <= high else None


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


def _clip(matched: str) -> str:
    return matched[:MAX_MATCH_CHARS]


def first_match(text: str, families: Iterable[str] | None = None) -> tuple[str, str] | None:
    """(family, matched text) of the first rule, in table order, that matches; None when clean."""
    chars = characters_of(text)
    for rule in _rules_for(families):
        for matched in rule.finditer(text, chars):
            return rule.family, _clip(matched)
    return None


def match_all(text: str, families: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Every match per family (all requested families are keys; clean families map to [])."""
    rules = _rules_for(families)
    found: dict[str, list[str]] = {rule.family: [] for rule in rules}
    chars = characters_of(text)
    for rule in rules:
        found[rule.family].extend(_clip(matched) for matched in rule.finditer(text, chars))
    return found


@dataclass(frozen=True)
class Span:
    """One match in a text: the rule's family and name, offsets [start, end), the matched text."""

    family: str
    rule: str
    start: int
    end: int
    text: str


def match_spans(text: str, families: Iterable[str] | None = None) -> list[Span]:
    """Every match with its offsets, rule by rule in table order, each rule's in text order.

    The first span is the stage's verdict (`score`'s family and, clipped, its match); notebooks
    use the offsets to show a match in its context.
    """
    chars = characters_of(text)
    return [
        Span(rule.family, rule.name, found.start(), found.end(), found.group(0))
        for rule in _rules_for(families)
        for found in rule.matches(text, chars)
    ]


# Fragments that start many partial matches of the patterns (a caret with no exponent, an open
# bracket, half a formula, a chain of comparisons ...). Repeated to a megabyte they are the
# linear-time check of the unit tests and the benchmark: a pattern that backtracks over what it
# has already scanned would take seconds to minutes on one of them.
ADVERSARIAL_UNITS: tuple[str, ...] = (
    "x^", "a<", "a < ", "(", "2x+", "2x + ", "f(x", "1", "1 ", " ", "√", "H2O", "(H2O", "ab1", "CaCl",
    "1.", "10^", "x^{", "x**", "= 2x", "a + b ", "sin(", "x ≤ ", "4 * b + ", "Na", "x²", "dy/d", "lim ",
    "5 squared ", "ABCDEFGH", "\\", "the cat sat on the mat and 8 + 6 = 14. ", "Ca(OH", "-3 <= ", "M^r ",
    "1^{st} ", "10^3 ", "<sup>", "\\le", "x^(1/", "iDc~9^GY", "T",
)  # fmt: skip


def adversarial_text(unit: str, size: int = 1_000_000) -> str:
    """`unit` repeated to at most `size` characters (whole repeats only)."""
    if not unit:
        raise ValueError("unit must not be empty")
    return unit * (size // len(unit))


def adversarial_inputs(size: int = 1_000_000) -> dict[str, str]:
    """Every fragment of ADVERSARIAL_UNITS repeated to `size` characters, keyed by the fragment."""
    return {unit: adversarial_text(unit, size) for unit in ADVERSARIAL_UNITS}


class SymbolicStage(Stage):
    """Drop a document on any match of a Beyond-K-5 notation pattern (released filter stage 4)."""

    name = "symbolic"

    def __init__(self, families: Iterable[str] | None = None):
        self.families = tuple(FAMILIES if families is None else families)
        self.rules = _rules_for(self.families)

    def score(self, text: str) -> dict[str, Any]:
        """family: first family matched (FAMILIES order) or None; match: the matched text or None."""
        chars = characters_of(text)
        for rule in self.rules:
            for matched in rule.finditer(text, chars):
                return {"family": rule.family, "match": _clip(matched)}
        return {"family": None, "match": None}

    def decide(self, scores: dict[str, Any]) -> Decision:
        family = scores["family"]
        if family is None:
            return Decision(keep=True, scores=scores)
        return Decision(keep=False, reason=f"symbolic_{family}", scores=scores)
