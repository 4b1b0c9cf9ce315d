"""A unit: one skill tied to Common Core codes, with a declared vocabulary and a generator.

The declaration is what makes the curriculum checkable. A unit says which CCSS codes it teaches
(spelt as in `data/standards/standards.csv`), its grade and band, which words and which
non-alphanumeric symbols it may emit, which Beyond-K-5 features it may use (negative numbers,
exponents, variables, equations to solve) and which notation families of filter stage 4 its
compact statements should trigger. `littlekit.curriculum.audit` holds every unit's output to
that declaration, so a template change that slips in an undeclared token fails a test instead
of reaching a corpus.

A generator takes a `Draw` (a seeded RNG plus the sampling mode, `littlekit.curriculum.sampling`)
and returns a `Problem`: both registers' statements, the derivation steps, the answer as text,
and `expression`, the problem's content in a small SymPy-readable language that the audit
re-derives on its own (see `audit.rederive`).

The unit modules (`k5_units`, `beyond_units`) register themselves here as they are imported;
`littlekit.curriculum.units` imports them and answers for the whole catalogue.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

BANDS: tuple[str, ...] = ("K5", "BEYOND")
GRADE_ORDER: tuple[str, ...] = ("K", "1", "2", "3", "4", "5", "6", "7", "8")
FEATURES: tuple[str, ...] = ("negative", "exponent", "variable", "equation")
# What every rendered text may hold whatever the unit: sentence punctuation and the answer line.
BASE_SYMBOLS = frozenset(".,?:")
FORMAT_WORDS = frozenset({"answer", "reversed"})

_WORD = re.compile(r"[A-Za-z]+")


def vocab(*texts: str | Iterable[str]) -> frozenset[str]:
    """The lowercased words of template strings (placeholders such as `{name}` are skipped)."""
    words: set[str] = set()
    for text in texts:
        parts = [text] if isinstance(text, str) else list(text)
        for part in parts:
            words.update(w.lower() for w in _WORD.findall(re.sub(r"\{[^{}]*\}", " ", part)))
    return frozenset(words)


@dataclass(frozen=True)
class Problem:
    """What a generator returns: one problem in both registers, derived, not asserted."""

    compact: str  # the statement with symbols ("What is 345 + 278?")
    prose: str  # the same problem as a word problem
    expression: str  # the content in the audit's SymPy-readable language ("345 + 278")
    answer: str  # the answer as the grader reads it ("623", "3/4", "4.50", "<", "[1, 2, 3, 6]")
    steps: tuple[str, ...]  # the derivation, one line each (digit-by-digit for column arithmetic)
    carries: int | None = None  # carries (addition, multiplication) or borrows (subtraction)
    digits: tuple[int, ...] = ()  # digit counts of the operands that were balanced


@dataclass(frozen=True)
class Unit:
    """One skill: its standards, grade, band, declared vocabulary and symbols, and generator."""

    id: str
    title: str
    ccss: tuple[str, ...]
    grade: str
    band: str
    generate: Callable[[Any], Problem] = field(repr=False, compare=False)
    words: frozenset[str] = frozenset()
    symbols: frozenset[str] = frozenset()
    allows: frozenset[str] = frozenset()  # Beyond-K-5 features this unit may use (FEATURES)
    families: tuple[str, ...] = ()  # stage-4 families its compact statements trigger
    constants: frozenset[int] = frozenset()  # numbers its expression may use that the statement lacks

    def __post_init__(self) -> None:
        if self.band not in BANDS:
            raise ValueError(f"unit {self.id}: band must be one of {BANDS}, got {self.band!r}")
        if self.grade not in GRADE_ORDER:
            raise ValueError(f"unit {self.id}: grade must be one of {GRADE_ORDER}, got {self.grade!r}")
        if (self.band == "K5") != (GRADE_ORDER.index(self.grade) <= 5):
            raise ValueError(f"unit {self.id}: grade {self.grade} does not belong to band {self.band}")
        if self.band == "K5" and self.allows:
            raise ValueError(f"unit {self.id}: a K-5 unit may not allow {sorted(self.allows)}")
        unknown = set(self.allows) - set(FEATURES)
        if unknown:
            raise ValueError(f"unit {self.id}: unknown features {sorted(unknown)}; known: {FEATURES}")
        if not self.ccss:
            raise ValueError(f"unit {self.id}: no CCSS code")

    @functools.cached_property
    def allowed_words(self) -> frozenset[str]:
        """The declared words and the format's own ("answer", "reversed")."""
        return self.words | FORMAT_WORDS

    @functools.cached_property
    def allowed_symbols(self) -> frozenset[str]:
        """The declared symbols and sentence punctuation."""
        return self.symbols | BASE_SYMBOLS


UNITS: dict[str, Unit] = {}


def register(unit: Unit) -> Unit:
    """Add a unit to the registry (ids are unique)."""
    if unit.id in UNITS:
        raise ValueError(f"unit id {unit.id!r} is registered twice")
    UNITS[unit.id] = unit
    return unit


def unit(
    id: str,
    title: str,
    ccss: str | Sequence[str],
    grade: str,
    *,
    words: Iterable[str] = (),
    symbols: str = "",
    allows: Iterable[str] = (),
    families: Iterable[str] = (),
    constants: Iterable[int] = (),
) -> Callable[[Callable[[Any], Problem]], Callable[[Any], Problem]]:
    """Decorator registering a generator function as a unit (band follows from the grade)."""

    def wrap(generate: Callable[[Any], Problem]) -> Callable[[Any], Problem]:
        band = "K5" if GRADE_ORDER.index(grade) <= 5 else "BEYOND"
        register(
            Unit(
                id=id,
                title=title,
                ccss=(ccss,) if isinstance(ccss, str) else tuple(ccss),
                grade=grade,
                band=band,
                generate=generate,
                words=frozenset(words),
                symbols=frozenset(symbols),
                allows=frozenset(allows),
                families=tuple(families),
                constants=frozenset(constants),
            )
        )
        return generate

    return wrap
