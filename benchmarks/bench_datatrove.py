"""The speed-up of 2 local datatrove workers over 1, on the same sharded input and cascade.

    python benchmarks/bench_datatrove.py [--in docs.jsonl] [--copies 4] [--tasks 4]
        [--stages aoa,fasttext,symbolic,frequency] [--fasttext-model X.bin] [--word-table T.parquet]

The input (the demo corpus, --copies times over with unique ids) is sharded once into --tasks
files; datatrove's LocalPipelineExecutor then runs reader -> stages -> writer over those shards
with 1 worker and again with 2 (littlekit.analysis.throughput.datatrove_speedup), and the wall times and
their ratio are printed with the machine's CPU count and load average before and after. Each
worker builds its own stages (imports, AoA table, fastText model), so raise --copies until that
start-up is small beside the work. The speed-up can only reach 2 when two cores are free: on a
machine shared with other work the load average says how far that holds.

Trained files: the command line's, else runs/default/artifacts/ (left by `make book`), else small
ones built now in a temporary folder through the same littlekit calls; the output says which.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from littlekit import config
from littlekit.analysis.throughput import BenchArtifacts, datatrove_speedup, facts_line, machine_facts
from littlekit.filter.registry import stage_names

NEEDS = {"fasttext": "fasttext_model", "frequency": "word_table", "encoder": "encoder_model"}


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """Send file descriptor 2 to `path` (datatrove's task loggers write INFO lines to stderr in the
    workers too, which inherit the descriptor); on an error, show the log's end."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            print("".join(path.read_text().splitlines(keepends=True)[-40:]), file=sys.stderr)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--in", dest="inp", help="jsonl with a 'text' field (default: embedded demo corpus)")
    parser.add_argument("--copies", type=int, default=4, help="copies of the input (start-up vs work)")
    parser.add_argument("--tasks", type=int, default=4, help="shards = datatrove tasks (>= 2)")
    parser.add_argument("--stages", default="aoa,fasttext,symbolic,frequency", help="the cascade to run")
    parser.add_argument("--fasttext-model")
    parser.add_argument("--word-table")
    args = parser.parse_args(argv)

    source = Path(args.inp) if args.inp else config.data_path("demo_corpus/demo_web.jsonl")
    names = stage_names(args.stages)
    print(f"input: {source} x {args.copies}")
    print(facts_line(machine_facts(torch_threads=False)))
    with tempfile.TemporaryDirectory(prefix="bench-datatrove-") as workdir:
        artifacts = BenchArtifacts(Path(workdir) / "artifacts")
        options = {}
        for name in names:
            option = NEEDS.get(name)
            if option is None:
                continue
            given = getattr(args, option, None)
            options[option], how = (given, f"{given} (command line)") if given else artifacts.get(option)
            options[option] = str(options[option])
            print(f"{option}: {how}")
        with stderr_to(Path(workdir) / "datatrove.log"):
            result = datatrove_speedup(source, ",".join(names), options=options, copies=args.copies,
                                       tasks=args.tasks, workdir=Path(workdir) / "runs")
        print("\n".join(result.lines()))
    print("wall time includes each run's start-up: the executor, and in every worker the imports and stages")


if __name__ == "__main__":  # the local executor's workers re-import this file
    main()
