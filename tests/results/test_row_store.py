"""The per-query table (PerQueryTable), the exact sums (ctxeval.foundation.exact) and their folding
in the aggregator.

The table must give back exactly the rows that went in: floats bit for bit (NaN, -0.0 and
subnormals included), None as None, metadata objects as they were, keys in the table's order. The
reference for an evaluator's rows is the dict the aggregator streams to ``row_sink``; for rows
added by hand, the row dict built by the documented rule.
"""

from __future__ import annotations

import json
import math
import pickle
import random
import struct
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import (
    IDPrecisionRecallF1,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.foundation.exact import column_sums, exact_mean, exact_sum, units
from ctxeval.io.readers import read_records
from ctxeval.results import EvaluationResult, PerQueryTable, arrow_table, metadata_column
from ctxeval.results.aggregation import FOLD_ROWS, Aggregator
from ctxeval.scoring.driver import ScoringPlan, score_columns
from ctxeval.scoring.scored import ScoredBatch

STRATEGY = RougeChunkMatch()
METRICS = [PrecisionRecallF1(STRATEGY), RankedRetrievalMetrics(STRATEGY)]


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down; floats bit for bit (NaN included), dict
    keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same_rows(store: Any, rows: list[dict[str, Any]]) -> bool:
    return len(store) == len(rows) and all(
        _same(got, want) for got, want in zip(store, rows, strict=True)
    )


def _in_table_order(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """``row`` with its keys in the table's order: id, metadata by ``columns``, metrics last."""
    order = {name: n for n, name in enumerate(["id", *columns])}
    return dict(sorted(row.items(), key=lambda item: order.get(item[0], len(order))))


def _records(count: int, seed: int = 3) -> list[dict[str, Any]]:
    """Text records with metadata of every kind, some of it named like a result column."""
    rng = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta eta theta".split()

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(3, 8)))

    records = []
    for i in range(count):
        chunks = [text() for _ in range(rng.randint(0, 6))]
        truth = [rng.choice(chunks) if chunks and rng.random() < 0.6 else text()]
        if rng.random() < 0.1:
            truth = []  # empty ground truth: None values under empty_ground_truth="skip"
        record: dict[str, Any] = {
            "id": f"q{i}",
            "retrieved_context": chunks,
            "ground_truth_context": truth,
        }
        extra = rng.choice(
            [
                {},
                {"question": text()},
                {"question": text(), "tokens": rng.randint(0, 2**70), "flag": True},
                {"score": rng.random(), "tags": [text()], "nested": {"a": None}},
                {"context_recall@1": "a clash", "context_recall": "a clash", "question": None},
                {"question": text(), "score": None},
            ]
        )
        record.update(extra)
        records.append(record)
    return records


def _scored(metrics: list[Any], ks: tuple[int | None, ...], records: list[dict[str, Any]]):
    plan = ScoringPlan(tuple(metrics), ks)
    return plan, score_columns(plan, list(read_records(records)))


# -- the evaluator's rows ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["zero", "skip"])
@pytest.mark.parametrize("ks", [(None,), (1, 3, 5)])
def test_kept_rows_equal_the_dict_rows_exactly(policy: str, ks: tuple[int | None, ...]) -> None:
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth=policy),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth=policy),
    ]
    plan, scored = _scored(metrics, ks, _records(300))
    column = "context_recall" if ks == (None,) else "context_recall@1"
    dicts: list[dict[str, Any]] = []
    aggregator = Aggregator(plan, "records", row_sink=dicts.append)
    aggregator.add_scored(scored)
    rows = aggregator.result().per_query
    assert isinstance(rows, PerQueryTable)
    assert len(rows) == len(dicts) == 300
    # The streamed dicts keep each record's metadata order; the table has one order for all.
    metadata = list(rows.metadata_columns)
    assert _same_rows(rows, [_in_table_order(d, metadata) for d in dicts])
    assert rows.column_names() == ["id", *metadata, *plan.columns()]
    if policy == "skip":
        assert any(row[column] is None for row in rows)
    # metadata named like a column is renamed, as in the dict rows
    clash = next(row for row in rows if f"metadata.{column}" in row)
    assert clash[f"metadata.{column}"] == "a clash"
    assert any(type(row.get("tokens")) is int and row["tokens"] > 2**63 for row in rows)
    assert any(row.get("flag") is True for row in rows)
    # a row lacks the fields its record did not have
    assert any("question" not in row for row in rows)


def test_hand_computed_rows_of_the_seed_article() -> None:
    records = [
        {"id": "q1", "retrieved_ids": ["A", "C"], "relevant_ids": ["A", "B"], "topic": "x"},
        {"id": "q2", "retrieved_ids": ["D"], "relevant_ids": ["D"], "topic": 7},
        {"id": "q3", "retrieved_ids": ["F", "H", "I"], "relevant_ids": ["E", "F", "G"]},
    ]
    result = RetrievalEvaluator(records, [IDPrecisionRecallF1()], workers=1).run()
    assert list(result.per_query) == [
        {
            "id": "q1",
            "topic": "x",
            "context_precision": 0.5,
            "context_recall": 0.5,
            "context_f1": 0.5,
        },
        {
            "id": "q2",
            "topic": 7,
            "context_precision": 1.0,
            "context_recall": 1.0,
            "context_f1": 1.0,
        },
        {
            "id": "q3",
            "context_precision": 1 / 3,
            "context_recall": 1 / 3,
            "context_f1": 1 / 3,
        },
    ]
    assert result.per_query[-1]["context_f1"] == 1 / 3
    assert [list(row) for row in result.per_query][1] == [
        "id",
        "topic",
        "context_precision",
        "context_recall",
        "context_f1",
    ]
    assert result.per_query.column("topic") == ["x", 7, None]  # type: ignore[attr-defined]


def test_rows_behave_as_a_sequence_of_dicts() -> None:
    result = RetrievalEvaluator(_records(40), METRICS, workers=1).run(k=[1, 3])
    rows = result.per_query
    plain = list(rows)
    assert len(rows) == 40
    assert rows == plain
    assert plain == rows
    assert not rows != plain  # noqa: SIM202
    assert (rows[0], rows[-1], rows[-40]) == (plain[0], plain[-1], plain[0])
    assert rows[3:17:4] == plain[3:17:4]
    assert rows[::-1] == plain[::-1]
    assert rows[100:] == []
    with pytest.raises(IndexError):
        rows[40]
    with pytest.raises(IndexError):
        rows[-41]
    assert [row["id"] for row in rows] == [f"q{i}" for i in range(40)]
    assert plain[5] in rows
    assert (rows.index(plain[5]), rows.count(plain[5])) == (5, 1)
    assert list(reversed(rows)) == plain[::-1]
    assert bool(rows)
    assert not PerQueryTable(["x"])
    assert rows != plain[:-1]
    assert rows != [*plain[:-1], {"id": "other"}]
    assert (rows == (1, 2)) is False
    assert repr(rows) == repr(plain)
    assert rows + [{"id": "b"}] == [*plain, {"id": "b"}]  # noqa: RUF005 (the operator is tested)
    # a dict read from the table is the caller's: changing it leaves the row as it was
    rows[0]["id"] = "changed"
    assert rows[0]["id"] == "q0"
    with pytest.raises(TypeError):
        hash(rows)


def test_pickle_keeps_every_row_and_the_copy_grows_like_the_original() -> None:
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
    ]
    result = RetrievalEvaluator(_records(200), metrics, workers=1).run(k=[1, 5])
    again = pickle.loads(pickle.dumps(result))
    assert isinstance(again.per_query, PerQueryTable)
    assert _same_rows(again.per_query, list(result.per_query))
    assert again == result
    table = again.per_query
    columns = table.metric_columns
    values: list[float | None] = [0.25] * len(columns)
    values[1] = None
    table.append("extra", {"question": "q?", "new": 1}, values)
    table.append("last", {"question": "r?"}, [0.5] * len(columns))
    expected = {
        "id": "extra",
        "question": "q?",
        "new": 1,
        **dict(zip(columns, values, strict=True)),
    }
    assert table[-2] == expected
    assert table[-1] == {"id": "last", "question": "r?", **dict.fromkeys(columns, 0.5)}
    assert "new" not in table[0]
    assert len(table) == len(result.per_query) + 2


def test_workers_give_the_same_stored_rows() -> None:
    records = _records(700)
    one = RetrievalEvaluator(records, METRICS, workers=1, batch_size=64).run(k=[1, 3])
    two = RetrievalEvaluator(records, METRICS, workers=2, batch_size=64).run(k=[1, 3])
    assert _same_rows(two.per_query, list(one.per_query))
    assert two.aggregate == one.aggregate


def test_to_dict_and_json() -> None:
    result = RetrievalEvaluator(_records(5), METRICS, workers=1).run()
    data = result.to_dict()
    assert type(data["per_query"]) is list
    assert len(data["per_query"]) == 5
    assert json.loads(json.dumps(data))["per_query"] == list(result.per_query)


# -- any rows ---------------------------------------------------------------------------------

_COLUMNS = ["ndcg@5", "recall", "x y"]
_FIELDS = ["id", "question", "a", "b", "ndcg@5", "metadata.ndcg@5", "x y", "c"]
_OBJECTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
# Metric values: any double (NaN, infinities, -0.0, subnormals) or None.
_VALUE = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))
_RECORDS = st.lists(
    st.tuples(
        st.one_of(st.text(max_size=4), st.integers()),
        st.lists(st.tuples(st.sampled_from(_FIELDS), _OBJECTS), max_size=6).map(dict),
        st.lists(_VALUE, min_size=len(_COLUMNS), max_size=len(_COLUMNS)),
    ),
    max_size=25,
)


def _expected(records: list[tuple[Any, dict[str, Any], list[float | None]]]):
    """The rows by the documented rule: renamed metadata (the last field of a name wins), the
    table's metadata order (first met), then the metric columns."""
    named = []
    order: dict[str, None] = {}
    for _, metadata, _ in records:
        renamed: dict[str, Any] = {}
        for key, value in metadata.items():
            renamed[metadata_column(key, _COLUMNS)] = value
        order.update(dict.fromkeys(renamed))
        named.append(renamed)
    rows = []
    for (record_id, _, values), renamed in zip(records, named, strict=True):
        row = {"id": record_id}
        row.update((name, renamed[name]) for name in order if name in renamed)
        row.update(zip(_COLUMNS, values, strict=True))
        rows.append(row)
    return rows, list(order)


@settings(max_examples=300, deadline=None)
@given(records=_RECORDS)
def test_any_rows_read_back_exactly(records: list[Any]) -> None:
    table = PerQueryTable(_COLUMNS)
    for record_id, metadata, values in records:
        table.append(record_id, metadata, values)
    rows, metadata_columns = _expected(records)
    assert _same_rows(table, rows)
    assert all(_same(table[i], rows[i]) for i in range(-len(rows), len(rows)))
    assert _same(table[1::3], rows[1::3])
    assert _same_rows(pickle.loads(pickle.dumps(table)), rows)
    assert table.column_names() == ["id", *metadata_columns, *_COLUMNS]
    for name in [*table.column_names(), "never"]:
        assert _same(table.column(name), [row.get(name) for row in rows])
    values, missing = table.values(), table.none_mask()
    assert values.shape == missing.shape == (len(rows), len(_COLUMNS))
    for i, row in enumerate(rows):
        for j, name in enumerate(_COLUMNS):
            assert missing[i, j] == (row[name] is None)
            if row[name] is not None:
                assert _same(float(values[i, j]), row[name])


def test_none_and_nan_are_told_apart() -> None:
    table = PerQueryTable(["a", "b"])
    table.append("q1", {}, [0.5, -0.0])
    table.append("q2", {}, [None, math.nan])
    table.append("q3", {}, [5e-324, None])
    assert table.column("a") == [0.5, None, 5e-324]
    b = table.column("b")
    assert b[0] == 0.0
    assert math.copysign(1, b[0]) == -1
    assert math.isnan(b[1])
    assert b[2] is None
    assert table[1]["a"] is None
    assert math.isnan(table[1]["b"])
    # a value that is not a number fails before the table changes
    with pytest.raises(TypeError):
        table.append("bad", {"x": 1}, ["n/a", 0.5])  # type: ignore[list-item]
    assert len(table) == 3
    assert table.column_names() == ["id", "a", "b"]


def test_metadata_clashes_are_renamed() -> None:
    table = PerQueryTable(["recall@1", "ndcg@1"])
    table.append("q1", {"id": "inner", "recall@1": "clash", "topic": 1}, [0.5, 1.0])
    # a record that has both "ndcg@1" and "metadata.ndcg@1": the later one wins, in the first
    # one's place (as assigning them to a dict in order would)
    table.append("q2", {"ndcg@1": "first", "topic": 2, "metadata.ndcg@1": "second"}, [0.0, 0.0])
    assert list(table[0]) == [
        "id",
        "metadata.id",
        "metadata.recall@1",
        "topic",
        "recall@1",
        "ndcg@1",
    ]
    assert table[0]["metadata.id"] == "inner"
    assert table[0]["id"] == "q1"
    assert table[1] == {
        "id": "q2",
        "topic": 2,
        "metadata.ndcg@1": "second",
        "recall@1": 0.0,
        "ndcg@1": 0.0,
    }
    assert metadata_column("id", ["x"]) == "metadata.id"
    assert metadata_column("x", ["x"]) == "metadata.x"
    assert metadata_column("y", ["x"]) == "y"


def test_pandas_equals_a_frame_of_the_dicts() -> None:
    pd = pytest.importorskip("pandas")
    table = PerQueryTable(["v", "w", "never"])
    table.append("a", {"q": "x", "n": 1}, [0.5, 1.0, None])
    table.append("b", {"n": None}, [None, 2.0, None])
    table.append("c", {"q": None, "m": [1]}, [1.5, 3.0, None])
    frame = EvaluationResult(table, {}, {}).to_pandas()
    pd.testing.assert_frame_equal(frame, pd.DataFrame(list(table), columns=table.column_names()))
    assert frame["v"].dtype == np.float64


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.text(min_size=1, max_size=4),
            st.fixed_dictionaries(
                {"q": st.one_of(st.none(), st.text(max_size=4))},
                optional={"n": st.one_of(st.none(), st.integers(-5, 5))},
            ),
            st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), min_size=2, max_size=2),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_pandas_and_arrow_tables_equal_those_of_the_dicts(records: list[Any]) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    table = PerQueryTable(["v", "w"])
    for record_id, metadata, values in records:
        table.append(record_id, metadata, values)
    rows = list(table)
    pd.testing.assert_frame_equal(
        table.to_pandas(), pd.DataFrame(rows, columns=table.column_names())
    )
    # every column of the table, a field a record lacks as null
    full = [{name: row.get(name) for name in table.column_names()} for row in rows]
    assert arrow_table(table).equals(pa.Table.from_pylist(full))


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
def test_loaded_rows_are_a_table_when_they_fit_and_a_list_otherwise(
    tmp_path: Path, suffix: str
) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    table = PerQueryTable(["v"])
    table.append("a", {"q": "x"}, [0.25])
    table.append("b", {"q": "y"}, [None])
    aggregate: dict[str, float | None] = {"v": 0.25, "micro_v": 0.0}
    loaded = EvaluationResult.load(
        EvaluationResult(table, aggregate, {}).save(tmp_path / f"t{suffix}")
    )
    assert isinstance(loaded.per_query, PerQueryTable)
    assert _same_rows(loaded.per_query, list(table))
    # values that are not floats (rows made by hand): the rows stay dicts, as written
    rows = [{"id": "a", "v": 1}, {"id": "b", "v": 2}]
    path = EvaluationResult(rows, aggregate, {}).save(tmp_path / f"l{suffix}")
    assert EvaluationResult.load(path).per_query == rows


def test_memory_of_a_stored_row_is_a_fraction_of_a_dict() -> None:
    # What the table holds for 36 metric columns: the block (8 bytes a value), one pointer per
    # id and per metadata column; not 36 float objects and a dict per row.
    plan, scored = _scored(METRICS, (1, 3, 5, 10), _records(50))
    aggregator = Aggregator(plan, "records")
    aggregator.add_scored(scored)
    rows = aggregator.rows
    assert len(rows.metric_columns) == 36
    assert len(rows._block) == 36 * 50
    assert rows._block.itemsize == 8
    assert all(len(column) == 50 for column in rows._metadata.values())


# -- exact sums and means ---------------------------------------------------------------------


_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(
    columns=st.integers(min_value=1, max_value=4).flatmap(
        lambda width: st.lists(
            st.lists(_FINITE, min_size=width, max_size=width), min_size=1, max_size=40
        )
    )
)
def test_block_sums_equal_the_value_by_value_sums(columns: list[list[float]]) -> None:
    block = np.array(columns, dtype=np.float64)
    expected = [sum(units(row[j]) for row in columns) for j in range(block.shape[1])]
    assert column_sums(block) == expected


def test_block_sums_at_the_edges() -> None:
    tiny, huge = 5e-324, 1.7976931348623157e308
    values = [tiny, -tiny, 2.2250738585072014e-308, huge, -huge, -0.0, 0.0, 1 / 3, 1e-300]
    rows = [[v, values[(i + 3) % len(values)]] for i, v in enumerate(values * 50)]
    block = np.array(rows)
    assert column_sums(block) == [
        sum(units(r[0]) for r in rows),
        sum(units(r[1]) for r in rows),
    ]
    with pytest.raises(ValueError, match="finite"):
        column_sums(np.array([[0.5], [math.nan]]))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_FINITE, max_size=30), seed=st.integers(0, 2**32))
def test_exact_mean_is_the_rational_mean_rounded_once_in_any_order(
    values: list[float], seed: int
) -> None:
    shuffled = list(values)
    random.Random(seed).shuffle(shuffled)
    if not values:
        assert exact_mean(values) is None
        assert exact_sum(values) == 0
        return
    exact = sum(map(Fraction, values)) / len(values)
    mean = exact_mean(values)
    assert (
        mean == exact_mean(shuffled) == exact_mean(np.array(shuffled)) == exact_mean(iter(values))
    )
    if abs(exact) <= Fraction(1.7976931348623157e308):
        assert mean == float(exact)
    assert exact_sum(values) == exact_sum(np.array(shuffled)) == sum(map(units, values))


def test_aggregate_is_the_exact_mean_rounded_once() -> None:
    # More rows than one fold, with None rows in between: the mean of each column is the exact
    # rational mean of its values, rounded once.
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
    ]
    records = _records(2 * FOLD_ROWS + 300, seed=11)
    result = RetrievalEvaluator(records, metrics, workers=1).run(k=[1, 3, 10])
    for column, mean in result.aggregate.items():
        if column.startswith("micro_"):
            continue
        values = [row[column] for row in result.per_query if row[column] is not None]
        assert 0 < len(values) < len(result.per_query)
        assert mean == float(sum(map(Fraction, values)) / len(values)), column


def test_streamed_rows_and_sums_equal_kept_ones(tmp_path: Path) -> None:
    records = _records(1500)
    plan, scored = _scored(METRICS, (1, 3), records)
    kept = Aggregator(plan, "r")
    sunk: list[dict[str, Any]] = []
    streamed = Aggregator(plan, "r", keep_rows=False, row_sink=sunk.append)
    kept.add_scored(scored)
    streamed.add_scored(scored)
    metadata = list(kept.rows.metadata_columns)
    assert _same_rows(kept.rows, [_in_table_order(row, metadata) for row in sunk])
    assert len(streamed.rows) == 0
    assert streamed.aggregate() == kept.aggregate()
    # the partial sums of two halves merge to the same aggregate (the distributed path)
    first, second = Aggregator(plan, "r", keep_rows=False), Aggregator(plan, "r", keep_rows=False)
    items = list(read_records(records))
    first.add_scored(score_columns(plan, items[:777]))
    second.add_scored(score_columns(plan, items[777:]))
    merged = Aggregator(plan, "r", keep_rows=False)
    merged.merge(second.state())
    merged.merge(first.state())
    assert merged.aggregate() == kept.aggregate()


def _row(plan: ScoringPlan, values: dict[str, float]) -> ScoredBatch:
    """A scored batch of one row holding ``values`` (by column)."""
    return ScoredBatch(
        errors={},
        index=[0],
        ids=["q"],
        metadata=[{}],
        columns=tuple(plan.columns()),
        values=np.array([[values[column] for column in plan.columns()]], dtype=np.float64),
        skipped=None,
        counts={},
        span_counts={},
        dropped={},
        num_relevant=np.ones(1, dtype=np.int64),
        num_retrieved=np.ones(1, dtype=np.int64),
        empty_ground_truth=np.zeros(1, dtype=bool),
        tokenless=np.zeros(1, dtype=np.int64),
        context={},
    )


def test_a_nan_value_still_fails_at_once_and_changes_nothing() -> None:
    plan = ScoringPlan((IDPrecisionRecallF1(),), (None,))
    aggregator = Aggregator(plan, "r")
    row = {"context_precision": 0.5, "context_recall": 0.5, "context_f1": 0.5}
    aggregator.add_scored(_row(plan, row))
    with pytest.raises(ValueError, match="NaN"):
        aggregator.add_scored(_row(plan, {**row, "context_precision": math.nan}))
    with pytest.raises(OverflowError):
        aggregator.add_scored(_row(plan, {**row, "context_precision": math.inf}))
    assert len(aggregator.rows) == aggregator.summary()["queries"] == 1
    assert aggregator.aggregate()["context_precision"] == 0.5


def test_parquet_gives_dicts_and_mixed_types_back(tmp_path: Any) -> None:
    # Found by a trial at scale: dict metadata came back from a saved Parquet result as JSON
    # text (it was encoded, and not named among the columns to decode).
    pytest.importorskip("pyarrow")
    rows = [
        {"id": f"q{i}", "meta": {"i": i}, "tag": i if i % 2 else f"t{i}", "x": [i, "a"]}
        for i in range(6)
    ]
    records = [{**row, "retrieved_ids": ["a", "b"], "relevant_ids": ["a"]} for row in rows]
    result = RetrievalEvaluator(records, ["precision@1"], workers=1).run()
    for suffix in (".parquet", ".jsonl", ".json"):
        path = result.save(tmp_path / f"r{suffix}")
        loaded = EvaluationResult.load(path)
        assert list(loaded.per_query) == list(result.per_query), suffix
    assert EvaluationResult.load(tmp_path / "r.parquet").per_query[2]["meta"] == {"i": 2}
