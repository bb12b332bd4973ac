"""A progress line on stderr for long runs (no dependency, no output when not a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts records and redraws one status line at most ``rate`` times a second."""

    def __init__(
        self,
        stream: TextIO | None = None,
        callback: Callable[[int], None] | None = None,
        *,
        rate: float = 8.0,
        unit: str = "records",
        label: str = "",
    ) -> None:
        self._unit = unit
        self._label = f"{label}: " if label else ""
        self._stream = stream
        self._callback = callback
        self._interval = 1.0 / rate
        self._done = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    @classmethod
    def from_option(
        cls, option: object, *, stream: TextIO, unit: str = "records", label: str = ""
    ) -> Progress:
        """``True``: draw; ``False``: silent; ``None``: draw when ``stream`` is a terminal; a
        function: call it with the number of items done. ``label`` names the step
        (``"chunking fixed"``), ``unit`` what is counted."""
        if callable(option):
            return cls(callback=option, unit=unit, label=label)
        if option is None:
            option = stream.isatty()
        return cls(stream=stream if option else None, unit=unit, label=label)

    def update(self, count: int) -> None:
        self._done += count
        if self._callback is not None:
            self._callback(self._done)
        if self._stream is None:
            return
        now = time.perf_counter()
        if now - self._last_draw >= self._interval:
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        assert self._stream is not None
        elapsed = max(now - self._start, 1e-9)
        self._stream.write(
            f"\rctxeval: {self._label}{self._done:,} {self._unit}, "
            f"{self._done / elapsed:,.0f}/s, {elapsed:.1f}s"
        )
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._stream is not None and self._done:
            self._draw(time.perf_counter())
        if self._drawn and self._stream is not None:
            self._stream.write("\n")
            self._stream.flush()
