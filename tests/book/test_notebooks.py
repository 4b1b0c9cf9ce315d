"""Smoke runs of the filter's chapters and their exercises (tests/notebook_smoke.py lists them),
and the checks every notebook meets. The training chapters run in tests/book/test_notebooks_training.py."""

import pytest
from notebook_smoke import (
    NOTEBOOK_DIR,
    SMOKE_RUN,
    execute,
    in_run,
    papermill,
    run_without_errors,
)

FILTER_CHAIN = in_run(SMOKE_RUN)


@pytest.mark.slow
@pytest.mark.parametrize("name,parameters", FILTER_CHAIN, ids=[name for name, _ in FILTER_CHAIN])
def test_notebook_runs_with_tiny_parameters(name, parameters, tmp_path, kernel_env):
    run_without_errors(name, parameters, tmp_path / name.split("/")[-1])


def test_bad_parameter_fails_with_a_clear_message(tmp_path, kernel_env):
    with pytest.raises(papermill.PapermillExecutionError) as failure:
        execute("01_age_of_acquisition.ipynb", {"sample_size": -1}, tmp_path / "bad.ipynb")
    assert failure.value.ename == "ParameterError"
    assert "parameter sample_size must be a positive integer, got -1" in failure.value.evalue


def test_committed_notebooks_carry_no_outputs():
    import nbformat

    for path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        cells = enumerate(notebook.cells)
        dirty = [i for i, cell in cells if cell.cell_type == "code" and cell.get("outputs")]
        assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"


def test_every_notebook_has_a_parameters_cell():
    import nbformat

    for path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        tagged = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: expected one cell tagged 'parameters', found {len(tagged)}"
