"""Accuracy of a causal LM on held-out problems of `littlekit.curriculum`, per unit, grade and band.

    from littlekit.evals import curriculum as ce
    records, excluded = ce.held_out_records(select_units("all"), per_unit=50, seed=0, fmt="reversed",
                                            training=ce.TrainingSet.read(["mixture.jsonl"]))
    results = ce.evaluate(records, ce.model_completer(model, tokenizer, "reversed"))
    ce.accuracy_tables(results)["band"]

**The held-out rule.** A training mixture's problems come from `curriculum.problem_seed(run_seed,
unit, index)`, a BLAKE2b hash of the text `"<run_seed>/<unit>/<index>"`, which always starts with
a digit. Evaluation problems come from `held_out_seed(seed, unit, index)`, the same hash of
`"heldout/<seed>/<unit>/<index>"`: no training hash input can equal an evaluation one, so the two
seed namespaces are disjoint whatever run seeds a mixture used (up to a 63-bit hash collision).
Distinct seeds can still draw the same problem (a unit with few distinct problems, "3 + 4"), so
when training files are given (`TrainingSet.read`, `--exclude`), an evaluation problem is also
dropped, and the unit's next held-out index drawn instead, when either register's statement of it
(or its seed) appears in them: the held-out problems are then disjoint from the training texts
too, not only by seed. A unit whose problems the training files exhaust yields fewer than
`per_unit` problems, and `excluded` says how many were dropped.

**Prompts match training.** A curriculum training text is `curriculum.formats.render(statement,
steps, answer, fmt)`; the prompt is that text up to where the answer begins: the statement and
`Answer:` (plain), `Reversed answer:` (reversed, whose digits the model writes backwards), or
the statement and a newline (scratchpad, where the model writes the steps and the `Answer:` line
itself). A completion is read back by the same format (`read_prediction`: reversed digits are
put back in order with `formats.read_answer`) and graded by `curriculum.answers.grade`, the
MathCAMPS grader the curriculum's own audit holds every gold answer to.

Any completion function `complete(prompts, n_samples) -> [[completion, ...], ...]` can be scored:
`model_completer` wraps `evals.generate.generate` (greedy at temperature 0, else seeded sampling,
so pass@k from `evals.passk`), and tests pass a constructed oracle.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from littlekit.curriculum.answers import grade
from littlekit.curriculum.formats import ANSWER_PREFIX, FORMATS, REVERSED_PREFIX, read_answer
from littlekit.curriculum.registry import BANDS, Problem, Unit
from littlekit.evals.seen import json_lines

HELD_OUT_NAMESPACE = "heldout"
MAX_DRAWS_PER_PROBLEM = 20  # held-out indices tried per wanted problem before a unit gives up
DEFAULT_MAX_NEW_TOKENS = {"plain": 24, "reversed": 24, "scratchpad": 320}
Completer = Callable[[Sequence[str], int], list[list[str]]]


def held_out_seed(seed: int, unit_id: str, index: int) -> int:
    """The seed of held-out problem `index` of `unit_id` for evaluation seed `seed`: the hash of
    `curriculum.problem_seed`, in the "heldout/" namespace no training seed can come from."""
    text = f"{HELD_OUT_NAMESPACE}/{seed}/{unit_id}/{index}"
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class TrainingSet:
    """What training files hold: statements (and text lines) and curriculum problem seeds."""

    statements: frozenset[str] = frozenset()
    seeds: frozenset[int] = frozenset()

    @classmethod
    def read(cls, paths: Iterable[str | os.PathLike]) -> TrainingSet:
        """JSONL files: each record's `statement`, every line of its `text`, and, for curriculum
        records (with a `unit`), its `seed`. A pretraining corpus with problems inside its
        documents counts too, since each problem's statement is a line of the document."""
        statements: set[str] = set()
        seeds: set[int] = set()
        for path in paths:
            for number, record in enumerate(json_lines(path), start=1):
                if not isinstance(record, dict):
                    raise ValueError(f"{path} line {number}: not a JSON object")
                if isinstance(record.get("statement"), str):
                    statements.add(_normal(record["statement"]))
                if isinstance(record.get("text"), str):
                    statements.update(_normal(line) for line in record["text"].splitlines() if line.strip())
                if "unit" in record and isinstance(record.get("seed"), int):
                    seeds.add(record["seed"])
        return cls(frozenset(statements), frozenset(seeds))

    @classmethod
    def of_texts(cls, texts: Iterable[str]) -> TrainingSet:
        """Training documents as text (a model's decoded shards, `evals.seen.TrainingText`): each
        document and every line of one."""
        statements: set[str] = set()
        for text in texts:
            statements.add(_normal(text))
            statements.update(_normal(line) for line in text.splitlines() if line.strip())
        return cls(frozenset(statements))

    def __or__(self, other: TrainingSet) -> TrainingSet:
        return TrainingSet(self.statements | other.statements, self.seeds | other.seeds)

    def holds(self, problem: Problem, seed: int) -> bool:
        """Whether the problem (in either register) or its seed is in the training files."""
        return (
            seed in self.seeds
            or _normal(problem.compact) in self.statements
            or _normal(problem.prose) in self.statements
        )


def held_out_records(
    units: Sequence[Unit],
    per_unit: int,
    seed: int = 0,
    register: str = "compact",
    fmt: str = "plain",
    mode: str = "balanced",
    training: TrainingSet | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(records, {unit: problems dropped as in the training files}): `per_unit` verified held-out
    problems of each unit (see the module doc), as curriculum records (ids `<unit>-heldout<seed>-<index>`)."""
    draw = held_out_draw(units, per_unit, seed, register, fmt, mode, training)
    return draw.unseen, draw.excluded


@dataclass
class HeldOutDraw:
    """The problems drawn for evaluation: `unseen` (what a verdict may use), `seen` (drawn but in
    the training text: up to `per_unit` per unit, what memorisation gives) and the count dropped
    per unit."""

    unseen: list[dict[str, Any]]
    seen: list[dict[str, Any]]
    excluded: dict[str, int]
    problems: dict[str, Problem] = field(default_factory=dict)  # each seen record's problem, by id


def held_out_draw(
    units: Sequence[Unit],
    per_unit: int,
    seed: int = 0,
    register: str = "compact",
    fmt: str = "plain",
    mode: str = "balanced",
    training: TrainingSet | None = None,
) -> HeldOutDraw:
    """`held_out_records`, keeping the problems the training text holds (records with
    `seen: True`, at most `per_unit` per unit) beside the unseen ones (`seen: False`)."""
    from littlekit.curriculum.generate import check_choices, check_verified, make_problem, to_record

    check_choices(register, fmt, mode)
    unseen: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    excluded: dict[str, int] = {}
    problems: dict[str, Problem] = {}
    for unit in units:
        found, dropped = 0, 0
        for index in range(per_unit * MAX_DRAWS_PER_PROBLEM):
            if found == per_unit:
                break
            problem_seed = held_out_seed(seed, unit.id, index)
            problem = make_problem(unit, problem_seed, mode)
            held = training is not None and training.holds(problem, problem_seed)
            if held and dropped >= per_unit:
                dropped += 1
                continue
            record = to_record(unit, problem, record_id=f"{unit.id}-heldout{seed}-{index:06d}",
                               seed=problem_seed, register=register, fmt=fmt, mode=mode)  # fmt: skip
            record = {**check_verified(record, unit), "seen": held}
            (seen if held else unseen).append(record)
            if held:
                problems[record["id"]] = problem
            dropped += held
            found += not held
        excluded[unit.id] = dropped
    return HeldOutDraw(unseen, seen, excluded, problems)


def prompt(record: dict[str, Any]) -> str:
    """The record's training text up to where its answer (plain, reversed) or steps (scratchpad)
    begin, without the space before the answer: a byte-level BPE joins that space to the number."""
    fmt = record["format"]
    if fmt == "scratchpad":
        return f"{record['statement']}\n"
    prefix = REVERSED_PREFIX if fmt == "reversed" else ANSWER_PREFIX
    return f"{record['statement']}\n{prefix.rstrip()}"


def read_prediction(completion: str, fmt: str) -> str | None:
    """The answer a completion of `prompt` gives, digits in reading order; None when it gives none
    (a scratchpad completion without an `Answer:` line, an empty answer)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "scratchpad":
        lines = [line.strip() for line in completion.splitlines()]
        answers = [line for line in lines if line.startswith(ANSWER_PREFIX.rstrip())]
        if not answers:
            return None
        line = answers[0][len(ANSWER_PREFIX.rstrip()) :].strip()
    else:
        line = completion.split("\n", 1)[0].strip()
    if not line:
        return None
    prefix = REVERSED_PREFIX if fmt == "reversed" else ANSWER_PREFIX
    return read_answer(prefix + line, fmt)


def is_correct(completion: str, record: dict[str, Any]) -> bool:
    """Whether a completion answers the record, read by its format and graded by `answers.grade`."""
    predicted = read_prediction(completion, record["format"])
    return predicted is not None and grade(ANSWER_PREFIX + predicted, record["answer"])


def model_completer(
    model: Any,
    tokenizer: Any,
    fmt: str,
    max_new_tokens: int | None = None,
    temperature: float = 0.0,
    top_p: float = 1.0,
    batch_size: int = 64,
    seed: int = 0,
    backend: str = "auto",
) -> Completer:
    """complete(prompts, n_samples) with `evals.generate.generate`: plain and reversed answers end
    at their line's end, a scratchpad once its `Answer:` line has ended, at a blank line or at EOS
    (`DEFAULT_MAX_NEW_TOKENS` by format)."""
    from littlekit.evals.generate import generate

    stop = ("\n\n",) if fmt == "scratchpad" else ("\n",)
    stop_lines = (ANSWER_PREFIX.rstrip(),) if fmt == "scratchpad" else ()  # only the first is read
    budget = max_new_tokens or DEFAULT_MAX_NEW_TOKENS[fmt]

    def complete(prompts: Sequence[str], n_samples: int) -> list[list[str]]:
        return generate(model, tokenizer, prompts, n_samples=n_samples, max_new_tokens=budget,
                        temperature=temperature, top_p=top_p, batch_size=batch_size, seed=seed,
                        stop=stop, backend=backend, stop_lines=stop_lines)  # fmt: skip

    return complete


RESULT_FIELDS = ("id", "unit", "grade", "band", "register", "format", "seed", "statement", "answer")


def evaluate(
    records: Sequence[dict[str, Any]],
    complete: Completer,
    n_samples: int = 1,
    prompts: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per record: RESULT_FIELDS, the prompt, n (samples), c (correct ones), and each
    sample's completion and read-back prediction. `prompts` replaces `prompt(record)` (for
    in-context examples before it), one per record."""
    if not records:
        raise ValueError("no problems to evaluate")
    prompts = [prompt(r) for r in records] if prompts is None else list(prompts)
    if len(prompts) != len(records):
        raise ValueError(f"{len(prompts)} prompts for {len(records)} records")
    completions = complete(prompts, n_samples)
    if len(completions) != len(records) or any(len(c) != n_samples for c in completions):
        raise ValueError(f"the completion function must return {n_samples} completion(s) per prompt")
    rows = []
    for record, text, samples in zip(records, prompts, completions, strict=True):
        row = {field: record[field] for field in RESULT_FIELDS}
        row["seen"] = bool(record.get("seen", False))  # in the model's training text (held_out_draw)
        row["prompt"] = text
        row["n"] = len(samples)
        row["c"] = sum(is_correct(s, record) for s in samples)
        row["predictions"] = [read_prediction(s, record["format"]) for s in samples]
        row["completions"] = list(samples)
        rows.append(row)
    return pd.DataFrame(rows)


def evaluate_models(
    models: Mapping[str, tuple[Any, Any]], records: Sequence[dict[str, Any]], fmt: str, **completer: Any
) -> pd.DataFrame:
    """`evaluate` for each {label: (model, tokenizer)} on the same records, greedy unless
    `completer` (model_completer's keywords) says otherwise; the rows stacked with a `model` column."""
    parts = [
        evaluate(records, model_completer(model, tokenizer, fmt, **completer)).assign(model=label)
        for label, (model, tokenizer) in models.items()
    ]
    return pd.concat(parts, ignore_index=True)


def accuracy_tables(results: pd.DataFrame, k: int = 1) -> dict[str, pd.DataFrame]:
    """{"unit", "grade", "band"}: pass@k (accuracy at k = 1) with its 95% CI and problem count, by
    `evals.mathcamps.accuracy_by`; units in the order evaluated, grades K..8, bands K5, BEYOND."""
    from littlekit.evals.mathcamps import accuracy_by

    order = list(dict.fromkeys(results["unit"]))
    units = accuracy_by(results, ["grade", "band", "unit"], k=k)
    units = units.assign(at=[order.index(u) for u in units["unit"]]).sort_values("at").drop(columns="at")
    bands = accuracy_by(results, "band", k=k)
    bands = bands.assign(at=[BANDS.index(b) for b in bands["band"]]).sort_values("at").drop(columns="at")
    return {
        "unit": units.reset_index(drop=True),
        "grade": accuracy_by(results, ["grade", "band"], k=k),
        "band": bands.reset_index(drop=True),
    }


def band_lines(results: pd.DataFrame, k: int = 1) -> list[str]:
    """`accuracy <band> = 0.xxx (n=...)` per band evaluated (pass@k lines when k > 1)."""
    label = "accuracy" if k == 1 else f"pass@{k}"
    table = accuracy_tables(results, k)["band"]
    return [f"{label} {row.band} = {row.pass_at_k:.3f} (n={row.problems})" for row in table.itertuples()]


def model_training_sets(models: Mapping[str, Any]) -> dict[str, TrainingSet | None]:
    """{label: TrainingSet of the model's own training text} for {label: model, (model, tokenizer)
    or folder}; None where the training text is not known (`evals.seen`)."""
    from littlekit.evals.seen import training_text

    sets: dict[str, TrainingSet | None] = {}
    for label, model in models.items():
        text = training_text(model[0] if isinstance(model, tuple) else model)
        sets[label] = None if text is None else TrainingSet(frozenset(text.lines))
    return sets


@dataclass
class HeldOutResults:
    """What `evaluate_held_out` scored: every model on the same unseen problems (`seen` False), and
    each model on the drawn problems its own training text holds (`seen` True, what memorisation
    gives); `draw` as drawn, `unknown` the labels whose training text is not known."""

    results: pd.DataFrame
    draw: HeldOutDraw
    unknown: list[str]

    def note(self) -> str:
        """One sentence: how many drawn problems a training text held, and what was scored."""
        unseen = self.results[~self.results["seen"]].groupby("model").size()
        dropped = sum(self.draw.excluded.values())
        common = int(unseen.max()) if len(unseen) else 0
        text = (f"{dropped:,} drawn problem(s) were in a model's training text and were redrawn; every "
                f"model answers the same {common:,} unseen problems")  # fmt: skip
        seen = self.results[self.results["seen"]].groupby("model").size()
        if len(seen):
            counts = ", ".join(f"{label} {n:,}" for label, n in seen.items())
            text += f"; apart, each model answers the drawn problems its own training text holds ({counts})"
        if self.unknown:
            text += f"; {', '.join(self.unknown)}: training text unknown (held out by seed only)"
        return text + "."


def evaluate_held_out(
    models: Mapping[str, tuple[Any, Any]],
    units: Sequence[Unit],
    per_unit: int,
    fmt: str,
    seed: int = 0,
    seen_per_unit: int | None = None,
    **completer: Any,
) -> HeldOutResults:
    """Held out means unseen, by construction: draw `per_unit` problems of each unit that no model's
    training text holds (`model_training_sets`), score every model on them, and score each model
    on up to `seen_per_unit` (default `per_unit`; 0: none) drawn problems per unit its own training
    text holds, marked `seen`. Greedy unless `completer` (model_completer's keywords) says otherwise."""
    sets = model_training_sets(models)
    known = [s for s in sets.values() if s is not None]
    union = None
    for training in known:
        union = training if union is None else union | training
    draw = held_out_draw(units, per_unit, seed, fmt=fmt, training=union)
    if not draw.unseen:
        raise ValueError("every drawn problem is in a model's training text: nothing unseen to evaluate")
    limit = per_unit if seen_per_unit is None else seen_per_unit
    parts = []
    for label, (model, tokenizer) in models.items():
        complete = model_completer(model, tokenizer, fmt, **completer)
        parts.append(evaluate(draw.unseen, complete).assign(model=label))
        own = sets[label]
        mine = [r for r in draw.seen if own is not None and own.holds(draw.problems[r["id"]], r["seed"])]
        mine = _first_per_unit(mine, limit)
        if mine:
            parts.append(evaluate(mine, complete).assign(model=label))
    unknown = [label for label, s in sets.items() if s is None]
    return HeldOutResults(pd.concat(parts, ignore_index=True), draw, unknown)


def _first_per_unit(records: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    kept = []
    for record in records:
        if counts.get(record["unit"], 0) < limit:
            counts[record["unit"]] = counts.get(record["unit"], 0) + 1
            kept.append(record)
    return kept


def seen_unseen_table(results: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Per group of `by`, band and `seen` (False: the unseen problems a verdict uses; True: those
    the model's training text holds, what memorisation gives): problems, correct (c summed over
    samples), accuracy (c / n) and its exact 95% binomial interval (`stats.clopper_pearson`)."""
    from littlekit.stats import clopper_pearson

    frame = results.assign(seen=results["seen"].astype(bool) if "seen" in results else False)
    rows = []
    for key, part in frame.groupby([*by, "band", "seen"], sort=False):
        correct, trials = int(part["c"].sum()), int(part["n"].sum())
        low, high = clopper_pearson(correct, trials)
        names = dict(zip([*by, "band", "seen"], key, strict=True))
        rows.append({**names, "problems": len(part), "correct": correct, "accuracy": correct / trials,
                     "exact low": low, "exact high": high})  # fmt: skip
    return pd.DataFrame(rows)
