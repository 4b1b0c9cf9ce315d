"""`littlekit notebook` refuses before anything is written (the reliability issue's third round,
items 6 and 12; real `littlekit notebook` runs, papermill on a tiny notebook):

6. a parameter name is stripped and must be an identifier before anything is written, so
   `-p "judge_api_key_env " <key>` is refused like `-p judge_api_key_env <key>`; a URL with a
   password in it is refused and shown with `***`;
12. OUTPUT as a hard link of NOTEBOOK is refused;
and the minor ones: a missing kernel writes nothing, a notebook's ParameterError is one line,
papermill's "Passed unknown parameter" is not printed for the parameters the notebook declares.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from littlekit.config import REPO_ROOT

SECRET = "sk-proj-TrailingSpaceKey0123456789"
LITTLEKIT = [sys.executable, "-m", "littlekit.cli", "notebook"]


def make_notebook(path, parameters: str, body: str):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    notebook.cells = [cell, nbformat.v4.new_code_cell(body)]
    nbformat.write(notebook, path)
    return path


@pytest.fixture()
def tiny_notebook(tmp_path):
    """A notebook declaring its parameters as the chapters do: annotated with a check."""
    return make_notebook(
        tmp_path / "tiny.ipynb",
        "from littlekit.analysis import params\n"
        'judge_api_key_env: params.check_env_name = "OPENAI_API_KEY"\n'
        "judge_base_url: params.check_url = None\n"
        "sample_size: params.check_positive_int = 1",
        "params.check(globals())\n"
        "if sample_size > 5:\n"
        '    raise params.ParameterError(f"parameter sample_size must be at most 5, got {sample_size}")\n'
        'print("base url:", judge_base_url, "sample size:", sample_size)',
    )


def run_command(*args) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    return subprocess.run([*LITTLEKIT, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=environment)  # fmt: skip


def assert_refused(done, output, *secrets):
    assert done.returncode == 2, done.stderr[-2000:]
    assert not output.exists()
    assert done.stderr.startswith("littlekit notebook: error:") and done.stderr.count("\n") == 1, done.stderr
    for secret in secrets:
        assert secret not in done.stdout and secret not in done.stderr


def test_a_key_under_a_name_with_a_trailing_space_is_refused_before_writing(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    for name in ("judge_api_key_env ", " judge_api_key_env", "judge_api_key_env\t"):
        done = run_command(tiny_notebook, output, "-p", name, SECRET, "--no-progress-bar")
        assert_refused(done, output, SECRET)
        assert "parameter judge_api_key_env must be the name of an environment variable" in done.stderr
    done = run_command(tiny_notebook, output, "-r", "judge_api_key_env ", SECRET)
    assert_refused(done, output, SECRET)


def test_a_name_that_is_not_an_identifier_is_refused(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    names = ("judge-api-key-env", "judge api_key_env", "", "1sample", "class", f"judge_api_key_env={SECRET}")
    for name in names:
        done = run_command(tiny_notebook, output, "-p", name, "x")
        assert_refused(done, output, SECRET)
        assert "a name is a Python identifier" in done.stderr
    done = run_command(tiny_notebook, output, "-p", "judge-model", "x")
    assert "parameter name 'judge...' has '-' at character 6" in done.stderr


def test_a_password_in_a_url_is_refused_and_never_printed(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    url = f"https://me:{SECRET}@api.example.com/v1"
    done = run_command(tiny_notebook, output, "-p", "judge_base_url", url)
    assert_refused(done, output, SECRET)
    assert "parameter judge_base_url holds a URL with a user name or password" in done.stderr
    assert "https://***@api.example.com/v1" in done.stderr


def test_output_as_a_hard_link_of_the_notebook_is_refused(tiny_notebook, tmp_path):
    before = tiny_notebook.read_bytes()
    link = tmp_path / "hard.ipynb"
    os.link(tiny_notebook, link)
    done = run_command(tiny_notebook, link, "-p", "sample_size", "2")
    assert done.returncode == 2 and "OUTPUT must not be NOTEBOOK itself" in done.stderr
    assert tiny_notebook.read_bytes() == before == link.read_bytes()


def test_a_missing_kernel_writes_nothing(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    done = run_command(tiny_notebook, output, "-k", "no_such_kernel_littlekit")
    assert_refused(done, output)
    assert "no kernel named 'no_such_kernel_littlekit' is installed" in done.stderr


def test_a_notebooks_parameter_error_is_one_line(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    done = run_command(tiny_notebook, output, "-p", "sample_size", "9", "--no-progress-bar")
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]  # after the kernel's own start-up lines, if any
    assert last == ("littlekit notebook: error: ParameterError: parameter sample_size must be at most 5, "
                    "got 9 (the notebook's parameter check, cell 3)"), done.stderr[-2000:]  # fmt: skip
    assert "Traceback" not in done.stderr and "-----" not in done.stderr


def test_no_unknown_parameter_warning_for_declared_parameters(tiny_notebook, tmp_path):
    output = tmp_path / "out.ipynb"
    done = run_command(tiny_notebook, output, "-p", "sample_size", "3", "-p", "judge_api_key_env",
                       "LITTLEKIT_TEST_KEY", "--no-progress-bar")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Passed unknown parameter" not in done.stderr
    executed = nbformat.read(output, as_version=4)
    printed = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert printed == "base url: None sample size: 3\n"
