"""Exceptions and warnings raised by ctxeval.

Every error subclasses the built-in it refines (``ValueError`` or ``TypeError``), so callers that
already catch those keep working. Messages say what was wrong, where (argument, record id, field,
file:line) and what to do about it.
"""

from __future__ import annotations


class CtxevalError(Exception):
    """Base class of every error ctxeval raises on purpose."""


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

    def __init__(self, message: str, *, field: str | None = None, location: str | None = None):
        self.field = field
        self.location = location
        prefix = f"{location}: " if location else ""
        super().__init__(prefix + message)


class WorkerProcessError(CtxevalError, RuntimeError):
    """A worker process died while scoring (killed from outside, e.g. by the out-of-memory
    killer); the message names the records it was scoring and what to do."""


class SpecError(CtxevalError, ValueError):
    """A metric or strategy spec string (``"ndcg@10"``, ``"rouge-chunk(threshold=0.7)"``) is bad."""


class MissingDependencyError(CtxevalError, ImportError):
    """An optional dependency (or data it needs, such as nltk's Punkt model) is not installed."""


class CtxevalWarning(UserWarning):
    """Base class of ctxeval's warnings."""


class EmptyTokensWarning(CtxevalWarning):
    """Non-empty text produced no tokens, so it can never match (or be matched) by overlap."""


class PythonLiteralWarning(CtxevalWarning):
    """A CSV's list cells were Python literals (``['a', 'b']``), read as literals."""


class ConventionWarning(CtxevalWarning):
    """An implicit convention (ties in run scores, queries missing from a run) changed a result."""


def type_name(value: object) -> str:
    """A short, readable name of ``value``'s type for error messages."""
    return type(value).__name__
