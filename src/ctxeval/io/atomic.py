"""Atomic file writes: the target appears complete or not at all.

Every file ctxeval writes (results, reports, converted datasets, TREC runs and qrels, Dask parts)
goes through :func:`atomic_write`: the bytes go to a hidden temporary file beside the target
(``.<name>.<random>.tmp``), which is flushed, synced and renamed over the target only when the
writing finished. An exception, Ctrl-C (SIGINT) or SIGTERM during the write removes the
temporary file and leaves the target as it was; only SIGKILL (which no process can catch) can
leave a temporary file behind, never a partial target.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["Terminated", "atomic_write", "terminate_raises"]


class Terminated(SystemExit):
    """SIGTERM arrived while a file was being written: unwinds like ``sys.exit(143)``, so that
    ``finally`` blocks (which remove temporary files) run before the process exits."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (a ``SystemExit`` with status
    143) instead of killing the process outright, so ``finally`` blocks run: temporary files
    are removed, worker processes stopped. Only where Python can install handlers (the main
    thread) and only when SIGTERM still has its default action: a handler the program installed
    itself is left alone."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:  # (a nested block restored it)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def atomic_write(target: Path, *, binary: bool = False) -> Iterator[Any]:
    """Write to a temporary file beside ``target`` and rename it into place on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with terminate_raises():
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            # mkstemp makes the file private (0600); a result or report is an ordinary file.
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            out: Any = (
                os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
            )
            with out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
