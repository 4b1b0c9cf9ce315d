"""Smoke runs of the training chapters and their exercises (tests/notebook_smoke.py lists them):
a chain of its own run, beside the filter's chapters in tests/book/test_notebooks.py."""

import pytest
from notebook_smoke import TRAIN_SMOKE_RUN, in_run, run_without_errors

TRAINING_CHAIN = in_run(TRAIN_SMOKE_RUN)


@pytest.mark.slow
@pytest.mark.parametrize("name,parameters", TRAINING_CHAIN, ids=[name for name, _ in TRAINING_CHAIN])
def test_notebook_runs_with_tiny_parameters(name, parameters, tmp_path, kernel_env):
    run_without_errors(name, parameters, tmp_path / name.split("/")[-1])
