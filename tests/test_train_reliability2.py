"""`littlekit train` and `littlekit launch` against what a careless or hostile user does (issue 26).

Here: a launch plan whose jobs are shorter than its checkpoint interval.
"""

from __future__ import annotations

from dataclasses import replace

from littlekit.cli import main
from littlekit.lm.launch import LaunchConfig, make_plan, parse_slurm_time, plan_lines

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
