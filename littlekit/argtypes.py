"""What every `littlekit` subcommand shares: the usage error and the argument types."""

from __future__ import annotations

import argparse
import math


class UsageError(Exception):
    """Something the user typed is wrong; reported in one line with exit code 2."""

    def __init__(self, message: str, prog: str = "littlekit filter"):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument raises UsageError instead of printing usage and exiting."""

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)", self.prog)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def fraction(text: str) -> float:
    value = finite(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction between 0 and 1, got {text}")
    return value


def top_p(text: str) -> float:
    """Nucleus sampling's mass: above 0 (0 keeps no token) and at most 1 (1: off)."""
    value = finite(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1 (1: off), got {text}")
    return value


def int_range(low: int, high: int):
    """An argument type: a whole number from low to high (a count, a seed), e.g. int_range(0, 2**32 - 1)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}, got {text}")
        return value

    parse.__name__ = f"int_range({low}, {high})"
    return parse


port = int_range(1, 65535)  # a TCP port (0 would ask the OS for any free one, which a script cannot share)


def non_negative(text: str) -> float:
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (an age, a size): NaN, infinities, 0 and negatives are refused."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value
