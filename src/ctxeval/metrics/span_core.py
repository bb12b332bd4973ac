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

import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.errors import InvalidArgumentError
from ctxeval.metrics.span_reference import RecordSpans, SpanConvention
from ctxeval.validation import Span

__all__ = [
    "SPAN_CORE",
    "SpanBatch",
    "span_counts_at",
    "span_f1",
    "span_iou",
    "span_precision",
    "span_recall",
    "span_totals",
    "truncate_batch",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_SAFE = 2**62  # positions of a batch (base + offset) stay below this: no int64 overflow


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
    counter: Callable[[str], int] | None = None
    documents: tuple[str, ...] = ()  # with a counter: each document code's text
    counted: dict[tuple[int, int, int], int] = field(
        default_factory=dict, compare=False, repr=False
    )
    cache: dict[Any, IntArray] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.n)

    @classmethod
    def from_records(cls, records: Sequence[RecordSpans]) -> SpanBatch:
        """Stack per-record spans (the documents' token starts are taken from the records)."""
        retrieved = _flatten([rec.retrieved for rec in records])
        truth = _flatten([rec.truth for rec in records])
        names = [s.doc for s in retrieved[2]] + [s.doc for s in truth[2]]
        codes = {doc: code for code, doc in enumerate(dict.fromkeys(names))}
        r_doc, r_start, r_end = _fields(retrieved[2], codes)
        g_doc, g_start, g_end = _fields(truth[2], codes)
        ends = np.zeros(len(codes), dtype=np.int64)
        np.maximum.at(ends, r_doc, r_end)
        np.maximum.at(ends, g_doc, g_end)
        starts, base = _token_table(records, codes, ends)
        counted = next((rec for rec in records if rec.counter is not None), None)
        texts = {} if counted is None or counted.documents is None else counted.documents
        return cls(
            n=_ints((len(rec.retrieved) for rec in records), len(records)),
            m=_ints((len(rec.truth) for rec in records), len(records)),
            r_record=retrieved[0],
            r_rank=retrieved[1],
            r_doc=r_doc,
            r_start=r_start,
            r_end=r_end,
            g_record=truth[0],
            g_doc=g_doc,
            g_start=g_start,
            g_end=g_end,
            missing_truth=_ints((rec.missing_truth for rec in records), len(records)),
            token_starts=starts,
            base=base,
            counter=None if counted is None else counted.counter,
            documents=tuple(texts.get(doc, "") for doc in codes) if counted else (),
        )

    @cached_property
    def bases(self) -> tuple[IntArray, IntArray]:
        """``group * stride`` of each retrieved and each ground-truth span, where ``group``
        numbers the (record, document) pairs in order and ``stride`` is past every offset, so
        that ``base + offset`` orders every position of the batch by record, document, offset
        and keeps pairs apart."""
        docs = int(max(self.r_doc.max(initial=-1), self.g_doc.max(initial=-1))) + 1
        stride = int(max(self.r_end.max(initial=0), self.g_end.max(initial=0))) + 1
        r_group = self.r_record * docs + self.r_doc
        g_group = self.g_record * docs + self.g_doc
        if (len(self) * docs + 1) * stride >= _SAFE:
            # Too many (record, document) pairs to number sparsely: number the ones present.
            groups = np.unique(np.concatenate([r_group, g_group]))
            r_group = np.searchsorted(groups, r_group).astype(np.int64)
            g_group = np.searchsorted(groups, g_group).astype(np.int64)
            if (len(groups) + 1) * stride >= _SAFE:
                raise InvalidArgumentError(
                    f"span offsets up to {stride - 1} in {len(groups)} (record, document) pairs "
                    "do not fit 64-bit arithmetic; evaluate with a smaller batch_size"
                )
        return r_group * stride, g_group * stride

    @cached_property
    def retrieved(self) -> tuple[_Intervals, IntArray]:
        """The retrieved spans ordered by (record, document, start), and their ranks: any
        cut-off keeps a subset, still in order."""
        spans = _Intervals(self.r_record, self.r_doc, self.r_start, self.r_end, self.bases[0])
        order = np.lexsort((spans.start, spans.base))
        return _take(spans, order), self.r_rank[order]

    @cached_property
    def truth(self) -> _Intervals:
        """The ground-truth spans ordered by (record, document, start)."""
        spans = _Intervals(self.g_record, self.g_doc, self.g_start, self.g_end, self.bases[1])
        return _take(spans, np.lexsort((spans.start, spans.base)))

    @cached_property
    def truth_union(self) -> _Intervals:
        return _union(self.truth)

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
    base: IntArray  # (record * documents + doc) * stride: keeps each (record, document) apart


def _take(iv: _Intervals, index: Any) -> _Intervals:
    return _Intervals(
        iv.record[index], iv.doc[index], iv.start[index], iv.end[index], iv.base[index]
    )


def _flatten(
    lists: Sequence[tuple[Span | None, ...]],
) -> tuple[IntArray, IntArray, list[Span]]:
    """(record, rank, span) of every span that is not None, in record order."""
    lengths = _ints(map(len, lists), len(lists))
    flat = list(itertools.chain.from_iterable(lists))
    known = np.fromiter((s is not None for s in flat), dtype=bool, count=len(flat))
    record = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    rank = np.arange(len(flat), dtype=np.int64) - offsets
    spans: list[Span] = list(itertools.compress(flat, known.tolist()))  # type: ignore[arg-type]
    return record[known], rank[known], spans


def _fields(spans: list[Span], codes: dict[str, int]) -> tuple[IntArray, IntArray, IntArray]:
    count = len(spans)
    doc = _ints(map(codes.__getitem__, map(_DOC, spans)), count)
    return doc, _ints(map(_START, spans), count), _ints(map(_END, spans), count)


_DOC = operator.attrgetter("doc")
_START = operator.attrgetter("start")
_END = operator.attrgetter("end")


def _union(iv: _Intervals) -> _Intervals:
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
    runs = _take(iv, first)
    return _Intervals(
        runs.record, runs.doc, runs.start, np.maximum.reduceat(iv.end, first), runs.base
    )


def _covered(batch: SpanBatch, union: _Intervals, points: _Intervals) -> tuple[IntArray, IntArray]:
    """For each interval of ``points``, the length of ``union`` before its end and before its
    start (their difference: the part of the interval that ``union`` covers)."""
    if len(union.start) == 0:
        zero = np.zeros(len(points.start), dtype=np.int64)
        return zero, zero
    lengths = batch.measure(union.doc, union.start, union.end)
    before = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    keys = union.base + union.start

    def upto(position: IntArray) -> IntArray:
        idx = np.searchsorted(keys, points.base + position, side="right") - 1
        safe = np.maximum(idx, 0)
        inside = union.base[safe] == points.base
        stop = np.clip(position, union.start[safe], union.end[safe])
        partial = np.where(
            inside, batch.measure(points.doc, union.start[safe], stop), lengths[safe]
        )
        return np.where(idx >= 0, before[safe] + partial, 0)

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
    ordered, rank = batch.retrieved
    rank_cut = kept[ordered.record]
    keep = rank < rank_cut
    end = ordered.end
    if extra is not None:
        part = (rank == rank_cut) & (extra[ordered.record] > 0)
        end = np.where(part, np.minimum(end, ordered.start + extra[ordered.record]), end)
        keep = keep | part
    chunks = _take(_Intervals(ordered.record, ordered.doc, ordered.start, end, ordered.base), keep)
    if batch.counter is not None:
        return _counted_totals(batch, chunks, convention)
    excerpts = batch.truth
    r = _union(chunks)
    g = batch.truth_union
    in_end, in_start = _covered(batch, r, g)
    intersection = _per_record(g.record, in_end - in_start, count)
    missing = batch.missing_truth
    r_len = _per_record(r.record, batch.measure(r.doc, r.start, r.end), count)
    if convention == "chroma":
        retrieved_sum = _per_record(
            chunks.record, batch.measure(chunks.doc, chunks.start, chunks.end), count
        )
        excerpt_len = batch.measure(excerpts.doc, excerpts.start, excerpts.end)
        covered_end, covered_start = _covered(batch, r, excerpts)
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


def truncate_batch(batch: SpanBatch, kept: IntArray, extra: IntArray) -> SpanBatch:
    """The spans of what a budget under ``"truncate"`` feeds, record ``b`` keeping ``kept[b]``
    whole items and ``extra[b]`` characters of the next (reference:
    :func:`~ctxeval.metrics.span_reference.truncate_spans`): that item's span becomes its first
    ``extra[b]`` characters; the cut-off ``kept + 1`` drops the items after it."""
    crossing = (batch.r_rank == kept[batch.r_record]) & (extra[batch.r_record] > 0)
    if not crossing.any():
        return batch
    cut = np.minimum(batch.r_end, batch.r_start + extra[batch.r_record])
    return replace(batch, r_end=np.where(crossing, cut, batch.r_end), cache={})


# -- a token counter: every set measured as itself, over its maximal runs --------------------------


def _solid(iv: _Intervals) -> _Intervals:
    """Without empty intervals (they hold no position)."""
    return _take(iv, iv.end > iv.start)


def _overlapping(runs: _Intervals, iv: _Intervals) -> tuple[IntArray, IntArray]:
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


def _intersection(a: _Intervals, b: _Intervals) -> _Intervals:
    """The maximal runs of ``a ∩ b`` (both disjoint and ordered, without empty runs: the
    pieces are then disjoint and never touch)."""
    own, other = _pairs(*_overlapping(b, a))
    start = np.maximum(a.start[own], b.start[other])
    end = np.minimum(a.end[own], b.end[other])
    return _Intervals(a.record[own], a.doc[own], start, end, a.base[own])


def _outside(iv: _Intervals, runs: _Intervals) -> _Intervals:
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
    return _solid(_Intervals(iv.record[owner], iv.doc[owner], start, end, iv.base[owner]))


def _counted(batch: SpanBatch, iv: _Intervals) -> IntArray:
    """The counter over the text of each interval, each distinct (document, start, end) once."""
    counter = batch.counter
    assert counter is not None
    texts = batch.documents
    known = batch.counted
    out = np.empty(len(iv.start), dtype=np.int64)
    for i, key in enumerate(zip(iv.doc.tolist(), iv.start.tolist(), iv.end.tolist(), strict=True)):
        found = known.get(key)
        if found is None:
            doc, start, end = key
            found = known[key] = counter(texts[doc][start:end])
        out[i] = found
    return out


def _counted_totals(batch: SpanBatch, chunks: _Intervals, convention: SpanConvention) -> IntArray:
    count = len(batch)

    def size(iv: _Intervals) -> IntArray:
        return _per_record(iv.record, _counted(batch, iv), count)

    r = _solid(_union(chunks))
    g = _solid(batch.truth_union)
    both = _intersection(g, r)
    intersection = size(both)
    missing = batch.missing_truth
    if convention == "chroma":
        excerpts = _solid(batch.truth)
        retrieved_sum = size(_solid(chunks))
        not_retrieved = size(_outside(excerpts, r)) + missing
        excerpt_sum = size(excerpts) + missing
        columns = [intersection, retrieved_sum, excerpt_sum, retrieved_sum + not_retrieved]
    else:
        merged = _concat(r, g)
        order = np.lexsort((merged.start, merged.base))
        either = _union(_take(merged, order))
        r_len, g_len = size(r), size(g) + missing
        columns = [intersection, r_len, g_len, size(either) + missing]
    # bounded as lengths of sets are (span_reference.bounded)
    columns[0] = np.minimum(np.minimum(columns[0], columns[1]), columns[2])
    columns[3] = np.maximum(columns[3], columns[0])
    if convention == "union":
        columns[3] = np.maximum(columns[3], np.maximum(columns[1], columns[2]))
    return np.stack(columns, axis=1).astype(np.int64)


def _concat(a: _Intervals, b: _Intervals) -> _Intervals:
    return _Intervals(
        *(np.concatenate([x, y]) for x, y in zip(_fields_of(a), _fields_of(b), strict=True))
    )


def _fields_of(iv: _Intervals) -> tuple[IntArray, ...]:
    return iv.record, iv.doc, iv.start, iv.end, iv.base


def span_counts_at(
    batch: SpanBatch, k: int | IntArray | None, convention: SpanConvention = "union"
) -> IntArray:
    """:func:`span_totals` at the cut-off ``k`` (``min(k, n)`` items; None: all; one count per
    record at a budget), computed once per batch, cut-off and convention."""
    key: tuple[Any, str] = (k.tobytes() if isinstance(k, np.ndarray) else k, convention)
    found = batch.cache.get(key)
    if found is None:
        kept = batch.n if k is None else np.minimum(batch.n, k).astype(np.int64)
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
