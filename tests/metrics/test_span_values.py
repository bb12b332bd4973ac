"""Span measures: hand-computed values, chroma's convention against chroma's own functions, and
properties. (Reference == core on random intervals is in test_twin.py.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import SpanMetrics
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.measures import make_measure
from ctxeval.metrics.spans.core import SpanBatch
from ctxeval.metrics.spans.reference import span_counts
from ctxeval.records.values import Span

MEASURES = ("span_precision", "span_recall", "span_iou", "span_f1")


def values(
    retrieved: list[Span | None],
    truth: list[Span | None],
    k: int | None = None,
    convention: str = "union",
    missing: int = 0,
) -> dict[str, float]:
    """Every span measure from the core, checked against the reference on the way."""
    spans = RecordSpans(tuple(retrieved), tuple(truth), missing)
    batch = SpanBatch.from_records([spans])
    out = {}
    for name in MEASURES:
        measure = make_measure(name, k, convention=convention)
        (core,) = measure.values(batch).tolist()
        assert core == measure(spans), name
        out[name] = core
    return out


def d(start: int, end: int, doc: str = "d") -> Span:
    return Span(doc, start, end)


def test_overlapping_chunks_count_once() -> None:
    # R = [0, 15), G = [8, 12): the overlap [5, 10) of the two chunks counts once.
    got = values([d(0, 10), d(5, 15)], [d(8, 12)])
    assert got == {
        "span_precision": 4 / 15,
        "span_recall": 1.0,
        "span_iou": 4 / 15,
        "span_f1": 2 * (4 / 15) * 1.0 / (4 / 15 + 1.0),
    }


def test_chroma_counts_overlapping_chunks_twice() -> None:
    # Precision and IoU denominators: 10 + 10, not the union's 15.
    got = values([d(0, 10), d(5, 15)], [d(8, 12)], convention="chroma")
    assert got["span_precision"] == 4 / 20
    assert got["span_recall"] == 1.0
    assert got["span_iou"] == 4 / 20


def test_an_excerpt_across_two_chunks() -> None:
    chunks, excerpt = [d(0, 10), d(10, 20)], [d(7, 14)]
    first = values(chunks, excerpt, k=1)
    assert first["span_recall"] == 3 / 7
    assert first["span_precision"] == 3 / 10
    assert first["span_iou"] == 3 / 14  # |R ∪ G| = 10 + 7 - 3
    both = values(chunks, excerpt, k=2)
    assert both["span_recall"] == 1.0
    assert both["span_precision"] == 7 / 20
    assert both["span_iou"] == 7 / 20


def test_several_excerpts() -> None:
    got = values([d(3, 25)], [d(0, 5), d(20, 30)])
    # R ∩ G = [3, 5) + [20, 25) = 7; |G| = 15; |R| = 22; |R ∪ G| = [0, 30) = 30
    assert got["span_recall"] == 7 / 15
    assert got["span_precision"] == 7 / 22
    assert got["span_iou"] == 7 / 30


def test_overlapping_excerpts_count_once_but_chroma_sums_them() -> None:
    union = values([d(0, 10)], [d(0, 10), d(5, 15)])
    assert union["span_recall"] == 10 / 15
    chroma = values([d(0, 10)], [d(0, 10), d(5, 15)], convention="chroma")
    # recall denominator 10 + 10; IoU: 10 retrieved + the parts not retrieved (0 + 5)
    assert chroma["span_recall"] == 10 / 20
    assert chroma["span_iou"] == 10 / 15


def test_chunks_from_other_documents() -> None:
    # The same offsets in another document never overlap the excerpt...
    assert values([d(0, 10, "e")], [d(0, 10)])["span_recall"] == 0.0
    # ...but they are retrieved text: precision counts them, in both conventions.
    for convention in ("union", "chroma"):
        got = values([d(0, 10, "e"), d(0, 10)], [d(0, 10)], convention=convention)
        assert got["span_precision"] == 0.5
        assert got["span_recall"] == 1.0
        assert got["span_iou"] == 0.5


def test_empty_retrieval_scores_zero_not_nan() -> None:
    for convention in ("union", "chroma"):
        assert values([], [d(0, 10)], convention=convention) == dict.fromkeys(MEASURES, 0.0)


def test_texts_not_located() -> None:
    # A retrieved text without a span adds nothing; a ground-truth text without one is missed:
    # its length (here 6) joins |G| and |R ∪ G|.
    got = values([None, d(0, 10)], [d(0, 10), None], missing=6)
    assert got["span_precision"] == 1.0
    assert got["span_recall"] == 10 / 16
    assert got["span_iou"] == 10 / 16
    # The unlocated retrieved text still takes its rank: at k=1 nothing is retrieved.
    assert values([None, d(0, 10)], [d(0, 10)], k=1)["span_recall"] == 0.0


def test_partial_cut_keeps_the_first_characters_of_the_next_chunk() -> None:
    spans = RecordSpans((d(0, 10), d(20, 30)), (d(22, 26),))
    assert span_counts(spans, 1, 0) == (0, 10, 4, 14)
    assert span_counts(spans, 1, 4) == (2, 14, 4, 16)  # [20, 24) kept
    assert span_counts(spans, 1, 100) == span_counts(spans, 2, 0)


def test_non_ascii_text_before_the_span() -> None:
    document = "Ünïcödé — 日本語のテキスト. Paris is the capital of France."
    start = document.index("Paris")
    assert start != len(document[:start].encode("utf-8"))  # characters, not bytes
    metric = SpanMetrics()
    got = metric(
        retrieved_context=["Paris is the capital"],
        ground_truth_context=["capital of France"],
        corpus={"doc": document},
    )
    # R = "Paris is the capital" (20 chars), G = "capital of France" (17), overlap "capital" (7)
    assert got["span_precision"] == 7 / 20
    assert got["span_recall"] == 7 / 17
    given = metric(
        retrieved_context=["Paris is the capital"],
        ground_truth_context=["capital of France"],
        retrieved_spans=[{"doc": "doc", "start": start, "end": start + 20}],
        ground_truth_spans=[{"doc": "doc", "start": start + 13, "end": start + 30}],
    )
    assert given == got


def test_token_units_count_token_starts() -> None:
    document = "alpha beta gamma delta"
    metric = SpanMetrics(unit="rouge")
    got = metric(
        retrieved_context=["alpha beta ga"],  # 3 token starts: alpha, beta, gamma
        ground_truth_context=["beta gamma"],  # 2: beta, gamma
        retrieved_spans=[{"doc": "x", "start": 0, "end": 13}],
        ground_truth_spans=[{"doc": "x", "start": 6, "end": 16}],
        corpus={"x": document},
    )
    assert got["span_recall"] == 1.0
    assert got["span_precision"] == 2 / 3


# -- chroma's own functions, as the reference -----------------------------------------------------
# Copied from brandonstarxel/chunking_evaluation, chunking_evaluation/evaluation_framework/
# base_evaluation.py (MIT License, Copyright (c) 2024 Brandon Smith): the range helpers as they
# are, and the per-question body of BaseEvaluation._scores_from_dataset_and_retrievals.


def sum_of_ranges(ranges):  # type: ignore[no-untyped-def]
    return sum(end - start for start, end in ranges)


def union_ranges(ranges):  # type: ignore[no-untyped-def]
    sorted_ranges = sorted(ranges, key=lambda x: x[0])
    merged_ranges = [sorted_ranges[0]]
    for current_start, current_end in sorted_ranges[1:]:
        last_start, last_end = merged_ranges[-1]
        if current_start <= last_end:
            merged_ranges[-1] = (last_start, max(last_end, current_end))
        else:
            merged_ranges.append((current_start, current_end))
    return merged_ranges


def intersect_two_ranges(range1, range2):  # type: ignore[no-untyped-def]
    start1, end1 = range1
    start2, end2 = range2
    intersect_start = max(start1, start2)
    intersect_end = min(end1, end2)
    if intersect_start <= intersect_end:
        return (intersect_start, intersect_end)
    return None


def difference(ranges, target):  # type: ignore[no-untyped-def]
    result = []
    target_start, target_end = target
    for start, end in ranges:
        if end < target_start or start > target_end:
            result.append((start, end))
        elif start < target_start and end > target_end:
            result.append((start, target_start))
            result.append((target_end, end))
        elif start < target_start:
            result.append((start, target_start))
        elif end > target_end:
            result.append((target_end, end))
    return result


def chroma_scores(references, corpus_id, metadatas):  # type: ignore[no-untyped-def]
    numerator_sets = []
    denominator_chunks_sets = []
    unused_highlights = [(x["start_index"], x["end_index"]) for x in references]
    for metadata in metadatas:
        chunk_start, chunk_end, chunk_corpus_id = (
            metadata["start_index"],
            metadata["end_index"],
            metadata["corpus_id"],
        )
        if chunk_corpus_id != corpus_id:
            continue
        for ref_obj in references:
            ref_start, ref_end = int(ref_obj["start_index"]), int(ref_obj["end_index"])
            intersection = intersect_two_ranges((chunk_start, chunk_end), (ref_start, ref_end))
            if intersection is not None:
                unused_highlights = difference(unused_highlights, intersection)
                numerator_sets = union_ranges([intersection, *numerator_sets])
                denominator_chunks_sets = union_ranges(
                    [(chunk_start, chunk_end), *denominator_chunks_sets]
                )
    numerator_value = sum_of_ranges(numerator_sets) if numerator_sets else 0
    recall_denominator = sum_of_ranges([(x["start_index"], x["end_index"]) for x in references])
    precision_denominator = sum_of_ranges([(x["start_index"], x["end_index"]) for x in metadatas])
    iou_denominator = precision_denominator + sum_of_ranges(unused_highlights)
    return (
        numerator_value / iou_denominator,
        numerator_value / recall_denominator,
        numerator_value / precision_denominator,
    )


intervals = st.tuples(st.integers(0, 40), st.integers(1, 15)).map(lambda p: (p[0], p[0] + p[1]))


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.tuples(intervals, st.sampled_from("dde")), min_size=1, max_size=6),
    references=st.lists(intervals, min_size=1, max_size=3),
)
def test_chroma_convention_equals_chromas_code(
    chunks: list[tuple[tuple[int, int], str]], references: list[tuple[int, int]]
) -> None:
    metadatas = [{"start_index": s, "end_index": e, "corpus_id": doc} for (s, e), doc in chunks]
    refs = [{"content": "", "start_index": s, "end_index": e} for s, e in references]
    iou, recall, precision = chroma_scores(refs, "d", metadatas)
    got = values(
        [Span(doc, s, e) for (s, e), doc in chunks],
        [Span("d", s, e) for s, e in references],
        convention="chroma",
    )
    assert (got["span_iou"], got["span_recall"], got["span_precision"]) == (iou, recall, precision)


# -- properties ---------------------------------------------------------------------------------

spans = st.builds(
    lambda doc, start, width: Span(doc, start, start + width),
    st.sampled_from("ab"),
    st.integers(0, 30),
    st.integers(0, 10),
)


@settings(max_examples=200, deadline=None)
@given(
    retrieved=st.lists(spans, max_size=8),
    truth=st.lists(spans, max_size=4),
    k=st.sampled_from([None, 1, 2, 3, 5]),
    convention=st.sampled_from(["union", "chroma"]),
    missing=st.integers(0, 3),
)
def test_values_are_between_0_and_1(
    retrieved: list[Span], truth: list[Span], k: int | None, convention: str, missing: int
) -> None:
    for value in values(retrieved, truth, k, convention, missing).values():  # type: ignore[arg-type]
        assert 0.0 <= value <= 1.0


@settings(max_examples=100, deadline=None)
@given(truth=st.lists(spans.filter(lambda s: s.end > s.start), min_size=1, max_size=4))
def test_retrieving_exactly_the_ground_truth_scores_1(truth: list[Span]) -> None:
    assert values(list(truth), list(truth)) == dict.fromkeys(MEASURES, 1.0)


@settings(max_examples=100, deadline=None)
@given(
    retrieved=st.lists(spans, min_size=1, max_size=8),
    truth=st.lists(spans, max_size=4),
    k=st.integers(1, 8),
    data=st.data(),
)
def test_order_within_and_beyond_the_cut_off_does_not_matter(
    retrieved: list[Span], truth: list[Span], k: int, data: st.DataObject
) -> None:
    head = data.draw(st.permutations(retrieved[:k]))
    tail = data.draw(st.permutations(retrieved[k:]))
    for convention in ("union", "chroma"):
        assert values(head + tail, truth, k, convention) == values(retrieved, truth, k, convention)


def test_span_metrics_options_are_validated() -> None:
    with pytest.raises(ValueError, match="unit"):
        SpanMetrics(unit="words")
    with pytest.raises(ValueError, match="convention"):
        SpanMetrics(convention="ragas")


def test_huge_offsets_in_many_documents_stay_exact() -> None:
    # Numbered sparsely, (record x document) pairs x offsets would overflow 64 bits and records
    # 0 and 4096 (same document, same offsets) would share positions: the core numbers only the
    # pairs present, and gives the reference's values.
    far = 2**40 - 1  # the stride is then 2**40
    records = [
        RecordSpans(
            (Span(f"doc{b % 4096}", far - 10, far - 4), Span(f"doc{b % 4096}", far - 6, far)),
            (Span(f"doc{b % 4096}", far - 8 + b % 2, far - 2),),
        )
        for b in range(4097)
    ]
    batch = SpanBatch.from_records(records)
    for name in MEASURES:
        measure = make_measure(name, 1)
        assert measure.values(batch).tolist() == [measure(r) for r in records]
    assert make_measure("span_recall", 1).values(batch).tolist()[4096] == 4 / 6


def test_offsets_too_large_for_64_bits_are_an_error() -> None:
    far = 2**61
    records = [
        RecordSpans((Span(f"d{b}", far, far + 1),), (Span(f"d{b}", far, far + 1),))
        for b in range(3)
    ]
    with pytest.raises(ValueError, match="smaller batch_size"):
        make_measure("span_recall", 1).values(SpanBatch.from_records(records))


def test_span_measures_put_in_a_convention_keep_their_options() -> None:
    from ctxeval.metrics.measures import in_span_convention

    assert in_span_convention(
        ["ndcg@5", "span_iou(unit='tokens')@200w", "span_recall(convention='chroma')"], "chroma"
    ) == [
        "ndcg@5",
        "span_iou(convention='chroma', unit='tokens')@200w",
        "span_recall(convention='chroma')",
    ]
