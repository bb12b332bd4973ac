"""Span lengths with a token counter (``unit="tokens"``): every set measured as itself.

A counter of strings (``lambda s: len(enc.encode(s))``) cannot say where its tokens start, so
the length of a set of positions is the sum of the counter over the text of each of its
maximal runs (:mod:`ctxeval.metrics.spans.reference` defines it; docs/decisions.md says why).
Here the sets of a whole batch are built as disjoint runs with numpy (unions, intersections,
each excerpt's part outside the retrieved union), and the counter is called once per distinct
run text. :class:`Intervals` and :func:`union` also serve :mod:`ctxeval.metrics.spans.core`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxeval.foundation.arrays import IntArray
from ctxeval.metrics.spans.reference import SpanConvention

__all__ = ["Intervals", "RunTexts", "counted_totals", "take", "union"]


@dataclass(frozen=True)
class Intervals:
    """Intervals ``[start, end)`` of documents, per record; ``base`` keeps each (record,
    document) pair apart in one coordinate, ``base + offset``."""

    record: IntArray
    doc: IntArray
    start: IntArray
    end: IntArray
    base: IntArray


@dataclass(frozen=True)
class RunTexts:
    """A token counter and the texts of the documents it counts in (by document code), with
    the counts found so far by (document, start, end)."""

    counter: Callable[[str], int]
    documents: tuple[str, ...]
    known: dict[tuple[int, int, int], int] = field(default_factory=dict, compare=False)


def take(iv: Intervals, index: Any) -> Intervals:
    return Intervals(
        iv.record[index], iv.doc[index], iv.start[index], iv.end[index], iv.base[index]
    )


def union(iv: Intervals) -> Intervals:
    """The union of the intervals of each (record, document), as disjoint intervals, from
    intervals ordered by (record, document, start)."""
    if len(iv.start) == 0:
        return iv
    reach = np.maximum.accumulate(iv.base + iv.end)
    # A run starts where a span begins after every earlier span of its group has ended (a new
    # group always does: its coordinates are above every earlier group's).
    opens = np.ones(len(reach), dtype=bool)
    opens[1:] = iv.base[1:] + iv.start[1:] > reach[:-1]
    first = np.flatnonzero(opens)
    runs = take(iv, first)
    return Intervals(
        runs.record, runs.doc, runs.start, np.maximum.reduceat(iv.end, first), runs.base
    )


def _per_record(records: IntArray, values: IntArray, count: int) -> IntArray:
    return np.bincount(records, weights=values, minlength=count).astype(np.int64)


def _solid(iv: Intervals) -> Intervals:
    """Without empty intervals (they hold no position)."""
    return take(iv, iv.end > iv.start)


def _overlapping(runs: Intervals, iv: Intervals) -> tuple[IntArray, IntArray]:
    """For each interval of ``iv``, the first and past-the-last run of ``runs`` (disjoint,
    ordered) that overlap it."""
    first = np.searchsorted(runs.base + runs.end, iv.base + iv.start, side="right")
    last = np.searchsorted(runs.base + runs.start, iv.base + iv.end, side="left")
    return first, np.maximum(last, first)


def _pairs(first: IntArray, last: IntArray) -> tuple[IntArray, IntArray]:
    """Every (interval, run) pair with run in ``[first[i], last[i])``, as two index arrays."""
    counts = last - first
    owner = np.repeat(np.arange(len(first), dtype=np.int64), counts)
    offset = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )
    return owner, first[owner] + offset


def _intersection(a: Intervals, b: Intervals) -> Intervals:
    """The maximal runs of ``a ∩ b`` (both disjoint and ordered, without empty runs: the
    pieces are then disjoint and never touch)."""
    own, other = _pairs(*_overlapping(b, a))
    start = np.maximum(a.start[own], b.start[other])
    end = np.minimum(a.end[own], b.end[other])
    return Intervals(a.record[own], a.doc[own], start, end, a.base[own])


def _outside(iv: Intervals, runs: Intervals) -> Intervals:
    """The maximal runs of each interval of ``iv`` outside ``runs`` (disjoint, ordered,
    without empty runs), interval by interval (pieces of different intervals may overlap)."""
    first, last = _overlapping(runs, iv)
    within = last - first  # an interval with j runs inside has j + 1 gaps (some empty)
    owner = np.repeat(np.arange(len(first), dtype=np.int64), within + 1)
    gap = np.arange(len(owner), dtype=np.int64) - np.repeat(
        np.cumsum(within + 1) - within - 1, within + 1
    )
    run = first[owner] + gap  # the run after the gap
    top = max(len(runs.start) - 1, 0)
    after_run = runs.end[np.clip(run - 1, 0, top)] if len(runs.start) else run
    before_run = runs.start[np.clip(run, 0, top)] if len(runs.start) else run
    start = np.where(gap == 0, iv.start[owner], after_run)
    end = np.where(gap == within[owner], iv.end[owner], before_run)
    start = np.maximum(start, iv.start[owner])
    end = np.minimum(end, iv.end[owner])
    return _solid(Intervals(iv.record[owner], iv.doc[owner], start, end, iv.base[owner]))


def _counted(runs: RunTexts, iv: Intervals) -> IntArray:
    """The counter over the text of each interval, each distinct (document, start, end) once."""
    counter, texts, known = runs.counter, runs.documents, runs.known
    out = np.empty(len(iv.start), dtype=np.int64)
    for i, key in enumerate(zip(iv.doc.tolist(), iv.start.tolist(), iv.end.tolist(), strict=True)):
        found = known.get(key)
        if found is None:
            doc, start, end = key
            found = known[key] = counter(texts[doc][start:end])
        out[i] = found
    return out


def counted_totals(
    runs: RunTexts,
    chunks: Intervals,
    truth: Intervals,
    missing: IntArray,
    convention: SpanConvention,
) -> IntArray:
    """The span counts of every record (as ``span_core.span_totals``) when the retrieved
    spans kept are ``chunks`` and the ground truth ``truth`` (both ordered by (record,
    document, start)), every set measured by ``runs``' counter over its maximal runs."""
    count = len(missing)

    def size(iv: Intervals) -> IntArray:
        return _per_record(iv.record, _counted(runs, iv), count)

    r = _solid(union(chunks))
    g = _solid(union(truth))
    both = _intersection(g, r)
    intersection = size(both)
    if convention == "chroma":
        excerpts = _solid(truth)
        retrieved_sum = size(_solid(chunks))
        not_retrieved = size(_outside(excerpts, r)) + missing
        excerpt_sum = size(excerpts) + missing
        columns = [intersection, retrieved_sum, excerpt_sum, retrieved_sum + not_retrieved]
    else:
        merged = Intervals(
            *map(np.concatenate, zip(vars(r).values(), vars(g).values(), strict=True))
        )
        order = np.argsort(merged.base + merged.start, kind="stable")
        either = union(take(merged, order))
        r_len, g_len = size(r), size(g) + missing
        columns = [intersection, r_len, g_len, size(either) + missing]
    # bounded as lengths of sets are (span_reference.bounded)
    columns[0] = np.minimum(np.minimum(columns[0], columns[1]), columns[2])
    columns[3] = np.maximum(columns[3], columns[0])
    if convention == "union":
        columns[3] = np.maximum(columns[3], np.maximum(columns[1], columns[2]))
    return np.stack(columns, axis=1).astype(np.int64)
