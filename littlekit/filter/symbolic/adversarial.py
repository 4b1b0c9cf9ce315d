"""Megabyte-long adversarial strings for stage 4's linear-time checks (the unit tests, the
benchmark and chapter 5's timing section build them from here)."""

from __future__ import annotations

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
