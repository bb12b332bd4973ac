"""Span measures at size budgets under both policies: hand-computed values, the truncated span
(reference == core, exactly), and properties of whole runs (the command line:
tests/cli/test_cli_span_budgets.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.spans.core import SpanBatch, span_totals, truncate_batch
from ctxeval.metrics.spans.reference import span_counts, truncate_spans
from ctxeval.records.values import Span
from ctxeval.results import EvaluationResult

SPAN_MEASURES = ["span_precision", "span_recall", "span_iou", "span_f1"]
DOC = "aaaa bbbb cccc dddd eeee ffff"  # words start at 0, 5, 10, 15, 20, 25
CORPUS = {"doc": DOC}
RECORD = {
    "id": "q1",
    "retrieved_context": ["aaaa bbbb", "cccc dddd eeee"],  # [0, 9) and [10, 24)
    "ground_truth_context": ["dddd"],  # [15, 19)
}


def run(data: list[dict[str, Any]], k: Any, **options: Any) -> EvaluationResult:
    options.setdefault("workers", 1)
    return RetrievalEvaluator(data, SPAN_MEASURES, **options).run(k=k)


# -- hand-computed -------------------------------------------------------------------------------


def test_a_word_budget_under_both_policies() -> None:
    # 4w: the first chunk (2 words) fits; the second (3 words) crosses the budget.
    whole = run([RECORD], "4w", corpus=CORPUS).per_query[0]
    # whole: R = [0, 9), no overlap with G.
    assert whole["span_recall@4w"] == 0.0
    assert whole["span_precision@4w"] == 0.0
    truncated = run([RECORD], "4w", corpus=CORPUS, budget_policy="truncate").per_query[0]
    # truncate: 2 more words fit, "cccc dddd" (9 characters): R = [0, 9) + [10, 19) covers G.
    assert truncated["span_recall@4w"] == 1.0
    assert truncated["span_precision@4w"] == 4 / 18
    assert truncated["span_iou@4w"] == 4 / 18
    assert truncated["span_f1@4w"] == 2 * (4 / 18) / (1 + 4 / 18)


def test_a_character_budget_and_the_micro_sums() -> None:
    other = {"id": "q2", "retrieved_context": ["dddd eeee"], "ground_truth_context": ["eeee"]}
    result = run([RECORD, other], "12c", corpus=CORPUS, budget_policy="truncate")
    q1, q2 = result.per_query
    # q1: 9 characters whole, then 3 of the next: R = [0, 9) + [10, 13); G = [15, 19).
    assert q1["span_recall@12c"] == 0.0
    assert q1["span_precision@12c"] == 0.0
    # q2: "dddd eeee" fits whole (9 <= 12): R = [15, 24) covers G = [20, 24).
    assert q2["span_recall@12c"] == 1.0
    assert q2["span_precision@12c"] == 4 / 9
    # micro: (0 + 4) / (12 + 9) retrieved characters, (0 + 4) / (4 + 4) ground truth.
    assert result.aggregate["micro_span_precision@12c"] == 4 / 21
    assert result.aggregate["micro_span_recall@12c"] == 4 / 8


def test_chroma_convention_counts_the_truncated_chunk_as_cut() -> None:
    data = [RECORD]
    result = RetrievalEvaluator(
        data,
        ["span_precision(convention='chroma')", "span_iou(convention='chroma')"],
        corpus=CORPUS,
        budget_policy="truncate",
        workers=1,
    ).run(k="4w")
    row = result.per_query[0]
    # the retrieved sum: 9 + 9 (the truncated chunk); nothing of G is left out.
    assert row["span_precision(convention='chroma')@4w"] == 4 / 18
    assert row["span_iou(convention='chroma')@4w"] == 4 / 18


@pytest.mark.parametrize(
    ("span_end", "recall", "precision"),
    [
        (30, 1.0, 4 / 18),  # a span longer than its text: its first 9 characters, [10, 19)
        (24, 1.0, 4 / 18),  # as long as its text
        (16, 0.25, 1 / 15),  # shorter than what is fed: all of it, [10, 16)
    ],
)
def test_a_span_whose_length_differs_from_its_text(
    span_end: int, recall: float, precision: float
) -> None:
    record = {
        **RECORD,
        "retrieved_spans": [
            {"doc": "doc", "start": 0, "end": 9},
            {"doc": "doc", "start": 10, "end": span_end},
        ],
        "ground_truth_spans": [{"doc": "doc", "start": 15, "end": 19}],
    }
    row = run([record], "4w", budget_policy="truncate").per_query[0]  # no corpus: as given
    assert row["span_recall@4w"] == recall
    assert row["span_precision@4w"] == precision


def test_truncated_spans_hand_computed() -> None:
    spans = RecordSpans((Span("d", 0, 10), None, Span("d", 20, 30)), (Span("d", 22, 26),))
    assert truncate_spans(spans, 2, 4).retrieved[2] == Span("d", 20, 24)
    assert truncate_spans(spans, 2, 40).retrieved[2] == Span("d", 20, 30)
    assert truncate_spans(spans, 2, 0) is spans  # nothing of it is fed
    assert truncate_spans(spans, 1, 4) is spans  # the crossing text was not located
    assert truncate_spans(spans, 3, 4) is spans  # every item is taken whole


# -- twins: reference == core, exactly ------------------------------------------------------------

intervals = st.builds(
    lambda doc, start, width: Span(doc, start, start + width),
    st.sampled_from("ab"),
    st.integers(0, 30),
    st.integers(0, 12),
)
records = st.lists(
    st.tuples(
        st.lists(st.one_of(intervals, st.none()), max_size=6),
        st.lists(intervals, max_size=3),
        st.integers(0, 7),  # kept
        st.integers(0, 15),  # extra
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(records=records, convention=st.sampled_from(["union", "chroma"]))
def test_truncated_batch_equals_truncated_records(
    records: list[tuple[list[Span | None], list[Span], int, int]], convention: Any
) -> None:
    spans = [RecordSpans(tuple(r), tuple(g)) for r, g, _, _ in records]
    kept = np.array([min(n, len(r)) for r, _, n, _ in records], dtype=np.int64)
    extra = np.array([e for _, _, _, e in records], dtype=np.int64)
    fed = kept + (extra > 0)  # the cut-off a budget stands for (BudgetCut.equivalent_k)
    batch = truncate_batch(SpanBatch.from_records(spans), kept, extra)
    core = span_totals(batch, np.minimum(batch.n, fed), None, convention).tolist()
    reference = [
        list(span_counts(truncate_spans(s, int(n), int(e)), s.cut(int(f)), 0, convention))
        for s, n, e, f in zip(spans, kept, extra, fed, strict=True)
    ]
    assert core == reference
    # the truncated spans at that cut-off: the first kept items and extra characters of the next
    direct = [
        list(span_counts(s, int(n), int(e), convention))
        for s, n, e in zip(spans, kept, extra, strict=True)
    ]
    assert reference == direct


# -- whole runs -----------------------------------------------------------------------------------

WORDS = DOC.split()
pieces = st.tuples(st.integers(0, 5), st.integers(1, 3)).map(
    lambda p: " ".join(WORDS[p[0] : p[0] + p[1]])
)
datasets = st.lists(
    st.tuples(st.lists(pieces, max_size=5), st.lists(pieces, min_size=1, max_size=2)),
    min_size=1,
    max_size=4,
).map(
    lambda items: [
        {"id": f"q{i}", "retrieved_context": r, "ground_truth_context": g}
        for i, (r, g) in enumerate(items)
    ]
)
cutoffs = st.lists(
    st.sampled_from([1, 3, "2w", "3w", "5w", "7c", "13c", "2t", "4t"]),
    min_size=1,
    max_size=3,
    unique=True,
)


@settings(max_examples=20, deadline=None)
@given(data=datasets, ks=cutoffs, policy=st.sampled_from(["whole", "truncate"]))
def test_a_sweep_equals_separate_runs(data: list[dict[str, Any]], ks: list[Any], policy: str):
    sweep = run(data, ks, corpus=CORPUS, budget_policy=policy)
    for k in ks:
        alone = run(data, k, corpus=CORPUS, budget_policy=policy)
        for column, value in alone.aggregate.items():
            assert sweep.aggregate[column] == value, column
        for swept, row in zip(sweep.per_query, alone.per_query, strict=True):
            assert {c: swept[c] for c in row} == row


@settings(max_examples=20, deadline=None)
@given(data=datasets, budget=st.sampled_from(["2w", "3w", "5w", "7c", "13c", "2t", "4t"]))
def test_truncate_recalls_at_least_as_much_as_whole(data: list[dict[str, Any]], budget: str):
    whole = run(data, budget, corpus=CORPUS)
    truncated = run(data, budget, corpus=CORPUS, budget_policy="truncate")
    column = f"span_recall@{budget}"
    for w, t in zip(whole.per_query, truncated.per_query, strict=True):
        assert t[column] >= w[column]
    assert truncated.aggregate[f"micro_{column}"] >= whole.aggregate[f"micro_{column}"]


@settings(max_examples=15, deadline=None)
@given(data=datasets, ks=cutoffs)
def test_reference_equals_core_under_truncate(data: list[dict[str, Any]], ks: list[Any]):
    core = run(data, ks, corpus=CORPUS, budget_policy="truncate")
    reference = run(data, ks, corpus=CORPUS, budget_policy="truncate", implementation="reference")
    assert list(reference.per_query) == list(core.per_query)
    assert reference.aggregate == core.aggregate


def test_a_given_span_past_the_end_of_its_document_is_a_bad_record() -> None:
    # doc[20:40] is "eeee ffff" (Python clamps the slice): the text matches, the offsets do not.
    record = {
        "id": "q1",
        "retrieved_context": ["eeee ffff"],
        "ground_truth_context": ["eeee"],
        "retrieved_spans": [{"doc": "doc", "start": 20, "end": 40}],
        "ground_truth_spans": [{"doc": "doc", "start": 20, "end": 24}],
    }
    with pytest.raises(ValueError, match=r"past the end of the document \(29 characters\)"):
        run([record], "4w", corpus=CORPUS)
