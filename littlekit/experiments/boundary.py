"""BoundaryEvo at the K-5 boundary: capability-boundary data selection for a student whose
pretraining lacks the material (the BoundaryEvo preprint, Section 3).

Stage 1 (`prime`): judge-free priming, SFT on K0 teacher trajectories that pass basic validity
checks. Stage 2 (`evolve`), R rounds: the student and a fixed expert each sample on a candidate
pool; per question the student's score sˢ, the expert's sᵉ (shares of correct samples) and the
gap g = sᵉ − sˢ; a question is accepted (`accepted`, the preprint's rule (5)) when sᵉ ≥ τₑ,
sˢ < τₛ, g ≥ τ_g and the analyzer's quality and validity checks pass; the round's K questions are
chosen replay-first (`replay_first`, (6)-(7)): accepted questions the previous round trained on,
up to a replay quota, then novel ones ranked by quality and gap; every chosen question gets L fresh
teacher rollouts, kept only when verified against the reference answer (`verified_rollouts`,
(8)-(9)); the student is fine-tuned on one verified rollout per question with the loss on the
response only ((10): TRL's prompt/completion SFT).

The roles are all real and local. **Teacher**: the curriculum's derived step-by-step solutions
(`curriculum_teacher`: rollout k renders the problem in register k, compact or prose; a verified
generator, the ideal teacher). **Expert**: any checkpoint (chapter 16's post-trained UNFILTERED by
default), or the teacher itself (`TEACHER_EXPERT`, sᵉ = 1). **Analyzer**: the curriculum's audit
(`analyze`: quality = the record re-derives and grades, clear = no degenerate-problem reason,
answerable = a gold answer the grader reads; no LLM judge runs offline). Baselines with the same
start checkpoint and budget (`METHODS`): "random" (K pool questions at random) and "error" (the
LLM2LLM rule: questions the student gets wrong, the least solved first).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from littlekit.experiments import posttraining as pt

METHODS = ("boundary", "random", "error")
PRIMING_SEED, POOL_SEED = 4, 5  # run seeds apart from pretraining (0), SFT (1), GRPO (2) and ICL shots (3)
TEACHER_EXPERT = "teacher"
TEACHER_REGISTERS = ("compact", "prose")
PAPER_FINDING = (
    "BoundaryEvo reports large gains from 1,000 examples selected at the student's capability "
    "boundary, on students whose pretraining already held the material; the LittleLearner paper "
    "finds that post-training does not move LittleLearner past K-5 (Section 4.2)."
)


@dataclass(frozen=True)
class BoundaryConfig:
    """The preprint's settings (K0 = 100, a 2,000-question pool, K = 300, 3 rounds, L >= 2, 5 SFT
    epochs per update, tau_g = 0.2) scaled to a micro model on one core; tau_e and tau_s, which it
    does not state, are ours."""

    k0: int = 100  # priming trajectories (Stage 1)
    pool: int = 64  # candidate questions per round (the preprint: 2,000)
    budget: int = 16  # K, questions trained on per round (the preprint: 300)
    rounds: int = 3
    rollouts: int = 2  # L teacher rollouts per chosen question
    samples: int = 4  # samples per question for the student's and the expert's scores
    epochs: int = 3  # SFT epochs per update (the preprint: 5)
    tau_e: float = 0.75
    tau_s: float = 0.5
    tau_g: float = 0.2
    tau_q: float = 1.0
    replay_quota: float = 0.5  # share of the budget replayed questions may fill
    sft_batch: int = 16
    sft_lr: float = 3e-4
    temperature: float = 1.0
    max_new_tokens: int = 96
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("tau_e", "tau_s", "tau_q", "replay_quota"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.rollouts < 1 or self.budget < 1 or self.pool < 1 or self.samples < 1:
            raise ValueError("rollouts, budget, pool and samples must be positive")


# --- the analyzer and the acceptance rule -----------------------------------------------------------


def analyze(record: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's assessment of a question from the curriculum's own checks: quality q (1.0
    when the record re-derives and its answer grades, else 0.0), clear (no degenerate-problem
    reason) and answerable (a gold answer the grader can read)."""
    from littlekit.curriculum.answers import grade
    from littlekit.curriculum.audit import degenerate_reasons, rederivation_problems

    answer = str(record.get("answer") or "").strip()
    try:
        answerable = bool(answer) and grade(f"Answer: {answer}", answer)
    except ValueError:
        answerable = False
    quality = 1.0 if answerable and not rederivation_problems(record) else 0.0
    return {"quality": quality, "clear": not degenerate_reasons(record), "answerable": answerable}


def accepted(scores: dict[str, Any], config: BoundaryConfig) -> bool:
    """The preprint's rule (5): sᵉ ≥ τₑ, sˢ < τₛ, g ≥ τ_g, q ≥ τ_q, clear and answerable."""
    return (
        scores["expert"] >= config.tau_e
        and scores["student"] < config.tau_s
        and scores["expert"] - scores["student"] >= config.tau_g
        and scores["quality"] >= config.tau_q
        and bool(scores["clear"])
        and bool(scores["answerable"])
    )


def replay_first(
    accepted_ids: Sequence[str], scores: dict[str, dict[str, Any]], previous: set[str], config: BoundaryConfig
) -> tuple[list[str], list[str]]:
    """(replayed, novel) ids, together at most `budget`: accepted questions the previous round
    trained on, up to replay_quota of the budget (largest gap first), then novel accepted ones
    ranked by quality, then gap, then id."""
    quota = int(config.budget * config.replay_quota)

    def gap(i: str) -> float:
        return scores[i]["expert"] - scores[i]["student"]

    replay = sorted((i for i in accepted_ids if i in previous), key=lambda i: (-gap(i), i))[:quota]
    novel = sorted(
        (i for i in accepted_ids if i not in previous), key=lambda i: (-scores[i]["quality"], -gap(i), i)
    )
    return replay, novel[: config.budget - len(replay)]


def baseline_choice(
    method: str,
    ids: Sequence[str],
    scores: dict[str, dict[str, Any]],
    config: BoundaryConfig,
    round_index: int,
) -> list[str]:
    """The baselines' K questions: "random" from the whole pool; "error" (LLM2LLM) among those the
    student gets wrong (sˢ < τₛ), the least solved first."""
    if method == "random":
        return random.Random(config.seed * 1000 + round_index).sample(list(ids), min(config.budget, len(ids)))
    if method == "error":
        wrong = [i for i in ids if scores[i]["student"] < config.tau_s]
        return sorted(wrong, key=lambda i: (scores[i]["student"], i))[: config.budget]
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")


# --- the teacher and verification -----------------------------------------------------------------

Teacher = Callable[[dict[str, Any], int], dict[str, Any]]


def curriculum_teacher(record: dict[str, Any], k: int) -> dict[str, Any]:
    """Rollout k of the ideal teacher: the problem re-derived by its unit's generator and written
    in register TEACHER_REGISTERS[k % 2] (its steps and answer derived, not sampled)."""
    from littlekit.curriculum.generate import make_problem, to_record
    from littlekit.curriculum.registry import UNITS

    unit = UNITS[record["unit"]]
    problem = make_problem(unit, record["seed"], record.get("sampling", "balanced"))
    register = TEACHER_REGISTERS[k % len(TEACHER_REGISTERS)]
    return to_record(
        unit,
        problem,
        record_id=f"{record['id']}-rollout{k}",
        seed=record["seed"],
        register=register,
        fmt="scratchpad",
        mode=record.get("sampling", "balanced"),
    )


def verified(rollout: dict[str, Any], reference: str) -> bool:
    """The preprint's (9): the rollout's final answer passes the grader against the reference."""
    from littlekit.evals.curriculum import is_correct

    return is_correct(pt.split_text(rollout)["completion"], {"answer": reference, "format": "scratchpad"})


def verified_rollouts(
    records: Sequence[dict[str, Any]], teacher: Teacher, rollouts: int
) -> tuple[list[dict[str, Any]], int]:
    """(one verified rollout per record that has one, rollouts rejected): L rollouts each."""
    kept, rejected = [], 0
    for record in records:
        good = []
        for k in range(rollouts):
            rollout = teacher(record, k)
            if verified(rollout, record["answer"]):
                good.append(rollout)
            else:
                rejected += 1
        if good:
            kept.append(good[0])
    return kept, rejected


def valid_trajectory(record: dict[str, Any]) -> bool:
    """Stage 1's basic validity check: a statement, steps and an answer line the grader reads."""
    return bool(record["statement"].strip()) and analyze(record)["answerable"]


# --- scores -----------------------------------------------------------------------------------------


def sample_scores(
    path: str, records: Sequence[dict[str, Any]], config: BoundaryConfig, seed: int
) -> list[float]:
    """Each record's share of correct answers in `samples` sampled completions of the checkpoint."""
    from littlekit.evals.models import load_causal_lm

    model, tokenizer = load_causal_lm(path)
    counts = pt.pass_counts(
        model, tokenizer, records, config.samples, config.temperature, config.max_new_tokens, seed
    )
    return [count / config.samples for count in counts]


def question_scores(
    pool: Sequence[dict[str, Any]], student: Sequence[float], expert: Sequence[float]
) -> dict[str, dict[str, Any]]:
    """{id: student score, expert score, quality, clear, answerable} per pool question."""
    return {
        record["id"]: {"student": s, "expert": e, **analyze(record)}
        for record, s, e in zip(pool, student, expert, strict=True)
    }


# --- one evolution run -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvolveJob:
    """One student under one selection method from the same primed checkpoint."""

    student: str  # label
    method: str
    primed: str  # the Stage 1 checkpoint
    out: str
    pool: tuple[dict[str, Any], ...]
    expert_scores: tuple[float, ...]
    evaluation: tuple[dict[str, Any], ...] = ()
    config: BoundaryConfig = field(default_factory=BoundaryConfig)
    name: str = ""  # how results name this run (default: the method), e.g. "boundary, teacher expert"

    @property
    def label(self) -> str:
        return self.name or self.method


def sft_config(config: BoundaryConfig, n_rows: int) -> pt.PostTrainingConfig:
    """The SFT settings of one update: `epochs` passes over n_rows rows."""
    steps = max(1, -(-n_rows * config.epochs // config.sft_batch))
    return pt.PostTrainingConfig(
        sft_steps=steps, sft_batch=config.sft_batch, sft_lr=config.sft_lr, seed=config.seed
    )


def fine_tune(start: str, trajectories: Sequence[dict[str, Any]], out: Path, config: BoundaryConfig) -> str:
    """SFT of `start` on the trajectories (`epochs` passes, loss on the response), saved to `out`."""
    rows = [pt.split_text(t) for t in trajectories] * config.epochs
    random.Random(config.seed).shuffle(rows)
    return str(pt.run_sft(start, rows, out, sft_config(config, len(trajectories))))


def evaluate_checkpoint(path: str, records: Sequence[dict[str, Any]], **columns: Any) -> Any:
    """Greedy `evals.curriculum` rows of the checkpoint on `records`, with `columns` added."""
    from littlekit.evals.curriculum import evaluate, model_completer
    from littlekit.evals.models import load_causal_lm

    model, tokenizer = load_causal_lm(path)
    return evaluate(records, model_completer(model, tokenizer, "scratchpad")).assign(**columns)


def evolve(job: EvolveJob, teacher: Teacher = curriculum_teacher) -> dict[str, Any]:
    """Stage 2 for one student and method: per round the pool scored, the questions chosen, the
    verified rollouts distilled, and the new checkpoint's held-out results (column `round`);
    the rounds are written to <out>/summary.json."""
    import pandas as pd

    pt.quiet_trainers()
    config, out = job.config, Path(job.out)
    current, previous, rounds, results = job.primed, set(), [], []
    ids = [r["id"] for r in job.pool]
    by_id = {r["id"]: r for r in job.pool}
    for t in range(1, config.rounds + 1):
        student = sample_scores(current, job.pool, config, config.seed + t)
        scores = question_scores(job.pool, student, job.expert_scores)
        accepted_ids = [i for i in ids if accepted(scores[i], config)]
        if job.method == "boundary":
            replay, novel = replay_first(accepted_ids, scores, previous, config)
            chosen = replay + novel
        else:
            replay, chosen = [], baseline_choice(job.method, ids, scores, config, t)
        kept, rejected = verified_rollouts([by_id[i] for i in chosen], teacher, config.rollouts)
        if kept:
            current = fine_tune(current, kept, out / f"round-{t}", config)
        rounds.append(
            {
                "round": t,
                "checkpoint": current,
                "accepted": len(accepted_ids),
                "chosen": len(chosen),
                "replayed": len(replay),
                "verified": len(kept),
                "rejected_rollouts": rejected,
                "trained": bool(kept),
                "chosen_ids": chosen,
                "student_scores": student,
            }
        )
        if job.evaluation:
            results.append(evaluate_checkpoint(current, job.evaluation, round=t))
        previous = set(chosen)
    summary = {
        "student": job.student,
        "method": job.label,
        "primed": job.primed,
        "final": current,
        "rounds": rounds,
        "config": asdict(config),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    frame = pd.concat(results, ignore_index=True) if results else pd.DataFrame()
    return {
        **summary,
        "results": frame.assign(student=job.student, method=job.label) if len(frame) else frame,
    }


@dataclass(frozen=True)
class PrimeJob:
    """Stage 1 for one student: SFT of its base checkpoint on D0, then the primed model's
    held-out results (round 0)."""

    student: str
    base: str
    out: str
    trajectories: tuple[dict[str, Any], ...]
    evaluation: tuple[dict[str, Any], ...] = ()
    config: BoundaryConfig = field(default_factory=BoundaryConfig)


@dataclass(frozen=True)
class ExpertJob:
    """The fixed expert's scores on the pool (once: neither changes between rounds)."""

    path: str
    pool: tuple[dict[str, Any], ...]
    config: BoundaryConfig = field(default_factory=BoundaryConfig)


def run_job(job: PrimeJob | ExpertJob | EvolveJob) -> dict[str, Any]:
    """One job for `littlekit.processes.side_by_side`."""
    pt.quiet_trainers()
    if isinstance(job, EvolveJob):
        return evolve(job)
    if isinstance(job, ExpertJob):
        if job.path == TEACHER_EXPERT:
            return {"expert_scores": [1.0] * len(job.pool)}
        return {"expert_scores": sample_scores(job.path, job.pool, job.config, job.config.seed)}
    primed = fine_tune(job.base, job.trajectories, Path(job.out), job.config)
    results = (
        evaluate_checkpoint(primed, job.evaluation, round=0, student=job.student) if job.evaluation else None
    )
    return {"student": job.student, "primed": primed, "results": results}


def run_jobs(jobs: Sequence[PrimeJob | ExpertJob | EvolveJob], processes: int = 2) -> list[dict[str, Any]]:
    """`run_job` for each job, `processes` at a time with one thread each; results in order."""
    from littlekit.processes import side_by_side

    return side_by_side(run_job, list(jobs), processes)


def student_training_set(
    students: Mapping[str, str],
    questions: Sequence[dict[str, Any]],
    teacher: Teacher = curriculum_teacher,
    rollouts: int = len(TEACHER_REGISTERS),
) -> tuple[Any, list[str]]:
    """(an `evals.curriculum.TrainingSet`, labels whose pretraining text is unknown): everything a
    student of this chapter trains on, which its held-out problems are drawn apart from. Each
    student's pretraining text (what its model folder declares, `evals.curriculum.
    model_training_sets`) and every pool and priming question, as the statements of its first
    `rollouts` teacher trajectories (one per register: Stage 1 and every round fine-tune on them)
    and its problem seed."""
    from littlekit.evals.curriculum import TrainingSet, model_training_sets

    statements = [teacher(record, k)["statement"] for record in questions for k in range(rollouts)]
    union = TrainingSet.of_texts(statements) | TrainingSet(seeds=frozenset(r["seed"] for r in questions))
    unknown = []
    for label, part in model_training_sets(dict(students)).items():
        if part is None:
            unknown.append(label)
        else:
            union = union | part
    return union, unknown


def priming_set(
    records: Sequence[dict[str, Any]], teacher: Teacher = curriculum_teacher
) -> list[dict[str, Any]]:
    """Stage 1's D0: one teacher trajectory per seed question, kept after the basic validity
    check only (no verification, no judge)."""
    return [rollout for rollout in (teacher(r, 0) for r in records) if valid_trajectory(rollout)]
