"""The word lists of the prose register, and the SymPy-to-text glue every unit shares.

Names are short and common in US classrooms; no name reads as a chemical formula or a variable to
stage 4 (tested). Items are plural nouns children count. Every list is part of a unit's declared
vocabulary, so a word outside them is an audit failure.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

NAMES: tuple[str, ...] = (
    "Ana", "Ben", "Mia", "Sam", "Leo", "Ava", "Max", "Zoe",
    "Eli", "Ivy", "Omar", "Lena", "Kai", "Nora", "Ravi", "Tess",
)  # fmt: skip
ITEMS: tuple[str, ...] = (
    "apples", "stickers", "shells", "marbles", "books", "pencils", "cards", "stamps",
    "beads", "rocks", "cookies", "crayons", "buttons", "leaves", "blocks", "eggs",
)  # fmt: skip
CONTAINERS: tuple[str, ...] = ("bags", "boxes", "baskets", "jars", "rows", "packs")


def two_names(draw) -> tuple[str, str]:
    first, second = draw.sample(NAMES, 2)
    return first, second


def as_fraction(value: sympy.Expr) -> Fraction:
    """A SymPy rational as a Python Fraction (exact); anything else is an error."""
    if not value.is_Rational:
        raise ValueError(f"expected a rational SymPy value, got {value!r}")
    return Fraction(int(value.p), int(value.q))


def as_int(value: sympy.Expr) -> int:
    """A SymPy integer as an int; anything else is an error."""
    if not value.is_Integer:
        raise ValueError(f"expected a whole SymPy value, got {value!r}")
    return int(value)


def agree(derived: int | Fraction, value: sympy.Expr) -> None:
    """Stop generation when a hand derivation and SymPy disagree (a bug in one of them)."""
    if Fraction(derived) != as_fraction(value):
        raise ArithmeticError(f"derivation gave {derived}, SymPy {value}")
