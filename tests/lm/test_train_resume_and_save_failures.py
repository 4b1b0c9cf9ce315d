"""`littlekit train` resuming and saving against what goes wrong (the third reliability round).

A resume that changes --global-batch (the token count went wrong), NaN weights or optimizer state
in last/ (loaded silently), a first run that failed before any checkpoint (its rerun was refused
as an existing run), a full disk while best/ is written (best.tmp/ was left behind). Each case
trains the real tiny model on real shards (tests/train_data.py).
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from test_train_run_safety import snapshot, tiny_config, train_argv
from train_data import make_train_data

from littlekit.cli import main
from littlekit.lm.train.checkpoint import CheckpointError
from littlekit.lm.train.loop import train

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, str]:
    return make_train_data(tmp_path_factory.mktemp("train_data"))


@pytest.fixture(autouse=True)
def offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LITTLEKIT_DEBUG", raising=False)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "error:" in lines[0]
    return lines[0]


def steps(run_dir: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def leftovers(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if p.name.endswith((".tmp", ".new", ".old")))


# --- 1. a resume refuses a changed --global-batch (and what else fixes tokens and data order) -------


@pytest.fixture
def halfway(data, tmp_path, capsys) -> Path:
    """A run stopped at step 2 of 4 (last/ of step 2)."""
    run_dir = tmp_path / "run"
    assert main(train_argv(data, run_dir, "--max-steps", "4", "--stop-at", "2", val=False)) == 0
    capsys.readouterr()
    return run_dir


@pytest.mark.parametrize(
    ("flag", "saved", "given"),
    [("--global-batch", "4", "8"), ("--seq-len", "32", "16"), ("--seed", "0", "1"),
     ("--optimizer", "muon", "adamw")],
)  # fmt: skip
def test_a_resume_with_another_tokens_per_step_or_data_order_is_refused(
    data, halfway, capsys, flag, saved, given
):
    before = snapshot(halfway)
    argv = train_argv(data, halfway, "--max-steps", "4", "--resume", "auto", flag, given, val=False)
    assert main(argv) == 2  # a usage error, before any model is built
    line = one_error_line(capsys.readouterr().err)
    expected = (str(halfway / "last"), f"{flag} {saved} when saved, {given} now", f"pass {flag} {saved}")
    for fragment in expected:
        assert fragment in line, (fragment, line)
    assert snapshot(halfway) == before  # last/ and metrics.jsonl untouched


def test_train_itself_refuses_a_changed_global_batch(data, halfway):
    """The library call, not only the command line: the token count would be step x 8 x 32."""
    config = tiny_config(data, halfway, max_steps=4, val_data=None, resume="auto")
    with pytest.raises(CheckpointError, match="--global-batch 4 when saved, 8 now"):
        train(replace(config, global_batch=8))
    assert json.loads((halfway / "last" / "trainer_state.json").read_text())["tokens"] == 2 * 4 * 32


def test_a_resume_may_change_the_micro_batch_and_the_steps(data, halfway):
    result = train(tiny_config(data, halfway, max_steps=5, micro_batch=4, val_data=None, resume="auto"))
    assert result.resumed_from_step == 2 and result.steps == 5 and result.tokens == 5 * 4 * 32


# --- 2. weights or optimizer state that are not finite are refused on resume ------------------------


def test_nan_weights_in_last_are_refused_naming_the_folder_and_tensor(data, halfway, capsys):
    from safetensors.torch import load_file, save_file

    weights = halfway / "last" / "model.safetensors"
    tensors = load_file(weights)
    name = "model.layers.1.mlp.down_proj.weight"
    tensors[name][3, 5] = float("nan")
    save_file(tensors, weights, metadata={"format": "pt"})
    before = snapshot(halfway)
    assert main(train_argv(data, halfway, "--max-steps", "4", "--resume", "auto", val=False)) == 1
    line = one_error_line(capsys.readouterr().err)
    for fragment in ("CheckpointError", str(halfway / "last"), "not finite", f"first in {name}"):
        assert fragment in line, (fragment, line)
    assert snapshot(halfway) == before  # metrics.jsonl not truncated, nothing written


def test_nan_optimizer_state_in_last_is_refused_naming_the_tensor(data, halfway):
    path = halfway / "last" / "trainer_state.pt"
    state = torch.load(path, weights_only=True)
    name, per_param = next(iter(state["optimizer"]["state"].items()))
    key = next(k for k, v in per_param.items() if isinstance(v, torch.Tensor) and v.is_floating_point()
               and v.numel() > 1)  # fmt: skip
    per_param[key].view(-1)[0] = float("inf")
    torch.save(state, path)
    config = tiny_config(data, halfway, max_steps=4, val_data=None, resume="auto")
    with pytest.raises(CheckpointError) as caught:
        train(config)
    message = str(caught.value)
    assert str(halfway / "last") in message and f"optimizer.state.{name}.{key}" in message, message


# --- 3. a first run that failed before any checkpoint does not block its rerun ----------------------


DIVERGE = ["--muon-lr", "1e12", "--adamw-lr", "1e12"]


def test_a_rerun_after_a_first_run_that_saved_nothing_starts_fresh(data, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(train_argv(data, run_dir, "--max-steps", "6", *DIVERGE, val=False)) == 1
    capsys.readouterr()
    assert {p.name for p in run_dir.iterdir()} == {"metrics.jsonl", "train_config.json"}
    assert main(train_argv(data, run_dir, "--max-steps", "3", val=False)) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    assert len(notes) == 1, captured.err
    for fragment in (str(run_dir), "holds no checkpoint", "stopped at step 2 of 6", "starting fresh"):
        assert fragment in notes[0], (fragment, notes[0])
    assert "trained 3 steps" in captured.out
    assert steps(run_dir) == [1, 2, 3]  # the failed run's records went at the first checkpoint
    assert json.loads((run_dir / "train_config.json").read_text())["max_steps"] == 3
    assert leftovers(run_dir) == []


def test_a_failed_run_that_saved_a_checkpoint_is_still_refused(data, tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = train_argv(data, run_dir, "--max-steps", "6", "--eval-every", "1", *DIVERGE)
    assert main(argv) == 1  # best/ of step 1, then diverged
    capsys.readouterr()
    assert (run_dir / "best").is_dir() and not (run_dir / "last").exists()
    before = snapshot(run_dir)
    assert main(train_argv(data, run_dir, "--max-steps", "3")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "already holds a training run" in line and "best/" in line and "--force" in line, line
    assert snapshot(run_dir) == before


# --- 4. a save that fails on a full disk leaves no name.tmp/ and the previous checkpoints whole -----


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full for a real ENOSPC")
def test_a_full_disk_while_saving_best_leaves_no_tmp_and_the_old_best(data, tmp_path, monkeypatch):
    import transformers.modeling_utils as modeling_utils

    config = tiny_config(data, tmp_path, max_steps=2, eval_every=2)
    train(config)  # best/ and last/ of step 2
    before = {which: snapshot(tmp_path / which) for which in ("best", "last")}
    real_save = modeling_utils.safe_save_file
    failed: list[str] = []

    def disk_full(tensors, filename, metadata=None):
        real_save(tensors, filename, metadata=metadata)  # what got written before the disk filled
        failed.append(Path(filename).parent.name)
        with open("/dev/full", "wb") as full:  # the kernel's own "No space left on device"
            full.write(b"\0" * 4096)
            full.flush()

    monkeypatch.setattr(modeling_utils, "safe_save_file", disk_full)
    with pytest.raises(OSError) as caught:
        train(replace(config, max_steps=4, resume="auto"))  # step 4 validates better: best/ first
    monkeypatch.setattr(modeling_utils, "safe_save_file", real_save)
    assert failed == ["best.tmp"]
    assert leftovers(tmp_path) == []  # best.tmp/ was left behind
    assert caught.value.errno == errno.ENOSPC
    message = str(caught.value)
    best = tmp_path / "best"
    for fragment in (f"cannot write the checkpoint {best}", "No space left on device [ENOSPC]",
                     "best.tmp/ was removed", f"{best} holds the previous checkpoint"):  # fmt: skip
        assert fragment in message, (fragment, message)
    assert leftovers(tmp_path) == []
    assert {which: snapshot(tmp_path / which) for which in ("best", "last")} == before
    # The run goes on from its last good checkpoint once there is room.
    assert train(replace(config, max_steps=4, resume="auto")).steps == 4
    assert leftovers(tmp_path) == []


def test_a_full_disk_while_saving_last_keeps_the_previous_last(data, tmp_path, monkeypatch):
    config = tiny_config(data, tmp_path, max_steps=4, stop_at=2, val_data=None)
    train(config)
    before = snapshot(tmp_path / "last")
    real_save = torch.save

    def disk_full(obj, f, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(f))

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(OSError) as caught:
        train(replace(config, stop_at=None, resume="auto"))
    monkeypatch.setattr(torch, "save", real_save)
    assert leftovers(tmp_path) == []  # last.tmp/ was left behind
    assert snapshot(tmp_path / "last") == before
    assert "cannot write the checkpoint" in str(caught.value) and "[ENOSPC]" in str(caught.value)
