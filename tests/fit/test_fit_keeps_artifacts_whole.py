"""`littlekit fit` never leaves a mixed artifacts folder: a step whose product is there is refused
without --force, an interrupted refit leaves the folder as it was, and a completed refit takes out
what was made from what it replaced."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from littlekit.cli import main
from littlekit.filter.artifacts import artifact_problems
from littlekit.filter.filter_config import read_operating_point
from littlekit.fit import command as fit_command
from littlekit.fit.operating_point import JOINT_POINT
from littlekit.fit.steps import made_from_any
from littlekit.swap import restore_interrupted_swap, staged_folder

pytest.importorskip("fasttext")

# the sample sizes of the session's `fit all` (conftest's QUICK_FIT): a word table over 800 pool
# documents, not the 6,725 of the default (53 s of a refit)
QUICK = ["--sample-per-band", "30", "--train-sample-size", "60", "--pool-sample-size", "800"]


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root by relative path: its SHA-256."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def run(quick_fit_run, tmp_path) -> Path:
    """A copy of the session's run folder whose artifacts every step has made (conftest)."""
    copy = tmp_path / "run"
    shutil.copytree(quick_fit_run, copy)
    return copy


def test_the_steps_made_from_a_step_follow_the_fit_order():
    assert made_from_any(("fasttext",)) == ["operating-point", "word-table"]
    assert made_from_any(("labels",)) == ["fasttext", "encoder", "operating-point", "word-table"]
    assert made_from_any(("operating-point",)) == ["word-table"]
    assert made_from_any(("word-table",)) == []


@pytest.mark.parametrize("step", ["all", "labels", "fasttext", "encoder", "operating-point", "word-table"])
def test_a_finished_step_is_refused_without_force_and_nothing_changes(run, step, capsys):
    before = tree_digest(run)
    assert main(["fit", step, "--out", str(run / "artifacts"), *QUICK]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and str(run / "artifacts") in err
    assert tree_digest(run) == before


def test_an_interrupted_refit_leaves_the_folder_as_it_was(run, monkeypatch, capsys):
    """Interrupted after the new model is written (the old point, encoder and word table beside it
    would be a mixed folder): the folder is the old one, byte for byte, and no staging is left."""
    artifacts = run / "artifacts"
    before = tree_digest(artifacts)
    written = []

    def interrupt(*args, **kwargs):
        written.extend(p for p in artifacts.parent.glob(".artifacts.partial-*/models/fasttext_grade.bin"))
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_command, "tune_fasttext_point", interrupt)
    assert main(["fit", "fasttext", "--force", "--out", str(artifacts)]) == 130
    assert written, "the interruption came after the new model was written"
    assert tree_digest(artifacts) == before
    assert not list(run.glob(".artifacts.*"))


def test_a_completed_fasttext_refit_takes_out_what_was_made_from_the_old_model(run, capsys, tmp_path):
    artifacts = run / "artifacts"
    point = read_operating_point(artifacts)
    assert point.chosen_on == JOINT_POINT and "stage5" in point.details  # the joint point, stage 5's share
    encoder_before = tree_digest(artifacts / "models" / "modernbert_grade")
    assert main(["fit", "fasttext", "--force", "--seed", "1", "--out", str(artifacts), *QUICK]) == 0
    printed = capsys.readouterr().out
    assert "operating-point, word-table were made from" in printed
    assert "`littlekit fit operating-point" in printed and "`littlekit fit word-table" in printed
    point = read_operating_point(artifacts)
    assert point.chosen_on != JOINT_POINT and "stage5" not in point.details  # stage 2's own point only
    assert point.max_aoa is None and point.encoder_min_k5_prob is None and point.min_blocked_share is None
    assert not (artifacts / "data" / "word_log_odds.parquet").exists()
    assert tree_digest(artifacts / "models" / "modernbert_grade") == encoder_before  # made from labels only
    assert any("word_log_odds" in problem for problem in artifact_problems(artifacts, "all"))

    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": "The cat sat on the mat."}) + "\n")
    kept = tmp_path / "kept.jsonl"
    argv = ["filter", "--in", str(docs), "--out", str(kept), "--stages", "all", "--artifacts", str(artifacts)]
    assert main([*argv, "--quiet"]) != 0  # the folder no longer claims a word table
    assert "word_log_odds.parquet" in capsys.readouterr().err

    for step in ("operating-point", "word-table"):
        assert main(["fit", step, "--out", str(artifacts), *QUICK, "--no-corpus-holdout"]) == 0
    assert artifact_problems(artifacts, "all") == []
    point = read_operating_point(artifacts)
    assert point.chosen_on == JOINT_POINT and "stage5" in point.details


def test_an_operating_point_refit_starts_from_stage_2s_own_point(run):
    """The joint point is not read back as stage 2's: a refit restores fastText's own point first."""
    artifacts = run / "artifacts"
    own = json.loads((run / "fasttext" / "operating_point.json").read_text())
    joint = read_operating_point(artifacts)
    # the corpus holdout bears on the every-kind point only, not on the pooled one the folder holds
    assert main(["fit", "operating-point", "--force", "--out", str(artifacts), *QUICK,
                 "--no-corpus-holdout"]) == 0  # fmt: skip
    again = read_operating_point(artifacts)
    assert set(own["thresholds"]) <= {"fasttext"}  # stage 2's own point sets no other stage's
    assert (again.fasttext_min_k5_prob, again.encoder_min_k5_prob, again.max_aoa) == (
        joint.fasttext_min_k5_prob, joint.encoder_min_k5_prob, joint.max_aoa)  # fmt: skip
    assert again.min_blocked_share is None  # chosen with the old point: word-table must run again


# --- write beside, then swap ---------------------------------------------------------------------


def test_a_staged_folder_is_swapped_in_whole_or_not_at_all(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), staged_folder(target) as staging:
        (staging / "a.txt").write_text("new")
        raise RuntimeError("the work failed")
    assert (target / "a.txt").read_text() == "old" and sorted(tmp_path.iterdir()) == [target]
    with staged_folder(target) as staging:
        assert (staging / "a.txt").read_text() == "old"  # a copy to add to
        (staging / "b.txt").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["a.txt", "b.txt"]
    assert sorted(tmp_path.iterdir()) == [target]


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_crash_between_the_swaps_renames_is_undone_by_the_next_run(tmp_path):
    target = tmp_path / "out"
    old = tmp_path / f".out.old-{dead_pid()}"  # what a run killed between the two renames leaves
    old.mkdir()
    (old / "a.txt").write_text("complete")
    partial = tmp_path / f".out.partial-{dead_pid()}"
    partial.mkdir()
    assert restore_interrupted_swap(target) == target
    assert (target / "a.txt").read_text() == "complete" and sorted(tmp_path.iterdir()) == [target]


def test_the_staging_of_a_live_run_is_left_alone(tmp_path):
    target = tmp_path / "out"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        staging = tmp_path / f".out.partial-{live.pid}"
        staging.mkdir()
        restore_interrupted_swap(target)
        assert staging.is_dir()
    finally:
        live.kill()
        live.wait()
