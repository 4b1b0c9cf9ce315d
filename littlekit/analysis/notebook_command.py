"""`littlekit notebook`: run a notebook with papermill, its `*_env` parameters checked first.

    littlekit notebook notebooks/02_llm_judge.ipynb out.ipynb -p judge_base_url http://localhost:8000/v1 \\
        -p judge_model Qwen/Qwen2.5-7B-Instruct -p judge_api_key_env OPENAI_API_KEY

Papermill writes the parameters into the output notebook (its injected-parameters cell and its
metadata) before the kernel runs a cell, so a key pasted as `-p judge_api_key_env <key>` ends up
in the output although the notebook's own check (`params.check_env_name`) then refuses it. This
command checks every parameter whose name ends in `_env` with `check_env_name` before papermill
is called: one that is not the name of an environment variable exits 2, OUTPUT is not written,
and its value is shown nowhere.

`-p NAME VALUE` values are read as papermill's `-p` reads them (True, False, None, an int, a
float, else the string); `-r NAME VALUE` keeps the string as it is. The notebook runs in its own
folder unless `--cwd` names another (the chapters read `../data`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from littlekit.analysis.params import ParameterError, check_env_name
from littlekit.argtypes import UsageError

PROG = "littlekit notebook"
ENV_SUFFIX = "_env"


def add_notebook_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `littlekit notebook` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "notebook",
        help="run a notebook with papermill, refusing a key pasted where a variable's name belongs",
        description="Execute NOTEBOOK into OUTPUT with papermill. Every parameter whose name ends in "
        "_env must be the name of an environment variable (checked before papermill writes anything), "
        "so a key pasted as a parameter never reaches OUTPUT.",
    )
    p.add_argument("notebook", type=Path, metavar="NOTEBOOK", help="the notebook to run")
    p.add_argument("output", type=Path, metavar="OUTPUT", help="where the executed notebook is written")
    p.add_argument(
        "-p", "--parameters", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="a parameter, its value read as papermill's -p reads it (True, False, None, numbers)",
    )  # fmt: skip
    p.add_argument(
        "-r", "--parameters-raw", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="a parameter whose value stays a string",
    )  # fmt: skip
    p.add_argument("--cwd", type=Path, help="the folder the notebook runs in (default: the notebook's own)")
    p.add_argument("-k", "--kernel", help="the kernel to run it with (default: the notebook's)")
    p.add_argument("--log-output", action="store_true", help="show the cells' output as they run")
    p.add_argument("--no-progress-bar", action="store_true", help="no papermill progress bar")
    return p


def resolve_value(text: str) -> Any:
    """A `-p` value as papermill's command line reads it: True, False, None, an int, a float, or
    the string itself."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_parameters(
    parameters: list[list[str]] | None = None, raw: list[list[str]] | None = None
) -> dict[str, Any]:
    """{name: value} from `-p` pairs (values resolved like papermill's) and `-r` pairs (strings);
    a later pair of the same name wins, `-r` after `-p` as papermill orders them."""
    out = {name: resolve_value(value) for name, value in parameters or []}
    out.update({name: value for name, value in raw or []})
    return out


def check_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters, after every one whose name ends in `_env` passed `check_env_name`
    (`ParameterError` otherwise, its message without the value)."""
    for name, value in parameters.items():
        if name.endswith(ENV_SUFFIX):
            check_env_name(name, value)
    return dict(parameters)


def run_notebook_command(args: argparse.Namespace) -> int:
    try:
        parameters = check_parameters(parse_parameters(args.parameters, args.parameters_raw))
    except ParameterError as exc:
        raise UsageError(str(exc), PROG) from None
    if not args.notebook.is_file():
        raise UsageError(f"notebook {str(args.notebook)!r} does not exist", PROG)
    if args.output.resolve() == args.notebook.resolve():
        raise UsageError("OUTPUT must not be NOTEBOOK itself", PROG)
    cwd = args.cwd if args.cwd is not None else args.notebook.resolve().parent
    if not cwd.is_dir():
        raise UsageError(f"--cwd {str(cwd)!r} is not a folder", PROG)
    import papermill  # only now: a refused parameter never waits for papermill to load

    if args.log_output:  # papermill logs the cells' output at INFO, as its own command line shows it
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    papermill.execute_notebook(
        str(args.notebook), str(args.output), parameters=parameters, cwd=str(cwd),
        kernel_name=args.kernel, log_output=args.log_output, progress_bar=not args.no_progress_bar,
    )  # fmt: skip
    return 0
