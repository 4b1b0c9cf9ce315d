"""`littlekit`: the command line, a thin dispatcher over the subcommands' own modules.

    littlekit filter --in docs.jsonl --out kept.jsonl [--stages aoa,symbolic] [--rejected r.jsonl]
    littlekit filter --in docs.jsonl --out run/ --stages all --artifacts DIR
    littlekit filter --hf-dataset HuggingFaceFW/fineweb-edu --hf-config sample-10BT --out kept/
    littlekit filter --in shards/ --out kept/ --executor local --tasks 8 --workers 4 --logging-dir logs/
    littlekit fit all --data data --out runs/default/artifacts
    littlekit data build --from ../shared/data --out data
    littlekit launch --size 5B --tokens 80B --nodes 1 --gpu B200 --dry-run
    littlekit train --data shards/k5 --val-data shards/val --tokenizer tok/ --size nano --max-steps 2000
    littlekit notebook notebooks/02_llm_judge.ipynb out.ipynb -p judge_api_key_env OPENAI_API_KEY

Every subcommand lives in its own module and is imported only when named (see COMMANDS), so a
slow or broken module never gets in the way of another command.
Errors in what the user typed end as one line on stderr and exit code 2; failures while running
end as one line and exit code 1 (LITTLEKIT_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from littlekit import __version__
from littlekit.argtypes import Parser, UsageError

# command -> (module, function adding its parser to the subparsers, function running it, help);
# a function named "other.module:name" is taken from that module instead
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "filter": (
        "littlekit.filter.command",
        "add_filter_parser",
        "run_filter",
        "run the filter's stages over documents (JSONL, Parquet, a Hub dataset; in process or datatrove)",
    ),
    "fit": (
        "littlekit.fit.command",
        "add_fit_parser",
        "run_fit_command",
        "write the filter's artifacts folder from a data root (littlekit fit all --data DIR --out DIR)",
    ),
    "data": (
        "littlekit.databuild",
        "add_data_parser",
        "run_data_command",
        "build the embedded data/ folder from the real files (littlekit data build --from SRC --out DIR)",
    ),
    "launch": (
        "littlekit.lm.launch_command",
        "add_launch_parser",
        "run_launch_command",
        "write a Slurm + torchrun script for training on N x 8 GPUs, with its cost estimate",
    ),
    "train": (
        "littlekit.lm.train.command",
        "littlekit.lm.train.config:add_train_parser",
        "run_train_command",
        "train a Qwen3 model on token shards (Muon + AdamW, WSD schedule, DDP/FSDP under torchrun)",
    ),
    "curriculum": (
        "littlekit.curriculum.command",
        "add_curriculum_parser",
        "run_curriculum_command",
        "write SymPy-verified K-8 math problems tied to CCSS standards (JSONL), or --list the units",
    ),
    "eval": (
        "littlekit.evals.registry",
        "add_eval_parser",
        "run_eval_command",
        "evaluate a causal LM on a benchmark: littlekit eval --list; littlekit eval NAME --model PATH",
    ),
    "course": (
        "littlekit.course.command",
        "add_course_parser",
        "run_course_command",
        "build the course's student and instructor editions (nbgrader), or grade submitted notebooks",
    ),
    "notebook": (
        "littlekit.analysis.notebook_command",
        "add_notebook_parser",
        "run_notebook_command",
        "run a notebook with papermill (-p NAME VALUE), refusing a key pasted as a *_env parameter",
    ),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `littlekit` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(argv).parse_args(argv)
        return int(args.handler(args) or 0)
    except UsageError as exc:
        _fail(exc, exc.prog)
        return 2
    except SystemExit as exc:  # --help, --version, or a subcommand that exits
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        _fail(exc.code)
        return 1
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError as exc:
        if _stdout_gone():  # the reader left (`littlekit curriculum --list | head`): stop quietly, as ls does
            return 141
        return _unexpected(exc)
    except Exception as exc:
        return _unexpected(exc)


def _unexpected(exc: Exception) -> int:
    if os.environ.get("LITTLEKIT_DEBUG"):
        raise exc
    _fail(f"{type(exc).__name__}: {exc} (LITTLEKIT_DEBUG=1 shows the traceback)")
    return 1


def _stdout_gone() -> bool:
    """Whether standard output's reader has closed it; if so it now writes to /dev/null, so the
    interpreter's last flush does not print a second error."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        gone = any(event & select.POLLERR for _, event in poller.poll(0))  # a pipe with no reader
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (a test's capture)
        return False
    if gone:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return gone


def _fail(message: Any, prog: str = "littlekit") -> None:
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The full parser. A lazy command's module is imported only when argv names that command."""
    parser = Parser(
        prog="littlekit", description="Filter, train and evaluate K-5-controlled language models."
    )
    parser.add_argument("--version", action="version", version=f"littlekit {__version__}")
    parser.set_defaults(handler=lambda args: _no_command(parser))
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = argv[0] if argv else None
    for command, (module, add_name, run_name, help_text) in COMMANDS.items():
        if command == named:
            _add_lazy(subparsers, command, module, add_name, run_name)
        else:  # listed in --help without importing anything
            subparsers.add_parser(command, help=help_text, add_help=False)
    return parser


def _no_command(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _add_lazy(subparsers, command: str, module: str, add_name: str, run_name: str) -> None:
    try:
        _function(module, add_name)(subparsers)
        run = _function(module, run_name)
    except Exception as exc:
        problem = f"`littlekit {command}` is unavailable: {type(exc).__name__}: {exc}"
        stub = subparsers.add_parser(command, add_help=False)
        stub.add_argument("rest", nargs=argparse.REMAINDER)
        stub.set_defaults(handler=lambda args: _raise(RuntimeError(problem)))
        return
    subparsers.choices[command].set_defaults(handler=run)


def _function(module: str, name: str) -> Any:
    other, _, name = name.rpartition(":")
    return getattr(importlib.import_module(other or module), name)


def _raise(exc: Exception):
    raise exc




if __name__ == "__main__":
    sys.exit(main())
