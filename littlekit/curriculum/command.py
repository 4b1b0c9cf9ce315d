"""`littlekit curriculum`: write verified curriculum problems as JSONL, or list the units.

    littlekit curriculum --list
    littlekit curriculum --units all --per-unit 200 --seed 0 --out c.jsonl
    littlekit curriculum --units K5 --per-unit 1000 --format reversed --register prose \\
        --order curriculum --out k5.jsonl --review review.jsonl --mathcamps-root mc/

The same arguments write the same bytes. Every record is verified as it is made (SymPy
re-derivation, the grader, the declared vocabulary, the K-5 rules); a failure stops the command
with the record's id. `--review` writes the degenerate-problem log (empty when every unit's
constraints hold); `--mathcamps-root` writes the records as a MathCAMPS data root for
`littlekit.evals.mathcamps`. An existing output is never overwritten without `--force`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from littlekit.argtypes import UsageError, int_range, positive_int
from littlekit.io import sha256_file

PROG = "littlekit curriculum"


def add_curriculum_parser(subparsers) -> argparse.ArgumentParser:
    """Register `littlekit curriculum` on the CLI's subparsers."""
    from littlekit.curriculum.export import ORDERS
    from littlekit.curriculum.formats import FORMATS, REGISTERS
    from littlekit.curriculum.sampling import MODES

    p = subparsers.add_parser(
        "curriculum",
        help="write SymPy-verified K-8 math problems tied to CCSS standards (JSONL), or --list the units",
        description="Generate problems unit by unit, each answer derived by SymPy and re-derived "
        "independently, each text held to its unit's declared words and symbols.",
    )
    p.add_argument("--list", action="store_true", help="print the units table and exit")
    p.add_argument(
        "--units",
        default="all",
        help="K5, BEYOND, all, or comma-separated unit ids (see --list); default all",
    )
    p.add_argument("--per-unit", type=positive_int, default=100, help="problems per unit (default 100)")
    p.add_argument("--seed", type=int_range(0, 2**63 - 1), default=0, help="run seed (default 0)")
    p.add_argument("--format", choices=FORMATS, default="scratchpad", help="default scratchpad")
    p.add_argument("--register", choices=REGISTERS, default="compact", help="default compact")
    p.add_argument(
        "--sampling", choices=MODES, default="balanced", help="operand sampling (default balanced)"
    )
    p.add_argument(
        "--order", choices=ORDERS, default="unit", help="record order: by unit, grade-ordered, shuffled"
    )
    p.add_argument("--out", type=Path, help="JSONL file to write (required unless --list)")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    p.add_argument("--review", type=Path, help="also write the degenerate-problem review log (JSONL)")
    p.add_argument("--mathcamps-root", type=Path, help="also write a MathCAMPS data root of the records")
    p.add_argument("--no-verify", action="store_true", help="skip per-record verification (faster; unsafe)")
    return p


def _units(spec: str):
    from littlekit.curriculum.units import select_units

    try:
        return select_units(spec)
    except KeyError as exc:
        raise UsageError(f"--units: {exc.args[0]}", PROG) from None


def _check_outputs(args: argparse.Namespace) -> list[Path]:
    if args.out is None:
        raise UsageError("--out FILE.jsonl is required (or --list)", PROG)
    outputs = [
        args.out,
        args.review,
        args.mathcamps_root and args.mathcamps_root / "mathcamps" / "mathcamps.jsonl",
    ]
    outputs = [Path(p) for p in outputs if p is not None]
    resolved = [os.path.abspath(p) for p in outputs]
    if len(set(resolved)) != len(resolved):
        raise UsageError("--out, --review and --mathcamps-root must name different files", PROG)
    for path in outputs:
        if path.is_dir():
            raise UsageError(f"{path} is a folder; give a file name", PROG)
        if path.exists() and not args.force:
            raise UsageError(f"{path} exists; pass --force to overwrite it", PROG)
    return outputs


def print_units() -> None:
    from littlekit.curriculum.units import units_table

    rows = units_table()
    print(f"{'unit':34s} {'grade':5s} {'band':6s} {'ccss':20s} title")
    for row in rows:
        print(f"{row['id']:34s} {row['grade']:5s} {row['band']:6s} {row['ccss']:20s} {row['title']}")
    bands = [row["band"] for row in rows]
    print(f"{len(rows)} units: {bands.count('K5')} K5, {bands.count('BEYOND')} BEYOND")


def run_curriculum_command(args: argparse.Namespace) -> int:
    """List the units, or generate, verify and write the records."""
    if args.list:
        print_units()
        return 0
    units = _units(args.units)
    _check_outputs(args)
    from littlekit.curriculum import audit, export
    from littlekit.curriculum.generate import CurriculumError, generate

    started = time.perf_counter()
    try:
        records = generate(units, args.per_unit, args.seed, args.register, args.format, args.sampling,
                           verify=not args.no_verify)  # fmt: skip
    except CurriculumError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    records = export.mixture(records, args.order, seed=args.seed)
    seconds = time.perf_counter() - started
    count = export.write_jsonl(records, args.out, force=args.force)
    digest = sha256_file(args.out)
    bands = {u.band for u in units}
    print(
        f"wrote {count:,} records of {len(units)} units ({', '.join(sorted(bands))}) to {args.out} "
        f"in {seconds:.1f}s ({count / max(seconds, 1e-9):,.0f} problems/s, "
        f"{'verified' if not args.no_verify else 'NOT verified'}); sha256 {digest[:16]}"
    )
    if args.review:
        log = audit.review_log(records)
        export.write_jsonl(log, args.review, force=args.force)
        print(f"review log: {len(log)} degenerate problem(s) -> {args.review}")
    if args.mathcamps_root:
        path = export.write_mathcamps_root(records, args.mathcamps_root, force=args.force)
        root = str(args.mathcamps_root)
        print(f"MathCAMPS-shaped records -> {path} (littlekit.evals.mathcamps.load({root!r}) reads them)")
    return 0
