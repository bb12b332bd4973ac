"""The vectorised core of the span measures: every record of a batch at once, in numpy.

The second of the two definitions of each span measure (the readable one is
:mod:`ctxeval.metrics.spans.reference`); the values are the reference's exactly, because every
length is an integer and each measure is one division of two of them.

How: the spans of a batch are flat integer arrays in one coordinate, ``base + offset``, where
``base`` keeps each (record, document) pair apart. One stable ``argsort`` per batch orders them
by (record, document, start); a cut-off keeps a subset of them, still in order. With ``reach``
the running maximum of the kept spans' ends, span ``i`` adds the part between
``max(lo[i], reach[i - 1])`` and ``reach[i]`` to the union, and the cumulative sum ``U`` of
those parts is the length of the union of the first spans. The union's length below any point
``p`` is then ``U[i] - (reach[i] - p)⁺`` for the last kept span ``i`` starting at or before
``p``: the last span of all found once per batch with ``searchsorted``, then counted among the
kept ones. Per-record sums are differences of running sums at the records' ends.
Token units measure a length as the number of token starts below each end (``searchsorted``
in the documents' token starts); a token counter measures each maximal run's text.

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

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.spans import compiled
from ctxeval.metrics.spans.counted import Intervals, RunTexts, counted_totals, take
from ctxeval.metrics.spans.reference import SpanConvention
from ctxeval.records.values import Span

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
    runs: RunTexts | None = None  # a token counter's (unit='tokens'); None: offsets
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

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
            runs=None
            if counted is None or counted.counter is None
            else RunTexts(counted.counter, tuple(texts.get(doc, "") for doc in codes)),
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
    def retrieved(self) -> tuple[Intervals, IntArray]:
        """The retrieved spans ordered by (record, document, start), and their ranks: any
        cut-off keeps a subset, still in order."""
        spans = Intervals(self.r_record, self.r_doc, self.r_start, self.r_end, self.bases[0])
        order = self.positions[0]
        return take(spans, order), self.r_rank[order]

    @cached_property
    def truth(self) -> Intervals:
        """The ground-truth spans ordered by (record, document, start)."""
        spans = Intervals(self.g_record, self.g_doc, self.g_start, self.g_end, self.bases[1])
        return take(spans, self.positions[1])

    @cached_property
    def positions(self) -> tuple[IntArray, IntArray]:
        """The order of the retrieved and of the ground-truth spans by ``base + start`` (one
        integer key: a stable argsort exploits the records' order, a lexsort does not)."""
        return (
            np.argsort(self.bases[0] + self.r_start, kind="stable"),
            np.argsort(self.bases[1] + self.g_start, kind="stable"),
        )

    @cached_property
    def flat(self) -> _Flat:
        """The spans in batch coordinates, ordered, with what every cut-off shares."""
        r_order, g_order = self.positions
        r_base, g_base = self.bases[0][r_order], self.bases[1][g_order]
        r_lo, r_hi = r_base + self.r_start[r_order], r_base + self.r_end[r_order]
        r_record = self.r_record[r_order]
        g_lo, g_hi = g_base + self.g_start[g_order], g_base + self.g_end[g_order]
        g_record = self.g_record[g_order]
        r_shift = g_shift = None
        if self.base is not None:  # token units: a document's offset is base[doc] + offset
            r_shift = self.base[self.r_doc[r_order]] - r_base
            g_shift = self.base[self.g_doc[g_order]] - g_base
        first, last = _runs_of(g_lo, g_hi)
        t_lo, t_hi = g_lo[first], np.maximum.accumulate(g_hi)[last] if len(g_hi) else g_hi
        t_shift = None if g_shift is None else np.repeat(g_shift[first], 2)
        t_bounds = np.stack([t_lo, t_hi], axis=1).ravel()
        t_ends = _ends(g_record[first], len(self))
        g_ends = _ends(g_record, len(self))  # (the chroma convention's, among overlaps)
        inside = self.units(t_bounds, t_shift)
        return _Flat(
            r_lo=r_lo,
            r_hi=r_hi,
            r_rank=self.r_rank[r_order],
            r_record=r_record,
            r_shift=r_shift,
            r_ends=_ends(r_record, len(self)),
            g_lo=g_lo,
            g_hi=g_hi,
            g_shift=g_shift,
            g_record=g_record,
            g_sum=_sums(self.units(g_hi, g_shift) - self.units(g_lo, g_shift), g_ends),
            t_bounds=t_bounds,
            t_shift=t_shift,
            t_at=np.searchsorted(r_lo, t_bounds, side="right"),
            t_ends=t_ends,
            t_sum=_sums(inside[1::2] - inside[::2], t_ends),
        )

    @cached_property
    def overlaps(self) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
        """For the chroma convention's per-excerpt lengths: the records whose excerpts overlap
        one another (a mask as 0/1), the ground-truth spans of those records, where each of
        those records' spans end among them, and for each such span's start and end, 1 + the
        last retrieved span starting at or before it. Other records' excerpts are disjoint, so
        their retrieved parts add up to |R ∩ G|."""
        f = self.flat
        inside = np.zeros(len(f.g_lo), dtype=bool)
        if len(f.g_lo):
            inside[1:] = f.g_lo[1:] < np.maximum.accumulate(f.g_hi)[:-1]
        mask = np.zeros(len(self), dtype=np.int64)
        mask[f.g_record[inside]] = 1
        index = np.flatnonzero(mask[f.g_record])
        return (
            mask,
            index,
            _ends(f.g_record[index], len(self)),
            np.searchsorted(f.r_lo, f.g_lo[index], side="right"),
            np.searchsorted(f.r_lo, f.g_hi[index], side="right"),
        )

    def units(self, position: IntArray, shift: IntArray | None) -> IntArray:
        """Each position (batch coordinates) as the length of its document before it, in the
        unit: itself in characters; the number of token starts below it in a token unit
        (``shift``: from batch coordinates to the token table's)."""
        if self.token_starts is None or shift is None:
            return position
        return np.searchsorted(self.token_starts, position + shift, side="left")


def _ends(ordered: IntArray, count: int) -> IntArray:
    """Where each record's items end in an array ordered by record (from 0, ``count + 1``)."""
    return np.concatenate([[0], np.cumsum(np.bincount(ordered, minlength=count))]).astype(np.int64)


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
class _Flat:
    """A batch's spans as integers in batch coordinates, ordered: retrieved spans (``r_*``),
    ground-truth spans (``g_*``) and the ground-truth union's runs (``t_bounds``: start, end,
    start, end, ...). ``*_shift``: to the token table (token units; else None); ``*_ends``:
    where each record's items end; ``t_at``: for each bound, 1 + the index of the last
    retrieved span starting at or before it; ``*_sum``: lengths per record, in the unit."""

    r_lo: IntArray
    r_hi: IntArray
    r_rank: IntArray
    r_record: IntArray
    r_shift: IntArray | None
    r_ends: IntArray
    g_lo: IntArray
    g_hi: IntArray
    g_shift: IntArray | None
    g_record: IntArray
    g_sum: IntArray
    t_bounds: IntArray
    t_shift: IntArray | None
    t_at: IntArray
    t_ends: IntArray
    t_sum: IntArray


def _sums(values: IntArray, ends: IntArray) -> IntArray:
    """Per record, the sum of its values (ordered by record; ``ends`` from :func:`_ends`): a
    difference of a running sum, exact in integers."""
    running = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=running[1:])
    return np.diff(running[ends])


def _runs_of(lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray]:
    """The first and last interval of each run of overlapping or touching intervals, from
    intervals ordered by ``lo`` (the run ends at the running maximum of ``hi`` at its last)."""
    if len(lo) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    reach = np.maximum.accumulate(hi)
    opens = np.empty(len(lo), dtype=bool)
    opens[0] = True
    np.greater(lo[1:], reach[:-1], out=opens[1:])
    first = np.flatnonzero(opens)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = len(lo) - 1
    return first, last


def _totals(
    batch: SpanBatch, kept: IntArray | int, extra: IntArray | None, convention: SpanConvention
) -> IntArray:
    """:func:`span_totals` in characters or token starts (see the module's docstring);
    ``kept`` an integer: every record keeps its first ``kept`` items."""
    f = batch.flat
    lo, hi, shift, ends, t_at = f.r_lo, f.r_hi, f.r_shift, f.r_ends, f.t_at
    cut = kept if isinstance(kept, int) else kept[f.r_record]
    keep = f.r_rank < cut
    if extra is not None:
        more = extra[f.r_record]
        part = (f.r_rank == cut) & (more > 0)
        hi = np.where(part, np.minimum(hi, lo + more), hi)
        keep |= part
    ats: tuple[IntArray, ...] = batch.overlaps[3:] if convention == "chroma" else ()
    if not keep.all():  # the items kept, still in order; indexes counted among them
        index = np.flatnonzero(keep)
        lo, hi, shift = lo[index], hi[index], None if shift is None else shift[index]
        among = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=among[1:])
        ends, t_at, ats = among[ends], among[t_at], tuple(among[at] for at in ats)
    reach = np.empty(len(lo) + 1, dtype=np.int64)  # [0]: before every span, reaching nowhere
    reach[0] = -1
    np.maximum.accumulate(hi, out=reach[1:])
    union = np.zeros(len(lo) + 1, dtype=np.int64)
    new = np.maximum(lo, reach[:-1])  # where span i's part of the union starts
    np.cumsum(batch.units(reach[1:], shift) - batch.units(new, shift), out=union[1:])

    def covered(points: IntArray, shift: IntArray | None, at: IntArray) -> IntArray:
        """The length of R below each point (a union's part past a point is in its group)."""
        beyond = np.maximum(reach[at], points)
        below: IntArray = union[at] - (batch.units(beyond, shift) - batch.units(points, shift))
        return below

    r_len = np.diff(union[ends])
    inside = covered(f.t_bounds, f.t_shift, t_at)
    intersection = _sums(inside[1::2] - inside[::2], f.t_ends)
    missing = batch.missing_truth
    if convention == "chroma":
        retrieved_sum = _sums(batch.units(hi, shift) - batch.units(lo, shift), ends)
        mask, index, index_ends = batch.overlaps[:3]
        retrieved_parts = intersection  # each excerpt's retrieved part, summed per record
        if len(index):
            g_shift = None if f.g_shift is None else f.g_shift[index]
            parts = covered(f.g_hi[index], g_shift, ats[1]) - covered(
                f.g_lo[index], g_shift, ats[0]
            )
            retrieved_parts = np.where(mask > 0, _sums(parts, index_ends), intersection)
        not_retrieved = f.g_sum - retrieved_parts + missing
        columns = [intersection, retrieved_sum, f.g_sum + missing, retrieved_sum + not_retrieved]
    else:
        g_len = f.t_sum + missing
        columns = [intersection, r_len, g_len, r_len + g_len - intersection]
    return np.stack(columns, axis=1)


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


def span_totals(
    batch: SpanBatch,
    kept: IntArray | int,
    extra: IntArray | None = None,
    convention: SpanConvention = "union",
) -> IntArray:
    """The :class:`~ctxeval.metrics.spans.reference.SpanCounts` of every record, one row each
    (intersection, precision, recall and IoU denominators), when record ``b`` keeps
    ``kept[b]`` retrieved items (an integer: every record its first ``kept``) and ``extra[b]``
    characters of the next one."""
    if batch.runs is None:
        return _totals(batch, kept, extra, convention)
    ordered, rank = batch.retrieved
    rank_cut = kept if isinstance(kept, int) else kept[ordered.record]
    keep = rank < rank_cut
    end = ordered.end
    if extra is not None:
        more = extra[ordered.record]
        part = (rank == rank_cut) & (more > 0)
        end = np.where(part, np.minimum(end, ordered.start + more), end)
        keep = keep | part
    chunks = take(Intervals(ordered.record, ordered.doc, ordered.start, end, ordered.base), keep)
    return counted_totals(batch.runs, chunks, batch.truth, batch.missing_truth, convention)


def truncate_batch(batch: SpanBatch, kept: IntArray, extra: IntArray) -> SpanBatch:
    """The spans of what a budget under ``"truncate"`` feeds, record ``b`` keeping ``kept[b]``
    whole items and ``extra[b]`` characters of the next (reference:
    :func:`~ctxeval.metrics.spans.reference.truncate_spans`): that item's span becomes its first
    ``extra[b]`` characters; the cut-off ``kept + 1`` drops the items after it."""
    crossing = (batch.r_rank == kept[batch.r_record]) & (extra[batch.r_record] > 0)
    if not crossing.any():
        return batch
    cut = np.minimum(batch.r_end, batch.r_start + extra[batch.r_record])
    return replace(batch, r_end=np.where(crossing, cut, batch.r_end), cache={})


def span_counts_at(
    batch: SpanBatch, k: int | IntArray | None, convention: SpanConvention = "union"
) -> IntArray:
    """:func:`span_totals` at the cut-off ``k`` (``min(k, n)`` items; None: all; one count per
    record at a budget), computed once per batch, cut-off and convention."""
    key: tuple[Any, ...] = (k.tobytes() if isinstance(k, np.ndarray) else k, convention)
    found = batch.cache.get(key)
    if found is None:
        kept = _kept(batch, k)
        found = _compiled_totals(batch, kept, convention)
        if found is None:
            found = span_totals(batch, kept, None, convention)
        batch.cache[key] = found
    return found


def _kept(batch: SpanBatch, k: int | IntArray | None) -> IntArray | int:
    """Items kept per record at the cut-off ``k`` (an integer: every record the same)."""
    return np.minimum(batch.n, k) if isinstance(k, np.ndarray) else _ALL if k is None else k


def _tables(batch: SpanBatch) -> compiled.Tables | None:
    """The compiled kernel's tables of the batch, computed once (:mod:`ctxeval.metrics.spans.
    compiled`); None when the kernel is not in use or the unit is a token counter."""
    if batch.runs is not None:
        return None
    tables: compiled.Tables | None = batch.cache.get("compiled")
    if tables is None:
        tables = compiled.prefix_tables(
            batch.n,
            (batch.r_record, batch.r_rank, batch.r_doc, batch.r_start, batch.r_end),
            (batch.g_record, batch.g_doc, batch.g_start, batch.g_end),
            batch.token_starts,
            batch.base,
        )
        if tables is not None:
            batch.cache["compiled"] = tables
    return tables


def _compiled_totals(
    batch: SpanBatch, kept: IntArray | int, convention: SpanConvention
) -> IntArray | None:
    """:func:`span_totals` (no extra characters) from the compiled kernel's tables; None when
    the kernel is not in use."""
    tables = _tables(batch)
    if tables is None:
        return None
    cut = np.broadcast_to(np.asarray(kept, dtype=np.int64), batch.n.shape)
    return compiled.counts_at(tables, batch.n, cut, batch.missing_truth, convention == "chroma")


_ALL = 2**62  # a count of items no record reaches: every item is kept


def _ratios(batch: SpanBatch, k: int | IntArray | None, convention: SpanConvention) -> FloatArray:
    """``(B, 3)``: precision, recall and IoU of every record (0 where a denominator is 0),
    computed once per batch, cut-off and convention; ``(B, 4)``, F1 too, from the compiled
    kernel."""
    key = ("ratios", k.tobytes() if isinstance(k, np.ndarray) else k, convention)
    found = batch.cache.get(key)
    if found is None:
        tables = _tables(batch)
        if tables is not None:  # precision, recall, IoU and F1 at once, the same floats
            cut = np.broadcast_to(np.asarray(_kept(batch, k), dtype=np.int64), batch.n.shape)
            chroma = convention == "chroma"
            found = compiled.ratios_at(tables, batch.n, cut, batch.missing_truth, chroma)
        else:
            c = span_counts_at(batch, k, convention).astype(np.float64)
            found = np.zeros((len(c), 3), dtype=np.float64)
            np.divide(c[:, [0]], c[:, 1:], out=found, where=c[:, 1:] > 0)
        batch.cache[key] = found
    return found


def span_precision(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    return _ratios(batch, k, convention)[:, 0].copy()


def span_recall(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    return _ratios(batch, k, convention)[:, 1].copy()


def span_iou(
    batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union"
) -> FloatArray:
    return _ratios(batch, k, convention)[:, 2].copy()


def span_f1(batch: SpanBatch, k: int | None, *, convention: SpanConvention = "union") -> FloatArray:
    ratios = _ratios(batch, k, convention)
    if ratios.shape[1] == 4:
        return ratios[:, 3].copy()
    p, r = ratios[:, 0], ratios[:, 1]
    total = p + r
    return np.divide(2 * p * r, total, out=np.zeros_like(p), where=total > 0)


SPAN_CORE: dict[str, Callable[..., FloatArray]] = {
    "span_precision": span_precision,
    "span_recall": span_recall,
    "span_iou": span_iou,
    "span_f1": span_f1,
}
"""The core function of each span measure (the registry pairs it with its reference)."""
