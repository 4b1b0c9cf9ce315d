"""`littlekit launch` writes only values it has checked or quoted, and `--train-arg` cannot override the plan.

4. A newline in --job-name, --partition, --account or --log-dir became a shell line of the script
   (`touch PWNED` ran), a value with spaces was cut short in its #SBATCH line, and a value starting
   with $ was written in double quotes, so `--run-dir '$(touch PWNED)'` ran its command too.
5. `--train-arg=--save-every=0` (or --max-steps, --resume) silently overrode what the plan printed;
   launch had no --save-every/--eval-every of its own.

The scripts are real: `bash -n` reads them, and bash runs them with stand-ins for srun, scontrol and
torchrun first on PATH (torchrun records its arguments), so nothing real is started and an injected
command would leave a PWNED file behind.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from pathlib import Path

import pytest

from littlekit.argtypes import Parser
from littlekit.cli import main
from littlekit.lm import launch_command
from littlekit.lm.launch import LaunchConfig, make_plan, plan_lines, slurm_script, train_argv
from littlekit.lm.train.config import add_train_parser, config_from_args, model_override

BASE = ["launch", "--size", "nano", "--tokens", "1M", "--seq-len", "512", "--data", "/d", "--tokenizer", "/t",
        "--run-dir", "/r"]  # fmt: skip
PAYLOADS = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "x; touch PWNED",
    "x && touch PWNED",
    "x\ntouch PWNED",
    "x\r\ntouch PWNED #",
    "x'; touch PWNED; echo '",
    'x"; touch PWNED; echo "',
    "a b",
    "$HOME",
]
STAND_INS = {
    "scontrol": 'printf "gpu-a17\\ngpu-a18\\n"',
    "srun": 'while [[ "$1" == --* ]]; do shift; done; exec "$@"',
    "torchrun": 'printf "%s\\0" "$@" > "$TORCHRUN_SAW"',  # NUL-separated: an argument may hold a newline
    "sbatch": "touch SBATCH_RAN",
}


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """A PATH with the stand-ins first, and the job's Slurm variables."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in STAND_INS.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
            "SLURM_JOB_NODELIST": "gpu-a[17-18]",
            "TORCHRUN_SAW": str(tmp_path / "torchrun.args")}  # fmt: skip


def run_script(script: str, tmp_path: Path, cwd: Path) -> list[str]:
    """bash -n, then bash under the stand-ins in `cwd`; torchrun's arguments. Nothing injected ran."""
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    env = stand_ins(tmp_path)
    done = subprocess.run(["bash", "-c", script], env=env, cwd=cwd, capture_output=True, text=True)
    assert not list(tmp_path.rglob("PWNED")), script
    assert done.returncode == 0, (done.stderr, script)
    return Path(env["TORCHRUN_SAW"]).read_text().split("\0")[:-1]


def directives(script: str) -> dict[str, str]:
    """The #SBATCH directives as sbatch reads them: up to the first line that is a command."""
    found = {}
    for line in script.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH "):
            option = line.removeprefix("#SBATCH ")
            assert not any(ch.isspace() for ch in option), line  # sbatch would cut the value at a space
            key, _, value = option.partition("=")
            found[key] = value
    return found


def launch_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="littlekit")
    launch_command.add_launch_parser(parser.add_subparsers(dest="command"))
    return parser


def plan_of(*flags: str):
    args = launch_parser().parse_args([*BASE, *flags])
    return make_plan(launch_command.config_from_args(args))


def trainer_reads(plan) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers(dest="command"))
    return config_from_args(parser.parse_args(["train", *train_argv(plan.train_args())]))


# --- 4. the #SBATCH lines and the shell lines ------------------------------------------------------


@pytest.mark.parametrize("flag", ["--job-name", "--partition", "--account", "--log-dir"])
def test_a_newline_in_an_sbatch_value_is_refused_naming_flag_and_value(flag, tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    assert main([*BASE, flag, "x\ntouch PWNED", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} 'x\\ntouch PWNED'" in err and "control character" in err, err
    assert not out.exists()
    plan = make_plan(LaunchConfig(size="nano", tokens=10**6, seq_len=512, data=["/d"], tokenizer="/t",
                                  **{flag[2:].replace("-", "_"): "x\ntouch PWNED"}))  # fmt: skip
    assert not plan.ok
    with pytest.raises(ValueError, match="a plan with problems has no script"):
        slurm_script(plan)


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--job-name", "my run", "a Slurm job name here may hold only"),
        ("--partition", "gpu h100", "a Slurm partition here may hold only"),
        ("--account", "'lab'", "a Slurm account here may hold only"),
        ("--job-name", "runs/a", "a Slurm job name here may hold only"),  # %x in --output: a subfolder
        ("--log-dir", "my logs", "must be a plain path"),
        ("--log-dir", "$SCRATCH/logs", "no whitespace, quotes, backslashes, backticks or $ variables"),
        ("--log-dir", "~/logs", "no leading ~"),
        ("--log-dir", "", "not empty"),
        ("--time", " 01:00:00", "not in a Slurm format"),
        ("--time", "01:00:00 ", "not in a Slurm format"),
        ("--time", "\u0661:00:00", "not in a Slurm format"),  # an Arabic-Indic one: \d matched it
    ],
)
def test_sbatch_values_that_sbatch_would_misread_are_refused(flag, value, message, tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    assert main([*BASE, f"{flag}={value}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and repr(value) in err, err
    assert not out.exists()


def test_plain_slurm_names_are_written_and_every_directive_comes_before_the_first_command(tmp_path):
    plan = plan_of("--job-name", "ll-5b.v2+x", "--partition", "gpu-h100,gpu_b200", "--account", "lab.ai",
                   "--log-dir", "/scratch/me/logs", "--time", "2-00:00:00", "--nodes", "2")  # fmt: skip
    assert plan.ok, plan.problems
    script = slurm_script(plan)
    assert directives(script) == {
        "--job-name": "ll-5b.v2+x",
        "--nodes": "2",
        "--ntasks-per-node": "1",
        "--gpus-per-node": "8",
        "--cpus-per-task": "64",
        "--time": "2-00:00:00",
        "--output": "/scratch/me/logs/%x-%j.out",
        "--partition": "gpu-h100,gpu_b200",
        "--account": "lab.ai",
        "--exclusive": "",
    }
    run_script(script, tmp_path, tmp_path)


def test_a_value_starting_with_a_dollar_is_not_expanded(tmp_path):
    """It was written in double quotes, as the script's own $SLURM_JOB_ID is."""
    plan = plan_of("--run-dir", "$(touch PWNED)", "--init-from", "$HOME/x", "--device", "$SLURM_JOB_ID")
    assert plan.ok, plan.problems
    saw = run_script(slurm_script(plan), tmp_path, tmp_path)
    assert saw[saw.index("--run-dir") + 1] == "$(touch PWNED)"
    assert saw[saw.index("--init-from") + 1] == "$HOME/x"
    assert saw[saw.index("--device") + 1] == "$SLURM_JOB_ID"  # the script's own word, given as a value
    assert saw[saw.index("--rdzv_id") + 1] == "42"  # the script's own variables still expand
    assert saw[saw.index("--rdzv_endpoint") + 1] == "gpu-a17:29500"


def test_a_venv_or_workdir_starting_with_a_dash_is_not_an_option(tmp_path):
    plan = plan_of("--venv=-venv", "--workdir=-work")
    assert plan.ok, plan.problems
    script = slurm_script(plan)
    assert "cd ./-work" in script.splitlines() and "source ./-venv/bin/activate" in script.splitlines()
    (tmp_path / "-work/-venv/bin").mkdir(parents=True)  # the venv is found after the cd
    (tmp_path / "-work/-venv/bin/activate").write_text("")
    run_script(script, tmp_path, tmp_path)


# --- 5. --train-arg cannot override the plan; --save-every and --eval-every are launch's own ---------


@pytest.mark.parametrize(
    "train_args, names, use",
    [
        (["--train-arg=--save-every=0"], "--save-every", "use launch's --save-every instead"),
        (["--train-arg=--save-ev=0"], "--save-every", "use launch's --save-every instead"),  # abbreviated
        (["--train-arg=--eval-every", "--train-arg=0"], "--eval-every", "use launch's --eval-every"),
        (["--train-arg=--max-steps=10"], "--max-steps", "use launch's --tokens"),
        (["--train-arg=--resume=/elsewhere/last"], "--resume", "use launch's --resume instead"),
        (["--train-arg=--no-progress"], "--no-progress", "use launch's --progress or --no-progress"),
        (["--train-arg=--precision=fp32"], "--precision", "use launch's --precision"),
        (["--train-arg=--seq-len=128"], "--seq-len", "use launch's --seq-len"),
        (["--train-arg=--model-override=num_hidden_layers=1"], "--model-override", "--model-override"),
        (["--seed", "4", "--train-arg=--seed=3"], "--seed", "use launch's --seed instead"),
    ],
)
def test_a_train_arg_setting_what_launch_sets_is_refused(train_args, names, use, tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    assert main([*BASE, "--time", "00:30:00", *train_args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"sets `littlekit train`'s {names}, which the script already sets" in err and use in err, err
    assert not out.exists()


def test_a_train_arg_launch_does_not_set_still_reaches_the_trainer(tmp_path):
    plan = plan_of("--train-arg=--seed=3", "--train-arg=--compile")
    assert plan.ok, plan.problems
    train = trainer_reads(plan)
    assert (train.seed, train.compile) == (3, True)


def test_save_every_and_eval_every_flow_into_the_plan_the_summary_and_the_script(tmp_path):
    plan = plan_of("--size", "5B", "--tokens", "80B", "--save-every", "50", "--eval-every", "25")
    assert plan.ok, plan.problems
    assert (plan.save_every, plan.eval_every) == (50, 25)
    assert "last/ saved every 50 steps (~" in plan_lines(plan)[-1]
    assert "validation run every 25 steps" in plan_lines(plan)[-1]
    train = trainer_reads(plan)
    assert (train.save_every, train.eval_every, train.max_steps) == (50, 25, plan.steps)
    saw = run_script(slurm_script(plan), tmp_path, tmp_path)
    assert (saw[saw.index("--save-every") + 1], saw[saw.index("--eval-every") + 1]) == ("50", "25")

    only_save = plan_of("--size", "5B", "--tokens", "80B", "--save-every", "7")  # validation with each save
    assert (only_save.save_every, only_save.eval_every) == (7, 7)
    assert "last/ saved and validation run every 7 steps" in plan_lines(only_save)[-1]
    no_val = plan_of("--size", "5B", "--tokens", "80B", "--eval-every", "0")
    default = plan_of("--size", "5B", "--tokens", "80B")
    assert (no_val.eval_every, no_val.save_every) == (0, default.save_every)
    assert f"last/ saved every {no_val.save_every:,} steps" in plan_lines(no_val)[-1]
    assert "validation run at the start and the end only" in plan_lines(no_val)[-1]


def test_an_explicit_save_every_is_checked_against_the_jobs_time_limit(capsys):
    """The report's case: a 30-minute limit on a 5B run; --save-every 0 would never save last/."""
    long_run = ["--size", "5B", "--tokens", "80B", "--time", "00:30:00"]
    never = plan_of(*long_run, "--save-every", "0")
    assert not never.ok
    assert any("--save-every 0 (at the end only)" in p and "start over" in p for p in never.problems)
    step_hours = never.hours / never.steps
    beyond, loose = math.ceil(0.5 / step_hours) + 1, math.floor(0.4 / step_hours)  # the limit is 0.5 h
    rare = plan_of(*long_run, "--save-every", str(beyond))
    assert not rare.ok and any(f"--save-every {beyond}:" in p for p in rare.problems), rare.problems
    loosely = plan_of(*long_run, "--save-every", str(loose))
    assert loosely.ok, loosely.problems
    assert any("more than half of a job's time limit" in w for w in loosely.warnings), loosely.warnings
    assert f"last/ saved and validation run every {loose:,} steps" in plan_lines(loosely)[-1]
    default = plan_of(*long_run)
    assert default.ok and 1 <= default.save_every <= 0.25 / step_hours
    one_job = plan_of("--save-every", "0")  # the run fits in one job: saved at its end
    assert one_job.ok, one_job.problems
    assert "last/ saved only at the end (step" in plan_lines(one_job)[-1]
    assert "validation run at the start and the end only" in plan_lines(one_job)[-1]  # with the save


def test_save_every_and_eval_every_refuse_negative_numbers(capsys):
    for flag in ("--save-every", "--eval-every"):
        assert main([*BASE, flag, "-1", "--dry-run"]) == 2
        assert flag in capsys.readouterr().err
    plan = make_plan(LaunchConfig(size="nano", tokens=10**6, seq_len=512, save_every=-1))
    assert any("--save-every must be a whole number of steps" in p for p in plan.problems)


# --- acceptance: every flag that takes a value, fed control characters and shell syntax -----------


def value_flags() -> list[str]:
    (sub,) = [a for a in launch_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    actions = sub.choices["launch"]._actions
    return sorted(a.option_strings[0] for a in actions if a.option_strings and a.nargs is None
                  and isinstance(a, (argparse._StoreAction, argparse._AppendAction)))  # fmt: skip


def forms(flag: str, payload: str) -> list[str]:
    """The payload as the flag's value, and inside a value where the flag takes KEY=VALUE or flags."""
    if flag == "--train-arg":
        return [payload, f"--init-from={payload}", f"--device={payload}", f"--{payload}"]
    if flag == "--model-override":
        return [f"hidden_act={payload}", f"{payload}=1", payload]
    return [payload]


def test_the_acceptance_run_covers_every_value_flag():
    flags = value_flags()
    for flag in ("--job-name", "--partition", "--account", "--log-dir", "--time", "--venv", "--workdir",
                 "--data", "--val-data", "--tokenizer", "--run-dir", "--train-arg", "--mix",
                 "--init-from", "--resume", "--device", "--model-override", "--out", "--size", "--gpu",
                 "--tokens"):  # fmt: skip
        assert flag in flags


@pytest.mark.parametrize("flag", value_flags())
def test_every_value_flag_is_refused_or_written_harmlessly(flag, tmp_path, capsys):
    accepted = 0
    for i, payload in enumerate(PAYLOADS):
        for j, value in enumerate(forms(flag, payload)):
            case = tmp_path / f"case{i}-{j}"
            run = case / "run"
            run.mkdir(parents=True)
            out = run / (value if flag == "--out" else "job.sbatch")
            given = str(out) if flag == "--out" else value
            argv = [*BASE, f"{flag}={given}"] + ([] if flag == "--out" else ["--out", str(out)])
            code = main(argv)
            printed = capsys.readouterr()
            assert not list(case.rglob("PWNED"))
            if code != 0:
                assert code == 2, (value, printed.err)
                assert flag in printed.err or repr(value) in printed.err or value in printed.err, printed.err
                assert "Traceback" not in printed.err
                assert not out.exists()
                continue
            accepted += 1
            script = out.read_text()
            assert {"--nodes", "--gpus-per-node", "--time", "--output"} <= set(directives(script)), script
            if flag in ("--workdir", "--venv"):  # both exist, so that the script goes on to torchrun
                (run / value / "bin").mkdir(parents=True)
                (run / value / "bin" / "activate").write_text("")
            saw = run_script(script, case, run)
            assert not (run / "SBATCH_RAN").exists()
            if flag == "--model-override":  # written as KEY=JSON, read back as the trainer reads it
                read = [model_override(a) for a in saw if a.startswith("hidden_act=")]
                assert ("hidden_act", payload) in read, saw
            elif flag not in ("--out", "--workdir", "--venv"):
                assert any(payload in arg for arg in saw), (value, saw)
    if flag in ("--run-dir", "--tokenizer", "--val-data", "--data", "--init-from", "--resume", "--venv",
                "--workdir", "--out", "--train-arg", "--model-override"):  # fmt: skip
        assert accepted >= 7, accepted  # quoted, not refused: all but the control characters
