"""The evaluation path (the vectorised core, ``metrics/core.py``) equals the reference path
(``implementation="reference"``: record by record through ``metrics/reference.py``) exactly.

Every value is compared with ``==`` (bit for bit), on random batches that include rows matching
several ground-truth units (credit rules), empty ground truth (policies), graded ground truth,
sentence units, duplicates and bad records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import (
    ExactChunkMatch,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.foundation.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
)
from ctxeval.judging import batch as batch_module
from ctxeval.judging.batch import (
    FlatPairs,
    judge_batch,
    judge_flat,
    stack_judgments,
    tie_ends_array,
)
from ctxeval.judging.judgments import judge_ids, judge_matrix, with_tie_ends
from ctxeval.judging.ties import ranked_tie_ends
from ctxeval.matching import ExactSentenceMatch
from ctxeval.matching.base import FlatMatches
from ctxeval.metrics import reference as formulas
from ctxeval.metrics.core import measure_values, ndcg, set_counts
from ctxeval.records.model import Record, RecordError
from ctxeval.scoring.driver import ScoringPlan
from scored_rows import Row, score_rows


def contains(retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
    """A chunk is relevant to every ground-truth text it contains: rows can match several."""
    return np.array([[g in r for g in ground_truth] for r in retrieved], dtype=bool).reshape(
        len(retrieved), len(ground_truth)
    )


WORDS = ["alpha", "beta", "gamma", "delta"]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
graded = st.builds(
    lambda t, g: {"text": t, "grade": g}, text, st.sampled_from([0.5, 1.0, 2.0, 3.0])
)
record = st.fixed_dictionaries(
    {
        "retrieved_context": st.lists(text, max_size=8),
        "ground_truth_context": st.one_of(
            st.lists(text, max_size=4), st.lists(graded, min_size=1, max_size=4)
        ),
    }
)

PLANS = {
    "default": lambda s: [PrecisionRecallF1(s), RankedRetrievalMetrics(s)],
    "continuous_eval": lambda s: [
        PrecisionRecallF1(s),
        RankedRetrievalMetrics(s, convention="continuous_eval"),
    ],
    "exponential": lambda s: [
        RankedRetrievalMetrics(s, gain="exponential", precision_denominator="retrieved")
    ],
    "first_come": lambda s: [
        RankedRetrievalMetrics(s, credit="first_come", ap_denominator="hits"),
        PrecisionRecallF1(s, k=2),
    ],
    "skip_empty": lambda s: [
        PrecisionRecallF1(s, empty_ground_truth="skip"),
        RankedRetrievalMetrics(s, empty_ground_truth="skip"),
    ],
    "error_empty": lambda s: [
        PrecisionRecallF1(s, empty_ground_truth="error"),
        RankedRetrievalMetrics(s, ideal="retrieved"),
    ],
    "sentences": lambda s: [
        PrecisionRecallF1(ExactSentenceMatch(), k=2),
        RankedRetrievalMetrics(s),
    ],
}
STRATEGIES = {
    "contains": contains,
    "exact": ExactChunkMatch(),
    "rouge": RougeChunkMatch(threshold=0.5),
}


def records_of(raw: list[dict[str, object]]) -> list[Record | RecordError]:
    from ctxeval.io.readers import read_records

    return list(read_records([{"id": f"q{i}", **r} for i, r in enumerate(raw)]))


def assert_same(bulk: Row | RecordError, single: Row | RecordError) -> None:
    assert type(bulk) is type(single)
    if isinstance(bulk, RecordError):
        assert bulk == single
        return
    assert isinstance(single, Row)
    assert list(bulk.values) == list(single.values)  # same columns, same order
    for column, value in single.values.items():
        assert bulk.values[column] == value, column  # exact, not approximate
    assert bulk.counts == single.counts
    assert bulk == single


@pytest.mark.parametrize("plan_name", sorted(PLANS))
@pytest.mark.parametrize("strategy_name", sorted(STRATEGIES))
@settings(max_examples=40, deadline=None)
@given(
    raw=st.lists(record, min_size=1, max_size=12), ks=st.sampled_from([(None,), (1, 3), (2, 5, 20)])
)
def test_core_equals_reference(
    plan_name: str, strategy_name: str, raw: list[dict[str, object]], ks: tuple[int | None, ...]
) -> None:
    metrics = tuple(PLANS[plan_name](STRATEGIES[strategy_name]))
    core = ScoringPlan(metrics, ks, "core")
    reference = ScoringPlan(metrics, ks, "reference")
    batch = records_of(raw)
    got = score_rows(core, batch)
    expected = score_rows(reference, batch)
    assert len(got) == len(batch) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert_same(a, b)


def test_core_path_agrees_with_hand_computed_values() -> None:
    # Hand-computed (design.md definitions): chunks 1 and 3 are hits of the two truths.
    plan = ScoringPlan((PrecisionRecallF1(contains), RankedRetrievalMetrics(contains)), (None, 2))
    (row,) = score_rows(
        plan,
        records_of(
            [
                {
                    "retrieved_context": ["alpha", "x", "beta"],
                    "ground_truth_context": ["alpha", "beta"],
                }
            ]
        ),
    )
    assert isinstance(row, Row)
    assert row.values["context_precision"] == 2 / 3
    assert row.values["context_recall"] == 1.0
    assert row.values["average_precision"] == (1 / 1 + 2 / 3) / 2
    assert row.values["reciprocal_rank"] == 1.0
    assert row.values["precision@2"] == 0.5
    assert row.values["recall@2"] == 0.5
    assert row.values["context_recall@2"] == 0.5


def test_a_row_matching_two_truths_moves_credit_as_the_matching_rule_says() -> None:
    # Row 0 matches both truths, row 1 only the first: the matching rule gives row 0 the second
    # truth so that both rows are hits; first-come gives row 0 the first and row 1 nothing.
    matrix = np.array([[True, True], [True, False]])
    for credit, hits in (("matching", [True, True]), ("first_come", [True, False])):
        batch = judge_batch([matrix], [None], credit)  # type: ignore[arg-type]
        assert batch.hits[0].tolist() == hits
        assert list(judge_matrix(matrix, credit=credit).hits) == hits  # type: ignore[arg-type]


def test_set_and_rank_values_on_padded_records() -> None:
    # Two records of different lengths in one batch: padding never counts.
    a = np.array([[False], [True]])
    b = np.array([[True, False], [False, False], [False, True], [False, False]])
    judged = judge_batch([a, b], [None, [2.0, 1.0]], "matching")
    assert measure_values(judged, "context_precision", None).tolist() == [1 / 2, 2 / 4]
    assert set_counts(judged, None)[:, 1].tolist() == [2, 4]
    assert measure_values(judged, "precision", 3).tolist() == [1 / 3, 2 / 3]
    assert measure_values(judged, "recall", 3).tolist() == [1.0, 1.0]
    assert measure_values(judged, "reciprocal_rank", 3).tolist() == [1 / 2, 1.0]
    assert measure_values(judged, "hits", 3).tolist() == [1.0, 2.0]


def test_evaluator_aggregates_equal_the_mean_of_metric_calls_with_the_bulk_path() -> None:
    data = [
        {"retrieved_context": ["alpha beta", "gamma"], "ground_truth_context": ["alpha beta"]},
        {"retrieved_context": ["delta", "alpha"], "ground_truth_context": ["alpha", "gamma"]},
        {"retrieved_context": ["beta"], "ground_truth_context": [{"text": "beta", "grade": 2}]},
    ]
    metric = RankedRetrievalMetrics(ExactChunkMatch())
    result = RetrievalEvaluator(data, [metric], workers=1, progress=False).run()
    for key in metric.keys:
        expected = [metric(**d)[key] for d in data]
        assert result.aggregate[key] == float(sum(map(Fraction, expected)) / len(expected))


ids = st.sampled_from(["a", "b", "c", "d", "e"])
id_record = st.fixed_dictionaries(
    {
        "retrieved_ids": st.lists(ids, max_size=8),  # repeats included: never a second hit
        "qrels": st.dictionaries(ids, st.sampled_from([0, 1, 2, 3, 0.5]), max_size=5),
    }
)
ID_PLANS = {
    "default": lambda: [IDPrecisionRecallF1(), IDRankedRetrievalMetrics()],
    "level_2": lambda: [
        IDPrecisionRecallF1(relevance_level=2),
        IDRankedRetrievalMetrics(relevance_level=2, gain="exponential"),
    ],
    "mixed_levels": lambda: [
        IDRankedRetrievalMetrics(relevance_level=2, k=3),
        IDPrecisionRecallF1(empty_ground_truth="skip"),
    ],
    "continuous_eval": lambda: [IDRankedRetrievalMetrics(convention="continuous_eval")],
}


@pytest.mark.parametrize("plan_name", sorted(ID_PLANS))
@settings(max_examples=60, deadline=None)
@given(
    raw=st.lists(id_record, min_size=1, max_size=12),
    ks=st.sampled_from([(None,), (1, 3), (2, 5, 20)]),
)
def test_id_core_equals_reference(
    plan_name: str, raw: list[dict[str, object]], ks: tuple[int | None, ...]
) -> None:
    metrics = tuple(ID_PLANS[plan_name]())
    batch = records_of(raw)
    got = score_rows(ScoringPlan(metrics, ks, "core"), batch)
    expected = score_rows(ScoringPlan(metrics, ks, "reference"), batch)
    for a, b in zip(got, expected, strict=True):
        assert_same(a, b)


def test_id_ndcg_counts_grades_below_the_level_in_bulk() -> None:
    # trec_eval: with relevance_level=2, "b" (grade 1) is not a hit but is a gain for NDCG, and
    # the ideal holds both grades. By hand: DCG = 1/log2(2) + 2/log2(3), IDCG = 2 + 1/log2(3).
    plan = ScoringPlan((IDRankedRetrievalMetrics(relevance_level=2),), (None,))
    (row,) = score_rows(
        plan, records_of([{"retrieved_ids": ["b", "a"], "qrels": {"a": 2, "b": 1}}])
    )
    assert isinstance(row, Row)
    assert row.values["ndcg"] == (1 / 1 + 2 / math.log2(3)) / (2 / 1 + 1 / math.log2(3))
    assert row.values["reciprocal_rank"] == 0.5
    assert row.values["recall"] == 1.0


def test_a_metric_given_twice_is_evaluated_once() -> None:
    # Found in review: repeated columns shifted every later row's values under wrong keys.
    data = [
        {"id": "q0", "retrieved_context": ["a", "b"], "ground_truth_context": ["a"]},
        {"id": "q1", "retrieved_context": ["c", "a"], "ground_truth_context": ["a", "b"]},
    ]
    twice = [
        PrecisionRecallF1(ExactChunkMatch()),
        RankedRetrievalMetrics(ExactChunkMatch()),
        PrecisionRecallF1(ExactChunkMatch()),
    ]
    once = twice[:2]
    got = RetrievalEvaluator(data, twice, workers=1).run(k=[1, 2])
    expected = RetrievalEvaluator(data, once, workers=1).run(k=[1, 2])
    assert got.per_query == expected.per_query
    assert got.aggregate == expected.aggregate
    assert got.per_query[1]["recall@2"] == 0.5  # by hand: "a" found at rank 2, "b" never


def test_outliers_are_padded_on_their_own_with_the_same_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found in review: one huge record padded the whole batch. Above the caps a record is judged
    # in a batch of its own; its values, and its neighbours', do not change.
    import ctxeval.scoring.judge as judging

    text = records_of(
        [
            {"retrieved_context": ["a", "b"], "ground_truth_context": ["a"]},
            {"retrieved_context": ["a", "b", "c", "d"], "ground_truth_context": ["d"]},
            {"retrieved_context": ["a"], "ground_truth_context": ["a", "b", "c"]},
        ]
    )
    ids = records_of(
        [
            {"retrieved_ids": ["a", "b", "c", "d"], "qrels": {"a": 1}},
            {"retrieved_ids": ["a"], "qrels": {"a": 1, "b": 2, "c": 1}},
            {"retrieved_ids": ["b", "a"], "qrels": {"a": 1}},
        ]
    )
    text_plan = ScoringPlan(
        (PrecisionRecallF1(ExactChunkMatch()), RankedRetrievalMetrics()), (None, 2)
    )
    id_plan = ScoringPlan((IDRankedRetrievalMetrics(),), (None,))
    before = score_rows(text_plan, text), score_rows(id_plan, ids)
    assert judging.pad_groups([(2, 1), (4, 1), (1, 3)]) == [[0, 1, 2]]
    monkeypatch.setattr(judging, "PAD_MAX_RANKS", 3)
    monkeypatch.setattr(judging, "PAD_MAX_TRUTH", 2)
    assert judging.pad_groups([(2, 1), (4, 1), (1, 3)]) == [[0], [1], [2]]
    after = score_rows(text_plan, text), score_rows(id_plan, ids)
    for rows_before, rows_after in zip(before, after, strict=True):
        for a, b in zip(rows_before, rows_after, strict=True):
            assert_same(a, b)
    assert [r.values["reciprocal_rank"] for r in after[1]] == [1.0, 1.0, 0.5]  # type: ignore[union-attr]


def test_review_findings_on_the_plan_and_the_batch() -> None:
    # A column asked for twice (with and without @k) is computed once.
    data = [{"id": "q", "retrieved_context": ["a"], "ground_truth_context": ["a"]}]
    result = RetrievalEvaluator(data, ["ndcg", "ndcg@2"], matching="exact-chunk").run(k=[2])
    assert list(result.aggregate) == ["ndcg@2"]
    # Two metrics whose micro averages would share a column are refused, not overwritten.
    from ctxeval import TextMeasures

    with pytest.raises(ValueError, match="micro_context_precision@3"):
        ScoringPlan(
            (
                TextMeasures(["context_precision@3"], ExactSentenceMatch()),
                TextMeasures(["context_recall@3"], ExactChunkMatch()),
            ),
            (None,),
        )
    # Rows come back by position, even for records that share an index (Record is public).
    records: list[Record | RecordError] = [
        Record(0, "a", "x:1", "text", ["boom", "a"], ["zzz"]),
        Record(0, "b", "y:1", "text", ["a"], ["a"]),
    ]
    plan = ScoringPlan((PrecisionRecallF1(ExactChunkMatch()),), (None,))
    for implementation in ("core", "reference"):
        rows = score_rows(ScoringPlan(plan.metrics, plan.ks, implementation), records)
        assert [r.id for r in rows] == ["a", "b"]  # type: ignore[union-attr]
        assert rows[1].values["context_recall"] == 1.0  # type: ignore[union-attr]


RANKED_SCORES = st.lists(st.sampled_from([0.0, 0.5, 1.0]), max_size=9).map(
    lambda scores: sorted(scores, reverse=True)
)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(RANKED_SCORES, st.lists(st.integers(0, 2), min_size=9, max_size=9)),
        min_size=1,
        max_size=6,
    ),
    depth=st.sampled_from([None, 1, 2, 4]),
    k=st.sampled_from([None, 1, 3]),
)
def test_tie_groups_cut_at_the_judged_depth_agree_in_core_and_reference(
    rows: list[tuple[list[float], list[int]]], depth: int | None, k: int | None
) -> None:
    # A record judged to a depth (or fewer units than it has scores) keeps its tie groups cut
    # there: the padded batch (tie_ends_array, on the judgments without groups, as a text batch
    # gets them) and per-record Judgments (with_tie_ends) give the same NDCG, bit for bit.
    judged, grouped, ends = [], [], []
    for scores, grades in rows:
        ids = [f"d{i}" for i in range(len(scores))][:depth]
        qrels = {f"d{i}": g for i, g in enumerate(grades) if g}
        plain = judge_ids(ids, qrels)
        groups = ranked_tie_ends(scores, "retrieved_scores")
        judged.append(plain)
        grouped.append(with_tie_ends(plain, groups))
        ends.append(groups)
    stacked = stack_judgments(judged)
    batch = replace(stacked, tie_ends=tie_ends_array(ends, stacked.n))
    via_judgments = stack_judgments(grouped)
    got = ndcg(batch, k, ties="average").tolist()
    assert got == ndcg(via_judgments, k, ties="average").tolist()
    assert got == [formulas.ndcg(j, k, ties="average") for j in grouped]


class BulkContains:
    """A custom strategy that also matches whole batches (``match_records``), counting calls;
    a ground truth "poison" makes it raise (a bug in the strategy's code)."""

    unit = "chunk"
    spec = "bulk-contains"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def units(self, texts: Sequence[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
        if "poison" in ground_truth:
            raise ValueError("cannot read poison")
        return contains(retrieved, ground_truth)

    def match_records(self, records: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list:  # type: ignore[type-arg]
        self.batches.append(len(records))
        return [self.match(r, g) for r, g in records]


def test_a_strategy_with_match_records_is_called_once_a_batch_with_the_same_values() -> None:
    data = [
        {
            "id": f"q{i}",
            "retrieved_context": ["a b", "c", "b"][: 1 + i % 3],
            "ground_truth_context": ["b", "c"][: 1 + i % 2],
        }
        for i in range(10)
    ]
    bulk = BulkContains()
    got = RetrievalEvaluator(
        data, [PrecisionRecallF1(bulk), RankedRetrievalMetrics(bulk)], workers=1
    ).run(k=[1, None])
    assert bulk.batches == [10]  # one call for the batch's ten records, for both metrics
    expected = RetrievalEvaluator(
        data, [PrecisionRecallF1(contains), RankedRetrievalMetrics(contains)], workers=1
    ).run(k=[1, None])
    assert got.per_query == expected.per_query
    # by hand: q3 retrieves "a b" only; of its truths "b" and "c", "a b" holds "b"
    assert got.per_query[3]["recall"] == 0.5


def test_an_error_in_match_records_is_named_for_the_record_that_causes_it() -> None:
    data = [
        {"id": "q0", "retrieved_context": ["a"], "ground_truth_context": ["a"]},
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["poison"]},
    ]
    with pytest.raises(
        InvalidArgumentError,
        match=r"record 'q1'.*bulk-contains raised ValueError: cannot read poison",
    ):
        RetrievalEvaluator(data, [PrecisionRecallF1(BulkContains())], workers=1).run()


def poisoned_record(retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
    """A strategy that finds record data it cannot judge: "bad" in the ground truth."""
    if "bad" in ground_truth:
        raise InvalidRecordError("holds 'bad'", field="ground_truth_context")
    if "buggy" in ground_truth:
        raise ZeroDivisionError("a bug in this strategy")
    return contains(retrieved, ground_truth)


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_errors_are_settled_as_record_by_record_with_bulk_passes(implementation: str) -> None:
    # Found in review: bulk passes are matched after the others, but which error wins (and
    # whether the run stops) must not change: a record's first pass decides, the first record
    # stops the run.
    def run(data: list[dict[str, object]]) -> object:
        metrics = [PrecisionRecallF1(BulkContains()), PrecisionRecallF1(poisoned_record, k=1)]
        evaluator = RetrievalEvaluator(
            data, metrics, workers=1, on_error="skip", implementation=implementation
        )
        return evaluator.run()

    # One record: the bulk pass (first) has a strategy bug, the second pass finds bad data.
    same = [{"id": "q0", "retrieved_context": ["a"], "ground_truth_context": ["poison", "bad"]}]
    with pytest.raises(InvalidArgumentError, match=r"record 'q0'.*bulk-contains raised ValueError"):
        run(same)
    # Two records: q0's bulk pass fails before q1's other pass; q0 is named.
    two = [
        {"id": "q0", "retrieved_context": ["a"], "ground_truth_context": ["poison"]},
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["buggy"]},
    ]
    with pytest.raises(InvalidArgumentError, match=r"record 'q0'.*bulk-contains raised ValueError"):
        run(two)
    # Bad data in the later pass only: a bad record, skipped; the others are scored.
    bad = [
        {"id": "q0", "retrieved_context": ["a"], "ground_truth_context": ["bad"]},
        {"id": "q1", "retrieved_context": ["a b"], "ground_truth_context": ["b"]},
    ]
    result = run(bad)
    assert [row["id"] for row in result.per_query] == ["q1"]  # type: ignore[attr-defined]
    assert [s["id"] for s in result.skipped] == ["q0"]  # type: ignore[attr-defined]


class Miscounting(BulkContains):
    spec = "miscounting"

    def match_records(self, records: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list:  # type: ignore[type-arg]
        return super().match_records(records)[1:]


class BrokenBulk(BulkContains):
    spec = "broken-bulk"

    def match_records(self, records: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list:  # type: ignore[type-arg]
        raise KeyError("a bug in match_records only")


def test_match_records_must_give_one_result_per_record_and_what_match_gives() -> None:
    data = [
        {"id": f"q{i}", "retrieved_context": ["a"], "ground_truth_context": ["a"]} for i in range(3)
    ]
    with pytest.raises(
        InvalidArgumentTypeError, match=r"miscounting: match_records returned 2 results for 3"
    ):
        RetrievalEvaluator(data, [PrecisionRecallF1(Miscounting())], workers=1).run()
    with pytest.raises(
        InvalidArgumentError, match=r"broken-bulk: match_records raised KeyError"
    ) as info:
        RetrievalEvaluator(data, [PrecisionRecallF1(BrokenBulk())], workers=1).run()
    assert isinstance(info.value.__cause__, KeyError)


class FlatContains(BulkContains):
    """A custom strategy that also gives a batch's matches as flat arrays, in a shuffled
    order of blocks with gaps between them (``blocks`` say where each record's is)."""

    spec = "flat-contains"

    def match_records_flat(
        self, records: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> FlatMatches:
        self.batches.append(len(records))
        if any("poison" in g for _, g in records):
            raise ValueError("cannot read poison")
        blocks = np.zeros(len(records), dtype=np.int64)
        cells: list[bool] = []
        for k in reversed(range(len(records))):
            retrieved, truth = records[k]
            cells += [True, False]  # a gap nobody reads
            blocks[k] = len(cells)
            cells += contains(retrieved, truth).ravel().tolist()
        relevant = np.array(cells, dtype=bool)
        return FlatMatches(relevant, relevant.astype(np.float64), blocks, {})


class BadFlat(BulkContains):
    spec = "bad-flat"

    def match_records_flat(self, records: Sequence[object]) -> FlatMatches:
        relevant = np.zeros(0, dtype=bool)  # too short for the records' blocks
        return FlatMatches(relevant, relevant * 1.0, np.zeros(len(records), np.int64), {})


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_a_strategy_with_flat_matches_gives_the_same_values(implementation: str) -> None:
    data = [
        {
            "id": f"q{i}",
            "retrieved_context": ["a b", "c", "b"][: i % 4],
            "ground_truth_context": ["b", "c", {"text": "a", "grade": 2}][: 1 + i % 3],
        }
        for i in range(12)
    ]
    data[5]["ground_truth_context"] = ["bad"]  # a later pass rejects it: skipped
    flat = FlatContains()
    metrics = [PrecisionRecallF1(flat), RankedRetrievalMetrics(poisoned_record)]
    got = RetrievalEvaluator(
        data, metrics, workers=1, on_error="skip", implementation=implementation
    ).run(k=[1, None])
    assert flat.batches == [12]  # once a batch; match_records is not called
    metrics = [PrecisionRecallF1(contains), RankedRetrievalMetrics(poisoned_record)]
    expected = RetrievalEvaluator(
        data, metrics, workers=1, on_error="skip", implementation=implementation
    ).run(k=[1, None])
    assert got.per_query == expected.per_query
    assert [s["id"] for s in got.skipped] == ["q5"]
    # by hand: q1 retrieves "a b" only; of its truths "b" and "c", "a b" holds "b"
    assert got.per_query[1]["id"] == "q1"
    assert got.per_query[1]["context_recall"] == 0.5


def test_flat_matches_that_fail_or_do_not_fit_are_errors_of_the_strategy() -> None:
    data = [
        {"id": "q0", "retrieved_context": ["a"], "ground_truth_context": ["a"]},
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["poison"]},
    ]
    # match_records_flat raises: the records are matched again, and the error is named for
    # the record that causes it
    with pytest.raises(
        InvalidArgumentError, match=r"record 'q1'.*flat-contains raised ValueError: cannot read"
    ):
        RetrievalEvaluator(data, [PrecisionRecallF1(FlatContains())], workers=1).run()
    with pytest.raises(
        InvalidArgumentTypeError, match=r"bad-flat: match_records_flat returned FlatMatches, not"
    ):
        RetrievalEvaluator(data[:1], [PrecisionRecallF1(BadFlat())], workers=1).run()
    # blocks that are not integers, tokenless records outside the batch
    fits = FlatContains().match_records_flat([(["a"], ["a"])])
    for wrong in (
        fits._replace(blocks=fits.blocks.astype(float)),
        fits._replace(blocks=fits.blocks.tolist()),
        fits._replace(tokenless={-1: ("x",)}),
        fits._replace(tokenless={1: ("x",)}),
    ):
        with pytest.raises(InvalidArgumentTypeError, match=r"match_records_flat returned"):
            RetrievalEvaluator(data[:1], [PrecisionRecallF1(Giving(wrong))], workers=1).run()


class Giving(BulkContains):
    """A strategy whose match_records_flat gives ``flat``, whatever the records."""

    spec = "giving"

    def __init__(self, flat: object) -> None:
        super().__init__()
        self.flat = flat

    def match_records_flat(self, records: Sequence[object]) -> object:
        return self.flat


class OnlyFlat:
    """A strategy with match_records_flat and no match_records."""

    unit = "chunk"
    spec = "only-flat"

    def __init__(self, broken: bool = False) -> None:
        self.flat = FlatContains()
        self.broken = broken

    def units(self, texts: Sequence[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
        return contains(retrieved, ground_truth)

    def match_records_flat(
        self, records: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> FlatMatches:
        if self.broken:
            raise KeyError("a bug in match_records_flat only")
        return self.flat.match_records_flat(records)


def test_a_strategy_with_flat_matches_only() -> None:
    data = [
        {
            "id": f"q{i}",
            "retrieved_context": ["a b", "c"][: 1 + i % 2],
            "ground_truth_context": ["b"],
        }
        for i in range(5)
    ]
    strategy = OnlyFlat()
    got = RetrievalEvaluator(data, [PrecisionRecallF1(strategy)], workers=1).run()
    assert strategy.flat.batches == [5]  # used, though the strategy has no match_records
    expected = RetrievalEvaluator(data, [PrecisionRecallF1(contains)], workers=1).run()
    assert got.per_query == expected.per_query
    with pytest.raises(
        InvalidArgumentError, match=r"only-flat: match_records_flat raised KeyError.*but match"
    ) as info:
        RetrievalEvaluator(data, [PrecisionRecallF1(OnlyFlat(broken=True))], workers=1).run()
    assert isinstance(info.value.__cause__, KeyError)


matrix = st.tuples(st.integers(0, 5), st.integers(0, 4)).flatmap(
    lambda shape: st.lists(
        st.booleans(), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]
    ).map(lambda cells: np.array(cells, dtype=bool).reshape(shape))
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(matrix, st.booleans()), max_size=8),
    st.sampled_from(["matching", "first_come"]),
    st.randoms(use_true_random=False),
)
def test_judging_flat_matrices_equals_judging_them_one_by_one(
    items: list[tuple[np.ndarray, bool]], credit: str, random: object
) -> None:
    matrices = [mat for mat, _ in items]
    grades = [[1.0 + j for j in range(mat.shape[1])] if graded else None for mat, graded in items]
    order = list(range(len(items)))
    random.shuffle(order)  # type: ignore[attr-defined]
    cells: list[bool] = [False]
    blocks = np.zeros(len(items), dtype=np.int64)
    for b in order:  # blocks in another order than the records, with a gap before each
        blocks[b] = len(cells)
        cells += [*matrices[b].ravel().tolist(), True]
    n = np.array([mat.shape[0] for mat in matrices], dtype=np.int64)
    m = np.array([mat.shape[1] for mat in matrices], dtype=np.int64)
    pairs = FlatPairs(np.array(cells, dtype=bool), blocks, n, m, grades)
    assert [(mat.tolist(), g) for mat, g in pairs] == [
        (mat.tolist(), g) for mat, g in zip(matrices, grades, strict=True)
    ]
    rows = order[: len(order) // 2]
    with mock.patch.object(batch_module, "FLAT_CELLS", 0):  # each record copied into place
        assert_same_judgments(
            judge_flat(pairs, credit),  # type: ignore[arg-type]
            judge_batch(matrices, grades, credit),  # type: ignore[arg-type]
        )
    for got, expected in (
        (judge_flat(pairs, credit), judge_batch(matrices, grades, credit)),  # type: ignore[arg-type]
        (
            judge_flat(pairs.select(rows), credit),  # type: ignore[arg-type]
            judge_batch([matrices[r] for r in rows], [grades[r] for r in rows], credit),  # type: ignore[arg-type]
        ),
    ):
        assert_same_judgments(got, expected)


def assert_same_judgments(got: object, expected: object) -> None:
    for name in ("n", "m", "relevant", "hits", "gains", "first_match", "ideal", "ideal_n"):
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype, name
        assert a.tobytes() == b.tobytes(), name
        assert a.shape == b.shape, name
