"""Exceptions and warnings raised by ctxeval.

Every error subclasses the built-in it refines (``ValueError`` or ``TypeError``), so callers that
already catch those keep working. Messages say what was wrong, where (argument, record id, field,
file:line) and what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Fix:
    """The fix a message gives, as a parameter the user sets: ``parameter`` (``"on_error"``,
    ``"fields"``, ``"threshold"``, ...), the ``value`` to give it (None: a value the user names;
    a dict for ``fields``) and ``python``, the exact text that names it in the message
    (default ``parameter=value!r``, e.g. ``on_error='skip'``).

    The message is written once, in Python; the command line replaces ``text`` with its own
    words for the same parameter (:mod:`ctxeval.cli.flags`), without parsing the message.
    """

    parameter: str
    value: Any = None
    python: str | None = None

    @property
    def text(self) -> str:
        """The text of the message this fix replaces on the command line."""
        return self.python if self.python is not None else f"{self.parameter}={self.value!r}"

    def as_dict(self) -> dict[str, Any]:
        """The fix as plain data (kept with a skipped record in a saved result)."""
        return {"parameter": self.parameter, "value": self.value, "python": self.text}


def fixes_of(*sources: object) -> tuple[Fix, ...]:
    """The fixes ``sources`` carry (exceptions, warnings, records' errors), in order; a source
    without any adds none."""
    found: list[Fix] = []
    for source in sources:
        found.extend(getattr(source, "fixes", ()))
    return tuple(found)


class CtxevalError(Exception):
    """Base class of every error ctxeval raises on purpose.

    ``fixes`` (keyword-only) are the :class:`Fix` es the message names, so that the command line
    can say them as flags; ``str(error)`` is the message as given.
    """

    def __init__(self, *args: object, fixes: Iterable[Fix] = ()) -> None:
        super().__init__(*args)
        self.fixes = tuple(fixes)


class InvalidArgumentError(CtxevalError, ValueError):
    """A constructor or function argument has a bad value (a threshold outside [0, 1], ...)."""


class EnvironmentVariableError(InvalidArgumentError):
    """An environment variable ctxeval reads (``CTXEVAL_COMPILED``) has a value it does not
    know: about the process, never about a record."""


class InvalidArgumentTypeError(CtxevalError, TypeError):
    """A constructor or function argument has the wrong type."""


class InvalidRecordError(CtxevalError, ValueError):
    """A record (one query's retrieved and ground-truth context) cannot be scored as given.

    ``location`` names where the record came from (``"runs/a.jsonl:12"``, ``"record 'q7'"``) when
    known, ``field`` the offending field.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        location: str | None = None,
        fixes: Iterable[Fix] = (),
    ):
        self.field = field
        self.location = location
        prefix = f"{location}: " if location else ""
        super().__init__(prefix + message, fixes=fixes)


class WorkerProcessError(CtxevalError, RuntimeError):
    """A worker process died while scoring (killed from outside, e.g. by the out-of-memory
    killer); the message names the records it was scoring and what to do."""


class SpecError(CtxevalError, ValueError):
    """A metric or strategy spec string (``"ndcg@10"``, ``"rouge-chunk(threshold=0.7)"``) is bad.

    ``suggestion``: for an unknown name, the known name suggested ("did you mean"), else None.
    """

    suggestion: str | None = None


class MissingDependencyError(CtxevalError, ImportError):
    """An optional dependency (or data it needs, such as nltk's Punkt model) is not installed."""


class CtxevalWarning(UserWarning):
    """Base class of ctxeval's warnings; ``fixes`` as for :class:`CtxevalError`."""

    def __init__(self, *args: object, fixes: Iterable[Fix] = ()) -> None:
        super().__init__(*args)
        self.fixes = tuple(fixes)


class EmptyTokensWarning(CtxevalWarning):
    """Non-empty text produced no tokens, so it can never match (or be matched) by overlap."""


class NothingScoredWarning(CtxevalWarning):
    """An evaluation's aggregates are all None: it scored no query (an empty dataset, or every
    record skipped; ``queries`` is 0), or every query it scored was left out of them."""

    def __init__(self, *args: object, queries: int = 0, fixes: Iterable[Fix] = ()) -> None:
        super().__init__(*args, fixes=fixes)
        self.queries = queries


class PythonLiteralWarning(CtxevalWarning):
    """A CSV's list cells were Python literals (``['a', 'b']``), read as literals."""


class ConventionWarning(CtxevalWarning):
    """An implicit convention (ties in run scores, queries missing from a run) changed a result."""


def caller(call: str) -> Fix:
    """The fix that drops a message's leading Python call (``"compare(): "``) on the command
    line, where the command is the call."""
    return Fix("caller", None, f"{call}: ")


CORPUS_FIX = Fix("corpus", None, "corpus=...")
"""The fix of a span measure that needs the documents: give the corpus."""


def type_name(value: object) -> str:
    """A short, readable name of ``value``'s type for error messages."""
    return type(value).__name__
