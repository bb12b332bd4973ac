"""Progress on stderr for long steps: click's progress bar, with the total, the share done and the
time left; or a function called with the count done; or nothing.

A :class:`Progress` counts what a step has done (records, characters, texts, questions, files)
out of its total. Drawn, it is click's :func:`click.progressbar` (click estimates the time
left), redrawn at most ``rate`` times a second::

    ctxeval: chunking fixed [######--------------]  31%  183,421/591,200 characters, 00:00:04 left
    ctxeval: chunking fixed [####################] 100%  591,200/591,200 characters, done in 6.1 s

A step with no natural count (comparing runs, say) is a :meth:`Progress.phase`: one line,
``ctxeval: comparing the runs: done in 2.3 s``. On a stream that is no terminal (a log file),
``--progress`` writes plain lines instead of redrawing one: one every 10 seconds, and the last.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress", "Total"]

#: A step's total: a number, a function that counts it (called only when a bar is drawn, so a
#: silent run never pays for counting), or None when it cannot be known beforehand.
Total = int | Callable[[], int | None] | None

_BAR = "ctxeval: %(label)s [%(bar)s] %(info)s"
_PHASE = "ctxeval: %(label)s: %(info)s"
_LOG_EVERY = 10.0  # seconds between the lines written to a stream that is no terminal


def _seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _unknown() -> Iterator[None]:
    """An iterable of no known length: click's bar for a step whose total is unknown."""
    yield from ()


class Progress:
    """What a step has done out of its total, drawn on ``stream`` (click's progress bar on a
    terminal; plain lines elsewhere), passed to ``callback``, or neither. Use it as a context
    manager, or call :meth:`close` when the step ends."""

    def __init__(
        self,
        stream: TextIO | None = None,
        callback: Callable[[int], None] | None = None,
        *,
        total: Total = None,
        rate: float = 8.0,
        unit: str = "records",
        label: str = "",
        phase: bool = False,
    ) -> None:
        self._unit = unit
        self._label = label
        self._callback = callback
        self._phase = phase
        self._done = 0
        self._start = time.perf_counter()
        self._interval = 1.0 / rate
        self._last_draw = self._last_line = self._start
        self._closed = False
        self._stream = stream
        self._terminal = stream is not None and _terminal(stream)
        self._bar: Any = None
        self._stack = ExitStack()
        if stream is not None:
            self._bar = self._open(total() if callable(total) else total)
            self._stack.enter_context(self._bar)  # draws the bar at once: 0 done of the total

    @classmethod
    def from_option(
        cls,
        option: object,
        *,
        stream: TextIO,
        unit: str = "records",
        label: str = "",
        total: Total = None,
    ) -> Progress:
        """``True``: draw; ``False``: silent; ``None``: draw when ``stream`` is a terminal; a
        function: call it with the number of items done. ``label`` names the step
        (``"chunking fixed"``), ``unit`` what is counted, ``total`` how many there are."""
        if callable(option):
            return cls(callback=option, unit=unit, label=label)
        if option is None:
            option = _terminal(stream)
        return cls(stream=stream if option else None, unit=unit, label=label, total=total)

    @classmethod
    def phase(cls, option: object, *, stream: TextIO, label: str) -> Progress:
        """A step with no natural count, as one line (``label: done in 2.3 s``); drawn as
        :meth:`from_option` says; a function is called with 1 when the step is done."""
        if callable(option):
            return cls(callback=option, unit="", label=label, phase=True)
        if option is None:
            option = _terminal(stream)
        return cls(stream=stream if option else None, unit="", label=label, total=1, phase=True)

    @property
    def active(self) -> bool:
        """Whether anything sees the count (a bar is drawn or a function called)."""
        return self._bar is not None or self._callback is not None

    def _open(self, total: int | None) -> Any:
        import click

        bar = click.progressbar(
            _unknown() if total is None else None,
            length=total,
            label=self._label,
            # Not on a terminal, click would write the label alone: it draws into nothing, and
            # the lines it formats are written here instead (see _log).
            file=self._stream if self._terminal else io.StringIO(),
            bar_template=_PHASE if self._phase else _BAR,
            show_eta=False,
            show_percent=False if self._phase else None,
            item_show_func=self._info,
            width=20,
        )
        return bar

    def _info(self, _item: object) -> str:
        """What follows the bar: the count, and the time left, or how long the step took."""
        bar = self._bar
        elapsed = _seconds(time.perf_counter() - self._start)
        if self._closed:
            complete = bar.length is None or bar.pos >= bar.length
            timing = f"done in {elapsed}" if complete else f"stopped after {elapsed}"
        elif self._phase:
            return "..."  # not redrawn until it ends: a time here would stand still
        elif bar.length is not None and bar.eta_known and not bar.finished:
            timing = f"{bar.format_eta()} left"
        else:
            timing = elapsed
        if self._phase:
            return timing
        count = f"{bar.pos:,}" if bar.length is None else f"{bar.pos:,}/{bar.length:,}"
        return f"{count} {self._unit}, {timing}"

    def update(self, count: int) -> None:
        """``count`` more items done."""
        self._done += count
        if self._callback is not None:
            self._callback(self._done)
        if self._bar is None:
            return
        now = time.perf_counter()
        if now - self._last_draw >= self._interval:
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        step = self._done - self._bar.pos
        if step > 0:
            self._bar.update(step)  # click redraws the bar (on a terminal)
        elif self._terminal:
            self._bar.render_progress()
        if not self._terminal and (self._closed or now - self._last_line >= _LOG_EVERY):
            self._last_line = now
            self._log()

    def _log(self) -> None:
        assert self._stream is not None
        self._stream.write(self._bar.format_progress_line() + "\n")
        self._stream.flush()

    def close(self) -> None:
        """End the step: the bar's last state (done, or where it stopped), on its own line."""
        if self._closed:
            return
        self._closed = True
        if self._bar is None:
            return
        bar = self._bar
        if self._done >= (bar.length or 0):
            bar.finish()  # a full bar, even for a total of 0 or an unknown one
        self._draw(time.perf_counter())
        self._stack.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None and self._phase and self._done == 0:
            self.update(1)  # a phase that ended well is done
        self.close()
