"""Post-training (`littlekit.experiments.posttraining`): the re-banding rule, the reward against
the grader, the SFT and GSM8K data, and SFT and GRPO smoke runs with TRL's real trainers on a tiny
Qwen3, offline."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from train_data import saved_curriculum_qwen3

from littlekit.curriculum.formats import render
from littlekit.curriculum.generate import generate
from littlekit.curriculum.units import select_units
from littlekit.evals import curriculum as ce
from littlekit.experiments import posttraining as pt

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# --- re-banding --------------------------------------------------------------------------------------


def test_reband_keeps_problems_solved_one_to_fifteen_times_of_sixteen():
    counts = [0, 1, 7, 15, 16, 2, 0]
    assert pt.reband(counts) == [1, 2, 3, 5]
    assert pt.reband(counts, n_samples=16, low=0, high=16) == list(range(len(counts)))
    assert pt.reband([0, 0, 16]) == []  # no advantage anywhere: nothing left to learn from


def test_reband_refuses_a_count_above_the_samples():
    with pytest.raises(ValueError, match="between 0 and 16"):
        pt.reband([3, 17])
    with pytest.raises(ValueError, match="between 0 and 8"):
        pt.reband([-1], n_samples=8)


def test_banding_counts_every_band_and_adds_up():
    records = [{"band": "K5"}] * 4 + [{"band": "BEYOND"}] * 3
    found = pt.banding([0, 5, 16, 1, 0, 0, 9], records, pt.PostTrainingConfig())
    assert found["kept"] == [1, 3, 6]
    assert found["by_band"]["K5"] == {"problems": 4, "in_band": 2, "never": 1, "always": 1}
    assert found["by_band"]["BEYOND"] == {"problems": 3, "in_band": 1, "never": 2, "always": 0}


def test_config_checks_its_batch_and_band():
    with pytest.raises(ValueError, match="multiple of"):
        pt.PostTrainingConfig(grpo_batch=12, num_generations=8)
    with pytest.raises(ValueError, match="pass_low"):
        pt.PostTrainingConfig(pass_low=9, pass_high=4)


# --- the reward is the grader's verdict ------------------------------------------------------------


def test_the_reward_is_one_exactly_when_the_grader_accepts():
    records = generate(select_units("all"), 2, seed=5, fmt="scratchpad")
    right = [
        render(r["statement"], r["steps"], r["answer"], "scratchpad")[len(ce.prompt(r)) :] for r in records
    ]
    wrong = [text.rsplit("Answer:", 1)[0] + "Answer: 123456789" for text in right]
    reward = pt.CurriculumReward()
    golds, formats = [r["answer"] for r in records], [r["format"] for r in records]
    assert reward([ce.prompt(r) for r in records], right, golds, formats) == [1.0] * len(records)
    assert reward([ce.prompt(r) for r in records], wrong, golds, formats) == [0.0] * len(records)
    assert reward(["q"], ["no answer line"], ["3"], ["scratchpad"]) == [0.0]
    assert reward(["q"], ["Reversed answer: 21"], ["12"], ["reversed"]) == [1.0]


# --- data -------------------------------------------------------------------------------------------


def test_gsm8k_solutions_become_steps_and_an_answer():
    frame = pd.DataFrame(
        {
            "question": ["Natalia sold 48 clips in April and half as many in May. How many altogether?"],
            "answer": [
                "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
                "She sold 48+24 = <<48+24=72>>72.\n#### 1,072"
            ],
        }
    )
    (record,) = pt.gsm8k_records(frame)
    assert record["steps"] == ["Natalia sold 48/2 = 24 clips in May.", "She sold 48+24 = 72."]
    assert record["answer"] == "1072" and record["band"] == "GSM8K"
    assert record["text"].endswith("\nAnswer: 1072")
    with pytest.raises(ValueError, match="gsm8k-train-00000"):
        pt.gsm8k_records(pd.DataFrame({"question": ["q"], "answer": ["no final line"]}))


def test_sft_rows_hold_the_share_of_gsm8k_and_split_at_the_prompt():
    curriculum = pt.curriculum_records("K5", 2, seed=1, registers=("prose", "compact"))
    assert len(curriculum) == 2 * 2 * len(select_units("K5"))
    gsm8k = pt.gsm8k_records(
        pd.DataFrame(
            {
                "question": [f"Q{i}?" for i in range(5)],
                "answer": [f"{i}+1 = {i + 1}\n#### {i + 1}" for i in range(5)],
            }
        )
    )
    rows = pt.sft_rows(curriculum, gsm8k, n_rows=40, gsm8k_share=0.1, seed=0)
    assert len(rows) == 40
    assert sum(row["prompt"].startswith("Q") for row in rows) == 4
    texts = {r["text"] for r in curriculum + gsm8k}
    assert all(row["prompt"] + row["completion"] in texts for row in rows)
    assert all(row["completion"].rstrip().splitlines()[-1].startswith("Answer: ") for row in rows)
    few = pt.sft_rows(curriculum, gsm8k[:1], n_rows=40, gsm8k_share=0.5, seed=0)
    assert sum(row["prompt"].startswith("Q") for row in few) == 1  # no more GSM8K than there is


def test_gsm8k_choice_keeps_only_what_the_cascade_keeps_for_kept():
    records = [{"id": str(i)} for i in range(4)]
    kept = [True, False, True, False]
    assert [r["id"] for r in pt.gsm8k_choice(records, kept, "kept")] == ["0", "2"]
    assert len(pt.gsm8k_choice(records, kept, "all")) == 4
    with pytest.raises(ValueError, match="'kept' or 'all'"):
        pt.gsm8k_choice(records, kept, "some")


def test_the_paper_runs_pair_models_with_their_data():
    assert [(r.model, r.pool_units) for r in pt.PAPER_RUNS] == [
        ("littlelearner", "K5"),
        ("littlelearner", "all"),
        ("unfiltered", "all"),
    ]
    gsm8k = [{"id": f"g{i}", "band": "GSM8K"} for i in range(10)]
    config = pt.PostTrainingConfig(pool_per_unit=1, pool_gsm8k=3)
    pools = [pt.grpo_pool(run, gsm8k, [i < 2 for i in range(10)], config) for run in pt.PAPER_RUNS]
    assert {r["band"] for r in pools[0]} == {"K5", "GSM8K"}
    assert sum(r["band"] == "GSM8K" for r in pools[0]) == 2  # only the kept ones
    assert {r["band"] for r in pools[2]} == {"K5", "BEYOND", "GSM8K"}
    assert [r["id"] for r in pools[1] if r["band"] == "K5"] == [
        r["id"] for r in pools[0] if r["band"] == "K5"
    ]


# --- SFT and GRPO with TRL's trainers on a tiny Qwen3 ---------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("base"), "scratchpad")


SMOKE = pt.PostTrainingConfig(
    sft_steps=2,
    sft_batch=4,
    grpo_segments=1,
    grpo_steps=2,
    grpo_batch=8,
    num_generations=4,
    max_completion_length=12,
    band_samples=4,
    pass_low=0,
    pass_high=4,
)


@pytest.mark.slow
def test_sft_and_grpo_smoke_runs_save_models_that_load(model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    curriculum = pt.curriculum_records("K5", 1, seed=1, registers=("compact",))
    rows = pt.sft_rows(curriculum, [], n_rows=8, gsm8k_share=0.0, seed=0)
    sft = pt.run_sft(model_dir, rows, tmp_path / "sft", SMOKE)
    losses = [entry["loss"] for entry in json.loads((sft / "log.json").read_text()) if "loss" in entry]
    assert losses and all(loss > 0 for loss in losses)
    base, tuned = (AutoModelForCausalLM.from_pretrained(p) for p in (model_dir, sft))
    assert any(not torch.equal(a, b) for a, b in zip(base.parameters(), tuned.parameters(), strict=True))

    pool = generate(select_units("K5")[:4], 1, seed=2, fmt="scratchpad")
    final, history = pt.run_grpo(sft, pool, tmp_path / "grpo", SMOKE)
    assert final == tmp_path / "grpo" / "segment-1"
    assert len(history) == 1 and history[0]["pool"] == len(pool)  # the band 0-4 keeps everything
    assert sum(row["problems"] for row in history[0]["by_band"].values()) == len(pool)
    log = json.loads((final / "log.json").read_text())
    assert [entry["step"] for entry in log if "reward" in entry] == [1, 2]
    AutoModelForCausalLM.from_pretrained(final)


@pytest.mark.slow
def test_grpo_stops_when_the_band_is_empty(model_dir, tmp_path):
    strict = pt.PostTrainingConfig(**{**SMOKE.__dict__, "pass_low": 1, "pass_high": 3})
    pool = generate(select_units("BEYOND")[:2], 1, seed=2, fmt="scratchpad")
    final, history = pt.run_grpo(model_dir, pool, tmp_path / "grpo", strict)
    assert final == model_dir  # a random model never solves a Beyond problem: no GRPO step is run
    assert history[0]["pool"] == 0 and "problems in the band" in history[0]["stopped"]
    assert not (tmp_path / "grpo").exists()


@pytest.mark.slow
def test_jobs_run_side_by_side_and_evaluate(model_dir, tmp_path):
    records = generate(select_units("K5")[:2], 1, seed=4, fmt="scratchpad")
    evaluation = pt.Evaluation(tuple(records), tuple(records[:1]), n_samples=2, max_new_tokens=8)
    results = pt.run_jobs([pt.EvalJob("base", str(model_dir), evaluation)] * 2, processes=2)
    assert [r["label"] for r in results] == ["base", "base"]
    assert len(results[0]["greedy"]) == 2 and results[0]["sampled"]["n"].tolist() == [2]
    pd.testing.assert_frame_equal(results[0]["greedy"], results[1]["greedy"])
