"""Checks for notebook parameters, so a bad `papermill -p` value fails at once with a clear message.

Each check returns the value (normalised where noted) or raises `ParameterError` naming the
parameter, what it must be and what it got (never the value of a parameter that may hold a secret).

A notebook declares each parameter once, in its `parameters` cell, as an annotated assignment
whose annotation is the parameter's checker (one of these functions, or `optional`, `number`,
`choice`, `boolean`, `path`, `text`, `passes`, ...):

    from littlekit.analysis import params

    seed: params.check_int = 0  # seeds every sample
    sample_size: params.optional(params.check_positive_int) = None  # None: all of them

and calls `check(globals())` once, in the next code cell. Papermill injects `-p` values in a
cell of its own between the two, as plain assignments; the annotations stay those of the
`parameters` cell, so `check` applies each parameter's checker to the injected value.

The annotated names are the notebook's declared parameters. Anything else an earlier cell set is a
parameter the notebook does not have, such as a misspelt `-p sampel_size 5`: `check` refuses it,
naming the closest declared name, instead of letting the notebook run on its defaults. IPython's
own names (`In`, `Out`, `_`, `_i1`, `_1`, `exit`, `get_ipython`, `open`, ...), dunders and imports
(modules, functions, classes) are never taken for parameters.
"""

from __future__ import annotations

import ast
import difflib
import math
import os
import re
import sys
from collections.abc import Callable, Collection, Mapping, MutableMapping
from pathlib import Path
from typing import Any

_RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENV_NAME_MAX = 64
_ENV_NAME_RE = re.compile(rf"[A-Z_][A-Z0-9_]{{0,{ENV_NAME_MAX - 1}}}")


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


def check_units(name: str, value: Any) -> str | list[str]:
    """Curriculum units for `curriculum.units.select_units` holding both bands (K5 and BEYOND, so
    every per-band table and verdict has rows): "all", or unit ids as a comma-separated string or
    a list; an unknown id fails naming the known ones."""
    from littlekit.curriculum.units import select_units

    expected = "'all' or curriculum unit ids of both bands (a list or a comma-separated string)"
    if not isinstance(value, (str, list, tuple)) or not value:
        raise _fail(name, expected, value)
    if not all(isinstance(item, str) for item in value):
        raise _fail(name, expected, value)
    try:
        bands = {unit.band for unit in select_units(value)}
    except KeyError as error:
        raise ParameterError(f"parameter {name}: {error.args[0]}") from None
    if bands != {"K5", "BEYOND"}:
        raise _fail(name, expected, value)
    return value if isinstance(value, str) else list(value)


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

    Only conventional names pass: upper-case letters, digits and underscores, not starting with a
    digit, at most 64 characters. A key is refused even when it looks like a name (an `hf_...`
    token is a valid identifier but not upper-case), and so is any value equal to the value of a
    variable set in the environment (that is a key, or some other value, pasted for its name).
    The message never repeats what it got: a key pasted in by mistake stays out of the output.
    """
    if not isinstance(value, str) or not _ENV_NAME_RE.fullmatch(value):
        raise ParameterError(
            f"parameter {name} must be the name of an environment variable (not the key itself): "
            f"upper-case letters, digits and underscores, starting with a letter or '_', at most "
            f"{ENV_NAME_MAX} characters"
        )
    if any(value == setting for setting in os.environ.values()):
        raise ParameterError(
            f"parameter {name} must be the name of an environment variable (not the key itself): what "
            "it got is the value of a variable set in the environment, not a name"
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


def check_label_set(name: str, value: Any) -> str:
    """Training labels for `littlekit.fit.labels.build_labels`: a comma-separated list of the named
    label sets (`judge`, `source`) and judge-format files, each file existing; returned as given."""
    from littlekit.fit.labels import LABEL_SETS

    expected = f"{' or '.join(map(repr, LABEL_SETS))} or a comma-separated list of those and label files"
    if not isinstance(value, str):
        raise _fail(name, expected, value)
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts:
        raise _fail(name, expected, value)
    for part in parts:
        if part not in LABEL_SETS and not Path(part).expanduser().is_file():
            raise ParameterError(
                f"parameter {name}: {part!r} is neither a label set ({', '.join(LABEL_SETS)}) "
                "nor an existing file"
            )
    return value


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


def text(expected: str = "a non-empty string") -> Checker:
    """A non-empty string; the message says the parameter must be `expected`."""

    def checker(name: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _fail(name, expected, value)
        return value

    return checker


def subset_of(*choices: Any) -> Checker:
    """A non-empty list of distinct values, each one of `choices`."""
    expected = f"a non-empty list of distinct values from {', '.join(map(repr, choices))}"

    def checker(name: str, value: Any) -> list:
        if not isinstance(value, (list, tuple)) or not value or len(set(value)) != len(value):
            raise _fail(name, expected, value)
        if any(item not in choices for item in value):
            raise _fail(name, expected, value)
        return list(value)

    return checker


def numbers(low: float = -math.inf, high: float = math.inf) -> Checker:
    """A non-empty list of numbers, each in [low, high] (a sweep: `thresholds = [10, 12, 14]`)."""
    expected = f"a non-empty list of numbers in [{low:g}, {high:g}]"

    def checker(name: str, value: Any) -> list[float]:
        if not isinstance(value, (list, tuple)) or not value:
            raise _fail(name, expected, value)
        try:
            return [check_number(name, item, low, high) for item in value]
        except ParameterError:
            raise _fail(name, expected, value) from None

    return checker


def passes(function: Callable[[Any], Any], expected: str) -> Checker:
    """A value `function` accepts (it raises ValueError or TypeError otherwise); the value itself is
    kept, not what `function` returns. E.g. `passes(launch.parse_count, "a count like 80B")`."""

    def checker(name: str, value: Any) -> Any:
        try:
            function(value)
        except (ValueError, TypeError):
            raise _fail(name, expected, value) from None
        return value

    return checker


def path(
    allow_none: bool = True, must_exist: bool = True, suffixes: Collection[str] | None = None
) -> Checker:
    """A path (None allowed unless `allow_none` is False) that must exist unless `must_exist` is False
    and, with `suffixes`, end in one of them."""
    return lambda name, value: check_path(
        name, value, allow_none=allow_none, must_exist=must_exist, suffixes=suffixes
    )


def check(namespace: MutableMapping[str, Any], **checkers: Checker) -> None:
    """Check each parameter in `namespace` (a notebook's `globals()`) and store what its checker returns.

    One call after the parameters cell: `params.check(globals())`. The parameters and their
    checkers are the cell's annotated assignments (`seed: params.check_int = 0`, which Python
    keeps in the namespace's `__annotations__`); `checkers` names parameters of a namespace that
    has no such cell (`check(namespace, seed=check_int)`). A parameter the notebook does not
    declare (one set by an earlier cell but not declared, such as papermill's `-p sampel_size 5`)
    is refused before any value is checked, with the closest declared names (see
    `unknown_parameters`). Checks that tie two parameters together stay in the notebook, after
    this call.
    """
    annotated = declared_parameters(namespace)
    both = sorted(set(annotated) & set(checkers))
    if both:
        raise TypeError(f"parameters {', '.join(both)} have a checker in the parameters cell and in check()")
    checkers = {**annotated, **checkers}
    for name in checkers:
        if name not in namespace:
            raise ParameterError(f"parameter {name} is checked but the notebook does not define it")
    unknown = unknown_parameters(namespace, checkers)
    if unknown:
        raise ParameterError(_unknown_message(unknown, checkers))
    for name, checker in checkers.items():
        namespace[name] = checker(name, namespace[name])


def declared_parameters(namespace: Mapping[str, Any]) -> dict[str, Checker]:
    """{name: checker} of the parameters cell's annotated assignments (`name: checker = default`).

    In an IPython kernel only names assigned by cells run before the first run of the current
    cell count, so re-running the check cell after a later cell annotated a variable of its own
    does not take that variable for a parameter.
    """
    annotations = namespace.get("__annotations__") or {}
    earlier = _names_assigned_before_this_cell(_shell_of(namespace))
    declared = {}
    for name, checker in annotations.items():
        if earlier is not None and name not in earlier:
            continue
        if not callable(checker):
            raise TypeError(f"parameter {name}: its annotation {checker!r} is not a checker (name, value)")
        declared[name] = checker
    return declared


# --- parameters the notebook does not declare -----------------------------------------------------

# Names IPython / ipykernel put into the user namespace (beside dunders and `_i<N>`, `_<N>`, ...).
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open", "display"})
_IPYTHON_NAME_RE = re.compile(r"^(?:_{1,3}|_i{1,3}|_i\d+|_\d+|_oh|_dh|_ih|_sh|_exit_code)$")
# What a papermill parameter can be (papermill writes literals); anything else is an import.
PARAMETER_TYPES = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def unknown_parameters(namespace: Mapping[str, Any], declared: Collection[str]) -> list[str]:
    """The names in `namespace` that look like parameters but are not in `declared`.

    A name counts when its value is a literal papermill could have injected (None, a bool, a
    number, a string, a list, a dict, ...) and it is not IPython's (`In`, `Out`, `_`, `_i1`, `_1`,
    `exit`, `get_ipython`, `open`, the shell's hidden names) nor a dunder. In an IPython kernel,
    only names assigned by cells run before the first run of the current cell count, so
    re-running the check cell after later cells (interactively) does not take their variables
    for parameters.
    """
    shell = _shell_of(namespace)
    hidden = set(getattr(shell, "user_ns_hidden", ()) or ()) if shell is not None else set()
    earlier = _names_assigned_before_this_cell(shell)
    unknown = []
    for name, value in namespace.items():
        if name in declared or _is_internal(name) or name in hidden or not isinstance(value, PARAMETER_TYPES):
            continue
        if earlier is not None and name not in earlier:
            continue
        unknown.append(name)
    return unknown


def _is_internal(name: str) -> bool:
    return (
        name in IPYTHON_NAMES
        or bool(_IPYTHON_NAME_RE.match(name))
        or (name.startswith("__") and name.endswith("__"))
    )


def _shell_of(namespace: Mapping[str, Any]):
    """The running IPython shell whose user namespace `namespace` is, else None."""
    if "IPython" not in sys.modules:
        return None
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython half-imported
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "user_ns", None) is namespace else None


def _names_assigned_before_this_cell(shell) -> set[str] | None:
    """Names bound by the cells run before the first run of the current one; None when unknown.

    IPython's input history (`In`) holds every cell run so far, the current one last. Unknown
    (None: every name counts) when there is no history or the current cell is not in it.
    """
    if shell is None:
        return None
    history = shell.user_ns.get("_ih")
    if not isinstance(history, list) or len(history) < 2:
        return None
    current = history[-1]
    if "check(" not in current:  # not recorded (run without history): the last entry is another cell
        return None
    names: set[str] = set()
    for source in history[1 : history.index(current)]:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _unknown_message(unknown: list[str], declared: Collection[str]) -> str:
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(declared), n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        parts.append(f"{name}{hint}")
    noun = "parameter" if len(unknown) == 1 else "parameters"
    return (
        f"unknown {noun} {', '.join(parts)}: this notebook does not declare "
        f"{'it' if len(unknown) == 1 else 'them'}; its parameters are {', '.join(sorted(declared))}"
    )
