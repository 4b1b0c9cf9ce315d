"""The trainer on a tiny real setup: schedule, optimizer split, exact resume, checkpoints, CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from train_data import make_train_data

from littlekit.lm.optim import ADAMW, MUON, MuonAdamW, WSDSchedule, split_parameters, wsd_schedule
from littlekit.lm.sizes import build_model, optimizer_split, qwen3_config
from littlekit.lm.train.checks import accumulation_steps
from littlekit.lm.train.config import TrainConfig, config_from_args, parse_source
from littlekit.lm.train.loop import train, train_side_by_side

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

# Small enough that a step takes milliseconds on one CPU core.
TINY = {"size": "nano", "seq_len": 32, "global_batch": 4, "micro_batch": 2, "progress": False}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, str]:
    return make_train_data(tmp_path_factory.mktemp("train_data"))


def tiny_config(data: dict[str, str], run_dir: Path, **overrides) -> TrainConfig:
    base = TrainConfig(
        data=data["train"],
        val_data=data["val"],
        tokenizer=data["tokenizer"],
        run_dir=str(run_dir),
        max_steps=6,
        eval_every=2,
        **TINY,
    )
    return replace(base, **overrides)


def read_metrics(run_dir: str | Path) -> list[dict]:
    lines = (Path(run_dir) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# --- schedule and optimizer ---------------------------------------------------------------------


def test_wsd_schedule_values():
    schedule = WSDSchedule(total_steps=10, warmup_steps=2, cooldown_steps=4)
    assert [schedule(s) for s in range(10)] == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.75, 0.5, 0.25]
    phases = [schedule.phase(s) for s in (0, 2, 5, 6, 9)]
    assert phases == ["warmup", "stable", "stable", "cooloff", "cooloff"]
    floor = WSDSchedule(total_steps=10, warmup_steps=0, cooldown_steps=4, min_ratio=0.1)
    assert floor(0) == 1.0
    assert floor(9) == pytest.approx(0.1 + 0.9 * 0.25)
    defaults = wsd_schedule(100)
    assert (defaults.warmup_steps, defaults.cooldown_steps) == (2, 20)
    with pytest.raises(ValueError, match="exceed"):
        WSDSchedule(total_steps=5, warmup_steps=3, cooldown_steps=3)


@pytest.mark.parametrize("tied", [True, False])
def test_optimizer_split_covers_every_parameter_once(tied):
    config = qwen3_config("nano", 300, tie_word_embeddings=tied)
    model = build_model(config)
    groups = split_parameters(model)
    ids = [id(p) for group in groups.values() for _, p in group]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    tables = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    assert len(tables) == (1 if tied else 2)
    for name, param in groups[MUON]:
        assert param.ndim == 2 and id(param) not in tables, name
        assert any(part in name for part in ("self_attn", "mlp")), name
    adamw_ids = {id(p) for _, p in groups[ADAMW]}
    assert tables <= adamw_ids
    assert any("norm" in name for name, _ in groups[ADAMW])
    counts = optimizer_split(config)  # the launch plan's memory model agrees with the real split
    assert sum(p.numel() for _, p in groups[MUON]) == counts["muon"]
    assert sum(p.numel() for _, p in groups[ADAMW]) == counts["adamw"]

    optimizer = MuonAdamW(model, muon_lr=0.02, adamw_lr=0.001)
    muon, adamw = optimizer.optimizers
    assert isinstance(muon, torch.optim.Muon) and isinstance(adamw, torch.optim.AdamW)
    assert {id(p) for p in muon.param_groups[0]["params"]} == {id(p) for _, p in groups[MUON]}
    optimizer.set_lr_factor(0.5)
    assert optimizer.lrs() == {MUON: 0.01, ADAMW: 0.0005}
    baseline = MuonAdamW(model, use_muon=False)
    assert [type(o) for o in baseline.optimizers] == [torch.optim.AdamW]
    assert sum(len(g["params"]) for g in baseline.param_groups) == len(ids)


def test_batch_must_divide():
    assert accumulation_steps(32, 4, 2) == 4
    with pytest.raises(ValueError, match="not divisible"):
        accumulation_steps(10, 4, 1)


def test_sources_and_mixture():
    assert parse_source("/a/b:0.5") == ("/a/b", 0.5)
    assert parse_source("/a/b") == ("/a/b", 1.0)
    assert parse_source("c:/x") == ("c:/x", 1.0)
    mixed = TrainConfig(data="/root", tokenizer="t", run_dir="r", mix="paper-cooloff").sources()
    assert mixed == {"/root/k5_pretrain": 0.91, "/root/k5_math_reasoning": 0.05,
                     "/root/k5_math_instruct": 0.02, "/root/general_instruct": 0.02}  # fmt: skip
    with pytest.raises(ValueError, match="unknown mixture"):
        TrainConfig(data="/root", tokenizer="t", run_dir="r", mix="nope").sources()


# --- training runs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def straight(data, tmp_path_factory):
    config = tiny_config(data, tmp_path_factory.mktemp("straight"))
    return config, train(config)


def test_training_lowers_loss_and_logs_every_step(straight):
    config, result = straight
    records = read_metrics(config.run_dir)
    assert [r["step"] for r in records] == list(range(7))
    assert records[0]["tokens"] == 0 and "loss" not in records[0]  # the step-0 evaluation
    assert [r["tokens"] for r in records[1:]] == [s * 4 * 32 for s in range(1, 7)]
    assert [r["loss"] for r in records[1:]] == result.losses
    assert result.final_loss < result.losses[0]
    evaluated = [r for r in records if "val_bpb" in r]
    assert [r["step"] for r in evaluated] == [0, 2, 4, 6]
    assert evaluated[-1]["val_bpb"] < evaluated[0]["val_bpb"]
    schedule = wsd_schedule(6)
    for record in records[1:]:
        assert record["lr_factor"] == schedule(record["step"] - 1)
        assert record["lr"] == pytest.approx(config.adamw_lr * record["lr_factor"])
        assert record["lr_muon"] == pytest.approx(config.muon_lr * record["lr_factor"])
        assert record["tokens_per_s"] > 0 and math.isfinite(record["grad_norm"])


def test_resume_gives_the_same_final_loss(data, straight, tmp_path):
    """Acceptance 2: N steps straight == N/2 steps, then resume from last/, then N/2 steps."""
    config, full = straight
    split = replace(config, run_dir=str(tmp_path / "split"))
    first = train(replace(split, stop_at=3))
    assert first.steps == 3 and first.losses == full.losses[:3]
    state = json.loads((tmp_path / "split" / "last" / "trainer_state.json").read_text())
    assert state["step"] == 3
    second = train(replace(split, resume="auto"))
    assert second.resumed_from_step == 3 and second.steps == 6
    print(f"straight final loss {full.final_loss!r}; split + resume {second.final_loss!r}")
    assert second.final_loss == pytest.approx(full.final_loss, rel=1e-6, abs=1e-6)
    assert second.losses == pytest.approx(full.losses[3:], rel=1e-6, abs=1e-6)
    assert second.best_val_bpb == pytest.approx(full.best_val_bpb, rel=1e-6)
    # The resumed log continues the first one: every step once.
    assert [r["step"] for r in read_metrics(split.run_dir)] == list(range(7))
    from safetensors.torch import load_file

    a = load_file(Path(config.run_dir) / "last" / "model.safetensors")
    b = load_file(tmp_path / "split" / "last" / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-6)


def test_checkpoints_load_with_auto_classes(data, straight):
    """Acceptance 5, and best/ holds the model whose validation bits per byte was lowest."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from littlekit.evals.bpb import stream_bpb

    config, result = straight
    evaluated = [r for r in read_metrics(config.run_dir) if "val_bpb" in r and r["step"] > 0]
    best = min(evaluated, key=lambda r: r["val_bpb"])
    assert (result.best_step, result.best_val_bpb) == (best["step"], best["val_bpb"])
    for which in ("best", "last"):
        path = Path(config.run_dir) / which
        model = AutoModelForCausalLM.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        assert tokenizer.bos_token == "<|bos|>" and len(tokenizer) == model.config.vocab_size
        assert type(model).__name__ == "Qwen3ForCausalLM"
        value = stream_bpb(model, data["val"], config.seq_len, config.micro_batch)["bpb"]
        expected = result.best_val_bpb if which == "best" else result.last_val_bpb
        assert value == pytest.approx(expected, rel=1e-5)
        assert json.loads((path / "trainer_state.json").read_text())["step"] == (
            result.best_step if which == "best" else 6
        )
    assert not (Path(config.run_dir) / "best" / "trainer_state.pt").exists()


def test_init_from_continues_the_weights_with_a_fresh_optimizer(data, straight, tmp_path):
    # A cool-off phase started from a pretrained checkpoint, here on a two-source mixture.
    config, result = straight
    mixture = {data["train"]: 0.8, data["val"]: 0.2}
    phase = replace(tiny_config(data, tmp_path, max_steps=2, init_from=str(Path(config.run_dir) / "last")),
                    data=mixture)  # fmt: skip
    second = train(phase)
    first = read_metrics(tmp_path)[0]
    assert first["step"] == 0 and first["val_bpb"] == pytest.approx(result.last_val_bpb, rel=1e-6)
    assert second.steps == 2 and second.resumed_from_step == 0


def test_best_checkpoint_is_not_the_last_when_validation_worsens(data, tmp_path):
    # A learning rate far too high: validation improves, then gets worse.
    config = tiny_config(data, tmp_path, max_steps=5, eval_every=1, adamw_lr=0.6, muon_lr=0.6,
                         warmup_steps=0, cooldown_steps=0)  # fmt: skip
    result = train(config)
    curve = [r["val_bpb"] for r in read_metrics(tmp_path) if "val_bpb" in r and r["step"] > 0]
    assert min(curve) < curve[-1], f"validation never worsened: {curve}"
    assert result.best_val_bpb == min(curve) and result.best_step == 1 + curve.index(min(curve))
    state = json.loads((tmp_path / "best" / "trainer_state.json").read_text())
    assert (state["step"], state["best_val_bpb"]) == (result.best_step, result.best_val_bpb)


def test_cli_train_and_usage_errors(data, tmp_path, capsys):
    from littlekit.cli import main

    argv = ["train", "--data", data["train"], "--val-data", data["val"], "--tokenizer", data["tokenizer"],
            "--run-dir", str(tmp_path), "--size", "nano", "--seq-len", "32", "--global-batch", "4",
            "--micro-batch", "2", "--max-steps", "2", "--no-progress", "--optimizer", "adamw"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "trained 2 steps (256 tokens) on 1 process(es)" in out and "best" in out
    assert (tmp_path / "last" / "model.safetensors").exists()
    assert json.loads((tmp_path / "train_config.json").read_text())["optimizer"] == "adamw"
    assert main([*argv, "--global-batch", "5"]) == 2
    assert "not divisible" in capsys.readouterr().err
    assert main([*argv, "--data", data["val"], "--mix", "paper-cooloff"]) == 2
    assert "--mix takes one --data root" in capsys.readouterr().err
    assert main([*argv, "--mix", "paper-cooloff"]) == 1  # the root holds none of the mixture's sources
    assert "k5_pretrain" in capsys.readouterr().err


def test_launch_arguments_parse_as_train_arguments():
    import argparse

    from littlekit.lm.launch import LaunchConfig, make_plan, train_argv
    from littlekit.lm.train.config import add_train_parser

    launch = LaunchConfig(size="nano", tokens=10**6, seq_len=256, global_batch=32, micro_batch=4,
                          data=["/d"], val_data="/v", tokenizer="/t", run_dir="/r", parallel="fsdp",
                          activation_checkpointing=True)  # fmt: skip
    plan = make_plan(launch)
    assert plan.ok, plan.problems
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers())
    args = parser.parse_args(["train", *train_argv(plan.train_args())])
    config = config_from_args(args)
    assert (config.size, config.seq_len, config.global_batch, config.micro_batch) == ("nano", 256, 32, 4)
    assert (config.max_steps, config.data, config.val_data) == (plan.steps, "/d", "/v")
    assert config.activation_checkpointing and config.parallel == "fsdp" and config.resume == "auto"


def test_fused_linear_cross_entropy_matches_logits_then_cross_entropy():
    import torch.nn.functional as F

    from littlekit.lm.train.fused_loss import linear_cross_entropy

    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 50, 16, generator=generator, requires_grad=True)
    weight = torch.randn(300, 16, generator=generator, requires_grad=True)
    labels = torch.randint(0, 300, (3, 50), generator=generator)
    labels[0, :7] = -100  # ignored positions count in neither the loss nor its mean
    fused = linear_cross_entropy(hidden, weight, labels)
    fused.backward()
    grads = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    reference = F.cross_entropy((hidden @ weight.T).flatten(0, 1), labels.flatten(), ignore_index=-100)
    reference.backward()
    assert torch.allclose(fused, reference, atol=1e-5)
    assert torch.allclose(grads[0], hidden.grad, atol=1e-5)
    assert torch.allclose(grads[1], weight.grad, atol=1e-5)


def test_stacked_muon_steps_like_torch_muon():
    from littlekit.lm.optim import StackedMuon

    torch.manual_seed(0)
    shapes = [(8, 8), (8, 8), (4, 8), (8, 8)]  # three same-shape matrices are stacked, one is not
    ours = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    opt_ours = StackedMuon(ours, lr=0.02, ns_dtype=torch.bfloat16)  # torch's Muon iterates in bf16
    opt_theirs = torch.optim.Muon(theirs, lr=0.02)
    for step in range(3):
        seeds = [torch.Generator().manual_seed(10 * step + i) for i in range(len(shapes))]
        grads = [torch.randn(s, generator=g) for s, g in zip(shapes, seeds, strict=True)]
        for p, q, g in zip(ours, theirs, grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        opt_ours.step()
        opt_theirs.step()
    for p, q in zip(ours, theirs, strict=True):
        assert torch.allclose(p, q, atol=1e-6)


def test_muon_iterates_in_fp32_on_the_cpu_close_to_torchs_bf16():
    from littlekit.lm.optim import StackedMuon, newton_schulz_dtype, newton_schulz_stacked

    assert newton_schulz_dtype(torch.device("cpu")) == torch.float32
    assert newton_schulz_dtype(torch.device("cuda")) == torch.bfloat16
    torch.manual_seed(0)
    stack = torch.randn(3, 16, 48)
    args = ((3.4445, -4.7750, 2.0315), 5, 1e-7)
    fp32, bf16 = newton_schulz_stacked(stack, *args, torch.float32), newton_schulz_stacked(stack, *args)
    assert fp32.dtype == torch.float32 and bf16.dtype == torch.bfloat16
    gap = (fp32 - bf16.float()).abs().max().item()
    assert 0 < gap < 0.05  # the same iteration; bf16 rounds each of its matmuls to 8 bits of mantissa
    # the CPU default is that fp32 iteration: one step moves a weight by -lr * its orthogonalised gradient
    weight = torch.nn.Parameter(torch.zeros(16, 48))
    weight.grad = stack[0].clone()
    StackedMuon([weight], lr=0.1, momentum=0.0, nesterov=False).step()
    expected = -0.1 * newton_schulz_stacked(stack[:1], *args, torch.float32)[0]
    assert torch.allclose(weight.detach(), expected, atol=1e-6)


def test_side_by_side_runs_are_the_runs_alone(data, straight, tmp_path):
    config, alone = straight
    other = tiny_config(data, tmp_path / "other", seed=1)
    first, second = train_side_by_side([replace(config, run_dir=str(tmp_path / "same")), other], processes=2)
    assert first.losses == alone.losses and first.final_loss == alone.final_loss  # the same arithmetic
    assert second.losses != alone.losses  # another seed is another run
    assert Path(second.last_checkpoint).is_dir() and first.run_dir == str(tmp_path / "same")
    threads = torch.get_num_threads()
    (single,) = train_side_by_side([replace(config, run_dir=str(tmp_path / "single"))], threads=2)
    assert single.losses == alone.losses and torch.get_num_threads() == threads
    with pytest.raises(ValueError, match="positive"):
        train_side_by_side([config], processes=0)


def test_progress_off_a_terminal_is_a_line_each_tenth_with_the_loss(data, tmp_path, monkeypatch, capsys):
    from littlekit import progress

    monkeypatch.setattr(progress, "QUIET_FOR", 0.0)
    train(tiny_config(data, tmp_path / "run", max_steps=10, progress=True))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("train run:")]
    assert len(lines) == 10
    assert lines[-1].startswith("train run: 10/10 steps (100%)") and ", loss " in lines[-1]
