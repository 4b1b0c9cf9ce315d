"""Where littlekit finds its data and writes its runs.

`LITTLEKIT_DATA` points at a data root (for example a checkout of the larger real data, or a
checkout's `data/` folder); without it the embedded default is used:

- in a checkout (the package sits beside the repository's `pyproject.toml` and `data/`, as in
  an editable install): the repository's `data/` folder, all of it;
- in a real install (`pip install .`): the tables the wheel ships under `littlekit/_data/`,
  the ones `littlekit filter`'s default stages need (`aoa/aoa_lemma.csv`, with the folder's
  `SOURCE.md`). Every other file (notebook data: demo corpus, CLEAR, MathCAMPS, ...) then needs
  `LITTLEKIT_DATA`, and the error for a missing one says so and names the file.

A root given explicitly (a `root`/`data_root` argument, or `LITTLEKIT_DATA`) is the one used:
it must be a folder (a missing path, or a file, is reported as such), and a file it lacks is
an error naming the root, the file and how the root was given. It is not silently replaced by
the embedded copy; the one exception is the filter's default tables that every install ships
(`SHIPPED_FILES`, the same list as setup.py's): a root without them still gets them from the
embedded default, so `littlekit filter` keeps working on a root holding notebook data only.

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
# The files of data/ a built wheel ships (setup.py's SHIPPED): package defaults, found in the
# embedded default even when a given data root lacks them.
SHIPPED_FILES = frozenset({"aoa/aoa_lemma.csv", "aoa/SOURCE.md"})


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


def _given_root(override: str | os.PathLike | None) -> tuple[Path, str] | None:
    """The explicitly given root and how it was given, or None (the embedded default is used)."""
    if override is not None and str(override) != "":
        return Path(override).expanduser(), "given as the data root"
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser(), f"from ${DATA_ENV}"
    return None


def _check_folder(root: Path, how: str) -> Path:
    if root.is_file():
        raise FileNotFoundError(
            f"data root {root} ({how}) is a file, not a folder: point {DATA_ENV} or the data root "
            "argument at a folder laid out like data/"
        )
    if not root.is_dir():
        raise FileNotFoundError(
            f"data root {root} ({how}) does not exist: set {DATA_ENV} or pass the path of a folder "
            "laid out like data/"
        )
    return root


def data_root_origin(override: str | os.PathLike | None = None) -> str:
    """How the data root is chosen: "given as the data root", "from $LITTLEKIT_DATA" or
    "the embedded default" (for headers such as a chapter's)."""
    given = _given_root(override)
    return given[1] if given is not None else "the embedded default"


def data_root(override: str | os.PathLike | None = None) -> Path:
    """The data root: an explicit override, else `$LITTLEKIT_DATA`, else the embedded default.

    FileNotFoundError when it does not exist or is a file ("is a file, not a folder"), naming
    the path and how it was given.
    """
    given = _given_root(override)
    if given is None:
        return _check_folder(Path(EMBEDDED_DATA), "the embedded default")
    return _check_folder(*given)


def data_path(relative: str, root: str | os.PathLike | None = None) -> Path:
    """A file under the data root.

    With a root given (`root`, else `$LITTLEKIT_DATA`) the file must be under it: FileNotFoundError
    names the file, the root and how it was given. Only the tables every install ships
    (`SHIPPED_FILES`) are taken from the embedded default when the root lacks them. Without
    one, the file comes from the embedded default, and the error names the file, the embedded
    folder and `LITTLEKIT_DATA`.
    """
    embedded = Path(EMBEDDED_DATA)
    given = _given_root(root)
    if given is not None:
        folder, how = given
        candidate = _check_folder(folder, how) / relative
        if candidate.is_file():
            return candidate
        if relative in SHIPPED_FILES and (embedded / relative).is_file():
            return embedded / relative
        state = "is a folder, not a file" if candidate.exists() else "is missing"
        raise FileNotFoundError(
            f"data file {relative} {state} under the data root {folder} ({how}): put it at "
            f"{candidate}, or point {DATA_ENV} / the data root argument at a folder that holds it"
        )
    if (embedded / relative).is_file():
        return embedded / relative
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
