"""Parameters a notebook does not declare are refused (`papermill -p sampel_size 5` must not run on
the defaults), naming the closest declared name; IPython's own names never count."""

import ast
import json
import os
import sys
import types

import pytest

from littlekit.analysis import params as p
from littlekit.config import REPO_ROOT

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
ALL_NOTEBOOKS = NOTEBOOKS + sorted((NOTEBOOK_DIR / "exercises").glob("ex[0-9][0-9]_*.ipynb"))

IPYTHON_NAMESPACE = {
    "In": ["", "a = 1"], "Out": {}, "_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": "",
    "_i1": "x = 1", "_i12": "", "_1": 3, "_oh": {}, "_dh": ["/tmp"], "_ih": [""], "_sh": None,
    "_exit_code": 0, "exit": None, "quit": None, "get_ipython": None, "open": open, "display": print,
    "__name__": "__main__", "__doc__": None, "__builtin__": None, "__builtins__": {},
    "__package__": None, "__loader__": None, "__spec__": None,
}


def test_a_misspelt_parameter_is_refused_naming_the_declared_one():
    namespace = {**IPYTHON_NAMESPACE, "sample_size": 50, "seed": 0, "sampel_size": 5}
    with pytest.raises(p.ParameterError) as refused:
        p.check(namespace, sample_size=p.check_positive_int, seed=p.check_int)
    message = str(refused.value)
    assert message.startswith("unknown parameter sampel_size (did you mean sample_size?)")
    assert "its parameters are sample_size, seed" in message
    assert namespace["sample_size"] == 50  # nothing was checked or stored


def test_several_unknown_parameters_and_one_without_a_close_match():
    namespace = {"run_name": "x", "max_per_band": 3, "max_per_bnad": 4, "colour": "red"}
    with pytest.raises(p.ParameterError, match=r"unknown parameters max_per_bnad \(did you mean "
                       r"max_per_band\?\), colour: this notebook does not declare them"):
        p.check(namespace, run_name=p.check_run_name, max_per_band=p.check_positive_int)


def test_ipython_names_imports_and_dunders_are_not_parameters():
    namespace = {
        **IPYTHON_NAMESPACE,
        "json": json, "params": p, "check_int": p.check_int, "Path": type(REPO_ROOT),
        "SimpleNamespace": types.SimpleNamespace, "__file__": "x.py",
        "seed": 2, "device": None,
    }
    p.check(namespace, seed=p.check_int, device=p.optional(p.check_text))
    assert p.unknown_parameters(namespace, {"seed", "device"}) == []
    assert p.unknown_parameters({**namespace, "_private": 1}, {"seed", "device"}) == ["_private"]


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """A real IPython shell (input history on, its database in memory), as a kernel runs cells."""
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    # the shell installs its own user module as sys.modules["__main__"]; put pytest's back after,
    # or later tests that start worker processes (forkserver) find a __main__ without __spec__
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = interactiveshell.InteractiveShell.instance(config=config)
    yield shell
    shell.reset(new_session=True)
    interactiveshell.InteractiveShell.clear_instance()


PARAMETERS_CELL = (
    "from littlekit.analysis import params\n"
    "sample_size: params.check_positive_int = 50  # documents\n"
    "seed: params.check_int = 0\n"
    'label: params.check_text = "x"\n'
)
CHECK_CELL = (
    "from littlekit.config import REPO_ROOT  # an import in the check cell itself\n"
    "SHIPPED = {'a': 1}  # so is a constant set here\n"
    "params.check(globals())\n"
)


def run(shell, source):
    result = shell.run_cell(source, store_history=True)
    return result.error_in_exec


def test_in_a_real_shell_only_the_injected_cell_counts(shell):
    assert run(shell, PARAMETERS_CELL) is None
    assert run(shell, "# Parameters\nsampel_size = 5\n") is None  # papermill's injected cell
    error = run(shell, CHECK_CELL)
    assert isinstance(error, p.ParameterError)
    assert str(error).startswith("unknown parameter sampel_size (did you mean sample_size?)")


def test_in_a_real_shell_later_cells_and_reruns_do_not_misfire(shell):
    assert run(shell, PARAMETERS_CELL) is None
    assert run(shell, "# Parameters\nsample_size = 5\n") is None
    assert run(shell, CHECK_CELL) is None
    assert shell.user_ns["sample_size"] == 5
    # later cells: variables, displayed results (Out, _1, _2, ...), a shell command's exit code
    assert run(shell, "route = 'judge'\ncounts = {'K5': 3}\nn = 7") is None
    assert run(shell, "n + 1") is None
    assert run(shell, "counts") is None
    assert {"_", "__", "_i5", "Out"} <= set(shell.user_ns)
    assert run(shell, "later: int = 3") is None  # a later cell's own annotated variable
    assert run(shell, CHECK_CELL) is None  # re-running the check cell interactively


def test_in_a_real_shell_the_injected_value_meets_the_annotated_check(shell):
    assert run(shell, PARAMETERS_CELL) is None
    assert run(shell, "# Parameters\nsample_size = -1\n") is None
    error = run(shell, CHECK_CELL)
    assert isinstance(error, p.ParameterError)
    assert str(error) == "parameter sample_size must be a positive integer, got -1"
    assert run(shell, "# Parameters\nsample_size = 7.0\n") is None
    assert run(shell, CHECK_CELL) is None
    assert shell.user_ns["sample_size"] == 7 and isinstance(shell.user_ns["sample_size"], int)


def parameters_and_check_cells(path):
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    assert "parameters" in cells[0]["metadata"].get("tags", []), path.name
    return "".join(cells[0]["source"]), "".join(cells[1]["source"])


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=[path.name for path in ALL_NOTEBOOKS])
def test_every_notebook_declares_each_parameter_once_with_its_check(path):
    """The parameters cell assigns each parameter once, annotated with its checker (besides the
    imports and helper functions its checkers need); the next cell checks them all with no list."""
    parameters, checks = parameters_and_check_cells(path)
    declared = []
    for node in ast.parse(parameters).body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.Expr):
            continue
        assert isinstance(node, ast.AnnAssign), (
            f"{path.name}, line {node.lineno}: a parameter without its check (name: checker = value)"
        )
        assert isinstance(node.target, ast.Name) and node.value is not None, path.name
        declared.append(node.target.id)
    assert declared and len(set(declared)) == len(declared), f"{path.name}: {declared}"
    first = ast.parse(checks).body[0]
    assert ast.unparse(first) == "params.check(globals())", f"{path.name}: the next cell must start with it"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=[path.name for path in ALL_NOTEBOOKS])
def test_every_notebook_accepts_its_own_defaults(path, shell, monkeypatch):
    monkeypatch.chdir(NOTEBOOK_DIR)  # relative default paths are the notebooks' (papermill's cwd)
    parameters, checks = parameters_and_check_cells(path)
    assert run(shell, parameters) is None
    assert run(shell, checks) is None
    assert set(p.declared_parameters(shell.user_ns)) == set(shell.user_ns["__annotations__"])


def test_papermill_refuses_a_misspelt_parameter(tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with pytest.raises(papermill.PapermillExecutionError) as failure:
        papermill.execute_notebook(
            str(NOTEBOOK_DIR / "05_symbolic_filter.ipynb"), str(tmp_path / "typo.ipynb"),
            parameters={"run_name": "pytest-smoke", "sampel_size": 5}, cwd=str(NOTEBOOK_DIR),
            kernel_name="python3", progress_bar=False,
        )
    assert failure.value.ename == "ParameterError"
    named = "unknown parameter sampel_size (did you mean sample_size or math_sample_size?)"
    assert named in failure.value.evalue
    assert failure.value.exec_count == 3  # parameters, papermill's injected cell, then the check
