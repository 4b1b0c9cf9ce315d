"""`littlekit launch`: the plan's arithmetic, its checks, the Slurm script and the command line."""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest

from littlekit.cli import main
from littlekit.lm.launch import (
    GPUS,
    LaunchConfig,
    TrainArgs,
    check_script,
    make_plan,
    paper_check,
    parse_count,
    parse_slurm_time,
    plan_table,
    slurm_script,
    slurm_time,
    torchrun_argv,
    train_argv,
)
from littlekit.lm.sizes import flops_per_token, qwen3_config


def test_parse_count():
    assert parse_count("80B") == 80_000_000_000
    assert parse_count("1.5T") == 1_500_000_000_000
    assert parse_count("500m") == 500_000_000
    assert parse_count("88e9") == 88_000_000_000
    assert parse_count("120k") == 120_000
    assert parse_count("4096") == 4096
    for bad in ("", "eighty", "-5B", "0", "5X"):
        with pytest.raises(ValueError):
            parse_count(bad)


def test_slurm_times():
    assert parse_slurm_time("4-04:30:00") == pytest.approx(100.5)
    assert parse_slurm_time("100:00:00") == 100
    assert parse_slurm_time("2-12") == 60
    assert parse_slurm_time("90") == 1.5
    assert slurm_time(100.2) == "4-05:00:00"
    assert slurm_time(0.1) == "0-01:00:00"
    with pytest.raises(ValueError, match="Slurm format"):
        parse_slurm_time("four days")


def test_plan_for_the_paper_run_by_hand():
    plan = make_plan(LaunchConfig(size="5B", tokens=80_000_000_000))
    assert plan.ok, plan.problems
    assert plan.steps == math.ceil(80e9 / (256 * 4096)) == 76_294
    assert plan.accumulation == 256 // (8 * 1) == 32
    per_token = flops_per_token(qwen3_config("5B"), 4096)
    assert plan.total_flops == per_token * 76_294 * 256 * 4096
    assert plan.hours == pytest.approx(plan.total_flops / (8 * 2.25e15 * 0.40) / 3600)
    assert plan.gpu_hours == pytest.approx(8 * plan.hours)
    assert 50 < plan.hours < 200  # same order as the paper's 100 h


def test_paper_check_implies_a_sane_mfu():
    check = paper_check()
    assert [row["tokens"] for row in check["rows"]] == [80e9, 88e9]
    for row in check["rows"]:
        assert row["flops"] == check["flops_per_token"] * row["tokens"]
        assert row["mfu_bf16"] == pytest.approx(row["flops"] / (8 * 100 * 3600) / GPUS["B200"].peak_bf16)
        assert 0.2 < row["mfu_bf16"] < 0.7
        assert row["mfu_fp8"] == pytest.approx(row["mfu_bf16"] / 2)


def test_script_has_sbatch_lines_and_torchrun_flags():
    config = LaunchConfig(
        size="1.3B", tokens=parse_count("20B"), nodes=4, partition="gpu", account="lab",
        data=["/shards/k5"], val_data="/shards/val", tokenizer="/tok", run_dir="/runs/1.3b",
        train_extra=["--compile"], venv="/opt/venv", workdir="/code",
    )  # fmt: skip
    plan = make_plan(config)
    assert plan.ok, plan.problems
    assert check_script(plan) == []
    assert plan.accumulation == 256 // (32 * 1)
    script = slurm_script(plan)
    for line in (
        "#!/bin/bash",
        "#SBATCH --nodes=4",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --cpus-per-task=64",
        "#SBATCH --output=logs/%x-%j.out",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=lab",
        f"#SBATCH --time={slurm_time(plan.hours * 1.2)}",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',
        "source /opt/venv/bin/activate",
        "cd /code",
    ):
        assert line in script.splitlines(), line
    argv = torchrun_argv(plan)
    assert argv[:11] == [
        "torchrun", "--nnodes", "4", "--nproc_per_node", "8", "--rdzv_id", "$SLURM_JOB_ID",
        "--rdzv_backend", "c10d", "--rdzv_endpoint", "$MASTER_ADDR:$MASTER_PORT",
    ]  # fmt: skip
    assert argv[11:14] == ["-m", "littlekit.cli", "train"]
    assert argv[14:] == train_argv(plan.train_args())
    assert '--rdzv_endpoint "$MASTER_ADDR:$MASTER_PORT"' in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_train_argv_names_every_setting_once():
    args = TrainArgs(
        size="nano", seq_len=128, global_batch=16, micro_batch=2, max_steps=10, data=["d1", "d2:0.5"],
        val_data="v", tokenizer="t", run_dir="r", activation_checkpointing=True, save_every=5,
        eval_every=4, extra=["--seed", "3"],
    )  # fmt: skip
    argv = train_argv(args)
    assert argv[argv.index("--size") + 1] == "nano" and argv[argv.index("--max-steps") + 1] == "10"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--data"] == ["d1", "d2:0.5"]
    assert argv[argv.index("--save-every") + 1] == "5" and argv[argv.index("--eval-every") + 1] == "4"
    assert argv[argv.index("--resume") + 1] == "auto"
    assert "--activation-checkpointing" in argv and "--no-progress" in argv
    assert argv[-2:] == ["--seed", "3"]
    bare = train_argv(TrainArgs(size="nano", seq_len=128, global_batch=16, micro_batch=2, max_steps=1))
    assert "--data" not in bare and "--activation-checkpointing" not in bare and "--mix" not in bare


def test_the_trainer_parses_what_launch_generates():
    """The real `littlekit train` parser reads the generated arguments back into our settings."""
    import argparse

    from littlekit.lm.train.config import add_train_parser, config_from_args

    plan = make_plan(LaunchConfig(size="0.6B", tokens=10**9, data=["/root"], mix="paper-cooloff",
                                  tokenizer="/tok", run_dir="/runs/x", parallel="fsdp"))  # fmt: skip
    assert check_script(plan) == []
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers(dest="command"))
    train = config_from_args(parser.parse_args(["train", *train_argv(plan.train_args())]))
    assert (train.size, train.seq_len, train.global_batch, train.micro_batch) == ("0.6B", 4096, 256, 1)
    assert (train.max_steps, train.parallel, train.precision) == (plan.steps, "fsdp", "bf16")
    assert (train.data, train.mix, train.resume, train.run_dir) == (
        "/root",
        "paper-cooloff",
        "auto",
        "/runs/x",
    )
    assert train.save_every == train.eval_every == plan.save_every > 0
    assert train.progress is False


def test_check_script_reports_missing_paths_and_refused_arguments():
    plan = make_plan(LaunchConfig(size="nano", tokens=10**6, seq_len=512))
    assert plan.ok
    assert check_script(plan) == [
        "the script needs --data (a path on the cluster)",
        "the script needs --tokenizer (a path on the cluster)",
    ]
    for bad in (dict(mix="no-such-mix"), dict(train_extra=["--no-such-flag"])):
        plan = make_plan(
            LaunchConfig(size="nano", tokens=10**6, seq_len=512, data=["/d"], tokenizer="/t", **bad)
        )
        assert plan.ok
        (problem,) = check_script(plan)
        assert problem.startswith("`littlekit train` refuses the generated arguments")


def test_script_runs_torchrun_at_the_first_node(tmp_path):
    """Run the script with stand-ins for srun, scontrol and torchrun that record what they get."""
    bin_dir, seen = tmp_path / "bin", tmp_path / "seen"
    bin_dir.mkdir()
    stand_ins = {
        "scontrol": 'printf "gpu-a17\\ngpu-a18\\n"',
        "srun": 'while [[ "$1" == --* ]]; do shift; done; exec "$@"',
        "torchrun": f'echo "MASTER_ADDR=$MASTER_ADDR" > {seen}; printf "%s\\n" "$@" >> {seen}',
    }
    for name, body in stand_ins.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    plan = make_plan(
        LaunchConfig(
            size="nano", tokens=10**6, nodes=2, seq_len=512, data=["/d"], tokenizer="/t", run_dir="/r w"
        )
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
           "SLURM_JOB_NODELIST": "gpu-a[17-18]"}  # fmt: skip
    subprocess.run(["bash", "-c", slurm_script(plan)], env=env, check=True, cwd=tmp_path)
    seen = seen.read_text().splitlines()
    assert seen[0] == "MASTER_ADDR=gpu-a17"
    assert seen[1:] == [a.replace("$SLURM_JOB_ID", "42").replace("$MASTER_ADDR:$MASTER_PORT", "gpu-a17:29500")
                        for a in torchrun_argv(plan)[1:]]  # fmt: skip
    assert "/r w" in seen  # a path with a space arrives as one argument


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(size="7B"), "unknown model size '7B'"),
        (dict(gpu="A100"), "unknown GPU 'A100'"),
        (dict(global_batch=250), "not divisible by GPUs x micro batch = 8 x 1 = 8; use 248 or 256"),
        (dict(global_batch=4), "use 8,"),
        (dict(seq_len=8192), "exceeds the 5B model's max_position_embeddings 4096"),
        (dict(micro_batch=16, global_batch=256, gpu="H100"), "estimated memory per GPU"),
        (dict(gpu="H100"), "--parallel fsdp"),
        (dict(parallel="zero"), "parallel must be ddp or fsdp"),
        (dict(checkpoint_hours=0), "checkpoint hours must be positive"),
        (dict(tokens=1000), "less than one step"),
        (dict(mfu=1.5), "MFU must be a fraction"),
        (dict(nodes=0), "nodes must be positive"),
        (dict(time="soon"), "Slurm format"),
    ],
)
def test_dry_run_problems(change, message):
    config = LaunchConfig(**{**dict(size="5B", tokens=80 * 10**9), **change})
    plan = make_plan(config)
    assert not plan.ok
    assert any(message in problem for problem in plan.problems), plan.problems


def test_memory_problem_is_fixed_by_fsdp_or_checkpointing():
    tight = dict(size="5B", tokens=80 * 10**9, micro_batch=1, global_batch=256, gpu="H100")
    assert not make_plan(LaunchConfig(**tight)).ok  # DDP keeps fp32 weights, grads and states whole
    assert make_plan(LaunchConfig(**tight, parallel="fsdp")).ok
    big = dict(tight, micro_batch=4, parallel="fsdp")
    assert not make_plan(LaunchConfig(**big)).ok
    assert make_plan(LaunchConfig(**big, activation_checkpointing=True)).ok


def test_short_time_limit_warns_about_resubmission():
    plan = make_plan(LaunchConfig(size="5B", tokens=80 * 10**9, time="2-00:00:00"))
    assert plan.ok
    assert any("jobs, each resuming" in w for w in plan.warnings)


def test_plan_table_covers_the_paper_sizes():
    rows = plan_table("80B")
    assert [r["size"] for r in rows] == ["0.6B", "1.3B", "5B"]
    assert all(not r["problems"] for r in rows)
    hours = [r["hours"] for r in rows]
    assert hours == sorted(hours)


def test_cli_dry_run_prints_plan_and_script_writes_nothing(tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    code = main(["launch", "--size", "5B", "--tokens", "80B", "--dry-run", "--out", str(out),
                 "--data", "/shards/k5", "--tokenizer", "/tok"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert not out.exists()
    assert "paper check" in printed and "MFU of" in printed
    assert "#SBATCH --gpus-per-node=8" in printed
    assert "76,294 steps" in printed
    assert "--data /shards/k5" in printed and "--resume auto" in printed


def test_cli_writes_script(tmp_path, capsys):
    out = tmp_path / "sub" / "job.sbatch"
    argv = ["launch", "--size", "0.6B", "--tokens", "10B", "--nodes", "2", "--gpu", "H100",
            "--train-arg=--compile", "--out", str(out), "--data", "/d", "--tokenizer", "/t"]  # fmt: skip
    assert main(argv) == 0
    script = out.read_text()
    assert "#SBATCH --nodes=2" in script and "--nnodes 2" in script and "--compile" in script
    assert os.access(out, os.X_OK)
    assert f"sbatch {out}" in capsys.readouterr().out


def test_cli_errors_exit_2_with_every_problem(tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    argv = ["launch", "--size", "5B", "--tokens", "80B", "--global-batch", "100", "--seq-len", "8192",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not divisible" in err and "max_position_embeddings" in err
    assert not Path(out).exists()
    assert main(["launch", "--size", "5B"]) == 2  # --tokens missing
    assert "--tokens" in capsys.readouterr().err
    assert main(["launch", "--size", "5B", "--tokens", "lots"]) == 2
    capsys.readouterr()
    assert main(["launch", "--size", "nano", "--tokens", "1M", "--seq-len", "512", "--dry-run"]) == 2
    assert "the script needs --data" in capsys.readouterr().err


def test_cli_takes_the_vocabulary_from_a_local_tokenizer(tmp_path, capsys):
    from littlekit.lm.tokenizer import train_tokenizer

    texts = ["the cat sat on the mat", "a dog ran to the park", "we count one two three"] * 20
    tokenizer = train_tokenizer(texts, vocab_size=300, out_dir=tmp_path / "tok")
    argv = ["launch", "--size", "nano", "--tokens", "1M", "--seq-len", "512", "--dry-run",
            "--data", "/d", "--tokenizer", str(tmp_path / "tok")]  # fmt: skip
    assert main(argv) == 0
    assert f"vocab {len(tokenizer):,}," in capsys.readouterr().out
    assert main([*argv, "--vocab-size", "4096"]) == 0
    assert "vocab 4,096," in capsys.readouterr().out
