"""``ndcg(ties='average', ideal='retrieved')`` against scikit-learn's ``ndcg_score`` (its default
``ignore_ties=False``): documents of equal score share the mean of their gains. Through
``evaluate_run``, records with ``retrieved_scores`` (the same floats, bit for bit) and metric
objects called with them.

scikit-learn scores the documents it is given, so its ideal ranking is those documents sorted by
gain (ctxeval's ``ideal='retrieved'``), and a tie group's gain is spread over the discounts of
its positions, those beyond k counting 0, as here. The values agree to a few ulps, not to the
bit: scikit-learn computes discounts as ``1 / (ln(i + 2) / ln 2)`` and multiplies, sums per tie
group (``np.cumsum`` differences, then ``np.sum``), where ctxeval divides by ``log2(i + 2)``
rank by rank (trec_eval's order, kept for every NDCG variant). On 5,000 random queries of up to
10 documents the largest difference was 7 ulps; the test allows 16.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import ConventionWarning, RetrievalEvaluator, evaluate_run
from ctxeval.foundation.errors import InvalidRecordError
from ctxeval.metrics.measure_sets import IDMeasures, TextMeasures
from ctxeval.metrics.runs import rank_documents

sklearn_metrics = pytest.importorskip("sklearn.metrics")

DOCS = [f"d{i}" for i in range(10)]
SPEC = "ndcg(ideal='retrieved', ties='average')"


def ulps_apart(a: float, b: float) -> int:
    return round(abs(a - b) / math.ulp(max(abs(a), abs(b)))) if a != b else 0


def sklearn_ndcg(scores: dict[str, float], grades: dict[str, int], k: int | None) -> float:
    docs = list(scores)
    y_true = np.array([[max(grades.get(d, 0), 0) for d in docs]], dtype=np.float64)
    y_score = np.array([[scores[d] for d in docs]], dtype=np.float64)
    return float(sklearn_metrics.ndcg_score(y_true, y_score, k=k))


def ctxeval_ndcg(scores: dict[str, float], grades: dict[str, int], k: int | None) -> float:
    spec = SPEC if k is None else f"{SPEC}@{k}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate_run({"q": scores}, {"q": grades}, [spec])
    return result["q"][spec]


@settings(max_examples=300, deadline=None)
@given(
    scores=st.dictionaries(
        st.sampled_from(DOCS), st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=2, max_size=10
    ),
    grades=st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=10),
    k=st.sampled_from([None, 1, 2, 3, 5]),
)
def test_tie_averaged_ndcg_equals_scikit_learn(
    scores: dict[str, float], grades: dict[str, int], k: int | None
) -> None:
    expected = sklearn_ndcg(scores, grades, k)
    got = ctxeval_ndcg(scores, grades, k)
    assert ulps_apart(got, expected) <= 16, (got, expected)


def test_tie_averaging_by_hand() -> None:
    # a (grade 1) and b (0) tie first, c (2) and d (0) tie third: gains 1/2, 1/2, 1, 1.
    scores = {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.5}
    grades = {"a": 1, "c": 2}
    dcg = 0.5 / math.log2(2) + 0.5 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert math.isclose(ctxeval_ndcg(scores, grades, None), dcg / ideal, rel_tol=1e-15)
    # Without ties the ordering decides (docid descending: b before a, d before c).
    with pytest.warns(ConventionWarning, match="equal scores but different grades"):
        untied = evaluate_run({"q": scores}, {"q": grades}, ["ndcg(ideal='retrieved')"])["q"]
    assert untied["ndcg(ideal='retrieved')"] == ((1 / math.log2(3) + 2 / math.log2(5)) / ideal)
    assert ctxeval_ndcg(scores, grades, None) != untied["ndcg(ideal='retrieved')"]
    # No ties at all: the same number either way.
    distinct = {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}
    plain = evaluate_run({"q": distinct}, {"q": grades}, ["ndcg(ideal='retrieved')"])["q"]
    assert ctxeval_ndcg(distinct, grades, None) == plain["ndcg(ideal='retrieved')"]


def _ranked_record(qid: str, scores: dict[str, float], grades: dict[str, int]) -> dict[str, Any]:
    """An ID-mode record of one query, ranked as trec_eval ranks a run, with its scores."""
    ranked = rank_documents(scores)
    return {
        "id": qid,
        "retrieved_ids": ranked,
        "retrieved_scores": [scores[d] for d in ranked],  # type: ignore[index]
        "qrels": grades,
    }


QUERIES = st.lists(
    st.tuples(
        st.dictionaries(
            st.sampled_from(DOCS), st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=2, max_size=10
        ),
        st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=10),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(queries=QUERIES, k=st.sampled_from([None, 1, 3, 5]))
def test_records_with_scores_equal_evaluate_run_and_scikit_learn(
    queries: list[tuple[dict[str, float], dict[str, int]]], k: int | None
) -> None:
    # The record path (retrieved_scores on ID-mode records) gives evaluate_run's floats, bit
    # for bit, and so agrees with scikit-learn as evaluate_run does.
    spec = SPEC if k is None else f"{SPEC}@{k}"
    run = {f"q{i}": scores for i, (scores, _) in enumerate(queries)}
    qrels = {f"q{i}": grades for i, (_, grades) in enumerate(queries)}
    records = [_ranked_record(q, run[q], qrels[q]) for q in run]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = evaluate_run(run, qrels, [spec])
    for implementation in ("core", "reference"):
        result = RetrievalEvaluator(records, [spec], implementation=implementation).run()
        got = {row["id"]: row[spec] for row in result.per_query}
        assert got == {q: values[spec] for q, values in expected.items()}
    for q in run:
        assert ulps_apart(got[q], sklearn_ndcg(run[q], qrels[q], k)) <= 16


def test_metric_objects_take_retrieved_scores() -> None:
    scores = {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.5}
    grades = {"a": 1, "c": 2}
    record = _ranked_record("q", scores, grades)
    expected = ctxeval_ndcg(scores, grades, 3)
    spec = f"{SPEC}@3"
    by_ids = IDMeasures([spec])(
        retrieved_ids=record["retrieved_ids"],
        qrels=grades,
        retrieved_scores=record["retrieved_scores"],
    )
    by_texts = TextMeasures([spec], "exact-chunk")(
        retrieved_context=record["retrieved_ids"],
        ground_truth_context=[{"text": "a", "grade": 1}, {"text": "c", "grade": 2}],
        retrieved_scores=record["retrieved_scores"],
        question="a whole row is accepted",
    )
    assert by_ids == by_texts == {spec: expected}
    # Without scores every rank is its own group: the ordered value (b before a, d before c).
    ordered = IDMeasures(["ndcg(ideal='retrieved')@3"])(
        retrieved_ids=record["retrieved_ids"], qrels=grades
    )
    unscored = IDMeasures([spec])(retrieved_ids=record["retrieved_ids"], qrels=grades)
    assert unscored == {spec: ordered["ndcg(ideal='retrieved')@3"]} != {spec: expected}
    with pytest.raises(InvalidRecordError, match=r"retrieved_scores\[2\] = 0.9 is higher"):
        IDMeasures([spec])(
            retrieved_ids=["a", "b", "c"], qrels=grades, retrieved_scores=[1, 0.5, 0.9]
        )
    with pytest.raises(InvalidRecordError, match="has 2 score"):
        TextMeasures([spec], "exact-chunk")(
            retrieved_context=["a", "b", "c"], ground_truth_context=["a"], retrieved_scores=[1, 1]
        )


def test_no_tie_warning_when_every_measure_averages_ties(tmp_path: Any) -> None:
    # a (grade 1) and b (0) tie: the order matters to map, not to ndcg(ties='average').
    scores, grades = {"a": 1.0, "b": 1.0}, {"a": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        averaged = evaluate_run({"q": scores}, {"q": grades}, [SPEC, f"{SPEC}@1"])["q"]
    assert averaged[SPEC] == ctxeval_ndcg(scores, grades, None)
    with pytest.warns(ConventionWarning, match="equal scores but different grades"):
        evaluate_run({"q": scores}, {"q": grades}, [SPEC, "map"])
    # The same through TREC files, whatever form the metrics are given in.
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q Q0 a 0 1.0 t\nq Q0 b 0 1.0 t\n")
    qrels.write_text("q 0 a 1\n")
    for metrics in ([SPEC], (m for m in [SPEC]), IDMeasures([SPEC])):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = RetrievalEvaluator.from_trec(run, qrels, metrics, workers=1).run()
        assert result.aggregate[SPEC] == averaged[SPEC]
    with pytest.warns(ConventionWarning, match="equal scores but different grades"):
        RetrievalEvaluator.from_trec(run, qrels, [SPEC, "map"], workers=1)
    with pytest.warns(ConventionWarning, match="equal scores but different grades"):
        RetrievalEvaluator.from_trec(run, qrels, None, workers=1)
