"""The ``retrieved_scores`` record field (issue 12, item 3): read from every format, in both
modes, named by ``fields={"scores": ...}``, checked like ``retrieved_spans`` (bad records name
file:line, the field and the fix), never metadata, and written back by ``convert``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.io.convert import convert_dataset, record_to_dict, write_records
from ctxeval.io.fields import FieldMap
from ctxeval.io.readers import read_records
from ctxeval.io.trec import read_trec_run
from ctxeval.records.model import Record, RecordError, record_json_schema

TEXT = {
    "id": "q1",
    "retrieved_context": ["a", "b", "c"],
    "retrieved_scores": [0.9, 0.5, 0.5],
    "ground_truth_context": ["a"],
    "question": "kept as metadata",
}
IDS = {"id": "q2", "retrieved_ids": ["d1", "d2"], "retrieved_scores": [3, 1.5], "qrels": {"d1": 1}}


def _read(source: Any, **options: Any) -> list[Record | RecordError]:
    return list(read_records(source, **options))


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
@pytest.mark.parametrize("row", [TEXT, IDS], ids=["text", "id"])
def test_every_format_reads_the_scores(tmp_path: Path, suffix: str, row: dict[str, Any]) -> None:
    path = tmp_path / f"records{suffix}"
    write_records([row], path)
    (record,) = _read(path)
    assert isinstance(record, Record)
    assert record.retrieved_scores == [float(s) for s in row["retrieved_scores"]]
    assert "retrieved_scores" not in record.metadata
    assert record_to_dict(record)["retrieved_scores"] == record.retrieved_scores


@pytest.mark.parametrize("row", [TEXT, IDS], ids=["text", "id"])
def test_data_frames_and_iterables_read_the_scores(row: dict[str, Any]) -> None:
    (from_frame,) = _read(pd.DataFrame([row]))
    (from_dicts,) = _read([row])
    for record in (from_frame, from_dicts):
        assert isinstance(record, Record)
        assert record.retrieved_scores == [float(s) for s in row["retrieved_scores"]]
        assert all(type(s) is float for s in record.retrieved_scores)


def test_absent_or_null_scores_are_none_and_never_metadata() -> None:
    rows = [
        {k: v for k, v in TEXT.items() if k != "retrieved_scores"},
        {**TEXT, "id": "q3", "retrieved_scores": None},
    ]
    first, second = _read(rows)
    assert isinstance(first, Record)
    assert isinstance(second, Record)
    assert first.retrieved_scores is None
    assert second.retrieved_scores is None
    assert "retrieved_scores" not in second.metadata
    assert first.metadata == second.metadata == {"question": "kept as metadata"}


def test_a_field_of_another_name_is_named_with_fields() -> None:
    row = {"retrieved_ids": ["d1", "d2"], "qrels": ["d1"], "similarity": [0.8, 0.2]}
    (record,) = _read([row], fields={"scores": "similarity"})
    assert isinstance(record, Record)
    assert record.retrieved_scores == [0.8, 0.2]
    assert record.metadata == {}
    (unnamed,) = _read([row])
    assert isinstance(unnamed, Record)
    assert unnamed.retrieved_scores is None
    assert unnamed.metadata == {"similarity": [0.8, 0.2]}
    with pytest.raises(InvalidArgumentError, match="one field cannot play two roles"):
        FieldMap(retrieved="similarity", scores="similarity")


def test_a_named_scores_field_missing_from_a_header_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    write_records([IDS], path)
    with pytest.raises(InvalidArgumentError, match=r'fields\["scores"\] = \'sim\' is not a field'):
        _read(path, fields={"scores": "sim"})


BAD = [
    (
        [0.9, 0.5],
        "retrieved_scores has 2 score(s) but retrieved_context has 3 item(s); give one "
        "score per retrieved item, in the same order",
    ),
    ([0.9, "0.5", 0.1], "retrieved_scores[1] is str '0.5'; every item must be a finite number"),
    ([0.9, True, 0.1], "retrieved_scores[1] is bool True; every item must be a finite number"),
    ([0.9, None, 0.1], "retrieved_scores[1] is None"),
    ([0.9, math.inf, 0.1], "retrieved_scores[1] is float inf; every item must be a finite number"),
    ("0.9", "retrieved_scores must be a list of numbers, got float"),  # a cell of one number
    ("not json", "retrieved_scores must be a JSON list of numbers like [0.9, 0.7]"),
    (0.5, "retrieved_scores must be a list of numbers, got float"),
]


@pytest.mark.parametrize(("scores", "message"), BAD)
def test_bad_scores_are_bad_records_with_file_line_and_fix(
    tmp_path: Path, scores: object, message: str
) -> None:
    path = tmp_path / "records.jsonl"
    lines = [json.dumps({**TEXT, "id": "q0"}), json.dumps({**TEXT, "retrieved_scores": scores})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    good, bad = _read(path)
    assert isinstance(good, Record)
    assert isinstance(bad, RecordError)
    assert bad.field == "retrieved_scores"
    assert bad.location == f"{path}:2"
    assert message in str(bad), str(bad)


def test_nan_scores_say_it_is_a_missing_value() -> None:
    (bad,) = _read([{**TEXT, "retrieved_scores": [0.9, math.nan, 0.1]}])
    assert isinstance(bad, RecordError)
    assert "retrieved_scores[1] is NaN (a missing value" in str(bad)


def test_a_named_field_is_named_in_the_messages() -> None:
    row = {"retrieved_ids": ["d1", "d2"], "qrels": ["d1"], "sim": [0.8]}
    (bad,) = _read([row], fields={"scores": "sim"})
    assert isinstance(bad, RecordError)
    assert bad.field == "sim"
    assert "sim has 1 score(s) but retrieved_ids has 2 item(s)" in str(bad)


def test_convert_joins_a_run_with_its_scores_and_writes_them_back(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text(
        "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 2.5 t\nq1 Q0 d3 3 1.0 t\nq2 Q0 d9 1 0.5 t\n",
        encoding="utf-8",
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d9 2\nq3 0 d4 1\n", encoding="utf-8")
    records = tmp_path / "records.jsonl"
    convert_dataset(str(run), str(records), qrels=str(qrels))
    rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert [(r["retrieved_ids"], r["retrieved_scores"]) for r in rows] == [
        (["d2", "d1", "d3"], [2.5, 2.5, 1.0]),  # ties: docid descending, as trec_eval
        (["d9"], [0.5]),
        ([], []),  # judged, not retrieved
    ]
    # Back to a run: the records' own scores, so the ties survive.
    back = tmp_path / "back.trec"
    convert_dataset(str(records), str(back))
    assert read_trec_run(back) == {"q1": {"d2": 2.5, "d1": 2.5, "d3": 1.0}, "q2": {"d9": 0.5}}


def test_convert_to_a_run_ranks_by_list_order_when_scores_do_not(tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    rows = [
        {
            "id": "q",
            "retrieved_ids": ["a", "b", "c"],
            "retrieved_scores": [0.1, 0.2, 0.3],
            "qrels": ["a"],
        }
    ]
    write_records(rows, source)
    target = tmp_path / "run.trec"
    convert_dataset(str(source), str(target))
    # Distances (lower is better) are not a ranking best first: the list order is kept.
    assert read_trec_run(target) == {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}


def test_the_schema_describes_the_scores_in_both_modes() -> None:
    schema = record_json_schema()["$defs"]
    for mode in ("TextRecord", "IdRecord"):
        field = schema[mode]["properties"]["retrieved_scores"]
        assert field["type"] == "array"
        assert field["items"] == {"type": "number"}
        assert "ties='average'" in field["description"]
        assert "retrieved_scores" not in schema[mode].get("required", [])


def test_convert_renames_a_named_scores_field(tmp_path: Path) -> None:
    source = tmp_path / "records.csv"
    write_records([{"retrieved_ids": ["a", "b"], "qrels": ["a"], "sim": [0.7, 0.1]}], source)
    target = tmp_path / "records.jsonl"
    convert_dataset(str(source), str(target), fields={"scores": "sim"})
    (row,) = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert row["retrieved_scores"] == [0.7, 0.1]
    assert "sim" not in row
