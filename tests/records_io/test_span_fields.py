"""Span fields of text records: read from any field name ctxeval knows, validated with messages
that name the record, the field and the fix, and written back by convert."""

from __future__ import annotations

from typing import Any

import pytest

from ctxeval.io.convert import record_to_dict
from ctxeval.io.readers import read_records
from ctxeval.records.model import Record, RecordError
from ctxeval.records.values import Span

BASE: dict[str, Any] = {
    "id": "q1",
    "retrieved_context": ["abc", "def"],
    "ground_truth_context": ["abc"],
}
GOOD = [{"doc": "d", "start": 0, "end": 3}, None]


def read_one(**fields: Any) -> Record | RecordError:
    (item,) = read_records([{**BASE, **fields}])
    return item


@pytest.mark.parametrize("name", ["retrieved_spans", "retrieved_context_spans"])
def test_span_fields_are_detected_and_kept_out_of_metadata(name: str) -> None:
    record = read_one(**{name: GOOD}, ground_truth_spans='[{"doc": "d", "start": 0, "end": 3}]')
    assert isinstance(record, Record)
    assert record.retrieved_spans == [Span("d", 0, 3), None]
    assert record.ground_truth_spans == [Span("d", 0, 3)]  # a JSON string: a CSV cell
    assert record.metadata == {}
    written = record_to_dict(record)
    assert written["retrieved_spans"] == GOOD
    assert read_one(**{k: v for k, v in written.items() if k != "id"}) == record


def test_absent_span_fields_leave_the_record_without_spans() -> None:
    record = read_one(retrieved_spans=None, ground_truth_spans="")
    assert isinstance(record, Record)
    assert (record.retrieved_spans, record.ground_truth_spans) == (None, None)
    assert "retrieved_spans" not in record_to_dict(record)


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ([GOOD[0]], "retrieved_spans has 1 span(s) but retrieved_context has 2 text(s)"),
        ([{"doc": "d", "start": 5, "end": 3}, None], "retrieved_spans[0]: start 5 is after end 3"),
        ([{"doc": "d", "start": -1, "end": 3}, None], "start must be a whole number >= 0"),
        ([{"doc": "d", "start": 1.5, "end": 3}, None], "start must be a whole number >= 0"),
        ([{"doc": 7, "start": 0, "end": 3}, None], "doc must be a document name"),
        ([[0, 3], None], "retrieved_spans[0] is list [0, 3]; a span is an object like"),
        ("[{oops", "retrieved_spans must be a JSON list of spans"),
        ({"doc": "d"}, "retrieved_spans must be a list of spans"),
    ],
)
def test_bad_spans_are_reported_with_the_fix(spans: object, message: str) -> None:
    error = read_one(retrieved_spans=spans)
    assert isinstance(error, RecordError)
    assert error.field == "retrieved_spans"
    assert message in str(error)
    assert str(error).startswith("record 0 (record 'q1'): ")


def test_two_names_for_one_span_field_is_an_error() -> None:
    error = read_one(retrieved_spans=GOOD, retrieved_context_spans=GOOD)
    assert isinstance(error, RecordError)
    assert "'retrieved_spans', 'retrieved_context_spans' could each be" in error.message
