"""`littlekit curriculum`: write verified curriculum problems as JSONL, or list the units.

    littlekit curriculum --list
    littlekit curriculum --units all --per-unit 200 --seed 0 --out c.jsonl
    littlekit curriculum --units K5 --per-unit 1000 --format reversed --register prose \\
        --order curriculum --out k5.jsonl --review review.jsonl --mathcamps-root mc/

The same arguments write the same bytes. Every record is verified as it is made (SymPy
re-derivation, the grader, the declared vocabulary, the K-5 rules); a failure stops the command
with the record's id. `--review` writes the degenerate-problem log (empty when every unit's
constraints hold); `--mathcamps-root` writes the records as a MathCAMPS data root for
`littlekit.evals.mathcamps`. An existing output is never overwritten without `--force`; every
output is checked before any problem is made (not a folder, no two of them one file, through a
symlink or a hard link, each one's folder writable), and --per-unit is at most
1,000,000 (the records are held in memory, a few kB each, until they are written). The outputs
are held while the command runs (`littlekit.swap.hold_output`): a second run into one of them is
refused with the first one's pid.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from littlekit.argtypes import UsageError, int_range
from littlekit.io import sha256_file

PROG = "littlekit curriculum"
MAX_PER_UNIT = 1_000_000  # problems per unit: every unit at this is ~57M records, held in memory


def per_unit_count(text: str) -> int:
    """--per-unit: a whole number from 1 to MAX_PER_UNIT."""
    bounds = f"at least 1 and at most {MAX_PER_UNIT:,}"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number {bounds}, got {text!r}") from None
    if not 1 <= value <= MAX_PER_UNIT:
        raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
    return value


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
    p.add_argument(
        "--per-unit",
        type=per_unit_count,
        default=100,
        help=f"problems per unit, 1 to {MAX_PER_UNIT:,} (default 100)",
    )
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
    """Every file the command will write, checked before any work: none a folder, no two of them
    one file (symlinks and hard links included), none being written by a live run, none existing
    without --force, each writable."""
    from littlekit.curriculum.export import MATHCAMPS_FILE
    from littlekit.swap import check_not_held, same_file, unwritable

    if args.out is None:
        raise UsageError("--out FILE.jsonl is required (or --list)", PROG)
    named = [
        ("--out", args.out),
        ("--review", args.review),
        ("--mathcamps-root", args.mathcamps_root and Path(args.mathcamps_root) / MATHCAMPS_FILE),
    ]
    named = [(flag, Path(path)) for flag, path in named if path is not None]
    for i, (flag, path) in enumerate(named):
        for other_flag, other in named[:i]:
            if same_file(path, other):
                raise UsageError(f"{other_flag} {other} and {flag} {path} are the same file: "
                                 f"--out, --review and --mathcamps-root must name different files",
                                 PROG)  # fmt: skip
    for flag, path in named:
        if path.is_dir():
            raise UsageError(f"{flag} {path} is a folder; give a file name", PROG)
        check_not_held(path, PROG, flag)  # a live run writing it is told of first
        if (path.exists() or path.is_symlink()) and not args.force:
            raise UsageError(f"{flag} {path} exists; pass --force to overwrite it", PROG)
        if problem := unwritable(path):
            raise UsageError(f"{flag} {path}: {problem}", PROG)
    return [path for _, path in named]


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
    outputs = _check_outputs(args)
    from littlekit.swap import hold_outputs

    # one run per output: a second run into any of them is refused while this one runs
    with hold_outputs([(None, path) for path in outputs], PROG):
        return _write(args, units)


def _write(args: argparse.Namespace, units) -> int:
    """Generate, verify and write the records (the outputs held), a record at a time: the file
    grows as they are made and memory stays flat at any --per-unit."""
    from littlekit.curriculum import audit, export
    from littlekit.curriculum.generate import CurriculumError

    started = time.perf_counter()
    review: list[dict] = []

    def records(verify: bool, collect_review: bool = False):
        for record in _in_order(units, args, verify):
            if collect_review:
                review.extend(audit.review_log([record]))
            yield record

    try:
        count = export.write_jsonl(records(not args.no_verify, bool(args.review)), args.out, force=args.force)
    except CurriculumError as exc:
        print(f"{PROG}: error: {exc} (nothing written to {args.out})", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    digest = sha256_file(args.out)
    bands = {u.band for u in units}
    print(
        f"wrote {count:,} records of {len(units)} units ({', '.join(sorted(bands))}) to {args.out} "
        f"in {seconds:.1f}s ({count / max(seconds, 1e-9):,.0f} problems/s, "
        f"{'verified' if not args.no_verify else 'NOT verified'}); sha256 {digest[:16]}"
    )
    if args.review:
        export.write_jsonl(review, args.review, force=args.force)
        print(f"review log: {len(review)} degenerate problem(s) -> {args.review}")
    if args.mathcamps_root:  # the same records made again (each from its own seed), not held
        path = export.write_mathcamps_root(records(False), args.mathcamps_root, force=args.force)
        root = str(args.mathcamps_root)
        print(f"MathCAMPS-shaped records -> {path} (littlekit.evals.mathcamps.load({root!r}) reads them)")
    return 0


def _in_order(units, args: argparse.Namespace, verify: bool):
    """The records of --units in --order, each made when it is written."""
    from littlekit.curriculum import export
    from littlekit.curriculum.generate import check_choices, record_at

    check_choices(args.register, args.format, args.sampling)
    for unit, index in export.mixture_order([u.grade for u in units], args.per_unit, args.order, args.seed):
        yield record_at(units[unit], index, args.seed, args.register, args.format, args.sampling, verify)
