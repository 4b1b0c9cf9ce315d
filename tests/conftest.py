"""Fixtures shared by several test modules."""

import os

import pytest

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
