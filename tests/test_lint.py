"""The code `make lint` checks passes ruff at the package's settings (pyproject.toml's [tool.ruff]),
the notebooks' code cells included: a long line or an unsorted import in a chapter fails here, not
in a reader's editor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from littlekit.config import REPO_ROOT

# what the Makefile's lint target checks, in the same order
LINTED = ("littlekit", "tests", "benchmarks", "book", "notebooks")
RUFF = Path(sys.executable).parent / "ruff"


def test_ruff_passes_on_the_package_tests_benchmarks_book_and_notebooks():
    if not RUFF.is_file():
        pytest.skip(f"no ruff beside this interpreter ({RUFF}): install the project's dev set (make test)")
    command = [str(RUFF), "check", "--no-cache", *LINTED]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"ruff check {' '.join(LINTED)}:\n{result.stdout}{result.stderr}"


def test_the_makefile_lints_the_same_folders():
    lint = (REPO_ROOT / "Makefile").read_text(encoding="utf-8").split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert f"$(BIN)/ruff check {' '.join(LINTED)}" in lint
