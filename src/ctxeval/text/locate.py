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
from typing import Literal

import numpy as np
import numpy.typing as npt

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.records.values import Span
from ctxeval.text.sizes import SPACE_CODES
from ctxeval.text.tokenize import token_starts

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
    3. **fuzzy**: both texts as :func:`compact`. Where the chunk may be is found in the
       first of three ways that gives a match: the places where 16 pieces of it of 12
       characters occur as they are (from the cursor, and from the previous chunk's end, to
       20,000 characters past twice the chunk's length after it; at most 6 places, those
       most pieces agree on first); the same with 32 pieces of 6 characters; for a chunk of
       at most 256 characters, rapidfuzz's ``partial_ratio_alignment`` of the whole chunk
       from the cursor to twice its length past the previous chunk's end (it compares every
       window of the chunk's length: too slow for long chunks, which have pieces anyway). At
       each place the chunk's two ends are matched on their own (its first and last 32
       characters: where they occur as they are, nearest, else :func:`_best_end`), so a
       chunk that lost or gained characters gets the span it came from; a place matches
       when ``fuzz.ratio`` of the chunk and the span is at least ``threshold``. Of the
       matches, one that ends past the previous chunk wins over one inside it, then the best
       score, then the nearest.

    A chunk found nowhere leaves the cursor where it was. The normalised forms of the document
    are built the first time a chunk is not found exactly.
    """

    _ANCHOR = 12  # the pieces of a chunk looked for as they are, and how many
    _ANCHORS = 16
    _CANDIDATES = 6  # places where they occur, tried
    _NEAR = 64  # the window: twice the chunk's length past the previous chunk and this
    _FAR = 20_000  # and how much further pieces of a chunk are looked for
    _SLOW = 256  # the longest chunk aligned whole
    _END = 32

    def __init__(self, document: str, threshold: float = DEFAULT_FUZZY_THRESHOLD) -> None:
        self.document = document
        self.threshold = threshold
        self.cursor = 0  # where the next search starts
        self.reach = 0  # the end of the previous located chunk
        self._normalised: _Normalised | None = None
        self._compact: _Normalised | None = None
        # Places that score this far below the threshold are not worth matching the ends of
        # (that raises a score by less: it only fits the span to the chunk's losses and gains).
        self._cutoff = max(0.0, threshold - 10)

    def locate(self, text: str) -> Placed:
        """Where ``text`` is, after the previous chunk (``how == "unlocated"``: nowhere, or a
        text of whitespace only)."""
        if not text.strip():
            return Placed(-1, -1, "unlocated", 0.0)
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
            encoded = norm.text.encode("utf-32-le", "surrogatepass")
            keep = np.append(np.frombuffer(encoded, dtype=np.uint32) != ord(" "), True)
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
        if not wanted:
            return Placed(-1, -1, "unlocated", 0.0)
        comp = self._comp()
        begin, reach = (int(x) for x in np.searchsorted(comp.origin, [self.cursor, self.reach]))
        # The best match that ends beyond the previous chunk (the nearest on ties), else the
        # best that ends inside it; from the first way of finding places that gives any.
        found: list[Placed] = []
        best = 0.0
        for way in range(3):
            for start, end in self._spans(wanted, begin, reach, way):
                rough = self._placed(wanted, start, end)
                if rough.score < self._cutoff:  # its ends cannot make up for that much
                    best = max(best, rough.score)
                    continue
                placed = self._placed(wanted, *self._ends(wanted, start, end, begin))
                if placed.how == "fuzzy":
                    found.append(placed)
                best = max(best, placed.score)
            if found:
                return max(found, key=lambda p: (p.end > self.reach, p.score, -p.start))
        return Placed(-1, -1, "unlocated", best)

    def _spans(self, wanted: str, begin: int, reach: int, way: int) -> list[tuple[int, int]]:
        """Spans of the compact document about where the chunk may be, found the first
        ``way`` (0), the second or the third (see the class)."""
        if way < 2:
            size, count = (self._ANCHOR, self._ANCHORS) if way == 0 else (6, 2 * self._ANCHORS)
            return self._anchored(wanted, begin, reach, size, count)
        if len(wanted) > self._SLOW:
            return []
        from rapidfuzz import fuzz

        text = self._comp().text
        low, high = begin, min(len(text), max(begin, reach) + 2 * len(wanted) + self._NEAR)
        aligned = fuzz.partial_ratio_alignment(wanted, text[low:high], score_cutoff=self._cutoff)
        return [] if aligned is None else [(low + aligned.dest_start, low + aligned.dest_end)]

    def _anchored(
        self, wanted: str, begin: int, reach: int, size: int, count: int
    ) -> list[tuple[int, int]]:
        """Where the chunk may be: the first places after ``begin``, and after ``reach`` (the
        previous chunk's end), up to :attr:`_FAR` and twice the chunk's length further, where
        ``count`` pieces of it of ``size`` characters occur as they are, each place's span as
        its pieces say; the places most pieces agree on first, then the nearest."""
        text = self._comp().text
        limit = min(len(text), max(begin, reach) + 2 * len(wanted) + self._NEAR + self._FAR)
        size = min(size, len(wanted))
        count = max(1, min(count, len(wanted) // size))
        hits = set()  # (where the chunk starts as the piece says, the piece's offset)
        for k in range(count):
            offset = (len(wanted) - size) * k // max(1, count - 1)
            piece = wanted[offset : offset + size]
            for start in {begin, max(begin, reach)}:
                found = text.find(piece, start, limit)
                if found >= 0:
                    hits.add((found - offset, offset))
        # Pieces that agree on the start (up to what the chunk lost or gained) vote together.
        slack = len(wanted) // 4 + self._NEAR
        groups: list[list[tuple[int, int]]] = []
        for hit in sorted(hits):
            if groups and hit[0] - groups[-1][-1][0] <= slack:
                groups[-1].append(hit)
            else:
                groups.append([hit])
        groups.sort(key=lambda group: (-len(group), group[0][0]))
        # Each place's start as its pieces say (the median: a piece found at a wrong place
        # does not move it; the chunk's losses and gains move it by half at most).
        starts = [sorted(hit[0] for hit in group)[len(group) // 2] for group in groups]
        return [
            (max(begin, start), min(len(text), start + len(wanted)))
            for start in starts[: self._CANDIDATES]
        ]

    def _placed(self, wanted: str, start: int, end: int) -> Placed:
        """``text[start:end]`` of the compact document, fuzzy if it scores enough, else
        unlocated with its score."""
        from rapidfuzz import fuzz

        comp = self._comp()
        score = fuzz.ratio(wanted, comp.text[start:end]) if start < end else 0.0
        if score < self.threshold:
            return Placed(-1, -1, "unlocated", score)
        return Placed(*_back(comp, start, end), "fuzzy", score)

    def _ends(self, wanted: str, start: int, end: int, begin: int) -> tuple[int, int]:
        """A span about where the chunk is (a whole-chunk alignment, as long as the chunk and
        not as the text it came from; or where its pieces are) with its ends where the chunk's
        own ends match best: its first and last 32 characters, in a window around each end,
        where they occur as they are (the nearest), else matched with the fewest characters
        inserted and deleted (:func:`_best_end`). The span as given when that scores less."""
        from rapidfuzz import fuzz

        text = self._comp().text
        size = min(self._END, len(wanted))
        slack = max(2 * size, len(wanted) // 4)
        low, high = max(begin, start - slack), min(len(text), start + slack + size)
        new_start = _nearest(text, wanted[:size], low, high, start)
        if new_start < 0:
            new_start = high - _best_end(wanted[:size][::-1], text[low:high][::-1], high - start)
        low, high = max(begin, end - slack - size), min(len(text), end + slack)
        new_end = _nearest(text, wanted[-size:], low, high, end - size) + size
        if new_end < size:
            new_end = low + _best_end(wanted[-size:], text[low:high], end - low)
        if new_start < new_end and fuzz.ratio(wanted, text[new_start:new_end]) >= min(
            self.threshold, fuzz.ratio(wanted, text[start:end])
        ):
            return new_start, new_end
        return start, end


def _nearest(text: str, piece: str, low: int, high: int, near: int) -> int:
    """Where ``piece`` occurs in ``text[low:high]`` nearest to ``near`` (-1: nowhere)."""
    after = text.find(piece, max(low, near), high)
    before = text.rfind(piece, low, min(high, near + len(piece) - 1))
    if before < 0 or (after >= 0 and after - near < near - before):
        return after
    return before


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
