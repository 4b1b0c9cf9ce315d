"""What a `littlekit launch` script may hold, and how it is written safely.

An #SBATCH line is read by sbatch, not by a shell: a value there can be neither quoted nor
escaped, whitespace ends it, and a newline ends the directive, making the rest a shell line (and
Slurm reads no directives after the first command). So the job name, partition, account and log
directory are refused unless plain (`script_problems`); no value of any flag may hold a control
character; every value on a shell line is `shlex.quote`d (`shell_join`). A `--train-arg` that
sets what the script already sets would silently override the plan, so it is refused, naming
the launch flag to use instead (`train_arg_problems`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import unicodedata
from collections.abc import Iterable
from dataclasses import Field, fields
from typing import Any

from littlekit.argtypes import Parser, UsageError
from littlekit.lm.train.config import TrainConfig, add_train_parser, argument, option

# Job, partition and account names as the #SBATCH lines take them: sbatch reads those lines itself,
# with no shell, so a value can be neither quoted nor escaped and whitespace or a newline ends it.
SLURM_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
SLURM_NAMES = re.compile(r"[A-Za-z0-9_.+-]+(?:,[A-Za-z0-9_.+-]+)*")  # --partition takes a list
PATH_REFUSED = "\"'\\`$"  # in the #SBATCH --output path: quotes, escapes and variables stay literal there


def _control(value: str) -> bool:
    """Whether a value holds a control character: a newline, tab, carriage return, escape, DEL."""
    return any(unicodedata.category(ch) == "Cc" for ch in value)


def _strings(value: Any) -> list[str]:
    """The strings in a setting's value (a list's items, a mapping's keys and values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in _strings(key) + _strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def script_problems(c: Any) -> list[str]:
    """What a LaunchConfig `c` holds that its script cannot: a value with a control character
    (any flag's), an #SBATCH value that is not plain. Everything else is shlex-quoted there."""
    problems: list[str] = []
    values = [("--train-arg" if f.name == "train_extra" else f"--{f.name.replace('_', '-')}",
               getattr(c, f.name)) for f in fields(c) if f.name != "train_settings"]  # fmt: skip
    train = {f.name: f for f in fields(TrainConfig)}
    values += [(option(train[n]) if n in train else n, value) for n, value in c.train_settings.items()]
    bad = set()
    for flag, value in values:
        for text in _strings(value):
            if _control(text):
                bad.add(flag)
                problems.append(
                    f"{flag} {text!r} holds a control character (a newline, tab, carriage return or "
                    f"escape); the script takes no such value"
                )
    names = (("--job-name", c.job_name, "job name", SLURM_NAME, ""),
             ("--partition", c.partition, "partition", SLURM_NAMES, ", and commas between partitions"),
             ("--account", c.account, "account", SLURM_NAME, ""))  # fmt: skip
    for flag, value, what, pattern, also in names:
        if value is not None and flag not in bad and not pattern.fullmatch(value):
            problems.append(
                f"{flag} {value!r}: a Slurm {what} here may hold only letters, digits and _ . + -{also} "
                f"(it goes into an #SBATCH line, which sbatch reads without a shell: a space ends the "
                f"value and quotes are not quoting)"
            )
    log_dir = c.log_dir
    if "--log-dir" not in bad and (
        not log_dir
        or log_dir.startswith("~")
        or any(ch.isspace() or ch in PATH_REFUSED for ch in log_dir)
    ):
        problems.append(
            f"--log-dir {log_dir!r}: the log directory goes into the #SBATCH --output line, which sbatch "
            f"reads without a shell, so it must be a plain path: not empty, no whitespace, quotes, "
            f"backslashes, backticks or $ variables, no leading ~"
        )
    return problems


def train_dests(argv: list[str]) -> set[str] | None:
    """The TrainConfig fields these `littlekit train` arguments set (abbreviations and --flag=value
    as the trainer's own parser reads them), or None when that parser refuses them."""
    parser = Parser(prog="littlekit")
    train = add_train_parser(parser.add_subparsers(dest="command"))
    for action in train._actions:  # only what is given lands in the namespace
        action.default, action.required = argparse.SUPPRESS, False
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            given, _unknown = train.parse_known_args(argv)
    except (UsageError, argparse.ArgumentError, SystemExit):
        return None  # check_script reports the trainer's refusal
    return set(vars(given))


def launch_flag(name: str, passed: Iterable[Field]) -> str:
    """The launch flag that sets a trainer setting (`passed`: launch's passed_settings)."""
    if name == "max_steps":
        return "--tokens (the steps are the token budget over the global batch)"
    passed = {f.name: f for f in passed}
    if name in passed:
        flag = argument(passed[name], negatable=True)[0]
        return f"{flag} or --no-{flag[2:]}" if isinstance(passed[name].default, bool) else flag
    return f"--{name.replace('_', '-')}"


def train_arg_problems(extra: list[str], script_sets: set[str], passed: Iterable[Field]) -> list[str]:
    """--train-arg arguments (`extra`) that set a setting the script already sets (`script_sets`:
    the plan's settings, the script's own defaults, the model the plan counts, any other setting
    given by its launch flag): the trainer takes the last, so they would silently override the plan."""
    given = train_dests(list(extra)) if extra else None
    if not given:
        return []
    train, passed = {f.name: f for f in fields(TrainConfig)}, list(passed)
    problems = []
    for name in sorted(given & script_sets):
        spelt = {option(train[name]), f"--{name.replace('_', '-')}"}
        tokens = [t for t in extra
                  if t.startswith("--") and any(o.startswith(t.split("=", 1)[0]) for o in spelt)]  # fmt: skip
        said = " ".join(f"--train-arg={t}" for t in tokens) or "--train-arg"
        problems.append(
            f"{said} sets `littlekit train`'s {option(train[name])}, which the script already sets "
            f"from launch's own flags; use launch's {launch_flag(name, passed)} instead"
        )
    return problems


# torchrun_argv's own references to the job's variables: the only words left to the shell to expand.
EXPANDED = ("$SLURM_JOB_ID", "$MASTER_ADDR:$MASTER_PORT")


def shell_join(argv: list[str], own: int) -> str:
    """Quote for bash: every word shlex-quoted but EXPANDED among the first `own` (the script's own
    words; those are double-quoted, so expanded). A given value is never expanded, even "$SLURM_JOB_ID"."""
    quoted = [f'"{a}"' if i < own and a in EXPANDED else shlex.quote(a) for i, a in enumerate(argv)]
    lines, line = [], []
    for part in quoted:  # one option (and its value) per line
        if part.startswith("--") or part == "-m":
            lines.append(" ".join(line))
            line = []
        line.append(part)
    lines.append(" ".join(line))
    return " \\\n    ".join(lines)


def not_an_option(path: str) -> str:
    """A relative path starting with - as ./-..., so that a command does not read it as an option."""
    return f"./{path}" if path.startswith("-") else path
