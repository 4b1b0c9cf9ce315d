"""`littlekit filter` against a hostile-but-fair user, second round (issue 26): runs mixed in one
output folder, results replaced without --force, filter_config.json booleans taken for numbers,
input nothing of which could be read, --workers past any sense, and the small ones (--rejected
x.parquet, --in /dev/stdin, one bad line under --hf-dataset json, a full disk naming no file).

Each test runs `littlekit.cli.main([...])` (or the console script, for stdin) on small real
inputs made in tmp_path, as tests/filter/test_filter_error_accounting.py does.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from littlekit.cli import main
from littlekit.filter import registry
from littlekit.filter.base import Decision, Stage, StageSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

EASY = ["the cat sat on the mat", "the dog ran home", "we play with the big red ball"]
DATATROVE = ["--executor", "local", "--workers", "1", "--quiet"]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run_cli(capsys, *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(text: str) -> str:
    return " ".join(text.split())


def tree(root: Path) -> dict[str, str]:
    """Every file under root -> its SHA-256 (a folder: "dir")."""
    found = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        found[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


def shard_rows(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.rglob("*.jsonl.gz")) for line in gzip.open(f, "rt")]


def shards(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.jsonl.gz"))


def four_shards(folder: Path, per_shard: int = 3) -> Path:
    """An input folder of 4 JSONL files (so 4 tasks each get one)."""
    for shard in range(4):
        rows = [{"id": f"s{shard}-{i}", "text": EASY[i % len(EASY)]} for i in range(per_shard)]
        write_jsonl(folder / f"part-{shard}.jsonl", rows)
    return folder


class InterruptingStage(Stage):
    """Keeps every document, and is interrupted (Ctrl-C) on one holding "stop"."""

    name = "interrupting"

    def score(self, text: str) -> dict[str, Any]:
        if "stop" in text:
            raise KeyboardInterrupt
        return {}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(True, None, scores)


class BoomStage(InterruptingStage):
    """Raises on every document (a broken stage): the run stops at the error-rate limit."""

    name = "boom"

    def score(self, text: str) -> dict[str, Any]:
        raise RuntimeError("boom")


@pytest.fixture(autouse=True)
def test_stages(monkeypatch):
    monkeypatch.setitem(
        registry._SPECS,
        "interrupting",
        StageSpec("interrupting", 100, "interrupting", "test", lambda options: InterruptingStage()),
    )
    monkeypatch.setitem(
        registry._SPECS,
        "boom",
        StageSpec("boom", 100, "boom", "test", lambda options: BoomStage()),
    )


# --- 1. never two runs in one output folder (datatrove) ----------------------------------------


def datatrove_run(capsys, inp: Path, out: Path, logs: Path, tasks: int, *extra: Any) -> tuple[int, str, str]:
    return run_cli(
        capsys,
        "filter",
        "--in",
        inp,
        "--out",
        out,
        "--logging-dir",
        logs,
        "--tasks",
        tasks,
        *DATATROVE,
        *extra,
    )


def test_a_run_with_other_tasks_is_refused_the_folder_of_an_earlier_run(tmp_path, capsys):
    """The reported case: a 2-task run into the folder of a 4-task one left shards 2-3 of the old
    run beside its own (3,536 documents twice) and said nothing; it is refused, naming them."""
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs4", 4)
    assert code == 0, err
    assert shards(kept) == ["00000.jsonl.gz", "00001.jsonl.gz", "00002.jsonl.gz", "00003.jsonl.gz"]
    before = tree(tmp_path)

    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", 2)
    assert code == 2, err
    message = one_line(err)
    assert message.startswith("littlekit filter: error: output folder") and "Traceback" not in err
    assert f"{kept} holds the output of another run (4 tasks" in message
    assert "00002.jsonl.gz, 00003.jsonl.gz" in message and "--force" in message
    assert tree(tmp_path) == before  # refused before anything was written (logs2 not even made)


def test_a_folder_from_before_the_markers_is_still_told_apart(tmp_path, capsys):
    """A folder with shards but no marker: this run's when the logging directory's manifest is
    this run's (a resumed run), else another run's."""
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs4", 4)[0] == 0
    (kept / ".littlekit_output.json").unlink()
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs4", 4)  # the same run: resumes
    assert code == 0, err
    (kept / ".littlekit_output.json").unlink()
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", 2)
    assert (
        code == 2
        and "holds output that is not this run's (no .littlekit_output.json says whose)" in one_line(err)
    )


def test_the_same_run_again_resumes_and_changes_nothing(tmp_path, capsys):
    inp = four_shards(tmp_path / "in")
    kept, rejected = tmp_path / "kept", tmp_path / "rejected"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs", 4, "--rejected", rejected)[0] == 0
    before = {p: p.stat().st_mtime_ns for p in (*kept.rglob("*"), *rejected.rglob("*"))}
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs", 4, "--rejected", rejected)
    assert code == 0, err
    assert {p: p.stat().st_mtime_ns for p in (*kept.rglob("*"), *rejected.rglob("*"))} == before


def test_force_replaces_the_other_runs_folder_as_a_whole_once_the_run_completes(
    tmp_path, capsys, monkeypatch
):
    from littlekit.filter.datatrove import pipeline

    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs4", 4)[0] == 0
    old = tree(kept)

    def interrupted(staging, folder):
        raise KeyboardInterrupt  # killed after the tasks, before the swap

    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "swap_in", interrupted)
        code, _, _ = datatrove_run(capsys, inp, kept, tmp_path / "logs2", 2, "--force")
    assert code == 130
    assert tree(kept) == old  # the old output whole; the new one beside it
    assert shards(tmp_path / "kept.partial") == ["00000.jsonl.gz", "00001.jsonl.gz"]
    code, out, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", 2, "--force")  # resumes, swaps
    assert code == 0, err
    assert shards(kept) == ["00000.jsonl.gz", "00001.jsonl.gz"] and not (tmp_path / "kept.partial").exists()
    report = json.loads((tmp_path / "logs2" / "report.json").read_text())
    assert len(shard_rows(kept)) == report["kept"] == 12  # every document once, as the report says
    assert not list(tmp_path.glob("kept.replaced"))
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", 2)  # now that run's folder
    assert code == 0, err


def test_an_in_process_run_is_refused_a_datatrove_runs_folder(tmp_path, capsys):
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs", 4)[0] == 0
    before = tree(kept)
    code, _, err = run_cli(capsys, "filter", "--in", inp / "part-0.jsonl", "--out", f"{kept}/", "--force")
    assert code == 2 and f"--out {kept}/ holds the output of a datatrove run" in one_line(err)
    assert tree(kept) == before


def test_force_on_slurm_is_refused_rather_than_left_unswapped(tmp_path, capsys):
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs4", 4)[0] == 0
    code, _, err = run_cli(
        capsys,
        "filter",
        "--in",
        inp,
        "--out",
        kept,
        "--executor",
        "slurm",
        "--tasks",
        "2",
        "--logging-dir",
        tmp_path / "slurm",
        "--slurm-partition",
        "cpu",
        "--slurm-time",
        "1:00:00",
        "--force",
    )
    assert code == 2 and "with the slurm executor the run ends after this command returns" in one_line(err)


# --- 2. a finished result is replaced only with --force, whole -----------------------------------


def test_an_existing_result_is_not_replaced_without_force(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}])
    kept, rejected = tmp_path / "kept.jsonl", tmp_path / "rej.jsonl"
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", kept, "--rejected", rejected)
    assert code == 0, err
    before = tree(tmp_path)
    for argv, flag in (
        (["--out", kept], f"--out {kept}"),
        (["--out", tmp_path / "k2.jsonl", "--rejected", rejected], f"--rejected {rejected}"),
    ):
        code, _, err = run_cli(capsys, "filter", "--in", source, *argv)
        assert code == 2 and err.count("\n") == 1
        assert f"{flag} holds a finished result; pass --force to replace it" in one_line(err)
        assert tree(tmp_path) == before
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", kept, "--stages", "length", "--force")
    assert code == 2 and "unknown stage" in err  # --force is no reason to skip the other checks


def test_an_out_folder_is_not_replaced_without_force_and_is_with_it(tmp_path, capsys):
    source = write_jsonl(
        tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}, {"id": "b", "text": EASY[1]}]
    )
    run = tmp_path / "run"
    assert run_cli(capsys, "filter", "--in", source, "--out", f"{run}/")[0] == 0
    before = tree(tmp_path)
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", f"{run}/", "--max-aoa", "1")
    message = one_line(err)
    assert (
        code == 2
        and f"--out {run}/ (kept.jsonl, rejected.jsonl, report.json) holds a finished result" in message
    )
    assert tree(tmp_path) == before
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", f"{run}/", "--max-aoa", "1", "--force")
    assert code == 0, err
    assert read_jsonl(run / "kept.jsonl") == [] and len(read_jsonl(run / "rejected.jsonl")) == 2
    assert json.loads((run / "report.json").read_text())["dropped"] == 2
    assert sorted(p.name for p in run.iterdir()) == ["kept.jsonl", "rejected.jsonl", "report.json"]


def test_an_interrupted_forced_run_leaves_the_old_result_whole(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}])
    run = tmp_path / "run"
    assert run_cli(capsys, "filter", "--in", source, "--out", f"{run}/")[0] == 0
    before = tree(tmp_path)
    stopping = write_jsonl(
        tmp_path / "stop.jsonl", [{"id": "x", "text": EASY[1]}, {"id": "y", "text": "stop"}]
    )
    before["stop.jsonl"] = tree(tmp_path)["stop.jsonl"]
    code, _, _ = run_cli(
        capsys,
        "filter",
        "--in",
        stopping,
        "--out",
        f"{run}/",
        "--stages",
        "interrupting",
        "--force",
        "--batch-rows",
        "1",
    )
    assert code == 130
    assert tree(tmp_path) == before  # nothing replaced, nothing left beside it


def test_a_stopped_forced_run_writes_beside_the_finished_result(tmp_path, capsys):
    """A run that stops (here: every document errors) leaves .partial files, and its report
    beside the finished one rather than over it."""
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": f"d{i}", "text": EASY[0]} for i in range(5)])
    run = tmp_path / "run"
    assert run_cli(capsys, "filter", "--in", source, "--out", f"{run}/")[0] == 0
    before = tree(run)
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", f"{run}/", "--stages", "boom", "--force"
    )
    assert code == 1 and "5 of the 5 documents that entered stage boom errored" in one_line(err)
    assert {name: digest for name, digest in tree(run).items() if name in before} == before
    assert json.loads((run / "report.json.partial").read_text())["stopped"]
    assert f"the report ({run / 'report.json.partial'}) says it stopped" in one_line(err)
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", f"{run}/", "--force")
    assert code == 0, err  # and a rerun that finishes replaces the finished result


# --- 3. filter_config.json: strict types -----------------------------------------------------------


def aoa_artifacts(root: Path, config: str) -> Path:
    from littlekit.filter.artifacts import export_aoa_table

    export_aoa_table({"the": 3.0, "cat": 3.5, "sat": 4.0, "on": 3.0, "mat": 4.5}, root)
    (root / "filter_config.json").write_text(config, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "config, key",
    [
        ('{"max_aoa": true}', "max_aoa"),
        ('{"max_aoa": "12"}', "max_aoa"),
        ('{"max_aoa": NaN}', "max_aoa"),
        ('{"max_aoa": Infinity}', "max_aoa"),
        ('{"fasttext_min_k5_prob": true}', "fasttext_min_k5_prob"),
        ('{"min_blocked_share": false}', "min_blocked_share"),
        ('{"target": "0.1"}', "target"),
        ('{"chosen_on": 3}', "chosen_on"),
    ],
)
def test_config_values_of_the_wrong_type_are_refused_naming_the_file_and_key(tmp_path, capsys, config, key):
    """`"max_aoa": true` was 1 year (every document dropped, exit 0): a bool is not a number."""
    root = aoa_artifacts(tmp_path / "art", config)
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": "the cat sat on the mat"}])
    code, _, err = run_cli(
        capsys,
        "filter",
        "--in",
        source,
        "--out",
        tmp_path / "k.jsonl",
        "--stages",
        "aoa",
        "--artifacts",
        root,
        "--aoa-impute",
        "none",
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f"{root / 'filter_config.json'} is not a valid filter config: {key} must be" in one_line(err)
    assert not (tmp_path / "k.jsonl").exists()


def test_a_valid_config_still_applies(tmp_path, capsys):
    root = aoa_artifacts(tmp_path / "art", '{"max_aoa": 4}')
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": "the cat sat on the mat"}])
    code, _, err = run_cli(
        capsys,
        "filter",
        "--in",
        source,
        "--out",
        tmp_path / "k.jsonl",
        "--stages",
        "aoa",
        "--artifacts",
        root,
        "--aoa-impute",
        "none",
    )
    assert code == 0 and "max_aoa=4.0" in err


def test_stage_options_refuse_a_bool_for_a_number():
    from littlekit.filter.registry import StageOptions

    for option in ("max_aoa", "max_oov", "fasttext_min_k5_prob", "min_beyond_score", "min_blocked_share"):
        with pytest.raises(ValueError, match=f"{option} must be a number, got bool True"):
            StageOptions(**{option: True})
    with pytest.raises(ValueError, match="encoder_batch_size must be a whole number"):
        StageOptions(encoder_batch_size=True)
    assert StageOptions(max_aoa=10).max_aoa == 10  # an int is a number


# --- 4. input of which nothing (or only part) could be read ------------------------------------


def check_accounting(report_path: Path, read: int, errored: int) -> dict:
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert (report["read"], report["errored"]) == (read, errored)
    assert report["read"] == report["kept"] + report["dropped"] + report["errored"] and report["consistent"]
    return report


def test_a_csv_named_jsonl_fails_naming_the_file_and_the_first_record(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text("id,text\n1,the cat sat\n2,the dog ran\n", encoding="utf-8")
    kept = tmp_path / "k.jsonl"
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", kept, "--report", tmp_path / "r.json", "--quiet"
    )
    assert code == 1 and err.count("\n") == 1, err
    message = one_line(err)
    assert f"no document could be read from {source}: all 3 records failed (bad_json 3)" in message
    assert "the first: line 1: bad_json: Expecting value" in message
    report = check_accounting(tmp_path / "r.json", 3, 3)
    assert report["stopped"].startswith("no document could be read")
    assert not kept.exists() and (tmp_path / "k.jsonl.partial").exists()  # not a finished (empty) result


def test_a_text_field_no_record_has_fails_naming_the_field(tmp_path, capsys):
    source = write_jsonl(
        tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}, {"id": "b", "text": EASY[1]}]
    )
    code, _, err = run_cli(
        capsys,
        "filter",
        "--in",
        source,
        "--out",
        tmp_path / "k.jsonl",
        "--text-field",
        "txt",
        "--report",
        tmp_path / "r.json",
    )
    assert code == 1
    message = one_line(err)
    assert f"no document could be read from {source}: all 2 records failed (missing_text_field 2)" in message
    assert (
        "line 1: missing_text_field: no field 'txt'; fields: id, text (choose one with --text-field)"
        in message
    )
    check_accounting(tmp_path / "r.json", 2, 2)


def test_some_unreadable_records_give_a_warning_with_counts(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text(
        json.dumps({"id": "a", "text": EASY[0]})
        + "\nnot json\n"
        + json.dumps({"id": "c", "txt": "x"})
        + "\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(
        capsys,
        "filter",
        "--in",
        source,
        "--out",
        tmp_path / "k.jsonl",
        "--report",
        tmp_path / "r.json",
        "--quiet",
    )
    assert code == 0, err
    message = one_line(err)
    assert message.startswith("littlekit filter: warning: 2 of the 3 records read from")
    assert "(bad_json 1, missing_text_field 1); they are counted as errored in the report" in message
    assert "the first: line 2: bad_json" in message
    check_accounting(tmp_path / "r.json", 3, 2)
    assert len(read_jsonl(tmp_path / "k.jsonl")) == 1


def test_a_datatrove_run_of_unreadable_input_fails_naming_it(tmp_path, capsys):
    inp = tmp_path / "in"
    write_jsonl(inp / "a.jsonl", [{"id": "a", "body": EASY[0]}, {"id": "b", "body": EASY[1]}])
    code, _, err = datatrove_run(capsys, inp, tmp_path / "kept", tmp_path / "logs", 1)
    assert code == 1
    message = one_line(err[err.index("littlekit filter: error:") :])
    assert f"no document could be read from {inp}: all 2 records failed (missing_text_field 2)" in message
    assert f"the first: {inp / 'a.jsonl'}: line 1: missing_text_field: no field 'text'" in message
    check_accounting(tmp_path / "logs" / "report.json", 2, 2)


def test_a_datatrove_run_with_some_unreadable_records_warns(tmp_path, capsys):
    inp = tmp_path / "in"
    write_jsonl(inp / "a.jsonl", [{"id": "a", "text": EASY[0]}, {"id": "b", "body": EASY[1]}])
    code, _, err = datatrove_run(
        capsys, inp, tmp_path / "kept", tmp_path / "logs", 1, "--rejected", tmp_path / "rej"
    )
    assert code == 0, err
    assert "littlekit filter: warning: 1 of the 2 records read from" in one_line(err)
    assert f"(each such record is in {tmp_path / 'rej'}/input/)" in one_line(err)
    check_accounting(tmp_path / "logs" / "report.json", 2, 1)


# --- 5. --workers -------------------------------------------------------------------------------


def test_absurd_workers_are_refused_and_more_than_tasks_capped(tmp_path, capsys, monkeypatch):
    """--tasks 4 --workers 100000 hung (a pool of 100,000 processes); now refused, and more
    workers than tasks run as many as there are tasks."""
    from datatrove.executor import LocalPipelineExecutor

    started: list[int] = []
    monkeypatch.setattr(LocalPipelineExecutor, "run", lambda self: started.append(self.workers))
    inp = four_shards(tmp_path / "in")
    argv = [
        "filter",
        "--in",
        inp,
        "--out",
        tmp_path / "kept",
        "--executor",
        "local",
        "--tasks",
        "4",
        "--logging-dir",
        tmp_path / "logs",
    ]
    code, _, err = run_cli(capsys, *argv, "--workers", "100000")
    assert code == 2 and err.count("\n") == 1
    assert "--workers 100,000 is more than 1,024 tasks at once; give at most --tasks (4) workers" in err
    assert not started and not (tmp_path / "logs").exists()
    code, _, err = run_cli(capsys, *argv, "--workers", "9")
    assert started == [4]
    assert "note : --workers 9 is more than the 4 tasks; running 4 at once" in one_line(err)


def test_make_executor_caps_workers_at_the_tasks(tmp_path):
    from littlekit.filter.datatrove.pipeline import make_executor

    assert make_executor([], "local", tasks=2, workers=64, logging_dir=tmp_path).workers == 2
    assert make_executor([], "local", tasks=3, workers=-1, logging_dir=tmp_path).workers == 3
    with pytest.raises(ValueError, match="workers must be at least 1"):
        make_executor([], "local", tasks=3, workers=0, logging_dir=tmp_path)


# --- 6. the small ones ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["x.parquet", "x.csv", "x.gz"])
def test_a_rejected_name_of_another_format_is_refused(tmp_path, capsys, name):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}])
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", "--rejected", tmp_path / name
    )
    assert code == 2 and "the rejected records are written as JSON lines; give a name ending in .jsonl" in err
    assert not (tmp_path / "k.jsonl").exists()


def test_jsonl_and_suffixless_rejected_names_are_written(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": "x^2 + 1 = 5"}])
    for name in ("r.jsonl.gz", "rejected"):
        code, _, err = run_cli(
            capsys,
            "filter",
            "--in",
            source,
            "--out",
            tmp_path / f"k-{name}.jsonl",
            "--rejected",
            tmp_path / name,
        )
        assert code == 0, err
    assert len(gzip.open(tmp_path / "r.jsonl.gz", "rt").read().splitlines()) == 1


def test_stdin_is_read_as_jsonl_with_format_jsonl(tmp_path):
    source = write_jsonl(
        tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}, {"id": "b", "text": EASY[1]}]
    )
    command = [
        sys.executable,
        "-m",
        "littlekit.cli",
        "filter",
        "--in",
        "/dev/stdin",
        "--out",
        tmp_path / "k.jsonl",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with source.open("rb") as stdin:
        done = subprocess.run(
            [*command, "--format", "jsonl", "--quiet"],
            stdin=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert [row["id"] for row in read_jsonl(tmp_path / "k.jsonl")] == ["a", "b"]
    done = subprocess.run(
        [*command, "--force"], input="", capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2
    assert (
        "--in /dev/stdin is a stream (not a regular file) whose name tells no format; pass --format jsonl"
        in (one_line(done.stderr))
    )


def test_a_fifo_input_is_read_and_parquet_from_one_refused(tmp_path, capsys):
    import threading

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    feeder = threading.Thread(  # a daemon: a run that never opens the pipe must not hang the tests
        target=lambda: fifo.write_text(json.dumps({"id": "a", "text": EASY[0]}) + "\n"), daemon=True
    )
    feeder.start()
    code, _, err = run_cli(capsys, "filter", "--in", fifo, "--out", tmp_path / "k.jsonl", "--quiet")
    feeder.join(timeout=10)
    assert code == 0, err
    assert len(read_jsonl(tmp_path / "k.jsonl")) == 1
    code, _, err = run_cli(
        capsys, "filter", "--in", fifo, "--out", tmp_path / "k2.jsonl", "--format", "parquet"
    )
    assert code == 2 and "Parquet cannot be read from one" in err
    code, _, err = run_cli(
        capsys,
        "filter",
        "--in",
        fifo,
        "--out",
        tmp_path / "kept",
        "--executor",
        "local",
        "--logging-dir",
        tmp_path / "logs",
    )
    assert code == 2 and "is a stream, not a file or folder" in err


@pytest.mark.slow  # importing datasets pulls in torch
def test_one_bad_line_under_hf_dataset_json_is_said_clearly(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "".join(json.dumps({"id": i, "text": EASY[i % 3]}) + "\n" for i in range(5)) + "{broken\n",
        encoding="utf-8",
    )
    code, _, err = run_cli(
        capsys,
        "filter",
        "--hf-dataset",
        "json",
        "--hf-data-files",
        source,
        "--out",
        tmp_path / "k.jsonl",
        "--report",
        tmp_path / "r.json",
    )
    assert code == 1 and "Traceback" not in err
    message = one_line(err)
    assert f"--hf-dataset json {source}: reading stopped after row" in message
    assert "one bad line ends the stream: read the file with --in FILE, which counts each bad line" in message
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["consistent"] and "could not be read on" in report["stopped"]


def test_a_full_disk_names_the_file_and_leaves_nothing(tmp_path, capsys):
    """ENOSPC said "[Errno 28] No space left on device" and nothing else; /dev/full answers every
    write with it."""
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": "a", "text": EASY[0]}])
    kept = tmp_path / "k.jsonl"
    (tmp_path / "k.jsonl.partial").symlink_to("/dev/full")
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", kept, "--quiet")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    message = one_line(err)
    assert f"cannot write {kept}.partial: No space left on device [ENOSPC]" in message
    assert "nothing was replaced" in message
    assert not kept.exists() and not (tmp_path / "k.jsonl.partial").is_symlink()
