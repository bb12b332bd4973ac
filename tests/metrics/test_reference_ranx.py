"""ctxeval.evaluate_run against ranx, per query.

What ranx does, read from ranx 0.3.21 (``ranx/metrics``, ``ranx/data_structures``), and why the
comparison can demand exact equality:

- Sums: every metric is a numba ``@njit`` function; numba's ``np.sum`` adds the elements one by
  one in index order (``for v in np.nditer(a): c += v``), not numpy's pairwise summation, so AP
  and DCG are accumulated rank by rank exactly as ctxeval (and trec_eval) do; adding the 0.0
  terms of non-relevant ranks changes nothing. ``np.log2`` and ``2 ** g`` on the same doubles give
  the same doubles as ``math.log2`` and ``2.0 ** g``.
- Ties: a ``Run`` sorts each query with numba's ``np.argsort`` (quicksort) of the negated
  scores. numba's quicksort hands ranges shorter than 16 elements to an insertion sort, which is
  stable, so for up to 15 documents per query tied documents keep the order of the run dict:
  ctxeval's ``ties="input"``. Above that the partitioning is not stable and tie order is
  arbitrary, so the main comparisons use runs without ties, and the tie comparison keeps queries
  to at most 12 documents.
- Missing queries: ``make_comparable=True`` adds an empty result for a judged query missing from
  the run (all metrics 0: ctxeval's ``missing_queries="zero"``) and drops unjudged queries (as
  ctxeval does, with a warning).
- ``-l`` (relevance level): ranx drops grades below the level everywhere, NDCG included; trec_eval
  and ctxeval keep every positive grade as an NDCG gain. Only the binary measures are compared at
  other levels; ``test_relevance_level_ndcg_divergence`` pins the difference by hand.

The first ranx call compiles its numba functions (tens of seconds, cached in NUMBA_CACHE_DIR).
"""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import ConventionWarning, evaluate_run, parse_measure

ranx = pytest.importorskip("ranx")

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")


# ranx name -> ctxeval spec. ranx's names parse in ctxeval as they are, except where noted.
MEASURES = {
    "map": "map",
    "map@3": "map@3",
    "map@10": "map@10",
    "ndcg": "ndcg",
    "ndcg@3": "ndcg@3",
    "ndcg@10": "ndcg@10",
    "ndcg_burges@10": "ndcg(gain='exponential')@10",
    "ndcg_burges@3": "ndcg_burges@3",
    "precision": "precision",
    "precision@1": "precision@1",
    "precision@5": "precision@5",
    "recall@3": "recall@3",
    "recall@10": "recall@10",
    "mrr": "mrr",
    "mrr@2": "mrr@2",
    "hit_rate@1": "hit_rate@1",
    "hit_rate@5": "hit_rate@5",
    # ranx's hits is a count of relevant retrieved, and its f1 the harmonic mean of
    # precision@k (over k) and recall@k: the same names mean the same numbers in ctxeval.
    "hits@3": "hits@3",
    "hits@10": "hits@10",
    "f1": "f1",
    "f1@3": "f1@3",
    "f1@10": "f1@10",
    # Added with issue 12: r-precision, unnormalised DCG (both gains), rank-biased precision.
    "r-precision": "r-precision",
    "dcg": "dcg",
    "dcg@3": "dcg@3",
    "dcg_burges": "dcg_burges",
    "dcg_burges@10": "dcg(gain='exponential')@10",
    "rbp.95": "rbp.95",
    "rbp.8": "rbp(persistence=0.8)",
    "rbp.5": "rbp.5",
}
# ranx drops grades below the level from (N)DCG's and RBP's gains, ctxeval (as trec_eval) keeps
# them: only the binary measures are compared at other levels.
BINARY = [m for m in MEASURES if not m.startswith(("ndcg", "dcg", "rbp"))]

DOC_IDS = ["d1", "d2", "d9", "d10", "d100", "D3", "a", "b", "B", "9", "10", "é", "z", "zz"]
QUERY_IDS = ["q1", "q2", "q3", "q4"]
judgments = st.dictionaries(st.sampled_from(DOC_IDS), st.integers(0, 3), min_size=1, max_size=10)


@st.composite
def ranking_without_ties(draw: st.DrawFn) -> dict[str, float]:
    docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=12, unique=True))
    scores = draw(
        st.lists(st.integers(-20, 20), min_size=len(docs), max_size=len(docs), unique=True)
    )
    return {doc: score / 4 for doc, score in zip(docs, scores, strict=True)}


ranking_with_ties = st.dictionaries(
    st.sampled_from(DOC_IDS), st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=1, max_size=12
)


@st.composite
def runs_and_qrels(draw: st.DrawFn, rankings: st.SearchStrategy) -> tuple[dict, dict]:
    judged = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, unique=True))
    qrels = {qid: draw(judgments) for qid in judged}
    in_run = draw(st.lists(st.sampled_from([*QUERY_IDS, "q_unjudged"]), min_size=1, unique=True))
    run = {qid: draw(rankings) for qid in in_run}
    return run, qrels


def ranx_scores(run: dict, qrels: dict, metrics: list[str]) -> dict[str, dict[str, float]]:
    """{qid: {ranx metric: value}} through ranx.evaluate, per query."""
    ranx_run = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), ranx_run, metrics, make_comparable=True)
    per_query: dict[str, dict[str, float]] = {}
    for metric in metrics:
        for qid, value in ranx_run.scores[metric].items():
            per_query.setdefault(qid, {})[metric] = float(value)
    return per_query


def key(spec: str) -> str:
    """evaluate_run's result key for a spec: its canonical form (map@3 -> average_precision@3)."""
    return str(parse_measure(spec))


def ctxeval_scores(
    run: dict, qrels: dict, specs: dict[str, str], **options: object
) -> dict[str, dict[str, float]]:
    with warnings.catch_warnings():
        # Missing, unjudged and tied queries are warned about; ranx handles them silently.
        warnings.simplefilter("ignore", ConventionWarning)
        result = evaluate_run(run, qrels, list(specs.values()), **options)
    return {
        qid: {name: values[key(spec)] for name, spec in specs.items()}
        for qid, values in result.items()
    }


@settings(max_examples=50)
@given(data=runs_and_qrels(ranking_without_ties()))
def test_evaluate_run_equals_ranx_without_ties(data: tuple[dict, dict]) -> None:
    run, qrels = data
    expected = ranx_scores(run, qrels, list(MEASURES))
    got = ctxeval_scores(run, qrels, MEASURES)
    assert set(expected) == set(qrels)
    assert got == expected


@settings(max_examples=50)
@given(data=runs_and_qrels(ranking_with_ties))
def test_ranx_ties_keep_input_order(data: tuple[dict, dict]) -> None:
    # At most 12 documents per query: numba's insertion sort range, stable (see module doc).
    run, qrels = data
    expected = ranx_scores(run, qrels, list(MEASURES))
    assert ctxeval_scores(run, qrels, MEASURES, ties="input") == expected


@pytest.mark.parametrize("level", [2, 3])
@settings(max_examples=30)
@given(data=runs_and_qrels(ranking_without_ties()))
def test_relevance_level_binary_measures_equal_ranx(level: int, data: tuple[dict, dict]) -> None:
    run, qrels = data
    metrics = [f"{m}-l{level}" for m in BINARY]
    expected = ranx_scores(run, qrels, metrics)
    specs = {f"{m}-l{level}": MEASURES[m] for m in BINARY}
    assert ctxeval_scores(run, qrels, specs, relevance_level=level) == expected


def test_relevance_level_ndcg_divergence() -> None:
    # d ranks first; a (grade 1) second; b (grade 2) third. Level 2.
    run = {"q": {"d": 3.0, "a": 2.0, "b": 1.0}}
    qrels = {"q": {"a": 1, "b": 2, "d": 0}}
    # ranx -l2 drops grade 1 altogether: DCG = 2/log2(4), ideal [2] -> IDCG = 2.
    ranx_value = ranx_scores(run, qrels, ["ndcg-l2"])["q"]["ndcg-l2"]
    assert math.isclose(ranx_value, (2 / math.log2(4)) / 2, rel_tol=1e-15)
    # ctxeval (as trec_eval) keeps grade 1 as a gain: DCG = 1/log2(3) + 2/log2(4),
    # ideal [2, 1] -> IDCG = 2 + 1/log2(3).
    got = evaluate_run(run, qrels, ["ndcg"], relevance_level=2)["q"]["ndcg"]
    assert math.isclose(
        got, (1 / math.log2(3) + 2 / math.log2(4)) / (2 + 1 / math.log2(3)), rel_tol=1e-15
    )
    assert got != ranx_value


def test_hand_built_case_equals_ranx() -> None:
    # One case with every convention at once, checked against ranx and by hand.
    run = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}, "q2": {"x": 1.0}, "extra": {"a": 1.0}}
    qrels = {"q1": {"b": 2, "d": 1, "e": 3, "a": 0}, "q2": {"y": 1}, "q3": {"a": 1}}
    expected = ranx_scores(run, qrels, list(MEASURES))
    with pytest.warns(ConventionWarning):
        got = evaluate_run(run, qrels, list(MEASURES.values()))
    assert set(got) == set(expected) == {"q1", "q2", "q3"}
    for qid in expected:
        assert {name: got[qid][key(spec)] for name, spec in MEASURES.items()} == expected[qid]
    # By hand for q1: hits at ranks 2 and 4 of 3 relevant; MAP = (1/2 + 2/4) / 3.
    assert got["q1"]["average_precision"] == (1 / 2 + 2 / 4) / 3
    assert got["q1"]["reciprocal_rank"] == 0.5
    assert got["q1"]["precision@5"] == 2 / 5
    assert got["q3"] == dict.fromkeys(map(key, MEASURES.values()), 0.0)
