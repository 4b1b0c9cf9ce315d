"""`littlekit train` and `littlekit launch` against what a careless or hostile user does (issue 26).

A finished run directory trained over without --resume, a learning rate that makes the loss
NaN, a launch plan whose jobs are shorter than its checkpoint interval, a crash between the two
renames of a checkpoint swap, token ids beyond the vocabulary, an unwritable --run-dir. Each case
trains the real tiny model on real shards (tests/train_data.py) through the command line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from train_data import make_train_data

from littlekit.cli import main
from littlekit.lm.launch import LaunchConfig, make_plan, parse_slurm_time, plan_lines
from littlekit.lm.shards import ShardError, TokenShards
from littlekit.lm.train import checkpoint as checkpoint_module
from littlekit.lm.train import loop as loop_module
from littlekit.lm.train.config import TrainConfig
from littlekit.lm.train.loop import TrainingDiverged, train

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TINY = ["--size", "nano", "--seq-len", "32", "--global-batch", "4", "--micro-batch", "2", "--no-progress"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, str]:
    return make_train_data(tmp_path_factory.mktemp("train_data"))


@pytest.fixture(autouse=True)
def offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LITTLEKIT_DEBUG", raising=False)


def train_argv(data: dict[str, str], run_dir: Path, *extra: str, val: bool = True) -> list[str]:
    argv = ["train", "--data", data["train"], "--tokenizer", data["tokenizer"], "--run-dir", str(run_dir)]
    return [*argv, *(["--val-data", data["val"]] if val else []), *TINY, *extra]


def tiny_config(data: dict[str, str], run_dir: Path, **overrides) -> TrainConfig:
    base = TrainConfig(data=data["train"], val_data=data["val"], tokenizer=data["tokenizer"],
                       run_dir=str(run_dir), size="nano", seq_len=32, global_batch=4, micro_batch=2,
                       max_steps=6, eval_every=2, progress=False)  # fmt: skip
    return replace(base, **overrides)


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def strict_records(path: Path) -> list[dict]:
    """metrics.jsonl read as strict JSON: NaN, Infinity and -Infinity are refused."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{path} holds {name}, which is not JSON")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text(encoding="utf-8").splitlines()]


def finite_checkpoint(path: Path) -> bool:
    from safetensors.torch import load_file

    return all(torch.isfinite(tensor).all() for tensor in load_file(path / "model.safetensors").values())


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "error:" in lines[0]
    return lines[0]


# --- 1. a finished run directory is not trained over without --resume or --force -------------------


@pytest.fixture
def finished(data, tmp_path, capsys) -> Path:
    run_dir = tmp_path / "run"
    assert main(train_argv(data, run_dir, "--max-steps", "4", "--eval-every", "2")) == 0
    capsys.readouterr()
    assert {"last", "best", "metrics.jsonl"} <= {p.name for p in run_dir.iterdir()}
    return run_dir


def test_a_finished_run_is_refused_without_resume_or_force(data, finished, capsys):
    before = snapshot(finished)
    started = time.perf_counter()
    assert main(train_argv(data, finished, "--max-steps", "2")) == 2
    line = one_error_line(capsys.readouterr().err)
    for fragment in (str(finished), "already holds a training run", "--resume auto", "--force"):
        assert fragment in line, (fragment, line)
    assert snapshot(finished) == before  # metrics.jsonl, best/ and last/ untouched
    assert time.perf_counter() - started < 5  # refused before any model is built
    # A directory holding only part of a result is a run too.
    shutil.rmtree(finished / "last")
    shutil.rmtree(finished / "best")
    assert main(train_argv(data, finished, "--max-steps", "2")) == 2
    assert "metrics.jsonl" in one_error_line(capsys.readouterr().err)


def test_resume_auto_continues_a_finished_run_as_before(data, finished, capsys):
    assert main(train_argv(data, finished, "--max-steps", "6", "--eval-every", "2", "--resume", "auto")) == 0
    assert "resumed at step 4" in capsys.readouterr().out
    assert [r["step"] for r in strict_records(finished / "metrics.jsonl")] == list(range(7))


def test_force_replaces_the_old_run_only_at_the_new_runs_first_checkpoint(
    data, finished, capsys, monkeypatch
):
    old = snapshot(finished)
    seen: list[dict[str, str]] = []
    replace_previous = loop_module._Run._replace_previous

    def spy(run) -> None:  # the new checkpoint is complete beside the old run, which is still whole
        kept = {k: v for k, v in snapshot(finished).items() if k.split("/")[0] in old_names}
        seen.append(kept)
        assert (finished / "last.tmp" / "model.safetensors").exists()
        replace_previous(run)

    old_names = {key.split("/")[0] for key in old}
    monkeypatch.setattr(loop_module._Run, "_replace_previous", spy)
    argv = train_argv(data, finished, "--max-steps", "3", "--force", val=False)  # no best/ of its own
    assert main(argv) == 0
    capsys.readouterr()
    assert len(seen) == 1 and seen[0] == old
    names = {p.name for p in finished.iterdir()}
    assert names == {"last", "metrics.jsonl", "train_config.json"}, names  # the old best/ went with it
    assert [r["step"] for r in strict_records(finished / "metrics.jsonl")] == [1, 2, 3]
    assert json.loads((finished / "last" / "trainer_state.json").read_text())["step"] == 3
    assert json.loads((finished / "train_config.json").read_text())["max_steps"] == 3


def test_a_forced_run_that_stops_before_its_first_checkpoint_leaves_the_old_run_whole(data, finished, capsys):
    before = snapshot(finished)
    argv = train_argv(
        data, finished, "--max-steps", "6", "--force", "--muon-lr", "1e12", "--adamw-lr", "1e12"
    )
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "diverged at step" in line and "still holds the run it was to replace" in line
    after = snapshot(finished)
    assert {k: v for k, v in after.items() if not k.endswith(".new")} == before


# --- 2. a loss or gradient norm that is not finite stops the run; NaN is never saved or logged ------


def test_a_nan_loss_stops_with_an_error_naming_the_step(data, tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = train_argv(data, run_dir, "--max-steps", "8", "--eval-every", "1", "--save-every", "1",
                      "--muon-lr", "1e12", "--adamw-lr", "1e12")  # fmt: skip
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "TrainingDiverged" in line and "training diverged at step 2" in line, line
    records = strict_records(run_dir / "metrics.jsonl")  # valid JSON throughout
    assert [r["step"] for r in records] == [0, 1, 2]
    assert records[-1]["grad_norm"] is None and "val_bpb" not in records[-1]
    for which in ("last", "best"):  # the checkpoints of step 1, the last good one
        assert finite_checkpoint(run_dir / which)
        assert json.loads((run_dir / which / "trainer_state.json").read_text())["step"] == 1
    assert not (run_dir / "last.tmp").exists() and not (run_dir / "best.tmp").exists()


def test_a_non_finite_gradient_norm_alone_stops_the_run(data, tmp_path, monkeypatch):
    real = torch.nn.utils.clip_grad_norm_
    calls: list[int] = []

    def clip(parameters, max_norm):
        norm = real(parameters, max_norm)
        calls.append(1)
        return torch.full_like(norm, math.inf) if len(calls) == 3 else norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip)
    config = tiny_config(data, tmp_path, max_steps=6, log_every=5, save_every=2)  # step 3 is not logged
    with pytest.raises(TrainingDiverged, match="diverged at step 3"):
        train(config)
    assert json.loads((tmp_path / "last" / "trainer_state.json").read_text())["step"] == 2
    assert strict_records(tmp_path / "metrics.jsonl")[-1]["step"] == 4  # where it was seen


def test_non_finite_weights_are_never_saved(data, tmp_path, monkeypatch):
    real = loop_module._optimizer_step

    def step(run, loss_of, accumulation):
        result = real(run, loss_of, accumulation)
        if run.tally.step == 2:  # the update of step 3 leaves a NaN weight behind a finite loss
            with torch.no_grad():
                next(run.raw.parameters()).view(-1)[0] = float("nan")
        return result

    monkeypatch.setattr(loop_module, "_optimizer_step", step)
    with pytest.raises(TrainingDiverged, match="weights after step 3"):
        train(tiny_config(data, tmp_path, save_every=1, eval_every=0, val_data=None))
    assert finite_checkpoint(tmp_path / "last")
    assert json.loads((tmp_path / "last" / "trainer_state.json").read_text())["step"] == 2


def test_metrics_lines_write_null_for_non_finite_numbers():
    from littlekit.lm.train.metrics import json_line

    line = json_line({"step": 3, "loss": float("nan"), "grad_norm": float("inf"), "lr": 0.5})
    assert json.loads(line) == {"step": 3, "loss": None, "grad_norm": None, "lr": 0.5}
    assert json_line({"step": 1, "loss": 2.5}) == json.dumps({"step": 1, "loss": 2.5})


# --- 3. launch: every job of a resubmitted run can write last/ ---------------------------------------


def test_save_every_fits_in_one_jobs_time_limit():
    long_run = LaunchConfig(size="5B", tokens=80 * 10**9, time="00:30:00")
    plan = make_plan(long_run)
    assert plan.ok, plan.problems
    assert plan.hours > 10 and any("jobs, each resuming" in w for w in plan.warnings)
    hours_between_saves = plan.save_every * plan.hours / plan.steps
    assert hours_between_saves <= parse_slurm_time("00:30:00") / 2
    assert plan.save_every == plan.train_args().save_every == plan.train_args().eval_every
    # Without --time the limit is the estimate plus a margin; one hour between saves as before.
    default = make_plan(replace(long_run, time=None))
    assert default.save_every == round(default.steps / default.hours)
    assert "every 708 steps (~1 h)" in "\n".join(plan_lines(default))


def test_save_every_is_at_most_the_runs_steps():
    for size, seq_len in (("pico", 512), ("nano", 512)):
        plan = make_plan(LaunchConfig(size=size, tokens=10**8, seq_len=seq_len))
        assert plan.ok, plan.problems
        assert 1 <= plan.save_every <= plan.steps, (size, plan.save_every, plan.steps)


def test_a_plan_whose_jobs_can_never_checkpoint_is_refused(tmp_path, capsys):
    plan = make_plan(LaunchConfig(size="5B", tokens=80 * 10**9, time="00:00:03"))
    assert not plan.ok
    assert any("no job could ever save last/" in p for p in plan.problems), plan.problems
    argv = ["launch", "--size", "5B", "--tokens", "80B", "--time", "00:00:03", "--data", "/d",
            "--tokenizer", "/t", "--out", str(tmp_path / "job.sbatch")]  # fmt: skip
    assert main(argv) == 2
    assert "no job could ever save last/" in capsys.readouterr().err
    assert not (tmp_path / "job.sbatch").exists()


# --- 4. a crash between the checkpoint renames, ids beyond the vocabulary, an unwritable run dir ----


def test_resume_after_a_crash_between_the_two_renames(data, tmp_path):
    straight = train(tiny_config(data, tmp_path / "straight"))
    split = tiny_config(data, tmp_path / "split")
    assert train(replace(split, stop_at=3)).steps == 3
    run_dir = Path(split.run_dir)
    # What a crash after `last -> last.old` and before `last.tmp -> last` leaves behind.
    (run_dir / "last").rename(run_dir / "last.old")
    shutil.copytree(run_dir / "last.old", run_dir / "last.tmp")
    second = train(replace(split, resume="auto"))
    assert second.resumed_from_step == 3 and second.steps == 6
    assert second.losses == pytest.approx(straight.losses[3:], rel=1e-6, abs=1e-6)
    assert [r["step"] for r in strict_records(run_dir / "metrics.jsonl")] == list(range(7))
    assert not (run_dir / "last.old").exists() and not (run_dir / "last.tmp").exists()


def test_a_failed_swap_keeps_the_only_complete_checkpoint(data, tmp_path, monkeypatch):
    config = tiny_config(data, tmp_path, max_steps=2, val_data=None)
    train(config)
    (tmp_path / "last").rename(tmp_path / "last.old")  # the state a crashed swap left
    real_rename = Path.rename

    def failing_rename(self, target):
        if self.name == "last.tmp":
            raise OSError("disk full")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", failing_rename)
    with pytest.raises(OSError, match="disk full"):
        train(replace(config, resume="auto", max_steps=3))
    monkeypatch.setattr(Path, "rename", real_rename)
    assert (tmp_path / "last.old" / "trainer_state.pt").exists()
    assert checkpoint_module.resolve_resume(replace(config, resume="auto")) == tmp_path / "last.old"


@pytest.fixture
def bad_ids(data, tmp_path) -> Path:
    shards = tmp_path / "train"
    shutil.copytree(data["train"], shards)
    tokens = np.memmap(shards / "shard_00000.bin", dtype=np.uint16, mode="r+")
    tokens[1000::40] = 60_000  # beyond the 384-id vocabulary, in most documents; the sizes stay right
    tokens.flush()
    del tokens
    return shards


def test_token_ids_beyond_the_vocabulary_are_named_with_their_shard(data, bad_ids, tmp_path, capsys):
    argv = train_argv(data, tmp_path / "run", "--max-steps", "40", val=False)
    argv[argv.index("--data") + 1] = str(bad_ids)
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    for fragment in ("shard_00000.bin", "token id 60,000", "outside the vocabulary of 384", "write_shards"):
        assert fragment in line, (fragment, line)
    assert "IndexError" not in line
    assert not (tmp_path / "run" / "last").exists()
    shards = TokenShards(bad_ids)  # ids are checked as they are read, so read the damaged document
    damaged = int(np.searchsorted(shards.starts, 1000, side="right")) - 1
    with pytest.raises(ShardError, match="shard_00000.bin holds token id 60,000 at position 1,000"):
        shards.document(damaged)


def test_a_manifest_claiming_a_larger_vocabulary_than_the_tokenizer_is_refused(data, tmp_path, capsys):
    shards = tmp_path / "train"
    shutil.copytree(data["train"], shards)
    manifest = json.loads((shards / "manifest.json").read_text())
    manifest["vocab_size"] = 60_001
    (shards / "manifest.json").write_text(json.dumps(manifest))
    argv = train_argv(data, tmp_path / "run", "--max-steps", "2", val=False)
    argv[argv.index("--data") + 1] = str(shards)
    assert main(argv) == 1
    assert "vocab_size 60,001" in one_error_line(capsys.readouterr().err)


def test_a_run_dir_under_a_file_fails_before_any_work(data, tmp_path, capsys):
    (tmp_path / "afile").write_text("not a folder")
    started = time.perf_counter()
    assert main(train_argv(data, tmp_path / "afile" / "run", "--max-steps", "2")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--run-dir" in line and "afile" in line and "is a file" in line
    assert time.perf_counter() - started < 5


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_a_read_only_run_dir_fails_before_any_work(data, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert main(train_argv(data, locked / "run", "--max-steps", "2")) == 2
        line = one_error_line(capsys.readouterr().err)
        assert "--run-dir" in line and "cannot write" in line
    finally:
        locked.chmod(0o755)


def test_the_write_check_sees_a_folder_it_cannot_write(tmp_path, monkeypatch):
    """(as root too) what a read-only folder answers, through the check itself."""
    from littlekit.lm.train.checks import check_writable

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    with pytest.raises(ValueError, match=r"--run-dir: cannot write in .*Permission denied"):
        check_writable(tmp_path / "run")
