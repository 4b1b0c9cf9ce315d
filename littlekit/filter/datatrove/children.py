"""Helper processes that do not outlive the run that started them.

datatrove's local executor starts a multiprocessing Manager (a forked server process holding the
queue of free ranks) and, for more than one worker, a pool. When the command is killed outright
(SIGKILL, the OOM killer) nothing of it runs again to shut them down: the pool's workers and the
forkserver see their pipes close and exit, but the Manager's server waits for clients forever,
an orphan. `children_die_with_this_process()` around `runner.run()` has every process forked
from this one meanwhile ask Linux to kill it when its parent dies (prctl PR_SET_PDEATHSIG), and
exit at once when the parent is already gone. Elsewhere (no prctl) it does nothing.

The request is inherited by no grandchild and holds for the forking thread: the executor is run
from the thread that enters the block, which is what `run_datatrove` and `filter_with_datatrove`
do.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
_state = {"parent": None, "registered": False, "prctl": None}
_lock = threading.Lock()


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def _in_child() -> None:
    parent = _state["parent"]
    if parent is None:
        return
    _state["parent"] = None  # this child's own forks are not covered by its parent's request
    prctl = _state["prctl"]
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


@contextlib.contextmanager
def children_die_with_this_process() -> Iterator[None]:
    """Within the block, each process forked from this one is killed when this one dies."""
    with _lock:
        if _state["prctl"] is None:
            _state["prctl"] = _prctl()  # looked up here: a forked child only calls it
        if not _state["registered"] and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_in_child)
            _state["registered"] = True
        before = _state["parent"]
        _state["parent"] = os.getpid()
    try:
        yield
    finally:
        _state["parent"] = before
