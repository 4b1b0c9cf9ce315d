"""Sampling operands so that digit counts, carry counts and answers come out balanced.

Drawing two operands uniformly from 0-999 makes 99% of them three-digit numbers and skews the
carry counts (seed 004); Lee et al. (arXiv:2307.03381) balance digit counts and carry counts and
gain accuracy in every slice, and Charton (arXiv:2308.15594) gains 2.4x by balancing the
*outcomes*. So `Draw` has two modes:

- `balanced` (the default): a number's digit count is drawn first, uniformly over the counts the
  range allows, then the number; `addends` and `subtraction` draw the carry (borrow) count
  uniformly over the counts possible for the digit counts, then a carry pattern with that count,
  then digits column by column that produce exactly that pattern (constructive, no rejection);
  `fact` draws the *product* uniformly over the distinct products, then one of its factor pairs.
- `uniform`: every operand uniformly over its whole range, as a naive generator would; kept as
  the control the chapter plots against.

Everything is drawn from one `random.Random`, so a problem's seed fixes it.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Sequence
from typing import TypeVar

MODES: tuple[str, ...] = ("balanced", "uniform")
T = TypeVar("T")

# Digit domains of one column: 'z' no digit (the operand is shorter), 'f' any digit, 'l' a
# leading digit (1-9).
_DOMAINS = {"z": range(0, 1), "f": range(0, 10), "l": range(1, 10)}


def _domain(i: int, width: int) -> str:
    if i >= width:
        return "z"
    return "l" if i == width - 1 else "f"


@functools.cache
def _column_pairs(op: str, da: str, db: str, carry_in: int, carry_out: int) -> tuple[tuple[int, int], ...]:
    """Digit pairs (x, y) of one column that turn `carry_in` into `carry_out` (a borrow for '-')."""
    pairs = []
    for x in _DOMAINS[da]:
        for y in _DOMAINS[db]:
            out = int(x + y + carry_in >= 10) if op == "+" else int(x - y - carry_in < 0)
            if out == carry_out:
                pairs.append((x, y))
    return tuple(pairs)


@functools.cache
def carry_patterns(
    op: str, width_a: int, width_b: int, final_carry: bool = True
) -> dict[int, tuple[tuple[int, ...], ...]]:
    """The feasible carry (borrow) patterns of a `width_a`-digit op a `width_b`-digit number, by
    count; a pattern gives each column's carry out, ones first. For '-' the last column may not
    borrow (a >= b); for '+' without `final_carry` neither may it carry (the sum keeps the width,
    "within 100")."""
    width = max(width_a, width_b)
    by_count: dict[int, list[tuple[int, ...]]] = {}
    for pattern in itertools.product((0, 1), repeat=width):
        if (op == "-" or not final_carry) and pattern[-1]:
            continue
        carry_in, feasible = 0, True
        for i, out in enumerate(pattern):
            if not _column_pairs(op, _domain(i, width_a), _domain(i, width_b), carry_in, out):
                feasible = False
                break
            carry_in = out
        if feasible:
            by_count.setdefault(sum(pattern), []).append(pattern)
    return {k: tuple(v) for k, v in sorted(by_count.items())}


def _from_digits(digits: Sequence[int]) -> int:
    return int("".join(map(str, reversed(digits))))


class Draw:
    """A seeded source of operands in one sampling mode (`balanced` or `uniform`)."""

    def __init__(self, rng: random.Random, mode: str = "balanced"):
        if mode not in MODES:
            raise ValueError(f"unknown sampling mode {mode!r}; choose from {', '.join(MODES)}")
        self.rng = rng
        self.mode = mode

    @property
    def balanced(self) -> bool:
        return self.mode == "balanced"

    def randint(self, low: int, high: int) -> int:
        """Uniform in [low, high] in both modes (for choices that are not magnitudes)."""
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def sample(self, options: Sequence[T], k: int) -> list[T]:
        return self.rng.sample(list(options), k)

    def number(self, low: int, high: int) -> int:
        """A whole number in [low, high]: digit count first (balanced) or uniform (uniform)."""
        if low > high:
            raise ValueError(f"empty range [{low}, {high}]")
        if not self.balanced or low < 0:
            return self.rng.randint(low, high)
        counts = range(len(str(low)), len(str(high)) + 1)
        width = self.choice(counts)
        lo = max(low, 10 ** (width - 1) if width > 1 else 0)
        hi = min(high, 10**width - 1)
        return self.rng.randint(lo, hi)

    def with_digits(self, width: int) -> int:
        """A number with exactly `width` digits (uniform among them)."""
        return self.rng.randint(10 ** (width - 1) if width > 1 else 1, 10**width - 1)

    def _column_operands(
        self, op: str, width_a: int, width_b: int, final_carry: bool = True
    ) -> tuple[int, int]:
        patterns = carry_patterns(op, width_a, width_b, final_carry)
        pattern = self.choice(patterns[self.choice(list(patterns))])
        xs, ys, carry_in = [], [], 0
        for i, out in enumerate(pattern):
            x, y = self.choice(_column_pairs(op, _domain(i, width_a), _domain(i, width_b), carry_in, out))
            xs.append(x)
            ys.append(y)
            carry_in = out
        return _from_digits(xs[:width_a]), _from_digits(ys[:width_b])

    def _widths(self, widths_a: Sequence[int], widths_b: Sequence[int], ordered: bool) -> tuple[int, int]:
        pairs = [(a, b) for a in widths_a for b in widths_b if not ordered or a >= b]
        return self.choice(pairs)

    def addends(
        self, widths_a: Sequence[int], widths_b: Sequence[int] | None = None, final_carry: bool = True
    ) -> tuple[int, int]:
        """(a, b) with a's digit count in `widths_a` and b's in `widths_b` (default the same).

        balanced: digit counts, then the carry count, uniformly; uniform: a and b uniform over the
        numbers with those digit counts. Without `final_carry` the sum has no more digits than the
        longer operand (uniform mode redraws until it does).
        """
        widths_b = widths_a if widths_b is None else widths_b
        if self.balanced:
            width_a, width_b = self._widths(widths_a, widths_b, ordered=False)
            return self._column_operands("+", width_a, width_b, final_carry)
        while True:
            a, b = self._uniform(widths_a), self._uniform(widths_b)
            if final_carry or len(str(a + b)) <= max(len(str(a)), len(str(b))):
                return a, b

    def subtraction(self, widths_a: Sequence[int], widths_b: Sequence[int] | None = None) -> tuple[int, int]:
        """(a, b) with a > b, a's digit count in `widths_a`, b's in `widths_b`; balanced over the
        borrow count like `addends`."""
        widths_b = widths_a if widths_b is None else widths_b
        for _ in range(1000):
            if self.balanced:
                width_a, width_b = self._widths(widths_a, widths_b, ordered=True)
                a, b = self._column_operands("-", width_a, width_b)
            else:
                a, b = self._uniform(widths_a), self._uniform(widths_b)
                a, b = max(a, b), min(a, b)
            if a > b:
                return a, b
        raise RuntimeError("could not draw a subtraction with a > b")

    def _uniform(self, widths: Sequence[int]) -> int:
        low, high = min(widths), max(widths)
        return self.rng.randint(10 ** (low - 1) if low > 1 else 1, 10**high - 1)

    def fact(
        self, low: int, high: int, low_b: int | None = None, high_b: int | None = None
    ) -> tuple[int, int]:
        """(a, b) with a in [low, high], b in [low_b, high_b] (default the same): balanced draws
        the product uniformly over the distinct products, then one of its factor pairs."""
        low_b = low if low_b is None else low_b
        high_b = high if high_b is None else high_b
        if not self.balanced:
            return self.rng.randint(low, high), self.rng.randint(low_b, high_b)
        by_product = _products(low, high, low_b, high_b)
        return self.choice(by_product[self.choice(list(by_product))])


@functools.cache
def _products(low: int, high: int, low_b: int, high_b: int) -> dict[int, tuple[tuple[int, int], ...]]:
    table: dict[int, list[tuple[int, int]]] = {}
    for a in range(low, high + 1):
        for b in range(low_b, high_b + 1):
            table.setdefault(a * b, []).append((a, b))
    return {p: tuple(pairs) for p, pairs in sorted(table.items())}
