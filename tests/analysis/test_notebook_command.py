"""Issue 26, secrets in notebook parameters: `check_env_name` takes only conventional variable names
(never a key that looks like one, never the value of a set variable), and `littlekit notebook`
refuses a key pasted as a `*_env` parameter before papermill writes anything."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from littlekit.analysis import params
from littlekit.analysis.notebook_command import check_parameters, parse_parameters, resolve_value
from littlekit.config import REPO_ROOT

SECRET = "hf_SECRETxyz123"
LITTLEKIT = [sys.executable, "-m", "littlekit.cli", "notebook"]


def test_check_env_name_takes_conventional_names_only():
    for good in ("OPENAI_API_KEY", "_PRIVATE_KEY", "GEMINI2_KEY", "A", "A" * 64):
        assert params.check_env_name("judge_api_key_env", good) == good
    refused = ("hf_AbCdEf123", "sk-proj-AbC123xyz", "sk_live_abc", "openai_api_key", "OpenAI_Key", "A" * 65,
               "1ABC", "OPENAI_API_KEY\n", " OPENAI_API_KEY", "", None, 42)  # fmt: skip
    for bad in refused:
        with pytest.raises(params.ParameterError, match="name of an environment variable") as failure:
            params.check_env_name("judge_api_key_env", bad)
        if isinstance(bad, str) and bad:
            assert bad.strip() not in str(failure.value)


def test_check_env_name_refuses_the_value_of_a_set_variable(monkeypatch):
    pasted = "AKIA7QX2SECRETVALUE9"  # upper-case, so it looks like a name; it is the value of a variable
    monkeypatch.setenv("LITTLEKIT_TEST_PASTED_KEY", pasted)
    with pytest.raises(params.ParameterError, match="value of a variable set in the environment") as failure:
        params.check_env_name("judge_api_key_env", pasted)
    assert pasted not in str(failure.value) and "LITTLEKIT_TEST_PASTED_KEY" not in str(failure.value)
    name = "LITTLEKIT_TEST_PASTED_KEY"
    assert params.check_env_name("judge_api_key_env", name) == name


def test_parameters_are_read_as_papermills_command_line_reads_them():
    from papermill.cli import _resolve_type

    texts = ("True", "False", "None", "3", "-2", "2.5", "1e3", "nan", "abc", "[1, 2]", "0x10", "AN_ENV")
    for text in texts:
        value = resolve_value(text)
        expected = _resolve_type(text)
        assert value == expected or (value != value and expected != expected)
        assert type(value) is type(expected)
    parsed = parse_parameters([["seed", "3"], ["name", "x"]], [["seed", "3"]])
    assert parsed == {"seed": "3", "name": "x"}  # -r after -p, as papermill orders them
    assert check_parameters({"judge_api_key_env": "OPENAI_API_KEY", "seed": 3}) == {
        "judge_api_key_env": "OPENAI_API_KEY", "seed": 3}  # fmt: skip
    with pytest.raises(params.ParameterError):
        check_parameters({"judge_api_key_env": SECRET})


@pytest.fixture()
def tiny_notebook(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell('judge_api_key_env = "OPENAI_API_KEY"\nsample_size = 1')
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [
        parameters,
        nbformat.v4.new_code_cell(
            'print("key variable:", judge_api_key_env, type(sample_size).__name__, sample_size)'
        ),
    ]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(notebook, path)
    return path


def run_command(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {}),
                   "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    return subprocess.run([*LITTLEKIT, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=environment)  # fmt: skip


def test_a_key_pasted_as_an_env_parameter_is_refused_before_papermill_writes(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    done = run_command(tiny_notebook, output, "-p", "sample_size", "2", "-p", "judge_api_key_env", SECRET)
    assert done.returncode == 2, done.stderr
    assert not output.exists()
    assert SECRET not in done.stdout and SECRET not in done.stderr
    assert "parameter judge_api_key_env must be the name of an environment variable" in done.stderr
    assert done.stderr.startswith("littlekit notebook: error:") and done.stderr.count("\n") == 1
    # an upper-case key that is the value of a set variable: refused the same way (-r too)
    pasted = "SK7QX2SECRETVALUE9"
    done = run_command(tiny_notebook, output, "-r", "judge_api_key_env", pasted,
                       env={"LITTLEKIT_TEST_PASTED_KEY": pasted})  # fmt: skip
    assert done.returncode == 2 and not output.exists()
    assert pasted not in done.stdout and pasted not in done.stderr


def test_a_variable_name_runs_the_notebook(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    done = run_command(tiny_notebook, output, "-p", "judge_api_key_env", "LITTLEKIT_TEST_KEY",
                       "-p", "sample_size", "7", "--no-progress-bar")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    executed = nbformat.read(output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and 'judge_api_key_env = "LITTLEKIT_TEST_KEY"' in injected[0].source
    printed = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert printed == "key variable: LITTLEKIT_TEST_KEY int 7\n"


def test_a_missing_notebook_is_a_usage_error(tmp_path):
    done = run_command(tmp_path / "nope.ipynb", tmp_path / "out.ipynb")
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not (tmp_path / "out.ipynb").exists()
