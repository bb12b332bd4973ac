"""Per-query rows stored by column (PerQueryRows) and the exact sums folded in blocks.

The store must give back exactly the dicts that went in: same keys in the same order, the same
types, floats bit for bit, None as None. The reference for an evaluator's rows is the dict the
aggregator streams to ``row_sink`` (what every row was before the store); for hand-made rows,
the rows themselves.
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
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.errors import InvalidArgumentTypeError
from ctxeval.io.readers import read_records
from ctxeval.results import (
    _FOLD_ROWS,
    Aggregator,
    EvaluationResult,
    PerQueryRows,
    _arrow_table,
    _exact,
    _exact_column_sums,
)
from ctxeval.scoring import RowResult, ScoringPlan, score_batch

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
    return plan, score_batch(plan, list(read_records(records)))


# -- the evaluator's rows ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["zero", "skip"])
@pytest.mark.parametrize("ks", [(None,), (1, 3, 5)])
def test_kept_rows_equal_the_dict_rows_exactly(policy: str, ks: tuple[int | None, ...]) -> None:
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth=policy),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth=policy),
    ]
    plan, items = _scored(metrics, ks, _records(300))
    column = "context_recall" if ks == (None,) else "context_recall@1"
    dicts: list[dict[str, Any]] = []
    aggregator = Aggregator(plan, "records", row_sink=dicts.append)
    for item in items:
        aggregator.add(item)
    rows = aggregator.result().per_query
    assert isinstance(rows, PerQueryRows)
    assert len(rows) == len(dicts) == 300
    assert _same_rows(rows, dicts)
    if policy == "skip":
        assert any(row[column] is None for row in rows)
    # metadata named like a column is renamed, as in the dict rows
    clash = next(row for row in rows if f"metadata.{column}" in row)
    assert clash[f"metadata.{column}"] == "a clash"
    assert any(type(row.get("tokens")) is int and row["tokens"] > 2**63 for row in rows)
    assert any(row.get("flag") is True for row in rows)


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


def test_rows_behave_as_a_list() -> None:
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
    assert not PerQueryRows()
    assert rows != plain[:-1]
    assert rows != [*plain[:-1], {"id": "other"}]
    assert (rows == (1, 2)) is False
    assert repr(rows) == repr(plain)
    # a dict read from the store is the caller's: changing it leaves the row as it was
    rows[0]["id"] = "changed"
    assert rows[0]["id"] == "q0"
    with pytest.raises(TypeError):
        hash(rows)


def test_pickle_and_copies_keep_every_row() -> None:
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
    ]
    result = RetrievalEvaluator(_records(200), metrics, workers=1).run(k=[1, 5])
    again = pickle.loads(pickle.dumps(result))
    assert isinstance(again.per_query, PerQueryRows)
    assert _same_rows(again.per_query, list(result.per_query))
    assert again == result
    # and the copy keeps growing like the original
    again.per_query.append({"id": "extra", "context_recall@1": 0.25})
    assert again.per_query[-1] == {"id": "extra", "context_recall@1": 0.25}
    assert len(again.per_query) == len(result.per_query) + 1


def test_workers_give_the_same_stored_rows() -> None:
    records = _records(700)
    one = RetrievalEvaluator(records, METRICS, workers=1, batch_size=64).run(k=[1, 3])
    two = RetrievalEvaluator(records, METRICS, workers=2, batch_size=64).run(k=[1, 3])
    assert _same_rows(two.per_query, list(one.per_query))
    assert two.aggregate == one.aggregate


def test_append_and_to_dict() -> None:
    result = RetrievalEvaluator(_records(5), METRICS, workers=1).run()
    result.per_query.append({"id": "x", "note": [1, 2]})  # type: ignore[attr-defined]
    assert result.per_query[-1] == {"id": "x", "note": [1, 2]}
    data = result.to_dict()
    assert type(data["per_query"]) is list
    assert len(data["per_query"]) == 6
    assert json.loads(json.dumps(data))["per_query"][-1] == {"id": "x", "note": [1, 2]}
    with pytest.raises(InvalidArgumentTypeError, match="per-query rows are dicts"):
        result.per_query.append(["not", "a", "dict"])  # type: ignore[attr-defined]


# -- any rows ---------------------------------------------------------------------------------

_KEYS = ["id", "a", "b", "c", "ndcg@5", "question", "x y"]
_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_ROWS = st.lists(
    st.lists(st.tuples(st.sampled_from(_KEYS), _VALUES), max_size=7).map(dict), max_size=25
)


@settings(max_examples=300, deadline=None)
@given(rows=_ROWS, split=st.integers(min_value=0, max_value=25))
def test_any_rows_round_trip_exactly(rows: list[dict[str, Any]], split: int) -> None:
    store = PerQueryRows(rows[:split])
    store.extend(rows[split:])
    assert _same_rows(store, rows)
    assert all(_same(store[i], rows[i]) for i in range(-len(rows), len(rows)))
    assert _same(store[1::3], rows[1::3])
    assert _same_rows(pickle.loads(pickle.dumps(store)), rows)
    order: dict[str, None] = {}
    for row in rows:
        order.update(dict.fromkeys(row))
    assert store.column_names() == list(order)
    for name in [*order, "never"]:
        assert _same(store.column(name), [row.get(name) for row in rows])


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "id": st.text(min_size=1, max_size=4),
                "v": st.one_of(st.floats(allow_nan=False), st.none()),
                "w": st.floats(allow_nan=False, allow_infinity=False),
                "q": st.one_of(st.none(), st.text(max_size=4)),
                "n": st.one_of(st.none(), st.integers(-5, 5)),
            }
        ),
        max_size=12,
    )
)
def test_pandas_and_arrow_tables_equal_those_of_the_dicts(rows: list[dict[str, Any]]) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    store = PerQueryRows(rows)
    pd.testing.assert_frame_equal(EvaluationResult(store, {}, {}).to_pandas(), pd.DataFrame(rows))
    assert _arrow_table(store).equals(pa.Table.from_pylist(rows))


def test_pandas_and_arrow_with_rows_of_different_keys() -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    rows = [{"id": "a", "v": 0.5}, {"id": "b", "v": None, "m": "x"}, {"v": 1.5, "id": "c"}]
    store = PerQueryRows(rows)
    pd.testing.assert_frame_equal(store.to_pandas(), pd.DataFrame(rows))
    assert _arrow_table(store).equals(pa.Table.from_pylist(rows))  # the first row's columns


def test_rows_with_keys_of_their_own() -> None:
    # Past 64 list columns, a key that few rows have is kept only for those rows.
    rows = [
        {"id": f"q{i}", f"only-{i}": [i], "shared": i % 3 or None, "v": i / 7} for i in range(300)
    ]
    store = PerQueryRows(rows)
    assert _same_rows(store, rows)
    assert _same(store.column("only-250"), [[250] if i == 250 else None for i in range(300)])
    assert sum(type(column) is list for column in store._objects.values()) == 64
    assert max(len(layout.absent) for layout in store._layouts) <= 64
    # the same through the evaluator: metadata keys of their own, some named like a column
    records = [
        {**record, f"tag{i}": i, "context_recall@1": "clash"}
        for i, record in enumerate(_records(150))
    ]
    plan, items = _scored(METRICS, (1,), records)
    dicts: list[dict[str, Any]] = []
    aggregator = Aggregator(plan, "records", row_sink=dicts.append)
    for item in items:
        aggregator.add(item)
    assert _same_rows(aggregator.rows, dicts)
    assert dicts[7]["tag7"] == 7
    assert dicts[7]["metadata.context_recall@1"] == "clash"


def test_memory_of_a_stored_row_is_a_fraction_of_a_dict() -> None:
    # What the store holds for 36 metric columns (37 with the id): the block (8 bytes a value),
    # one pointer per id and one byte per row for its keys; not 36 float objects and a dict.
    plan, items = _scored(METRICS, (1, 3, 5, 10), _records(50))
    aggregator = Aggregator(plan, "records")
    for item in items:
        aggregator.add(item)
    rows = aggregator.rows
    assert len(rows._values) == 36
    assert len(rows._block) == 36 * 50
    assert rows._block.itemsize == 8
    assert rows._row_layout.itemsize == 1


# -- exact sums in blocks ---------------------------------------------------------------------


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
    expected = [sum(_exact(row[j]) for row in columns) for j in range(block.shape[1])]
    assert _exact_column_sums(block) == expected


def test_block_sums_at_the_edges() -> None:
    tiny, huge = 5e-324, 1.7976931348623157e308
    values = [tiny, -tiny, 2.2250738585072014e-308, huge, -huge, -0.0, 0.0, 1 / 3, 1e-300]
    rows = [[v, values[(i + 3) % len(values)]] for i, v in enumerate(values * 50)]
    block = np.array(rows)
    assert _exact_column_sums(block) == [
        sum(_exact(r[0]) for r in rows),
        sum(_exact(r[1]) for r in rows),
    ]


def test_aggregate_is_the_exact_mean_rounded_once() -> None:
    # More rows than one fold, with None rows in between: the mean of each column is the exact
    # rational mean of its values, rounded once.
    metrics = [
        PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
        RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
    ]
    records = _records(2 * _FOLD_ROWS + 300, seed=11)
    result = RetrievalEvaluator(records, metrics, workers=1).run(k=[1, 3, 10])
    for column, mean in result.aggregate.items():
        if column.startswith("micro_"):
            continue
        values = [row[column] for row in result.per_query if row[column] is not None]
        assert 0 < len(values) < len(result.per_query)
        assert mean == float(sum(map(Fraction, values)) / len(values)), column


def test_streamed_rows_and_sums_equal_kept_ones(tmp_path: Path) -> None:
    plan, items = _scored(METRICS, (1, 3), _records(1500))
    kept = Aggregator(plan, "r")
    sunk: list[dict[str, Any]] = []
    streamed = Aggregator(plan, "r", keep_rows=False, row_sink=sunk.append)
    for item in items:
        kept.add(item)
        streamed.add(item)
    assert _same_rows(kept.rows, sunk)
    assert len(streamed.rows) == 0
    assert streamed.aggregate() == kept.aggregate()
    # the partial sums of two halves merge to the same aggregate (the distributed path)
    first, second = Aggregator(plan, "r", keep_rows=False), Aggregator(plan, "r", keep_rows=False)
    for n, item in enumerate(items):
        (first if n < 777 else second).add(item)
    merged = Aggregator(plan, "r", keep_rows=False)
    merged.merge(second.state())
    merged.merge(first.state())
    assert merged.aggregate() == kept.aggregate()


def _row(values: dict[str, Any]) -> RowResult:
    return RowResult(
        index=0,
        id="q",
        metadata={},
        values=values,
        counts={},
        num_relevant=1,
        num_retrieved=1,
        empty_ground_truth=False,
    )


def test_a_nan_value_still_fails_at_once() -> None:
    plan = ScoringPlan((IDPrecisionRecallF1(),), (None,))
    aggregator = Aggregator(plan, "r")
    aggregator.add(_row({"context_precision": 0.5, "context_recall": 0.5, "context_f1": 0.5}))
    with pytest.raises(ValueError, match="NaN"):
        aggregator.add(
            _row({"context_precision": math.nan, "context_recall": 0.5, "context_f1": 0.5})
        )
    with pytest.raises(OverflowError):
        aggregator.add(
            _row({"context_precision": math.inf, "context_recall": 0.5, "context_f1": 0.5})
        )


def test_values_that_are_not_floats_are_kept_and_summed_exactly() -> None:
    plan = ScoringPlan((IDRankedRetrievalMetrics(),), (None,))
    columns = plan.columns()
    aggregator = Aggregator(plan, "r")
    odd = [1, np.float64(0.25), None, 2**60 + 1, 0.5, 0.75]
    for value in odd:
        aggregator.add(_row({column: value for column in columns}))
    stored = [row[columns[0]] for row in aggregator.rows]
    assert _same(stored, [1, np.float64(0.25), None, 2**60 + 1, 0.5, 0.75])
    expected = sum(Fraction(v) for v in odd if v is not None) / 5
    assert aggregator.aggregate()[columns[0]] == float(expected)
