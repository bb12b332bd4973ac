"""The span measures' lengths at every integer cut-off of every record, in one compiled pass
(needs numba).

Imported only through :mod:`ctxeval.metrics.spans.compiled`, which decides when it is used.
Per record, every endpoint of its spans (retrieved and ground truth, as ``doc * stride +
offset``) is sorted; consecutive endpoints bound the record's *pieces*, which no span starts or
ends inside. Each piece gets the best (lowest) rank of a retrieved span covering it and the
number of excerpts covering it. A piece with best rank ``r`` is in R at every cut-off keeping
more than ``r`` items, so per-rank histograms of the pieces' lengths, summed up, give |R|,
|R ∩ G| and chroma's summed retrieved parts of the excerpts at every number of items kept; the
plain sum of the retrieved spans' lengths is a histogram of the spans by rank. |G| (union) and
the excerpts' summed lengths do not depend on the cut-off. Lengths are characters, or, with a
token table, token starts (additive, so a piece's count is its share). Every count is an
integer: the measures are then the same divisions as on the numpy path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

__all__ = ["COLUMNS", "counts_at", "ratios_at", "span_prefix"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Columns of the table, per record and number of items kept: |R|, |R ∩ G|, the excerpts'
#: retrieved parts summed (chroma), the retrieved spans' lengths summed (chroma).
COLUMNS = 4
_SAFE = 2**62
_NONE = 2**62  # a rank no span has: a piece no retrieved span covers
_FEW = 64  # up to this many retrieved spans and excerpts, the fast path is tried
_SMALL = 256  # up to this many endpoints, an insertion sort and linear scans


def _jit(function: _F) -> _F:
    # Compiled on first call; the machine code is cached on disk (numba's cache) so later
    # processes load it instead.
    return cast(_F, numba.njit(cache=True, nogil=True)(function))


def _inline(function: _F) -> _F:
    # A helper of the kernels, inlined into each (a call per record would cost).
    return cast(_F, numba.njit(cache=True, nogil=True, inline="always")(function))


@_jit
def _extent(doc: Any, end: Any) -> Any:
    """The documents and the stride past every offset; stride 0 when ``docs * stride`` would
    not fit 64-bit keys."""
    docs = 0
    stride = 1
    for i in range(len(doc)):
        docs = max(docs, doc[i] + 1)
        stride = max(stride, end[i] + 1)
    return docs, stride


# A named numeric kernel, kept whole (tests/foundation/test_function_size.py lists it): one
# numba loop over every record, where a call per step would cost.
@_jit
def span_prefix(  # noqa: C901, PLR0912, PLR0913, PLR0915
    n: Any,
    r_record: Any,
    r_rank: Any,
    r_doc: Any,
    r_start: Any,
    r_end: Any,
    g_record: Any,
    g_doc: Any,
    g_start: Any,
    g_end: Any,
    starts: Any,
    base: Any,
    tokens: Any,
) -> Any:
    """``(status, offsets, table, truth)``. ``status`` 0: done; 1: the keys do not fit 64 bits;
    2: the spans are not grouped by record (the caller uses the numpy path for both).

    ``table[offsets[b] + t]`` (``COLUMNS`` integers) holds record ``b``'s lengths when its
    first ``t`` items are kept (``t`` from 0 to ``n[b]``); ``truth[b]``: |G| (the union) and
    the excerpts' lengths summed. ``starts``/``base``: the token table (``tokens`` true).
    """
    records = len(n)
    offsets = np.zeros(records + 1, np.int64)
    for b in range(records):
        offsets[b + 1] = offsets[b] + n[b] + 1
    table = np.empty((offsets[records], COLUMNS), np.int64)  # every row written below
    truth = np.zeros((records, 2), np.int64)
    d1, s1 = _extent(r_doc, r_end)
    d2, s2 = _extent(g_doc, g_end)
    docs, stride = max(d1, d2, 1), max(s1, s2)
    if docs >= _SAFE // stride:
        return 1, offsets, table, truth
    # The most endpoints of a record, for the scratch arrays.
    # Where each record's spans start (counted, then summed: no branch per span), and whether
    # they are grouped by record in order.
    r_at = np.zeros(records + 1, np.int64)
    g_at = np.zeros(records + 1, np.int64)
    grouped = True
    for i in range(len(r_record)):
        grouped &= 0 <= r_record[i] < records and (i == 0 or r_record[i] >= r_record[i - 1])
        r_at[min(max(r_record[i], 0), records - 1) + 1] += 1
    for i in range(len(g_record)):
        grouped &= 0 <= g_record[i] < records and (i == 0 or g_record[i] >= g_record[i - 1])
        g_at[min(max(g_record[i], 0), records - 1) + 1] += 1
    if not grouped:
        return 2, offsets, table, truth
    widest = 0
    for b in range(records):
        widest = max(widest, 2 * (r_at[b + 1] + g_at[b + 1]))
        r_at[b + 1] += r_at[b]
        g_at[b + 1] += g_at[b]
    points = np.empty(widest + 1, np.int64)
    keys = np.empty(widest + 1, np.int64)
    widths = np.empty(widest + 1, np.int64)
    tags = np.empty(widest + 1, np.int64)
    lo_key = np.empty(widest + 1, np.int64)
    hi_key = np.empty(widest + 1, np.int64)
    ex_lo = np.empty(widest + 1, np.int64)
    ex_hi = np.empty(widest + 1, np.int64)
    run_lo = np.empty(widest + 1, np.int64)
    run_hi = np.empty(widest + 1, np.int64)
    unit = np.empty(widest + 1, np.int64)  # each point's offset in the unit
    best = np.empty(widest + 1, np.int64)
    cover = np.empty(widest + 1, np.int64)
    span_both = np.empty(widest + 1, np.int64)  # each span's part in the excerpts' union
    span_parts = np.empty(widest + 1, np.int64)  # and in each excerpt, summed
    for b in range(records):
        ri, rj, gi, gj = r_at[b], r_at[b + 1], g_at[b], g_at[b + 1]
        top = offsets[b]  # table[top + t]: the record's lengths keeping t items
        if not tokens and rj - ri <= _FEW and gj - gi <= _FEW:
            # A record (in characters) where no two retrieved spans share a character (the
            # common case: chunks that do not overlap): the pieces are not needed, every
            # length is a sum over spans (against the excerpts' union for |R ∩ G|, against
            # each excerpt for chroma's parts), with few branches.
            # Keys ``doc * stride + offset``: spans of different documents never overlap.
            own = rj - ri
            ordered = True  # ranks increasing: the order records arrive in
            for i in range(own):
                lo_key[i] = r_doc[ri + i] * stride + r_start[ri + i]
                hi_key[i] = r_doc[ri + i] * stride + r_end[ri + i]
                tags[i] = r_rank[ri + i]
                ordered &= i == 0 or tags[i] > tags[i - 1]
            # Whether two spans share a character: each against the spans before it, as
            # comparisons OR-ed together (no sum, no early exit: the compiler vectorises the
            # inner loop; an insertion sort and a linear check were slower on ten spans).
            clash = False
            for i in range(1, own):
                lo = lo_key[i]
                hi = hi_key[i]
                for j in range(i):
                    clash |= (lo_key[j] < hi) & (lo < hi_key[j])
            if not clash:
                # The excerpts by start (their keys), then their union merged into runs.
                runs = 0
                g_sum = 0
                for i in range(gi, gj):
                    g_sum += g_end[i] - g_start[i]
                    lo = g_doc[i] * stride + g_start[i]
                    j = runs - 1
                    while j >= 0 and ex_lo[j] > lo:
                        ex_lo[j + 1] = ex_lo[j]
                        ex_hi[j + 1] = ex_hi[j]
                        j -= 1
                    ex_lo[j + 1] = lo
                    ex_hi[j + 1] = lo + g_end[i] - g_start[i]
                    runs += 1
                merged = 0
                for j in range(runs):
                    if merged > 0 and ex_lo[j] <= run_hi[merged - 1]:
                        run_hi[merged - 1] = max(run_hi[merged - 1], ex_hi[j])
                    else:
                        run_lo[merged] = ex_lo[j]
                        run_hi[merged] = ex_hi[j]
                        merged += 1
                g_union = 0
                for j in range(merged):
                    g_union += run_hi[j] - run_lo[j]
                # Each span's overlap with the excerpts' union and with each excerpt: excerpt
                # by excerpt over the spans (a loop over the spans the compiler vectorises).
                for i in range(own):
                    span_both[i] = 0
                    span_parts[i] = 0
                for j in range(merged):
                    lo = run_lo[j]
                    hi = run_hi[j]
                    for i in range(own):
                        span_both[i] += max(min(hi, hi_key[i]) - max(lo, lo_key[i]), 0)
                if merged == runs:  # disjoint excerpts: each is a run
                    for i in range(own):
                        span_parts[i] = span_both[i]
                else:
                    for j in range(runs):
                        lo = ex_lo[j]
                        hi = ex_hi[j]
                        for i in range(own):
                            span_parts[i] += max(min(hi, hi_key[i]) - max(lo, lo_key[i]), 0)
                # The record's rows: in rank order (the order records arrive in), each row
                # written once with the totals of the ranks before it; else histograms by
                # rank, summed up.
                done = 0
                acc_r = acc_both = acc_parts = 0
                if not ordered:
                    table[top : top + n[b] + 1] = 0
                for i in range(own):
                    width = hi_key[i] - lo_key[i]
                    if ordered:
                        while done <= tags[i]:
                            table[top + done, 0] = acc_r
                            table[top + done, 1] = acc_both
                            table[top + done, 2] = acc_parts
                            table[top + done, 3] = acc_r
                            done += 1
                        acc_r += width
                        acc_both += span_both[i]
                        acc_parts += span_parts[i]
                    else:
                        at = 1 + tags[i]
                        table[top + at, 0] += width
                        table[top + at, 1] += span_both[i]
                        table[top + at, 2] += span_parts[i]
                        table[top + at, 3] += width
                if ordered:
                    while done <= n[b]:
                        table[top + done, 0] = acc_r
                        table[top + done, 1] = acc_both
                        table[top + done, 2] = acc_parts
                        table[top + done, 3] = acc_r
                        done += 1
                else:
                    for t in range(2, n[b] + 1):
                        for c in range(COLUMNS):
                            table[top + t, c] += table[top + t - 1, c]
                truth[b, 0] = g_union
                truth[b, 1] = g_sum
                continue
        # The spans by start (an insertion sort of a few keys; ``tags``: a retrieved span's
        # rank, -1 for an excerpt), then their endpoints in that order: nearly sorted already
        # (only overlapping spans' ends are out of place), so the second insertion sort moves
        # little. (Written out: calls to helpers cost here.)
        table[top : top + n[b] + 1] = 0
        spans = 0
        for i in range(ri, gj - gi + rj):
            if i < rj:
                key = r_doc[i] * stride + r_start[i]
                width = r_end[i] - r_start[i]
                tag = r_rank[i]
            else:
                at = gi + i - rj
                key = g_doc[at] * stride + g_start[at]
                width = g_end[at] - g_start[at]
                tag = -1
            if rj - ri + gj - gi > _SMALL // 2:  # many: sorted below, with numpy's sort
                keys[spans] = key
                widths[spans] = width
                tags[spans] = tag
                spans += 1
                continue
            j = spans - 1
            while j >= 0 and keys[j] > key:
                keys[j + 1] = keys[j]
                widths[j + 1] = widths[j]
                tags[j + 1] = tags[j]
                j -= 1
            keys[j + 1] = key
            widths[j + 1] = width
            tags[j + 1] = tag
            spans += 1
        if spans > _SMALL // 2:
            order = np.argsort(keys[:spans], kind="mergesort")
            keys[:spans] = keys[:spans][order]
            widths[:spans] = widths[:spans][order]
            tags[:spans] = tags[:spans][order]
        count = 2 * spans
        for i in range(spans):
            points[2 * i] = keys[i]
            points[2 * i + 1] = keys[i] + widths[i]
        if count > _SMALL:
            points[:count] = np.sort(points[:count])
        else:
            for i in range(1, count):
                value = points[i]
                j = i - 1
                while j >= 0 and points[j] > value:
                    points[j + 1] = points[j]
                    j -= 1
                points[j + 1] = value
        distinct = 0
        for i in range(count):
            if distinct == 0 or points[i] != points[distinct - 1]:
                points[distinct] = points[i]
                distinct += 1
        for j in range(distinct):
            best[j] = _NONE
            cover[j] = 0
            if tokens:  # token starts below the point, in its document
                doc = points[j] // stride
                unit[j] = np.searchsorted(starts, points[j] + base[doc] - doc * stride)
            else:
                unit[j] = points[j]
        # Each span's pieces: its start is found by one pointer moving forward (the spans are
        # in order of start), its pieces follow up to its end.
        g_sum = 0
        first = 0
        for i in range(spans):
            lo = keys[i]
            hi = lo + widths[i]
            tag = tags[i]
            while points[first] < lo:
                first += 1
            j = first
            if tag >= 0:
                while points[j] < hi:
                    best[j] = min(best[j], tag)
                    j += 1
                table[top + 1 + tag, 3] += unit[j] - unit[first]
            else:
                while points[j] < hi:
                    cover[j] += 1
                    j += 1
                g_sum += unit[j] - unit[first]
        g_union = 0
        for j in range(distinct - 1):
            rank = best[j]
            times = cover[j]
            if rank == _NONE and times == 0:
                continue
            size = unit[j + 1] - unit[j]
            if times > 0:
                g_union += size
            if rank != _NONE:
                table[top + 1 + rank, 0] += size
                if times > 0:
                    table[top + 1 + rank, 1] += size
                    table[top + 1 + rank, 2] += size * times
        for t in range(2, n[b] + 1):
            for c in range(COLUMNS):
                table[top + t, c] += table[top + t - 1, c]
        truth[b, 0] = g_union
        truth[b, 1] = g_sum
    return 0, offsets, table, truth


@_inline
def _divided(both: Any, retrieved: Any, relevant: Any, either: Any) -> Any:
    """Precision, recall, IoU and F1 from the counts: the numpy path's operations in its
    order (each count as a float64, one IEEE division each, 0 where a denominator is 0; F1 as
    ``2 * p * r / (p + r)``), so the same floats. (Each division is made whatever the
    denominator, by 1 in place of 0, and its quotient then dropped: no branch, so the compiler
    can vectorise them.)"""
    top = np.float64(both)
    any_p = top / np.float64(max(retrieved, 1))
    any_r = top / np.float64(max(relevant, 1))
    iou = top / np.float64(max(either, 1))
    p = any_p if retrieved > 0 else 0.0
    r = any_r if relevant > 0 else 0.0
    total = p + r
    f1 = 2 * p * r / (total if total > 0 else 1.0)
    return p, r, iou if either > 0 else 0.0, f1 if total > 0 else 0.0


@_inline
def _counted(row: Any, union: Any, excerpts: Any, chroma: Any) -> Any:
    """The counts (intersection, precision, recall and IoU denominators) from a row of the
    table and the ground truth's lengths (with what was not located)."""
    both = row[1]
    if chroma:
        return both, row[3], excerpts, row[3] + excerpts - row[2]
    return both, row[0], union, row[0] + union - both


@_jit
def counts_at(
    offsets: Any, table: Any, truth: Any, missing: Any, n: Any, kept: Any, chroma: Any
) -> Any:
    """The span counts of every record (intersection, precision, recall and IoU denominators)
    when record ``b`` keeps ``min(kept[b], n[b])`` items (none when ``kept[b] < 0``), from
    :func:`span_prefix`'s tables."""
    records = len(n)
    out = np.empty((records, 4), np.int64)
    for b in range(records):
        row = table[offsets[b] + min(max(kept[b], 0), n[b])]
        found = _counted(row, truth[b, 0] + missing[b], truth[b, 1] + missing[b], chroma)
        for c in range(4):
            out[b, c] = found[c]
    return out


@_jit
def ratios_at(
    offsets: Any, table: Any, truth: Any, missing: Any, n: Any, kept: Any, chroma: Any
) -> Any:
    """``(4, B)``: precision, recall, IoU and F1 of every record at the cut-off of
    :func:`counts_at` (one row per measure; :func:`_divided`'s floats)."""
    records = len(n)
    out = np.empty((4, records), np.float64)
    for b in range(records):
        row = table[offsets[b] + min(max(kept[b], 0), n[b])]
        found = _counted(row, truth[b, 0] + missing[b], truth[b, 1] + missing[b], chroma)
        value = _divided(found[0], found[1], found[2], found[3])
        for c in range(4):
            out[c, b] = value[c]
    return out
