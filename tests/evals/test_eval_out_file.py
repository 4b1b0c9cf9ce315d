"""The minor reliability defects of issue 26, one test (or a few) each, on real commands:

a. `littlekit eval curriculum --out F --exclude F --force` overwrote the training file (also
   through a symlink or a hard link); now refused, with or without --force;
b. `littlekit launch` replaced an existing script without being asked; now only with --overwrite,
   and then whole;
c. `littlekit curriculum --per-unit 1e9` (or 10**30) had no bound;
d. curriculum's outputs were told apart by abspath (a symlink or a hard link passed) and an
   unwritable --out folder was found only after the work;
e. a SIGKILLed `littlekit filter --executor local --tasks 2 --workers 2` left datatrove's
   multiprocessing Manager behind, an orphan;
f. a NaN or infinity in a record was written as the bare token NaN, which no strict JSON reader takes.

Each runs `littlekit.cli.main([...])` on files made in tmp_path (e: the command as a subprocess).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from train_data import saved_curriculum_qwen3

from littlekit.cli import main
from littlekit.curriculum import all_units, generate
from littlekit.curriculum.export import write_jsonl

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO_ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def strict_loads(line: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


# --- a. eval --out naming a file the command reads ---------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "reversed")


@pytest.fixture
def training(tmp_path) -> Path:
    path = tmp_path / "mixture.jsonl"
    write_jsonl(generate(all_units(), 2, seed=0, fmt="reversed"), path)
    return path


def eval_argv(model_dir: Path, training: Path, out: Path, *extra) -> list:
    return ["eval", "curriculum", "--model", model_dir, "--band", "BEYOND", "--per-unit", "1", "--format",
            "reversed", "--max-new-tokens", "2", "--exclude", training, "--out", out, *extra]  # fmt: skip


@pytest.mark.parametrize("force", [True, False], ids=["force", "no-force"])
@pytest.mark.parametrize("how", ["same-path", "symlink", "hard-link", "dotted-path"])
def test_eval_out_that_is_the_exclude_file_is_refused(model_dir, training, tmp_path, capsys, how, force):
    before = training.read_bytes()
    out = {"same-path": training, "dotted-path": tmp_path / "." / "sub" / ".." / training.name}.get(how)
    if how == "symlink":
        out = tmp_path / "results.jsonl"
        out.symlink_to(training)
    elif how == "hard-link":
        out = tmp_path / "results.jsonl"
        os.link(training, out)
    if how == "dotted-path":
        (tmp_path / "sub").mkdir()
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out, *(["--force"] if force else [])))
    assert code == 2, err
    assert f"--out {out}" in err and f"--exclude file {training}" in err and "same file" in err, err
    assert training.read_bytes() == before


def test_eval_out_that_is_a_model_file_is_refused(model_dir, training, capsys):
    config = model_dir / "config.json"
    before = config.read_bytes()
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, config, "--force"))
    assert code == 2 and f"--model file {config}" in err, err
    assert config.read_bytes() == before


def test_eval_still_writes_a_fresh_out_and_forces_over_an_old_one(model_dir, training, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    out.write_text("old\n", encoding="utf-8")
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out, "--force"))
    assert code == 0, err
    rows = [strict_loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows and all(row["model"] == str(model_dir) for row in rows)
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, tmp_path / "file" / "x.jsonl"))
    assert code == 0, err  # a folder that is not there yet is made


def test_eval_unwritable_out_folder_is_found_before_the_model_loads(model_dir, training, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    out = blocker / "results.jsonl"
    code, _, err = run_cli(capsys, *eval_argv(model_dir, training, out))
    assert code == 2 and f"--out {out}" in err and "is a file, not a folder" in err, err


# --- b. launch does not replace its script unasked ---------------------------------------------


def launch_argv(out: Path, *extra) -> list:
    return ["launch", "--size", "5B", "--tokens", "80B", "--data", "/shards/k5", "--tokenizer", "/tok",
            "--out", out, *extra]  # fmt: skip


def test_launch_refuses_an_existing_script_without_overwrite(tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    code, _, err = run_cli(capsys, *launch_argv(out))
    assert code == 0, err
    first = out.read_text(encoding="utf-8")
    out.write_text("#!/bin/bash\n# edited by hand\n", encoding="utf-8")
    code, printed, err = run_cli(capsys, *launch_argv(out, "--nodes", "2"))
    assert code == 2 and f"--out {out} exists; pass --overwrite to replace it" in err, err
    assert "wrote" not in printed
    assert out.read_text(encoding="utf-8") == "#!/bin/bash\n# edited by hand\n"
    code, _, err = run_cli(capsys, *launch_argv(out, "--overwrite"))
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == first and os.access(out, os.X_OK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]  # nothing left beside it
    # --force stays the trainer's flag, passed on to `littlekit train`, not an overwrite
    code, _, err = run_cli(capsys, *launch_argv(out, "--force"))
    assert code == 2 and "--overwrite" in err, err
    code, _, err = run_cli(capsys, *launch_argv(out, "--force", "--overwrite"))
    assert code == 0 and " --force" in out.read_text(encoding="utf-8"), err


def test_launch_out_folder_and_dry_run(tmp_path, capsys):
    code, _, err = run_cli(capsys, *launch_argv(tmp_path))
    assert code == 2 and f"--out {tmp_path} is a folder" in err, err
    out = tmp_path / "job.sbatch"
    out.write_text("keep\n", encoding="utf-8")
    code, printed, err = run_cli(capsys, *launch_argv(out, "--dry-run"))
    assert code == 0 and "nothing written" in printed, err  # a dry run writes nothing, so refuses nothing
    assert out.read_text(encoding="utf-8") == "keep\n"


# --- c. curriculum's counts are bounded --------------------------------------------------------


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


# --- d. curriculum's outputs checked before any work, by what they resolve to -----------------


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


# --- e. a killed datatrove run leaves no process behind ----------------------------------------


def session_processes(psutil, sid: int) -> list:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


@pytest.mark.slow
def test_a_killed_local_datatrove_run_leaves_no_orphan(tmp_path):
    psutil = pytest.importorskip("psutil")
    words = "the cat sat on the mat dog ran home we play with big red ball sun hot day fun".split()
    (tmp_path / "in").mkdir()
    for part in range(2):  # about 7 s of work per task: the run is killed well before it ends
        with (tmp_path / "in" / f"part{part}.jsonl").open("w", encoding="utf-8") as handle:
            for i in range(100_000):
                text = " ".join(words[(i * 7 + j * (part + 3)) % len(words)] for j in range(30))
                handle.write(json.dumps({"id": f"{part}-{i}", "text": text}) + "\n")
    command = [sys.executable, "-m", "littlekit.cli", "filter", "--in", tmp_path / "in", "--out",
               tmp_path / "kept", "--executor", "local", "--tasks", "2", "--workers", "2", "--logging-dir",
               tmp_path / "logs", "--quiet"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with (tmp_path / "stderr").open("w") as stderr:
        parent = subprocess.Popen([str(c) for c in command], cwd=REPO_ROOT, env=env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    sid = parent.pid  # a new session's id is its leader's pid
    try:
        deadline = time.monotonic() + 120
        children: list = []
        while time.monotonic() < deadline and parent.poll() is None:
            children = psutil.Process(parent.pid).children(recursive=True)
            if len(children) >= 4:  # the Manager, the resource tracker, the forkserver, a worker
                break
            time.sleep(0.1)
        time.sleep(1.0)
        assert parent.poll() is None, (tmp_path / "stderr").read_text()[-2000:]
        assert len(children) >= 4, [c.cmdline()[:3] for c in children]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        # the pool's workers end with the task in flight (~7 s alone, longer beside a full test run);
        # the Manager this test is about would wait for clients forever
        deadline = time.monotonic() + 60
        while (left := session_processes(psutil, sid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, [(p.pid, p.cmdline()[:4]) for p in left]
    finally:
        for process in session_processes(psutil, sid):
            try:
                process.kill()
            except psutil.Error:
                pass


def death_signal_of_a_forked_child() -> int:
    """The parent-death signal a child forked now has (prctl PR_GET_PDEATHSIG, read in the child)."""
    import ctypes

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read its own setting, report it, leave at once
        value = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)
        os.write(writer, str(value.value).encode())
        os._exit(0)
    os.close(writer)
    try:
        return int(os.read(reader, 32).decode())
    finally:
        os.close(reader)
        os.waitpid(pid, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_only_children_forked_within_the_block_die_with_this_process():
    from littlekit.filter.datatrove.children import children_die_with_this_process

    assert death_signal_of_a_forked_child() == 0
    with children_die_with_this_process():
        assert death_signal_of_a_forked_child() == signal.SIGKILL
    assert death_signal_of_a_forked_child() == 0


# --- f. no bare NaN in JSON lines --------------------------------------------------------------


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


def test_eval_results_write_nan_and_infinity_as_null(tmp_path, capsys):
    from littlekit.evals.command import write_results

    results = pd.DataFrame(
        {"id": ["a", "b"], "n": [1, 1], "score": [math.nan, math.inf], "p": [[0.5, math.nan]] * 2}
    )
    path = tmp_path / "results.jsonl"
    write_results(results, path, "some-model", force=False)
    rows = [strict_loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [row["score"] for row in rows] == [None, None] and rows[0]["p"] == [0.5, None]
    assert "wrote 2" in capsys.readouterr().out
