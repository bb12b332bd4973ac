"""Plain records checked a batch at a time (``io/plain.py``) give exactly what the record-by-record
reader gives: the same records, the same errors with the same messages, the same duplicates, in
text mode and in ID mode.

A list is read a batch at a time; the same dicts handed over by a generator (a stream, never
read ahead) are read record by record. Both must agree on any mix of plain and bad records.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.io import stream as stream_module
from ctxeval.io.readers import read_records
from ctxeval.records.model import Record, RecordError

DEEP: list[Any] = []
for _ in range(120):  # deeper than records.checks.MAX_DEPTH: a bad record
    DEEP = [DEEP]

# Each change makes a plain record not plain (some make it a bad record, some a good one that
# the record-by-record reader checks further).
CHANGES: list[tuple[str, Any]] = [
    ("id", " "),
    ("id", ""),
    ("id", 7),
    ("id", None),
    ("id", ["q"]),
    ("ground_truth_context", []),
    ("ground_truth_context", ["a", " "]),
    ("ground_truth_context", "a b"),
    ("ground_truth_context", [{"text": "a", "grade": 2}]),
    ("retrieved_context", ["a", 3]),
    ("retrieved_context", None),
    ("retrieved_context", ("a",)),
    ("retrieved_spans", [{"doc": "d", "start": 0, "end": 1}]),
    ("retrieved_scores", [0.5]),
    ("retrieved_spans", None),
    ("ground_truth_spans", ""),
    ("retrieved_scores", None),
    ("tags", ["x", ["y"]]),
    ("tags", {"a": 1}),
    ("tags", DEEP),
    ("qid", "q9"),
    ("question", "c\u00e9"),
    ("question", None),
]


@st.composite
def record(draw: Any, with_ids: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if with_ids:
        out["id"] = draw(st.sampled_from(["q1", "q2", "q3", "q4", "q5"]))
    out["retrieved_context"] = draw(st.lists(st.sampled_from(["a b", "c\u00e9"]), max_size=3))
    out["ground_truth_context"] = draw(st.lists(st.just("a b"), min_size=1, max_size=2))
    if draw(st.booleans()):
        field, value = draw(st.sampled_from(CHANGES))
        if draw(st.booleans()) and field in out:
            del out[field]  # a field missing
        else:
            out[field] = value
    return out


# Each change makes a plain ID record not plain (a bad record, or a good one checked further).
ID_CHANGES: list[tuple[str, Any]] = [
    ("id", " "),
    ("id", 7),
    ("retrieved_ids", ["a", 3]),
    ("retrieved_ids", ["a", True]),
    ("retrieved_ids", "a"),
    ("retrieved_ids", None),
    ("qrels", ["a", "b"]),
    ("qrels", {}),
    ("qrels", {"a": True}),
    ("qrels", {"a": float("nan")}),
    ("qrels", {"a": float("inf")}),
    ("qrels", {"a": 1001}),
    ("qrels", {"a": -2.5}),
    ("qrels", {"a": "1"}),
    ("qrels", {"a": 10**400}),
    ("qrels", {"a": [1]}),
    ("retrieved_scores", [0.5]),
    ("retrieved_spans", None),
    ("tags", DEEP),
    ("question", "c\u00e9"),
]


@st.composite
def id_record(draw: Any, with_ids: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if with_ids:
        out["id"] = draw(st.sampled_from(["q1", "q2", "q3", "q4", "q5"]))
    out["retrieved_ids"] = draw(st.lists(st.sampled_from(["a", "b", "c\u00e9"]), max_size=3))
    grades = st.one_of(st.integers(0, 3), st.sampled_from([0.5, 2.0]))
    out["qrels"] = draw(st.dictionaries(st.sampled_from(["a", "b", "d"]), grades, min_size=1))
    if draw(st.booleans()):
        field, value = draw(st.sampled_from(ID_CHANGES))
        if draw(st.booleans()) and field in out:
            del out[field]
        else:
            out[field] = value
    return out


def _generated(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from records


def _read(source: Any) -> list[Any]:
    """Every item read, as comparable values: its repr (so 1 and 1.0 differ), or an
    exception's type and message."""
    try:
        return list(map(repr, read_records(source)))
    except Exception as exc:
        return [type(exc), str(exc)]


def _records(kind: Any) -> Any:
    return st.booleans().flatmap(lambda ids: st.lists(kind(ids), min_size=1, max_size=40))


@settings(max_examples=300, deadline=None)
@given(
    records=st.one_of(_records(record), _records(id_record)),
    batch=st.sampled_from([1, 3, 256]),
)
def test_batches_read_as_record_by_record(records: list[dict[str, Any]], batch: int) -> None:
    # A list is read in batches, the same dicts from a generator one by one; a JSONL file by
    # its path in batches, the same file open (a stream) one by one.
    original = stream_module.BATCH
    stream_module.BATCH = batch
    try:
        _assert_read_alike(records)
    finally:
        stream_module.BATCH = original


def _assert_read_alike(records: list[dict[str, Any]]) -> None:
    """A list and a generator of ``records`` read alike, and so do a JSONL file of them by its
    path and open."""
    assert _read(records) == _read(_generated(records))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "r.jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        by_path = _read(str(path))
        with open(path) as file:
            assert by_path == _read(file)


def test_a_plain_batch_gives_the_records_by_hand() -> None:
    records = [
        {"id": "q1", "retrieved_context": ["a", "b"], "ground_truth_context": ["a"], "k": 1},
        {"id": "q2", "retrieved_context": [], "ground_truth_context": ["b"]},
        {"id": "q1", "retrieved_context": ["c"], "ground_truth_context": ["c"]},
    ]
    first, second, third = read_records(records)
    assert first == Record(0, "q1", "record 0", "text", ["a", "b"], ["a"], {"k": 1})
    assert second == Record(1, "q2", "record 1", "text", [], ["b"], {})
    assert isinstance(third, RecordError)
    assert third.message == (
        "duplicate id 'q1', first seen at record 0; ids must be unique within a dataset: "
        "rename or remove one of the records"
    )
    assert (third.index, third.id, third.field) == (2, "q1", "id")


def test_a_record_is_not_changed_by_its_batch(tmp_path: Path) -> None:
    # The lists of a record are its own: changing the input afterwards changes no record.
    records = [{"retrieved_context": ["a"], "ground_truth_context": ["a"]} for _ in range(5)]
    read = list(read_records(records))
    records[0]["retrieved_context"].append("b")
    assert read[0].retrieved == ["a"]  # type: ignore[union-attr]
    # A file is read a batch at a time too, with the same records as the list.
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records[1:]))
    from_file = list(read_records(path))
    assert [r.retrieved for r in from_file] == [["a"]] * 4  # type: ignore[union-attr]
    assert [r.location for r in from_file] == [f"{path}:{n}" for n in range(1, 5)]


def test_a_stream_is_not_read_ahead_but_a_list_is() -> None:
    taken: list[int] = []

    def produced(n: int) -> Iterator[dict[str, Any]]:
        for i in range(n):
            taken.append(i)
            yield {"retrieved_context": ["a"], "ground_truth_context": ["a"]}

    stream = read_records(produced(1000))
    next(stream)
    next(stream)
    assert len(taken) == 2
    # A list is read a batch ahead once the first record has settled the fields: a change to
    # a later item after that is not seen (each record copies its lists when it is built).
    items = [{"retrieved_context": ["a"], "ground_truth_context": ["a"]} for _ in range(10)]
    listed = read_records(items)
    next(listed)
    next(listed)
    items[5]["retrieved_context"] = ["changed"]
    assert [r.retrieved for r in listed][3] == ["a"]  # type: ignore[union-attr]


def test_an_iterable_that_refills_one_dict_is_not_read_ahead() -> None:
    # Found in review: a sized iterable (a cursor) may hand out one dict, refilled for each row;
    # read a batch ahead, every record would be its last row.
    class Cursor:
        def __len__(self) -> int:
            return 4

        def __iter__(self) -> Iterator[dict[str, Any]]:
            row: dict[str, Any] = {}
            for i in range(4):
                row.clear()
                row.update(id=f"q{i}", retrieved_context=[f"t{i}"], ground_truth_context=[f"t{i}"])
                yield row

    read = list(read_records(Cursor()))
    assert [r.id for r in read] == ["q0", "q1", "q2", "q3"]
    assert all(isinstance(r, Record) for r in read)
    assert [r.retrieved for r in read] == [["t0"], ["t1"], ["t2"], ["t3"]]  # type: ignore[union-attr]


PLAIN_TEXT = {"id": "q1", "retrieved_context": ["a b", "c\u00e9"], "ground_truth_context": ["a b"]}
PLAIN_IDS = {"id": "q1", "retrieved_ids": ["a", "c\u00e9"], "qrels": {"a": 1, "b": 0.5}}
EVERY_CHANGE = [
    (plain, field, value, delete)
    for plain, changes in ((PLAIN_TEXT, CHANGES), (PLAIN_IDS, ID_CHANGES))
    for field, value in changes
    for delete in (False, True)
    if not delete or field in plain
]


@pytest.mark.parametrize(("plain", "field", "value", "delete"), EVERY_CHANGE)
def test_every_change_reads_as_record_by_record(
    plain: dict[str, Any], field: str, value: Any, delete: bool
) -> None:
    # One changed record between plain ones (ids q0, q1, q2), with and without ids.
    changed = {k: v for k, v in plain.items() if not (delete and k == field)}
    if not delete:
        changed[field] = value
    records = [{**plain, "id": "q0"}, changed, {**plain, "id": "q2"}]
    for with_ids in (True, False):
        batch = (
            records if with_ids else [{k: v for k, v in r.items() if k != "id"} for r in records]
        )
        _assert_read_alike(batch)
