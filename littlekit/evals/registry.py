"""Every benchmark the book uses, and `littlekit eval`, which runs any of them on a model folder.

    littlekit eval --list
    littlekit eval clear --model runs/default/training/littlelearner/best --per-bin 100
    littlekit eval comta --model DIR --comta CoMTA_dataset.json
    littlekit eval jeopardy --model DIR [--clues FILE --labels FILE] [--per-split N]
    littlekit eval mathcamps --model DIR --per-standard 4 --samples 16
    littlekit eval curriculum --model DIR --band all --format reversed
    littlekit eval --lm-eval-tasks      (the folder to give lm_eval --include_path)

A benchmark is a `littlekit.evals.benchmark.Benchmark` declared in its own module; adding one is
one line in `BENCHMARKS`. Each prints its table by group (and writes it with `--out FILE.csv`);
`curriculum` keeps its own command (`littlekit.evals.command`). The same benchmarks run in
lm-evaluation-harness from the task configs in `littlekit.evals.lm_eval_tasks`.
"""

from __future__ import annotations

import argparse
import sys

from littlekit.argtypes import UsageError
from littlekit.evals import clear, command, comta, mathcamps
from littlekit.evals.benchmark import Benchmark
from littlekit.evals.jeopardy import evaluation as jeopardy
from littlekit.evals.lm_eval_tasks import TASKS_DIR

BENCHMARKS: tuple[Benchmark, ...] = (
    command.BENCHMARK,  # curriculum
    clear.BENCHMARK,
    comta.BENCHMARK,
    jeopardy.BENCHMARK,
    mathcamps.BENCHMARK,
)
PROG = "littlekit eval"


def names() -> list[str]:
    return [benchmark.name for benchmark in BENCHMARKS]


def get(name: str) -> Benchmark:
    """The benchmark called `name`; UsageError naming the known ones otherwise."""
    for benchmark in BENCHMARKS:
        if benchmark.name == name:
            return benchmark
    raise UsageError(f"unknown benchmark {name!r}; known: {', '.join(names())} "
                     f"(littlekit eval --list says what each measures)", PROG)  # fmt: skip


def list_text() -> str:
    """One line per benchmark: its name, what it measures, where the paper reports it."""
    return "\n".join(benchmark.line() for benchmark in BENCHMARKS)


def add_eval_parser(subparsers) -> argparse.ArgumentParser:
    """Register `littlekit eval`, --list and one sub-command per benchmark on the CLI's subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate a causal LM on a benchmark (littlekit eval --list; littlekit eval NAME --model PATH)",
        description="Evaluations of any causal LM by path or Hub id, one sub-command per benchmark.",
    )
    p.add_argument("--list", action="store_true", help="print every benchmark, one line each")
    p.add_argument(
        "--lm-eval-tasks",
        action="store_true",
        help="print the folder of littlekit's lm-evaluation-harness tasks (lm_eval --include_path)",
    )
    p.set_defaults(eval_run=None, eval_parser=p)
    evals = p.add_subparsers(dest="evaluation", metavar="BENCHMARK")
    for benchmark in BENCHMARKS:
        benchmark.add_to(evals)
    return p


def run_eval_command(args: argparse.Namespace) -> int:
    """Print the list or the lm-eval tasks' folder, run the named benchmark, or print the help (exit 2)."""
    if args.list:
        print(list_text())
        return 0
    if args.lm_eval_tasks:
        print(TASKS_DIR)
        return 0
    if args.eval_run is None:
        args.eval_parser.print_help(sys.stderr)
        return 2
    return args.eval_run(args)
