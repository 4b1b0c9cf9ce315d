"""Digit-by-digit derivations: column addition and subtraction, multiplication, long division.

Lee et al. (arXiv:2307.03381) find that a scratchpad that spells out each column reaches ~100%
accuracy where plain `A+B=C` plateaus, so these functions return the steps a pupil writes, with
every carry and borrow named, and the result the steps arrive at. They use plain integer
arithmetic on digits; the units compare that result with SymPy's, so a slip in either path
stops generation. Steps never contain a negative number (K-5): a borrow is written as
`10 + t - 1`, not as `t - 1` on a zero digit.
"""

from __future__ import annotations

from dataclasses import dataclass

PLACES: tuple[str, ...] = (
    "ones",
    "tens",
    "hundreds",
    "thousands",
    "ten thousands",
    "hundred thousands",
    "millions",
    "ten millions",
    "hundred millions",
    "billions",
    "ten billions",
    "hundred billions",
)
WORDS: tuple[str, ...] = (
    *PLACES,
    "write carry borrow from the bring down goes into times left over add",
)


@dataclass(frozen=True)
class Derivation:
    """What a column algorithm derived: the result, its lines, and how many carries or borrows."""

    result: int
    steps: tuple[str, ...]
    carries: int


def digits_of(n: int) -> list[int]:
    """Digits least significant first (0 -> [0])."""
    if n < 0:
        raise ValueError(f"digits_of takes a non-negative integer, got {n}")
    return [int(c) for c in reversed(str(n))]


def place(i: int) -> str:
    if i >= len(PLACES):
        raise ValueError(f"numbers with more than {len(PLACES)} digits are not supported")
    return PLACES[i]


def count_carries(a: int, b: int) -> int:
    """Columns of a + b that carry (a, b >= 0)."""
    carry = count = 0
    while a or b or carry:
        total = a % 10 + b % 10 + carry
        carry = total // 10
        count += carry
        a, b = a // 10, b // 10
    return count


def count_borrows(a: int, b: int) -> int:
    """Columns of a - b that borrow (a >= b >= 0)."""
    if a < b:
        raise ValueError(f"count_borrows needs a >= b, got {a} - {b}")
    borrow = count = 0
    while a or b:
        borrow = 1 if a % 10 - borrow < b % 10 else 0
        count += borrow
        a, b = a // 10, b // 10
    return count


def add_columns(a: int, b: int) -> Derivation:
    """a + b column by column, ones first: each column's sum, the digit written, the carry."""
    xs, ys = digits_of(a), digits_of(b)
    width = max(len(xs), len(ys))
    xs, ys = xs + [0] * (width - len(xs)), ys + [0] * (width - len(ys))
    short = min(len(digits_of(a)), len(digits_of(b)))
    lines, out, carry, carries = [], [], 0, 0
    for i in range(width):
        x, y = xs[i], ys[i]
        total = x + y + carry
        terms = [str(x), str(y)] if i < short else [str(x if i < len(digits_of(a)) else y)]
        if carry:
            terms.append("1")
        written, carry = total % 10, total // 10
        carries += carry
        body = f"{' + '.join(terms)} = {total}, write {written}" if len(terms) > 1 else f"write {written}"
        lines.append(f"{place(i)}: {body}" + (", carry 1" if carry else ""))
        out.append(written)
    if carry:
        lines.append(f"{place(width)}: write 1")
        out.append(1)
    result = int("".join(map(str, reversed(out))))
    return Derivation(result, tuple(lines), carries)


def subtract_columns(a: int, b: int) -> Derivation:
    """a - b (a >= b) column by column, ones first, borrowing from the next place when needed."""
    if a < b:
        raise ValueError(f"subtract_columns needs a >= b, got {a} - {b}")
    xs, ys = digits_of(a), digits_of(b)
    ys = ys + [0] * (len(xs) - len(ys))
    short = len(digits_of(b))
    lines, out, borrow, borrows = [], [], 0, 0
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        has_bottom = i < short
        if x - borrow >= y:
            top = x - borrow
            first = f"{x} - 1 = {top}, " if borrow else ""
            body = f"{first}{top} - {y} = {top - y}" if has_bottom else (f"{x} - 1 = {top}" if borrow else "")
            digit, borrow = top - y, 0
        else:
            top = 10 + x - borrow
            head = f"borrow 1 from the {place(i + 1)}: 10 + {x}" + (" - 1" if borrow else "") + f" = {top}"
            body = f"{head}, {top} - {y} = {top - y}" if has_bottom else head
            digit, borrow = top - y, 1
            borrows += 1
        lines.append(f"{place(i)}: {body + ', ' if body else ''}write {digit}")
        out.append(digit)
    result = int("".join(map(str, reversed(out))))
    return Derivation(result, tuple(lines), borrows)


def multiply_by_digit(a: int, d: int) -> Derivation:
    """a × d for one digit d, column by column with the carries."""
    if not 0 <= d <= 9:
        raise ValueError(f"multiply_by_digit takes one digit, got {d}")
    lines, out, carry, carries = [], [], 0, 0
    for i, x in enumerate(digits_of(a)):
        product = x * d + carry
        body = f"{x} × {d}" + (f" + {carry}" if carry else "") + f" = {product}"
        written, carry = product % 10, product // 10
        carries += 1 if carry else 0
        lines.append(f"{place(i)}: {body}, write {written}" + (f", carry {carry}" if carry else ""))
        out.append(written)
    width = len(out)
    for j, digit in enumerate(digits_of(carry) if carry else []):
        lines.append(f"{place(width + j)}: write {digit}")
        out.append(digit)
    result = int("".join(map(str, reversed(out)))) if out else 0
    return Derivation(result, tuple(lines), carries)


def multiply_columns(a: int, b: int) -> Derivation:
    """a × b: for one-digit b the columns; else one partial product per non-zero digit of b (each
    with its columns), then the partial products added column by column."""
    ys = digits_of(b)
    if len(ys) == 1:
        return multiply_by_digit(a, b)
    lines: list[str] = []
    partials: list[int] = []
    carries = 0
    for j, d in enumerate(ys):
        if d == 0:
            continue
        part = multiply_by_digit(a, d)
        carries += part.carries
        lines.append(f"{a} × {d}:")
        lines.extend(part.steps)
        scaled = part.result * 10**j
        if j:
            lines.append(f"{a} × {d * 10**j} = {part.result} × {10**j} = {scaled}")
        else:
            lines.append(f"{a} × {d} = {scaled}")
        partials.append(scaled)
    total = partials[0]
    for part in partials[1:]:
        added = add_columns(total, part)
        lines.append(f"add {total} + {part}:")
        lines.extend(added.steps)
        lines.append(f"{total} + {part} = {added.result}")
        total = added.result
    return Derivation(total, tuple(lines), carries)


def long_division(dividend: int, divisor: int) -> tuple[int, int, tuple[str, ...]]:
    """(quotient, remainder, steps) of the standard algorithm, one step per digit brought down."""
    if divisor < 2:
        raise ValueError(f"long_division needs a divisor of at least 2, got {divisor}")
    digits = str(dividend)
    lines: list[str] = []
    remainder, quotient, started = 0, 0, False
    for i, ch in enumerate(digits):
        current = remainder * 10 + int(ch)
        if not started and current < divisor and i < len(digits) - 1:
            remainder = current
            continue
        q = current // divisor
        product = q * divisor
        brought = f"bring down {ch}: {current}; " if started else ""
        lines.append(
            f"{brought}{divisor} goes into {current} {q} times: "
            f"{q} × {divisor} = {product}, {current} - {product} = {current - product}"
        )
        started = True
        remainder = current - product
        quotient = quotient * 10 + q
    return quotient, remainder, tuple(lines)
