"""Fixtures shared by several test modules, and the helper modules beside this file on sys.path.

The tests live in folders that mirror the package (tests/filter/, tests/lm/, ...; tests/book/ for
the notebooks and the book). The helpers stay here (train_data, judge_server, notebook_smoke,
datatrove_job, toy_length_stage, ...) and import as top-level modules from every folder. Test
files import in pytest's default mode (no __init__.py), so no two of them share a basename."""

import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

if os.environ.get("PYTEST_XDIST_WORKER"):
    # One worker per core: each worker's torch, BLAS and the CLIs it starts keep to one thread,
    # or the workers' threads spin against each other.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, "1")


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module's tiny models: on a shared 2-core machine two threads spin
    against each other (about 20x slower). Modules opt in with
    `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def kernel_env(monkeypatch):
    """Let a notebook's kernel import littlekit from this checkout, offline (notebook_smoke)."""
    from notebook_smoke import set_kernel_env

    set_kernel_env(monkeypatch)


# `fit all`'s own defaults but for the sample sizes, the corpus holdout included: tests/fit/test_fit.py
# checks every artifact of the full filter in this run instead of fitting its own
QUICK_FIT = ["--sample-per-band", "30", "--train-sample-size", "60", "--pool-sample-size", "800"]


@pytest.fixture(scope="session")
def quick_fit_run(tmp_path_factory, worker_id) -> Path:
    """A run folder every `fit` step has made (`fit all` on QUICK_FIT), made once per test session:
    the first worker to ask makes it, the others wait for it. Shared: copy it before changing it."""
    from filelock import FileLock

    from littlekit.cli import main

    shared = tmp_path_factory.getbasetemp()
    shared = shared if worker_id == "master" else shared.parent  # the workers' common folder
    run, made = shared / "quick-fit" / "run", shared / "quick-fit" / "made"
    with FileLock(str(shared / "quick-fit.lock")):
        if not made.is_file():
            shutil.rmtree(run.parent, ignore_errors=True)  # a worker that failed halfway
            assert main(["fit", "all", "--out", str(run / "artifacts"), *QUICK_FIT]) == 0
            made.write_text("")
    return run
