"""Span measures in the tokens of a token counter (``unit="tokens"``): hand-computed values,
reference == core exactly, properties, and the user's path (errors included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator, SpanMetrics
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.spans.core import SpanBatch, span_totals
from ctxeval.metrics.spans.reference import span_counts
from ctxeval.records.values import Span

DOCS = {
    "a": "alpha beta gamma delta epsilon zeta eta theta iota kappa",
    "b": "un deux trois quatre cinq six sept huit neuf dix onze douze",
}


def words(text: str) -> int:
    return len(text.split())


def vowels(text: str) -> int:  # not additive, not monotone in odd ways: a stress test
    return sum(text.count(v) for v in "aeiou") // 2


def spans_in(retrieved: list[Span | None], truth: list[Span], counter: Any = words) -> RecordSpans:
    return RecordSpans(tuple(retrieved), tuple(truth), 0, None, counter, DOCS)


def both(spans: RecordSpans, kept: int, extra: int = 0, convention: Any = "union") -> list[int]:
    """The counts from the reference, checked equal to the core's."""
    reference = list(span_counts(spans, kept, extra, convention))
    batch = SpanBatch.from_records([spans])
    core = span_totals(batch, np.array([kept]), np.array([extra]), convention).tolist()[0]
    assert core == reference
    return reference


# -- hand-computed -------------------------------------------------------------------------------


def test_each_set_is_counted_over_its_maximal_runs() -> None:
    # R = "alpha beta ga" [0, 13), G = "beta gamma" [6, 16)
    spans = spans_in([Span("a", 0, 13)], [Span("a", 6, 16)])
    # |R ∩ G| = words("beta ga") = 2, |R| = 3, |G| = 2, |R ∪ G| = words("alpha beta gamma") = 3
    assert both(spans, 1) == [2, 3, 2, 3]


def test_touching_chunks_are_one_run_but_a_gap_splits_a_word() -> None:
    # [0, 8) "alpha be" and [8, 13) "ta ga" touch: one run "alpha beta ga", 3 words.
    assert both(spans_in([Span("a", 0, 8), Span("a", 8, 13)], []), 2)[1] == 3
    # [0, 8) and [9, 13) "a ga" do not: "alpha be" (2) + "a ga" (2) = 4; "beta" counts twice.
    assert both(spans_in([Span("a", 0, 8), Span("a", 9, 13)], []), 2)[1] == 4
    # The offset-based unit (rouge: tokens that start in the set) counts beta once: 3.
    starts = {"a": frozenset(i for i in range(len(DOCS["a"])) if i == 0 or DOCS["a"][i - 1] == " ")}
    offsets = RecordSpans((Span("a", 0, 8), Span("a", 9, 13)), (), 0, starts)
    assert span_counts(offsets, 2)[1] == 3


def test_pieces_that_cut_a_word_never_count_more_than_the_sets() -> None:
    # G = "gamma" [11, 16); R = "g" [11, 12) and "ma" [14, 16): pieces "g" and "ma" are two
    # words, G one: the intersection is capped at |G| (and |R|), so recall is 1, not 2; and
    # R ∪ G ("gamma", 1 word) is counted as at least |R| (2).
    spans = spans_in([Span("a", 11, 12), Span("a", 14, 16)], [Span("a", 11, 16)])
    assert both(spans, 2) == [1, 2, 1, 2]


def test_chroma_convention_with_a_counter() -> None:
    # chunks "alpha beta" [0, 10) and "beta gamma" [6, 16) overlap; G = "gamma delta" [11, 22)
    spans = spans_in([Span("a", 0, 10), Span("a", 6, 16)], [Span("a", 11, 22)])
    # I = "gamma" (1); retrieved sum 2 + 2; excerpt 2; its part not retrieved " delta" (1)
    assert both(spans, 2, convention="chroma") == [1, 4, 2, 5]
    assert both(spans, 2) == [1, 3, 2, 4]  # union: R = "alpha beta gamma", R ∪ G 4 words


def test_unlocated_excerpts_are_counted_with_the_counter() -> None:
    result = RetrievalEvaluator(
        [
            {
                "id": "q",
                "retrieved_context": ["beta gamma"],
                "ground_truth_context": ["gamma delta", "not in the corpus at all"],
            }
        ],
        ["span_recall(unit='tokens')", "span_precision(unit='tokens')"],
        corpus=DOCS,
        token_counter=words,
        workers=1,
    ).run()
    row = result.per_query[0]
    assert row["span_recall(unit='tokens')"] == 1 / (2 + 6)  # 6 words not located
    assert row["span_precision(unit='tokens')"] == 1 / 2


# -- the user's path ------------------------------------------------------------------------------

RECORD = {"id": "q", "retrieved_context": ["alpha beta ga"], "ground_truth_context": ["beta gamma"]}


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_the_evaluators_token_counter_measures_spans(implementation: str) -> None:
    calls: list[str] = []

    def counter(text: str) -> int:
        calls.append(text)
        return words(text)

    result = RetrievalEvaluator(
        [RECORD],
        ["span_precision(unit='tokens')", "span_iou(unit='tokens')"],
        corpus=DOCS,
        token_counter=counter,
        implementation=implementation,
        workers=1,
    ).run()
    assert result.aggregate["span_precision(unit='tokens')"] == 2 / 3
    assert result.aggregate["span_iou(unit='tokens')"] == 2 / 3
    assert "alpha beta ga" in calls  # the counter saw the texts of the runs


def test_a_named_counter_and_the_metric_object() -> None:
    metric = SpanMetrics(unit="tokens")
    got = metric(
        retrieved_context=["alpha beta ga"],
        ground_truth_context=["beta gamma"],
        corpus=DOCS,
        token_counter=words,
    )
    assert got["span_precision"] == 2 / 3
    # the default counter is rouge's tokenizer: "ga" is a token of "alpha beta ga"
    assert (
        metric(
            retrieved_context=["alpha beta ga"], ground_truth_context=["beta gamma"], corpus=DOCS
        )["span_precision"]
        == 2 / 3
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: SpanMetrics(unit=words),  # type: ignore[arg-type]
            "SpanMetrics(unit=<a callable>): a token counter is the run's, not the metric's: "
            "use SpanMetrics(unit='tokens')",
        ),
        (
            lambda: RetrievalEvaluator([RECORD], ["span_recall(unit='tokens')"], workers=1).run(),
            "span unit 'tokens' counts the tokens of the documents; give the corpus",
        ),
        (
            lambda: SpanMetrics(unit="tokens")(
                retrieved_context=["a"], ground_truth_context=["b"], corpus=DOCS, token_counter=3
            ),
            "SpanMetrics(...)(token_counter=...): 3 is not a token counter",
        ),
        (
            lambda: RetrievalEvaluator(
                [RECORD], ["span_recall(unit='tokens')"], corpus=DOCS, token_counter=lambda s: -1
            ).run(),
            "token_counter returned -1 for a text",
        ),
    ],
)
def test_errors_name_the_argument_and_the_fix(make: Any, message: str) -> None:
    with pytest.raises((InvalidArgumentError, TypeError), match=None) as caught:
        make()
    assert message in str(caught.value)


# -- twins and properties -------------------------------------------------------------------------

intervals = st.builds(
    lambda doc, start, width: Span(doc, start, start + width),
    st.sampled_from("ab"),
    st.integers(0, 40),
    st.integers(0, 14),  # every span within its document (56 and 59 characters)
)
records = st.lists(
    st.tuples(
        st.lists(st.one_of(intervals, st.none()), max_size=6),
        st.lists(intervals, max_size=3),
        st.integers(0, 6),
        st.integers(0, 12),
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(
    records=records,
    counter=st.sampled_from([words, vowels, len]),
    convention=st.sampled_from(["union", "chroma"]),
)
def test_reference_equals_core(records: list[Any], counter: Any, convention: Any) -> None:
    spans = [
        RecordSpans(tuple(r), tuple(g), missing, None, counter, DOCS)
        for r, g, _, _, missing in records
    ]
    kept = np.array([n for _, _, n, _, _ in records], dtype=np.int64)
    extra = np.array([e for _, _, _, e, _ in records], dtype=np.int64)
    batch = SpanBatch.from_records(spans)
    core = span_totals(batch, np.minimum(kept, batch.n), extra, convention).tolist()
    reference = [
        list(span_counts(s, min(int(n), len(s.retrieved)), int(e), convention))
        for s, n, e in zip(spans, kept, extra, strict=True)
    ]
    assert core == reference


@settings(max_examples=100, deadline=None)
@given(records=records, convention=st.sampled_from(["union", "chroma"]))
def test_len_as_the_counter_equals_characters(records: list[Any], convention: Any) -> None:
    for r, g, n, e, missing in records:
        counted = RecordSpans(tuple(r), tuple(g), missing, None, len, DOCS)
        plain = RecordSpans(tuple(r), tuple(g), missing)
        kept = min(n, len(r))
        assert span_counts(counted, kept, e, convention) == span_counts(plain, kept, e, convention)


@settings(max_examples=100, deadline=None)
@given(records=records, counter=st.sampled_from([words, vowels]))
def test_values_stay_between_0_and_1(records: list[Any], counter: Any) -> None:
    for r, g, n, e, missing in records:
        c = span_counts(RecordSpans(tuple(r), tuple(g), missing, None, counter, DOCS), n, e)
        assert 0 <= c.intersection <= min(c.precision_denominator, c.recall_denominator)
        assert c.intersection <= c.iou_denominator
        assert max(c.precision_denominator, c.recall_denominator) <= c.iou_denominator
