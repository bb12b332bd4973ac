"""Reading datasets: every format, field detection, bad records with their locations, streaming.

Files are written in ``tmp_path`` by the tests themselves, so each test shows its input.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxeval.foundation.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
)
from ctxeval.io import (
    SUPPORTED_FORMATS,
    FieldMap,
    Record,
    RecordError,
    ResolvedFields,
    read_records,
    resolve_fields,
)
from ctxeval.records.values import GradedText

RECORDS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "What is the capital of France?",
        "retrieved_context": ["Paris is the capital of France.", "Lyon is a city."],
        "ground_truth_context": ["Paris is the capital of France."],
    },
    {
        "id": "q2",
        "question": "Where is Marseille?",
        "retrieved_context": [],
        "ground_truth_context": ["Marseille is on the Mediterranean coast."],
    },
    {
        "id": "q3",
        "question": "Which river crosses Paris?",
        "retrieved_context": ["The Seine crosses Paris.", "", "The Loire is long."],
        "ground_truth_context": ["The Seine crosses Paris.", "It flows into the Channel."],
    },
]
META = [{"question": r["question"]} for r in RECORDS]


def _collect(source: Any, **options: Any) -> list[Record | RecordError]:
    return list(read_records(source, **options))


def _records(source: Any, **options: Any) -> list[Record]:
    items = _collect(source, **options)
    errors = [str(item) for item in items if isinstance(item, RecordError)]
    assert not errors, errors
    return [item for item in items if isinstance(item, Record)]


def _errors(source: Any, **options: Any) -> list[RecordError]:
    return [item for item in _collect(source, **options) if isinstance(item, RecordError)]


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _write_csv(path: Path, rows: list[dict[str, Any]], encode: tuple[str, ...]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: json.dumps(v) if k in encode else v for k, v in row.items()})
    return path


def _check_text_records(records: list[Record], locations: list[str]) -> None:
    assert [r.index for r in records] == [0, 1, 2]
    assert [r.id for r in records] == ["q1", "q2", "q3"]
    assert [r.mode for r in records] == ["text"] * 3
    assert [r.retrieved for r in records] == [r["retrieved_context"] for r in RECORDS]
    assert [r.ground_truth for r in records] == [r["ground_truth_context"] for r in RECORDS]
    assert [r.metadata for r in records] == META
    assert [r.location for r in records] == locations


# ---------------------------------------------------------------------------------------------
# Formats


def test_jsonl_round_trip(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", RECORDS)
    _check_text_records(_records(path), [f"{path}:1", f"{path}:2", f"{path}:3"])


def test_ndjson_and_str_path(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "run.ndjson", RECORDS)
    _check_text_records(_records(str(path)), [f"{path}:1", f"{path}:2", f"{path}:3"])


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(RECORDS, id="list"),
        pytest.param({"records": RECORDS, "name": "demo"}, id="records"),
        pytest.param({"data": RECORDS, "version": 2}, id="data"),
    ],
)
def test_json_round_trip(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    _check_text_records(_records(path), [f"{path}[0]", f"{path}[1]", f"{path}[2]"])


def test_csv_round_trip(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "run.csv", RECORDS, encode=("retrieved_context", "ground_truth_context")
    )
    _check_text_records(_records(path), [f"{path}:row 1", f"{path}:row 2", f"{path}:row 3"])


def test_csv_written_by_pandas_with_line_breaks_and_bom(tmp_path: Path) -> None:
    frame = pd.DataFrame(RECORDS)
    frame["question"] = ["What is\nthe capital?", "Where, exactly?", 'A "quoted" one']
    for column in ("retrieved_context", "ground_truth_context"):
        frame[column] = frame[column].map(json.dumps)
    path = tmp_path / "run.csv"
    frame.to_csv(path, index=False, encoding="utf-8-sig")
    records = _records(path)
    assert [r.metadata["question"] for r in records] == list(frame["question"])
    assert [r.retrieved for r in records] == [r["retrieved_context"] for r in RECORDS]
    # Row numbers count records, not file lines: the line break in row 1 does not shift row 2.
    assert records[1].location == f"{path}:row 2"


def test_csv_keeps_id_and_metadata_cells_as_text(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text(
        'qid,retrieved_ids,relevant_ids,score\n007,"[1, ""c2""]","[1]",0.5\n', encoding="utf-8"
    )
    (record,) = _records(path)
    assert record.id == "007"
    assert record.metadata == {"score": "0.5"}
    assert record.retrieved == ["1", "c2"]
    assert record.ground_truth == {"1": 1.0}


def test_parquet_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), path)
    _check_text_records(_records(path), [f"{path}:row 1", f"{path}:row 2", f"{path}:row 3"])


def test_parquet_streams_batches_across_boundaries(tmp_path: Path) -> None:
    rows = [
        {"id": f"q{i}", "retrieved_ids": [f"c{i}"], "relevant_ids": [f"c{i}"]} for i in range(2500)
    ]
    path = tmp_path / "big.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    records = _records(path)
    assert [r.id for r in records] == [f"q{i}" for i in range(2500)]
    assert records[-1].location == f"{path}:row 2500"


def test_parquet_qrels_as_map_and_as_pandas_struct(tmp_path: Path) -> None:
    path = tmp_path / "map.parquet"
    table = pa.table(
        {
            "id": ["q1"],
            "retrieved_ids": [["d1", "d2"]],
            "qrels": pa.array([[("d2", 2), ("d9", 0)]], type=pa.map_(pa.string(), pa.int64())),
        }
    )
    pq.write_table(table, path)
    (record,) = _records(path)
    assert record.ground_truth == {"d2": 2.0, "d9": 0.0}

    # pandas writes a column of dicts as a struct of every key, null where a row lacks one.
    frame = pd.DataFrame(
        {"id": ["q1", "q2"], "retrieved_ids": [["a"], ["b"]], "qrels": [{"a": 2}, {"b": 1}]}
    )
    struct_path = tmp_path / "struct.parquet"
    frame.to_parquet(struct_path)
    assert pa.types.is_struct(pq.read_schema(struct_path).field("qrels").type)
    assert [r.ground_truth for r in _records(struct_path)] == [{"a": 2.0}, {"b": 1.0}]


def test_dataframe_round_trip_uses_index_labels() -> None:
    frame = pd.DataFrame(RECORDS, index=[10, 20, 30])
    _check_text_records(_records(frame), ["row 10", "row 20", "row 30"])


def test_dataframe_values_become_python_values(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "query_id": [1, 2],
            "retrieved_ids": [["c1", "c2"], ["c3"]],
            "relevant_ids": [["c2"], ["c3"]],
            "score": [0.5, 1.5],
            "tags": [["a"], ["b"]],
        }
    )
    path = tmp_path / "ids.parquet"
    frame.to_parquet(path)
    # read_parquet gives numpy arrays for list cells and numpy scalars for numbers.
    records = _records(pd.read_parquet(path))
    assert [r.id for r in records] == ["1", "2"]
    assert records[0].retrieved == ["c1", "c2"]
    assert records[0].ground_truth == {"c2": 1.0}
    assert records[0].metadata == {"score": 0.5, "tags": ["a"]}
    assert type(records[0].metadata["score"]) is float
    json.dumps(records[0].metadata)  # plain Python values, JSON-serializable


def test_iterable_round_trip_is_lazy() -> None:
    pulled: list[int] = []

    def generate() -> Iterator[dict[str, Any]]:
        for i, row in enumerate(RECORDS):
            pulled.append(i)
            yield row

    stream = read_records(generate())
    first = next(stream)
    assert pulled == [0]
    assert isinstance(first, Record)
    assert first.id == "q1"
    rest = list(stream)
    _check_text_records([first, *rest], ["record 0", "record 1", "record 2"])  # type: ignore[list-item]


def test_glob_reads_sorted_files_in_order_with_one_index(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "b.jsonl", RECORDS[2:])
    _write_jsonl(tmp_path / "a.jsonl", RECORDS[:2])
    (tmp_path / "notes.txt").write_text("not matched", encoding="utf-8")
    records = _records(str(tmp_path / "*.jsonl"))
    _check_text_records(
        records, [f"{tmp_path}/a.jsonl:1", f"{tmp_path}/a.jsonl:2", f"{tmp_path}/b.jsonl:1"]
    )


def test_glob_mixes_formats_by_extension(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "part-1.jsonl", RECORDS[:1])
    pq.write_table(pa.Table.from_pylist(RECORDS[1:]), tmp_path / "part-2.parquet")
    records = _records(tmp_path / "part-*")
    assert [r.id for r in records] == ["q1", "q2", "q3"]
    assert records[2].location == f"{tmp_path}/part-2.parquet:row 2"


def test_format_overrides_extension(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "run.txt", RECORDS)
    _check_text_records(_records(path, format="jsonl"), [f"{path}:1", f"{path}:2", f"{path}:3"])
    assert _records(path, format="NDJSON")[0].id == "q1"


def test_open_files(tmp_path: Path) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in RECORDS)
    assert [r.location for r in _records(io.StringIO(lines), format="jsonl")] == [
        "<stream>:1",
        "<stream>:2",
        "<stream>:3",
    ]
    binary = io.BytesIO(lines.encode())
    assert len(_records(binary, format="jsonl")) == 3

    path = _write_csv(
        tmp_path / "run.csv", RECORDS, encode=("retrieved_context", "ground_truth_context")
    )
    with open(path, "rb") as file:
        records = _records(file)  # format from the file's name
        assert not file.closed  # reading never closes the caller's file
    _check_text_records(records, [f"{path}:row 1", f"{path}:row 2", f"{path}:row 3"])
    with open(tmp_path / "run.csv", encoding="utf-8", newline="") as text:
        assert len(_records(text)) == 3


def test_supported_formats() -> None:
    assert SUPPORTED_FORMATS == ("jsonl", "json", "csv", "parquet")


# ---------------------------------------------------------------------------------------------
# Empty sources give no records


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.jsonl", ""),
        ("blank.jsonl", "\n  \n\n"),
        ("empty.json", ""),
        ("list.json", "[]"),
        ("records.json", '{"records": []}'),
        ("empty.csv", ""),
        ("header.csv", "id,retrieved_context,ground_truth_context\n"),
        ("empty.parquet", ""),
    ],
)
def test_empty_files_give_no_records(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert _collect(path) == []


def test_empty_parquet_table_and_dataframe(tmp_path: Path) -> None:
    path = tmp_path / "none.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS).slice(0, 0), path)
    assert _collect(path) == []
    assert _collect(pd.DataFrame(columns=["retrieved_context", "ground_truth_context"])) == []
    assert _collect([]) == []


# ---------------------------------------------------------------------------------------------
# Field detection


DETECTION = [
    # (fields of the record, mode, retrieved field, ground-truth field, id field)
    pytest.param(
        {"retrieved_context": ["a"], "ground_truth_context": ["a"], "question": "q"},
        "text",
        "retrieved_context",
        "ground_truth_context",
        None,
        id="continuous-eval",
    ),
    pytest.param(
        {"retrieved_contexts": ["a"], "reference_contexts": ["a"], "user_input": "q"},
        "text",
        "retrieved_contexts",
        "reference_contexts",
        None,
        id="ragas",
    ),
    pytest.param(
        {"contexts": ["a"], "ground_truth_contexts": ["a"], "qid": "7"},
        "text",
        "contexts",
        "ground_truth_contexts",
        "qid",
        id="ragas-0.1-contexts",
    ),
    pytest.param(
        {"retrieved_texts": ["a"], "expected_texts": ["a"], "query": "q"},
        "text",
        "retrieved_texts",
        "expected_texts",
        None,
        id="llama-index-texts",
    ),
    pytest.param(
        {"retrieved_text": ["a"], "reference_context": ["a"], "question_id": "7"},
        "text",
        "retrieved_text",
        "reference_context",
        "question_id",
        id="singular-text",
    ),
    pytest.param(
        {"retrieved_ids": ["c1"], "expected_ids": ["c1"], "query": "q"},
        "id",
        "retrieved_ids",
        "expected_ids",
        None,
        id="llama-index-ids",
    ),
    pytest.param(
        {"retrieved_context_ids": ["c1"], "reference_context_ids": ["c1"], "id": "7"},
        "id",
        "retrieved_context_ids",
        "reference_context_ids",
        "id",
        id="ragas-ids",
    ),
    pytest.param(
        {"retrieved_chunk_ids": ["c1"], "relevant_chunk_ids": ["c1"], "query_id": "7"},
        "id",
        "retrieved_chunk_ids",
        "relevant_chunk_ids",
        "query_id",
        id="chunk-ids",
    ),
    pytest.param(
        {"retrieved_ids": ["c1"], "gold_ids": ["c1"]},
        "id",
        "retrieved_ids",
        "gold_ids",
        None,
        id="gold-ids",
    ),
    pytest.param(
        {"retrieved_ids": ["c1"], "qrels": {"c1": 2}},
        "id",
        "retrieved_ids",
        "qrels",
        None,
        id="qrels",
    ),
    pytest.param(
        {"retrieved_ids": ["c1"], "relevant_ids": ["c1"], "retrieved_context": ["a"]},
        "id",
        "retrieved_ids",
        "relevant_ids",
        None,
        id="only-id-mode-complete",
    ),
]


@pytest.mark.parametrize(("row", "mode", "retrieved", "truth", "id_field"), DETECTION)
def test_auto_detection(
    row: dict[str, Any], mode: str, retrieved: str, truth: str, id_field: str | None
) -> None:
    resolved = resolve_fields(row.keys(), None, source="data.jsonl")
    assert resolved == ResolvedFields(mode, retrieved, truth, id_field)  # type: ignore[arg-type]
    (record,) = _records([row])
    assert record.mode == mode
    assert record.metadata == {k: v for k, v in row.items() if k not in resolved.used}
    assert record.id == (str(row[id_field]) if id_field else "#0")


def test_explicit_mapping_for_unknown_names(tmp_path: Path) -> None:
    rows = [{"key": "a", "chunks": ["x", "y"], "gold": ["x"], "lang": "en"}]
    fields = {"retrieved": "chunks", "ground_truth": "gold", "id": "key"}
    for source in (rows, pd.DataFrame(rows), _write_jsonl(tmp_path / "r.jsonl", rows)):
        (record,) = _records(source, fields=fields)
        assert (record.id, record.mode, record.retrieved, record.ground_truth) == (
            "a",
            "text",
            ["x", "y"],
            ["x"],
        )
        assert record.metadata == {"lang": "en"}


def test_explicit_mapping_id_mode_and_partial_mapping() -> None:
    rows = [{"docs": [3, 1], "qrels": {"1": 1}, "id": 5}]
    (record,) = _records(rows, fields=FieldMap(retrieved="docs", mode="id"))
    assert (record.id, record.retrieved, record.ground_truth) == ("5", ["3", "1"], {"1": 1.0})
    # The explicit name fits either mode; the detected ground truth decides.
    (record,) = _records(rows, fields={"retrieved": "docs"})
    assert record.mode == "id"


def test_explicit_name_wins_over_ambiguity() -> None:
    columns = ["retrieved_context", "retrieved_contexts", "ground_truth_context"]
    resolved = resolve_fields(columns, {"retrieved": "retrieved_contexts"}, source="s")
    assert resolved == ResolvedFields("text", "retrieved_contexts", "ground_truth_context", None)


def test_mode_settles_a_two_mode_dataset() -> None:
    columns = ["retrieved_contexts", "reference_contexts", "retrieved_context_ids"]
    columns += ["reference_context_ids"]
    assert resolve_fields(columns, {"mode": "id"}, source="s").retrieved == "retrieved_context_ids"
    assert resolve_fields(columns, FieldMap(mode="text"), source="s").retrieved == (
        "retrieved_contexts"
    )


RESOLVE_ERRORS = [
    pytest.param(
        ["question", "answer", "chunks"],
        None,
        [
            "runs/a.csv: cannot tell which fields hold the retrieved context and the ground truth",
            "fields found: 'question', 'answer', 'chunks'",
            "'retrieved_context'",
            "'qrels'",
            'fields={"retrieved": ..., "ground_truth": ...}',
            "--retrieved-field",
            "--ground-truth-field",
        ],
        id="nothing-found",
    ),
    pytest.param(
        ["question", "contexts", "ground_truth"],
        None,
        [
            "runs/a.csv: found the retrieved field 'contexts' (text-mode) but no ground-truth "
            "field (looked for 'ground_truth_context'",
            "fields found: 'question', 'contexts', 'ground_truth'",
            'fields={"retrieved": ..., "ground_truth": ...}',
        ],
        id="half-found",
    ),
    pytest.param(
        ["retrieved_context", "retrieved_contexts", "ground_truth_context"],
        None,
        [
            "runs/a.csv: 'retrieved_context', 'retrieved_contexts' could each be the retrieved "
            "field",
            "fields={\"retrieved\": 'retrieved_context'}",
            "--retrieved-field retrieved_context",
        ],
        id="two-retrieved",
    ),
    pytest.param(
        ["retrieved_ids", "relevant_ids", "qrels"],
        None,
        ["'relevant_ids', 'qrels' could each be the ground-truth field", "--ground-truth-field"],
        id="two-ground-truths",
    ),
    pytest.param(
        ["id", "query_id", "retrieved_context", "ground_truth_context"],
        None,
        ["'id', 'query_id' could each be the id field", "fields={\"id\": 'id'}"],
        id="two-ids",
    ),
    pytest.param(
        ["retrieved_contexts", "reference_contexts", "retrieved_ids", "relevant_ids"],
        None,
        [
            "fit both text mode ('retrieved_contexts' with 'reference_contexts') and ID mode",
            'fields={"mode": "text"} or fields={"mode": "id"}',
        ],
        id="two-modes",
    ),
    pytest.param(
        ["retrieved_context", "ground_truth_context"],
        {"retrieved": "chunks"},
        [
            "runs/a.csv: fields[\"retrieved\"] = 'chunks' is not a field here",
            "fields found: 'retrieved_context', 'ground_truth_context'",
        ],
        id="explicit-absent",
    ),
    pytest.param(
        ["retrieved_ids", "ground_truth_context"],
        {"retrieved": "retrieved_ids", "ground_truth": "ground_truth_context"},
        ["'retrieved_ids' is a ID-mode field name", '"mode": "text"'],
        id="explicit-modes-conflict",
    ),
    pytest.param(
        ["retrieved_context", "ground_truth_context"],
        {"mode": "id"},
        ["cannot tell which fields", "ID-mode: retrieved 'retrieved_ids'"],
        id="mode-without-its-fields",
    ),
]


@pytest.mark.parametrize(("columns", "fields", "fragments"), RESOLVE_ERRORS)
def test_resolve_errors(columns: list[str], fields: Any, fragments: list[str]) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        resolve_fields(columns, fields, source="runs/a.csv")
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


@pytest.mark.parametrize(
    ("make", "error", "fragment"),
    [
        (lambda: FieldMap(retrieved=3), InvalidArgumentTypeError, "must be a string, got int"),
        (lambda: FieldMap(id=""), InvalidArgumentError, "cannot be empty"),
        (lambda: FieldMap(mode="ids"), InvalidArgumentError, "FieldMap(mode='ids'): use 'text'"),
        (
            lambda: FieldMap(retrieved="a", ground_truth="a"),
            InvalidArgumentError,
            "one field cannot play two roles",
        ),
        (
            lambda: resolve_fields([], {"retrieved_field": "a"}, source="s"),
            InvalidArgumentError,
            "unknown key 'retrieved_field'; use 'retrieved', 'ground_truth', 'id', 'mode'",
        ),
        (
            lambda: resolve_fields([], ["a"], source="s"),  # type: ignore[arg-type]
            InvalidArgumentTypeError,
            "pass a dict",
        ),
        (
            lambda: read_records([], fields={"ground-truth": "g"}),
            InvalidArgumentError,
            "unknown key 'ground-truth'",
        ),
    ],
)
def test_field_map_errors(
    make: Callable[[], object], error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error) as info:
        make()
    assert info.type is error
    assert fragment in str(info.value)


def test_unidentifiable_fields_raise_when_read(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", [{"chunks": ["a"], "gold": ["a"]}] * 3)
    stream = read_records(path)  # the file is fine; its fields are known only once read
    with pytest.raises(InvalidArgumentError, match=r"run\.jsonl:1: cannot tell which fields"):
        next(stream)
    csv_path = tmp_path / "run.csv"
    csv_path.write_text('chunks,gold\n"[]","[]"\n', encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"run\.csv: cannot tell .* 'chunks', 'gold'"):
        _collect(csv_path)
    with pytest.raises(InvalidArgumentError, match="DataFrame: cannot tell"):
        _collect(pd.DataFrame({"chunks": [["a"]]}))


def test_first_record_missing_a_field_is_a_record_error(tmp_path: Path) -> None:
    rows: list[Any] = [
        {"id": "q0", "retrieved_context": ["a"]},
        [1, 2],
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"]},
    ]
    items = _collect(_write_jsonl(tmp_path / "run.jsonl", rows))
    assert [type(i) for i in items] == [RecordError, RecordError, Record]
    assert [i.index for i in items] == [0, 1, 2]
    first = items[0]
    assert isinstance(first, RecordError)
    assert (first.location, first.id, first.field) == (
        f"{tmp_path}/run.jsonl:1",
        "q0",
        "ground_truth_context",
    )


def test_too_many_unidentifiable_records_raise() -> None:
    rows = [{"retrieved_context": ["a"]}] * 100 + [
        {"retrieved_context": ["a"], "ground_truth_context": ["a"]}
    ]
    with pytest.raises(InvalidArgumentError, match="record 0: found the retrieved field"):
        _collect(rows)
    items = _collect(rows[1:])  # 99 records without a ground truth, then one with
    assert [type(i) for i in items] == [RecordError] * 99 + [Record]


def test_each_file_of_a_glob_keeps_the_first_files_mode(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "a.jsonl", [{"retrieved_context": ["x"], "ground_truth_context": []}])
    _write_jsonl(tmp_path / "b.jsonl", [{"retrieved_ids": ["x"], "relevant_ids": []}])
    stream = read_records(tmp_path / "*.jsonl")
    assert isinstance(next(stream), Record)
    with pytest.raises(InvalidArgumentError, match=r"b\.jsonl:1: cannot tell .*text-mode"):
        next(stream)


# ---------------------------------------------------------------------------------------------
# Bad records: location, field and message, from the input as written


TEXT = {"retrieved_context": ["a b"], "ground_truth_context": ["a b"]}
IDS = {"retrieved_ids": ["c1"], "qrels": {"c1": 1}}


def _line(**fields: Any) -> str:
    return json.dumps(fields, allow_nan=True)


# (JSONL lines, line of the bad record, its id, field, message fragments)
JSONL_BAD = [
    pytest.param(
        [_line(id="q1", **TEXT), "", "{'id': 'q2'}"],
        3,
        None,
        None,
        ["malformed JSON: Expecting property name enclosed in double quotes at column 2"],
        id="malformed-json",
    ),
    pytest.param(
        [
            "",
            "",
            _line(id="q1", **TEXT),
            '{"id": "q2", "retrieved_context": ["a"]',
        ],  # 39 characters
        4,
        None,
        None,
        ["malformed JSON: Expecting ',' delimiter at column 40 (character 39)", "fix the line"],
        id="truncated-line-after-blank-lines",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), '{"id": "q2", "retrieved_context": ["a'],
        2,
        None,
        None,
        [
            "malformed JSON: Unterminated string starting at column 36 (character 35); fix the "
            "line or remove it"
        ],
        id="unterminated-string-says-at-once",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), "[1, 2]"],
        2,
        None,
        None,
        ["the line is valid JSON but an array, not an object", '{"retrieved_context": [...]'],
        id="json-array",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), '"text"'],
        2,
        None,
        None,
        ["valid JSON but a string, not an object"],
        id="json-string",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), _line(id="q2", retrieved_context=["a"], answer="x")],
        2,
        "q2",
        "ground_truth_context",
        [
            "missing the ground-truth field 'ground_truth_context'",
            "fields found: 'id', 'retrieved_context', 'answer'",
            'fields={"ground_truth": ...}',
        ],
        id="missing-ground-truth",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), "", _line(id="q2", ground_truth_context=["a"])],
        3,
        "q2",
        "retrieved_context",
        ["missing the retrieved field 'retrieved_context'", "fields found: 'id', 'ground_truth"],
        id="missing-retrieved",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), _line(retrieved_context=["a"], ground_truth_context=["a"])],
        2,
        None,
        "id",
        ["missing the id field 'id' that other records have", "give every record an id, or none"],
        id="missing-id",
    ),
    pytest.param(
        [_line(**TEXT), _line(id="q2", **TEXT)],
        2,
        "q2",
        "id",
        ["has an id field 'id' but the first record has none; give every record an id, or none"],
        id="id-appears-later",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context="Paris is the capital.", ground_truth_context=["a"])],
        1,
        "q1",
        "retrieved_context",
        ['retrieved_context is a single string, not a list; wrap it: ["Paris is the capital."]'],
        id="bare-string",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=["a"], ground_truth_context=None)],
        1,
        "q1",
        "ground_truth_context",
        ["ground_truth_context is missing (None); pass a list of strings"],
        id="none",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=float("nan"), ground_truth_context=["a"])],
        1,
        "q1",
        "retrieved_context",
        ["retrieved_context is NaN (a missing value, often an empty CSV or DataFrame cell)"],
        id="nan",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=5, ground_truth_context=["a"])],
        1,
        "q1",
        "retrieved_context",
        ["retrieved_context must be a list of strings, got int"],
        id="number",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=["a", 3], ground_truth_context=["a"])],
        1,
        "q1",
        "retrieved_context",
        ["retrieved_context[1] is int 3; every item must be a string"],
        id="number-item",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=["a"], ground_truth_context=["a", float("nan")])],
        1,
        "q1",
        "ground_truth_context",
        ["ground_truth_context[1] is NaN"],
        id="nan-item",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=["a"], ground_truth_context=["a", "  "])],
        1,
        "q1",
        "ground_truth_context",
        ["ground_truth_context[1] is an empty string (or only whitespace)", "remove it"],
        id="empty-ground-truth-item",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context=["a"], ground_truth_context=[{"text": "a", "grade": 0}])],
        1,
        "q1",
        "ground_truth_context",
        ["ground_truth_context[0] has grade 0.0; ground-truth grades must be > 0"],
        id="graded-text-zero",
    ),
    pytest.param(
        [_line(id="q1", retrieved_ids=["c1"], qrels={"c1": "high"})],
        1,
        "q1",
        "qrels",
        ["qrels['c1'] has grade 'high'; a grade must be a finite number"],
        id="qrels-string-grade",
    ),
    pytest.param(
        [_line(id="q1", retrieved_ids=["c1"], qrels={"c1": float("inf")})],
        1,
        "q1",
        "qrels",
        ["qrels['c1'] has grade inf"],
        id="qrels-infinite-grade",
    ),
    pytest.param(
        [_line(id="q1", retrieved_ids=["c1", 2.5], relevant_ids=["c1"])],
        1,
        "q1",
        "retrieved_ids",
        ["retrieved_ids[1] is float 2.5; every item must be an id (a string or an integer)"],
        id="float-id-item",
    ),
    pytest.param(
        [_line(id=3.0, **TEXT)],
        1,
        None,
        "id",
        ["id is a float (3.0); an id must be a string or an integer"],
        id="float-record-id",
    ),
    pytest.param(
        [_line(id="", **TEXT)],
        1,
        None,
        "id",
        ["id is an empty string; give every record a unique id"],
        id="empty-record-id",
    ),
    pytest.param(
        [_line(id=["q"], **TEXT)],
        1,
        None,
        "id",
        ["id is list ['q']; an id must be a string or an integer"],
        id="list-record-id",
    ),
    pytest.param(
        [_line(id="q1", **TEXT), "", _line(id="q2", **TEXT), _line(id="q1", **TEXT)],
        4,
        "q1",
        "id",
        ["duplicate id 'q1', first seen at {path}:1", "rename or remove one"],
        id="duplicate-id",
    ),
    pytest.param(
        [_line(id=7, **TEXT), _line(id="7", **TEXT)],
        2,
        "7",
        "id",
        ["duplicate id '7', first seen at {path}:1"],
        id="duplicate-int-and-str-id",
    ),
    pytest.param(
        [_line(id="q1", retrieved_context="x", ground_truth_context=None)],
        1,
        "q1",
        "retrieved_context",
        ["retrieved_context is a single string", "; ground_truth_context is missing (None)"],
        id="two-problems",
    ),
]


@pytest.mark.parametrize(("lines", "line", "record_id", "field", "fragments"), JSONL_BAD)
def test_bad_jsonl_records(
    tmp_path: Path,
    lines: list[str],
    line: int,
    record_id: str | None,
    field: str | None,
    fragments: list[str],
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = _collect(path)
    errors = [item for item in items if isinstance(item, RecordError)]
    assert len(errors) == 1, [str(e) for e in errors]
    (error,) = errors
    assert error.location == f"{path}:{line}"
    assert (error.id, error.field) == (record_id, field)
    assert error.index == items.index(error)
    for fragment in fragments:
        assert fragment.replace("{path}", str(path)) in error.message, error.message
    who = f" (record {record_id!r})" if record_id is not None else ""
    assert str(error) == f"{path}:{line}{who}: {error.message}"
    # pydantic's own wording never reaches the user
    assert "validation error" not in error.message
    assert "Value error" not in error.message


def test_a_bad_record_still_claims_its_id(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [
        _line(id="q1", retrieved_context="x", ground_truth_context=["a"]),
        _line(id="q1", **TEXT),
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    first, second = _collect(path)
    assert isinstance(first, RecordError)
    assert first.field == "retrieved_context"
    assert isinstance(second, RecordError)
    assert second.message.startswith(f"duplicate id 'q1', first seen at {path}:1")


def test_bad_records_do_not_stop_the_stream(tmp_path: Path) -> None:
    lines = [
        _line(id="q1", **TEXT),
        "{oops",
        "",
        _line(id="q2", **TEXT),
        "[]",
        _line(id="q3", **TEXT),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    items = _collect(path)
    assert [(type(i).__name__, i.index, i.location) for i in items] == [
        ("Record", 0, f"{path}:1"),
        ("RecordError", 1, f"{path}:2"),
        ("Record", 2, f"{path}:4"),
        ("RecordError", 3, f"{path}:5"),
        ("Record", 4, f"{path}:6"),
    ]


def test_invalid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    good = _line(id="q1", **TEXT).encode()
    path.write_bytes(good + b'\n{"id": "q2\xff"}\n' + good.replace(b"q1", b"q3") + b"\n")
    items = _collect(path)
    assert [type(i) for i in items] == [Record, RecordError, Record]
    assert items[1].location == f"{path}:2"
    assert "not valid UTF-8 (byte 0xff" in items[1].message  # type: ignore[union-attr]


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _line(id="q1", **TEXT).encode() + b"\n")
    assert _records(path)[0].id == "q1"


# (CSV text after the header, row, id, field, fragments); header: id,retrieved_context,...
CSV_HEADER = "id,retrieved_context,ground_truth_context,note\n"
CSV_GOOD = 'q0,"[""a""]","[""a""]",fine\n'
CSV_BAD = [
    pytest.param(
        'q1,a b,"[""a""]",x\n',
        "retrieved_context",
        [
            'retrieved_context must be a JSON-encoded list like ["a", "b"]; got \'a b\', which '
            "is not JSON (Expecting value at column 1)"
        ],
        id="plain-text-cell",
    ),
    pytest.param(
        'q1,"""a b""","[""a""]",x\n',
        "retrieved_context",
        ['must be a JSON-encoded list like ["a", "b"]; got \'"a b"\', which is JSON a string'],
        id="json-string-cell",
    ),
    pytest.param(
        'q1,"[""a""]",,x\n',
        "ground_truth_context",
        ['ground_truth_context is an empty cell; it must hold a JSON-encoded list like ["a", "b"]'],
        id="empty-cell",
    ),
    pytest.param(
        'q1,"[""a""]","[""a"", """"]",x\n',
        "ground_truth_context",
        ["ground_truth_context[1] is an empty string"],
        id="empty-ground-truth-item",
    ),
    pytest.param(
        'q1,"[""a""]","{""a"": 1}",x\n',
        "ground_truth_context",
        ['ground_truth_context must be a JSON-encoded list like ["a", "b"]', "JSON an object"],
        id="object-in-text-mode",
    ),
    pytest.param(
        'q1,"[""a""]","[""a""]",x,extra\n',
        None,
        ["the row has 5 cells but the header has 4 columns", "quote cells that contain commas"],
        id="too-many-cells",
    ),
    pytest.param(
        'q1,"[""a""]"\n',
        None,
        ["the row has 2 cells but the header has 4 columns"],
        id="too-few-cells",
    ),
    pytest.param(
        'q0,"[""b""]","[""b""]",again\n',
        "id",
        ["duplicate id 'q0', first seen at {path}:row 1"],
        id="duplicate-id",
    ),
]


@pytest.mark.parametrize(("row", "field", "fragments"), CSV_BAD)
def test_bad_csv_records(tmp_path: Path, row: str, field: str | None, fragments: list[str]) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(CSV_HEADER + CSV_GOOD + "\n" + row + CSV_GOOD.replace("q0", "q9"), "utf-8")
    items = _collect(path)
    assert [type(i) for i in items] == [Record, RecordError, Record]
    error = items[1]
    assert isinstance(error, RecordError)
    # row 2 is the blank row: rows count after the header, blank ones included
    assert error.location == f"{path}:row 3"
    assert items[2].location == f"{path}:row 4"
    assert error.field == field
    assert error.id == ("q0" if field == "id" else "q1")
    for fragment in fragments:
        assert fragment.replace("{path}", str(path)) in error.message, error.message


def test_bad_csv_qrels_cell(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        'qid,retrieved_ids,qrels\nq1,"[""d1""]","{""d1"": 2}"\nq2,"[""d1""]",d1\n'
        'q3,"[""d1""]","{""d1"": null}"\n',
        encoding="utf-8",
    )
    items = _collect(path)
    assert isinstance(items[0], Record)
    assert items[0].ground_truth == {"d1": 2.0}
    assert isinstance(items[1], RecordError)
    assert items[1].message.startswith(
        'qrels must be a JSON-encoded list like ["d1", "d2"] or an object like {"d1": 2}'
    )
    assert isinstance(items[2], RecordError)
    assert "qrels['d1'] has grade None" in items[2].message


def test_bad_json_file_records(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text(
        json.dumps([{"id": "q1", **TEXT}, "oops", {"id": "q2", "retrieved_context": ["a"]}]),
        encoding="utf-8",
    )
    items = _collect(path)
    assert [i.location for i in items] == [f"{path}[0]", f"{path}[1]", f"{path}[2]"]
    assert isinstance(items[1], RecordError)
    assert "the record is a string, not an object" in items[1].message
    assert isinstance(items[2], RecordError)
    assert items[2].field == "ground_truth_context"


def test_bad_dataframe_records() -> None:
    frame = pd.DataFrame(
        {
            "qid": pd.Series(["a", "b", "c", None], dtype=object, index=["r1", "r2", "r3", "r4"]),
            "retrieved_context": [["x"], float("nan"), ["x"], ["x"]],
            "ground_truth_context": [["x"], ["x"], None, ["x"]],
        },
        index=["r1", "r2", "r3", "r4"],
    )
    items = _collect(frame)
    assert isinstance(items[0], Record)
    errors = items[1:]
    assert [(e.location, e.id, e.field) for e in errors] == [  # type: ignore[union-attr]
        ("row r2", "b", "retrieved_context"),
        ("row r3", "c", "ground_truth_context"),
        ("row r4", None, "qid"),
    ]
    assert "retrieved_context is NaN (a missing value" in errors[0].message  # type: ignore[union-attr]
    assert "ground_truth_context is missing (None)" in errors[1].message  # type: ignore[union-attr]
    assert "qid is missing (None)" in errors[2].message  # type: ignore[union-attr]


def test_dataframe_float_ids_and_nullable_ints() -> None:
    floats = pd.DataFrame({"id": [1.0, float("nan")], **{k: [["a"], ["a"]] for k in TEXT}})
    items = _collect(floats)
    assert "id is a float (1.0)" in items[0].message  # type: ignore[union-attr]
    assert "integer ids read as floats when their column has empty cells" in items[0].message  # type: ignore[union-attr]
    assert "id is NaN" in items[1].message  # type: ignore[union-attr]
    nullable = floats.assign(id=pd.array([1, None], dtype="Int64"))
    items = _collect(nullable)
    assert isinstance(items[0], Record)
    assert items[0].id == "1"
    assert "id is missing (None)" in items[1].message  # type: ignore[union-attr]


def test_iterable_items_that_are_not_mappings() -> None:
    items = _collect([{"id": "q1", **TEXT}, ("a", "b"), None])
    assert [i.location for i in items] == ["record 0", "record 1", "record 2"]
    assert "the record is tuple, not a mapping" in items[1].message  # type: ignore[union-attr]
    assert "the record is NoneType, not a mapping" in items[2].message  # type: ignore[union-attr]


def test_duplicate_ids_across_files_of_a_glob(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "a.jsonl", [{"id": "q1", **TEXT}, {"id": "q7", **TEXT}])
    _write_jsonl(tmp_path / "b.jsonl", [{"id": "q3", **TEXT}, {"id": "q7", **TEXT}])
    (error,) = _errors(str(tmp_path / "*.jsonl"))
    assert error.index == 3
    assert error.message.startswith(f"duplicate id 'q7', first seen at {tmp_path}/a.jsonl:2")


# ---------------------------------------------------------------------------------------------
# Record contents


def test_graded_ground_truth_and_id_normalisation() -> None:
    rows = [
        {
            "id": 1,
            "retrieved_context": ["a"],
            "ground_truth_context": [{"text": "a", "grade": 2}, "b"],
        },
        {"id": 2, "retrieved_ids": [1, "c2"], "relevant_ids": [1]},
    ]
    (graded,) = _records(rows[:1])
    assert graded.ground_truth == [GradedText("a", 2.0), GradedText("b", 1.0)]
    (ids,) = _records(rows[1:])
    assert (ids.id, ids.retrieved, ids.ground_truth) == ("2", ["1", "c2"], {"1": 1.0})


def test_metadata_passes_through_unchanged() -> None:
    extra = {"question": "q?", "tags": ["a", "b"], "meta": {"k": [1, None]}, "score": None}
    (record,) = _records([{"id": "q1", **TEXT, **extra}])
    assert record.metadata == extra


def test_empty_retrieved_and_empty_ground_truth_lists_are_records() -> None:
    (record,) = _records([{"retrieved_context": [], "ground_truth_context": []}])
    assert (record.retrieved, record.ground_truth, record.id) == ([], [], "#0")


def test_records_without_ids_get_their_index() -> None:
    rows = [{"retrieved_context": "bad", "ground_truth_context": []}, TEXT, TEXT]
    items = _collect(rows)
    assert [i.id for i in items] == [None, "#1", "#2"]


# ---------------------------------------------------------------------------------------------
# Streaming


class CountingLines:
    """An open JSONL file that counts the lines handed out."""

    name = "stream.jsonl"

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self.lines_read = 0

    def read(self, size: int = -1) -> str:
        raise AssertionError("JSONL must be read line by line, never whole")

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.lines_read += 1
            yield line


def test_jsonl_reads_no_further_than_the_record_it_yields() -> None:
    lines = ["\n", _line(id="q1", **TEXT) + "\n", "{bad\n", _line(id="q2", **TEXT) + "\n"]
    source = CountingLines(lines * 1000)
    stream = read_records(source)
    assert source.lines_read == 0  # nothing is read before the first record is asked for
    first = next(stream)
    assert isinstance(first, Record)
    assert first.location == "stream.jsonl:2"
    assert source.lines_read == 2
    second = next(stream)
    assert isinstance(second, RecordError)
    assert source.lines_read == 3
    next(stream)
    assert source.lines_read == 4


def test_file_is_opened_only_when_read(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "runs.jsonl", RECORDS)
    stream = read_records(path)
    path.unlink()  # checked at the call; opened again when iteration starts
    with pytest.raises(FileNotFoundError):
        next(stream)


# ---------------------------------------------------------------------------------------------
# Sources that cannot be read at all raise at once


def test_source_errors(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("x", encoding="utf-8")
    (tmp_path / "noext").write_text("x", encoding="utf-8")
    cases: list[tuple[Callable[[], object], type[Exception], list[str]]] = [
        (
            lambda: read_records(tmp_path / "missing.jsonl"),
            InvalidArgumentError,
            [f"{tmp_path}/missing.jsonl: no such file", "supported formats: .jsonl"],
        ),
        (
            lambda: read_records(tmp_path),
            InvalidArgumentError,
            [f"{tmp_path}: is a directory", f"'{tmp_path}/*.jsonl'", ".parquet"],
        ),
        (
            lambda: read_records(tmp_path / "data.txt"),
            InvalidArgumentError,
            ["data.txt: unsupported file extension '.txt'", "format='jsonl'|'json'|'csv'"],
        ),
        (
            lambda: read_records(tmp_path / "noext"),
            InvalidArgumentError,
            ["noext: unsupported file extension (none)"],
        ),
        (
            lambda: read_records(str(tmp_path / "*.jsonl")),
            InvalidArgumentError,
            ["*.jsonl: no files match this pattern", "supported formats"],
        ),
        (
            lambda: read_records(tmp_path / "*"),
            InvalidArgumentError,
            ["data.txt: unsupported file extension"],
        ),
        (
            lambda: read_records(tmp_path / "data.txt", format="xlsx"),
            InvalidArgumentError,
            ["read_records(format='xlsx'): use one of 'jsonl', 'json', 'csv', 'parquet'"],
        ),
        (
            lambda: read_records([TEXT], format="jsonl"),
            InvalidArgumentError,
            ["format='jsonl') applies to paths and open files, not to list"],
        ),
        (
            lambda: read_records(io.StringIO("")),
            InvalidArgumentError,
            ["<stream>: cannot tell the format of an open file", "pass format="],
        ),
        (lambda: read_records(42), InvalidArgumentTypeError, ["cannot read int", "a path"]),
        (lambda: read_records(b"x.jsonl"), InvalidArgumentTypeError, ["cannot read bytes"]),
        (
            lambda: read_records(TEXT),
            InvalidArgumentTypeError,
            ["got a single dict; pass a list (or any iterable) of records"],
        ),
    ]
    for make, error, fragments in cases:
        with pytest.raises(error) as info:
            make()  # raised by the call itself, before any iteration
        assert info.type is error
        for fragment in fragments:
            assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


def _message_as_nobody(path: Path) -> str:
    """What reading ``path`` raises in a forked child that has dropped root for "nobody"
    (everything the reader needs is imported before the fork: nobody cannot read /root)."""
    list(read_records(_write_jsonl(path.parent / "warm-up.jsonl", RECORDS)))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            list(read_records(path))
            message = "read without error"
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}"
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    return message


def test_unreadable_file(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "secret.jsonl", RECORDS)
    path.chmod(0)
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        with pytest.raises(InvalidArgumentError, match=r"secret\.jsonl: cannot be opened"):
            read_records(path)
        return
    # Root reads anything: read as the unprivileged user "nobody" instead.
    tmp_path.chmod(0o755)
    message = _message_as_nobody(path)
    assert message.startswith("InvalidArgumentError: "), message
    assert f"{path}: cannot be opened" in message


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (
            '{"id": 1}\n{"id": 2}\n',
            ["not valid JSON: Extra data at line 2 column 1", "name the file .jsonl"],
        ),
        ('[{"id": 1},', ["not valid JSON: Expecting value at line 1 column 12"]),
        (
            '[{"id": "a\tb"}]',
            ["not valid JSON: Invalid control character at line 1 column 11"],
        ),
        ('{"rows": []}', ['"records" or "data"', "got an object with keys 'rows'"]),
        ("3", ["must hold a list of records", "got a number"]),
    ],
)
def test_unreadable_json_documents(tmp_path: Path, content: str, fragments: list[str]) -> None:
    path = tmp_path / "runs.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidArgumentError) as info:
        _collect(path)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert str(info.value).startswith(f"{path}: ")


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "runs.parquet"
    path.write_bytes(b"this is not parquet")
    with pytest.raises(InvalidArgumentError, match=r"runs\.parquet: cannot be read as Parquet"):
        _collect(path)


def test_csv_cell_over_the_field_limit(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    huge = json.dumps(["x" * (csv.field_size_limit() + 10)])
    _write_csv(path, [{"retrieved_context": huge, "ground_truth_context": "[]"}], encode=())
    with pytest.raises(InvalidArgumentError) as info:
        _collect(path)
    assert f"{path}:row 1: cannot parse the CSV" in str(info.value)
    assert "csv.field_size_limit" in str(info.value)


def test_missing_pyarrow_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ctxeval\[parquet\]'"):
        read_records(path)


def test_reading_without_pandas_never_imports_it(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "runs.jsonl", RECORDS)
    code = (
        "import sys\n"
        "from ctxeval.io import read_records\n"
        f"items = list(read_records({str(path)!r})) + list(read_records([{TEXT!r}]))\n"
        "assert len(items) == 4, items\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_per_query_rows_concatenate_like_lists() -> None:
    from ctxeval import RetrievalEvaluator

    data = [{"id": "a", "retrieved_context": ["x"], "ground_truth_context": ["x"]}]
    rows = RetrievalEvaluator(data, workers=1).run().per_query
    assert rows + [{"id": "b"}] == [rows[0], {"id": "b"}]  # noqa: RUF005 (the operator is tested)
    assert [{"id": "b"}] + rows == [{"id": "b"}, rows[0]]  # noqa: RUF005
    assert json.loads(json.dumps(list(rows))) == [rows[0]]


@pytest.mark.parametrize("grade", [10**400, -(10**400)])
def test_grades_too_large_for_a_float_are_reported(grade: int) -> None:
    items = list(read_records([{"id": "a", "retrieved_ids": ["d"], "qrels": {"d": grade}}]))
    assert isinstance(items[0], RecordError)
    assert items[0].field == "qrels"
    assert "a grade must be a finite number" in items[0].message
