"""Write beside, then swap: a result is replaced only by a complete one.

    with staged_folder(artifacts) as staging:   # a copy of artifacts/ (or an empty folder) beside it
        ...write into staging...                # an error or Ctrl-C removes it; artifacts/ is untouched
    # here artifacts/ is the finished staging folder, swapped in whole

    with file_beside(path) as partial:          # NAME.partial-<pid>.SUFFIX, renamed onto path when complete
        frame.to_parquet(partial)

A run killed outright (SIGKILL, power) leaves its staging folder behind, never a half-written
result; the next `staged_folder` of the same target removes it. Between the swap's two renames the
previous folder is `.NAME.old-<pid>`: a crash there leaves it whole, and the next run puts it back.

Before any work, `same_file(a, b)` (symlinks, `..` and hard links seen through) and
`unwritable(path)` (a probe file written where `path` will go) let a command refuse outputs that
would overwrite an input or each other, or that could never be written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

_PARTIAL = ".partial-"
_OLD = ".old-"


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike, copy: bool = True) -> Iterator[Path]:
    """A sibling folder holding a copy of `target` (`copy`) or nothing, swapped in for `target`
    when the block ends without an error and removed when it raises."""
    target = Path(target)
    restore_interrupted_swap(target)
    staging = target.with_name(f".{target.name}{_PARTIAL}{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    if copy and target.is_dir():
        shutil.copytree(target, staging, symlinks=True)
    else:
        staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}{_OLD}{os.getpid()}")
    if target.exists():
        target.rename(old)
    staging.rename(target)  # until here target/ or old/ is the complete previous folder
    shutil.rmtree(old, ignore_errors=True)


def restore_interrupted_swap(target: str | os.PathLike) -> Path | None:
    """Undo what a killed run left beside `target`: its staging folders are removed, and when
    `target` is missing because the run died between the swap's renames, the previous folder is
    put back. Returns the folder put back, if any. Folders of a run still alive are left alone."""
    target = Path(target)
    restored = None
    for leftover in sorted(target.parent.glob(f".{target.name}.*-*")):
        kind, _, pid = leftover.name.removeprefix(f".{target.name}").rpartition("-")
        if kind + "-" not in (_PARTIAL, _OLD) or not pid.isdigit() or _alive(int(pid)):
            continue
        if kind + "-" == _OLD and not target.exists():
            leftover.rename(target)
            restored = target
        else:
            shutil.rmtree(leftover, ignore_errors=True)
    return restored


@contextlib.contextmanager
def file_beside(path: str | os.PathLike) -> Iterator[Path]:
    """A sibling path to write the file into, renamed onto `path` when the block ends without an
    error and removed when it raises. It keeps the suffix, for writers that go by it."""
    path = Path(path)
    partial = path.with_name(f"{path.stem}{_PARTIAL}{os.getpid()}{path.suffix}")
    try:
        yield partial
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: the same real path (symlinks and .. resolved, also for
    files not there yet), or, for two that exist, the same inode (hard links)."""
    try:
        if os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def unwritable(path: str | os.PathLike) -> str | None:
    """Why no file can be written at `path` (in its folder, or in the nearest existing folder it
    would be made in), found by writing a probe file there; None when one can."""
    folder = Path(path).parent
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"its folder {folder} cannot be made: {existing} is a file, not a folder"
    try:
        handle, probe = tempfile.mkstemp(prefix=".littlekit-write-check-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        where = "" if existing == folder else f" (its folder {folder} would be made there)"
        return f"cannot write in {existing}{where}: {exc.strerror or exc}"
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # an earlier run of this process, which has ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
