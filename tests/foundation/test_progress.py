"""Progress: click's bar with the total, the share done and the time left, on a terminal or
(asked for) a log; a function called with the count done; nothing otherwise. No test looks at
times: they vary."""

from __future__ import annotations

import io
import re

import pytest

from ctxeval.foundation.progress import Progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _counted(log: list[int]) -> int:
    log.append(1)
    return 3


def test_a_drawn_bar_ends_with_its_total_and_the_share_done() -> None:
    stream = io.StringIO()  # no terminal: asked for, it writes plain lines
    with Progress.from_option(
        True, stream=stream, unit="questions", label="retrieving fixed", total=3
    ) as bar:
        for _ in range(3):
            bar.update(1)
    lines = stream.getvalue().splitlines()
    assert lines[-1].startswith("ctxeval: retrieving fixed [####################] 100%")
    assert "3/3 questions, done in " in lines[-1]
    assert "\r" not in stream.getvalue()  # a log gets lines, not redrawn ones


def test_on_a_terminal_the_bar_is_redrawn_in_place() -> None:
    stream = Terminal()
    with Progress.from_option(None, stream=stream, label="scoring a.jsonl", total=4) as bar:
        bar.update(4)
    drawn = stream.getvalue()
    assert "\r" in drawn
    assert "0/4 records" in drawn  # drawn at once, before anything is done
    assert "100%  4/4 records, done in" in drawn
    assert drawn.endswith("\n")


@pytest.mark.parametrize("option", [False, None])
def test_silent_unless_asked_or_a_terminal(option: bool | None) -> None:
    stream = io.StringIO()
    counted: list[int] = []
    with Progress.from_option(
        option, stream=stream, total=lambda: _counted(counted), label="x"
    ) as bar:
        bar.update(3)
    assert stream.getvalue() == ""
    assert counted == []  # a silent bar never counts its total
    assert not bar.active


def test_the_total_is_counted_once_when_drawn() -> None:
    counted: list[int] = []
    stream = io.StringIO()
    with Progress.from_option(True, stream=stream, total=lambda: _counted(counted)) as bar:
        bar.update(3)
    assert counted == [1]
    assert "3/3 records" in stream.getvalue()


def test_a_function_gets_increasing_counts_ending_at_the_total() -> None:
    seen: list[int] = []
    with Progress.from_option(seen.append, stream=io.StringIO(), total=10) as bar:
        for size in (3, 3, 4):
            bar.update(size)
    assert seen == [3, 6, 10]
    assert bar.active


def _stopped(stream: io.StringIO) -> None:
    with Progress.from_option(True, stream=stream, label="scoring", total=10) as bar:
        bar.update(4)
        raise KeyboardInterrupt


def test_a_step_stopped_early_says_so() -> None:
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        _stopped(stream)
    assert re.search(r"40%  4/10 records, stopped after ", stream.getvalue())


def test_an_unknown_total_shows_the_count() -> None:
    stream = io.StringIO()
    with Progress.from_option(True, stream=stream, label="scoring <stdin>") as bar:
        bar.update(7)
    line = stream.getvalue().splitlines()[-1]
    assert "7 records, done in " in line
    assert "%" not in line


def test_a_phase_is_one_line() -> None:
    stream = io.StringIO()
    with Progress.phase(True, stream=stream, label="comparing the runs"):
        pass
    assert re.fullmatch(r"ctxeval: comparing the runs: done in \d+\.\d s\n", stream.getvalue())
    seen: list[int] = []
    with Progress.phase(seen.append, stream=stream, label="comparing the runs"):
        pass
    assert seen == [1]
    with Progress.phase(None, stream=io.StringIO(), label="x") as phase:
        assert not phase.active
