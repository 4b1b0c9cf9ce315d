"""Verified curriculum problems per core-second, beside an unverified template in the same process.

    python benchmarks/bench_curriculum.py [--per-unit 200] [--repeats 3] [--units all]

What each row measures (CPU time of this process, best of --repeats rounds that interleave the
rows; every pass starts with the re-derivation memo and SymPy's cache cleared, so no pass reuses
another's work):

- **template (unverified)**: `f"What is {a} + {b}?\\nAnswer: {a + b}"` with two `random.randint`
  draws: what a template generator does, asserting its answer, checking nothing.
- **ours, add_within_1000, verified**: the same skill through `littlekit.curriculum`: balanced
  operands, SymPy's sum, the column scratchpad checked against it, the record, and
  `audit.verify_record` (SymPy re-derivation from `expression`, grading by
  `littlekit.evals.answers`, the declared-vocabulary and K-5 checks).
- **ours, all units, generation only**: `generate(..., verify=False)`: SymPy still computes every
  answer inside the generators (`Integer`, `Rational`, `sqrt`), the derivations are cross-checked,
  but records are not re-derived.
- **ours, all units, verified** (the headline; goal >= 2,000/s per core): generation plus
  `verify_record` on every record, as `littlekit curriculum` runs by default.
- **ours, all units, verified, no memo**: the same with `audit.rederive`'s memo switched off, so
  every record's expression is parsed and evaluated by SymPy anew (repeated problems of the small
  units, 2 + 3 asked twice, otherwise hit the memo; the hit rate is printed).
- **ours, all units, full audit**: verified, plus the degenerate-problem detector and filter
  stage 4's `match_all` over every family (what the tests add on top).

The ratio printed is template rate / ours; the per-unit table lists the slowest units verified.
"""

from __future__ import annotations

import argparse
import random

import sympy

from littlekit.analysis.throughput import facts_line, machine_facts, timed


def template_baseline(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(100, 999), rng.randint(10, 999)
        out.append(f"What is {a} + {b}?\nAnswer: {a + b}")
    return out


def cold() -> None:
    """Forget what earlier passes computed: the re-derivation memo and SymPy's cache."""
    from littlekit.curriculum import audit

    if hasattr(audit.rederive, "cache_clear"):
        audit.rederive.cache_clear()
    sympy.core.cache.clear_cache()


def full_audit(records) -> int:
    from littlekit.curriculum import audit
    from littlekit.filter.symbolic.stage import match_all

    for record in records:  # verify_record already ran while generating
        audit.degenerate_reasons(record)
        match_all(record["text"])
    return len(records)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-unit", type=int, default=200, help="problems per unit per pass")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed passes; the fastest by CPU time is kept"
    )
    parser.add_argument("--units", default="all", help="K5, BEYOND, all or unit ids")
    parser.add_argument("--slowest", type=int, default=8, help="rows of the per-unit table")
    args = parser.parse_args(argv)
    if args.per_unit < 1 or args.repeats < 1:
        parser.error("--per-unit and --repeats must be at least 1")
    from littlekit.curriculum import audit
    from littlekit.curriculum.generate import generate
    from littlekit.curriculum.registry import UNITS
    from littlekit.curriculum.units import select_units

    print(facts_line(machine_facts(torch_threads=False)))
    units = select_units(args.units)
    n_all = args.per_unit * len(units)
    one = UNITS["add_within_1000"]
    records = generate(units, args.per_unit, seed=0, verify=False)

    def no_memo():
        memo, audit.rederive = audit.rederive, audit.rederive.__wrapped__  # every record anew
        try:
            return generate(units, args.per_unit, seed=0)
        finally:
            audit.rederive = memo

    methods = {
        "template (unverified)": lambda: template_baseline(n_all),
        "ours, add_within_1000, verified": lambda: generate([one], n_all, seed=0),
        "ours, all units, generation only": lambda: generate(units, args.per_unit, seed=0, verify=False),
        "ours, all units, verified": lambda: generate(units, args.per_unit, seed=0),
        "ours, all units, verified, no memo": no_memo,
        "ours, all units, full audit": lambda: (generate(units, args.per_unit, seed=0), full_audit(records)),
    }
    best_cpu: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeats):  # rounds interleave the methods, so load changes hit them all
        for name, run in methods.items():
            cold()
            wall, cpu, _ = timed(run)
            if name not in best_cpu or cpu < best_cpu[name][1]:
                best_cpu[name] = (wall, cpu)
    rows = [(name, n_all, wall, cpu) for name, (wall, cpu) in best_cpu.items()]
    base = n_all / best_cpu["template (unverified)"][1]
    verified = n_all / best_cpu["ours, all units, verified"][1]
    cold()
    generate(units, args.per_unit, seed=0)
    info = audit.rederive.cache_info()

    print(f"{len(units)} units, {args.per_unit} problems each per pass; best of {args.repeats} by CPU time")
    header = ("path", "problems", "wall s", "cpu s", "problems/s/core", "template / this")
    print("{:38s} {:>9s} {:>7s} {:>7s} {:>16s} {:>16s}".format(*header))
    for name, count, wall, cpu in rows:
        rate = count / cpu
        print(f"{name:38s} {count:9,d} {wall:7.2f} {cpu:7.2f} {rate:16,.0f} {base / rate:16,.1f}")
    hit = info.hits / max(1, info.hits + info.misses)
    print(f"re-derivation memo, one verified pass: {info.hits:,} hits, {info.misses:,} misses ({hit:.1%})")
    goal = "meets" if verified >= 2000 else "MISSES"
    print(f"verified generation: {verified:,.0f} problems/s per core, which {goal} the goal of 2,000")

    per_unit = []
    for unit in units:
        n = max(20, args.per_unit // 2)
        cold()
        _, cpu, _ = timed(lambda unit=unit, n=n: generate([unit], n, seed=1))
        per_unit.append((n / cpu, unit.id, unit.band))
    print(f"slowest units, verified ({max(20, args.per_unit // 2)} problems each, one cold pass):")
    for rate, unit_id, band in sorted(per_unit)[: args.slowest]:
        print(f"  {unit_id:36s} {band:6s} {rate:10,.0f} problems/s/core")
    print(facts_line(machine_facts(torch_threads=False)))


if __name__ == "__main__":
    main()
