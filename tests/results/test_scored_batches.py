"""Rows handed over a batch at a time (:class:`~ctxeval.scoring.scored.ScoredBatch`).

Folding a scored batch's columns (``Aggregator.add_scored``) must not depend on how the records
were cut into batches: batches of 7 or 64 records give what one record at a time gives, to the
last bit: aggregates, summary, skipped records, per-query rows, the rows streamed to a sink and
the state a worker sends back; with bad records between the rows, values skipped by policy,
budgets, ID mode and span measures. ``PerQueryTable.append_many`` must equal ``append`` row by
row.
"""

from __future__ import annotations

import itertools
import json
import pickle
import random
import struct
from dataclasses import replace
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
from ctxeval.cutoffs.cutoff import parse_budget
from ctxeval.io.corpus import load_corpus
from ctxeval.io.readers import read_records
from ctxeval.results import PerQueryTable
from ctxeval.results.aggregation import Aggregator
from ctxeval.scoring.driver import ScoringPlan, score_columns
from ctxeval.scoring.scored import ScoredBatch
from ctxeval.text.locate import Locator

ROOT = Path(__file__).resolve().parents[2]
STRATEGY = RougeChunkMatch()
WORDS = "alpha beta gamma delta epsilon zeta eta theta".split()


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down; floats bit for bit, dict keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _text_records(count: int, seed: int) -> list[dict[str, Any]]:
    """Text records with metadata, empty ground truth and bad records among them."""
    rng = random.Random(seed)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))

    out: list[dict[str, Any]] = []
    for i in range(count):
        chunks = [text() for _ in range(rng.randint(0, 6))]
        truth = [rng.choice(chunks) if chunks and rng.random() < 0.6 else text()]
        if rng.random() < 0.1:
            truth = []
        if rng.random() < 0.1:
            chunks.append("ωμέγα δέλτα")  # no tokens for the ROUGE tokenizer: tokenless
        item: dict[str, Any] = {
            "id": f"q{i}",
            "retrieved_context": chunks,
            "ground_truth_context": truth,
        }
        if rng.random() < 0.08:
            item["retrieved_context"] = 5  # a bad record
        item.update(
            rng.choice(
                [{}, {"topic": text()}, {"context_recall": "a clash", "n": i}, {"id2": None}]
            )
        )
        out.append(item)
    return out


def _id_records(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs = [f"d{n}" for n in range(12)]
    out: list[dict[str, Any]] = []
    for i in range(count):
        item: dict[str, Any] = {
            "id": f"q{i}",
            "retrieved_ids": rng.sample(docs, rng.randint(0, 8)),
            "relevant_ids": rng.sample(docs, rng.randint(0, 3)),
        }
        if rng.random() < 0.08:
            item["retrieved_ids"] = 7
        out.append(item)
    return out


def _span_records(count: int) -> list[dict[str, Any]]:
    lines = (ROOT / "fixtures" / "runs" / "fixed-100.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines[:count]]


def _case(name: str) -> tuple[ScoringPlan, list[dict[str, Any]]]:
    if name == "text":
        metrics = (
            PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
            RankedRetrievalMetrics(STRATEGY),
        )
        return ScoringPlan(metrics, (None, 1, 3)), _text_records(120, 1)
    if name == "text-error":
        metrics = (
            PrecisionRecallF1(STRATEGY, empty_ground_truth="error"),
            RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
        )
        return ScoringPlan(metrics, (None, 2)), _text_records(120, 2)
    if name == "budgets":
        metrics = (
            PrecisionRecallF1(STRATEGY, empty_ground_truth="skip"),
            RankedRetrievalMetrics(STRATEGY, empty_ground_truth="skip"),
        )
        ks = (2, parse_budget("12w"), parse_budget("40c"), None)
        plan = ScoringPlan(metrics, ks, budget_policy="truncate")
        return plan, _text_records(120, 3)
    if name == "ids":
        metrics = (
            IDPrecisionRecallF1(empty_ground_truth="skip"),
            IDRankedRetrievalMetrics(),
        )
        return ScoringPlan(metrics, (None, 1, 5)), _id_records(120, 4)
    assert name == "spans"
    corpus = ROOT / "fixtures" / "corpus"
    evaluator = RetrievalEvaluator(
        [], ["span_iou@5", "span_recall", "span_f1(convention='chroma')@3", "ndcg@5"]
    )
    plan = ScoringPlan(evaluator.metrics_for("text"), (1, 5), locator=Locator(load_corpus(corpus)))
    return plan, _span_records(40)


CASES = ["text", "text-error", "budgets", "ids", "spans"]


def _batches(plan: ScoringPlan, records: list[dict[str, Any]], size: int) -> list[list[Any]]:
    items = list(read_records(records))
    return [items[start : start + size] for start in range(0, len(items), size)]


def _aggregators(plan: ScoringPlan) -> tuple[Aggregator, list[dict[str, Any]]]:
    sunk: list[dict[str, Any]] = []
    return Aggregator(plan, "r", row_sink=sunk.append), sunk


def _assert_same_aggregators(
    got: Aggregator, got_rows: list[Any], want: Aggregator, want_rows: list[Any]
) -> None:
    assert _same(got_rows, want_rows)
    mine, theirs = got.state().values, want.state().values
    assert list(mine) == list(theirs)
    for name in mine:
        if name == "rows":
            assert _same(list(mine[name]), list(theirs[name]))
        else:
            assert _same(mine[name], theirs[name]), name
    first, second = got.result(), want.result()
    assert _same(first.aggregate, second.aggregate)
    assert _same(first.summary, second.summary)
    assert _same(first.skipped, second.skipped)
    assert _same(list(first.per_query), list(second.per_query))
    assert first.per_query.metadata_columns == second.per_query.metadata_columns
    assert np.array_equal(first.per_query.none_mask(), second.per_query.none_mask())


@pytest.mark.parametrize("size", [7, 64])
@pytest.mark.parametrize("name", CASES)
def test_batches_fold_as_their_rows_one_by_one(name: str, size: int) -> None:
    plan, records = _case(name)
    batched, batched_rows = _aggregators(plan)
    single, single_rows = _aggregators(plan)
    for batch in _batches(plan, records, size):
        scored = score_columns(plan, batch)
        assert isinstance(scored, ScoredBatch)
        assert len(scored) == len(batch)
        batched.add_scored(pickle.loads(pickle.dumps(scored)))  # as a worker sends it
        for item in batch:
            single.add_scored(score_columns(plan, [item]))
    assert batched.skipped or name == "spans"  # bad records were among the rows
    _assert_same_aggregators(batched, batched_rows, single, single_rows)


@pytest.mark.parametrize("name", CASES)
def test_a_batch_stops_at_its_first_bad_record(name: str) -> None:
    plan, records = _case(name)
    if name == "spans":
        records = [*records[:9], {"id": "bad", "retrieved_context": 1}, *records[9:]]
    batched, batched_rows = _aggregators(plan)
    single, single_rows = _aggregators(plan)
    stopped = None
    for batch in _batches(plan, records, 16):
        stopped = batched.add_scored(score_columns(plan, batch), stop_at_error=True)
        if stopped is not None:
            break
    first_bad = None
    for item in (item for batch in _batches(plan, records, 16) for item in batch):
        first_bad = single.add_scored(score_columns(plan, [item]), stop_at_error=True)
        if first_bad is not None:
            break
    assert stopped is not None
    assert stopped == first_bad
    _assert_same_aggregators(batched, batched_rows, single, single_rows)


def test_the_reference_implementation_runs_through_the_same_driver() -> None:
    # Only the kernel differs: the reference formulas' rows come as columns too.
    plan, records = _case("budgets")
    reference = replace(plan, implementation="reference")
    core, _ = _aggregators(plan)
    ref, _ = _aggregators(reference)
    for batch in _batches(plan, records, 10):
        core.add_scored(score_columns(plan, batch))
        scored = score_columns(reference, batch)
        assert isinstance(scored, ScoredBatch)
        ref.add_scored(scored)
    assert _same(core.result().aggregate, ref.result().aggregate)
    assert _same(list(core.result().per_query), list(ref.result().per_query))


@pytest.mark.parametrize(
    ("bad", "error"), [(float("nan"), ValueError), (float("inf"), OverflowError)]
)
def test_a_value_without_an_exact_sum_fails(bad: float, error: type[Exception]) -> None:
    plan, records = _case("text")
    (batch,) = _batches(plan, records[:20], 20)
    scored = score_columns(plan, batch)
    assert isinstance(scored, ScoredBatch)
    values = scored.values.copy()
    values[3, 2] = bad
    broken = replace(scored, values=values)
    with pytest.raises(error):
        Aggregator(plan, "r").add_scored(broken)


def test_huge_finite_values_sum_exactly() -> None:
    plan, records = _case("ids")
    (batch,) = _batches(plan, records[:30], 30)
    scored = score_columns(plan, batch)
    assert isinstance(scored, ScoredBatch)
    values = scored.values.copy()
    values[:, 0] = 1.7e308  # a row's float sum overflows: its values are taken one by one
    huge, plain = Aggregator(plan, "r"), Aggregator(plan, "r")
    huge.add_scored(replace(scored, values=values))
    plain.add_scored(scored)
    got, want = huge.result().aggregate, plain.result().aggregate
    first = scored.columns[0]
    assert got[first] == 1.7e308  # the exact mean of equal values
    assert _same(
        {c: v for c, v in got.items() if c != first}, {c: v for c, v in want.items() if c != first}
    )


# -- PerQueryTable.append_many ---------------------------------------------------------------

COLUMNS = ["context_recall", "ndcg"]
field_names = st.sampled_from(["topic", "id", "ndcg", "n", "metadata.n"])
metadata = st.dictionaries(field_names, st.one_of(st.none(), st.integers(), st.text(max_size=3)))
value = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))
row = st.tuples(st.text(max_size=3), metadata, st.lists(value, min_size=2, max_size=2))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(row, max_size=30), cuts=st.lists(st.integers(0, 30), max_size=4))
def test_append_many_equals_append_row_by_row(
    rows: list[tuple[str, dict[str, Any], list[float | None]]], cuts: list[int]
) -> None:
    one, many = PerQueryTable(COLUMNS), PerQueryTable(COLUMNS)
    for record_id, fields, values in rows:
        one.append(record_id, fields, values)
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    for start, end in itertools.pairwise(bounds):
        part = rows[start:end]
        block = np.array([[0.0 if v is None else v for v in r[2]] for r in part]).reshape(-1, 2)
        none = np.array([[v is None for v in r[2]] for r in part], dtype=bool).reshape(-1, 2)
        many.append_many([r[0] for r in part], [r[1] for r in part], block, none)
    assert _same(list(many), list(one))
    assert many.metadata_columns == one.metadata_columns
    assert np.array_equal(many.values(), one.values(), equal_nan=True)
    assert np.array_equal(many.none_mask(), one.none_mask())


def test_append_many_checks_its_shapes() -> None:
    table = PerQueryTable(COLUMNS)
    with pytest.raises(ValueError, match="shape"):
        table.append_many(["a"], [{}], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="2 ids"):
        table.append_many(["a", "b"], [{}], np.zeros((1, 2)))
