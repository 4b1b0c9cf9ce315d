"""Progress lines for long loops (training, sampling, scoring, filtering, fitting).

A line each tenth of the way and at the end, never a redrawn bar, so a notebook's saved output
and a batch log both keep a few readable lines:

    sampling: 320/1,280 completions (25%), 41s, about 2m left
    train LittleLearner: 400/800 steps (50%), 3m 10s, about 3m left, loss 2.913

A loop that ends quickly says nothing: lines appear only once it has run `quiet_for` seconds
(a chapter that samples 40 units in 40 short calls shows no 400 lines). With no known total,
a line every `interval` seconds gives the count so far. `LITTLEKIT_PROGRESS=0` silences every
loop; `quiet()` does so inside a block.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_SILENCED = [False]
QUIET_FOR = 5.0  # seconds a loop runs before its first line (a test sets 0 to see every line)


def enabled() -> bool:
    """False under `quiet()` or with LITTLEKIT_PROGRESS=0 in the environment."""
    return not _SILENCED[0] and os.environ.get("LITTLEKIT_PROGRESS", "1") != "0"


@contextmanager
def quiet() -> Iterator[None]:
    """No progress lines inside the block (a loop nested in another that reports)."""
    before = _SILENCED[0]
    _SILENCED[0] = True
    try:
        yield
    finally:
        _SILENCED[0] = before


def duration(seconds: float) -> str:
    """`41s`, `3m 10s`, `1h 02m`."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


class Progress:
    """Counts a loop's items and prints a line each `fraction` of `total` (or each `interval`
    seconds when the total is unknown), once the loop has run `quiet_for` seconds."""

    def __init__(
        self,
        total: int | None,
        label: str,
        unit: str = "items",
        fraction: float = 0.1,
        interval: float = 30.0,
        quiet_for: float | None = None,
        stream: TextIO | None = None,
        clock=time.monotonic,
    ):
        if total is not None and total < 0:
            raise ValueError(f"{label}: total must be at least 0, got {total}")
        if not 0 < fraction <= 1:
            raise ValueError(f"{label}: fraction must be in (0, 1], got {fraction}")
        self.total, self.label, self.unit = total, label, unit
        self.fraction, self.interval = fraction, interval
        self.quiet_for = QUIET_FOR if quiet_for is None else quiet_for
        self.stream, self.clock = stream, clock
        self.count = 0
        self.lines: list[str] = []
        self.started = clock()
        self._next_mark = self._mark_after(0)
        self._next_time = self.started + interval
        self._said_end = False

    def _mark_after(self, count: int) -> int | None:
        if not self.total:
            return None
        step = max(1, int(self.total * self.fraction))
        return (count // step + 1) * step

    def update(self, n: int = 1, **info: Any) -> None:
        """Count `n` more items; `info` (such as loss=2.9) is shown on the line, if one is due."""
        self.count += n
        now = self.clock()
        at_end = self.total is not None and self.count >= self.total
        if self._next_mark is not None and self.count >= self._next_mark:
            self._next_mark = self._mark_after(self.count)
            due = True
        elif self.total is None and now >= self._next_time:
            due = True
        else:
            due = at_end
        if due:
            self._next_time = now + self.interval
            if now - self.started >= self.quiet_for and not (at_end and self._said_end):
                self._say(now, info)
                self._said_end = at_end

    def _say(self, now: float, info: dict[str, Any]) -> None:
        elapsed = now - self.started
        if self.total:
            share = min(self.count / self.total, 1.0)
            line = (
                f"{self.label}: {self.count:,}/{self.total:,} {self.unit} ({share:.0%}), {duration(elapsed)}"
            )
            if 0 < share < 1:
                line += f", about {duration(elapsed * (1 - share) / share)} left"
        else:
            line = f"{self.label}: {self.count:,} {self.unit}, {duration(elapsed)}"
        line += "".join(f", {k} {v:.4g}" if isinstance(v, float) else f", {k} {v}" for k, v in info.items())
        self.lines.append(line)
        if enabled():
            print(line, file=self.stream or sys.stdout, flush=True)
