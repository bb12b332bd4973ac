"""Size caps for the unit chunkers: ``sentences(n=3, max_words=100)``,
``sentences(n=3, max_tokens=128, tokenizer='cl100k_base')`` and ``paragraphs(max_words=100,
split=True)``.

A unit (a sentence, a paragraph) longer than the cap is cut at word boundaries into pieces that
fit (as many words as fit, piece after piece); a single word longer than the cap is a piece of
its own (words are never cut). Units are then grouped (:func:`capped_windows`) so that no group
is over the cap. Every piece and group is a span that begins and ends on a word, so a chunk's
text is still ``document[start:end]``.

A :class:`Measure` says how big a span is: words (whitespace-separated, counted by position in
the document, so a span costs two bisections) or tokens (a counter called on the span's text;
token counts are not additive, so a group is counted whole).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence

from ctxeval.chunking.tokens import ROUGE_TOKEN

__all__ = ["Measure", "capped_windows", "fit_units", "token_measure", "word_measure"]

_WORD = re.compile(r"\S+")

Span = tuple[int, int]


class Measure:
    """The size of a span of one document, in the cap's unit, and the document's words (the
    boundaries a long unit is cut at)."""

    def __init__(self, text: str, size: Callable[[int, int], int]) -> None:
        self.words: list[Span] = [m.span() for m in _WORD.finditer(text)]
        self.starts = [start for start, _ in self.words]
        self.size = size

    def words_in(self, start: int, end: int) -> tuple[int, int]:
        """The index range of the words that start inside ``[start, end)``."""
        return bisect.bisect_left(self.starts, start), bisect.bisect_left(self.starts, end)


def word_measure(text: str) -> Measure:
    """Sizes in whitespace-separated words."""
    measure = Measure(text, lambda s, e: 0)
    measure.size = lambda start, end: _span_words(measure, start, end)
    return measure


def _span_words(measure: Measure, start: int, end: int) -> int:
    first, stop = measure.words_in(start, end)
    return stop - first


def token_measure(text: str, count: Callable[[str], int] | None) -> Measure:
    """Sizes in tokens of ``count`` (an LLM tokenizer's counter), or ROUGE tokens (runs of
    ASCII letters and digits) when it is None, as ``fixed(tokens=N)`` counts them."""
    if count is None:
        return Measure(text, lambda start, end: len(ROUGE_TOKEN.findall(text, start, end)))
    counter = count
    return Measure(text, lambda start, end: counter(text[start:end]))


def fit_units(units: Sequence[Span], measure: Measure, cap: int) -> list[Span]:
    """``units`` with each one over ``cap`` replaced by pieces that fit, in order."""
    out: list[Span] = []
    for start, end in units:
        if measure.size(start, end) <= cap:
            out.append((start, end))
        else:
            out.extend(_pieces(start, end, measure, cap))
    return out


def _pieces(start: int, end: int, measure: Measure, cap: int) -> Iterator[Span]:
    """``[start, end)`` cut at word boundaries: each piece the most words that fit (found by
    bisection, so a long unit costs a few counts a piece), a word longer than ``cap`` alone."""
    first, stop = measure.words_in(start, end)
    words = measure.words
    while first < stop:
        low, high = first + 1, stop  # the piece is words[first:last]; low always fits
        while low < high:
            middle = (low + high + 1) // 2
            if measure.size(words[first][0], words[middle - 1][1]) <= cap:
                low = middle
            else:
                high = middle - 1
        yield words[first][0], words[low - 1][1]
        first = low


def capped_windows(
    units: Sequence[Span], n: int, overlap: int, fits: Callable[[int, int], bool] | None
) -> list[Span]:
    """Groups of up to ``n`` consecutive units, each starting ``overlap`` units before the end
    of the one before; with ``fits``, a group also stops before the unit that would make it not
    fit (a group is at least one unit), and a group that could hold nothing but the overlap
    starts after the previous one instead (no chunk lies inside the one before). Without
    ``fits`` these are exactly the uncapped windows; the last group ends at the last unit."""
    out: list[Span] = []
    count = len(units)
    start = previous = 0
    while start < count:
        end = min(start + n, count)
        if fits is not None:
            taken = start + 1
            while taken < end and fits(units[start][0], units[taken][1]):
                taken += 1
            end = taken
        if end <= previous:  # only the overlap fits: begin after the previous group
            start = previous
            continue
        out.append((units[start][0], units[end - 1][1]))
        if end == count:
            break
        previous, start = end, max(start + 1, end - overlap)
    return out
