"""Locating texts in a corpus: exact, normalised, fuzzy, or not at all (counted)."""

from __future__ import annotations

import pytest

from ctxeval.judging.spans import locate_record
from ctxeval.records.model import Record
from ctxeval.records.values import Span
from ctxeval.text.locate import Locator, normalise

CORPUS = {
    "one": "The assert statement.\n\nIt checks   a condition at run time.",
    "two": "Lists are mutable sequences; tuples are immutable sequences.",
    "three": "Ünïcödé first — then the assert statement again.",
}


def test_exact_first_and_the_named_document_first() -> None:
    locator = Locator(CORPUS)
    found = locator.locate("the assert statement")
    assert found.how == "exact"
    assert found.span == Span("three", 21, 41)  # after 21 characters (not bytes)
    assert CORPUS["three"][found.span.start : found.span.end] == "the assert statement"
    # Named document first, even when another document holds the text too.
    assert locator.locate("assert statement", "three").span.doc == "three"  # type: ignore[union-attr]
    assert locator.locate("assert statement").span.doc == "one"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "it checks a condition at run time.",  # case
        "It checks a condition at run time.",  # whitespace run in the document
        "It  checks\ta condition\nat run time.",  # whitespace in the text
        "THE ASSERT STATEMENT. IT CHECKS A CONDITION",  # across a blank line
    ],
)
def test_whitespace_and_case_variants_are_located_normalised(text: str) -> None:
    found = Locator(CORPUS).locate(text)
    assert found.how == "normalised"
    assert found.span is not None
    located = CORPUS[found.span.doc][found.span.start : found.span.end]
    assert normalise(located)[0] == normalise(text)[0].strip()


def test_fuzzy_location_above_the_threshold() -> None:
    found = Locator(CORPUS).locate("Lists are mutabel sequences; tuples are imutable")
    assert found.how == "fuzzy"
    assert found.span is not None
    assert found.span.doc == "two"
    assert CORPUS["two"][found.span.start : found.span.end].startswith("Lists are mut")


def test_below_the_threshold_is_not_located() -> None:
    locator = Locator(CORPUS, threshold=99)
    assert locator.locate("Lists are mutabel sequences").how == "unlocated"
    assert Locator(CORPUS).locate("something else entirely, about cheese").span is None
    assert Locator(CORPUS).locate("   ").how == "unlocated"


def test_each_distinct_text_is_located_once() -> None:
    locator = Locator(CORPUS)
    assert locator.locate("mutable sequences") is locator.locate("mutable sequences")


def test_threshold_is_validated() -> None:
    for bad in (0, 101, "90", True):
        with pytest.raises(ValueError, match="fuzzy_threshold"):
            Locator(CORPUS, threshold=bad)  # type: ignore[arg-type]


def record(**fields: object) -> Record:
    defaults: dict[str, object] = {
        "index": 3,
        "id": "q3",
        "location": "runs.jsonl:4",
        "mode": "text",
        "retrieved": [
            "mutable sequences",
            "not in the corpus at all, zzz",
            "IT CHECKS a condition",
        ],
        "ground_truth": ["tuples are immutable", "also missing, qqq"],
    }
    return Record(**{**defaults, **fields})  # type: ignore[arg-type]


def test_a_record_counts_how_each_text_was_settled() -> None:
    located = locate_record(record(), Locator(CORPUS))
    # given, exact, normalised, fuzzy, unlocated
    assert located.counts == (0, 2, 1, 0, 2)
    assert located.retrieved[1] is None
    assert located.missing_truth == ("also missing, qqq",)
    assert located.unlocated == (
        ("retrieved_spans[1]", "not in the corpus at all, zzz"),
        ("ground_truth_spans[1]", "also missing, qqq"),
    )


def test_given_spans_are_checked_against_the_corpus() -> None:
    good = Span("two", 0, 5)
    assert (
        locate_record(record(retrieved=["Lists"], retrieved_spans=[good]), Locator(CORPUS)).counts[
            0
        ]
        == 1
    )
    with pytest.raises(ValueError, match=r"retrieved_spans\[0\] is 'two'\[1:6\].*fix the offsets"):
        locate_record(
            record(retrieved=["Lists"], retrieved_spans=[Span("two", 1, 6)]), Locator(CORPUS)
        )
    with pytest.raises(ValueError, match="'four', which is not in the corpus"):
        locate_record(
            record(retrieved=["Lists"], retrieved_spans=[Span("four", 0, 5)]), Locator(CORPUS)
        )


def test_without_spans_or_corpus_the_record_is_bad() -> None:
    with pytest.raises(
        ValueError,
        match=r"runs.jsonl:4: span metrics need .* no retrieved_spans.*\(corpus=\.\.\.\)",
    ):
        locate_record(record(), None)
    # Spans given without a corpus are trusted; a null one is unlocated, and counted.
    located = locate_record(
        record(
            retrieved=["a", "b"],
            retrieved_spans=[Span("x", 0, 1), None],
            ground_truth=["a"],
            ground_truth_spans=[Span("x", 0, 1)],
        ),
        None,
    )
    assert located.counts == (2, 0, 0, 0, 1)
