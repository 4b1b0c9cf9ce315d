"""Where littlekit finds its data and writes its runs.

`LITTLEKIT_DATA` points at a data root (for example a checkout of the larger real data);
without it the embedded default in the repository's `data/` folder is used.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
EMBEDDED_DATA = REPO_ROOT / "data"


def data_root(override: str | os.PathLike | None = None) -> Path:
    """The data root: an explicit override, else `$LITTLEKIT_DATA`, else the embedded `data/`."""
    chosen = override or os.environ.get("LITTLEKIT_DATA") or EMBEDDED_DATA
    root = Path(chosen).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"data root {root} does not exist (set LITTLEKIT_DATA or pass a path)")
    return root


def data_path(relative: str, root: str | os.PathLike | None = None) -> Path:
    """A file under the data root, falling back to the embedded copy when the root lacks it."""
    candidate = data_root(root) / relative
    if candidate.exists():
        return candidate
    embedded = EMBEDDED_DATA / relative
    if embedded.exists():
        return embedded
    raise FileNotFoundError(f"{relative} is neither under {data_root(root)} nor in {EMBEDDED_DATA}")


def run_dir(name: str = "default", base: str | os.PathLike | None = None) -> Path:
    """A run directory (`runs/<name>/`) where notebooks hand artifacts to each other."""
    root = Path(base) if base else REPO_ROOT / "runs"
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path
