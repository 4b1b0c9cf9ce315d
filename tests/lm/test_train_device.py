"""A run that asks for a GPU gets one or stops: it never trains on the CPU instead."""

from __future__ import annotations

import pytest
import torch

from littlekit.lm.train.config import TrainConfig
from littlekit.lm.train.distributed import setup


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_asking_for_cuda_without_one_stops_with_a_clear_error(device, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    config = TrainConfig(data="unused", tokenizer="unused", run_dir="unused", device=device)
    with pytest.raises(ValueError, match=rf"--device {device} asks for a GPU, but torch .* sees none"):
        setup(config)


def test_auto_and_cpu_train_on_the_cpu_here(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for device in ("auto", "cpu"):
        d = setup(TrainConfig(data="unused", tokenizer="unused", run_dir="unused", device=device))
        expected = "cuda" if device == "auto" and torch.cuda.is_available() else "cpu"
        assert d.device.type == expected and d.world_size == 1



def test_the_launch_script_asks_for_the_gpus_and_what_a_b200_job_needs():
    import shutil
    import subprocess

    from littlekit.lm.launch import LaunchConfig, make_plan, slurm_script

    config = LaunchConfig(size="0.6B", tokens=10**9, data=["/shards/k5"], tokenizer="/tok", run_dir="/r")
    script = slurm_script(make_plan(config))
    assert "--device cuda" in script  # never a silent CPU run
    for line in ("LITTLEKIT_DEBUG=1", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "ulimit -n"):
        assert line in script
    if shutil.which("bash"):
        checked = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert checked.returncode == 0, checked.stderr


def test_the_launch_command_writes_device_cuda_unless_told_otherwise(capsys):
    """Through `littlekit launch` itself: its --device flag defaults to the script's cuda, not the
    trainer's auto (which would train on the CPU of a node whose torch sees no GPU)."""
    from littlekit.cli import main

    plan = ["launch", "--size", "0.6B", "--tokens", "1B", "--data", "/shards/k5", "--tokenizer", "/tok",
            "--run-dir", "/r", "--dry-run"]  # fmt: skip
    assert main(plan) == 0
    assert "--device cuda" in capsys.readouterr().out
    assert main([*plan, "--device", "cuda:0"]) == 0
    out = capsys.readouterr().out
    assert "--device cuda:0" in out and "--device cuda " not in out
