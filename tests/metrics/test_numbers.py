"""Numbers at their limits: huge grades, exponential gain, huge and odd cut-offs (issue 10)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxeval import (
    IDRankedRetrievalMetrics,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    evaluate_run,
)
from ctxeval.cutoffs.cutoff import MAX_K
from ctxeval.foundation.errors import InvalidArgumentError, InvalidRecordError, SpecError
from ctxeval.io.readers import read_records
from ctxeval.metrics.measures import parse_measure
from ctxeval.records.checks import MAX_GRADE
from ctxeval.records.model import RecordError

GRADES = st.one_of(
    st.floats(min_value=0, max_value=MAX_GRADE, exclude_min=True),
    st.integers(min_value=1, max_value=MAX_GRADE),
)


@pytest.mark.parametrize("grade", [1.5e308, 1e301, MAX_GRADE + 1, 1100, 10**9])
def test_grades_above_the_limit_are_bad_records(grade: float) -> None:
    text = {
        "id": "q1",
        "retrieved_context": ["a"],
        "ground_truth_context": [{"text": "a", "grade": grade}],
    }
    ids = {"id": "q2", "retrieved_ids": ["d1"], "qrels": {"d1": grade}}
    for record, field in ((text, "ground_truth_context"), (ids, "qrels")):
        (error,) = read_records([record])
        assert isinstance(error, RecordError)
        assert error.field == field
        assert f"at most {MAX_GRADE}" in error.message
    with pytest.raises(InvalidRecordError, match=f"at most {MAX_GRADE}"):
        RankedRetrievalMetrics(gain="exponential")(
            retrieved_context=["a"], ground_truth_context=text["ground_truth_context"]
        )
    with pytest.raises(InvalidRecordError, match=f"at most {MAX_GRADE}"):
        IDRankedRetrievalMetrics()(retrieved_ids=["d1"], qrels={"d1": grade})


def test_grade_limit_through_evaluator_skips(tmp_path: Path) -> None:
    records = [
        {
            "id": "q1",
            "retrieved_context": ["a"],
            "ground_truth_context": [{"text": "a", "grade": 1.5e308}],
        },
        {"id": "q2", "retrieved_context": ["a"], "ground_truth_context": ["a"]},
    ]
    result = RetrievalEvaluator(records, metrics=["ndcg"], workers=1, on_error="skip").run()
    assert result.aggregate["ndcg"] == 1.0
    assert len(result.skipped) == 1


@given(
    st.lists(GRADES, min_size=1, max_size=8),
    st.lists(st.integers(min_value=0, max_value=9), max_size=8),
    st.sampled_from(["linear", "exponential"]),
)
def test_any_grade_that_validates_gives_a_finite_ndcg(
    grades: list[float], order: list[int], gain: str
) -> None:
    truth = [{"text": f"t{i}", "grade": g} for i, g in enumerate(grades)]
    retrieved = [f"t{i}" for i in order]
    metric = RankedRetrievalMetrics("exact-chunk", gain=gain)  # type: ignore[arg-type]
    value = metric(retrieved_context=retrieved, ground_truth_context=truth)["ndcg"]
    assert value is not None
    assert math.isfinite(value)
    assert 0 <= value <= 1 + 1e-12
    qrels = {f"t{i}": g for i, g in enumerate(grades)}
    id_metric = IDRankedRetrievalMetrics(gain=gain)  # type: ignore[arg-type]
    id_value = id_metric(retrieved_ids=retrieved, qrels=qrels)["ndcg"]
    assert id_value is not None
    assert math.isfinite(id_value)
    record = {"retrieved_context": retrieved, "ground_truth_context": truth}
    spec = "ndcg(gain='exponential')" if gain == "exponential" else "ndcg"
    result = RetrievalEvaluator([record], metrics=[spec], matching="exact-chunk", workers=1).run()
    assert result.aggregate[spec] == value


def test_exponential_gain_at_the_limit() -> None:
    truth = [{"text": "a", "grade": MAX_GRADE}, {"text": "b", "grade": MAX_GRADE}]
    value = RankedRetrievalMetrics("exact-chunk", gain="exponential")(
        retrieved_context=["b", "x", "a"], ground_truth_context=truth
    )["ndcg"]
    assert value is not None
    assert 0 < value < 1


@pytest.mark.parametrize("k", [2**31, 2**63, 10**20])
def test_huge_k_is_rejected_with_the_limit(k: int) -> None:
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_K}"):
        RetrievalEvaluator([{"retrieved_context": ["a"], "ground_truth_context": ["a"]}]).run(k=k)
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_K}"):
        RankedRetrievalMetrics(k=k)
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_K}"):
        IDRankedRetrievalMetrics(k=k)
    with pytest.raises(SpecError, match=f"at most {MAX_K}"):
        parse_measure(f"ndcg@{k}")
    with pytest.raises(SpecError, match=f"at most {MAX_K}"):
        parse_measure(f"P_{k}")
    with pytest.raises(SpecError, match=f"at most {MAX_K}"):
        evaluate_run({"q": {"d": 1.0}}, {"q": {"d": 1}}, [f"P@{k}"])


def test_the_largest_k_works() -> None:
    record = {"retrieved_context": ["a", "b"], "ground_truth_context": ["a"]}
    result = RetrievalEvaluator([record], metrics=["precision", "ndcg"], workers=1).run(k=MAX_K)
    assert result.aggregate[f"precision@{MAX_K}"] == 1 / MAX_K
    assert result.aggregate[f"ndcg@{MAX_K}"] == 1.0
    assert (
        evaluate_run({"q": {"d": 1.0}}, {"q": {"d": 1}}, [f"P@{MAX_K}"])["q"][f"precision@{MAX_K}"]
        == 1 / MAX_K
    )


def test_none_among_cut_offs() -> None:
    record = {"retrieved_context": ["x", "a"], "ground_truth_context": ["a"]}
    result = RetrievalEvaluator([record], metrics=["recall"], workers=1).run(k=[None, 1])
    assert result.aggregate == {"recall@1": 0.0, "recall": 1.0}


@pytest.mark.parametrize("k", [5.5, "5", True, [3, 2.5], [None, "x"]])
def test_odd_k_is_a_clear_error(k: object) -> None:
    record = {"retrieved_context": ["a"], "ground_truth_context": ["a"]}
    with pytest.raises(InvalidArgumentError, match="k must be a whole number"):
        RetrievalEvaluator([record], workers=1).run(k=k)
