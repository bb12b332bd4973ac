"""The values a record carries besides plain texts and ids: graded ground-truth texts and spans."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "GradedText",
    "Span",
]


@dataclass(frozen=True, slots=True)
class GradedText:
    text: str
    grade: float


@dataclass(frozen=True, slots=True)
class Span:
    """Where a text is in its document: ``doc[start:end]``, with Python string indices into the
    document decoded as UTF-8 (characters, not bytes)."""

    doc: str
    start: int
    end: int

    def as_dict(self) -> dict[str, Any]:
        return {"doc": self.doc, "start": self.start, "end": self.end}
