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

One run per output: writing beside and swapping keeps a result whole against a crash, not
against a second run writing the same output at the same time (two filters into one kept file
interleave their lines, two trainers append to one metrics.jsonl, and each believes its own
counts). So every command holds its outputs while it runs:

    with hold_output(path, prog="littlekit filter", label="--out"):   # .NAME.lock beside path
        ...write path...

A second run into an output held by a live run is refused (`OutputLocked`, a usage error naming
the output and the holding run's pid, host, start and command). The lock is `flock` on the open
lock file, so the kernel drops it when its holder dies however it dies (SIGKILL included): a
killed run never blocks its rerun, which takes the lock over with a note. A process holding an
output may take it again (nested commands and library calls); the lock file is removed when the
outermost holder lets go. `staged_folder` holds its target, so no other run can be writing beside
it and every staging folder it finds is a dead run's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from littlekit.argtypes import UsageError

try:
    import fcntl
except ImportError:  # Windows has no flock: the lock falls back on the recorded pid (below)
    fcntl = None  # type: ignore[assignment]

_PARTIAL = ".partial-"
_OLD = ".old-"


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike, copy: bool = True) -> Iterator[Path]:
    """A sibling folder holding a copy of `target` (`copy`) or nothing, swapped in for `target`
    when the block ends without an error and removed when it raises."""
    target = Path(target)
    with hold_output(target):
        restore_interrupted_swap(target, held=True)
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


def restore_interrupted_swap(target: str | os.PathLike, held: bool = False) -> Path | None:
    """Undo what a killed run left beside `target`: its staging folders are removed, and when
    `target` is missing because the run died between the swap's renames, the previous folder is
    put back. Returns the folder put back, if any. Folders of a run still alive are left alone,
    unless `held`: the caller holds `target` (`hold_output`), so no other run is writing beside
    it and every leftover is a dead run's, whatever process now has its pid."""
    target = Path(target)
    restored = None
    for leftover in sorted(target.parent.glob(f".{target.name}.*-*")):
        kind, _, pid = leftover.name.removeprefix(f".{target.name}").rpartition("-")
        if kind + "-" not in (_PARTIAL, _OLD) or not pid.isdigit() or (not held and _alive(int(pid))):
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


# --- one run per output ---------------------------------------------------------------------------

LOCK_SUFFIX = ".lock"  # .NAME.lock beside the output NAME
LOCK_INSIDE = ".littlekit.lock"  # in an output folder whose own folder cannot be written
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class OutputLocked(UsageError):
    """An output another live run is writing; the message names the output, the lock file and the
    holding run (pid, host, start, command), which `holder` keeps as read from the lock file."""

    def __init__(self, message: str, prog: str, holder: dict[str, Any], lock: Path):
        super().__init__(message, prog)
        self.holder = holder
        self.pid = holder.get("pid")
        self.lock = lock


@dataclass
class _Held:
    lock: Path
    fd: int
    pid: int  # the process holding it (a forked child does not hold its parent's locks)
    count: int = 1


_HELD: dict[str, _Held] = {}  # lock file (real path) -> this process's hold on it


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file of an output: `.NAME.lock` beside it (its real path: every spelling of one
    output, through symlinks or `..`, shares one lock)."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}{LOCK_SUFFIX}")


def _note(message: str) -> None:
    print(f"littlekit: note: {' '.join(message.split())}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def hold_output(
    path: str | os.PathLike,
    prog: str = "littlekit",
    label: str | None = None,
    note: Callable[[str], None] = _note,
) -> Iterator[Path]:
    """Hold the output `path` (a file or a folder) for the block: OutputLocked, before anything is
    written, when another live run holds it. Yields the lock file; released (and removed) when the
    block ends, on an error too. `label` (a flag, such as "--out") names the output in the error;
    `note` hears that a dead run's lock was taken over."""
    lock = _lock_file(Path(path), lock_path(path))
    key = str(lock)
    held = _HELD.get(key)
    if held is not None and held.pid == os.getpid():
        held.count += 1
    else:
        held = _HELD[key] = _Held(lock, _acquire(Path(path), lock, prog, label, note), os.getpid())
    try:
        yield lock
    finally:
        _release(key, held)


@contextlib.contextmanager
def hold_outputs(
    named: Iterable[tuple[str | None, str | os.PathLike | None]], prog: str = "littlekit"
) -> Iterator[list[Path]]:
    """`hold_output` for each (label, path) of `named` (None paths skipped, one output named twice
    held once), in a fixed order; all or none: a refused one lets go of those already held."""
    unique = {str(lock_path(path)): (label, Path(path)) for label, path in named if path is not None}
    with contextlib.ExitStack() as stack:
        ordered = [unique[key] for key in sorted(unique)]
        yield [stack.enter_context(hold_output(path, prog, label)) for label, path in ordered]


def check_not_held(path: str | os.PathLike, prog: str = "littlekit", label: str | None = None) -> None:
    """OutputLocked when another live run holds the output `path`; nothing is taken, created or
    removed. For the checks a command makes before it holds its outputs, so that a second run is
    told of the first rather than, say, that the output already holds a result."""
    lock = _lock_file(Path(path), lock_path(path))
    held = _HELD.get(str(lock))
    if held is not None and held.pid == os.getpid():
        return
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # no lock file (or none readable): nobody holds it
        return
    try:
        try:
            shared = fcntl is not None and _flock(fd, fcntl.LOCK_SH)
        except BlockingIOError:
            raise _locked(Path(path), lock, _read_holder(fd, wait=True), prog, label) from None
        if shared:
            fcntl.flock(fd, fcntl.LOCK_UN)
        elif (left := _read_holder(fd, wait=False)) and _alive_holder(left):
            raise _locked(Path(path), lock, left, prog, label)
    finally:
        os.close(fd)


def _lock_file(path: Path, beside: Path) -> Path:
    """Where the lock goes: beside the output; inside it when it is a folder whose own folder
    cannot be written (a run folder of yours in someone else's folder)."""
    if os.access(beside.parent, os.W_OK) or not beside.parent.exists() or not path.is_dir():
        return beside
    return Path(os.path.realpath(path)) / LOCK_INSIDE


def _acquire(path: Path, lock: Path, prog: str, label: str | None, note: Callable[[str], None]) -> int:
    """The open, locked lock file, holding this run's description."""
    for _ in range(100):  # the lock file may be removed by its releasing holder between open and flock
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:  # where the lock cannot be written, neither can the output
            raise OSError(exc.errno, f"cannot write {lock}, the lock file of {path}: "
                                     f"{exc.strerror or exc}") from exc  # fmt: skip
        try:
            if not _flock_soon(fd):  # no flock here: the recorded pid decides
                left = _read_holder(fd, wait=False)
                if left and _alive_holder(left):
                    raise _locked(path, lock, left, prog, label)
            elif not _same_file(fd, lock):
                os.close(fd)
                continue
        except BlockingIOError:
            holder = _read_holder(fd, wait=True)
            os.close(fd)
            raise _locked(path, lock, holder, prog, label) from None
        except BaseException:
            os.close(fd)
            raise
        left = _read_holder(fd, wait=False)
        if left and left.get("pid") != os.getpid():
            started = f", started {left['started']}" if left.get("started") else ""
            note(f"{lock} was left by pid {left.get('pid')} on {left.get('host')}{started}, which no "
                 f"longer holds it (killed?); this run (pid {os.getpid()}) takes {path} over")  # fmt: skip
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
              "command": " ".join(sys.argv)[:300], "output": str(path)}  # fmt: skip
        data = (json.dumps(me) + "\n").encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        return fd
    raise OSError(errno.EAGAIN, f"cannot lock {lock}: it keeps being replaced")


def _flock(fd: int, how: int | None = None) -> bool:
    """Lock fd (exclusively, or `how`) without waiting: BlockingIOError when another holds it;
    False when this file system (or platform) has no flock."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if how is None else how) | fcntl.LOCK_NB)
    except BlockingIOError:
        raise
    except OSError as exc:
        if exc.errno in _NO_FLOCK:
            return False
        raise
    return True


def _flock_soon(fd: int) -> bool:
    """`_flock`, tried again for a moment: `check_not_held` takes the lock shared for an instant."""
    for wait in (0.02, 0.05, 0.1, None):
        try:
            return _flock(fd)
        except BlockingIOError:
            if wait is None:
                raise
            time.sleep(wait)
    return False  # not reached


def _same_file(fd: int, lock: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(lock)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _read_holder(fd: int, wait: bool) -> dict[str, Any]:
    """The description in the lock file; `wait`: give a holder that has just locked it a moment to
    write it."""
    for _ in range(50 if wait else 1):
        try:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            holder = json.loads(text) if text.strip() else None
        except (OSError, ValueError):
            holder = None
        if isinstance(holder, dict):
            return holder
        if wait:
            time.sleep(0.01)
    return {}


def _alive_holder(holder: dict[str, Any]) -> bool:
    """(no flock) Whether the recorded holder still runs: on another host, taken as alive."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname():
        return True
    return isinstance(pid, int) and _alive(pid)


def _locked(path: Path, lock: Path, holder: dict[str, Any], prog: str, label: str | None) -> OutputLocked:
    named = f"{label} {path}" if label else str(path)
    if holder.get("pid") is None:
        who = "another run (its pid not recorded yet)"
    else:
        who = f"another run: pid {holder['pid']} on {holder.get('host', '?')}"
        if holder.get("started"):
            who += f", started {holder['started']}"
        if holder.get("command"):
            who += f" ({holder['command']})"
    return OutputLocked(
        f"{named} is being written by {who}; two runs into one output would corrupt it: wait for that "
        f"run to end (or stop it), or give another path (its lock file: {lock})",
        prog,
        holder,
        lock,
    )


def _release(key: str, held: _Held) -> None:
    held.count -= 1
    if held.count > 0 or held.pid != os.getpid():
        return
    _HELD.pop(key, None)
    try:
        if _same_file(held.fd, held.lock):
            held.lock.unlink(missing_ok=True)  # while still locked: a newcomer locks a new file
    finally:
        os.close(held.fd)
