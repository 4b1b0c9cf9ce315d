"""How fast the filter stages run, measured here, and what filtering all of FineWeb-Edu would cost.

- `measure_stage_rates(texts, stages)`: every stage on the same texts (through `score_batch`,
  one batched call where the stage has its own), then the whole CPU cascade, one row each.
- `fineweb_cost_table(rates)`: those rates turned into core-hours, GPU-hours and dollars for the
  6.95B documents of FineWeb-Edu, beside judging every document with the paper's LLM ensemble.
  The arithmetic is `littlekit.judge.cost` (StageRate, cascade_cost, judge_everything_cost);
  this module only chooses the rates, the fractions and the prices, and writes them down.
- `datatrove_speedup(...)`: the same datatrove run with 1 and with 2 local workers, wall times
  and their ratio.
- `BenchArtifacts`: the trained files a benchmark needs, from `make book`'s artifacts directory
  or, on a fresh clone, built small in a temporary folder through the same littlekit calls.

Units. A CPU stage's rate is documents per *core-second*: documents divided by the process's
CPU time (`time.process_time`, every thread of the process), not by wall time. On a machine
shared with other work, wall time counts the time other processes held the core; CPU time does
not, and core-seconds are what a cloud bills. Wall time is reported beside it. A stage on a GPU
(the encoder with device "cuda") is rated per GPU-second of wall time.

Nothing here asserts a speed: the numbers are measured when called, on whatever machine runs it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit import config, paper
from littlekit.filter.base import Decision, Stage
from littlekit.judge.cost import (
    FINEWEB_EDU_DOCS,
    PAPER_ENSEMBLE_PER_SAMPLE,
    StageRate,
    cascade_cost,
    judge_everything_cost,
)
from littlekit.text import word_tokens

CASCADE_ROW = "cpu cascade"
RATE_COLUMNS = ("stage", "docs/s", "tokens/s", "seconds", "cpu_seconds", "docs", "unit", "note")
FILTER_ORDER = ("aoa", "fasttext", "encoder", "symbolic", "frequency")  # the paper's cascade order
GPU_STAGES = ("encoder",)  # stages the cost table runs on GPUs

# The paper runs ModernBERT only on the ~266M documents whose fastText band agrees with the AoA band.
PAPER_ENCODER_DOCS = paper.number("encoder_docs").value
PAPER_ENCODER_FRACTION = PAPER_ENCODER_DOCS / FINEWEB_EDU_DOCS


@dataclass(frozen=True)
class HourlyPrice:
    """What one hour of a hardware unit costs, and where that figure comes from."""

    usd: float
    unit: str  # "core" or "gpu"
    what: str
    as_of: str
    source: str


# Assumptions, not measurements: list prices on the dates given.
VCPU_HOUR = HourlyPrice(
    0.0425,
    "core",
    "one vCPU on demand: AWS EC2 c6i.2xlarge, Linux, us-east-1, $0.34/h for 8 vCPUs",
    "2026-04",
    "https://aws.amazon.com/ec2/pricing/on-demand/",
)
H100_HOUR = HourlyPrice(
    3.00,
    "gpu",
    "one H100 SXM on demand at a GPU cloud (Lambda, CoreWeave, RunPod, ...): listed $2.49-3.99/h",
    "2026-Q1",
    "https://pricegpu.pages.dev/blog/h100-vs-a100-cloud-price",
)
B200_HOUR = HourlyPrice(
    5.50,
    "gpu",
    "one B200 on demand at a GPU cloud: listed $4.50-6.00/h (Spheron $6.03 on 2026-03-17)",
    "2026-03",
    "https://lyceum.technology/magazine/nvidia-b200-gpu-cloud-pricing-2026/",
)

# How many CPU cores one GPU replaces for the encoder, when the encoder was measured on a CPU.
# An assumption: an H100's bf16 tensor cores (989 TFLOP/s peak) against one AVX-512 core's fp32
# (~0.1-0.2 TFLOP/s peak) is ~5,000-10,000x at peak; at a realistic ~15% GPU utilisation for
# short, batched sequences and ~50% on the CPU it is ~1,500-3,000x. We take 1,000 because the
# embedded default's encoder is tiny (hidden size 192), which uses a GPU worse than a base model.
DEFAULT_GPU_SPEEDUP = 1000.0

# For scale: FineWeb-Edu's BERT-base-class classifier over 15T tokens took 6,000 H100-hours.
ANCHOR_GPU_TOKENS_PER_S = 15e12 / (6000 * 3600)


# --- measuring --------------------------------------------------------------------------------


def decide_batched(stage: Stage, texts: Sequence[str], batch_size: int = 1_000) -> list[Decision]:
    """Every text's decision, through `score_batch` in batches of `batch_size` (for a stage without
    its own batched call, the base's loop over `score`).

    The stage's `prior_gate` (which reads earlier stages' scores) is not applied: this is the
    cost of scoring every text.
    """
    decisions = []
    for start in range(0, len(texts), batch_size):
        decisions.extend(stage.decide(s) for s in stage.score_batch(list(texts[start : start + batch_size])))
    return decisions


def stage_unit(stage: Stage) -> str:
    """"gpu" for a stage whose model sits on a CUDA device, else "core"."""
    return "gpu" if str(stage.device).startswith("cuda") else "core"


def timed(run: Callable[[], object]) -> tuple[float, float, object]:
    """(wall seconds, process CPU seconds, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def best_cpu_seconds(run: Callable[[], object], repeats: int = 3) -> float:
    """The least process CPU time over `repeats` calls of `run`: other work on a shared machine
    steals wall time from a call but not CPU time, so a bound on this does not flake."""
    return min(timed(run)[1] for _ in range(repeats))


def _best_pass(
    run: Callable[[], object], unit: str, repeats: int, warmup: bool
) -> tuple[float, float, object]:
    """The fastest of `repeats` timed passes (by CPU time for cores, wall time for GPUs)."""
    if warmup:
        run()
    passes = [timed(run) for _ in range(repeats)]
    return min(passes, key=lambda p: p[1] if unit == "core" else p[0])


def _rate_row(name: str, docs: int, tokens: int, wall: float, cpu: float, unit: str, note: str) -> dict:
    seconds = cpu if unit == "core" else wall
    seconds = max(seconds, 1e-9)  # a pass too short for the clock's resolution
    return {
        "stage": name, "docs/s": docs / seconds, "tokens/s": tokens / seconds, "seconds": wall,
        "cpu_seconds": cpu, "docs": docs, "unit": unit, "note": note,
    }


def measure_stage_rates(
    texts: Sequence[str],
    stages: Sequence[Stage],
    repeats: int = 3,
    warmup: bool = True,
    cascade: bool = True,
    batch_size: int = 1_000,
) -> pd.DataFrame:
    """Docs/s and word tokens/s of each stage on the same texts, then of the whole CPU cascade.

    Each stage scores and decides every text (none is removed by an earlier stage), as the best
    of `repeats` passes after a warm-up pass (which fills per-word memos, as the first documents
    of a real shard do). The last row, "cpu cascade", runs the CPU stages in order through
    `littlekit.filter.cascade.Cascade` (a document leaves at the first stage that drops it) and is
    rated per input document. Columns: RATE_COLUMNS; `docs/s` is per core-second for unit
    "core" and per GPU-second for unit "gpu" (see the module docstring). `attrs["reached"]`
    holds the share of the texts that reached each stage of that cascade.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    texts = list(texts)
    if not texts or not stages:
        raise ValueError("need at least one text and one stage")
    tokens = sum(len(word_tokens(text)) for text in texts)
    rows = []
    for stage in stages:
        unit = stage_unit(stage)
        wall, cpu, decisions = _best_pass(
            lambda stage=stage: decide_batched(stage, texts, batch_size), unit, repeats, warmup
        )
        kept = sum(decision.keep for decision in decisions)
        how = "score_batch" if stage.batched else "one text at a time"
        note = f"kept {kept}/{len(texts)}; {how}; best of {repeats}"
        if stage.prior_gate is not None:
            note += "; gate not applied (every text scored)"
        rows.append(_rate_row(stage.name, len(texts), tokens, wall, cpu, unit, note))
    frame = pd.DataFrame(rows, columns=list(RATE_COLUMNS))
    frame.attrs["reached"] = {}
    cpu_stages = [stage for stage in stages if stage_unit(stage) == "core" and stage.name not in GPU_STAGES]
    if cascade and cpu_stages:
        row, reached = _measure_cascade(texts, cpu_stages, tokens, repeats, warmup, batch_size)
        frame = pd.concat([frame, pd.DataFrame([row])], ignore_index=True)
        frame.attrs["reached"] = reached
    frame.attrs["timing"] = (
        f"best of {repeats} passes{' after a warm-up pass' if warmup else ''}; docs/s per core-second "
        "(process CPU time) for unit core, per GPU-second (wall) for unit gpu; tokens are word tokens"
    )
    return frame


def _measure_cascade(texts, stages, tokens, repeats, warmup, batch_size) -> tuple[dict, dict[str, float]]:
    from littlekit.filter.cascade import Cascade
    from littlekit.io import Document

    records = [Document(id=str(i), text=text, line=i + 1) for i, text in enumerate(texts)]
    runner = Cascade(stages, batch_size=batch_size)
    wall, cpu, report = _best_pass(lambda: runner.run(records).consume(), "core", repeats, warmup)
    reached = {name: report.stage_in[name] / report.read for name in runner.names}
    names = "+".join(runner.names)
    note = f"{names} in order; kept {report.kept}/{report.read}; best of {repeats}"
    return _rate_row(CASCADE_ROW, len(texts), tokens, wall, cpu, "core", note), reached


# --- costing ----------------------------------------------------------------------------------


def default_retention(
    stages: Sequence[str], reached: Mapping[str, float] | None = None
) -> dict[str, tuple[float, str]]:
    """The share of FineWeb-Edu reaching each stage, and where that share comes from.

    - the first stage of FILTER_ORDER present: every document;
    - the encoder: the paper's ~266M of 6.95B;
    - stages after the encoder (symbolic, frequency): the encoder's share, an upper bound
      (as if the encoder dropped nothing);
    - other stages before the encoder (fastText): the share that reached it in our CPU cascade
      on the texts measured (`reached`, from measure_stage_rates), else every document.
    """
    reached = reached or {}
    present = [name for name in FILTER_ORDER if name in stages]
    first = present[0] if present else None
    retention = {}
    for name in stages:
        if name == first:
            retention[name] = (1.0, "every document")
        elif name == "encoder":
            retention[name] = (PAPER_ENCODER_FRACTION, "paper: ~266M of 6.95B documents reach the encoder")
        elif name in FILTER_ORDER and FILTER_ORDER.index(name) > FILTER_ORDER.index("encoder"):
            retention[name] = (PAPER_ENCODER_FRACTION, "upper bound: what reached the encoder (paper)")
        elif name in reached:
            retention[name] = (float(reached[name]), "measured: share reaching it in our CPU cascade")
        else:
            retention[name] = (1.0, "assumed: every document")
    return retention


def _as_rate_frame(rates: pd.DataFrame | Mapping[str, float]) -> pd.DataFrame:
    if isinstance(rates, pd.DataFrame):
        missing = {"stage", "docs/s", "unit"} - set(rates.columns)
        if missing:
            raise ValueError(f"rates lacks column(s) {sorted(missing)}")
        return rates
    return pd.DataFrame({"stage": list(rates), "docs/s": list(rates.values()), "unit": "core"})


def fineweb_cost_table(
    rates: pd.DataFrame | Mapping[str, float],
    n_docs: float = FINEWEB_EDU_DOCS,
    retention: Mapping[str, float] | None = None,
    price_per_core_hour: float = VCPU_HOUR.usd,
    price_per_gpu_hour: float = H100_HOUR.usd,
    gpu_speedup: float = DEFAULT_GPU_SPEEDUP,
    judge_per_sample: float = PAPER_ENSEMBLE_PER_SAMPLE,
) -> pd.DataFrame:
    """Core-hours, GPU-hours and USD per stage and in total for `n_docs`, beside the LLM judge.

    `rates`: a measure_stage_rates frame (its "cpu cascade" row is left out of the sum) or a
    {stage: docs per core-second} mapping. A GPU stage (GPU_STAGES) measured on a CPU runs at
    its per-core rate times `gpu_speedup`. `retention`: {stage: share of the n_docs reaching
    it}; stages not given take `default_retention` (using the rates' attrs["reached"]).
    Rows: one per stage, "total", then "LLM judge on every document (paper)"; `share_of_judge`
    is each row's USD over the judge's. Every assumption is in the `note` column and in
    `attrs["assumptions"]`.
    """
    if gpu_speedup <= 0 or price_per_core_hour < 0 or price_per_gpu_hour < 0:
        raise ValueError("gpu_speedup must be positive and prices not negative")
    frame = _as_rate_frame(rates)
    reached = frame.attrs.get("reached")
    frame = frame[frame["stage"] != CASCADE_ROW]
    names = list(frame["stage"])
    fractions = default_retention(names, reached)
    for name, share in (retention or {}).items():
        fractions[name] = (float(share), "given")
    stage_rates, notes = [], []
    for name, docs_per_s, unit in zip(names, frame["docs/s"], frame["unit"], strict=True):
        note = f"fraction: {fractions[name][1]}"
        if unit == "core" and name in GPU_STAGES:
            note = (f"measured on a CPU at {docs_per_s:,.1f} docs/s per core x gpu_speedup {gpu_speedup:g} "
                    f"(assumption); {note}")
            docs_per_s, unit = docs_per_s * gpu_speedup, "gpu"
        price = price_per_gpu_hour if unit == "gpu" else price_per_core_hour
        stage_rates.append(StageRate(name, float(docs_per_s), unit, price, fractions[name][0]))
        notes.append(note)
    table = cascade_cost(stage_rates, n_docs)
    table["note"] = [*notes, "sum of the stages"]
    judge_usd = judge_everything_cost(n_docs, judge_per_sample)
    judge = {"stage": "LLM judge on every document (paper)", "unit": "", "fraction": 1.0, "docs": n_docs,
             "usd": judge_usd, "note": f"paper: ${judge_per_sample:g} per document (3-prompt ensemble)"}
    table = pd.concat([table, pd.DataFrame([judge])], ignore_index=True)
    is_core, is_gpu = table["unit"] == "core", table["unit"] == "gpu"
    table["core_hours"] = table["unit_hours"].where(is_core, 0.0)
    table["gpu_hours"] = table["unit_hours"].where(is_gpu, 0.0)
    total = table["stage"] == "total"
    table.loc[total, "core_hours"] = table.loc[is_core, "unit_hours"].sum()
    table.loc[total, "gpu_hours"] = table.loc[is_gpu, "unit_hours"].sum()
    table.loc[table.index[-1], ["core_hours", "gpu_hours"]] = float("nan")
    table["share_of_judge"] = table["usd"] / judge_usd
    columns = ["stage", "unit", "fraction", "docs", "docs_per_second", "core_hours", "gpu_hours", "usd",
               "share_of_judge", "note"]
    table = table[columns]
    table.attrs["assumptions"] = _assumptions(n_docs, price_per_core_hour, price_per_gpu_hour, gpu_speedup,
                                              judge_per_sample, rates)
    return table


def _cited(price: HourlyPrice) -> str:
    return f"{price.what} ({price.as_of}, {price.source})"


def _assumptions(n_docs, core_price, gpu_price, gpu_speedup, judge_per_sample, rates) -> dict[str, str]:
    notes = {
        "n_docs": f"{n_docs:,.0f} documents (FineWeb-Edu, as in the paper's cost figure)",
        "price_per_core_hour": f"${core_price:g} per core-hour; default: {_cited(VCPU_HOUR)}",
        "price_per_gpu_hour": f"${gpu_price:g} per GPU-hour; default: {_cited(H100_HOUR)}; "
                              f"a B200 instead: ${B200_HOUR.usd:g}, {_cited(B200_HOUR)}",
        "gpu_speedup": f"{gpu_speedup:g} CPU cores per GPU for an encoder measured on a CPU (assumption; "
                       "see littlekit.analysis.throughput.DEFAULT_GPU_SPEEDUP)",
        "judge": f"${judge_per_sample:g} per document: the paper's three-prompt ensemble",
        "encoder_scale": (
            f"FineWeb-Edu's BERT-base-class classifier: 15T tokens on 6,000 H100-hours = "
            f"{ANCHOR_GPU_TOKENS_PER_S:,.0f} tokens/s per H100 (inputs cut at 512 tokens); at that speed a "
            f"base-size encoder (the paper's ModernBERT-base) would take "
            f"{PAPER_ENCODER_DOCS * 1000 / ANCHOR_GPU_TOKENS_PER_S / 3600:,.0f} H100-hours for the paper's "
            "266M documents if each had 1,000 tokens (an assumed length)"
        ),
        "not_counted": "reading, decompressing and writing the data; scheduling; idle cores; training",
    }
    if isinstance(rates, pd.DataFrame):
        if "timing" in rates.attrs:
            notes["timing"] = rates.attrs["timing"]
        cascade = rates[rates["stage"] == CASCADE_ROW]
        if len(cascade):
            rate = float(cascade["docs/s"].iloc[0])
            notes["cpu_cascade_check"] = (
                f"the CPU cascade measured end to end: {rate:,.0f} docs/s per core, "
                f"{n_docs / rate / 3600:,.0f} core-hours for {n_docs:,.0f} documents at the measured texts' "
                "own retention"
            )
    return notes


# --- datatrove: 1 worker against 2 -------------------------------------------------------------


def machine_facts(torch_threads: bool = True) -> dict[str, Any]:
    """CPU count, cores this process may use, load average, and torch's intra-op threads."""
    facts: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "loadavg": tuple(round(x, 2) for x in os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    if torch_threads:
        import torch

        facts["torch_threads"] = torch.get_num_threads()
    return facts


def facts_line(facts: Mapping[str, Any] | None = None) -> str:
    """One printable line of machine_facts()."""
    facts = machine_facts() if facts is None else facts
    return "machine: " + ", ".join(f"{key} {value}" for key, value in facts.items())


@dataclass
class DatatroveSpeedup:
    """Wall seconds of the same datatrove run with each worker count, and the speed-up."""

    docs: int
    tasks: int
    wall_s: dict[int, float]
    kept: dict[int, int]
    stage_seconds: dict[int, float]  # the stages' time inside the tasks, summed over tasks
    facts_before: dict[str, Any]
    facts_after: dict[str, Any]
    stages: str
    workdir: Path
    notes: list[str] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        """Wall time with the fewest workers over wall time with the most."""
        low, high = min(self.wall_s), max(self.wall_s)
        return self.wall_s[low] / self.wall_s[high]

    def lines(self) -> list[str]:
        out = [f"datatrove local run: {self.docs:,} docs, {self.tasks} shards/tasks, stages {self.stages}"]
        for workers, seconds in sorted(self.wall_s.items()):
            out.append(f"  {workers} worker(s): {seconds:6.2f} s wall, {self.docs / seconds:,.0f} docs/s, "
                       f"kept {self.kept[workers]:,}; stages' time summed over tasks "
                       f"{self.stage_seconds[workers]:.2f} s")
        out.append(f"  speed-up {max(self.wall_s)} workers over {min(self.wall_s)}: {self.speedup:.2f}x")
        out.append(f"  before: {facts_line(self.facts_before)}")
        out.append(f"  after:  {facts_line(self.facts_after)}")
        out.extend(f"  note: {note}" for note in self.notes)
        return out


def enlarge_jsonl(path: str | os.PathLike, out: str | os.PathLike, copies: int = 1) -> int:
    """Write `copies` copies of a jsonl file, each record's id made unique ("<id>#<copy>"); the count."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}")
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    n = 0
    with Path(out).open("w", encoding="utf-8") as handle:
        for copy in range(copies):
            for line in lines:
                record = json.loads(line)
                record["id"] = f"{record.get('id', n)}#{copy}"
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                n += 1
    return n


def datatrove_speedup(
    inp: str | os.PathLike,
    stages: str = "aoa,symbolic",
    *,
    options: Mapping[str, Any] | None = None,
    copies: int = 1,
    tasks: int = 4,
    workers: Sequence[int] = (1, 2),
    workdir: str | os.PathLike | None = None,
) -> DatatroveSpeedup:
    """Run the same cascade through datatrove's local executor once per worker count; time each.

    The input (`copies` copies of the jsonl `inp`) is sharded once into `tasks` files
    (littlekit.filter.datatrove.shard_jsonl) and every run reads those shards into its own
    output and logging folders under `workdir` (a new temporary folder by default). Each
    worker builds its stages itself, so start-up is paid per worker: enlarge the input until it
    is small beside the work. `stage_seconds` (the stages' wall time inside the tasks, summed)
    tells start-up apart from slower work: with 2 workers on 2 free cores it stays near the
    1-worker figure; when the cores are shared with other work it grows. With more than one
    worker the caller must be a script guarded by `if __name__ == "__main__":` (the
    executor's workers re-import it).
    """
    from littlekit.filter.datatrove.pipeline import filter_with_datatrove, shard_jsonl

    if tasks < max(workers):
        raise ValueError(f"tasks ({tasks}) must be at least the largest worker count ({max(workers)})")
    work = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="littlekit-dt-"))
    work.mkdir(parents=True, exist_ok=True)
    n_docs = enlarge_jsonl(inp, work / "input.jsonl", copies)
    shard_jsonl(work / "input.jsonl", work / "shards", tasks)
    before = machine_facts(torch_threads=False)
    wall, kept, inside = {}, {}, {}
    for count in workers:
        run = work / f"workers-{count}"
        seconds, _, report = timed(lambda run=run, count=count: filter_with_datatrove(
            work / "shards", run / "kept", stages, run / "logs", options=options, tasks=tasks, workers=count))
        wall[count], kept[count] = seconds, report.kept
        inside[count] = sum(report.stage_seconds.values())
    after = machine_facts(torch_threads=False)
    result = DatatroveSpeedup(n_docs, tasks, wall, kept, inside, before, after, stages, work)
    if len(set(kept.values())) > 1:
        result.notes.append(f"the runs kept different counts: {kept}")
    return result


# --- artifacts for benchmarks --------------------------------------------------------------------

DEFAULT_ARTIFACTS = config.REPO_ROOT / "runs" / "default" / "artifacts"


class BenchArtifacts:
    """Trained files for the benchmarks: `make book`'s, else small ones built now, and how each was got.

    `get(option)` for "fasttext_model", "word_table" or "encoder_model" returns (path, how). A
    file present and well formed under `root` (default runs/default/artifacts/) is used as is;
    otherwise one is built under `workdir` with the same littlekit calls the notebooks use, on
    labels from `littlekit.fit.labels.build_default_labels(max_per_band=...)`.
    """

    def __init__(self, workdir: str | os.PathLike, root: str | os.PathLike = DEFAULT_ARTIFACTS,
                 max_per_band: int = 400, encoder_steps: int = 30):
        self.workdir = Path(workdir)
        self.root = Path(root)
        self.max_per_band = max_per_band
        self.encoder_steps = encoder_steps
        self._labels: pd.DataFrame | None = None

    def labels(self) -> pd.DataFrame:
        if self._labels is None:
            from littlekit.fit.labels import build_default_labels

            self._labels = build_default_labels(max_per_band=self.max_per_band)
        return self._labels

    def get(self, option: str) -> tuple[Path, str]:
        from littlekit.filter.artifacts import artifact_path, artifact_problems, declared_artifacts

        stage = {a.option: a.stage for a in declared_artifacts()}.get(option)
        builders = {"fasttext_model": self._fasttext, "word_table": self._word_table,
                    "encoder_model": self._encoder}
        if stage is None or option not in builders:
            raise KeyError(f"no benchmark builder for {option!r}; known: {', '.join(builders)}")
        path = artifact_path(self.root, option)
        if not artifact_problems(self.root, [stage]):  # these stages need one artifact each
            return path, f"{path} (from make book)"
        out = artifact_path(self.workdir, option)
        how = builders[option](out)
        return out, f"built now in a temporary folder ({how}); run `make book` to use the book's"

    def _fasttext(self, out: Path) -> str:
        from littlekit.fit.fasttext import train_fasttext

        labels = self.labels()
        train_fasttext(labels, out)
        return f"fastText trained on {len(labels):,} default labels"

    def _word_table(self, out: Path) -> str:
        from littlekit.filter import word_table as blocklist
        from littlekit.filter.artifacts import export_word_table

        labels = self.labels()
        is_k5 = labels["band"] == "K5"
        table = blocklist.score_words(labels.loc[is_k5, "text"], labels.loc[~is_k5, "text"])
        export_word_table(table, out)
        n_k5 = int(is_k5.sum())
        return f"word table from {n_k5:,} K5 and {len(labels) - n_k5:,} Beyond-K-5 default labels"

    def _encoder(self, out: Path) -> str:
        from littlekit.fit.encoder import train_tiny_encoder
        from littlekit.fit.encoder_training import EncoderTrainConfig

        labels = self.labels()
        train_tiny_encoder(labels, None, out, EncoderTrainConfig(epochs=1, max_steps=self.encoder_steps))
        return (f"the embedded default's tiny ModernBERT (littlekit.fit.encoder.train_tiny_encoder), "
                f"{self.encoder_steps} fine-tuning steps on {len(labels):,} default labels: the book's size "
                "and speed, rougher verdicts")
