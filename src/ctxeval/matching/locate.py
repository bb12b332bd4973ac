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
:class:`Locator` (chunks recur across queries).

:class:`InOrder` locates the chunks a splitter made of one document, which come in document
order (overlapping or not): the same three steps, each searching from a cursor one character
after the previous chunk's start, and fuzzy only in a window after it (see the class). Nothing
here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ctxeval.budgets import SPACE_CODES
from ctxeval.errors import InvalidArgumentError
from ctxeval.text.tokenize import token_starts
from ctxeval.validation import Span

__all__ = [
    "DEFAULT_FUZZY_THRESHOLD",
    "HOW",
    "InOrder",
    "Located",
    "Locator",
    "Placed",
    "TokenStarts",
    "compact",
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
    lowered = _lower(text)
    try:
        codes = np.frombuffer(lowered.encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate
        return _normalise_runs(lowered)
    # Whitespace as str.isspace() (re's \s): each run becomes its first character, a space.
    space = _IS_SPACE[np.minimum(codes, len(_IS_SPACE) - 1)]
    keep = np.ones(len(codes) + 1, dtype=bool)
    keep[1:-1] = ~(space[1:] & space[:-1])
    kept = np.where(space, np.uint32(32), codes)[keep[:-1]]
    return kept.tobytes().decode("utf-32-le"), np.flatnonzero(keep).astype(np.int64)


# Whether each code point up to the last whitespace one is whitespace (one more entry: not).
_IS_SPACE = np.zeros(int(SPACE_CODES.max()) + 2, dtype=bool)
_IS_SPACE[SPACE_CODES] = True


def _lower(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lowercase is longer (İ): keep its case
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lowered


def _normalise_runs(lowered: str) -> tuple[str, npt.NDArray[np.int64]]:
    keep = np.ones(len(lowered) + 1, dtype=bool)
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


@dataclass(frozen=True, slots=True)
class Placed:
    """Where :class:`InOrder` put a chunk: ``document[start:end]``, by which step, and how
    similar the two are (rapidfuzz ``ratio`` of their normalised texts, 0-100; 100 unless
    fuzzy). An unlocated chunk has no span (``start == end == -1``) and its best score."""

    start: int
    end: int
    how: How
    score: float


class InOrder:
    """Locates a document's chunks, given in document order, each after the previous one.

    For each chunk, the first step that succeeds wins:

    1. **exact**: ``str.find`` from the cursor (one character after the previous chunk's
       start, so an overlapping chunk is found where it is). An occurrence that ends inside the
       previous chunk (a repeated phrase) gives way to the next occurrence that goes beyond it,
       when there is one;
    2. **normalised**: the same, both texts lowercased with whitespace runs as one space
       (:func:`normalise`), then lowercased without any whitespace (:func:`compact`: a
       tokenizer's decoding adds and drops spaces); the span maps back to the document as
       written;
    3. **fuzzy**: both texts as :func:`compact`, rapidfuzz's ``partial_ratio_alignment`` of
       the chunk in a window of the document after the cursor (twice the chunk's length and
       1,000 characters; then the next 20,000), its two ends then matched on their own (the
       first and last 32 characters, :func:`_best_end`) so a chunk that lost or gained
       characters gets the span it came from; kept when ``fuzz.ratio`` of the chunk and the
       span (both :func:`compact`) is at least ``threshold``.

    A chunk found nowhere leaves the cursor where it was. The normalised forms of the document
    are built the first time a chunk is not found exactly.
    """

    _WINDOWS: ClassVar[tuple[int, ...]] = (1_000, 20_000)
    _END = 32

    def __init__(self, document: str, threshold: float = DEFAULT_FUZZY_THRESHOLD) -> None:
        self.document = document
        self.threshold = threshold
        self.cursor = 0  # where the next search starts
        self.reach = 0  # the end of the previous located chunk
        self._normalised: _Normalised | None = None
        self._compact: _Normalised | None = None
        # Whole-chunk alignments this far below the threshold are not worth refining (aligning
        # the ends raises a score by less: it only fits the span's length to the chunk's).
        self._cutoff = max(0.0, threshold - 10)

    def locate(self, text: str) -> Placed:
        """Where ``text`` is, after the previous chunk (``how == "unlocated"``: nowhere)."""
        placed = self._exact(text)
        if placed is None:
            placed = self._normal(_SPACES.sub(" ", _lower(text)).strip())
        if placed is None:
            wanted = compact(text)
            placed = self._compacted(wanted)
            if placed is None:
                placed = self._fuzzy(wanted)
        if placed.how != "unlocated":
            self.cursor = placed.start + 1
            self.reach = placed.end
        return placed

    def _exact(self, text: str) -> Placed | None:
        start = _find_beyond(self.document, text, self.cursor, self.reach)
        return None if start < 0 else Placed(start, start + len(text), "exact", 100.0)

    def _norm(self) -> _Normalised:
        if self._normalised is None:
            self._normalised = _Normalised(*normalise(self.document))
        return self._normalised

    def _comp(self) -> _Normalised:
        if self._compact is None:
            norm = self._norm()
            codes = np.frombuffer(norm.text.encode("utf-32-le"), dtype=np.uint32)
            keep = np.append(codes != ord(" "), True)
            self._compact = _Normalised(norm.text.replace(" ", ""), norm.origin[keep])
        return self._compact

    def _normal(self, wanted: str) -> Placed | None:
        if not wanted:
            return None
        norm = self._norm()
        cursor, reach = np.searchsorted(norm.origin, [self.cursor, self.reach])
        start = _find_beyond(norm.text, wanted, int(cursor), int(reach))
        if start < 0:
            return None
        return Placed(*_back(norm, start, start + len(wanted)), "normalised", 100.0)

    def _compacted(self, wanted: str) -> Placed | None:
        if not wanted:
            return None
        comp = self._comp()
        cursor, reach = np.searchsorted(comp.origin, [self.cursor, self.reach])
        start = _find_beyond(comp.text, wanted, int(cursor), int(reach))
        if start < 0:
            return None
        return Placed(*_back(comp, start, start + len(wanted)), "normalised", 100.0)

    def _fuzzy(self, wanted: str) -> Placed:
        from rapidfuzz import fuzz

        if not wanted:
            return Placed(-1, -1, "unlocated", 0.0)
        comp = self._comp()
        text = comp.text
        begin = int(np.searchsorted(comp.origin, self.cursor))
        best = 0.0
        stop = begin
        for extra in self._WINDOWS:
            window_end = min(len(text), stop + 2 * len(wanted) + extra)
            if window_end <= stop:
                break
            # Windows overlap by the chunk's length, so no alignment is cut at their border.
            window_start = max(begin, stop - len(wanted))
            found = fuzz.partial_ratio_alignment(
                wanted, text[window_start:window_end], score_cutoff=self._cutoff
            )
            if found is not None:
                start, end = self._ends(
                    wanted, window_start + found.dest_start, window_start + found.dest_end, begin
                )
                score = fuzz.ratio(wanted, text[start:end])
                if score >= self.threshold:
                    return Placed(*_back(comp, start, end), "fuzzy", score)
                best = max(best, score)
            stop = window_end
        return Placed(-1, -1, "unlocated", best)

    def _ends(self, wanted: str, start: int, end: int, begin: int) -> tuple[int, int]:
        """The alignment's span with its ends where the chunk's own ends match best (a
        whole-chunk alignment is as long as the chunk, not as the text it came from): the
        chunk's first and last 32 characters matched, with the fewest characters inserted and
        deleted, in a window around each end (:func:`_best_end`). The whole-chunk span when
        that scores less."""
        from rapidfuzz import fuzz

        text = self._comp().text
        size = min(self._END, len(wanted))
        slack = max(2 * size, len(wanted) // 8)
        low, high = max(begin, start - slack), min(len(text), start + slack + size)
        new_start = high - _best_end(wanted[:size][::-1], text[low:high][::-1], high - start)
        low, high = max(begin, end - slack - size), min(len(text), end + slack)
        new_end = low + _best_end(wanted[-size:], text[low:high], end - low)
        if new_start < new_end and fuzz.ratio(wanted, text[new_start:new_end]) >= min(
            self.threshold, fuzz.ratio(wanted, text[start:end])
        ):
            return new_start, new_end
        return start, end


def _best_end(needle: str, region: str, near: int) -> int:
    """Where in ``region`` a match of ``needle`` ends that costs the fewest characters
    inserted and deleted (Sellers' approximate matching: the match may start anywhere); of
    several, the nearest to ``near`` (the first on ties). One row of the table per character
    of ``needle``, each row at once."""
    codes = np.fromiter(map(ord, region), dtype=np.int64, count=len(region))
    wanted = np.fromiter(map(ord, needle), dtype=np.int64, count=len(needle))
    equal = wanted[:, None] == codes[None, :]
    steps = np.arange(len(region) + 1, dtype=np.int64)
    row = np.zeros(len(region) + 1, dtype=np.int64)  # the empty needle matches anywhere
    best = np.empty_like(row)
    for matches in equal:
        np.add(row, 1, out=best)  # the needle's character deleted
        # or matched with the region's character before this end
        np.minimum(best[1:], np.where(matches, row[:-1], best[1:]), out=best[1:])
        # or a region character inserted: the best earlier cell plus the distance to it.
        row = np.minimum.accumulate(best - steps) + steps
    ends = np.flatnonzero(row == row.min())
    return int(ends[np.argmin(np.abs(ends - near))])


def compact(text: str) -> str:
    """``text`` lowercased (as :func:`normalise`) and without any whitespace: what the fuzzy
    step of :class:`InOrder` compares."""
    return _SPACES.sub("", _lower(text))


def _back(norm: _Normalised, start: int, end: int) -> tuple[int, int]:
    """A span of a normalised text as a span of the text as written (up to its last character
    kept, so a collapsed whitespace run after it is not included)."""
    return int(norm.origin[start]), int(norm.origin[end - 1]) + 1


def _find_beyond(haystack: str, needle: str, cursor: int, reach: int) -> int:
    """The first occurrence of ``needle`` from ``cursor``, or the first one that ends after
    ``reach`` when the first ends at or before it (-1: none)."""
    first = haystack.find(needle, cursor)
    found = first
    while found >= 0 and found + len(needle) <= reach:
        found = haystack.find(needle, found + 1)
    return first if found < 0 else found


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
