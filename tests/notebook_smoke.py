"""The book's notebooks with tiny parameters, run through papermill as `make book` runs them.

Add a notebook by appending (file name, tiny parameters) to NOTEBOOKS (a course exercise notebook:
to EXERCISES, which run after every chapter). The filter's chapters run in `SMOKE_RUN` and the
training chapters in `TRAIN_SMOKE_RUN`: two chains that read nothing of each other, so
tests/book/test_notebooks.py and tests/book/test_notebooks_training.py run them on two workers at once.
Outputs go to runs/pytest-smoke/ and runs/pytest-smoke-training/, never to a chapter's default run.
"""

import os

import pytest

from littlekit.config import REPO_ROOT

papermill = pytest.importorskip("papermill")

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
SMOKE_RUN = "pytest-smoke"
TRAIN_SMOKE_RUN = "pytest-smoke-training"
# the curriculum units chapters 16-18 evaluate in the smoke run: two of each band, so every
# per-band table and verdict cell still runs (all 57 units cost a minute of generation there)
SMOKE_UNITS = ["count_on", "add_sub_within_10", "negative_results", "whole_number_exponents"]
# SIDE_BY_SIDE: the jobs run one after the other in the kernel, not in two spawned processes: on the
# test's core (the other worker has the other) two processes only add their imports, 20 s of CPU a
# chapter (chapter 9 took 34 s of CPU side by side, 14 s in turn). The spawned path is tested where
# the library runs the same jobs that way: train_side_by_side in tests/lm/test_train.py, chapter 16's
# run_jobs in tests/experiments/test_posttraining.py. Chapters 17 and 18 keep theirs: nothing else
# runs their jobs in spawned processes.
NOTEBOOKS = [
    ("01_age_of_acquisition.ipynb", {"sample_size": 50, "passages_per_band": 15}),
    ("02_llm_judge.ipynb", {"max_per_band": 60, "sample_per_band": 60}),
    (
        "03_fasttext_classifier.ipynb",
        {"epoch": 2, "dim": 8, "max_per_band": 60, "tuning_folds": 2, "source_sample_per_band": 60},
    ),
    (
        "04_encoder_classifier.ipynb",
        {  # one torch thread: the other test worker has the other core, and two threads spin against it
            "epochs": 4,
            "max_length": 32,
            "train_sample_size": 200,
            "vocab_size": 500,
            "speed_sample_size": 2,
            "torch_threads": 1,
        },
    ),
    (
        "05_symbolic_filter.ipynb",
        {"sample_size": 120, "math_sample_size": 40, "examples_per_family": 1, "adversarial_chars": 20_000},
    ),
    ("06_frequency_sampling.ipynb", {"corpus_sample_size": 300, "min_count": 3, "head_size": 5}),
    (  # needs chapters 3, 4 and 6 of the same run first (it stops, saying so, when their files are missing)
        "07_filter_validation.ipynb",
        {
            "max_per_group": 20,
            "pool_sample_size": 60,
            "rate_sample_size": 15,
            "weebit_path": "../tests/fixtures/weebit/weebit_fixture.csv",
        },
    ),
    # Chapters 8 and 9 get a run of their own: the tiny filter of chapters 3-7 may keep no K-5
    # document at all, and chapter 8 then falls back to stages 1 and 4 (as it does standalone).
    (
        "08_tokenizer.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "max_documents": 300,
            "vocab_size": 512,
            "max_per_band": 20,
            "math_per_unit": 3,
        },
    ),
    (  # reads chapter 8's corpora and tokenizer of the same run (made with chapter 8's calls when missing)
        "09_training.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "model_size": "nano",
            "max_steps": 4,
            "batch_size": 4,
            "seq_len": 64,
            "eval_every": 2,
            "max_val_tokens": 2000,
            "max_per_band": 5,
            "seed_count": 2,
            "seed_steps": 2,
            "side_by_side": False,  # SIDE_BY_SIDE
        },
    ),
    (  # scores chapter 9's checkpoints of the same run; the CoMTA section runs on the test fixture
        "10_language_familiarity.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "per_bin": 2,
            "seed_per_bin": 2,
            "n_boot": 20,
            "comta_path": "../tests/fixtures/comta/CoMTA_fixture.json",
        },
    ),
    (  # evaluates chapter 9's two best checkpoints of the same run on the project-written clue set
        "11_jeopardy.ipynb",
        {"run_name": TRAIN_SMOKE_RUN, "max_per_split": 6, "max_new_tokens": 4, "qualitative_tokens": 6},
    ),
    (  # samples chapter 9's two best checkpoints of the same run on one question per standard
        "12_mathcamps.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "per_standard": 1,
            "n_samples": 2,
            "max_new_tokens": 6,
            "curriculum_per_unit": 1,
            "seed_per_unit": 1,
        },
    ),
    (  # retrains chapter 9's recipe of the same run at two sizes for a few steps
        "14_scaling.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "sizes": ["pico", "nano"],
            "max_steps": 2,
            "per_unit": 1,
            "n_boot": 50,
            "side_by_side": False,  # SIDE_BY_SIDE
        },
    ),
    (  # retrains chapter 9's recipe of the same run with the single-digit BPE, and the default at its size
        "15_single_digit_tokenizer.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "max_steps": 2,
            "per_unit": 1,
            "n_boot": 50,
            "max_val_tokens": 2000,
            "side_by_side": False,  # SIDE_BY_SIDE
        },
    ),
    (  # SFT and GRPO of chapter 9's pair of the same run, one step each
        "16_post_training.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "sft_steps": 2,
            "sft_batch": 4,
            "grpo_segments": 1,
            "grpo_steps": 1,
            "grpo_batch": 8,
            "num_generations": 4,
            "pool_per_unit": 1,
            "pool_gsm8k": 2,
            "gsm8k_sample": 10,
            "eval_per_unit": 1,
            "sampled_per_unit": 1,
            "units": SMOKE_UNITS,
            "n_boot": 50,
            "processes": 1,  # SIDE_BY_SIDE
        },
    ),
    (  # every ICL condition on chapter 16's SFT'd pair of the same run
        "17_in_context_learning.ipynb",
        {"run_name": TRAIN_SMOKE_RUN, "per_unit": 1, "units": SMOKE_UNITS, "n_boot": 50},
    ),
    (  # BoundaryEvo on chapter 9's pair with chapter 16's expert of the same run, one round
        "18_boundary_evo.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "k0": 4,
            "pool": 6,
            "budget": 3,
            "rounds": 1,
            "samples": 2,
            "epochs": 1,
            "eval_per_unit": 1,
            "units": SMOKE_UNITS,
            "n_boot": 50,
            "methods": ["boundary", "random"],
        },
    ),
    (  # no chapter-8 tokenizer in this run: it trains its two BPEs on the curriculum sample
        "13_curriculum.ipynb",
        {
            "per_unit": 20,
            "distribution_size": 200,
            "tokenizer_sample": 300,
            "vocab_size": 300,
            "throughput_per_unit": 10,
        },
    ),
]

# The course's exercise notebooks, after every chapter: each reads its chapter's products of the same run.
EXERCISES = [
    (
        "exercises/ex01_age_of_acquisition.ipynb",
        {"run_name": SMOKE_RUN, "passages_per_band": 10, "thresholds": [10.0, 12.0]},
    ),
    ("exercises/ex02_llm_judge.ipynb", {"run_name": SMOKE_RUN, "docs_per_band": 5, "k5_cuts": [8.5, 9.5]}),
    (
        "exercises/ex03_fasttext_classifier.ipynb",
        {
            "run_name": SMOKE_RUN,
            "dims": [4],
            "epochs": [1],
            "loco_dim": 4,
            "loco_epoch": 1,
            "thresholds": [0.5],
        },
    ),
    (
        "exercises/ex04_encoder_classifier.ipynb",
        {
            "run_name": SMOKE_RUN,
            "encoder_thresholds": [0.5],
            "lengths": [16, 32],
            "speed_docs": 2,
            "agree_docs": 4,
        },
    ),
    ("exercises/ex05_symbolic_filter.ipynb", {"run_name": SMOKE_RUN, "fallback_sample_size": 60}),
    (
        "exercises/ex06_frequency_sampling.ipynb",
        {"run_name": SMOKE_RUN, "min_counts": [3, 10], "cutoffs": [4.0], "passages_per_band": 10},
    ),
    (
        "exercises/ex07_filter_validation.ipynb",
        {
            "run_name": SMOKE_RUN,
            "ablate": ["encoder", "frequency"],
            "fasttext_mins": [0.8],
            "passages_per_band": 10,
        },
    ),
    (
        "exercises/ex08_tokenizer.ipynb",
        {"run_name": TRAIN_SMOKE_RUN, "vocab_sizes": [300, 512], "max_per_band": 10, "math_sample": 50},
    ),
    (
        "exercises/ex09_training.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "per_unit": 1,
            "unit_problems": 40,
            "continue_steps": 2,
            "batch_size": 4,
            "seq_len": 64,
            "eval_problems": 4,
        },
    ),
    (
        "exercises/ex10_language_familiarity.ipynb",
        {"run_name": TRAIN_SMOKE_RUN, "articles": 2, "per_cell": 2, "n_boot": 20},
    ),
    ("exercises/ex11_jeopardy.ipynb", {"run_name": TRAIN_SMOKE_RUN, "max_per_split": 4}),
    (
        "exercises/ex12_mathcamps.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "per_standard": 1,
            "n_samples": 2,
            "max_new_tokens": 4,
            "standards": ["2.NBT.B.5", "8.EE.C.7"],
            "thresholds": [0, 30],
        },
    ),
    ("exercises/ex13_curriculum.ipynb", {"run_name": SMOKE_RUN, "per_unit": 3, "distribution_size": 100}),
    ("exercises/ex14_scaling.ipynb", {"run_name": TRAIN_SMOKE_RUN, "boot_seeds": [1, 2], "n_boot": 50}),
    (
        "exercises/ex15_single_digit_tokenizer.ipynb",
        {"run_name": TRAIN_SMOKE_RUN, "numbers": [7, 1234, 1235], "max_problems": 20, "n_boot": 50},
    ),
    ("exercises/ex16_post_training.ipynb", {"run_name": TRAIN_SMOKE_RUN}),
    (
        "exercises/ex17_in_context_learning.ipynb",
        {
            "run_name": TRAIN_SMOKE_RUN,
            "per_unit": 1,
            "problems_per_band": 1,
            "shot_counts": [0, 3],
            "styles": ["prose"],
        },
    ),
    ("exercises/ex18_boundary_evo.ipynb", {"run_name": TRAIN_SMOKE_RUN, "budgets": [1, 3, 6]}),
]




def in_run(run_name: str) -> list[tuple[str, dict]]:
    """The chapters, then the exercises, whose parameters run them in `run_name`, in book order."""
    return [(name, p) for name, p in NOTEBOOKS + EXERCISES if p.get("run_name", SMOKE_RUN) == run_name]


def set_kernel_env(monkeypatch) -> None:
    """Let the kernel import littlekit from this checkout whether or not it is pip-installed."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + (os.pathsep + path if path else ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")


def execute(name, parameters, output):
    return papermill.execute_notebook(
        str(NOTEBOOK_DIR / name),
        str(output),
        parameters={"run_name": SMOKE_RUN, **parameters},
        cwd=str(NOTEBOOK_DIR),
        kernel_name="python3",
        progress_bar=False,
    )




def run_without_errors(name: str, parameters: dict, output) -> None:
    executed = execute(name, parameters, output)
    errors = [
        output
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    check_prose_is_glued(name, executed)


def check_prose_is_glued(name: str, executed) -> None:
    """Every value the markdown pastes was glued by the run, and a chapter (not an exercise) ends
    with its findings box."""
    from littlekit.analysis.findings import missing_glue, notebook_findings

    missing = missing_glue(executed)
    assert not missing, f"{name}: markdown pastes values the run never glued: {sorted(missing)}"
    if not name.startswith("exercises/"):
        assert notebook_findings(executed), f"{name}: no findings box (Chapter.findings_box)"
