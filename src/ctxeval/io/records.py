"""Records as the evaluator consumes them: one query each, validated, with where it came from.

The readers in :mod:`ctxeval.io.readers` turn files, DataFrames and iterables into a stream of
:class:`Record` (a good record) and :class:`RecordError` (a bad one, with its location, field and
the fix); the evaluator decides whether an error stops the run or is counted and skipped.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxeval.validation import GradedText

__all__ = ["Mode", "Record", "RecordError"]

Mode = Literal["text", "id"]


@dataclass(frozen=True, slots=True)
class Record:
    """One validated query.

    - ``index``: 0-based position in the input stream (bad records count too), so results can be
      put back in input order;
    - ``id``: the record's id (from the data, or ``"#<index>"`` when it has none);
    - ``location``: where it came from, for messages (``"runs/a.jsonl:12"``, ``"row 3"``);
    - ``mode``: ``"text"`` (contexts) or ``"id"`` (chunk ids);
    - text mode: ``retrieved`` is ``list[str]``, ``ground_truth`` is ``list[str]`` or
      ``list[GradedText]``;
    - ID mode: ``retrieved`` is a list of ids, ``ground_truth`` is ``{id: grade}``;
    - ``metadata``: every other field of the input record (question, tags, ...), passed through
      to per-query results.
    """

    index: int
    id: str
    location: str
    mode: Mode
    retrieved: list[Any]
    ground_truth: list[str] | list[GradedText] | dict[Hashable, float]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record that cannot be scored: ``str(error)`` says where, which field, why and the fix."""

    index: int
    id: str | None
    location: str
    field: str | None
    message: str

    def __str__(self) -> str:
        who = f" (record {self.id!r})" if self.id is not None else ""
        return f"{self.location}{who}: {self.message}"
