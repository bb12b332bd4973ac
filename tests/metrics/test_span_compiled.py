"""The compiled span kernel (the ``fast`` extra) against the numpy path: equal integers at every
cut-off, so equal floats for every span measure, in both conventions and offset units."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.foundation.errors import EnvironmentVariableError, InvalidArgumentError
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.measures import make_measure
from ctxeval.metrics.spans import compiled
from ctxeval.metrics.spans.core import SpanBatch, span_counts_at
from ctxeval.metrics.spans.reference import span_counts
from ctxeval.records.values import Span

pytest.importorskip("numba")

NAMES = ("span_precision", "span_recall", "span_iou", "span_f1")
CONVENTIONS = ("union", "chroma")
KS = (0, 1, 2, 3, 5, 9, None)
TOKEN_STARTS = {"a": frozenset(range(0, 40, 3)), "b": frozenset({0, 1, 7, 8, 20, 33})}

# Small offsets in three documents: overlapping, touching, empty and repeated spans are common.
spans = st.one_of(
    st.none(),
    st.builds(
        lambda doc, start, width: Span(doc, start, start + width),
        st.sampled_from("abc"),
        st.integers(0, 20),
        st.integers(0, 10),
    ),
)
records = st.lists(
    st.builds(
        lambda retrieved, truth, missing: (tuple(retrieved), tuple(truth), missing),
        st.lists(spans, max_size=8),
        st.lists(spans, max_size=4),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=8,
)


def fresh(batch: SpanBatch) -> SpanBatch:
    return replace(batch, cache={})


def both_paths(batch: SpanBatch, k: int | np.ndarray | None, convention: str) -> tuple:
    with compiled.mode("never"):
        numpy_counts = span_counts_at(fresh(batch), k, convention)  # type: ignore[arg-type]
    with compiled.mode("always"):
        kernel_batch = fresh(batch)
        kernel_counts = span_counts_at(kernel_batch, k, convention)  # type: ignore[arg-type]
        assert "compiled" in kernel_batch.cache, compiled.status()
    return numpy_counts.tolist(), kernel_counts.tolist()


def _reordered(batch: SpanBatch, order: Any) -> SpanBatch:
    """``batch`` with its retrieved spans in ``order`` (each keeps its record and rank)."""
    return replace(
        batch,
        r_record=batch.r_record[order],
        r_rank=batch.r_rank[order],
        r_doc=batch.r_doc[order],
        r_start=batch.r_start[order],
        r_end=batch.r_end[order],
        cache={},
    )


@settings(max_examples=200, deadline=None)
@given(records=records, tokens=st.booleans(), cuts=st.lists(st.integers(0, 9), min_size=8))
def test_compiled_counts_equal_numpy(records: list, tokens: bool, cuts: list[int]) -> None:
    starts = TOKEN_STARTS if tokens else None
    batch = SpanBatch.from_records(
        [RecordSpans(r, g, missing, starts) for r, g, missing in records]
    )
    per_record = np.array(cuts[: len(records)], dtype=np.int64)  # a size budget's whole items
    for convention in CONVENTIONS:
        for k in (*KS, per_record):
            numpy_counts, kernel_counts = both_paths(batch, k, convention)
            assert kernel_counts == numpy_counts, (convention, k)


@settings(max_examples=100, deadline=None)
@given(records=records)
def test_compiled_values_equal_numpy_and_reference(records: list) -> None:
    spans_of = [RecordSpans(r, g, missing) for r, g, missing in records]
    batch = SpanBatch.from_records(spans_of)
    for convention in CONVENTIONS:
        for k in KS[1:]:  # a measure's cut-off is at least 1
            for name in NAMES:
                measure = make_measure(name, k, convention=convention)
                with compiled.mode("never"):
                    numpy_values = measure.values(fresh(batch)).tolist()
                with compiled.mode("always"):
                    kernel_values = measure.values(fresh(batch)).tolist()
                assert kernel_values == numpy_values == [measure(s) for s in spans_of]


def test_hand_computed() -> None:
    """Chunks [0, 4), [2, 6) (overlapping), [6, 9) (touching), a chunk in another document and
    an unlocated one; excerpts [3, 8) and [5, 7) (overlapping), one excerpt of 4 characters not
    located."""
    record = RecordSpans(
        (Span("d", 0, 4), Span("d", 2, 6), None, Span("e", 0, 10), Span("d", 6, 9)),
        (Span("d", 3, 8), Span("d", 5, 7)),
        4,
    )
    batch = SpanBatch.from_records([record, RecordSpans((), ())])
    with compiled.mode("always"):
        union = {k: span_counts_at(fresh(batch), k, "union").tolist() for k in (1, 2, 4, 5)}
        chroma = span_counts_at(fresh(batch), 5, "chroma").tolist()
    # k=1: R=[0,4) 4, R∩G=[3,4) 1, G=[3,8) 5 + 4 missing, R∪G=[0,8) 8 + 4.
    assert union[1] == [[1, 4, 9, 12], [0, 0, 0, 0]]
    assert union[2] == [[3, 6, 9, 12], [0, 0, 0, 0]]
    assert union[4] == [[3, 16, 9, 22], [0, 0, 0, 0]]  # the unlocated item adds nothing
    assert union[5] == [[5, 19, 9, 23], [0, 0, 0, 0]]
    # chroma: 4 + 4 + 10 + 3 retrieved; excerpts 5 + 2 + 4; all of both excerpts retrieved.
    assert chroma == [[5, 21, 11, 25], [0, 0, 0, 0]]
    assert chroma[0] == list(span_counts(record, 5, 0, "chroma"))


def test_offsets_past_64_bit_keys_declined() -> None:
    """Offsets so large that ``doc * stride`` would overflow: the kernel declines the batch and
    the numpy path says what to do (it numbers (record, document) pairs, never fewer than the
    documents, so it cannot take a batch the kernel declines)."""
    far = 2**61
    spans_of = [
        RecordSpans((Span("a", far, far + 5), Span("b", 0, 3)), (Span("a", far + 2, far + 9),))
    ]
    batch = SpanBatch.from_records(spans_of)
    for value in ("never", "always"):
        with compiled.mode(value), pytest.raises(InvalidArgumentError, match="batch_size"):  # type: ignore[arg-type]
            span_counts_at(fresh(batch), 2, "union")
    with compiled.mode("always"):
        half = 2**60  # one document: its keys fit
        near = SpanBatch.from_records(
            [RecordSpans((Span("a", half, half + 5),), (Span("a", half + 2, half + 9),))]
        )
        assert span_counts_at(near, 2, "union").tolist() == [[3, 5, 7, 9]]
        assert "compiled" in near.cache


def test_modes_choose_the_path() -> None:
    """``never``: numpy; ``always``: the kernel; ``auto`` with the kernel loaded: the kernel for
    batches of few spans a record, numpy for batches of many."""
    batch = SpanBatch.from_records([RecordSpans((Span("a", 0, 3),), (Span("a", 1, 2),))])
    many = (compiled.AUTO_MOST_SPANS + 1) * 2
    wide = SpanBatch.from_records(
        [RecordSpans(tuple(Span("a", i, i + 2) for i in range(many)), (Span("a", 1, 2),))]
    )
    with compiled.mode("never"):
        kernel_batch = fresh(batch)
        span_counts_at(kernel_batch, 1, "union")
        assert "compiled" not in kernel_batch.cache
        assert compiled.status().startswith("not used: the mode is 'never'")
    with compiled.mode("always"):
        kernel_batch = fresh(batch)
        span_counts_at(kernel_batch, 1, "union")
        assert "compiled" in kernel_batch.cache
        assert compiled.status() == "in use"
    with compiled.mode("auto"):  # the kernel is loaded now
        kernel_batch, wide_batch = fresh(batch), fresh(wide)
        span_counts_at(kernel_batch, 1, "union")
        span_counts_at(wide_batch, 1, "union")
        assert "compiled" in kernel_batch.cache
        assert "compiled" not in wide_batch.cache
        assert compiled.status().startswith("in use (auto")


def test_environment_and_mode_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXEVAL_COMPILED", " Never ")
    assert compiled.read_environment() == "never"
    monkeypatch.setenv("CTXEVAL_COMPILED", "sometimes")
    with pytest.raises(EnvironmentVariableError, match="CTXEVAL_COMPILED='sometimes'"):
        compiled.read_environment()
    monkeypatch.delenv("CTXEVAL_COMPILED")
    assert compiled.read_environment() == "auto"
    with pytest.raises(InvalidArgumentError), compiled.mode("fast"):  # type: ignore[arg-type]
        pass


def test_spans_not_grouped_by_record_use_numpy() -> None:
    """A batch whose spans are not in record order (``from_records`` never builds one): the
    kernel declines it, and the numpy path measures it."""
    ordered = SpanBatch.from_records(
        [
            RecordSpans((Span("a", 0, 4),), (Span("a", 2, 6),)),
            RecordSpans((Span("a", 3, 9), Span("a", 0, 2)), (Span("a", 1, 5),)),
        ]
    )
    shuffled = _reordered(ordered, np.array([1, 2, 0]))
    with compiled.mode("always"):
        found = span_counts_at(shuffled, 2, "union").tolist()
        assert "compiled" not in shuffled.cache
        assert found == span_counts_at(fresh(ordered), 2, "union").tolist()
    assert found == [[2, 4, 4, 6], [3, 8, 4, 9]]


@pytest.mark.parametrize("count", [17, 40, 64, 65, 100, 140])
def test_many_spans_a_record_equal_numpy(count: int) -> None:
    """Records of many spans (the fast path takes up to 64; insertion sorts up to 128 spans,
    numpy's sort past them): disjoint chunks in rank order, the same shuffled, and chunks with
    duplicates and overlaps, against several excerpts."""
    rng = np.random.default_rng(count)
    starts = rng.permutation(count) * 10
    disjoint = tuple(Span("ab"[i % 2], int(s), int(s) + 10) for i, s in enumerate(starts))
    overlapping = tuple(
        Span("a", int(s), int(s) + int(w))
        for s, w in zip(rng.integers(0, count * 5, count), rng.integers(0, 30, count), strict=True)
    )
    truth = tuple(Span("a", int(s), int(s) + 25) for s in rng.integers(0, count * 5, 5))
    batch = SpanBatch.from_records(
        [RecordSpans(disjoint, truth, 3), RecordSpans(overlapping, truth), RecordSpans((), truth)]
    )
    for convention in CONVENTIONS:
        for k in (1, 10, count // 2, None, np.array([count, 3, 0])):
            numpy_counts, kernel_counts = both_paths(batch, k, convention)
            assert kernel_counts == numpy_counts, (convention, k)


def test_spans_out_of_rank_order_within_a_record() -> None:
    """Spans grouped by record but not in rank order (``from_records`` never builds one): the
    kernel's histograms by rank, summed up, give the numpy path's counts."""
    record = RecordSpans(
        (Span("a", 0, 4), Span("a", 10, 14), Span("b", 0, 9), Span("a", 4, 8), Span("a", 20, 30)),
        (Span("a", 2, 12), Span("a", 22, 24)),
        1,
    )
    ordered = SpanBatch.from_records([record, record])
    # the first record's spans shuffled
    shuffled = _reordered(ordered, np.array([3, 0, 4, 2, 1, 5, 6, 7, 8, 9]))
    for convention in CONVENTIONS:
        for k in (1, 2, 4, None):
            numpy_counts, kernel_counts = both_paths(shuffled, k, convention)
            assert kernel_counts == numpy_counts == both_paths(ordered, k, convention)[0]


@pytest.mark.parametrize(
    "truth",
    [
        (),
        ((0, 5),),  # one excerpt
        ((0, 5), (20, 30), (8, 12), (40, 41)),  # four disjoint, out of order
        ((0, 5), (5, 9)),  # touching: disjoint
        ((0, 10), (4, 6), (30, 35)),  # overlapping
        ((0, 5), (3, 5), (3, 5)),  # repeated
        ((2, 2), (0, 5)),  # an empty excerpt inside another
        ((0, 3), (6, 9), (12, 15), (18, 21), (24, 27)),  # five
    ],
)
def test_excerpts_of_a_record_equal_numpy(truth: tuple[tuple[int, int], ...]) -> None:
    """The fast path's excerpts (sorted by start, merged into runs, each span against the runs
    and, when they overlap, against each excerpt) in the shapes they come in, against the numpy
    path; a record with excerpts and no retrieved span too. The kernel also runs as plain Python
    (``py_func``: Python's indexing checks bounds where numba's does not), with the same
    tables."""
    excerpts = (*(Span("a", s, e) for s, e in truth), Span("b", 0, 4))
    chunks = (Span("a", 0, 4), Span("b", 2, 6), Span("a", 4, 12), Span("a", 19, 31))
    batch = SpanBatch.from_records(
        [RecordSpans(chunks, excerpts, 2), RecordSpans((), excerpts[:1]), RecordSpans(chunks, ())]
    )
    for convention in CONVENTIONS:
        for k in (1, 2, 3, None):
            numpy_counts, kernel_counts = both_paths(batch, k, convention)
            assert kernel_counts == numpy_counts, (convention, k)
    kernel = pytest.importorskip("ctxeval.metrics.spans.kernel")
    empty = np.zeros(0, dtype=np.int64)
    # (Alone, the record of one excerpt has the fewest endpoints: the least scratch room.)
    for each in (batch, SpanBatch.from_records([RecordSpans((), excerpts[:1])])):
        arrays = (each.n, each.r_record, each.r_rank, each.r_doc, each.r_start, each.r_end)
        arrays += (each.g_record, each.g_doc, each.g_start, each.g_end, empty, empty, False)
        compiled_tables = kernel.span_prefix(*arrays)
        python_tables = kernel.span_prefix.py_func(*arrays)
        assert compiled_tables[0] == python_tables[0] == 0
        for found, expected in zip(python_tables[1:], compiled_tables[1:], strict=True):
            assert found.tolist() == expected.tolist()
