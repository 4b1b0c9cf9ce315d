"""Progress lines (littlekit.progress): a line each tenth of the way once the loop has run a while,
the time left, none for a quick loop, counts when the total is unknown, and the off switch."""

import io

import pytest

from littlekit import progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run(total, seconds_per_item, n=None, **kwargs):
    clock, stream = Clock(), io.StringIO()
    bar = progress.Progress(total, "sampling", "completions", clock=clock, stream=stream, **kwargs)
    for _ in range(total if n is None else n):
        clock.now += seconds_per_item
        bar.update(loss=2.5)
    return stream.getvalue().splitlines()


def test_a_line_each_tenth_with_time_left_and_one_at_the_end():
    lines = run(100, 1.0)
    assert len(lines) == 10  # 10%, 20%, ..., 100%: all after the 5 s it stays quiet
    assert lines[0] == "sampling: 10/100 completions (10%), 10s, about 1m 30s left, loss 2.5"
    assert lines[-1] == "sampling: 100/100 completions (100%), 1m 40s, loss 2.5"


def test_a_quick_loop_says_nothing_and_an_early_mark_is_skipped():
    assert run(100, 0.01) == []
    lines = run(10, 1.0)  # marks at 1..10 s; those before 5 s are quiet
    assert [line.split(":")[1].split()[0] for line in lines] == [
        "5/10",
        "6/10",
        "7/10",
        "8/10",
        "9/10",
        "10/10",
    ]


def test_an_unknown_total_gives_the_count_every_interval():
    clock, stream = Clock(), io.StringIO()
    bar = progress.Progress(None, "filtering", "documents", clock=clock, stream=stream, interval=30.0)
    for _ in range(95):
        clock.now += 1.0
        bar.update()
    assert stream.getvalue().splitlines() == [
        "filtering: 30 documents, 30s",
        "filtering: 60 documents, 1m 00s",
        "filtering: 90 documents, 1m 30s",
    ]


def test_quiet_and_the_environment_switch_silence_lines_but_keep_them(monkeypatch):
    with progress.quiet():
        assert run(20, 1.0) == []
    monkeypatch.setenv("LITTLEKIT_PROGRESS", "0")
    clock = Clock()
    bar = progress.Progress(4, "train", "steps", clock=clock, quiet_for=0.0, stream=io.StringIO())
    for _ in range(4):
        clock.now += 1
        bar.update()
    assert len(bar.lines) == 4 and bar.stream.getvalue() == ""


def test_bad_arguments_are_refused_and_durations_read_well():
    with pytest.raises(ValueError, match="x: total must be at least 0"):
        progress.Progress(-1, "x")
    with pytest.raises(ValueError, match="x: fraction must be in"):
        progress.Progress(10, "x", fraction=0)
    assert progress.duration(3725) == "1h 02m"
