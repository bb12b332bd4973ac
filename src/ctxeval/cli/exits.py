"""The command line's exit codes: the one place they are defined (``ctxeval --help`` lists them)."""

from __future__ import annotations

__all__ = ["EXIT_GATE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
