"""How a problem is written: numbers and answers, the three formats and the two registers.

Answer policy (what `answer` holds; `littlekit.curriculum.answers.grade` reads all of it):
- whole numbers as integers, without thousands separators ("12345");
- fractions in lowest terms as `p/q`, improper when above 1 ("23/12", as CCSS 5.NF.A.1's own
  example writes it), never as mixed numbers, and a whole value as an integer ("8/4" -> "2");
  negative fractions with the sign in front ("-7/4");
- decimals exactly, with no trailing zeros ("4.25", "0.7"); money with two decimals ("4.50");
- comparisons as `<`, `>` or `=`; lists (the factors of a number) as `[1, 2, 3, 6]`.

Formats (the text a model trains on, `render`):
- `plain`: the statement, then `Answer: <answer>`;
- `reversed`: the statement, then `Reversed answer: <answer with each number's digits reversed>`
  (Lee et al.: emitting the ones digit first lets a model add the way it reads);
- `scratchpad`: the statement, the derivation steps, then `Answer: <answer>`.

Registers: `compact` writes the problem in symbols ("What is 345 + 278?"); `prose` writes it as a
word problem ("Ana has 345 stickers ..."). The generator writes both; the record keeps one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction

FORMATS: tuple[str, ...] = ("plain", "reversed", "scratchpad")
REGISTERS: tuple[str, ...] = ("compact", "prose")
ANSWER_PREFIX = "Answer: "
REVERSED_PREFIX = "Reversed answer: "
_NUMBER_RUN = re.compile(r"[0-9.]+")


def fraction_text(value: Fraction | int) -> str:
    """`p/q` in lowest terms, or an integer when whole ("-7/4", "3")."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def decimal_text(value: Fraction | int, places: int | None = None) -> str:
    """An exact decimal ("4.25", "-0.7"); with `places`, padded to that many decimals ("4.50").

    Raises ValueError when the value has no finite decimal (1/3) or more decimals than `places`.
    """
    value = Fraction(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    scale = 0
    while (value * 10**scale).denominator != 1:
        scale += 1
        if scale > 12:
            raise ValueError(f"{value} has no finite decimal expansion")
    if places is not None:
        if scale > places:
            raise ValueError(f"{value} needs {scale} decimals, more than {places}")
        scale = places
    whole = int(value * 10**scale)
    if scale == 0:
        return f"{sign}{whole}"
    text = str(whole).rjust(scale + 1, "0")
    return f"{sign}{text[:-scale]}.{text[-scale:]}"


def money_text(value: Fraction | int) -> str:
    """Dollars with two decimals ("4.50")."""
    return decimal_text(value, places=2)


def signed(value: Fraction | int, first: bool = False) -> str:
    """A number inside an expression: negatives in brackets unless they come first ("(-3)")."""
    text = fraction_text(value)
    return text if first or not text.startswith("-") else f"({text})"


def list_text(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def reverse_digits(text: str) -> str:
    """Each run of digits (with its decimal point) written backwards: "623" -> "326",
    "-7/12" -> "-7/21", "4.25" -> "52.4". Applying it twice gives the text back."""
    return _NUMBER_RUN.sub(lambda m: m.group(0)[::-1], text)


def render(statement: str, steps: Sequence[str], answer: str, fmt: str) -> str:
    """The training text of one problem in format `fmt`."""
    if fmt == "plain":
        return f"{statement}\n{ANSWER_PREFIX}{answer}"
    if fmt == "reversed":
        return f"{statement}\n{REVERSED_PREFIX}{reverse_digits(answer)}"
    if fmt == "scratchpad":
        body = "\n".join(steps)
        return (
            f"{statement}\n{body}\n{ANSWER_PREFIX}{answer}"
            if body
            else f"{statement}\n{ANSWER_PREFIX}{answer}"
        )
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def read_answer(text: str, fmt: str) -> str:
    """The answer a rendered text ends with, digits put back in order for `reversed`."""
    prefix = REVERSED_PREFIX if fmt == "reversed" else ANSWER_PREFIX
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    if not last.startswith(prefix):
        raise ValueError(f"the last line does not start with {prefix!r}: {last!r}")
    answer = last[len(prefix) :]
    return reverse_digits(answer) if fmt == "reversed" else answer
