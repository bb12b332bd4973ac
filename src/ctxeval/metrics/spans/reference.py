"""The reference definition of the span measures: readable functions of one record's spans.

This is the first of the two places a span measure is defined; the other is the vectorised core
(:mod:`ctxeval.metrics.spans.core`), which every evaluation runs. ``tests/metrics/test_twin.py``
checks the two against each other exactly.

A record's text is a set of positions: R holds every position ``(doc, i)`` covered by a
retrieved span within the cut-off, G every position covered by a ground-truth span. Sets make
the definitions plain: overlapping chunks never count twice, and spans in different documents
never overlap. The length of a set of positions is its number of characters, or, in a token
unit, the number of tokens that *start* at one of its positions (tokens of the whole document,
so a length is additive: the length of a union of disjoint pieces is the sum of their lengths).
With a token counter (``unit="tokens"``: a callable ``str -> int`` or a tokenizer's name), the
length of a set is the sum of the counter over the text of each of its maximal runs of
consecutive positions (per document), which is not additive: every set (R, G, R ∩ G, R ∪ G,
each excerpt's part not retrieved) is counted as itself.

- ``span_recall`` = |R ∩ G| / |G|, ``span_precision`` = |R ∩ G| / |R|,
  ``span_iou`` = |R ∩ G| / |R ∪ G|, ``span_f1`` = their harmonic mean of precision and recall;
  0 when a denominator is 0.
- A ground-truth text that could not be located counts as missed: its own length (in the unit)
  is added to |G| and |R ∪ G|, never to |R ∩ G|. A retrieved text that could not be located
  adds nothing.
- ``convention="chroma"``: chroma's chunking_evaluation. The numerator is the same; the
  precision denominator is the plain sum of the retrieved spans' lengths (overlaps count twice,
  other documents count), the recall denominator the plain sum of the excerpts' lengths, the
  IoU denominator the retrieved sum plus, per excerpt, the length of its part not retrieved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Literal, NamedTuple

from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.reference import f1_score
from ctxeval.records.values import Span

__all__ = [
    "SpanConvention",
    "SpanCounts",
    "bounded",
    "span_counts",
    "span_f1",
    "span_iou",
    "span_precision",
    "span_recall",
    "truncate_spans",
]

SpanConvention = Literal["union", "chroma"]
Position = tuple[str, int]


class SpanCounts(NamedTuple):
    """The lengths behind the span measures of one record at one cut-off (summed over queries
    for micro averages)."""

    intersection: int  # |R ∩ G|
    precision_denominator: int  # |R| (chroma: the sum of the retrieved spans' lengths)
    recall_denominator: int  # |G| (chroma: the sum of the excerpts' lengths)
    iou_denominator: int  # |R ∪ G| (chroma: retrieved sum + excerpts' parts not retrieved)


def _positions(span: Span, end: int | None = None) -> set[Position]:
    stop = span.end if end is None else end
    return {(span.doc, i) for i in range(span.start, stop)}


def _runs(positions: Iterable[Position]) -> list[tuple[str, int, int]]:
    """The maximal runs ``(doc, start, end)`` of consecutive positions."""
    ordered = sorted(positions)
    runs: list[tuple[str, int, int]] = []
    for doc, i in ordered:
        if runs and runs[-1][0] == doc and runs[-1][2] == i:
            runs[-1] = (doc, runs[-1][1], i + 1)
        else:
            runs.append((doc, i, i + 1))
    return runs


def _length(spans: RecordSpans, positions: Iterable[Position]) -> int:
    if spans.counter is not None:
        texts = spans.documents or {}
        return sum(spans.counter(texts.get(d, "")[a:b]) for d, a, b in _runs(positions))
    starts = spans.token_starts
    if starts is None:
        return sum(1 for _ in positions)
    return sum(1 for doc, i in positions if i in starts.get(doc, ()))


def _kept(spans: RecordSpans, kept: int, extra: int) -> list[set[Position]]:
    """The positions of each retrieved span within the cut-off: the first ``kept`` whole, then
    the first ``extra`` characters of the next one."""
    found = [_positions(s) for s in spans.retrieved[:kept] if s is not None]
    following = spans.retrieved[kept] if kept < len(spans.retrieved) else None
    if extra > 0 and following is not None:
        found.append(_positions(following, min(following.end, following.start + extra)))
    return found


def truncate_spans(spans: RecordSpans, kept: int, extra: int) -> RecordSpans:
    """The spans of what a budget under ``"truncate"`` feeds: item ``kept`` (the one that
    crosses the budget, fed as ``text[:extra]``) becomes the first ``extra`` characters of its
    span (all of it when the span is shorter: docs/decisions.md); the items before it are
    whole, the ones after it are left for the cut-off (``kept + 1``) to drop."""
    if extra <= 0 or kept >= len(spans.retrieved):
        return spans
    crossing = spans.retrieved[kept]
    if crossing is None:
        return spans
    prefix = Span(crossing.doc, crossing.start, min(crossing.end, crossing.start + extra))
    retrieved = (*spans.retrieved[:kept], prefix, *spans.retrieved[kept + 1 :])
    return replace(spans, retrieved=retrieved)


def span_counts(
    spans: RecordSpans, kept: int, extra: int = 0, convention: SpanConvention = "union"
) -> SpanCounts:
    """The lengths behind the measures when ``kept`` retrieved items (and ``extra`` characters
    of the next one) are taken."""
    retrieved = _kept(spans, kept, extra)
    excerpts = [_positions(s) for s in spans.truth if s is not None]
    r: set[Position] = set().union(*retrieved)
    g: set[Position] = set().union(*excerpts)
    missing = spans.missing_truth
    intersection = _length(spans, r & g)
    if convention == "chroma":
        retrieved_sum = sum(_length(spans, chunk) for chunk in retrieved)
        excerpt_sum = sum(_length(spans, excerpt) for excerpt in excerpts) + missing
        not_retrieved = sum(_length(spans, excerpt - r) for excerpt in excerpts) + missing
        found = SpanCounts(intersection, retrieved_sum, excerpt_sum, retrieved_sum + not_retrieved)
    else:
        found = SpanCounts(
            intersection,
            _length(spans, r),
            _length(spans, g) + missing,
            _length(spans, r | g) + missing,
        )
    return found if spans.counter is None else bounded(found, convention)


def bounded(counts: SpanCounts, convention: SpanConvention = "union") -> SpanCounts:
    """Counts of a token counter, bounded as lengths of sets are. A counter counts a token cut
    by a boundary once in each piece, so the intersection's pieces could count more than R or G
    (a ratio above 1), and R ∪ G less than R: the intersection is capped at the precision and
    recall denominators, and the IoU denominator is at least the intersection (the union
    convention: at least |R| and |G| too)."""
    intersection = min(counts.intersection, counts.precision_denominator, counts.recall_denominator)
    least = [intersection]
    if convention == "union":
        least += [counts.precision_denominator, counts.recall_denominator]
    return SpanCounts(
        intersection,
        counts.precision_denominator,
        counts.recall_denominator,
        max(counts.iou_denominator, *least),
    )


def _at(spans: RecordSpans, k: int | None, convention: SpanConvention) -> SpanCounts:
    return span_counts(spans, spans.cut(k), 0, convention)


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def span_recall(
    spans: RecordSpans, k: int | None = None, *, convention: SpanConvention = "union"
) -> float:
    """|R ∩ G| / |G|: how much of the ground truth the top ``k`` retrieved spans cover."""
    c = _at(spans, k, convention)
    return _ratio(c.intersection, c.recall_denominator)


def span_precision(
    spans: RecordSpans, k: int | None = None, *, convention: SpanConvention = "union"
) -> float:
    """|R ∩ G| / |R|: how much of the retrieved text is ground truth."""
    c = _at(spans, k, convention)
    return _ratio(c.intersection, c.precision_denominator)


def span_iou(
    spans: RecordSpans, k: int | None = None, *, convention: SpanConvention = "union"
) -> float:
    """|R ∩ G| / |R ∪ G|."""
    c = _at(spans, k, convention)
    return _ratio(c.intersection, c.iou_denominator)


def span_f1(
    spans: RecordSpans, k: int | None = None, *, convention: SpanConvention = "union"
) -> float:
    """The harmonic mean of span precision and span recall."""
    c = _at(spans, k, convention)
    return f1_score(
        _ratio(c.intersection, c.precision_denominator),
        _ratio(c.intersection, c.recall_denominator),
    )
