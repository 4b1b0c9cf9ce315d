"""One interface for the book's benchmarks of a causal LM, and the command that runs any of them.

A `Benchmark` declares what it measures and three steps, each a plain function of the parsed
settings (an `argparse.Namespace` holding the common options below and the benchmark's own):

- `load(settings)`: its items, from the data root (`--data-root`) or a file the user gives;
- `score(model, tokenizer, items, settings)`: one row per item it scored (prompts or texts are
  the benchmark's own module's: few-shot prompts, student turns, excerpts);
- `table(scored, settings)`: the table by group (easiness bin, math category, split, grade, ...).

Adding a benchmark is one `Benchmark` in its own module and one line in `evals.registry`; its
options become `littlekit eval NAME` flags, and `run_benchmark` checks what was typed, loads the
items, loads the model (`--model`: a save_pretrained folder or a Hub id), scores, prints the
table and writes it (`--out FILE.csv`). A benchmark whose command prints more than one table
(`curriculum`) names its own parser and runner instead (`add_parser`, `run`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.argtypes import UsageError, int_range, positive_int


@dataclass(frozen=True)
class Option:
    """One flag of a benchmark: `add_argument(*flags, **settings)`."""

    flags: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)


def option(*flags: str, **settings: Any) -> Option:
    return Option(tuple(flags), settings)


# every generic benchmark's flags; a benchmark adds its own (`Benchmark.options`)
COMMON: tuple[Option, ...] = (
    option("--model", required=True, help="a save_pretrained directory or a Hub id (offline: cached)"),
    option("--data-root", type=Path, help="a data root like data/ (default: $LITTLEKIT_DATA, else data/)"),
    option("--seed", type=int_range(0, 2**32 - 1), default=0, help="sample and bootstrap seed (default 0)"),
    option("--batch-size", type=positive_int, default=16, help="texts per forward pass (default 16)"),
    option("--device", help="cpu, cuda, ... (default cuda when present)"),
    option("--out", type=Path, metavar="FILE.csv", help="also write the table here (CSV)"),
    option("--force", action="store_true", help="overwrite --out"),
)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark of a causal LM (see the module's docstring)."""

    name: str
    measures: str  # one line: what it measures, `littlekit eval --list`
    paper: str  # where the paper reports it (a figure), or that it is ours
    load: Callable[[argparse.Namespace], Any]
    score: Callable[[Any, Any, Any, argparse.Namespace], pd.DataFrame]
    table: Callable[[pd.DataFrame, argparse.Namespace], pd.DataFrame]
    options: tuple[Option, ...] = ()
    check: Callable[[argparse.Namespace], None] | None = None  # usage checks before anything loads
    add_parser: Callable[[Any], argparse.ArgumentParser] | None = None  # its own parser ...
    run: Callable[[argparse.Namespace], int] | None = None  # ... and runner (default run_benchmark)

    @property
    def prog(self) -> str:
        return f"littlekit eval {self.name}"

    def line(self) -> str:
        """Its line in `littlekit eval --list`."""
        return f"{self.name:<11} {self.measures} ({self.paper})"

    def evaluate(self, model: Any, tokenizer: Any, settings: argparse.Namespace):
        """(one row per scored item, the table by group) of a loaded model."""
        scored = self.score(model, tokenizer, self.load(settings), settings)
        return scored, self.table(scored, settings)

    def add_to(self, subparsers) -> argparse.ArgumentParser:
        """Its `littlekit eval NAME` parser, with the common flags and its own."""
        if self.add_parser is not None:
            parser = self.add_parser(subparsers)
        else:
            parser = subparsers.add_parser(self.name, help=self.measures, description=self.measures)
            for flag in (*COMMON, *self.options):
                parser.add_argument(*flag.flags, **flag.settings)
        parser.set_defaults(eval_run=self.run or (lambda args: run_benchmark(self, args)))
        return parser

    def settings(self, **given: Any) -> argparse.Namespace:
        """Its settings with every flag's default, `given` (keyword names: `per_bin=10`) on top."""
        from littlekit.argtypes import Parser

        parser = Parser(prog=self.prog)
        self.add_to(parser.add_subparsers(dest="evaluation"))
        model = str(given.pop("model", "unset"))
        args = parser.parse_args([self.name, "--model", model])
        unknown = sorted(set(given) - set(vars(args)))
        if unknown:
            raise TypeError(f"{self.name} has no setting(s) {unknown}")
        return argparse.Namespace(**{**vars(args), **given})


# --- the command -----------------------------------------------------------------------------


def run_benchmark(benchmark: Benchmark, args: argparse.Namespace) -> int:
    """Check what was typed, load the items, load the model, score; print the table, write it."""
    prog = benchmark.prog
    check_out(args.out, args.model, args.force, prog)
    check_model(args.model, prog)
    if benchmark.check is not None:
        benchmark.check(args)
    items = benchmark.load(args)
    model, tokenizer = load_model(args.model, args.device)
    started = time.perf_counter()
    scored = benchmark.score(model, tokenizer, items, args)
    table = benchmark.table(scored, args)
    seconds = time.perf_counter() - started
    print(f"model {args.model}: {benchmark.name}, {benchmark.measures}; {len(scored):,} item(s) scored "
          f"in {seconds:.1f}s")  # fmt: skip
    print()
    print(table_text(table))
    if args.out is not None:
        from littlekit.swap import file_beside

        with file_beside(args.out) as partial:
            table.to_csv(partial, index=False)
        print(f"wrote the table ({len(table)} rows) to {args.out}")
    return 0


def table_text(table: pd.DataFrame) -> str:
    """A table as aligned text, numbers with three decimals."""
    return table.to_string(index=False, float_format=lambda value: f"{value:.3f}")


def check_out(out: Path | None, model: str, force: bool, prog: str) -> None:
    """--out is a file name that can be written, not there unless --force, never a --model file."""
    from littlekit.swap import same_file, unwritable

    if out is None:
        return
    folder = Path(model).expanduser()
    if folder.is_dir():
        for path in (p for p in folder.rglob("*") if p.is_file()):
            if same_file(out, path):
                raise UsageError(f"--out {out} is the --model file {path} (the same file): the results "
                                 f"would overwrite it; give another --out", prog)  # fmt: skip
    if out.is_dir():
        raise UsageError(f"--out: {out} is a folder; give a file name", prog)
    if (out.exists() or out.is_symlink()) and not force:
        raise UsageError(f"--out: {out} exists; pass --force to overwrite it", prog)
    if problem := unwritable(out):
        raise UsageError(f"--out {out}: {problem}", prog)


def check_model(where: str, prog: str) -> None:
    """A save_pretrained directory, or a Hub id (offline: one in the local cache); else UsageError."""
    from littlekit.lm.tokenizer import _hub_id, _offline

    path = Path(where).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UsageError(f"--model: {path} holds no config.json; pass a save_pretrained directory "
                             f"(a checkpoint's best/ or last/) or a Hub id", prog)  # fmt: skip
        return
    if path.exists():
        raise UsageError(f"--model: {where} is a file; give a save_pretrained directory or a Hub id", prog)
    if not _hub_id(where):
        raise UsageError(f"--model: {where} does not exist; check the path", prog)
    if _offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(where, "config.json"), str):
            raise UsageError(f"--model: {where} is not a local directory, nor a Hub model in the local "
                             f"cache (offline mode: HF_HUB_OFFLINE is set)", prog)  # fmt: skip


def load_model(where: str, device: str | None):
    """(model, tokenizer), or RuntimeError in one line naming the model."""
    from transformers.utils import logging as hf_logging

    from littlekit.evals.models import load_causal_lm

    hf_logging.disable_progress_bar()  # the weights' loading bar; the command prints its own lines
    try:
        return load_causal_lm(where, device)
    except Exception as exc:
        raise RuntimeError(f"could not load the model {where}: {type(exc).__name__}: {exc}") from None


def file_option(value: Path | None, flag: str, prog: str) -> None:
    """A file the user gave must be a file."""
    if value is not None and not Path(value).is_file():
        raise UsageError(f"{flag}: {value} is not a file", prog)


def count_or_all(text: str) -> int | None:
    """A positive count, or `all` (None)."""
    if text.strip().lower() == "all":
        return None
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'all', got {text!r}") from None
