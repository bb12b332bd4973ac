"""The vectorised core of the span measures: every record of a batch at once, in numpy.

The second of the two definitions of each span measure (the readable one is
:mod:`ctxeval.metrics.span_reference`); the values are the reference's exactly, because every
length is an integer and each measure is one division of two of them.

How: the spans of a batch are flat arrays (record, document, start, end). One batch-wide
``lexsort`` orders them by (record, document, start); a running maximum of the ends (in a
coordinate that keeps each (record, document) apart) finds where a run of overlapping spans
starts, and ``maximum.reduceat`` gives each run's end: the union as disjoint intervals, with no
Python loop over intervals. The part of any interval covered by the retrieved union is then a
difference of a cumulative covered length, found with ``searchsorted``.

The cut-off is per record: a number of whole retrieved items kept and, optionally, a number of
characters of the next item (what a size budget with a "truncate" policy keeps). An integer
``k`` keeps ``min(k, n)`` items and no extra characters (:func:`span_counts_at`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.metrics.span_reference import RecordSpans, SpanConvention

__all__ = [
    "SPAN_CORE",
    "SpanBatch",
    "span_counts_at",
    "span_f1",
    "span_iou",
    "span_precision",
    "span_recall",
    "span_totals",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _ints(values: Any, count: int = -1) -> IntArray:
    return np.fromiter(values, dtype=np.int64, count=count)


@dataclass(frozen=True)
class SpanBatch:
    """The spans of ``B`` records as flat arrays.

    Retrieved spans: ``r_record``, ``r_rank`` (position in the record's ranked list),
    ``r_doc`` (a document code), ``r_start``, ``r_end``; ground-truth spans: ``g_record``,
    ``g_doc``, ``g_start``, ``g_end``; per record: ``n`` retrieved items and ``m`` ground-truth
    items (located or not), and ``missing_truth`` (length of the ground truth not located).
    In a token unit, ``token_starts`` holds the sorted positions ``base[doc] + i`` where a
    token starts (None: characters).
    """

    n: IntArray
    m: IntArray
    r_record: IntArray
    r_rank: IntArray
    r_doc: IntArray
    r_start: IntArray
    r_end: IntArray
    g_record: IntArray
    g_doc: IntArray
    g_start: IntArray
    g_end: IntArray
    missing_truth: IntArray
    token_starts: IntArray | None = None
    base: IntArray | None = None
    cache: dict[Any, IntArray] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.n)

    @classmethod
    def from_records(cls, records: Sequence[RecordSpans]) -> SpanBatch:
        """Stack per-record spans (the documents' token starts are taken from the records)."""
        codes: dict[str, int] = {}
        r = [
            (b, rank, codes.setdefault(s.doc, len(codes)), s.start, s.end)
            for b, rec in enumerate(records)
            for rank, s in enumerate(rec.retrieved)
            if s is not None
        ]
        g = [
            (b, codes.setdefault(s.doc, len(codes)), s.start, s.end)
            for b, rec in enumerate(records)
            for s in rec.truth
            if s is not None
        ]
        rc = np.array(r, dtype=np.int64).reshape(-1, 5).T
        gc = np.array(g, dtype=np.int64).reshape(-1, 4).T
        ends = np.zeros(len(codes), dtype=np.int64)
        np.maximum.at(ends, rc[2], rc[4])
        np.maximum.at(ends, gc[1], gc[3])
        starts, base = _token_table(records, codes, ends)
        return cls(
            n=_ints((len(rec.retrieved) for rec in records), len(records)),
            m=_ints((len(rec.truth) for rec in records), len(records)),
            r_record=rc[0],
            r_rank=rc[1],
            r_doc=rc[2],
            r_start=rc[3],
            r_end=rc[4],
            g_record=gc[0],
            g_doc=gc[1],
            g_start=gc[2],
            g_end=gc[3],
            missing_truth=_ints((rec.missing_truth for rec in records), len(records)),
            token_starts=starts,
            base=base,
        )

    def measure(self, doc: IntArray, start: IntArray, end: IntArray) -> IntArray:
        """The length of each interval ``[start, end)`` of ``doc`` in the unit."""
        if self.token_starts is None or self.base is None:
            return end - start
        offset = self.base[doc]
        found = np.searchsorted(self.token_starts, offset + end, side="left")
        return found - np.searchsorted(self.token_starts, offset + start, side="left")


def _token_table(
    records: Sequence[RecordSpans], codes: dict[str, int], ends: IntArray
) -> tuple[IntArray | None, IntArray | None]:
    """Every document's token starts in one sorted array, document ``d``'s shifted by
    ``base[d]``; each document gets room past its last token start and its last span end, so
    that no interval reaches into the next document's range."""
    starts = next((rec.token_starts for rec in records if rec.token_starts is not None), None)
    if starts is None:
        return None, None
    per_doc = [np.array(sorted(starts.get(doc, ())), dtype=np.int64) for doc in codes]
    widths = [
        max(int(found[-1]) if len(found) else 0, int(ends[code])) + 1
        for found, code in zip(per_doc, codes.values(), strict=True)
    ]
    base = np.concatenate([[0], np.cumsum(widths)])[:-1].astype(np.int64)
    table = [base[code] + found for found, code in zip(per_doc, codes.values(), strict=True)]
    return (np.concatenate(table) if table else np.zeros(0, dtype=np.int64)), base


@dataclass(frozen=True)
class _Intervals:
    record: IntArray
    doc: IntArray
    start: IntArray
    end: IntArray


def _take(iv: _Intervals, index: Any) -> _Intervals:
    return _Intervals(iv.record[index], iv.doc[index], iv.start[index], iv.end[index])


def _union(iv: _Intervals, docs: int) -> _Intervals:
    """The union of the intervals of each (record, document), as disjoint intervals ordered by
    (record, document, start)."""
    if len(iv.start) == 0:
        return iv
    ordered = _take(iv, np.lexsort((iv.start, iv.doc, iv.record)))
    stride = int(ordered.end.max()) + 1
    group = (ordered.record * docs + ordered.doc) * stride
    reach = np.maximum.accumulate(group + ordered.end)
    # A run starts where a span begins after every earlier span of its group has ended (a new
    # group always does: its coordinates are above every earlier group's).
    opens = np.ones(len(reach), dtype=bool)
    opens[1:] = group[1:] + ordered.start[1:] > reach[:-1]
    first = np.flatnonzero(opens)
    runs = _take(ordered, first)
    return _Intervals(runs.record, runs.doc, runs.start, np.maximum.reduceat(ordered.end, first))


def _covered(
    batch: SpanBatch, union: _Intervals, points: _Intervals, docs: int
) -> tuple[IntArray, IntArray]:
    """For each interval of ``points``, the length of its part covered by ``union``, as
    (covered length up to its end, covered length up to its start)."""
    lengths = batch.measure(union.doc, union.start, union.end)
    before = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    stride = int(max(union.end.max(initial=0), points.end.max(initial=0))) + 1
    group = (union.record * docs + union.doc) * stride
    keys = group + union.start

    def upto(position: IntArray) -> IntArray:
        where = (points.record * docs + points.doc) * stride + position
        idx = np.searchsorted(keys, where, side="right") - 1
        safe = np.maximum(idx, 0)
        inside = (idx >= 0) & (group[safe] == (points.record * docs + points.doc) * stride)
        stop = np.clip(position, union.start[safe], union.end[safe])
        partial = np.where(
            inside, batch.measure(points.doc, union.start[safe], stop), lengths[safe]
        )
        return np.where(idx >= 0, before[safe] + partial, 0)

    if len(union.start) == 0:
        zero = np.zeros(len(points.start), dtype=np.int64)
        return zero, zero
    return upto(points.end), upto(points.start)


def _per_record(records: IntArray, values: IntArray, count: int) -> IntArray:
    return np.bincount(records, weights=values, minlength=count).astype(np.int64)


def span_totals(
    batch: SpanBatch,
    kept: IntArray,
    extra: IntArray | None = None,
    convention: SpanConvention = "union",
) -> IntArray:
    """The :class:`~ctxeval.metrics.span_reference.SpanCounts` of every record, one row each
    (intersection, precision, recall and IoU denominators), when record ``b`` keeps
    ``kept[b]`` retrieved items and ``extra[b]`` characters of the next one."""
    count = len(batch)
    docs = int(max(batch.r_doc.max(initial=-1), batch.g_doc.max(initial=-1))) + 1
    rank_cut = kept[batch.r_record]
    whole = batch.r_rank < rank_cut
    end = batch.r_end
    if extra is not None:
        part = (batch.r_rank == rank_cut) & (extra[batch.r_record] > 0)
        end = np.where(part, np.minimum(end, batch.r_start + extra[batch.r_record]), end)
        whole = whole | part
    chunks = _Intervals(batch.r_record, batch.r_doc, batch.r_start, end)
    chunks = _take(chunks, whole)
    excerpts = _Intervals(batch.g_record, batch.g_doc, batch.g_start, batch.g_end)
    r = _union(chunks, docs)
    g = _union(excerpts, docs)
    in_end, in_start = _covered(batch, r, g, docs)
    intersection = _per_record(g.record, in_end - in_start, count)
    missing = batch.missing_truth
    r_len = _per_record(r.record, batch.measure(r.doc, r.start, r.end), count)
    if convention == "chroma":
        retrieved_sum = _per_record(
            chunks.record, batch.measure(chunks.doc, chunks.start, chunks.end), count
        )
        excerpt_len = batch.measure(excerpts.doc, excerpts.start, excerpts.end)
        covered_end, covered_start = _covered(batch, r, excerpts, docs)
        excerpt_sum = _per_record(excerpts.record, excerpt_len, count) + missing
        not_retrieved = (
            _per_record(excerpts.record, excerpt_len - (covered_end - covered_start), count)
            + missing
        )
        columns = [intersection, retrieved_sum, excerpt_sum, retrieved_sum + not_retrieved]
    else:
        g_len = _per_record(g.record, batch.measure(g.doc, g.start, g.end), count) + missing
        columns = [intersection, r_len, g_len, r_len + g_len - intersection]
    return np.stack(columns, axis=1).astype(np.int64)


def span_counts_at(
    batch: SpanBatch, k: int | None, convention: SpanConvention = "union"
) -> IntArray:
    """:func:`span_totals` at the cut-off ``k`` (``min(k, n)`` items; None: all), computed
    once per batch, cut-off and convention."""
    key = (k, convention)
    found = batch.cache.get(key)
    if found is None:
        kept = batch.n if k is None else np.minimum(batch.n, k)
        found = batch.cache[key] = span_totals(batch, kept, None, convention)
    return found


def _divide(numerator: IntArray, denominator: IntArray) -> FloatArray:
    num = numerator.astype(np.float64)
    den = denominator.astype(np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def span_recall(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    c = span_counts_at(batch, k, convention)
    return _divide(c[:, 0], c[:, 2])


def span_precision(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    c = span_counts_at(batch, k, convention)
    return _divide(c[:, 0], c[:, 1])


def span_iou(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    c = span_counts_at(batch, k, convention)
    return _divide(c[:, 0], c[:, 3])


def span_f1(batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union") -> FloatArray:
    p = span_precision(batch, k, convention=convention)
    r = span_recall(batch, k, convention=convention)
    total = p + r
    return np.divide(2 * p * r, total, out=np.zeros_like(p), where=total > 0)


SPAN_CORE: dict[str, Callable[..., FloatArray]] = {
    "span_precision": span_precision,
    "span_recall": span_recall,
    "span_iou": span_iou,
    "span_f1": span_f1,
}
"""The core function of each span measure (the registry pairs it with its reference)."""
