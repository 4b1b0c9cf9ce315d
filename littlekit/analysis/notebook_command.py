"""`littlekit notebook`: run a notebook with papermill, its `*_env` parameters checked first.

    littlekit notebook notebooks/02_llm_judge.ipynb out.ipynb -p judge_base_url http://localhost:8000/v1 \\
        -p judge_model Qwen/Qwen2.5-7B-Instruct -p judge_api_key_env OPENAI_API_KEY

Papermill writes the parameters into the output notebook (its injected-parameters cell and its
metadata) before the kernel runs a cell, so a key pasted as `-p judge_api_key_env <key>` ends up
in the output although the notebook's own check (`params.check_env_name`) then refuses it. This
command checks every parameter whose name ends in `_env` with `check_env_name` before papermill
is called: one that is not the name of an environment variable exits 2, OUTPUT is not written,
and its value is shown nowhere.

Before papermill is called (so OUTPUT is not written when one fails, exit 2):
- a NAME is stripped of surrounding whitespace and must then be a Python identifier (so
  `-p "judge_api_key_env " <key>` is checked as `judge_api_key_env`, not let through);
- a value that is a URL with a user name or password in it (`https://user:key@host/v1`) is
  refused, the URL shown with `***` for them: the notebooks print their URLs, and a key
  belongs in an environment variable named by a `*_env` parameter;
- OUTPUT must not be NOTEBOOK, by path, through a symlink or as a hard link of it;
- the kernel (`--kernel`, else the notebook's) must be installed.

`-p NAME VALUE` values are read as papermill's `-p` reads them (True, False, None, an int, a
float, else the string); `-r NAME VALUE` keeps the string as it is. The notebook runs in its own
folder unless `--cwd` names another (the chapters read `../data`). A cell that fails is reported
in one line (a notebook's own `ParameterError` exits 2, any other error 1); the executed
notebook, traceback included, is at OUTPUT. Papermill's "Passed unknown parameter" warning is kept
only for names the notebook's parameters cell does not assign (papermill cannot read the
annotated assignments the chapters use).
"""

from __future__ import annotations

import argparse
import ast
import keyword
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from littlekit.analysis.params import ParameterError, check_env_name
from littlekit.argtypes import UsageError
from littlekit.judge.redact import redact_url

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
    a later pair of the same name wins, `-r` after `-p` as papermill orders them. Names are
    stripped of surrounding whitespace (`parameter_name`)."""
    out = {parameter_name(name): resolve_value(value) for name, value in parameters or []}
    out.update({parameter_name(name): value for name, value in raw or []})
    return out


def parameter_name(name: str) -> str:
    """`name` without surrounding whitespace; ParameterError unless it is then a Python identifier
    (a name papermill could assign), such as "judge_api_key_env"."""
    stripped = name.strip()
    if stripped.isidentifier() and not keyword.iskeyword(stripped):
        return stripped
    if not stripped:
        problem = "parameter name is empty"
    elif keyword.iskeyword(stripped):
        problem = f"parameter name {stripped!r} is a Python keyword"
    elif ("a" + stripped).isidentifier():
        problem = f"parameter name {stripped[:1] + '...'!r} starts with a digit"
    else:  # what comes after the first bad character is not shown: it may be a key typed as NAME=KEY
        at = next(i for i in range(len(stripped)) if not ("a" + stripped[: i + 1]).isidentifier())
        problem = f"parameter name {stripped[:at] + '...'!r} has {stripped[at]!r} at character {at + 1}"
    raise ParameterError(
        f"{problem}: a name is a Python identifier (letters, digits and underscores, not starting "
        "with a digit), so the notebook cannot have a parameter of that name"
    )


def check_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters, after every one whose name ends in `_env` passed `check_env_name`
    (`ParameterError` otherwise, its message without the value)."""
    for name, value in parameters.items():
        if name.endswith(ENV_SUFFIX):
            check_env_name(name, value)
        if isinstance(value, str) and redact_url(value) != value:
            raise ParameterError(
                f"parameter {name} holds a URL with a user name or password in it ({redact_url(value)}): "
                "give the URL without them and the key in an environment variable (named by a *_env "
                "parameter such as judge_api_key_env)"
            )
    return dict(parameters)


def declared_parameters(notebook: Path) -> set[str] | None:
    """The names the notebook's `parameters` cell assigns (annotated or not), or None when it has
    no such cell or the cell is not plain Python."""
    import nbformat

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:
        return None
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                return None
            names = set()
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
            return names
    return None


class _DeclaredFilter(logging.Filter):
    """Drops papermill's "Passed unknown parameter: NAME" for a NAME the notebook declares."""

    def __init__(self, declared: set[str]):
        super().__init__()
        self.declared = declared

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        prefix = "Passed unknown parameter: "
        return not (message.startswith(prefix) and message[len(prefix):].strip() in self.declared)


def _kernel_name(notebook: Path, kernel: str | None) -> str | None:
    if kernel is not None:
        return kernel
    import nbformat

    try:
        return nbformat.read(notebook, as_version=4).metadata.get("kernelspec", {}).get("name")
    except Exception:
        return None  # papermill reports an unreadable notebook itself


def _check_kernel(name: str | None) -> None:
    """UsageError when kernel `name` is not installed (papermill would write OUTPUT first)."""
    if name is None:
        return
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    try:
        manager.get_kernel_spec(name)
    except NoSuchKernel:
        known = ", ".join(sorted(manager.find_kernel_specs())) or "none"
        raise UsageError(f"no kernel named {name!r} is installed (installed: {known}); pass --kernel NAME",
                         PROG) from None  # fmt: skip


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # a hard link: another path, the same inode on the same device
    except OSError:
        return False  # OUTPUT does not exist yet


def run_notebook_command(args: argparse.Namespace) -> int:
    try:
        parameters = check_parameters(parse_parameters(args.parameters, args.parameters_raw))
    except ParameterError as exc:
        raise UsageError(str(exc), PROG) from None
    if not args.notebook.is_file():
        raise UsageError(f"notebook {str(args.notebook)!r} does not exist", PROG)
    if _same_file(args.output, args.notebook):
        raise UsageError("OUTPUT must not be NOTEBOOK itself (nor a link to it)", PROG)
    cwd = args.cwd if args.cwd is not None else args.notebook.resolve().parent
    if not cwd.is_dir():
        raise UsageError(f"--cwd {str(cwd)!r} is not a folder", PROG)
    _check_kernel(_kernel_name(args.notebook, args.kernel))
    import papermill  # only now: a refused parameter never waits for papermill to load
    from papermill.exceptions import PapermillExecutionError

    if args.log_output:  # papermill logs the cells' output at INFO, as its own command line shows it
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    declared = declared_parameters(args.notebook)
    quiet = _DeclaredFilter(declared) if declared is not None else None
    papermill_log = logging.getLogger("papermill")
    if quiet is not None:
        papermill_log.addFilter(quiet)
    try:
        papermill.execute_notebook(
            str(args.notebook), str(args.output), parameters=parameters, cwd=str(cwd),
            kernel_name=args.kernel, log_output=args.log_output, progress_bar=not args.no_progress_bar,
        )  # fmt: skip
    except PapermillExecutionError as exc:
        cell = f"cell {exc.exec_count}" if exc.exec_count is not None else f"cell {exc.cell_index}"
        what = redact_url(f"{exc.ename}: {exc.evalue}")
        if exc.ename == "ParameterError":
            raise UsageError(f"{what} (the notebook's parameter check, {cell})", PROG) from None
        print(f"{PROG}: error: {cell} of the notebook raised {' '.join(what.split())} (the executed "
              f"notebook, with the traceback, is {str(args.output)!r})", file=sys.stderr)  # fmt: skip
        return 1
    finally:
        if quiet is not None:
            papermill_log.removeFilter(quiet)
    return 0
