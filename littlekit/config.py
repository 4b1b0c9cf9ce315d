"""Where littlekit finds its data and writes its runs.

`LITTLEKIT_DATA` points at a data root (for example a checkout of the larger real data, or a
checkout's `data/` folder); without it the embedded default is used:

- in a checkout (the package sits beside the repository's `pyproject.toml` and `data/`, as in
  an editable install): the repository's `data/` folder, all of it;
- in a real install (`pip install .`): the tables the wheel ships under `littlekit/_data/`,
  the ones `littlekit filter`'s default stages need (`aoa/aoa_lemma.csv`, with the folder's
  `SOURCE.md`). Every other file (notebook data: demo corpus, CLEAR, MathCAMPS, ...) then needs
  `LITTLEKIT_DATA`, and the error for a missing one says so and names the file.

Runs go to the repository's `runs/` in a checkout, else to `./runs` of the current folder.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
# The tables a built wheel ships (pyproject/setup.py map the package `littlekit._data` onto
# selected files of the repository's data/ folder, so the repository keeps a single copy).
PACKAGED_DATA = PACKAGE_DIR / "_data"
DATA_ENV = "LITTLEKIT_DATA"


def _is_checkout(root: Path) -> bool:
    """Whether `root` is littlekit's source tree (pyproject naming littlekit, and data/)."""
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "data").is_dir()):
        return False
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return 'name = "littlekit"' in text


IN_CHECKOUT = _is_checkout(REPO_ROOT)
# The embedded default data root: the checkout's data/ folder, else the tables the wheel ships.
EMBEDDED_DATA = REPO_ROOT / "data" if IN_CHECKOUT else PACKAGED_DATA


def data_root(override: str | os.PathLike | None = None) -> Path:
    """The data root: an explicit override, else `$LITTLEKIT_DATA`, else the embedded default."""
    chosen = override or os.environ.get(DATA_ENV) or EMBEDDED_DATA
    root = Path(chosen).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"data root {root} does not exist (set {DATA_ENV} or pass a path)")
    return root


def data_path(relative: str, root: str | os.PathLike | None = None) -> Path:
    """A file under the data root, falling back to the embedded copy when the root lacks it.

    FileNotFoundError names the file, where it was looked for, and `LITTLEKIT_DATA`.
    """
    embedded = Path(EMBEDDED_DATA)
    given = root or os.environ.get(DATA_ENV)
    if given:
        candidate = data_root(root) / relative  # data_root raises when the given root does not exist
        if candidate.exists():
            return candidate
    if (embedded / relative).exists():
        return embedded / relative
    if given:
        where = f"neither under the data root {data_root(root)} nor in the embedded {embedded}"
    else:
        where = f"not in the embedded {embedded} ({DATA_ENV} is not set)"
    hint = (
        f"the installed littlekit ships only the filter's default tables; set {DATA_ENV} to a data "
        "root holding it (e.g. a littlekit checkout's data/ folder)"
        if not IN_CHECKOUT
        else f"set {DATA_ENV} to a data root holding it"
    )
    raise FileNotFoundError(f"data file {relative} is {where}: {hint}")


def run_dir(name: str = "default", base: str | os.PathLike | None = None) -> Path:
    """A run directory (`runs/<name>/`) where notebooks hand artifacts to each other.

    The default base is the repository's `runs/` in a checkout, else `./runs` of the current folder.
    """
    root = Path(base) if base else (REPO_ROOT / "runs" if IN_CHECKOUT else Path.cwd() / "runs")
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path
