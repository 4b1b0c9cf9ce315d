"""Independent CPU jobs side by side: each in a fresh ("spawn") process with its own thread count.

On a 2-core machine two one-thread jobs side by side finish sooner than the same two one after the
other on two threads each (a small model does not keep two threads busy). Spawned processes start
clean, so this works from a notebook kernel; `fn` must be importable (defined at module level).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Result = TypeVar("Result")


def _with_threads(fn: Callable[[Any], Result], item: Any, threads: int) -> Result:
    import torch

    torch.set_num_threads(threads)
    return fn(item)


def side_by_side(
    fn: Callable[[Any], Result], items: Sequence[Any], processes: int = 2, threads: int = 1
) -> list[Result]:
    """[fn(item) for item in items], `processes` at a time with `threads` torch threads each;
    results in the order of `items`. One item, or processes=1, runs here, in this process."""
    if processes < 1 or threads < 1:
        raise ValueError("processes and threads must be positive")
    if len(items) <= 1 or processes == 1:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return [fn(item) for item in items]
        finally:
            torch.set_num_threads(before)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(processes, len(items)), mp_context=context) as pool:
        return list(pool.map(_with_threads, [fn] * len(items), items, [threads] * len(items)))
