"""The cascade: filter stages in order, each on what the previous one kept, and a report that adds up.

Every record read ends as exactly one `Outcome`:

    kept     it passed every stage
    dropped  a stage rejected it (stage name, reason code, that stage's scores)
    errored  it never became a document (a reason code from littlekit.io) or a stage raised on it
             ("stage_error:<stage>", with the exception as detail)

Records stream through in batches of `batch_size`, so memory stays bounded however long the
input is. A stage with its own `score_batch` (`Stage.batched`: the fastText and encoder stages)
is scored a batch at a time, and its `decide` one document at a time (an error there is that
document's). If the batched call itself raises (a CUDA error, out of memory, a broken model), the
run stops with a `BatchScoringError` naming the stage and the batch (its number, first and last
record), chained to the error: it is not retried one document at a time, which after a CUDA
error fails every later document as well. Any other stage is scored one document at a time (the
base's `score_batch` loop, with each document's error kept to that document: stage_error).

An `ErrorLimit` (`littlekit filter --max-error-rate`) stops a run whose stages error on too many
documents: a truncated model that loads but raises on every text must not finish "successfully",
nor an input most of whose records cannot be read (more than MAX_UNREADABLE_RATE, or than the
limit if higher, of the records read).
It is judged per stage, on the share of the documents entering the stage that errored: after each
batch once at least `min_documents` have entered, and at the end of the input over
max(entered, min_documents), so a small input with one stray error passes and one whose every
document errors does not. A breached limit, or an input file that cannot be read on
(`littlekit.io.InputFileError`), ends the run with `report.stopped` saying why; every outcome
handed out before is counted, so the report still adds up.

A stage's `prior_gate` (`littlekit.filter.base.PriorGate`) is a condition on the scores the
earlier stages gave a document, checked before the stage scores it. The encoder's agreement gate
(run the encoder only where the fastText band equals the AoA band, as in the paper) is one;
`decide_all` applies it for the cascade and the datatrove blocks alike.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from littlekit.filter.base import Decision, PriorGate, Stage
from littlekit.filter.registry import stage_specs
from littlekit.io import Document, InputFileError, Record, RecordError

KEPT, DROPPED, ERRORED = "kept", "dropped", "errored"
STAGE_ERROR = "stage_error"
MAX_DETAIL = 500
MAX_ERROR_RATE = 0.01  # littlekit filter --max-error-rate: the share of a stage's documents
MIN_ERROR_DOCUMENTS = 100  # judged mid-run once this many entered the stage; at the end over at least this
MAX_UNREADABLE_RATE = 0.5  # records read that are not documents; --max-error-rate may only raise it


class BatchScoringError(RuntimeError):
    """A stage's batched scoring call raised on a batch: the run stops (see the module docstring)."""


@dataclass(slots=True)
class Outcome:
    """What became of one input record."""

    record: Record
    status: str  # KEPT, DROPPED or ERRORED
    stage: str | None = None  # the stage that dropped it, or raised on it
    reason: str | None = None
    detail: str = ""
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage name -> its scores

    @property
    def id(self) -> str | None:
        return self.record.id

    @property
    def line(self) -> int:
        return self.record.line

    def to_row(self) -> dict[str, Any]:
        """A flat row for the rejected file: where the record came from and why it went."""
        record = self.record
        preview = record.text[:200] if isinstance(record, Document) else record.preview
        return {
            "id": record.id,
            "line": record.line,
            "outcome": self.status,
            "stage": self.stage,
            "reason": self.reason,
            "detail": self.detail,
            "scores": self.scores,
            "preview": preview,
        }


@dataclass
class StageRetention:
    """How many documents entered a stage and how many it passed on."""

    stage: str
    n_in: int
    n_out: int
    dropped: int
    errored: int
    seconds: float

    @property
    def fraction(self) -> float:
        return self.n_out / self.n_in if self.n_in else 0.0


@dataclass
class CascadeReport:
    """Counts of one cascade run. Invariant: kept + dropped + errored == read."""

    stages: list[str]
    read: int = 0
    kept: int = 0
    dropped_by_stage: dict[str, Counter] = field(default_factory=dict)  # stage -> reason -> n
    errored_by_reason: Counter = field(default_factory=Counter)
    stage_in: Counter = field(default_factory=Counter)
    stage_out: Counter = field(default_factory=Counter)
    stage_errored: Counter = field(default_factory=Counter)
    stage_seconds: Counter = field(default_factory=Counter)
    first_error: dict[str, str] = field(default_factory=dict)  # stage -> the first error's detail
    stopped: str | None = None  # why the run ended before (or failed at) the end of its input
    precision: dict[str, str] = field(default_factory=dict)  # stage -> what it scored in ("cuda/bfloat16")

    def __post_init__(self) -> None:
        for name in self.stages:
            self.dropped_by_stage.setdefault(name, Counter())

    @property
    def dropped(self) -> int:
        return sum(sum(reasons.values()) for reasons in self.dropped_by_stage.values())

    @property
    def errored(self) -> int:
        return sum(self.errored_by_reason.values())

    def add(self, outcome: Outcome) -> None:
        """Count one finished outcome (stage_in/out are counted by the cascade as it goes)."""
        self.read += 1
        if outcome.status == KEPT:
            self.kept += 1
        elif outcome.status == DROPPED:
            self.dropped_by_stage[outcome.stage][outcome.reason] += 1
        else:
            self.errored_by_reason[outcome.reason] += 1

    def retention(self) -> list[StageRetention]:
        """Per stage: documents in, documents out, dropped, errored, seconds spent."""
        return [
            StageRetention(
                name,
                self.stage_in[name],
                self.stage_out[name],
                sum(self.dropped_by_stage[name].values()),
                self.stage_errored[name],
                self.stage_seconds[name],
            )
            for name in self.stages
        ]

    @property
    def input_errors(self) -> int:
        """Records that never became documents (errored before the first stage)."""
        return sum(n for reason, n in self.errored_by_reason.items() if not reason.startswith(STAGE_ERROR))

    def problems(self) -> list[str]:
        """Every way the counts fail to add up; empty when the report is consistent."""
        found = []
        if self.kept + self.dropped + self.errored != self.read:
            found.append(
                f"kept {self.kept} + dropped {self.dropped} + errored {self.errored} != read {self.read}"
            )
        passed = self.read - self.input_errors  # documents handed to the first stage
        for row in self.retention():
            if row.n_in != passed:
                found.append(f"{row.stage}: {row.n_in} entered but {passed} were passed on to it")
            if row.n_in - row.n_out != row.dropped + row.errored:
                found.append(f"{row.stage}: in {row.n_in} - out {row.n_out} != dropped + errored")
            passed = row.n_out
        if passed != self.kept:
            found.append(f"{passed} passed the last stage but {self.kept} were kept")
        return found

    def check(self) -> None:
        """Raise AssertionError when the counts do not add up."""
        found = self.problems()
        if found:
            raise AssertionError("inconsistent cascade report: " + "; ".join(found))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (what `littlekit filter --report` writes)."""
        return {
            "read": self.read,
            "kept": self.kept,
            "dropped": self.dropped,
            "errored": self.errored,
            "consistent": not self.problems(),
            "stages": [
                {
                    "stage": row.stage,
                    "in": row.n_in,
                    "out": row.n_out,
                    "dropped": row.dropped,
                    "errored": row.errored,
                    "retention": round(row.fraction, 6),
                    "cumulative_retention": round(row.n_out / self.read, 6) if self.read else 0.0,
                    "seconds": round(row.seconds, 3),
                }
                for row in self.retention()
            ],
            "dropped_by_stage": {name: dict(reasons) for name, reasons in self.dropped_by_stage.items()},
            "errored_by_reason": dict(self.errored_by_reason),
            "first_stage_error": dict(self.first_error),
            "stopped": self.stopped,
            "precision": dict(self.precision),
        }

    def to_table(self):
        """One row per stage: in, out, dropped, errored, retention (out/in), cumulative (out/read)."""
        rows = self.to_dict()["stages"]
        columns = ["stage", "in", "out", "dropped", "errored", "retention", "cumulative_retention", "seconds"]
        return pd.DataFrame(rows, columns=columns)

    def reasons_table(self):
        """Long form: one row per (outcome, stage, reason) with its count."""
        rows = [
            {"outcome": DROPPED, "stage": name, "reason": reason, "count": n}
            for name, reasons in self.dropped_by_stage.items()
            for reason, n in sorted(reasons.items())
        ]
        rows += [
            {"outcome": ERRORED, "stage": _stage_of_error(reason), "reason": reason, "count": n}
            for reason, n in sorted(self.errored_by_reason.items())
        ]
        return pd.DataFrame(rows, columns=["outcome", "stage", "reason", "count"])

    def summary(self) -> str:
        """A printable retention report in the style of the released filter script."""
        n0 = max(self.read, 1)
        lines = [
            f"read    : {self.read:>10,}",
            f"  {'input errors':<16s}: {self.input_errors:>8,} ({100 * self.input_errors / n0:5.2f}%)",
        ]
        lines.append("retention after each stage:")
        for i, row in enumerate(self.retention(), start=1):
            lost = f"dropped {row.dropped:,}" + (f", errored {row.errored:,}" if row.errored else "")
            lost += f" (stage kept {100 * row.fraction:.1f}%)"
            lines.append(
                f"  {f'{i} {row.stage}':<16s}: {row.n_out:>8,} / {self.read:,} "
                f"({100 * row.n_out / n0:5.2f}%) -- {lost}  [{row.seconds:.1f}s]"
            )
        lines.append(
            f"kept    : {self.kept:>10,} ({100 * self.kept / n0:.2f}%)   "
            f"dropped: {self.dropped:,}   errored: {self.errored:,}"
        )
        for name, reasons in self.dropped_by_stage.items():
            for reason, n in reasons.most_common():
                lines.append(f"  dropped  {name:<10s} {reason:<28s} {n:>8,}")
        for reason, n in self.errored_by_reason.most_common():
            lines.append(f"  errored  {'':<10s} {reason:<28s} {n:>8,}")
        for name, detail in self.first_error.items():
            lines.append(f"  first error in {name}: {detail[:200]}")
        if self.problems():
            lines.append("WARNING: counts do not add up: " + "; ".join(self.problems()))
        if self.stopped:
            lines.append(f"STOPPED : {self.stopped}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ErrorLimit:
    """At most `max_rate` of the documents entering any stage may error (see the module docstring)."""

    max_rate: float = MAX_ERROR_RATE
    min_documents: int = MIN_ERROR_DOCUMENTS

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_rate <= 1.0:
            raise ValueError(f"max_rate must be a fraction between 0 and 1, got {self.max_rate}")
        if self.min_documents < 1:
            raise ValueError(f"min_documents must be at least 1, got {self.min_documents}")

    def breach(self, report: CascadeReport, final: bool) -> str | None:
        """Why the report's errors are over the limit, or None. final: the input is done.

        The records that never became documents (bad JSON, no text field, ...) count too, as a
        share of the records read, against max(max_rate, MAX_UNREADABLE_RATE): an input mostly
        unreadable (the wrong format or --text-field) is not a successful run, while the odd
        empty or broken record of a real corpus is only counted."""
        errors, read = report.input_errors, report.read
        rate = max(self.max_rate, MAX_UNREADABLE_RATE)
        if errors and (final or read >= self.min_documents) and errors > rate * max(read, self.min_documents):
            return (
                f"{errors:,} of the {read:,} records read could not be read as documents "
                f"({100 * errors / read:.1f}%, over the {rate:g} allowed"
                + ("" if final else f", judged once {self.min_documents:,} had been read")
                + ")"
            )
        for row in report.retention():
            if not row.errored or (not final and row.n_in < self.min_documents):
                continue
            if row.errored > self.max_rate * max(row.n_in, self.min_documents):
                share = row.errored / row.n_in
                detail = report.first_error.get(row.stage, "")
                return (
                    f"{row.errored:,} of the {row.n_in:,} documents that entered stage {row.stage} errored "
                    f"({100 * share:.1f}%, over --max-error-rate {self.max_rate:g}"
                    + ("" if final else f", judged once {self.min_documents:,} had entered")
                    + ")"
                    + (f"; the first: {detail[:300]}" if detail else "")
                )
        return None


def _stage_of_error(reason: str) -> str | None:
    return reason.split(":", 1)[1] if reason.startswith(STAGE_ERROR + ":") else None


class CascadeRun:
    """One pass of records through a cascade: iterate it for outcomes; `report` fills in as you go."""

    def __init__(
        self,
        cascade: Cascade,
        records: Iterable[Record],
        report: CascadeReport,
        error_limit: ErrorLimit | None = None,
    ):
        self.report = report
        self._outcomes = cascade._outcomes(records, report, error_limit)

    def __iter__(self) -> Iterator[Outcome]:
        return self._outcomes

    def consume(self) -> CascadeReport:
        """Run to the end without keeping outcomes; return the finished report."""
        for _ in self._outcomes:
            pass
        return self.report


class Cascade:
    """Filter stages applied in order; a document leaves at the first stage that drops it."""

    def __init__(self, stages: Sequence[Stage], batch_size: int = 1_000):
        names = [stage.name for stage in stages]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"stage names must be unique; repeated: {', '.join(repeated)}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        for position, stage in enumerate(stages):
            gate = stage.prior_gate
            if gate is None:
                continue
            missing = [name for name in gate.requires if name not in names[:position]]
            if missing:
                raise ValueError(
                    f"stage {stage.name!r} is gated on the scores of {', '.join(gate.requires)}, "
                    f"so they must run before it; not before it: {', '.join(missing)}"
                )
        self.stages = list(stages)
        self.batch_size = batch_size

    @property
    def names(self) -> list[str]:
        return [stage.name for stage in self.stages]

    def run(
        self,
        records: Iterable[Record],
        report: CascadeReport | None = None,
        error_limit: ErrorLimit | None = None,
    ) -> CascadeRun:
        """Stream records through the stages; iterate the result for one Outcome per record.

        With `error_limit`, the outcomes end early (after a whole batch) when the share of a
        stage's documents that errored is over it, and `report.stopped` says so; at the end of
        the input the limit is judged once more. An InputFileError from `records` is raised after
        the outcomes of the records read before it, with `report.stopped` set.
        """
        report = report or CascadeReport(self.names)
        report.precision.update(stage_precisions(self.stages))
        return CascadeRun(self, records, report, error_limit)

    def _outcomes(
        self, records: Iterable[Record], report: CascadeReport, error_limit: ErrorLimit | None = None
    ) -> Iterator[Outcome]:
        batch: list[Record] = []
        number = 0  # of the batch, from 1, as a BatchScoringError names it
        source = iter(records)
        while True:
            try:
                record = next(source)
            except StopIteration:
                break
            except InputFileError as exc:  # the records read so far still get their outcomes
                if batch:
                    yield from self._run_batch(batch, report, number + 1)
                report.stopped = f"the input could not be read on: {exc}"
                raise
            batch.append(record)
            if len(batch) >= self.batch_size:
                number += 1
                yield from self._run_batch(batch, report, number)
                batch = []
                if error_limit is not None:
                    report.stopped = error_limit.breach(report, final=False)
                    if report.stopped:
                        report.stopped = f"stopped after {report.read:,} records: {report.stopped}"
                        return
        if batch:
            yield from self._run_batch(batch, report, number + 1)
        if error_limit is not None:
            breach = error_limit.breach(report, final=True)
            if breach:
                report.stopped = f"at the end of the input ({report.read:,} records): {breach}"

    def _run_batch(self, batch: list[Record], report: CascadeReport, number: int = 1) -> list[Outcome]:
        """The batch's outcomes, counted in the report. A BatchScoringError leaves the report as it
        was before the batch (its counts still add up), with `report.stopped` saying why."""
        counters = (report.stage_in, report.stage_out, report.stage_errored, report.stage_seconds)
        before = [counter.copy() for counter in counters]
        first_error = dict(report.first_error)
        try:
            return self._decide_batch(batch, report, number)
        except BatchScoringError as exc:
            for counter, saved in zip(counters, before, strict=True):
                counter.clear()
                counter.update(saved)
            report.first_error = first_error
            report.stopped = f"stopped after {report.read:,} records: {exc}"
            raise

    def _decide_batch(self, batch: list[Record], report: CascadeReport, number: int) -> list[Outcome]:
        done: dict[int, Outcome] = {}
        scores: dict[int, dict[str, dict]] = {}
        live: list[int] = []
        for i, record in enumerate(batch):
            if isinstance(record, RecordError):
                done[i] = Outcome(record, ERRORED, None, record.reason, record.detail)
            else:
                live.append(i)
                scores[i] = {}
        for stage in self.stages:
            if not live:
                break
            live = self._apply(stage, batch, live, done, scores, report, number)
        for i in live:
            done[i] = Outcome(batch[i], KEPT, scores=scores[i])
        outcomes = [done[i] for i in range(len(batch))]
        for outcome in outcomes:
            report.add(outcome)
        return outcomes

    def _apply(self, stage, batch, live, done, scores, report, number: int = 1) -> list[int]:
        """Run one stage on the live documents; return the indices it keeps."""
        report.stage_in[stage.name] += len(live)
        start = time.perf_counter()
        first, last = batch[live[0]], batch[live[-1]]
        where = (
            f"batch {number} (records from line {first.line:,}, id {first.id!r}, "
            f"to line {last.line:,}, id {last.id!r})"
        )
        verdicts = decide_all(stage, [batch[i].text for i in live], [scores[i] for i in live], where)
        report.stage_seconds[stage.name] += time.perf_counter() - start
        kept = []
        for i, verdict in zip(live, verdicts, strict=True):
            if isinstance(verdict, BaseException):
                reason = f"{STAGE_ERROR}:{stage.name}"
                detail = f"{type(verdict).__name__}: {verdict}"[:MAX_DETAIL]
                done[i] = Outcome(batch[i], ERRORED, stage.name, reason, detail, scores[i])
                report.stage_errored[stage.name] += 1
                report.first_error.setdefault(stage.name, f"line {batch[i].line}: {detail}")
                continue
            scores[i][stage.name] = dict(verdict.scores)
            if verdict.keep:
                kept.append(i)
            else:
                reason = verdict.reason or "unspecified"
                done[i] = Outcome(batch[i], DROPPED, stage.name, reason, scores=scores[i])
        report.stage_out[stage.name] += len(kept)
        return kept


def stage_precisions(stages: Sequence[Stage]) -> dict[str, str]:
    """stage -> the precision it scores in, for the stages that say (the encoder's `precision`,
    e.g. "cpu/float32" or "cuda/bfloat16"): what a run's report records."""
    return {stage.name: stage.precision for stage in stages if getattr(stage, "precision", None)}


def decide_all(
    stage: Stage,
    texts: list[str],
    prior: Sequence[Mapping[str, Mapping[str, Any]]] | None = None,
    where: str | None = None,
) -> list[Decision | Exception]:
    """A decision (or the exception raised on that text) per text, batch-scored when the stage can.

    A stage's batched call (`score_batch` of a `Stage.batched` stage) that raises is not one
    text's error: BatchScoringError naming the stage and `where` (which batch: its number, first
    and last record), raised from the original exception.

    `prior`: per text, the scores the earlier stages gave it ({stage name: scores}). A stage with
    a `prior_gate` (see PriorGate) scores only the texts its gate opens for; the others are
    dropped with the gate's reason and scores, unscored. This is the one place a gate is applied,
    so the in-process cascade and the datatrove blocks gate alike.
    """
    gate: PriorGate | None = stage.prior_gate
    if gate is None:
        return _decide_texts(stage, texts, where)
    prior = [{}] * len(texts) if prior is None else prior
    if len(prior) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(prior)} prior scores")
    verdicts: list[Decision | Exception | None] = [None] * len(texts)
    passed: dict[int, dict[str, Any]] = {}
    for i, earlier in enumerate(prior):
        try:
            checked = dict(gate.check(earlier))
        except Exception as exc:  # e.g. an earlier stage's scores are missing
            verdicts[i] = exc
            continue
        if checked.get("gate_open"):
            passed[i] = checked
        else:
            verdicts[i] = Decision(False, gate.reason, checked)
    scored = _decide_texts(stage, [texts[i] for i in passed], where)
    for (i, checked), verdict in zip(passed.items(), scored, strict=True):
        if isinstance(verdict, Decision):
            verdict = Decision(verdict.keep, verdict.reason, {**verdict.scores, **checked})
        verdicts[i] = verdict
    return verdicts  # type: ignore[return-value]  # every slot is filled above


def _decide_texts(stage: Stage, texts: list[str], where: str | None = None) -> list[Decision | Exception]:
    # The base's score_batch is a loop over score: run that loop here, one guard per text, so a
    # failing text is neither retried with its neighbours nor costs them a second scoring.
    if not (stage.batched and texts):
        return [_guard(stage, text) for text in texts]
    try:
        batch_scores = list(stage.score_batch(texts))
    except Exception as err:  # a CUDA error or out of memory: every later batch would fail too
        raise BatchScoringError(_batch_failure(stage, len(texts), where, err)) from err
    if len(batch_scores) != len(texts):
        raise BatchScoringError(
            f"stage {stage.name} failed on {where or 'a batch'}: its batched scoring of {len(texts):,} "
            f"documents returned {len(batch_scores):,} scores"
        )
    return [_guard(stage.decide, s) for s in batch_scores]


def _batch_failure(stage: Stage, n: int, where: str | None, err: Exception) -> str:
    hint = ""
    if "out of memory" in str(err).lower():
        hint = "; a smaller batch (--encoder-batch-size, --batch-rows) needs less memory"
    return (
        f"stage {stage.name} failed on {where or 'a batch'}: its batched scoring of {n:,} documents "
        f"(device {stage.device}) raised {type(err).__name__}: {str(err)[:300]}; the run stops rather "
        f"than score the batch again one document at a time{hint}"
    )


def _guard(fn, arg) -> Decision | Exception:
    try:
        verdict = fn(arg)
    except Exception as exc:
        return exc
    if not isinstance(verdict, Decision):
        return TypeError(f"stage returned {type(verdict).__name__}, not a Decision")
    return verdict


def cascade_outcomes(
    cascade: Cascade, passages: pd.DataFrame, text_column: str = "text", id_column: str = "id"
) -> tuple[pd.DataFrame, CascadeReport]:
    """Run `cascade` over the passages; return (one row per passage, the cascade's report).

    The rows keep the frame's columns and add `status` (kept / dropped / errored), `stage` (the
    stage that dropped it or raised on it; None when kept), `reason`, `kept` (bool) and
    `exit_index` (position in the cascade of the stage it left at; len(stages) when kept), and the
    columns each registered stage's declaration keeps of its scores (`StageSpec.outcome_columns`,
    NaN where it did not score the passage): `<stage>_p_k5` for the classifiers, the P(K5) their
    keep rule reads (for an encoder with a grade head, the head's P3(K5); the encoder's own P(K5) is
    then `<stage>_model_p_k5`), `aoa_p95` (stage 1's 95th-percentile AoA) and
    `frequency_blocked_share` (stage 5's share of blocklisted tokens), so a
    threshold can be swept without re-scoring
    (`littlekit.fit.operating_point.apply_operating_point`). The report is checked: its counts must
    add up.
    """
    if passages[id_column].duplicated().any():
        raise ValueError(f"column {id_column!r} has duplicate ids; each passage needs its own")
    documents = [
        Document(str(pid), str(text), line=i + 1)
        for i, (pid, text) in enumerate(zip(passages[id_column], passages[text_column], strict=True))
    ]
    run = cascade.run(documents)
    outcomes = list(run)
    run.report.check()
    position = {name: i for i, name in enumerate(cascade.names)}
    frame = passages.reset_index(drop=True).copy()
    frame["status"] = [o.status for o in outcomes]
    frame["stage"] = [o.stage for o in outcomes]
    frame["reason"] = [o.reason for o in outcomes]
    frame["kept"] = frame["status"].eq(KEPT)
    # an input error (no stage) counts as read (raw) but leaves at the first stage
    frame["exit_index"] = [
        len(cascade.names) if o.status == KEPT else position.get(o.stage, 0) for o in outcomes
    ]
    for name in cascade.names:  # what each stage's declaration keeps of its scores, to re-decide later
        spec = stage_specs().get(name)  # a stage built by hand, never registered, keeps nothing
        declared = None if spec is None else spec.outcome_columns
        if declared is None:
            continue
        rows = [declared(o.scores.get(name) or {}) for o in outcomes]
        for column in dict.fromkeys(key for row in rows for key in row):
            frame[column] = [float(row.get(column, np.nan)) for row in rows]
    return frame, run.report
