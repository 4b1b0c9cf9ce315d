"""`littlekit curriculum` through `littlekit.cli.main`: the acceptance run, determinism, errors."""

from __future__ import annotations

import json

from littlekit.cli import main
from littlekit.curriculum.generate import FIELDS
from littlekit.curriculum.registry import GRADE_ORDER


def read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_list_prints_the_units_table(capsys):
    assert main(["curriculum", "--list"]) == 0
    out = capsys.readouterr().out
    assert "count_on" in out and "linear_functions" in out and "8.F.A.1" in out
    last = out.strip().splitlines()[-1]
    k5, beyond = (int(n) for n in last.split(":")[1].replace("K5", "").replace("BEYOND", "").split(","))
    assert k5 >= 24 and beyond >= 10


def test_all_units_200_each_same_seed_same_bytes(tmp_path, capsys):
    first, second = tmp_path / "c.jsonl", tmp_path / "again.jsonl"
    argv = ["curriculum", "--units", "all", "--per-unit", "200", "--seed", "0"]
    assert main([*argv, "--out", str(first)]) == 0
    assert "verified" in capsys.readouterr().out
    records = read(first)
    units = {r["unit"] for r in records}
    assert len(units) >= 34 and len(records) == 200 * len(units)
    assert all(tuple(r) == FIELDS for r in records)
    assert main([*argv, "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()


def test_an_existing_output_is_refused_without_force(tmp_path, capsys):
    out = tmp_path / "k.jsonl"
    argv = ["curriculum", "--units", "count_on", "--per-unit", "3", "--out", str(out)]
    assert main(argv) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert main([*argv, "--seed", "9"]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert main([*argv, "--seed", "9", "--force"]) == 0
    assert out.read_bytes() != before


def test_usage_errors(tmp_path, capsys):
    out = str(tmp_path / "x.jsonl")
    cases = [
        (["--units", "count_on,nope", "--out", out], "unknown unit(s) nope"),
        (["--format", "fancy", "--out", out], "invalid choice: 'fancy'"),
        (["--register", "latex", "--out", out], "invalid choice: 'latex'"),
        (["--per-unit", "0", "--out", out], "must be at least 1"),
        ([], "--out FILE.jsonl is required"),
        (["--units", "count_on", "--out", out, "--review", out], "must name different files"),
        (["--units", "count_on", "--out", str(tmp_path)], "is a folder"),
    ]
    for extra, message in cases:
        assert main(["curriculum", *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith("littlekit curriculum: error:") and message in err, (extra, err)
    assert not (tmp_path / "x.jsonl").exists()


def test_bands_formats_orders_review_and_mathcamps_outputs(tmp_path, capsys):
    out, review, root = tmp_path / "b.jsonl", tmp_path / "review.jsonl", tmp_path / "mc"
    argv = ["curriculum", "--units", "BEYOND", "--per-unit", "5", "--seed", "3", "--format", "reversed",
            "--register", "prose", "--order", "uniform", "--sampling", "uniform", "--out", str(out),
            "--review", str(review), "--mathcamps-root", str(root)]  # fmt: skip
    assert main(argv) == 0
    records = read(out)
    assert {r["band"] for r in records} == {"BEYOND"}
    assert {r["format"] for r in records} == {"reversed"} and {r["register"] for r in records} == {"prose"}
    assert {r["sampling"] for r in records} == {"uniform"}
    assert all(r["text"].splitlines()[-1].startswith("Reversed answer: ") for r in records)
    assert review.read_text(encoding="utf-8") == ""  # no degenerate problem
    from littlekit.evals.mathcamps import load

    assert sorted(load(root)["id"]) == sorted(r["id"] for r in records)
    capsys.readouterr()
    k5 = tmp_path / "k5.jsonl"
    assert (
        main(["curriculum", "--units", "K5", "--per-unit", "2", "--order", "curriculum", "--out", str(k5)])
        == 0
    )
    grades = [GRADE_ORDER.index(r["grade"]) for r in read(k5)]
    assert grades == sorted(grades) and max(grades) <= 5


def _peak_bytes(tmp_path, per_unit: int) -> int:
    """Python's peak allocation while the command writes `per_unit` shuffled records of one unit."""
    import tracemalloc

    tracemalloc.start()
    try:
        argv = ["curriculum", "--units", "count_on", "--per-unit", str(per_unit), "--order", "curriculum",
                "--no-verify", "--out", str(tmp_path / f"{per_unit}.jsonl")]  # fmt: skip
        assert main(argv) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_records_are_written_as_they_are_made_not_held(tmp_path, capsys):
    # at the largest --per-unit, all units are 57M records: held in memory (as they were) they
    # cannot finish in 23 GB; written one at a time only the order (8 bytes a record) is held
    small, large = _peak_bytes(tmp_path, 2_000), _peak_bytes(tmp_path, 40_000)
    assert large < 3 * small, (small, large)
    lines = (tmp_path / "40000.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40_000 and len({json.loads(line)["id"] for line in lines}) == 40_000


def test_the_shuffled_orders_are_mixtures_order_made_a_record_at_a_time():
    from littlekit.curriculum import export
    from littlekit.curriculum.generate import generate, record_at
    from littlekit.curriculum.units import select_units

    units = select_units("all")
    for order in ("unit", "uniform", "curriculum"):
        held = export.mixture(generate(units, 3, seed=5), order, seed=5)
        positions = export.mixture_order([u.grade for u in units], 3, order, 5)
        made = [record_at(units[u], i, 5) for u, i in positions]
        assert made == held, order


def test_a_reader_that_leaves_early_ends_the_listing_quietly():
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # as `| head` does once it has its lines
    try:
        done = subprocess.run([sys.executable, "-m", "littlekit.cli", "curriculum", "--list"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60)  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == ""
