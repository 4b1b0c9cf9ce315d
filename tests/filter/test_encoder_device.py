"""Stage 3 on a GPU (issue 40, item 8): the exact device, a failing batch that stops the run, a GPU
for the Slurm tasks, and thresholds stated for the precision they were fitted in.

This machine has no GPU: the device tests follow the device string to the torch.device the model
and its inputs get, and check that a CUDA device torch cannot see is a clear error.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import dill
import numpy as np
import pandas as pd
import pytest
import torch

from littlekit.cli import main
from littlekit.filter.base import Decision, Stage
from littlekit.filter.cascade import ERRORED, KEPT, BatchScoringError, Cascade
from littlekit.filter.datatrove.blocks import LittleKitFilter
from littlekit.filter.datatrove.pipeline import make_executor
from littlekit.filter.encoder import EncoderStage, PrecisionWarning, pick_device
from littlekit.filter.encoder_device import (
    PRECISION_CPU,
    DeviceUnavailable,
    encoder_device,
    precision_warning,
    resolve_device,
    scoring_precision,
)
from littlekit.filter.filter_config import OperatingPoint
from littlekit.io import Document

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without a GPU")
TEXTS = ["the cat sat on the mat", "quantum field theory of gauge bosons"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    from littlekit.fit.encoder import build_tiny_modernbert

    out = tmp_path_factory.mktemp("encoder") / "model"
    build_tiny_modernbert(
        TEXTS, out, vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    return out


# --- (a) the exact device ---------------------------------------------------------------------


def test_a_device_string_keeps_its_index_up_to_the_inputs_device():
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device("cuda:1").index == 1 and str(resolve_device("cuda:1")) == "cuda:1"
    assert resolve_device(torch.device("cuda:3")).index == 3
    assert resolve_device("cpu") == torch.device("cpu")
    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == resolve_device(None).type == resolve_device("").type == here
    assert scoring_precision("cuda:1") == "cuda/bfloat16" and scoring_precision("cpu") == PRECISION_CPU


@NO_GPU
def test_a_cuda_device_without_a_gpu_is_a_clear_error_not_a_cpu_run():
    for device in ("cuda", "cuda:1"):
        expected = rf"encoder device {device} asks for a GPU, but torch .* sees none"
        with pytest.raises(DeviceUnavailable, match=expected):
            encoder_device(device)
        with pytest.raises(ValueError, match="asks for a GPU"):
            pick_device(device)  # what the encoder's fit uses too
    assert pick_device("auto") == pick_device(None) == "cpu"


@NO_GPU
def test_the_stage_on_a_missing_gpu_says_so_rather_than_blaming_its_weights(model_dir):
    # Before, inputs went to the device's type alone ("cuda", i.e. cuda:0) and the self check,
    # failing there, reported damaged weights.
    with pytest.raises(ValueError, match="asks for a GPU") as err:
        EncoderStage(model_dir, device="cuda:1", grade_head="none")
    assert "self check" not in str(err.value)


def test_the_stage_keeps_the_whole_device_of_its_model(model_dir):
    stage = EncoderStage(model_dir, device="cpu", grade_head="none")
    assert stage.device == str(next(stage.model.parameters()).device) == "cpu"
    assert stage.precision == PRECISION_CPU
    assert [s["band"] is not None for s in stage.score_batch(TEXTS)] == [True, True]


# --- (b) a failing batch stops the run --------------------------------------------------------


def test_a_real_encoder_whose_batch_fails_stops_the_cascade_naming_it(model_dir):
    stage = EncoderStage(model_dir, device="cpu", grade_head="none", batch_size=8)
    stage.model.to("meta")  # weights gone: the forward pass runs, reading its output raises
    documents = [Document(str(i), text, line=i + 1) for i, text in enumerate(TEXTS * 3)]
    run = Cascade([stage], batch_size=4).run(documents)
    where = r"stage encoder failed on batch 1 \(records from line 1"
    with pytest.raises(BatchScoringError, match=where) as err:
        run.consume()
    assert err.value.__cause__ is not None and "device cpu" in str(err.value)
    assert run.report.read == 0 and "batch 1" in run.report.stopped
    run.report.check()


class ScoresThenDecides(Stage):
    """Batched; its decide raises on one document: that document's error, not the batch's."""

    name = "decides"

    def score(self, text: str) -> dict[str, Any]:
        return {"odd": "odd" in text}

    def score_batch(self, texts: list[str]) -> list[dict[str, Any]]:
        return [self.score(text) for text in texts]

    def decide(self, scores: dict[str, Any]) -> Decision:
        if scores["odd"]:
            raise ValueError("cannot decide")
        return Decision(True, None, scores)


def test_one_documents_decide_error_stays_that_documents_stage_error():
    documents = [Document(str(i), text, line=i + 1) for i, text in enumerate(["a", "odd one", "b"])]
    outcomes = list(Cascade([ScoresThenDecides()]).run(documents))
    assert [(o.status, o.reason) for o in outcomes] == [
        (KEPT, None),
        (ERRORED, "stage_error:decides"),
        (KEPT, None),
    ]


# --- (d) the precision of the thresholds ------------------------------------------------------


def test_scoring_in_another_precision_than_the_fit_warns(model_dir):
    with pytest.warns(PrecisionWarning, match=r"scores in cpu/float32, .* fitted in cuda/bfloat16: .* 0\.01"):
        EncoderStage(model_dir, device="cpu", grade_head="none", fitted_precision="cuda/bfloat16")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        EncoderStage(model_dir, device="cpu", grade_head="none", fitted_precision=PRECISION_CPU)
        EncoderStage(model_dir, device="cpu", grade_head="none")  # nothing stated, nothing to compare
    message = precision_warning("cuda/bfloat16", PRECISION_CPU)
    assert "near a threshold" in message and "--device cpu" in message


def test_the_run_report_records_the_precision_the_encoder_scored_in(model_dir):
    stage = EncoderStage(model_dir, device="cpu", grade_head="none", min_k5_prob=0.0)
    report = Cascade([stage]).run([Document("1", TEXTS[0], line=1)]).consume()
    assert report.to_dict()["precision"] == {"encoder": PRECISION_CPU}


def test_the_operating_point_states_its_precision_and_old_files_still_load(tmp_path):
    old = tmp_path / "old" / "filter_config.json"
    old.parent.mkdir()
    old.write_text(json.dumps({"thresholds": {"encoder": {"encoder_min_k5_prob": 0.4}}, "chosen_on": "x"}))
    point = OperatingPoint.load(old)  # written before the field: fitted on the CPU in fp32
    assert point.fitted_precision == {"encoder": PRECISION_CPU}
    assert point.stage_options(["encoder"]) == {
        "encoder_min_k5_prob": 0.4,
        "encoder_fitted_precision": PRECISION_CPU,
    }
    assert OperatingPoint(fasttext_min_k5_prob=0.3).stage_options(["encoder"]) == {}  # no encoder threshold
    saved = OperatingPoint(encoder_min_k5_prob=0.5, fitted_precision={"encoder": "cuda/bfloat16"})
    again = OperatingPoint.load(saved.save(tmp_path / "new"))
    assert again.fitted_precision == {"encoder": "cuda/bfloat16"}
    assert json.loads((tmp_path / "new" / "filter_config.json").read_text())["fitted_precision"] == {
        "encoder": "cuda/bfloat16"
    }
    with pytest.raises(ValueError, match="DEVICE_TYPE/DTYPE"):
        OperatingPoint(fitted_precision={"encoder": "bf16"})
    with pytest.raises(ValueError, match="unknown stage"):
        OperatingPoint(fitted_precision={"nope": PRECISION_CPU})


# --- (c) a GPU for the Slurm tasks ------------------------------------------------------------


def test_the_slurm_executor_asks_for_the_gpus(tmp_path):
    runner = make_executor(
        [], "slurm", tasks=2, logging_dir=tmp_path, time="01:00:00", partition="gpu", gpus_per_task=1
    )
    args = runner.get_sbatch_args()
    assert args["gpus"] == 1
    assert "#SBATCH --gpus=1" in runner.get_launch_file_contents(args, "echo run")


def _fake_sbatch(tmp_path: Path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text('#!/bin/sh\necho "Submitted batch job 4242"\n')
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _encoder_block(logging_dir: Path) -> LittleKitFilter:
    """The encoder block of the executor a Slurm task unpickles."""
    with (logging_dir / "executor.pik").open("rb") as handle:
        pickled = dill.load(handle)
    (block,) = [step for step in pickled.pipeline if isinstance(step, LittleKitFilter)]
    assert block.stage_name == "encoder" and block._stage is None  # built in the task, on its GPU
    return block


def _slurm_cli(tmp_path: Path, model_dir: Path, *extra: str) -> int:
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    return main([
        "filter", "--in", str(source), "--out", str(tmp_path / "kept"), "--stages", "encoder",
        "--encoder-model", str(model_dir), "--encoder-gate", "all", "--executor", "slurm",
        "--logging-dir", str(tmp_path / "logs"), "--slurm-partition", "gpu", "--slurm-time", "01:00:00",
        *extra,
    ])  # fmt: skip


def test_slurm_gpus_reach_the_script_and_the_encoder_device_the_tasks(tmp_path, monkeypatch, model_dir):
    _fake_sbatch(tmp_path, monkeypatch)
    assert _slurm_cli(tmp_path, model_dir, "--slurm-gpus-per-task", "1") == 0
    assert "#SBATCH --gpus=1" in (tmp_path / "logs" / "launch_script.slurm").read_text()
    assert _encoder_block(tmp_path / "logs").options["device"] == "cuda"  # never a silent CPU run


def test_a_given_device_index_reaches_the_tasks_as_given(tmp_path, monkeypatch, model_dir):
    _fake_sbatch(tmp_path, monkeypatch)
    assert _slurm_cli(tmp_path, model_dir, "--slurm-gpus-per-task", "2", "--device", "cuda:1") == 0
    assert "#SBATCH --gpus=2" in (tmp_path / "logs" / "launch_script.slurm").read_text()
    assert _encoder_block(tmp_path / "logs").options["device"] == "cuda:1"


def test_a_cuda_device_on_slurm_without_gpus_is_refused(tmp_path, monkeypatch, model_dir, capsys):
    _fake_sbatch(tmp_path, monkeypatch)
    assert _slurm_cli(tmp_path, model_dir, "--device", "cuda") == 2
    assert "needs GPUs for the tasks: add --slurm-gpus-per-task 1" in capsys.readouterr().err
    assert not (tmp_path / "logs" / "launch_script.slurm").exists()


@NO_GPU
def test_the_filter_command_on_a_missing_gpu_blames_the_machine_not_the_model(tmp_path, model_dir, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    code = main([
        "filter", "--in", str(source), "--out", str(tmp_path / "kept.jsonl"), "--stages", "encoder",
        "--encoder-model", str(model_dir), "--encoder-gate", "all", "--device", "cuda:1",
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "asks for a GPU" in err
    assert "rebuild" not in err and "littlekit fit" not in err  # no model rebuild helps a missing GPU
    assert not (tmp_path / "kept.jsonl").exists()


def test_a_batch_failing_midway_keeps_what_was_written_and_the_report(
    tmp_path, model_dir, monkeypatch, capsys
):
    """A CUDA error hours into a run must not throw the kept documents away: the run stops (exit 1)
    with its partial output and a report saying where it stopped, the counts adding up."""
    calls = {"n": 0}
    real = EncoderStage.score_batch

    def fails_on_the_third_batch(self, texts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("CUDA error: out of memory")
        return real(self, texts)

    monkeypatch.setattr(EncoderStage, "score_batch", fails_on_the_third_batch)
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS * 10)))
    kept, report = tmp_path / "kept.jsonl", tmp_path / "report.json"
    code = main([
        "filter", "--in", str(source), "--out", str(kept), "--stages", "encoder", "--encoder-model",
        str(model_dir), "--encoder-gate", "all", "--batch-rows", "4", "--report", str(report),
        "--rejected", str(tmp_path / "rejected.jsonl"),
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "stage encoder failed on batch 3" in err and "out of memory" in err
    (written,) = [p for p in tmp_path.iterdir() if p.name.startswith("kept.jsonl")]  # the partial file
    (reported,) = [p for p in tmp_path.iterdir() if p.name.startswith("report.json")]
    summary = json.loads(reported.read_text())
    assert "batch 3" in json.dumps(summary)
    (dropped,) = [p for p in tmp_path.iterdir() if p.name.startswith("rejected.jsonl")]
    rows = written.read_text().splitlines() + dropped.read_text().splitlines()
    assert len(rows) == 8 and not kept.exists()  # batches 1 and 2, whole; never swapped in as final


def _scored_pool(precision: list[str | None]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = len(precision)
    band = np.where(np.arange(n) % 2 == 0, "K5", "K12")
    p = np.clip(np.where(band == "K5", 0.7, 0.3) + rng.normal(0, 0.15, n), 0, 1)
    return pd.DataFrame({
        "band": band, "pred": np.where(p > 0.5, "K5", "K12"), "p_k5": p, "source": "web",
        "fold": np.arange(n) % 5,
        "enc_pred": np.where(p > 0.45, "K5", "K12"), "enc_p_k5": p, "enc_precision": precision,
    })  # fmt: skip


def test_a_joint_point_states_the_precision_its_encoder_scores_were_made_in():
    """A fit on a GPU scores stage 3 in bf16: its filter_config.json must say so, not cpu/float32."""
    from littlekit.fit.operating_point import choose_joint

    on_gpu = choose_joint(_scored_pool(["cuda/bfloat16"] * 200), target=0.1)
    assert on_gpu.point.fitted_precision == {"encoder": "cuda/bfloat16"}
    stored_before = _scored_pool([None] * 200).drop(columns="enc_precision")  # scores saved earlier
    assert choose_joint(stored_before, target=0.1).point.fitted_precision == {"encoder": PRECISION_CPU}
    with pytest.raises(ValueError, match="mix precisions"):
        choose_joint(_scored_pool(["cuda/bfloat16", "cpu/float32"] * 100), target=0.1)
