"""SFT then GRPO on the curriculum, re-banding the GRPO pool between segments (Section 4.2, C.4).

The paper post-trains LittleLearner on K-5 data and UNFILTERED on a compute-matched unfiltered
counterpart, then runs GRPO three ways: LittleLearner on the K-5 pool, LittleLearner on the
unfiltered pool, UNFILTERED on the unfiltered pool (`PAPER_RUNS`). GRPO runs in segments; between
segments the pool is re-banded to the problems the current policy solves 1 to 15 times out of 16
(`reband`): a problem it always or never solves gives every sample the same reward, so no
advantage and no gradient. TRL has no such feature, so each segment is its own `GRPOTrainer`
built on the previous segment's saved checkpoint.

- SFT (`sft_rows`, `run_sft`): TRL's `SFTTrainer` on prompt/completion rows, the loss on the
  completion only: the curriculum's worked steps in both registers (prose word problems and
  compact statements) plus GSM8K train problems with their steps (`gsm8k_records`; for
  LittleLearner only those the filter cascade keeps, `gsm8k_kept`). Both SFT sets hold the same
  number of rows (compute-matched). The completion ends with EOS, which a pretrained model never
  writes: SFT is what teaches it to stop, which GRPO's sampling needs.
- GRPO (`run_grpo`): TRL's `GRPOTrainer`, reward 1 for a correct answer and 0 otherwise
  (`CurriculumReward`, graded by `evals.curriculum.is_correct`, the grader the curriculum's own
  audit holds every gold answer to). With beta > 0 TRL rebuilds the reference model from the
  policy's `_name_or_path`, so every segment starts from a saved directory.
- `run_jobs`: SFT jobs, GRPO jobs (segments, then the final checkpoint's evaluation) and
  evaluations of base checkpoints, side by side in one-thread processes; a GRPO job returns where
  each checkpoint is and what each re-banding found, and writes it to <out>/summary.json.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from littlekit.curriculum.formats import render

PASS_LOW, PASS_HIGH, BAND_SAMPLES = 1, 15, 16  # the paper's rule: solved 1-15 times out of 16
SFT_SEED_OFFSET, POOL_SEED_OFFSET = 1, 2  # run seeds apart from pretraining's (the run seed itself)
GSM8K_UNIT = "gsm8k"
PAPER_FINDING = (
    "Within K-5, post-training lifts both models above their base performance; beyond K-5 it only "
    "modestly improves LittleLearner while UNFILTERED gains considerably more, and LittleLearner "
    "post-trained on K-5 data and on unfiltered data end up the same (Section 4.2, Figure 8)."
)


@dataclass(frozen=True)
class PostTrainingRun:
    """One of the paper's three runs: which base model, on which SFT data and GRPO pool."""

    name: str
    model: str  # "littlelearner" or "unfiltered"
    sft_units: str  # "K5" or "all"
    pool_units: str
    gsm8k: str  # "kept" (the cascade keeps it) or "all"


PAPER_RUNS: tuple[PostTrainingRun, ...] = (
    PostTrainingRun("littlelearner-k5", "littlelearner", "K5", "K5", "kept"),
    PostTrainingRun("littlelearner-unfiltered", "littlelearner", "K5", "all", "kept"),
    PostTrainingRun("unfiltered-unfiltered", "unfiltered", "all", "all", "all"),
)
SFT_UNITS = {"littlelearner": ("K5", "kept"), "unfiltered": ("all", "all")}


@dataclass(frozen=True)
class PostTrainingConfig:
    """The budget of one run; the defaults fit a micro model on one CPU core in a few minutes."""

    sft_steps: int = 40
    sft_batch: int = 16
    sft_lr: float = 3e-4
    sft_max_length: int = 256
    sft_registers: tuple[str, ...] = ("prose", "compact")
    gsm8k_share: float = 0.1  # of the SFT rows, when that many GSM8K problems are available
    grpo_segments: int = 2
    grpo_steps: int = 10  # per segment
    grpo_batch: int = 32  # completions per step
    num_generations: int = 8
    grpo_lr: float = 5e-5
    beta: float = 0.02
    temperature: float = 1.0
    max_completion_length: int = 96
    pool_per_unit: int = 2
    pool_gsm8k: int = 8
    pool_register: str = "compact"
    band_samples: int = BAND_SAMPLES
    pass_low: int = PASS_LOW
    pass_high: int = PASS_HIGH
    seed: int = 0

    def __post_init__(self) -> None:
        if self.grpo_batch % self.num_generations:
            raise ValueError(
                f"grpo_batch ({self.grpo_batch}) must be a multiple of "
                f"num_generations ({self.num_generations})"
            )
        if not 0 <= self.pass_low <= self.pass_high <= self.band_samples:
            raise ValueError(
                f"need 0 <= pass_low <= pass_high <= band_samples, got {self.pass_low}, "
                f"{self.pass_high}, {self.band_samples}"
            )
        if not 0 <= self.gsm8k_share < 1:
            raise ValueError(f"gsm8k_share must be in [0, 1), got {self.gsm8k_share}")


def local_training() -> dict[str, Any]:
    """What every trainer here runs with: the GPU when there is one, else the CPU; no
    checkpoints, trackers or progress bars (the log is written as log.json beside the model)."""
    import torch

    return {
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": not torch.cuda.is_available(),
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }


# --- data ------------------------------------------------------------------------------------------

_CALCULATOR = re.compile(r"<<[^<>]*>>")


def gsm8k_records(frame: Any, prefix: str = "gsm8k-train") -> list[dict[str, Any]]:
    """GSM8K question/answer rows as scratchpad records: the solution's lines, calculator
    annotations (`<<48/2=24>>`) removed, as steps, and the number after `####` as the answer."""
    records = []
    for i, (question, solution) in enumerate(zip(frame["question"], frame["answer"], strict=True)):
        body, sep, answer = str(solution).rpartition("####")
        if not sep or not answer.strip():
            raise ValueError(f"{prefix}-{i:05d}: the answer has no '#### <number>' line")
        steps = [line.strip() for line in _CALCULATOR.sub("", body).splitlines() if line.strip()]
        answer = answer.strip().replace(",", "")
        records.append(
            {
                "id": f"{prefix}-{i:05d}",
                "seed": None,
                "unit": GSM8K_UNIT,
                "grade": "",
                "band": "GSM8K",
                "register": "prose",
                "format": "scratchpad",
                "statement": str(question).strip(),
                "steps": steps,
                "answer": answer,
                "text": render(str(question).strip(), steps, answer, "scratchpad"),
            }
        )
    return records


def gsm8k_kept(records: Sequence[dict[str, Any]], run: str | Path) -> tuple[list[bool], str]:
    """Whether the run's filter keeps each question, and how that was decided
    (`lm.corpus_select.filter_outcomes`: the five-stage cascade from the run's artifacts, or
    stages 1 and 4 when they are missing)."""
    import pandas as pd

    from littlekit.lm.corpus_select import filter_outcomes

    frame = pd.DataFrame({"id": [r["id"] for r in records], "text": [r["statement"] for r in records]})
    outcomes = filter_outcomes(frame, run)
    return [bool(kept) for kept in outcomes.frame["kept"]], outcomes.note


def curriculum_records(
    units: str, per_unit: int, seed: int, registers: Sequence[str]
) -> list[dict[str, Any]]:
    """`per_unit` verified scratchpad problems of every unit of `units` in each register."""
    from littlekit.curriculum.generate import generate
    from littlekit.curriculum.units import select_units

    return [
        record
        for offset, register in enumerate(registers)
        for record in generate(select_units(units), per_unit, seed=seed * 100 + offset, register=register)
    ]


def split_text(record: dict[str, Any]) -> dict[str, str]:
    """A scratchpad record as the prompt `evals.curriculum.prompt` gives and the completion after it."""
    from littlekit.evals.curriculum import prompt

    text = render(record["statement"], record["steps"], record["answer"], "scratchpad")
    start = prompt({**record, "format": "scratchpad"})
    return {"prompt": start, "completion": text[len(start) :]}


def sft_rows(
    curriculum: Sequence[dict[str, Any]],
    gsm8k: Sequence[dict[str, Any]],
    n_rows: int,
    gsm8k_share: float,
    seed: int,
) -> list[dict[str, str]]:
    """`n_rows` prompt/completion rows, shuffled: `gsm8k_share` of them GSM8K (as many as there
    are, at most), the rest curriculum problems (repeated in order when there are fewer)."""
    rng = random.Random(seed)
    n_gsm8k = min(len(gsm8k), round(n_rows * gsm8k_share))
    chosen = rng.sample(list(gsm8k), n_gsm8k)
    pool = list(curriculum)
    if not pool:
        raise ValueError("no curriculum problems to fine-tune on")
    rng.shuffle(pool)
    chosen += [pool[i % len(pool)] for i in range(n_rows - n_gsm8k)]
    rng.shuffle(chosen)
    return [split_text(record) for record in chosen]


# --- GRPO -----------------------------------------------------------------------------------------


class CurriculumReward:
    """TRL reward function: 1.0 for a completion whose answer the grader accepts, else 0.0.
    The dataset's `answer` and `format` columns reach it as keyword arguments."""

    __name__ = "correct"

    def __call__(
        self,
        prompts: Sequence[str],
        completions: Sequence[str],
        answer: Sequence[str],
        format: Sequence[str],
        **_: Any,
    ) -> list[float]:
        from littlekit.evals.curriculum import is_correct

        return [
            1.0 if is_correct(completion, {"answer": gold, "format": fmt}) else 0.0
            for completion, gold, fmt in zip(completions, answer, format, strict=True)
        ]


def reband(
    counts: Sequence[int], n_samples: int = BAND_SAMPLES, low: int = PASS_LOW, high: int = PASS_HIGH
) -> list[int]:
    """Indices of the problems solved between `low` and `high` times out of `n_samples`."""
    for count in counts:
        if not 0 <= count <= n_samples:
            raise ValueError(f"a pass count must be between 0 and {n_samples}, got {count}")
    return [i for i, count in enumerate(counts) if low <= count <= high]


def pass_counts(
    model: Any,
    tokenizer: Any,
    records: Sequence[dict[str, Any]],
    n_samples: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
) -> list[int]:
    """How many of `n_samples` sampled completions answer each record correctly."""
    from littlekit.evals.curriculum import evaluate, model_completer

    complete = model_completer(
        model, tokenizer, "scratchpad", max_new_tokens=max_new_tokens, temperature=temperature, seed=seed
    )
    return [int(c) for c in evaluate(records, complete, n_samples=n_samples)["c"]]


def banding(
    counts: Sequence[int], records: Sequence[dict[str, Any]], config: PostTrainingConfig
) -> dict[str, Any]:
    """What one re-banding found: per band of the pool, problems, in the 1-15 band, never solved,
    always solved; and the indices kept."""
    kept = reband(counts, config.band_samples, config.pass_low, config.pass_high)
    by_band: dict[str, dict[str, int]] = {}
    for record, count in zip(records, counts, strict=True):
        row = by_band.setdefault(record["band"], {"problems": 0, "in_band": 0, "never": 0, "always": 0})
        row["problems"] += 1
        row["in_band"] += config.pass_low <= count <= config.pass_high
        row["never"] += count == 0
        row["always"] += count == config.band_samples
    return {"kept": kept, "by_band": by_band}


def run_sft(
    base: str | Path, rows: Sequence[dict[str, str]], out: str | Path, config: PostTrainingConfig
) -> Path:
    """Fine-tune `base` on `rows` (one pass of sft_steps x sft_batch rows); the model and its
    tokenizer are saved to `out`."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    out = Path(out)
    args = SFTConfig(
        output_dir=str(out / "trainer"),
        max_steps=config.sft_steps,
        per_device_train_batch_size=config.sft_batch,
        learning_rate=config.sft_lr,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, config.sft_steps // 20),
        max_length=config.sft_max_length,
        logging_steps=max(1, config.sft_steps // 4),
        seed=config.seed,
        **local_training(),
    )
    tokenizer = AutoTokenizer.from_pretrained(base)
    dataset = Dataset.from_list(list(rows))
    trainer = SFTTrainer(model=str(base), args=args, train_dataset=dataset, processing_class=tokenizer)
    return _train_and_save(trainer, tokenizer, out)


def run_grpo_segment(
    start: str | Path,
    pool: Sequence[dict[str, Any]],
    out: str | Path,
    config: PostTrainingConfig,
    segment: int,
) -> Path:
    """grpo_steps GRPO steps from the saved model `start` on `pool`; saved to `out`."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from littlekit.evals.curriculum import prompt

    out = Path(out)
    rows = [{"prompt": prompt(r), "answer": r["answer"], "format": r["format"]} for r in pool]
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        max_steps=config.grpo_steps,
        per_device_train_batch_size=config.grpo_batch,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        learning_rate=config.grpo_lr,
        beta=config.beta,
        temperature=config.temperature,
        logging_steps=1,
        seed=config.seed + segment,
        **local_training(),
    )
    tokenizer = AutoTokenizer.from_pretrained(start)
    trainer = GRPOTrainer(
        model=str(start),
        reward_funcs=CurriculumReward(),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    return _train_and_save(trainer, tokenizer, out)


def run_grpo(
    start: str | Path, candidates: Sequence[dict[str, Any]], out: str | Path, config: PostTrainingConfig
) -> tuple[Path, list[dict[str, Any]]]:
    """grpo_segments segments from `start`; before each, the candidates re-banded by the current
    policy's pass counts. Returns the last checkpoint and one banding per segment. A pool left
    with fewer problems than a step needs ends GRPO early."""
    from littlekit.evals.models import load_causal_lm

    out, current, history = Path(out), Path(start), []
    prompts_per_step = config.grpo_batch // config.num_generations
    for segment in range(1, config.grpo_segments + 1):
        model, tokenizer = load_causal_lm(str(current))
        counts = pass_counts(
            model,
            tokenizer,
            candidates,
            config.band_samples,
            config.temperature,
            config.max_completion_length,
            config.seed + segment,
        )
        found = banding(counts, candidates, config)
        history.append(
            {
                "before_segment": segment,
                "checkpoint": str(current),
                "counts": counts,
                **{k: v for k, v in found.items() if k != "kept"},
                "pool": len(found["kept"]),
            }
        )
        if len(found["kept"]) < prompts_per_step:
            history[-1]["stopped"] = (
                f"{len(found['kept'])} problems in the band, a step needs {prompts_per_step}"
            )
            break
        current = run_grpo_segment(
            current, [candidates[i] for i in found["kept"]], out / f"segment-{segment}", config, segment
        )
    return current, history


# --- runs and their evaluation ---------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """What a checkpoint is scored on: greedy accuracy on `records`, and pass counts of
    `n_samples` sampled completions on `sampled` (the share with any success is the mechanism:
    where pass@16 is 0, GRPO has no reward signal)."""

    records: tuple[dict[str, Any], ...] = ()
    sampled: tuple[dict[str, Any], ...] = ()
    n_samples: int = BAND_SAMPLES
    temperature: float = 1.0
    max_new_tokens: int = 96
    seed: int = 0


@dataclass(frozen=True)
class SftJob:
    """SFT of one base model: where it is, its rows and where the result goes."""

    base: str
    out: str
    rows: tuple[dict[str, str], ...]
    config: PostTrainingConfig = field(default_factory=PostTrainingConfig)


@dataclass(frozen=True)
class GrpoJob:
    """Segmented GRPO of one run from its SFT checkpoint, then its evaluation."""

    run: PostTrainingRun
    sft: str
    out: str
    pool: tuple[dict[str, Any], ...]
    evaluation: Evaluation = field(default_factory=Evaluation)
    config: PostTrainingConfig = field(default_factory=PostTrainingConfig)


@dataclass(frozen=True)
class EvalJob:
    """The evaluation of one checkpoint as it is (a base model)."""

    label: str
    path: str
    evaluation: Evaluation


def evaluate_checkpoint(path: str | Path, evaluation: Evaluation) -> dict[str, Any]:
    """{"greedy": evals.curriculum rows, "sampled": rows with n_samples samples each} for the
    checkpoint at `path`."""
    from littlekit.evals.curriculum import evaluate, model_completer
    from littlekit.evals.models import load_causal_lm

    model, tokenizer = load_causal_lm(str(path))
    out: dict[str, Any] = {}
    if evaluation.records:
        out["greedy"] = evaluate(evaluation.records, model_completer(model, tokenizer, "scratchpad"))
    if evaluation.sampled:
        complete = model_completer(
            model,
            tokenizer,
            "scratchpad",
            max_new_tokens=evaluation.max_new_tokens,
            temperature=evaluation.temperature,
            seed=evaluation.seed,
        )
        out["sampled"] = evaluate(evaluation.sampled, complete, n_samples=evaluation.n_samples)
    return out


def quiet_trainers() -> None:
    """No per-step log lines, progress bars or deprecation warnings from TRL, transformers and
    datasets: a job's log is its log.json, and a notebook shows what its cells print."""
    import warnings

    import datasets
    from transformers.utils import logging as hf_logging

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="trl")
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()


def progress_callback(label: str) -> Any:
    """A TrainerCallback that prints `littlekit.progress` lines (steps, loss) instead of a bar."""
    from transformers import TrainerCallback

    from littlekit.progress import Progress

    class ProgressLines(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.progress, self.loss = Progress(state.max_steps, label, "steps"), None

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.loss = (logs or {}).get("loss", self.loss)

        def on_step_end(self, args, state, control, **kwargs):
            self.progress.update(**({} if self.loss is None else {"loss": float(self.loss)}))

    return ProgressLines()


def _train_and_save(trainer: Any, tokenizer: Any, out: Path) -> Path:
    """Train without per-step printing, then save the model, its tokenizer and the log to `out`."""
    from transformers import PrinterCallback, ProgressCallback

    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)
    trainer.add_callback(progress_callback(f"{type(trainer).__name__[:-7]} {out.parent.name}/{out.name}"))
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    _write_log(out / "log.json", trainer.state.log_history)
    return out


def run_job(job: SftJob | GrpoJob | EvalJob) -> dict[str, Any]:
    """One job (what `side_by_side` hands each process): SFT, GRPO then evaluation, or evaluation."""
    quiet_trainers()
    if isinstance(job, SftJob):
        return {"sft": str(run_sft(job.base, job.rows, job.out, job.config))}
    if isinstance(job, EvalJob):
        return {"label": job.label, "path": job.path, **evaluate_checkpoint(job.path, job.evaluation)}
    final, history = run_grpo(job.sft, job.pool, job.out, job.config)
    summary = {
        "run": asdict(job.run),
        "sft": job.sft,
        "final": str(final),
        "pool": len(job.pool),
        "banding": history,
        "config": asdict(job.config),
    }
    _write_log(Path(job.out) / "summary.json", summary)
    return {
        "label": job.run.name,
        "path": str(final),
        **summary,
        **evaluate_checkpoint(final, job.evaluation),
    }


def run_jobs(jobs: Sequence[SftJob | GrpoJob | EvalJob], processes: int = 2) -> list[dict[str, Any]]:
    """`run_job` for each job, `processes` at a time with one thread each; results in order."""
    from littlekit.processes import side_by_side

    return side_by_side(run_job, list(jobs), processes)


def _write_log(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, default=str) + "\n", encoding="utf-8")


# --- the paper's three runs -----------------------------------------------------------------------


def gsm8k_choice(gsm8k: Sequence[dict[str, Any]], kept: Sequence[bool], which: str) -> list[dict[str, Any]]:
    """The GSM8K problems a run may use: all of them, or those the cascade keeps ("kept")."""
    if which not in ("kept", "all"):
        raise ValueError(f"gsm8k must be 'kept' or 'all', got {which!r}")
    return [r for r, k in zip(gsm8k, kept, strict=True) if k or which == "all"]


def sft_jobs(
    bases: dict[str, str],
    out: str | Path,
    gsm8k: Sequence[dict[str, Any]],
    kept: Sequence[bool],
    config: PostTrainingConfig,
    per_unit: int = 40,
) -> list[SftJob]:
    """One SFT job per base model ({"littlelearner": dir, "unfiltered": dir}), by `SFT_UNITS`:
    the same number of rows (sft_steps x sft_batch) for both; written to <out>/<model>/sft."""
    jobs = []
    n_rows = config.sft_steps * config.sft_batch
    for name, base in bases.items():
        units, which = SFT_UNITS[name]
        curriculum = curriculum_records(units, per_unit, config.seed + SFT_SEED_OFFSET, config.sft_registers)
        rows = sft_rows(curriculum, gsm8k_choice(gsm8k, kept, which), n_rows, config.gsm8k_share, config.seed)
        jobs.append(SftJob(str(base), str(Path(out) / name / "sft"), tuple(rows), config))
    return jobs


def grpo_pool(
    run: PostTrainingRun, gsm8k: Sequence[dict[str, Any]], kept: Sequence[bool], config: PostTrainingConfig
) -> list[dict[str, Any]]:
    """A run's GRPO candidates: pool_per_unit problems of each of its units (run seed apart from
    pretraining, SFT and evaluation) and pool_gsm8k GSM8K problems it may use."""
    curriculum = curriculum_records(
        run.pool_units, config.pool_per_unit, config.seed + POOL_SEED_OFFSET, (config.pool_register,)
    )
    allowed = gsm8k_choice(gsm8k, kept, run.gsm8k)
    extra = random.Random(config.seed).sample(allowed, min(config.pool_gsm8k, len(allowed)))
    return curriculum + extra


def grpo_jobs(
    out: str | Path,
    gsm8k: Sequence[dict[str, Any]],
    kept: Sequence[bool],
    evaluation: Evaluation,
    config: PostTrainingConfig,
    runs: Sequence[PostTrainingRun] = PAPER_RUNS,
) -> list[GrpoJob]:
    """One GRPO job per run, from <out>/<model>/sft (what `sft_jobs` writes), to <out>/<run>/grpo."""
    return [
        GrpoJob(
            run,
            str(Path(out) / run.model / "sft"),
            str(Path(out) / run.name / "grpo"),
            tuple(grpo_pool(run, gsm8k, kept, config)),
            evaluation,
            config,
        )
        for run in runs
    ]


def training_set(
    bases: dict[str, str],
    sft: Sequence[SftJob],
    gsm8k: Sequence[dict[str, Any]],
    kept: Sequence[bool],
    config: PostTrainingConfig,
    runs: Sequence[PostTrainingRun] = PAPER_RUNS,
) -> Any:
    """Everything a model of the comparison trains on, as one `evals.curriculum.TrainingSet`: each
    base model's pretraining text (its decoded shards), every SFT row and every run's GRPO pool. The
    held-out problems are drawn apart from all of it, so post-training is scored on unseen problems
    as pretraining is (a problem in the SFT rows or the GRPO pool would reward memorising it)."""
    from littlekit.evals import curriculum as ce

    texts = [row["prompt"] + row["completion"] for job in sft for row in job.rows]
    texts += [record["statement"] for run in runs for record in grpo_pool(run, gsm8k, kept, config)]
    union = ce.TrainingSet.of_texts(texts)
    for part in ce.model_training_sets(bases).values():
        if part is not None:
            union = union | part
    return union
