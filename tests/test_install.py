"""A real (non-editable) install works outside the checkout: `littlekit filter` needs no data/ folder.

The slow test builds the wheel from a copy of the checkout, installs it into a fresh virtualenv
in tmp_path (the dependencies come from this interpreter's site-packages through a .pth file,
so nothing is downloaded), and runs the installed `littlekit filter` from tmp_path without
LITTLEKIT_DATA. The fast tests check the data-root errors and the run folder of an install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from littlekit import config
from littlekit.databuild import corpora

CHECKOUT = Path(__file__).resolve().parent.parent
MAX_WHEEL_BYTES = 2_000_000  # code plus the one default AoA table (~0.5 MB compressed)
# The files the wheel ships from data/ (setup.py's SHIPPED), as installed under littlekit/_data/.
SHIPPED = {"littlekit/_data/aoa/aoa_lemma.csv", "littlekit/_data/aoa/SOURCE.md"}
DOCS = [
    {"id": "simple", "text": "The cat sat on the mat. We like to play in the sun with our dog."},
    {"id": "latex", "text": "Solve $x^2 + 3x = \\sqrt{y}$ and find the value of x for the dog."},
    {
        "id": "hard",
        "text": "Epistemological phenomenology interrogates the ontological presuppositions "
        "of hermeneutic intersubjectivity.",
    },
]
CHECK_INSTALLED = """
import json, littlekit
from littlekit import config
from littlekit.databuild import corpora
from littlekit.filter.lexicon import AoALexicon
try:
    corpora.load_demo_corpus()
    error = None
except FileNotFoundError as exc:
    error = str(exc)
print(json.dumps({
    "file": littlekit.__file__, "in_checkout": config.IN_CHECKOUT, "table": AoALexicon.load().source,
    "run_dir": str(config.run_dir("probe")), "error": error,
}))
"""


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"LITTLEKIT_DATA", "PYTHONPATH", "PYTHONHOME"}}
    return {
        **env,
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _run(command: list[str], cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _copy_source(dest: Path) -> Path:
    """The files a build reads, copied so the build writes nothing into the (shared) checkout."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in"):
        if (CHECKOUT / name).is_file():
            shutil.copy2(CHECKOUT / name, dest / name)
    for name in ("littlekit", "data"):
        shutil.copytree(CHECKOUT / name, dest / name, ignore=ignore)
    return dest


def _counts(output: str) -> dict[str, int]:
    read = re.search(r"^read\s*:\s*([\d,]+)", output, re.M)
    kept = re.search(r"^kept\s*:\s*([\d,]+).*dropped:\s*([\d,]+)\s+errored:\s*([\d,]+)", output, re.M)
    assert read and kept, output
    numbers = [int(g.replace(",", "")) for g in (read.group(1), *kept.groups())]
    return dict(zip(("read", "kept", "dropped", "errored"), numbers, strict=True))


@pytest.mark.slow
@pytest.mark.skipif(not (CHECKOUT / "pyproject.toml").is_file(), reason="needs the source checkout")
def test_wheel_installed_outside_the_checkout_runs_the_filter(tmp_path):
    # 1. build the wheel, offline, from a copy of the checkout
    source = _copy_source(tmp_path / "src")
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip"]
    build = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(dist), "."]
    _run([*pip, *build], source)
    (wheel,) = dist.glob("littlekit-*.whl")
    assert wheel.stat().st_size < MAX_WHEEL_BYTES, f"wheel is {wheel.stat().st_size:,} bytes"
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n for n in names if n.startswith("littlekit/_data/")} == SHIPPED  # nothing else of data/
    assert "littlekit/config.py" in names and "littlekit/filter/command.py" in names
    tasks = {n for n in names if n.startswith("littlekit/evals/lm_eval_tasks/")}
    assert "littlekit/evals/lm_eval_tasks/littlekit_clear.yaml" in tasks  # what lm_eval --include_path reads
    assert "littlekit/evals/lm_eval_tasks/_curriculum_template_yaml" in tasks

    # 2. a fresh venv with the wheel; the dependencies through a .pth to this interpreter's packages
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path)
    site_packages = Path(purelib.stdout.strip())
    (site_packages / "littlekit_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)], tmp_path)

    # 3. the installed `littlekit filter` from tmp_path (no data/ near), LITTLEKIT_DATA unset
    work = tmp_path / "work"
    work.mkdir()
    (work / "docs.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in DOCS), encoding="utf-8")
    command = [str(venv / "bin" / "littlekit"), "filter", "--in", "docs.jsonl", "--out", "kept.jsonl"]
    done = _run([*command, "--stages", "aoa,symbolic"], work)
    output = done.stdout + done.stderr
    counts = _counts(output)
    assert counts == {"read": 3, "kept": 1, "dropped": 2, "errored": 0}, output
    assert counts["read"] == counts["kept"] + counts["dropped"] + counts["errored"]
    assert re.search(r"dropped\s+aoa\s+aoa_", output) and re.search(r"dropped\s+symbolic\s+symbolic_", output)
    kept = [json.loads(line) for line in (work / "kept.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [doc["id"] for doc in kept] == ["simple"]

    # 4. it ran the installed package (not the checkout's editable finder) on the shipped table
    probe = json.loads(_run([str(python), "-c", CHECK_INSTALLED], work).stdout)
    assert Path(probe["file"]).resolve().is_relative_to(venv.resolve()), probe
    assert probe["in_checkout"] is False
    assert Path(probe["table"]).resolve() == (site_packages / "littlekit/_data/aoa/aoa_lemma.csv").resolve()
    assert Path(probe["run_dir"]).resolve() == (work / "runs" / "probe").resolve()
    assert "LITTLEKIT_DATA" in probe["error"] and "demo_corpus/demo_web.jsonl" in probe["error"]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """config as in a real install: the embedded default holds only the shipped AoA table."""
    shipped = tmp_path / "site-packages" / "littlekit" / "_data"
    (shipped / "aoa").mkdir(parents=True)
    (shipped / "aoa" / "aoa_lemma.csv").write_text("word,aoa\ncat,3.0\n", encoding="utf-8")
    monkeypatch.setattr(config, "IN_CHECKOUT", False)
    monkeypatch.setattr(config, "EMBEDDED_DATA", shipped)
    monkeypatch.delenv("LITTLEKIT_DATA", raising=False)
    return shipped


def test_installed_default_finds_the_shipped_table_only(installed):
    assert config.data_root() == installed
    assert config.data_path("aoa/aoa_lemma.csv") == installed / "aoa" / "aoa_lemma.csv"
    with pytest.raises(FileNotFoundError, match=r"demo_corpus/demo_web\.jsonl.*LITTLEKIT_DATA"):
        corpora.load_demo_corpus()


def test_data_root_lacking_a_file_names_littlekit_data_and_the_file(installed, tmp_path, monkeypatch):
    root = tmp_path / "partial"
    (root / "gsm8k").mkdir(parents=True)
    monkeypatch.setenv("LITTLEKIT_DATA", str(root))
    with pytest.raises(FileNotFoundError) as caught:
        corpora.load_clear()
    message = str(caught.value)
    assert "clear/clear.csv" in message and "LITTLEKIT_DATA" in message and str(root) in message
    with pytest.raises(FileNotFoundError, match=r"mathcamps/mathcamps\.jsonl.*LITTLEKIT_DATA"):
        config.data_path("mathcamps/mathcamps.jsonl")
    # a file the root lacks still falls back to the shipped copy
    assert config.data_path("aoa/aoa_lemma.csv") == installed / "aoa" / "aoa_lemma.csv"


def test_run_dir_outside_a_checkout_is_under_the_current_folder(installed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert config.run_dir("demo") == tmp_path / "runs" / "demo"
    assert (tmp_path / "runs" / "demo").is_dir()


def test_the_checkout_is_recognised():
    assert config.IN_CHECKOUT == (CHECKOUT / "pyproject.toml").is_file()
    if config.IN_CHECKOUT:
        assert config.EMBEDDED_DATA == config.REPO_ROOT / "data"
    assert not config._is_checkout(config.PACKAGE_DIR)  # no pyproject.toml or data/ inside the package


def _pins(lines: list[str]) -> dict[str, str]:
    """{normalised name: version} of `name==version` lines (extras and comments dropped)."""
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[re.sub(r"[-_.]+", "-", name.split("[", 1)[0]).lower()] = version.strip()
    return pins


def test_the_frozen_set_holds_every_pin_of_pyproject_at_its_version():
    """constraints.txt is what `make` installs: a pin changed in pyproject.toml without
    regenerating it would be installed at the old version, or not at all."""
    import tomllib

    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = _pins(project["dependencies"])
    frozen = _pins((CHECKOUT / "constraints.txt").read_text(encoding="utf-8").splitlines())
    assert len(wanted) >= 30
    differ = {name: (pin, frozen.get(name)) for name, pin in wanted.items() if frozen.get(name) != pin}
    assert not differ, f"constraints.txt disagrees with pyproject.toml (pin, frozen): {differ}"


def test_this_environment_is_the_frozen_set():
    """Every package constraints.txt names is installed here at that version (the set the book's
    numbers were computed with)."""
    from importlib import metadata

    frozen = _pins((CHECKOUT / "constraints.txt").read_text(encoding="utf-8").splitlines())
    installed = _pins([f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()])
    differ = {
        name: (version, installed.get(name))
        for name, version in frozen.items()
        if installed.get(name, "").split("+", 1)[0] != version
    }
    assert not differ, f"installed versions differ from constraints.txt (frozen, installed): {differ}"
