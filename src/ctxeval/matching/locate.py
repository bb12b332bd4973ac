"""Locating texts in their documents: where a chunk or an excerpt is, as a character span.

Span metrics need each text's span. A record that does not give one has it located in the
corpus (``{name: text}``), in three steps, the first that succeeds wins:

1. **exact**: the text is a substring of a document (``str.find``, so the first occurrence);
2. **normalised**: it is a substring once both are lowercased and every run of whitespace is
   one space (the span maps back to the document as written);
3. **fuzzy**: rapidfuzz's ``partial_ratio_alignment`` of the normalised text against each
   normalised document scores at least ``threshold`` (0-100, default
   :data:`DEFAULT_FUZZY_THRESHOLD`); the best-scoring document wins (the first on ties).

A document the record names (its ``doc`` field) is searched first at each step, then every
document in corpus order. Each distinct (text, named document) is located once per
:class:`Locator` (chunks recur across queries). Nothing here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from ctxeval.errors import InvalidArgumentError
from ctxeval.text.tokenize import token_starts
from ctxeval.validation import Span

__all__ = [
    "DEFAULT_FUZZY_THRESHOLD",
    "HOW",
    "Located",
    "Locator",
    "TokenStarts",
    "normalise",
]

DEFAULT_FUZZY_THRESHOLD = 90.0
"""The least rapidfuzz ``partial_ratio`` score (0-100) for a fuzzy location."""

How = Literal["exact", "normalised", "fuzzy", "unlocated"]
HOW: tuple[How, ...] = ("exact", "normalised", "fuzzy", "unlocated")

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Located:
    """Where a text was found (None: nowhere), and by which step."""

    span: Span | None
    how: How


@dataclass(frozen=True)
class _Normalised:
    text: str
    origin: npt.NDArray[np.int64]  # the document offset of each normalised character, + its end


def normalise(text: str) -> tuple[str, npt.NDArray[np.int64]]:
    """``text`` lowercased with each run of whitespace as one space, and for each of its
    characters the offset in ``text`` it comes from (one more entry: the end of ``text``)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lowercase is longer (İ): keep its case
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    keep = np.ones(len(text) + 1, dtype=bool)
    pieces = []
    last = 0
    for run in _SPACES.finditer(lowered):
        pieces.append(lowered[last : run.start()])
        pieces.append(" ")
        keep[run.start() + 1 : run.end()] = False
        last = run.end()
    pieces.append(lowered[last:])
    return "".join(pieces), np.flatnonzero(keep).astype(np.int64)


@dataclass
class Locator:
    """Locates texts in ``corpus``; remembers each answer."""

    corpus: Mapping[str, str]
    threshold: float = DEFAULT_FUZZY_THRESHOLD
    _found: dict[tuple[str, str | None], Located] = field(default_factory=dict, repr=False)
    _normalised: dict[str, _Normalised] = field(default_factory=dict, repr=False)
    _tokens: dict[str, TokenStarts] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise InvalidArgumentError(
                f"fuzzy_threshold={self.threshold!r}: give a number from 0 to 100"
            )
        if not 0 < self.threshold <= 100:
            raise InvalidArgumentError(
                f"fuzzy_threshold={self.threshold!r}: give a number above 0, at most 100 "
                "(100 accepts only texts equal after normalising)"
            )

    def __getstate__(self) -> dict[str, object]:
        # Sent to worker processes without what it has learnt: each rebuilds its own.
        return {"corpus": self.corpus, "threshold": self.threshold}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.corpus = state["corpus"]  # type: ignore[assignment]
        self.threshold = state["threshold"]  # type: ignore[assignment]
        self._found = {}
        self._normalised = {}
        self._tokens = {}

    def token_starts(self, unit: str) -> TokenStarts:
        """Where the tokens of ``unit`` start in each document."""
        found = self._tokens.get(unit)
        if found is None:
            found = self._tokens[unit] = TokenStarts(self.corpus, unit)
        return found

    def text_of(self, span: Span) -> str | None:
        """The text ``span`` covers, or None when its document is not in the corpus."""
        document = self.corpus.get(span.doc)
        return None if document is None else document[span.start : span.end]

    def locate(self, text: str, doc: str | None = None) -> Located:
        """The span of ``text`` (searched first in ``doc`` when it is a corpus document)."""
        key = (text, doc)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._search(text, doc)
        return found

    def _order(self, doc: str | None) -> list[str]:
        names = list(self.corpus)
        if doc is not None and doc in self.corpus:
            names.remove(doc)
            names.insert(0, doc)
        return names

    def _search(self, text: str, doc: str | None) -> Located:
        if not text.strip():
            return Located(None, "unlocated")
        names = self._order(doc)
        for name in names:
            start = self.corpus[name].find(text)
            if start >= 0:
                return Located(Span(name, start, start + len(text)), "exact")
        wanted = normalise(text)[0].strip()
        for name in names:
            norm = self._norm(name)
            start = norm.text.find(wanted)
            if start >= 0:
                return Located(self._back(name, start, start + len(wanted)), "normalised")
        return self._fuzzy(wanted, names)

    def _fuzzy(self, wanted: str, names: list[str]) -> Located:
        from rapidfuzz import fuzz

        best: tuple[float, str, int, int] | None = None
        for name in names:
            result = fuzz.partial_ratio_alignment(
                wanted, self._norm(name).text, score_cutoff=self.threshold
            )
            if result is not None and (best is None or result.score > best[0]):
                best = (result.score, name, result.dest_start, result.dest_end)
        if best is None:
            return Located(None, "unlocated")
        return Located(self._back(best[1], best[2], best[3]), "fuzzy")

    def _norm(self, name: str) -> _Normalised:
        found = self._normalised.get(name)
        if found is None:
            text, origin = normalise(self.corpus[name])
            found = self._normalised[name] = _Normalised(text, origin)
        return found

    def _back(self, name: str, start: int, end: int) -> Span:
        """A span of the normalised document as a span of the document as written."""
        origin = self._norm(name).origin
        # The end is just after the last character kept, so a collapsed run is not included.
        return Span(
            name,
            int(origin[start]),
            int(origin[end - 1]) + 1 if end > start else int(origin[start]),
        )


class TokenStarts(Mapping[str, frozenset[int]]):
    """Per document of ``corpus``, the offsets where the tokens of ``unit`` start, computed for
    a document the first time it is asked for."""

    def __init__(self, corpus: Mapping[str, str], unit: str) -> None:
        self.corpus = corpus
        self.unit = unit
        self._found: dict[str, frozenset[int]] = {}

    def __getitem__(self, doc: str) -> frozenset[int]:
        found = self._found.get(doc)
        if found is None:
            found = self._found[doc] = frozenset(token_starts(self.unit, self.corpus[doc]))
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.corpus)

    def __len__(self) -> int:
        return len(self.corpus)
