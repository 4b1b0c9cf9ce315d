"""`littlekit curriculum` checks its counts and its outputs before any work (issue 26).

--per-unit is bounded (1e9, 10**30, negative and NaN counts are refused at once, in its help and
in `littlekit eval curriculum` too); --out, --review and the --mathcamps-root file are told apart
by what they resolve to (a symlink or a hard link between them is refused) and an unwritable
folder is found before the work; and `write_jsonl` refuses a NaN or infinity in a record, naming
it, rather than write the bare token no strict JSON reader takes. Each runs
`littlekit.cli.main([...])` on files made in tmp_path.
"""

from __future__ import annotations

import json
import math
import os
import re
import time

import pytest

from littlekit.cli import main
from littlekit.curriculum.export import write_jsonl
from littlekit.curriculum.generate import generate
from littlekit.curriculum.units import all_units


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def strict_loads(line: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


# --- curriculum's counts are bounded -----------------------------------------------------------


@pytest.mark.parametrize("value", ["1e9", "1000001", str(10**30), "-3", "nan"])
def test_curriculum_per_unit_is_bounded(tmp_path, capsys, value):
    out = tmp_path / "c.jsonl"
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "curriculum", "--units", "count_on", "--per-unit", value, "--out", out)
    assert code == 2 and "--per-unit" in err and "at most 1,000,000" in err and value in err, err
    assert time.perf_counter() - started < 5 and not out.exists()


def test_the_per_unit_bound_is_in_the_help_and_the_eval_command(tmp_path, capsys):
    for argv in (["curriculum", "--help"], ["eval", "curriculum", "--help"]):
        assert main(argv) == 0
        assert "1 to 1,000,000" in " ".join(capsys.readouterr().out.split())
    code, _, err = run_cli(capsys, "eval", "curriculum", "--model", tmp_path, "--per-unit", "1e9")
    assert code == 2 and "--per-unit" in err and "at most 1,000,000" in err, err
    from littlekit.curriculum.command import per_unit_count

    assert per_unit_count("1000000") == 1_000_000 and per_unit_count("1") == 1


# --- curriculum's outputs checked before any work, by what they resolve to --------------------


def curriculum(capsys, *extra) -> tuple[int, str, float]:
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "curriculum", "--units", "all", "--per-unit", "300", *extra)
    return code, err, time.perf_counter() - started


def test_curriculum_review_symlinked_to_out_is_refused_before_any_work(tmp_path, capsys):
    out, review = tmp_path / "c.jsonl", tmp_path / "review.jsonl"
    review.symlink_to(out)  # dangling: --out is not written yet
    code, err, seconds = curriculum(capsys, "--out", out, "--review", review, "--force")
    assert code == 2 and f"--out {out} and --review {review} are the same file" in err, err
    assert seconds < 8 and not out.exists()


def test_curriculum_review_hard_linked_to_out_is_refused(tmp_path, capsys):
    out, review = tmp_path / "c.jsonl", tmp_path / "review.jsonl"
    out.write_text("old\n", encoding="utf-8")
    os.link(out, review)
    code, err, seconds = curriculum(capsys, "--out", out, "--review", review, "--force")
    assert code == 2 and "are the same file" in err and "must name different files" in err, err
    assert seconds < 8 and out.read_text(encoding="utf-8") == "old\n"


def test_curriculum_mathcamps_root_resolving_to_out_is_refused(tmp_path, capsys):
    root = tmp_path / "mc"
    (root / "mathcamps").mkdir(parents=True)
    out = tmp_path / "c.jsonl"
    (root / "mathcamps" / "mathcamps.jsonl").symlink_to(out)
    code, err, seconds = curriculum(capsys, "--out", out, "--mathcamps-root", root)
    assert code == 2 and f"--mathcamps-root {root / 'mathcamps' / 'mathcamps.jsonl'}" in err, err
    assert "same file" in err and seconds < 8 and not out.exists()


def test_curriculum_unwritable_out_folder_is_found_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    for flag in ("--out", "--review"):
        other = {"--out": tmp_path / "ok.jsonl", "--review": blocker / "deeper" / "r.jsonl"}
        argv = ["--out", other["--out"], "--review", other["--review"]]
        if flag == "--out":
            argv[1] = blocker / "deeper" / "c.jsonl"
        code, err, seconds = curriculum(capsys, *argv)
        assert code == 2 and f"{flag} {blocker / 'deeper'}" in err and "is a file, not a folder" in err, err
        assert seconds < 8 and not (tmp_path / "ok.jsonl").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_curriculum_read_only_out_folder_is_found_before_any_work(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        code, err, seconds = curriculum(capsys, "--out", locked / "c.jsonl")
    finally:
        locked.chmod(0o755)
    assert code == 2 and f"--out {locked / 'c.jsonl'}: cannot write in {locked}" in err, err
    assert seconds < 8


def test_curriculum_still_writes_all_three_outputs(tmp_path, capsys):
    out, review, root = tmp_path / "c.jsonl", tmp_path / "new" / "review.jsonl", tmp_path / "mc"
    argv = ["curriculum", "--units", "count_on", "--per-unit", "3", "--out", out, "--review", review,
            "--mathcamps-root", root]  # fmt: skip
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert out.is_file() and review.is_file() and (root / "mathcamps" / "mathcamps.jsonl").is_file()
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and f"--out {out} exists; pass --force" in err


# --- no bare NaN in a curriculum's JSON lines --------------------------------------------------


def test_a_nan_in_a_record_is_refused_naming_it_and_nothing_is_written(tmp_path):
    records = generate(all_units()[:1], 3, seed=0)
    bad = dict(records[1], score=math.nan)
    path = tmp_path / "c.jsonl"
    named = re.escape(f"record 2 (id {bad['id']!r}) for {path} holds a NaN")
    with pytest.raises(ValueError, match=named):
        write_jsonl([records[0], bad, records[2]], path)
    with pytest.raises(ValueError, match="NaN or infinite"):
        write_jsonl([{"id": "x", "values": [1.0, -math.inf]}], path)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its .partial
    assert write_jsonl(records, path) == 3
    assert [strict_loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()] == [
        r["id"] for r in records
    ]
