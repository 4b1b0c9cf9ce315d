"""Checks for notebook parameters, so a bad `papermill -p` value fails at once with a clear message.

Each check returns the value (normalised where noted) or raises `ParameterError` naming the
parameter, what it must be and what it got (never the value of a parameter that may hold a secret).
Notebooks call `check(globals(), name=checker, ...)` once, right after the `parameters` cell, with
these functions (or `optional`, `number`, `choice`, `boolean`, `path`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, MutableMapping
from pathlib import Path
from typing import Any

_RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ParameterError(ValueError):
    """A notebook parameter has a value the notebook cannot use."""


def _fail(name: str, expected: str, value: Any) -> ParameterError:
    return ParameterError(f"parameter {name} must be {expected}, got {value!r}")


def check_positive_int(name: str, value: Any) -> int:
    """An int >= 1 (bools and floats such as 2.5 are refused; 2.0 is accepted as 2)."""
    if isinstance(value, bool):
        raise _fail(name, "a positive integer", value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 1:
        raise _fail(name, "a positive integer", value)
    return value


def check_int(name: str, value: Any) -> int:
    """Any int (for seeds); bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, "an integer", value)
    return value


def check_number(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite real number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(name, "a finite number", value)
    if not low <= value <= high:
        raise _fail(name, f"a number in [{low}, {high}]", value)
    return float(value)


def check_fraction(name: str, value: Any) -> float:
    """A number in [0, 1] (a share, a threshold on a fraction)."""
    return check_number(name, value, 0.0, 1.0)


def check_choice(name: str, value: Any, choices: Collection) -> Any:
    """One of `choices`."""
    if value not in choices:
        raise _fail(name, f"one of {sorted(map(str, choices))}", value)
    return value


def check_run_name(name: str, value: Any) -> str:
    """A run name usable as one folder name: letters, digits, '.', '_', '-'; no slashes."""
    if not isinstance(value, str) or not _RUN_NAME_RE.match(value):
        raise _fail(name, "a folder name of letters, digits, '.', '_' or '-'", value)
    return value


def check_path(
    name: str,
    value: Any,
    allow_none: bool = True,
    must_exist: bool = True,
    suffixes: Collection[str] | None = None,
) -> Path | None:
    """None (when allowed: the embedded default) or a path, which must exist when `must_exist`
    and, with `suffixes` (such as ".tsv"), end in one of them (any case)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str | os.PathLike) or not str(value):
        expected = "a path or None" if allow_none else "a path"
        raise _fail(name, expected, value)
    path = Path(value).expanduser()
    if suffixes is not None and path.suffix.lower() not in {s.lower() for s in suffixes}:
        *rest, last = sorted(suffixes)
        kinds = f"{', '.join(rest)} or {last}" if rest else last
        raise ParameterError(f"parameter {name} must be a {kinds} file, got {str(path)!r}")
    if must_exist and not path.exists():
        raise ParameterError(f"parameter {name} points at {str(path)!r}, which does not exist")
    return path


def check_text(name: str, value: Any) -> str:
    """A non-empty string (a model name, a device such as "cuda:0")."""
    if not isinstance(value, str) or not value.strip():
        raise _fail(name, "a non-empty string", value)
    return value


def check_env_name(name: str, value: Any) -> str:
    """The NAME of an environment variable (such as "OPENAI_API_KEY"), never its value.

    The message does not repeat what it got: a key pasted in by mistake stays out of the output.
    """
    if not isinstance(value, str) or not _ENV_NAME_RE.match(value):
        raise ParameterError(
            f"parameter {name} must be the name of an environment variable (not the key itself)"
        )
    return value


def check_models(name: str, value: Any) -> dict[str, str]:
    """A non-empty dict {label: local path or Hub id}, labels and locations non-empty strings."""
    ok = isinstance(value, dict) and value and all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    )
    if not ok:
        raise _fail(name, "a non-empty dict {label: local path or Hub id}", value)
    return dict(value)


def check_url(name: str, value: Any, allow_none: bool = True) -> str | None:
    """None (when allowed) or an http(s) URL such as "http://localhost:8000/v1"; trailing '/' dropped."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not re.match(r"^https?://[^\s/]+", value):
        expected = "an http(s) URL or None" if allow_none else "an http(s) URL"
        raise _fail(name, expected, value)
    return value.rstrip("/")


# --- checkers for `check`: each takes (name, value) and returns the value to use -------------------

Checker = Callable[[str, Any], Any]


def optional(checker: Checker) -> Checker:
    """None, or a value `checker` accepts."""
    return lambda name, value: None if value is None else checker(name, value)


def number(low: float = -math.inf, high: float = math.inf) -> Checker:
    """A finite number in [low, high]."""
    return lambda name, value: check_number(name, value, low, high)


def choice(*choices: Any) -> Checker:
    """One of `choices`."""
    return lambda name, value: check_choice(name, value, choices)


boolean: Checker = choice(True, False)


def path(
    allow_none: bool = True, must_exist: bool = True, suffixes: Collection[str] | None = None
) -> Checker:
    """A path (None allowed unless `allow_none` is False) that must exist unless `must_exist` is False
    and, with `suffixes`, end in one of them."""
    return lambda name, value: check_path(
        name, value, allow_none=allow_none, must_exist=must_exist, suffixes=suffixes
    )


def check(namespace: MutableMapping[str, Any], **checkers: Checker) -> None:
    """Check each named parameter in `namespace` (a notebook's `globals()`) and store what it returns.

    One call after the parameters cell: `params.check(globals(), seed=params.check_int, ...)`.
    Checks that tie two parameters together stay in the notebook, after this call.
    """
    for name, checker in checkers.items():
        if name not in namespace:
            raise ParameterError(f"parameter {name} is checked but the notebook does not define it")
        namespace[name] = checker(name, namespace[name])
