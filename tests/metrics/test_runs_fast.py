"""evaluate_run's whole-run numpy path (ctxeval.judging.runs) against the per-query path.

The per-query reference here is the obvious one, built from the public pieces: rank each query
with ``rank_documents``, judge it with ``judge_ids``, call each ``Measure``. The fast path must
give the same floats (``==``, not approximately), the same warnings, and, for inputs it does not
handle, leave them to the per-query path so that the same error is raised for the same query.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Hashable
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import ConventionWarning, InvalidRecordError, evaluate_run
from ctxeval.judging import runs as run_arrays
from ctxeval.judging.judgments import judge_ids
from ctxeval.metrics import runs
from ctxeval.metrics.measures import parse_measure
from ctxeval.metrics.runs import rank_documents
from ctxeval.records.checks import validate_qrels

# Every measure and option the fast path computes, at several cut-offs.
MEASURES = [
    "map",
    "map@3",
    "map(ap_denominator='hits')",
    "map(ap_denominator='hits', ap_credit='any')@5",
    "mrr",
    "mrr@2",
    "ndcg",
    "ndcg@3",
    "ndcg(gain='exponential')",
    "ndcg(gain='exponential', ideal='retrieved')@4",
    "ndcg(ideal='retrieved')",
    "P@1",
    "P@5",
    "precision",
    "precision(precision_denominator='retrieved')@5",
    "recall@3",
    "recall",
    "hit_rate@2",
    "hit_rate",
    "context_precision@3",
    "context_precision",
    "context_recall@3",
    "context_f1@3",
    "context_f1",
]

# String order differs from numeric order; upper case sorts before lower case; non-ASCII.
DOC_IDS = ["d1", "d2", "d9", "d10", "d100", "D3", "a", "b", "B", "9", "10", "100", "é", "z", "zz"]
QUERY_IDS = ["q1", "q2", "q3", "q4", "q5"]
scores = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.25])  # few values: many ties
grades = st.sampled_from([-1, 0, 0, 1, 1, 2, 3, 0.5, 2.5])


@st.composite
def runs_and_qrels(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    judged_qids = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, unique=True))
    qrels = {
        qid: draw(st.dictionaries(st.sampled_from(DOC_IDS), grades, min_size=1, max_size=10))
        for qid in judged_qids
    }
    run_qids = draw(st.lists(st.sampled_from([*QUERY_IDS, "unjudged"]), unique=True))
    run = {qid: draw(st.dictionaries(st.sampled_from(DOC_IDS), scores)) for qid in run_qids}
    return run, qrels


def per_query(
    run: dict[Any, Any],
    qrels: dict[Any, Any],
    measures: list[str],
    *,
    ties: str = "trec_eval",
    relevance_level: float = 1,
) -> dict[Hashable, dict[str, float]]:
    """The slow obvious evaluation (missing queries score 0)."""
    parsed = [(spec, parse_measure(spec)) for spec in measures]
    out: dict[Hashable, dict[str, float]] = {}
    for qid, judged in qrels.items():
        if qid not in run:
            out[qid] = dict.fromkeys((str(m) for _, m in parsed), 0.0)
            continue
        ranked = rank_documents(run[qid], ties=ties)  # type: ignore[arg-type]
        judgments = judge_ids(
            ranked, validate_qrels(judged, "qrels"), relevance_level=relevance_level
        )
        out[qid] = {str(measure): measure(judgments) for _, measure in parsed}
    return out


def evaluate(
    run: dict[Any, Any], qrels: dict[Any, Any], measures: list[str], **options: Any
) -> tuple[dict[Hashable, dict[str, float]], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_run(run, qrels, measures, **options)
    assert all(issubclass(w.category, ConventionWarning) for w in caught), caught
    return result, [str(w.message) for w in caught]


def evaluate_per_query(
    run: dict[Any, Any], qrels: dict[Any, Any], measures: list[str], **options: Any
) -> tuple[dict[Hashable, dict[str, float]], list[str]]:
    """evaluate_run through the public reference switch: every query is judged on its own and
    scored with the reference formulas."""
    return evaluate(run, qrels, measures, implementation="reference", **options)


def assert_identical(got: dict[Hashable, dict[str, float]], expected: dict[Hashable, Any]) -> None:
    assert list(got) == list(expected)  # the same queries, in the same (qrels) order
    for qid, values in expected.items():
        assert list(got[qid]) == list(values)
        for key, value in values.items():
            assert type(got[qid][key]) is float
            assert got[qid][key] == value, (qid, key, got[qid][key], value)


def fast_path_used(run: dict[Any, Any], qrels: dict[Any, Any]) -> bool:
    scored = [run[qid] for qid in qrels if qid in run]
    judged = [qrels[qid] for qid in qrels if qid in run]
    return run_arrays.judge_run(scored, judged, ties="trec_eval", relevance_level=1) is not None


# --------------------------------------------------------------------------------------------
# Generated runs: the fast path equals the per-query path.


@settings(max_examples=300)
@given(
    data=runs_and_qrels(),
    ties=st.sampled_from(["trec_eval", "input"]),
    relevance_level=st.sampled_from([1, 0.5, 2, 3]),
)
def test_fast_path_equals_per_query_path(
    data: tuple[dict[str, Any], dict[str, Any]], ties: str, relevance_level: float
) -> None:
    run, qrels = data
    assert fast_path_used(run, qrels)
    options = {"ties": ties, "relevance_level": relevance_level}
    got, messages = evaluate(run, qrels, MEASURES, **options)
    assert_identical(got, per_query(run, qrels, MEASURES, **options))  # type: ignore[arg-type]
    slow, slow_messages = evaluate_per_query(run, qrels, MEASURES, **options)
    assert_identical(got, slow)
    assert messages == slow_messages  # missing, unjudged and tied queries counted alike


@settings(max_examples=100)
@given(
    data=runs_and_qrels(),
    empty_ground_truth=st.sampled_from(["zero", "skip", "error"]),
    missing_queries=st.sampled_from(["zero", "skip", "error"]),
)
def test_policies_equal_per_query_path(
    data: tuple[dict[str, Any], dict[str, Any]], empty_ground_truth: str, missing_queries: str
) -> None:
    run, qrels = data
    options = {"empty_ground_truth": empty_ground_truth, "missing_queries": missing_queries}
    try:
        expected, expected_messages = evaluate_per_query(run, qrels, ["map", "P@2"], **options)
    except InvalidRecordError as error:
        expected_error = str(error)
    else:
        expected_error = None
    if expected_error is not None:
        with pytest.raises(InvalidRecordError) as raised:
            evaluate(run, qrels, ["map", "P@2"], **options)
        assert str(raised.value) == expected_error
        return
    got, messages = evaluate(run, qrels, ["map", "P@2"], **options)
    assert_identical(got, expected)
    assert messages == expected_messages


@settings(max_examples=100)
@given(data=runs_and_qrels(), relevance_level=st.sampled_from([1, 0.5, 2, 3]))
def test_judged_nonrelevant_ranked_only_for_bpref(
    data: tuple[dict[str, Any], dict[str, Any]], relevance_level: float
) -> None:
    """evaluate_run ranks the retrieved documents of grade 0 only when bpref is asked for
    (judged_nonrelevant): every other measure has the same values without them."""
    run, qrels = data
    qids = [qid for qid in qrels if qid in run]
    scored, judged = [run[q] for q in qids], [qrels[q] for q in qids]
    full = run_arrays.judge_run(scored, judged, ties="trec_eval", relevance_level=relevance_level)
    lean = run_arrays.judge_run(
        scored, judged, ties="trec_eval", relevance_level=relevance_level, judged_nonrelevant=False
    )
    assert full is not None
    assert lean is not None
    assert lean.num_nonrelevant is None
    assert (lean.pair_grade > 0).all()
    assert lean.tied.tolist() == full.tied.tolist()
    for depth in (None, 2):
        pairs = zip(full.batches(depth, cells=16), lean.batches(depth, cells=16), strict=True)
        for (_, with_zero), (_, without) in pairs:
            assert without.nonrelevant is None
            assert without.num_nonrelevant is None
            for spec in MEASURES:
                measure = parse_measure(spec)
                assert measure.values(without).tolist() == measure.values(with_zero).tolist()
    with_bpref = [*MEASURES, "bpref", "bpref@3"]
    got, _ = evaluate(run, qrels, with_bpref, relevance_level=relevance_level)
    assert_identical(got, per_query(run, qrels, with_bpref, relevance_level=relevance_level))


@pytest.mark.parametrize(
    ("compare_each", "chunk"), [(True, 1 << 20), (True, 3), (True, 1), (False, 1 << 20)]
)
@settings(max_examples=100)
@given(data=runs_and_qrels(), ties=st.sampled_from(["trec_eval", "input"]))
def test_both_tie_strategies_equal_per_query_path(
    compare_each: bool, chunk: int, data: tuple[dict[str, Any], dict[str, Any]], ties: str
) -> None:
    # Tied documents are ranked either by comparing each with its whole tie group (a chunk of
    # members at a time) or by sorting each group's ids once; both must give the same ranks.
    run, qrels = data
    measures = ["map", "ndcg", "mrr", "P@3"]
    with (
        mock.patch.object(run_arrays, "_compare_each", return_value=compare_each),
        mock.patch.object(run_arrays._TieGroups, "CHUNK", chunk),
    ):
        got, messages = evaluate(run, qrels, measures, ties=ties)
    assert_identical(got, per_query(run, qrels, measures, ties=ties))
    assert messages == evaluate_per_query(run, qrels, measures, ties=ties)[1]


@pytest.mark.parametrize(
    ("chunk_docs", "compared_cells", "compare_each"),
    [
        (1 << 13, 1 << 18, False),  # default chunks and ranks; groups sorted by id
        (2, 1 << 18, True),  # a chunk every query or two
        (2, 0, True),  # ranks from sorted scores, not compared ones
        (1 << 13, 0, True),
        (1 << 13, 0, False),
    ],
)
@settings(max_examples=60)
@given(data=runs_and_qrels(), ties=st.sampled_from(["trec_eval", "input"]))
def test_chunks_and_rank_strategies_equal_per_query_path(
    chunk_docs: int,
    compared_cells: int,
    compare_each: bool,
    data: tuple[dict[str, Any], dict[str, Any]],
    ties: str,
) -> None:
    # The run is judged a chunk of queries at a time; within a chunk, ranks come from comparing
    # each judged document's score with its whole query's, or, for long queries, from sorted
    # scores. Every combination must give the per-query path's values and warnings.
    run, qrels = data
    measures = ["map", "ndcg", "mrr", "P@3", "bpref"]
    with (
        mock.patch.object(run_arrays, "_CHUNK_DOCS", chunk_docs),
        mock.patch.object(run_arrays, "_COMPARED_CELLS", compared_cells),
        mock.patch.object(run_arrays, "_compare_each", return_value=compare_each),
    ):
        got, messages = evaluate(run, qrels, measures, ties=ties)
    assert_identical(got, per_query(run, qrels, measures, ties=ties))
    assert messages == evaluate_per_query(run, qrels, measures, ties=ties)[1]


def test_long_queries_are_compared_whole() -> None:
    # Queries of 300 documents with few judged ones: their scores are compared whole (a row
    # longer than 255 counts its matches another way), ties included.
    rng = random.Random(11)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(4):
        docs = [f"d{x}" for x in rng.sample(range(10_000), 300)]
        run[f"q{q}"] = {doc: float(rng.randrange(20)) for doc in docs}
        qrels[f"q{q}"] = {doc: rng.choice([0, 1, 2]) for doc in rng.sample(docs, 6)}
    scored, judged = list(run.values()), list(qrels.values())
    lengths = np.array([len(s) for s in scored])
    positives = sum(grade > 0 for grades in judged for grade in grades.values())
    assert positives * int(lengths.max()) <= run_arrays._COMPARED_CELLS
    measures = ["map", "ndcg", "ndcg@10", "mrr", "P@100", "recall@300"]
    for ties in ("trec_eval", "input"):
        got, _ = evaluate(run, qrels, measures, ties=ties)
        assert_identical(got, per_query(run, qrels, measures, ties=ties))


@pytest.mark.parametrize("width", [0, 1, 255, 256, 300])
def test_row_counts(width: int) -> None:
    mask = np.random.default_rng(width).random((7, width)) < 0.6
    counts = run_arrays._row_counts(mask)
    assert counts.dtype == np.int64
    assert counts.tolist() == np.count_nonzero(mask, axis=1).tolist()


def test_large_tie_groups_are_sorted_once() -> None:
    # A block of equal scores holding many graded documents: comparing each with its whole
    # group would cost 300 x 600 comparisons per query; the groups are sorted instead.
    rng = random.Random(3)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(5):
        docs = [f"d{x}" for x in rng.sample(range(100_000), 1000)]
        run[f"q{q}"] = {doc: 0.0 if i >= 400 else 50.0 - i / 8 for i, doc in enumerate(docs)}
        qrels[f"q{q}"] = {doc: rng.choice([1, 2]) for doc in docs if rng.random() < 0.5}
    assert not run_arrays._compare_each(5 * 300 * 600, np.full(5, 600))
    measures = ["map", "ndcg", "ndcg@10", "mrr", "P@500"]
    for ties in ("trec_eval", "input"):
        got, _ = evaluate(run, qrels, measures, ties=ties)
        assert_identical(got, per_query(run, qrels, measures, ties=ties))


# Long rankings with many relevant documents: AP and DCG add dozens of terms, where the order of
# the additions shows (numpy's pairwise sum would differ from a left-to-right loop).
@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**32 - 1),
    distinct_scores=st.sampled_from([3, 10, 1000]),
    ties=st.sampled_from(["trec_eval", "input"]),
)
def test_long_rankings_equal_per_query_path(seed: int, distinct_scores: int, ties: str) -> None:
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(rng.randint(1, 6)):
        docs = [f"d{rng.randrange(10_000)}" for _ in range(rng.randint(0, 150))]
        run[f"q{q}"] = {doc: rng.randrange(distinct_scores) / 7 for doc in docs}
        qrels[f"q{q}"] = {doc: rng.choice([0, 1, 2, 3]) for doc in docs if rng.random() < 0.6}
        qrels[f"q{q}"][f"unretrieved{q}"] = 2
    measures = ["map", "ndcg", "ndcg(gain='exponential')", "ndcg@100", "P@100", "mrr"]
    got, _ = evaluate(run, qrels, measures, ties=ties)
    assert_identical(got, per_query(run, qrels, measures, ties=ties))


# --------------------------------------------------------------------------------------------
# Hand-computed values.


def test_tie_groups_by_hand() -> None:
    # Ranking by trec_eval's rule (score descending, then docid descending as strings):
    #   x(3.0), then the tie at 2.0: d9 > d2 > d10, then y(1.0)
    #   rank 1 x (grade 0), 2 d9 (grade 1), 3 d2 (unjudged), 4 d10 (grade 2), 5 y (grade 3)
    run = {"q": {"d10": 2.0, "y": 1.0, "d2": 2.0, "x": 3.0, "d9": 2.0}}
    qrels = {"q": {"x": 0, "d9": 1, "d10": 2, "y": 3, "missing": 1}}
    measures = ["map", "ndcg", "ndcg@3", "mrr", "P@3", "recall@4"]
    with pytest.warns(ConventionWarning, match="1 query"):
        got = evaluate_run(run, qrels, measures)["q"]
    # Relevant: d9, d10, y, missing (4). Hits at ranks 2, 4, 5.
    assert got["average_precision"] == (1 / 2 + 2 / 4 + 3 / 5) / 4
    assert got["reciprocal_rank"] == 1 / 2
    assert got["precision@3"] == 1 / 3
    assert got["recall@4"] == 2 / 4
    dcg = 1 / math.log2(3) + 2 / math.log2(5) + 3 / math.log2(6)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    assert got["ndcg"] == dcg / idcg
    assert got["ndcg@3"] == (1 / math.log2(3)) / (3 + 2 / math.log2(3) + 1 / math.log2(4))
    # Input order keeps the dict's order within the tie: d10, d2, d9.
    with pytest.warns(ConventionWarning, match="1 query"):
        by_input = evaluate_run(run, qrels, measures, ties="input")["q"]
    assert (
        by_input["average_precision"] == (1 / 2 + 2 / 4 + 3 / 5) / 4
    )  # d10 then d9: hits at 2, 4, 5 again
    assert by_input["reciprocal_rank"] == 1 / 2
    assert by_input["ndcg@3"] == (2 / math.log2(3)) / (3 + 2 / math.log2(3) + 1 / math.log2(4))


def test_ties_among_equal_grades_do_not_warn() -> None:
    # a and b tie with the same grade: whichever comes first, every score is the same.
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.5}}
    qrels = {"q": {"a": 2, "b": 2}}  # c, d: unjudged, tied with each other only
    got, messages = evaluate(run, qrels, ["map", "ndcg"])
    assert messages == []
    assert got["q"] == {"average_precision": 1.0, "ndcg": 1.0}


def test_uneven_lengths_use_one_flat_sort() -> None:
    # One very long query and many short ones: padding to a 2-D array would be mostly padding,
    # so the scores are sorted as one flat array by (query, score) instead.
    rng = random.Random(7)
    run = {"long": {f"d{i}": float(rng.randrange(50)) for i in range(6000)}}
    qrels = {"long": {f"d{i}": rng.choice([0, 1, 2]) for i in range(0, 6000, 7)}}
    for q in range(20):
        run[f"q{q}"] = {f"d{i}": float(rng.randrange(3)) for i in range(rng.randint(0, 5))}
        qrels[f"q{q}"] = {"d0": 1, "d1": 2, "d3": 0}
    scored = [run[qid] for qid in qrels]
    lengths = np.array([len(s) for s in scored])
    layout = run_arrays._SortedScores(np.zeros(int(lengths.sum())), lengths, int(lengths.max()))
    assert layout._flat_order is not None  # the flat layout is the one exercised here
    measures = ["map", "ndcg@10", "P@5", "recall@1000", "mrr"]
    got, _ = evaluate(run, qrels, measures)
    assert_identical(got, per_query(run, qrels, measures))


# --------------------------------------------------------------------------------------------
# Inputs the fast path leaves to the per-query path: same results, same errors.

MIXED_RUN: dict[str, Any] = {
    "plain": {"a": 2.0, "b": 1.0, "c": 1.0},
    "ranked": ["b", "a", "c"],  # already ranked
    "int_ids": {1: 2.0, 2: 1.0, "a": 0.5},
    "int_scores": {"a": 2, "b": 1, "c": 1},  # exact as floats: fast path
    "numpy_scores": {"a": np.float64(2.0), "b": np.float64(1.0)},  # float subclass: fast path
    "huge_ints": {"a": 2**60, "b": 2**60 + 1, "c": 1},  # not exact as floats: per query
    "qrels_list": {"a": 1.0, "b": 3.0},
}
MIXED_QRELS: dict[str, Any] = {
    "plain": {"a": 1, "c": 2},
    "ranked": {"a": 1, "c": 2},
    "int_ids": {1: 1, "a": 2},
    "int_scores": {"b": 1, "c": 2},
    "numpy_scores": {"b": 1.0},
    "huge_ints": {"a": 1, "b": 2},
    "qrels_list": ["b", "x"],
}


def test_mixed_inputs_equal_per_query_path() -> None:
    measures = ["map", "ndcg", "P@1", "mrr"]
    got, messages = evaluate(MIXED_RUN, MIXED_QRELS, measures)
    assert_identical(got, per_query(MIXED_RUN, MIXED_QRELS, measures))
    slow, slow_messages = evaluate_per_query(MIXED_RUN, MIXED_QRELS, measures)
    assert_identical(got, slow)
    assert messages == slow_messages
    # Integer scores are compared exactly: a (2**60 + 1) ranks above b (2**60). As floats both
    # are 2**60, a tie that docid descending would give to b.
    exact = {"q": {"b": 2**60, "a": 2**60 + 1}}
    got_exact, _ = evaluate(exact, {"q": {"a": 1}}, ["P@1"])
    assert got_exact["q"]["precision@1"] == 1.0


def test_which_queries_take_the_fast_path() -> None:
    assert run_arrays.plain_scored(MIXED_RUN["plain"])
    assert run_arrays.plain_scored(MIXED_RUN["int_scores"])
    assert run_arrays.plain_scored(MIXED_RUN["numpy_scores"])
    assert not run_arrays.plain_scored(MIXED_RUN["ranked"])
    assert not run_arrays.plain_scored(MIXED_RUN["int_ids"])
    assert not run_arrays.plain_scored(MIXED_RUN["huge_ints"])
    assert not run_arrays.plain_scored({"a": True})
    assert not run_arrays.plain_scored({"a": math.nan})
    assert run_arrays.plain_judged({"a": 1, 2: 0.5})
    assert not run_arrays.plain_judged(["a"])
    assert not run_arrays.plain_judged({"a": 10**400})
    assert not run_arrays.plain_judged({"a": False})
    # Through evaluate_run's split: qrels given as a list of ids are validated into a dict.
    plain = runs._evaluate_plain_queries(
        MIXED_RUN, MIXED_QRELS, [("map", parse_measure("map"))], "trec_eval", 1.0
    )
    assert list(plain.scores) == ["plain", "int_scores", "numpy_scores", "qrels_list"]


def test_scores_beyond_float_range_are_not_plain() -> None:
    scored: list[dict[str, Any]] = [{"a": 1.0}, {"a": 10**400, "b": 1.0}]
    judged: list[dict[str, Any]] = [{"a": 1}, {"a": 1}]
    assert run_arrays.judge_run(scored, judged, ties="trec_eval", relevance_level=1) is None
    assert run_arrays.judge_run(scored[:1], judged[:1], ties="trec_eval", relevance_level=1)


class _UncomparableId:
    """A qrels id that hashes like "a" but cannot be compared with it."""

    def __hash__(self) -> int:
        return hash("a")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")


def test_ids_that_fail_the_lookup_are_left_to_the_per_query_path() -> None:
    # Judged documents are looked up in the run before their ids' types are checked: an id
    # whose lookup fails makes the query not plain, and the per-query path reports it.
    run = {"q": {"a": 1.0, "b": 0.5}}
    qrels: dict[str, Any] = {"q": {_UncomparableId(): 1, "b": 1}}
    assert (
        run_arrays.judge_run([run["q"]], [qrels["q"]], ties="trec_eval", relevance_level=1) is None
    )
    with pytest.raises(InvalidRecordError) as fast:
        evaluate(run, qrels, ["map"])
    with pytest.raises(InvalidRecordError) as slow:
        evaluate_per_query(run, qrels, ["map"])
    assert str(fast.value) == str(slow.value)


def _plain_queries(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    run = {f"q{i}": {"a": 1.0, "b": 0.5, "c": 0.5} for i in range(n)}
    qrels: dict[str, Any] = {f"q{i}": {"a": 1, "c": 2} for i in range(n)}
    return run, qrels


def _with(mapping: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**mapping, **changes}


RUN, QRELS = _plain_queries(6)
ERRORS = [
    pytest.param(
        _with(RUN, q2={"a": math.nan}), QRELS, {}, ["run['q2']['a'] has score nan"], id="nan"
    ),
    pytest.param(
        _with(RUN, q3={"a": math.inf, "b": 1.0}),
        QRELS,
        {},
        ["run['q3']['a'] has score inf"],
        id="inf",
    ),
    pytest.param(
        _with(RUN, q4={"a": "0.5"}), QRELS, {}, ["run['q4']['a'] has score '0.5'"], id="str-score"
    ),
    pytest.param(
        _with(RUN, q1={"a": True}), QRELS, {}, ["run['q1']['a'] has score True"], id="bool-score"
    ),
    pytest.param(
        _with(RUN, q1={"a": None}), QRELS, {}, ["run['q1']['a'] has score None"], id="none-score"
    ),
    pytest.param(
        _with(RUN, q5={1.5: 1.0}),
        QRELS,
        {},
        ["run['q5'] has document id 1.5", "strings or integers"],
        id="float-id",
    ),
    pytest.param(
        RUN,
        _with(QRELS, q2={"a": math.nan}),
        {},
        ["qrels['q2']['a'] has grade nan"],
        id="qrels-nan",
    ),
    pytest.param(
        RUN, _with(QRELS, q2={"a": True}), {}, ["qrels['q2']['a'] has grade True"], id="qrels-bool"
    ),
    pytest.param(
        # The first error in qrels order wins: q1's grade, before q4's score.
        _with(RUN, q4={"a": math.nan}),
        _with(QRELS, q1={"a": "1"}),
        {},
        ["qrels['q1']['a'] has grade '1'"],
        id="first-error-qrels",
    ),
    pytest.param(
        _with(RUN, q1={"a": math.nan}),
        _with(QRELS, q4={"a": "1"}),
        {},
        ["run['q1']['a'] has score nan"],
        id="first-error-run",
    ),
    pytest.param(
        # A plain query with nothing relevant comes before a bad one: its error is first.
        _with(RUN, q3={"a": math.nan}),
        _with(QRELS, q1={"a": 0}),
        {"empty_ground_truth": "error"},
        ["query 'q1' has no relevant document"],
        id="empty-before-bad",
    ),
    pytest.param(
        _with(RUN, q0={"a": math.nan}),
        _with(QRELS, q1={"a": 0}),
        {"empty_ground_truth": "error"},
        ["run['q0']['a'] has score nan"],
        id="bad-before-empty",
    ),
    pytest.param(
        {k: v for k, v in RUN.items() if k != "q2"},
        _with(QRELS, q4={"a": math.nan}),
        {"missing_queries": "error"},
        ["query 'q2' is in the qrels but not in the run"],
        id="missing-before-bad",
    ),
]


@pytest.mark.parametrize(("run", "qrels", "options", "fragments"), ERRORS)
def test_errors_equal_per_query_path(
    run: dict[str, Any], qrels: dict[str, Any], options: dict[str, Any], fragments: list[str]
) -> None:
    with pytest.raises(InvalidRecordError) as fast:
        evaluate(run, qrels, ["map"], **options)
    with pytest.raises(InvalidRecordError) as slow:
        evaluate_per_query(run, qrels, ["map"], **options)
    assert str(fast.value) == str(slow.value)
    for fragment in fragments:
        assert fragment in str(fast.value)


def test_bad_query_outside_the_qrels_is_ignored() -> None:
    # Queries without judgments are never ranked, by either path: a bad score there is no error.
    run = _with(RUN, unjudged={"a": math.nan, "b": "x"})
    got, messages = evaluate(run, QRELS, ["map"])
    # By hand: a ranks 1st, then the tie at 0.5 puts c ("c" > "b") 2nd; both relevant.
    assert got == {qid: {"average_precision": (1 / 1 + 2 / 2) / 2} for qid in QRELS}
    assert messages == [
        "1 query(ies) in the run have no relevance judgments in the qrels and were left out, "
        "as trec_eval does; first: 'unjudged'",
        # b (unjudged) and c (grade 2) tie in every judged query
        "6 query(ies) have documents with equal scores but different grades; ties were ordered "
        "by docid descending (ties='trec_eval'), which changes their scores",
    ]


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_empty_ground_truth_policy_applies_to_queries_missing_from_the_run(
    implementation: str,
) -> None:
    # Found in review: q2 (no relevant document, no results) was scored 0 whatever the policy.
    run, qrels = {"q1": {"a": 1.0}}, {"q1": {"a": 1}, "q2": {"b": 0}}
    options = {"implementation": implementation}
    with pytest.warns(ConventionWarning, match="no relevant document"):
        skipped = evaluate_run(run, qrels, ["map"], empty_ground_truth="skip", **options)
    assert skipped == {"q1": {"average_precision": 1.0}}
    with pytest.raises(InvalidRecordError, match="'q2' has no relevant document"):
        evaluate_run(run, qrels, ["map"], empty_ground_truth="error", **options)
    with pytest.warns(ConventionWarning, match="scored 0"):
        zero = evaluate_run(run, qrels, ["map"], **options)
    assert zero == {"q1": {"average_precision": 1.0}, "q2": {"average_precision": 0.0}}
