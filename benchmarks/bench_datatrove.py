"""The speed-up of 2 local datatrove workers over 1, on the same sharded input and cascade.

    python benchmarks/bench_datatrove.py [--in docs.jsonl] [--copies 4] [--tasks 4] [--min-seconds 60]
        [--stages aoa,fasttext,symbolic,frequency] [--fasttext-model X.bin] [--word-table T.parquet]

The input (the demo corpus, --copies times over with unique ids) is sharded once into --tasks
files; datatrove's LocalPipelineExecutor then runs reader -> stages -> writer over those shards
(`littlekit.filter.datatrove.filter_with_datatrove`, what `littlekit filter --executor
local` runs) with 1 worker and again with 2, and the wall times, their ratio and the load average
before and after each run are printed. Each run starts cold: the 1-worker run builds its stages
in this process (its cache is cleared first), each of the 2 workers builds its own, once, however
many tasks it runs (the count is printed).

Long-workload mode, `--min-seconds S`: each worker's start-up (imports, AoA table, models, memo
filling: a few seconds) is paid once per run, so on a short input it hides the speed-up. With S
given, the 1-worker run is repeated on a larger input (more copies, estimated from the previous
run's rate) until it takes at least S seconds; that run is the 1-worker figure, then the 2-worker
run goes on the same input. The speed-up can only reach 2 when two cores are free: a warning is
printed when the load average was over 0.5 before the benchmark started.

Trained files: the command line's, else runs/default/artifacts/ (left by `make book`), else small
ones built now in a temporary folder through the same littlekit calls; the output says which.
"""

from __future__ import annotations

# Imports stay light at the top: datatrove's forkserver re-imports this script once before it
# forks the workers, so what is imported here is paid there too; the rest is imported in main().
import argparse
import contextlib
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

NEEDS = {"fasttext": "fasttext_model", "frequency": "word_table", "encoder": "encoder_model"}
LOAD_WARNING = 0.5  # 1-minute load average above which the cores are not free
ROUNDS = 6  # at most this many 1-worker runs to reach --min-seconds
MARGIN = 1.25  # aim this much above --min-seconds when enlarging (a short run overstates the rate)


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """Send file descriptor 2 to `path` (datatrove's task loggers write INFO lines to stderr in the
    workers too, which inherit the descriptor); on an error, show the log's end."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("a") as log:
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


def load() -> tuple[float, float, float]:
    return tuple(round(x, 2) for x in os.getloadavg())


class Bench:
    """One input (copies of the source, sharded) and timed cold runs of the cascade over it."""

    def __init__(self, source: Path, work: Path, stages: str, options: dict, tasks: int):
        self.source, self.work, self.stages, self.options, self.tasks = source, work, stages, options, tasks
        self.copies = 0
        self.docs = 0

    def make_input(self, copies: int) -> None:
        from littlekit.analysis.throughput import enlarge_jsonl
        from littlekit.filter.datatrove.pipeline import shard_jsonl

        shutil.rmtree(self.work / "shards", ignore_errors=True)
        self.docs = enlarge_jsonl(self.source, self.work / "input.jsonl", copies)
        shard_jsonl(self.work / "input.jsonl", self.work / "shards", self.tasks)
        (self.work / "input.jsonl").unlink()
        self.copies = copies

    def run(self, workers: int) -> dict:
        from littlekit.filter.datatrove.blocks import clear_stage_cache
        from littlekit.filter.datatrove.pipeline import filter_with_datatrove
        from littlekit.filter.datatrove.report import datatrove_stage_builds

        out = self.work / f"workers-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        clear_stage_cache()  # cold, as each worker of the other run starts
        before = load()
        start = time.perf_counter()
        with stderr_to(self.work / "datatrove.log"):
            report = filter_with_datatrove(
                self.work / "shards", out / "kept", self.stages, out / "logs",
                options=self.options, tasks=self.tasks, workers=workers,
            )  # fmt: skip
        wall = time.perf_counter() - start
        return {
            "wall": wall,
            "kept": report.kept,
            "inside": sum(report.stage_seconds.values()),
            "builds": datatrove_stage_builds(out / "logs"),
            "load_before": before,
            "load_after": load(),
            "docs": self.docs,
        }


def describe(workers: int, run: dict) -> list[str]:
    builds = ", ".join(f"{name} {count}x {seconds:.2f}s" for name, (count, seconds) in run["builds"].items())
    return [
        f"  {workers} worker(s): load average before {run['load_before']}, after {run['load_after']}",
        f"    stages built (once per process): {builds}",
    ]


def main(argv: list[str] | None = None) -> None:
    start_load = load()  # before anything of this benchmark runs
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--in", dest="inp", help="jsonl with a 'text' field (default: embedded demo corpus)")
    parser.add_argument("--copies", type=int, default=4, help="copies of the input (start-up vs work)")
    parser.add_argument("--tasks", type=int, default=4, help="shards = datatrove tasks (>= 2)")
    parser.add_argument(
        "--min-seconds",
        type=float,
        default=0.0,
        help="enlarge the input (more copies) until the 1-worker run takes at least this long (e.g. 60)",
    )
    parser.add_argument("--stages", default="aoa,fasttext,symbolic,frequency", help="the cascade to run")
    parser.add_argument("--fasttext-model")
    parser.add_argument("--word-table")
    args = parser.parse_args(argv)
    if args.tasks < 2:
        parser.error("--tasks must be at least 2 (the 2-worker run needs two tasks)")

    from littlekit import config
    from littlekit.analysis.throughput import BenchArtifacts, DatatroveSpeedup, facts_line, machine_facts
    from littlekit.filter.registry import stage_names

    source = Path(args.inp) if args.inp else config.data_path("demo_corpus/demo_web.jsonl")
    names = stage_names(args.stages)
    print(f"input: {source} x {args.copies}" + (f", enlarged until 1 worker takes >= {args.min_seconds:g} s"
                                                 if args.min_seconds else ""))  # fmt: skip
    print(facts_line(machine_facts(torch_threads=False)))
    with tempfile.TemporaryDirectory(prefix="bench-datatrove-") as workdir:
        work = Path(workdir)
        artifacts = BenchArtifacts(work / "artifacts")
        options = {}
        for name in names:
            option = NEEDS.get(name)
            if option is None:
                continue
            given = getattr(args, option, None)
            options[option], how = (given, f"{given} (command line)") if given else artifacts.get(option)
            options[option] = str(options[option])
            print(f"{option}: {how}")
        bench = Bench(source, work / "runs", ",".join(names), options, args.tasks)
        bench.work.mkdir()
        bench.make_input(args.copies)
        facts_before = machine_facts(torch_threads=False)
        one = bench.run(1)
        for _ in range(ROUNDS - 1):
            if one["wall"] >= args.min_seconds:
                break
            copies = max(bench.copies + 1, math.ceil(bench.copies * args.min_seconds * MARGIN / one["wall"]))
            print(f"  1 worker: {one['wall']:.1f} s on {bench.docs:,} docs (< {args.min_seconds:g} s); "
                  f"again with {copies} copies")  # fmt: skip
            bench.make_input(copies)
            facts_before = machine_facts(torch_threads=False)
            one = bench.run(1)
        two = bench.run(2)
        facts_after = machine_facts(torch_threads=False)
        runs = {1: one, 2: two}
        result = DatatroveSpeedup(
            bench.docs,
            args.tasks,
            {n: r["wall"] for n, r in runs.items()},
            {n: r["kept"] for n, r in runs.items()},
            {n: r["inside"] for n, r in runs.items()},
            facts_before,
            facts_after,
            bench.stages,
            bench.work,
        )
        if one["kept"] != two["kept"]:
            result.notes.append(f"the runs kept different counts: {one['kept']} and {two['kept']}")
        if args.min_seconds and one["wall"] < args.min_seconds:
            result.notes.append(f"the 1-worker run stayed under {args.min_seconds:g} s after {ROUNDS} rounds")
        print(f"copies: {bench.copies}")
        print("\n".join(result.lines()))
        for workers, run in runs.items():
            print("\n".join(describe(workers, run)))
    print(f"1 worker {one['wall']:.2f} s, 2 workers {two['wall']:.2f} s: speed-up {result.speedup:.2f}x "
          f"(target >= 1.7x on 2 free cores)")  # fmt: skip
    print(f"load average before the benchmark started: {start_load}; at the end: {load()}")
    if start_load[0] > LOAD_WARNING:
        print(
            f"WARNING: the 1-minute load average was {start_load[0]} (> {LOAD_WARNING}) before starting: "
            "other work shares the cores, so this speed-up says little about 2 free cores; "
            "rerun when the machine is idle"
        )
    print("wall time includes each run's start-up: the executor, and in every worker the imports and stages")


if __name__ == "__main__":  # the local executor's workers re-import this file
    main()
