"""From units to records: seeded, one problem per (seed, unit, index), verified as it is made.

Every problem has its own seed, `problem_seed(run_seed, unit_id, index)` (a BLAKE2b hash), so a
unit's problems do not depend on which other units run, and `make_record(unit, record["seed"],
...)` rebuilds any record exactly. Records are plain dicts with a fixed key order (`FIELDS`), so
JSONL written from them is byte-identical for the same arguments.

Generation applies one shared constraint: a problem whose answer already appears, as a whole
number, in either register's statement is redrawn (the degenerate-problem rule MathCAMPS'
filter also applies); each unit adds its own constraints for the other degenerate shapes. With
`verify=True` every record goes through `audit.verify_record` (SymPy re-derivation from
`expression`, grading by `littlekit.curriculum.answers`, declared-vocabulary and K-5 checks) and a
failure stops generation with the record and what failed.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator
from typing import Any

from littlekit.curriculum.answers import answer_in_statement
from littlekit.curriculum.formats import FORMATS, REGISTERS, render
from littlekit.curriculum.registry import Problem, Unit
from littlekit.curriculum.sampling import MODES, Draw

FIELDS: tuple[str, ...] = (
    "id",
    "unit",
    "ccss",
    "grade",
    "band",
    "register",
    "format",
    "statement",
    "steps",
    "answer",
    "seed",
    "expression",
    "text",
    "sampling",
    "carries",
    "digits",
)
MAX_ATTEMPTS = 200


class CurriculumError(RuntimeError):
    """A generated problem failed verification: a bug in a unit, never a property of the data."""


def problem_seed(run_seed: int, unit_id: str, index: int) -> int:
    """The seed of problem `index` of `unit_id` in run `run_seed` (63 bits, stable across runs)."""
    digest = hashlib.blake2b(f"{run_seed}/{unit_id}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def make_problem(unit: Unit, seed: int, mode: str = "balanced") -> Problem:
    """The problem of one seed: the unit's generator on a fresh RNG, redrawn while the answer
    repeats a number of the statement."""
    draw = Draw(random.Random(seed), mode)
    for _ in range(MAX_ATTEMPTS):
        problem = unit.generate(draw)
        if not (
            answer_in_statement(problem.compact, problem.answer)
            or answer_in_statement(problem.prose, problem.answer)
        ):
            return problem
    raise CurriculumError(
        f"unit {unit.id}: no problem without the answer in its statement in {MAX_ATTEMPTS} draws"
    )


def to_record(
    unit: Unit, problem: Problem, *, record_id: str, seed: int, register: str, fmt: str, mode: str
) -> dict[str, Any]:
    """One record (keys in FIELDS order) of a problem in a register and a format."""
    statement = problem.compact if register == "compact" else problem.prose
    return {
        "id": record_id,
        "unit": unit.id,
        "ccss": list(unit.ccss),
        "grade": unit.grade,
        "band": unit.band,
        "register": register,
        "format": fmt,
        "statement": statement,
        "steps": list(problem.steps),
        "answer": problem.answer,
        "seed": seed,
        "expression": problem.expression,
        "text": render(statement, problem.steps, problem.answer, fmt),
        "sampling": mode,
        "carries": problem.carries,
        "digits": list(problem.digits),
    }


def check_choices(register: str, fmt: str, mode: str) -> None:
    for name, value, choices in (
        ("register", register, REGISTERS),
        ("format", fmt, FORMATS),
        ("sampling", mode, MODES),
    ):
        if value not in choices:
            raise ValueError(f"unknown {name} {value!r}; choose from {', '.join(choices)}")


def make_record(
    unit: Unit,
    seed: int,
    register: str = "compact",
    fmt: str = "scratchpad",
    mode: str = "balanced",
    record_id: str | None = None,
) -> dict[str, Any]:
    """The record of one problem seed (what `generate` writes for that seed)."""
    check_choices(register, fmt, mode)
    problem = make_problem(unit, seed, mode)
    return to_record(unit, problem, record_id=record_id or f"{unit.id}-{seed:016x}", seed=seed,
                     register=register, fmt=fmt, mode=mode)  # fmt: skip


def generate_unit(
    unit: Unit,
    n: int,
    seed: int = 0,
    register: str = "compact",
    fmt: str = "scratchpad",
    mode: str = "balanced",
    verify: bool = True,
) -> Iterator[dict[str, Any]]:
    """`n` records of one unit for run seed `seed` (ids `<unit>-<seed>-<index>`)."""
    check_choices(register, fmt, mode)
    for index in range(n):
        yield record_at(unit, index, seed, register, fmt, mode, verify)


def record_at(
    unit: Unit,
    index: int,
    seed: int = 0,
    register: str = "compact",
    fmt: str = "scratchpad",
    mode: str = "balanced",
    verify: bool = True,
) -> dict[str, Any]:
    """Record `index` of `unit` for run seed `seed`: made from its own seed, so any record can be
    made alone, in any order (a shuffled mixture is written without holding the others)."""
    problem_id = problem_seed(seed, unit.id, index)
    problem = make_problem(unit, problem_id, mode)
    record = to_record(unit, problem, record_id=f"{unit.id}-{seed}-{index:06d}", seed=problem_id,
                       register=register, fmt=fmt, mode=mode)  # fmt: skip
    return check_verified(record, unit) if verify else record


def check_verified(record: dict[str, Any], unit: Unit) -> dict[str, Any]:
    """The record, once `audit.verify_record` finds nothing wrong with it; else CurriculumError."""
    from littlekit.curriculum.audit import verify_record

    problems = verify_record(record, unit)
    if problems:
        raise CurriculumError(f"record {record['id']} failed verification: {'; '.join(problems)}")
    return record


def generate(
    units: Iterable[Unit],
    per_unit: int,
    seed: int = 0,
    register: str = "compact",
    fmt: str = "scratchpad",
    mode: str = "balanced",
    verify: bool = True,
) -> list[dict[str, Any]]:
    """`per_unit` records of every unit, unit after unit in the order given."""
    return [
        record
        for unit in units
        for record in generate_unit(unit, per_unit, seed, register, fmt, mode, verify)
    ]
