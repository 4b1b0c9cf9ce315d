"""Incremental book builds (book/tools/run_notebooks.py): keys over a notebook's inputs and its
upstream chapters, what is stale, and real papermill runs of small notebooks that show an
unchanged set re-executes nothing and a touched notebook re-executes with its dependants only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import run_notebooks as rn  # noqa: E402

CHAIN = {"01": (), "02": ("01",), "03": ()}


def write_notebook(path, text: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({text!r})")])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, path)


@pytest.fixture
def notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("01_first", "02_second", "03_apart"):
        write_notebook(folder / f"{name}.ipynb", name)
    return folder


def test_keys_follow_the_notebook_the_shared_inputs_and_upstream(notebooks):
    paths = sorted(notebooks.glob("*.ipynb"))
    base = rn.keys(paths, "shared", upstream=CHAIN)
    assert len(set(base.values())) == 3
    assert rn.keys(paths, "shared", upstream=CHAIN) == base  # deterministic
    write_notebook(paths[0], "first, edited")
    edited = rn.keys(paths, "shared", upstream=CHAIN)
    assert [edited[p.name] != base[p.name] for p in paths] == [True, True, False]  # 02 reads 01's products
    other = rn.keys(paths, "other code", upstream=CHAIN)
    assert all(other[p.name] != edited[p.name] for p in paths)  # the package or data changed
    assert rn.keys(paths, "shared", "-p x 1", CHAIN) != edited  # parameters


def test_a_notebook_without_an_upstream_entry_is_refused(notebooks):
    with pytest.raises(KeyError, match="03_apart.ipynb: no entry in UPSTREAM"):
        rn.keys(sorted(notebooks.glob("*.ipynb")), "shared", upstream={"01": (), "02": ("01",)})
    with pytest.raises(KeyError, match="upstream chapter"):
        rn.keys(sorted(notebooks.glob("*.ipynb")), "shared", upstream={**CHAIN, "03": ("07",)})


def test_stale_are_those_without_a_matching_kept_key_or_executed_copy(notebooks, tmp_path):
    paths = sorted(notebooks.glob("*.ipynb"))
    wanted = rn.keys(paths, "shared", upstream=CHAIN)
    executed = tmp_path / "executed"
    (executed / ".keys").mkdir(parents=True)
    assert rn.stale(paths, executed, wanted) == paths
    for p in paths:
        (executed / p.name).write_text("{}")
        (executed / ".keys" / f"{p.name}.sha256").write_text(wanted[p.name] + "\n")
    assert rn.stale(paths, executed, wanted) == []
    assert rn.stale(paths, executed, wanted, force=True) == paths
    (executed / paths[2].name).unlink()
    assert rn.stale(paths, executed, wanted) == [paths[2]]


@pytest.mark.slow
def test_a_second_run_executes_nothing_and_a_touch_reruns_the_notebook_and_its_dependants(
    notebooks, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(rn, "UPSTREAM", CHAIN)
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    executed = tmp_path / "executed"
    arguments = ["--notebooks", str(notebooks), "--executed", str(executed)]
    assert rn.main(arguments) == 0
    assert "(3 executed)" in capsys.readouterr().out
    assert rn.main(arguments) == 0
    second = capsys.readouterr().out
    assert second.count(": unchanged") == 3 and "(0 executed)" in second
    write_notebook(notebooks / "01_first.ipynb", "first, touched")
    assert rn.main(arguments) == 0
    third = capsys.readouterr().out
    assert "01_first.ipynb: unchanged" not in third and "02_second.ipynb: unchanged" not in third
    assert "03_apart.ipynb: unchanged" in third and "(2 executed)" in third
    assert rn.main([*arguments, "--force"]) == 0
    assert "(3 executed)" in capsys.readouterr().out


@pytest.mark.slow
def test_a_failing_notebook_keeps_no_key_and_stops_the_run(notebooks, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rn, "UPSTREAM", CHAIN)
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise RuntimeError('no')")])
    broken.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(broken, notebooks / "02_second.ipynb")
    executed = tmp_path / "executed"
    assert rn.main(["--notebooks", str(notebooks), "--executed", str(executed)]) == 1
    assert "02_second.ipynb failed" in capsys.readouterr().out
    assert (executed / ".keys" / "01_first.ipynb.sha256").is_file()
    assert not (executed / ".keys" / "02_second.ipynb.sha256").exists()


def test_the_book_table_names_every_notebook_and_only_earlier_chapters():
    numbers = sorted(p.name[:2] for p in (REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(rn.UPSTREAM) == numbers
    assert all(u < number for number, ups in rn.UPSTREAM.items() for u in ups)
    exercises = sorted((REPO_ROOT / "notebooks" / "exercises").glob("ex[0-9][0-9]_*.ipynb"))
    assert [p.name[2:] for p in exercises] == [
        p.name for p in sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    ]  # one exercise notebook per chapter, named after it


def test_adopt_keeps_keys_for_existing_copies_without_executing(notebooks, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rn, "UPSTREAM", CHAIN)
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "01_first.ipynb").write_text("{}")
    arguments = ["--notebooks", str(notebooks), "--executed", str(executed)]
    assert rn.main([*arguments, "--adopt"]) == 0
    assert "kept the keys of 1 executed notebook(s)" in capsys.readouterr().out
    assert sorted(p.name for p in (executed / ".keys").iterdir()) == ["01_first.ipynb.sha256"]
    wanted = rn.keys(
        sorted(notebooks.glob("*.ipynb")),
        rn.digest([f for name in rn.SHARED_INPUTS for f in rn.files_under(rn.ROOT / name)]),
    )
    assert [p.name for p in rn.stale(sorted(notebooks.glob("*.ipynb")), executed, wanted)] == [
        "02_second.ipynb",
        "03_apart.ipynb",
    ]


def test_a_chapters_exercises_read_it_and_are_keyed_after_it(notebooks):
    (notebooks / "exercises").mkdir()
    write_notebook(notebooks / "exercises" / "ex01_first.ipynb", "exercise")
    found = rn.find_notebooks(notebooks)
    assert [p.name for p in found][-1] == "ex01_first.ipynb"
    base = rn.keys(found, "shared", upstream=CHAIN)
    write_notebook(notebooks / "01_first.ipynb", "first, edited")
    edited = rn.keys(found, "shared", upstream=CHAIN)
    assert edited["ex01_first.ipynb"] != base["ex01_first.ipynb"]
    assert edited["03_apart.ipynb"] == base["03_apart.ipynb"]
    assert rn.executed_copy(found[-1], notebooks).parent.name == "exercises"
    with pytest.raises(KeyError, match="ex04_x.ipynb: no entry in UPSTREAM"):
        write_notebook(notebooks / "exercises" / "ex04_x.ipynb", "orphan")
        rn.keys(rn.find_notebooks(notebooks), "shared", upstream=CHAIN)


def test_the_scheduler_shares_the_cores_and_keeps_the_chapter_chain_first(tmp_path, monkeypatch):
    monkeypatch.setattr(rn, "ONE_CORE", {"01", "04"})
    first, second, third, fourth = (
        tmp_path / n for n in ("01_a.ipynb", "02_b.ipynb", "03_c.ipynb", "04_d.ipynb")
    )
    exercise = tmp_path / "exercises" / "ex01_a.ipynb"
    chain = {"01": (), "02": ("01",), "03": (), "04": ()}
    # 02 waits for 01; 03 needs both cores, so it waits for 01 and no chapter behind it jumps the
    # queue; an exercise may take the idle core
    assert rn.next_to_start([second, third, fourth], [first], set(), chain, cores=2) is None
    late_exercise = tmp_path / "exercises" / "ex04_d.ipynb"
    assert rn.next_to_start([third, fourth, late_exercise], [first], {"04"}, chain, cores=2) == late_exercise
    assert rn.next_to_start([second, fourth, exercise], [first], set(), chain, cores=2) == fourth
    assert rn.next_to_start([second, third], [], {"01"}, chain, cores=2) == second  # alone
    assert rn.next_to_start([exercise], [second], {"01"}, chain, cores=2) is None  # 02 holds every core
    assert rn.next_to_start([exercise], [fourth], {"01"}, chain, cores=2) == exercise  # one core each
    assert rn.next_to_start([exercise], [fourth, first], {"01"}, chain, cores=2) is None  # full
    assert rn.next_to_start([exercise], [], set(), chain, cores=2) is None  # its chapter has not run
    assert rn.next_to_start([third], [], set(), chain, cores=1) == third


@pytest.mark.slow
def test_exercises_run_after_their_chapter_into_their_own_folder(notebooks, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rn, "UPSTREAM", CHAIN)
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    (notebooks / "exercises").mkdir()
    write_notebook(notebooks / "exercises" / "ex02_second.ipynb", "exercise")
    executed = tmp_path / "executed"
    assert rn.main(["--notebooks", str(notebooks), "--executed", str(executed)]) == 0
    out = capsys.readouterr().out
    assert out.index("== 02_second.ipynb: ") < out.index("== ex02_second.ipynb: started")
    assert (executed / "exercises" / "ex02_second.ipynb").is_file()
    assert (executed / "exercises" / ".keys" / "ex02_second.ipynb.sha256").is_file()
    assert "(4 executed)" in out
    assert re.search(r"== 02_second\.ipynb: \d+s wall, \d+s CPU", out)
    assert re.search(r"== all notebooks: \d+s wall, \d+s CPU \(4 executed\)", out)
    recorded = json.loads((executed / "exercises" / "ex02_second.ipynb").read_text())["metadata"]
    assert recorded["littlekit"]["cpu_seconds"] >= 0  # for the book's run-time page


def test_a_finished_notebook_reports_the_cpu_its_process_tree_used():
    # the child burns CPU in a grandchild it waits for, as papermill waits for its kernel
    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.3: pass')"
    script = (
        f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {burn!r}]).returncode + 3)"
    )
    process = subprocess.Popen([sys.executable, "-c", script])
    cpu = None
    while cpu is None:
        cpu = rn.finished_cpu_seconds(process)
        time.sleep(0.05)
    assert cpu >= 0.3 and process.returncode == 3
