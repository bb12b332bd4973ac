"""ctxeval against continuous-eval 0.3.14's retrieval metrics, and the divergences ctxeval fixes.

continuous-eval's ``RougeChunkMatch`` uses the ``rouge`` package (summary-level ROUGE-L over
whitespace tokens, case-sensitive), not rouge-score, so ctxeval's default ROUGE is only compared
with it where both obviously agree: texts that are either identical or share no word. (ctxeval's
``scorer="py-rouge"`` port of the rouge package is compared with it in
test_reference_continuous_eval_rouge.py.)

Importing ``continuous_eval.metrics.retrieval`` calls ``nltk.download`` three times; the import
below replaces ``nltk.download`` with a no-op for its duration, and the metrics are called through
``compute`` (``__call__`` adds a telemetry event, disabled by conftest anyway).
"""

from __future__ import annotations

import functools
import math
import warnings
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import ExactChunkMatch, PrecisionRecallF1, RankedRetrievalMetrics, RougeChunkMatch

pytest.importorskip("continuous_eval")


def _no_download(*args: object, **kwargs: object) -> bool:
    return False


@functools.lru_cache(maxsize=1)
def continuous_eval_retrieval() -> ModuleType:
    import nltk

    saved = nltk.download
    nltk.download = _no_download
    try:
        return pytest.importorskip("continuous_eval.metrics.retrieval")
    finally:
        nltk.download = saved


RANK_KEYS = ("average_precision", "reciprocal_rank")
SET_KEYS = ("context_precision", "context_recall", "context_f1")


def ulps_apart(a: float, b: float) -> int:
    return round(abs(a - b) / math.ulp(max(abs(a), abs(b)))) if a != b else 0


def assert_ndcg_close(got: float, expected: float) -> None:
    # continuous-eval's discount is 1 / math.log(i + 2, 2), i.e. log(x) / log(2), which is not
    # always the correctly rounded log2(x) that ctxeval (like trec_eval and ranx) uses:
    # 1/math.log(3, 2) != 1/math.log2(3). So its NDCG differs from ctxeval's in the last bits:
    # measured over all 43,300 rankings of up to 6 of 7 chunks against 1 to 5 ground-truth
    # items, 20,850 differ, by at most 2 ulps (retrieved ["a"], ground truth ["a", "b", "c"]:
    # 0.46927872602275655 vs 0.46927872602275644). Hence a relative tolerance for NDCG only;
    # AP, RR, P, R and F1 are compared exactly.
    assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=0.0), (got, expected)
    assert ulps_apart(got, expected) <= 4


def ce_scores(metric_name: str, strategy: Any, retrieved: list[str], gt: list[str]) -> dict:
    ce = continuous_eval_retrieval()
    metric = getattr(ce, metric_name)(strategy)
    return metric.compute(retrieved_context=retrieved, ground_truth_context=gt)


def ctx_ranked(strategy: Any, retrieved: list[str], gt: list[str], **options: Any) -> dict:
    metric = RankedRetrievalMetrics(strategy, convention="continuous_eval", **options)
    return metric(retrieved_context=retrieved, ground_truth_context=gt)


CHUNKS = ["alpha", "Alpha", "alpha ", "beta", "gamma delta", "gamma  delta", "epsilon", "zeta."]
chunks = st.sampled_from(CHUNKS)
# Ground truth without duplicates (continuous-eval's NDCG ideal counts duplicates).
unique_gt = st.lists(chunks, min_size=1, max_size=5, unique=True)


@settings(max_examples=200)
@given(
    retrieved=st.lists(st.one_of(chunks, st.just("")), max_size=8),
    gt=st.lists(chunks, max_size=5, unique=True),
)
def test_precision_recall_f1_exact_match(retrieved: list[str], gt: list[str]) -> None:
    # Duplicates in retrieved_context are fine here: both count every relevant retrieved copy.
    ce = continuous_eval_retrieval()
    expected = ce_scores("PrecisionRecallF1", ce.ExactChunkMatch(), retrieved, gt)
    got = PrecisionRecallF1(ExactChunkMatch())(retrieved_context=retrieved, ground_truth_context=gt)
    assert {key: got[key] for key in SET_KEYS} == expected


@settings(max_examples=200)
@given(retrieved=st.lists(chunks, max_size=8, unique=True), gt=unique_gt)
def test_ranked_metrics_exact_match(retrieved: list[str], gt: list[str]) -> None:
    ce = continuous_eval_retrieval()
    expected = ce_scores("RankedRetrievalMetrics", ce.ExactChunkMatch(), retrieved, gt)
    got = ctx_ranked(ExactChunkMatch(), retrieved, gt)
    assert {key: got[key] for key in RANK_KEYS} == {key: expected[key] for key in RANK_KEYS}
    assert_ndcg_close(got["ndcg"], expected["ndcg"])


@settings(max_examples=150)
@given(retrieved=st.lists(chunks, max_size=8), gt=unique_gt)
def test_ranked_metrics_with_duplicate_retrieved(retrieved: list[str], gt: list[str]) -> None:
    # Repeated retrieved chunks: continuous-eval's NDCG keeps a set of matched ground truth
    # (one-to-one, like ctxeval); its AP counts every chunk that matches some ground truth,
    # repeats included, which the continuous_eval convention reproduces with ap_credit="any"
    # (see test_duplicate_retrieved_average_precision). Every value stays <= 1 under every
    # convention.
    ce = continuous_eval_retrieval()
    expected = ce_scores("RankedRetrievalMetrics", ce.ExactChunkMatch(), retrieved, gt)
    got = ctx_ranked(ExactChunkMatch(), retrieved, gt)
    assert {key: got[key] for key in RANK_KEYS} == {key: expected[key] for key in RANK_KEYS}
    assert_ndcg_close(got["ndcg"], expected["ndcg"])
    for convention in ("trec_eval", "ranx", "continuous_eval"):
        scores = RankedRetrievalMetrics(ExactChunkMatch(), convention=convention)(
            retrieved_context=retrieved, ground_truth_context=gt
        )
        assert all(0.0 <= value <= 1.0 for value in scores.values()), scores


# --------------------------------------------------------------------------------------------
# Documented divergences, with hand-computed expectations.


def test_duplicate_ground_truth_ndcg() -> None:
    # continuous-eval's ideal DCG runs over every ground-truth item, duplicates included:
    # IDCG = 1 + 1/log2(3) although only one distinct item can ever be found. ctxeval dedups.
    ce = continuous_eval_retrieval()
    retrieved, gt = ["a"], ["a", "a"]
    expected_ce = 1 / (1 + 1 / math.log(3, 2))
    assert ce_scores("RankedRetrievalMetrics", ce.ExactChunkMatch(), retrieved, gt)["ndcg"] == (
        expected_ce
    )
    got = ctx_ranked(ExactChunkMatch(), retrieved, gt)
    assert got["ndcg"] == 1.0
    assert got["average_precision"] == got["reciprocal_rank"] == 1.0
    # Precision/recall: both dedup the ground truth.
    assert ce_scores("PrecisionRecallF1", ce.ExactChunkMatch(), retrieved, gt) == {
        "context_precision": 1.0,
        "context_recall": 1.0,
        "context_f1": 1.0,
    }
    assert PrecisionRecallF1(ExactChunkMatch())(
        retrieved_context=retrieved, ground_truth_context=gt
    ) == {"context_precision": 1.0, "context_recall": 1.0, "context_f1": 1.0}


def test_ndcg_discount_formulas() -> None:
    # Why NDCG is compared with a tolerance: each tool's value is its own formula, by hand.
    ce = continuous_eval_retrieval()
    retrieved, gt = ["a"], ["a", "b", "c"]
    ce_value = ce_scores("RankedRetrievalMetrics", ce.ExactChunkMatch(), retrieved, gt)["ndcg"]
    assert ce_value == 1 / (1 + 1 / math.log(3, 2) + 1 / math.log(4, 2))
    got = ctx_ranked(ExactChunkMatch(), retrieved, gt)["ndcg"]
    assert got == 1 / (1 + 1 / math.log2(3) + 1 / math.log2(4))
    assert_ndcg_close(got, ce_value)


def test_duplicate_retrieved_average_precision() -> None:
    ce = continuous_eval_retrieval()
    retrieved, gt = ["x", "a", "a"], ["a"]
    # continuous-eval counts both copies of "a": (1/2 + 2/3) / 2, and so does the
    # continuous_eval convention (ap_credit="any", over the hits retrieved).
    expected = (1 / 2 + 2 / 3) / 2
    ce_ap = ce_scores("RankedRetrievalMetrics", ce.ExactChunkMatch(), retrieved, gt)
    assert ce_ap["average_precision"] == expected
    assert ctx_ranked(ExactChunkMatch(), retrieved, gt)["average_precision"] == expected
    # One-to-one credit counts "a" once, at rank 2: (1/2) / 1 under either AP denominator.
    one_to_one = ctx_ranked(ExactChunkMatch(), retrieved, gt, ap_credit="one_to_one")
    assert one_to_one["average_precision"] == 0.5
    trec = RankedRetrievalMetrics(ExactChunkMatch())(
        retrieved_context=retrieved, ground_truth_context=gt
    )
    assert trec["average_precision"] == 0.5


def test_duplicate_retrieved_cannot_push_ap_above_one() -> None:
    # A per-retrieved-item AP with the trec_eval denominator (relevant items) would give
    # (1/1 + 2/2) / 1 = 2 here; ctxeval gives 1.
    retrieved, gt = ["a", "a", "a"], ["a"]
    for convention in ("trec_eval", "ranx", "continuous_eval"):
        scores = RankedRetrievalMetrics(ExactChunkMatch(), convention=convention)(
            retrieved_context=retrieved, ground_truth_context=gt
        )
        assert scores["average_precision"] == 1.0
        assert scores["ndcg"] == scores["reciprocal_rank"] == scores["recall"] == 1.0
        assert all(value <= 1.0 for value in scores.values())


LONG_WORDS = 5_000


def long_chunk() -> str:
    return " ".join(f"w{(i * 7919) % 503}" for i in range(LONG_WORDS))


def test_long_chunk_rouge() -> None:
    ce = continuous_eval_retrieval()
    sentence = "the quick brown fox jumps over the lazy dog"
    words = long_chunk().split()
    with_sentence = " ".join([*words[:2500], sentence, *words[2500:]])
    # continuous-eval: the rouge package recurses once per word, hits the recursion limit, and
    # continuous-eval's `except Exception: return False` turns that into "not relevant".
    # (Only the chunk-vs-sentence pair is run through it: its pure-Python 5,000 x 5,000 LCS
    # table for the chunk against itself takes half a minute before failing the same way.)
    assert ce_scores("PrecisionRecallF1", ce.RougeChunkMatch(), [with_sentence], [sentence]) == {
        "context_precision": 0.0,
        "context_recall": 0.0,
        "context_f1": 0.0,
    }
    for retrieved, gt in (([with_sentence], [sentence]), ([long_chunk()], [long_chunk()])):
        # By hand: the ground truth is a subsequence of the chunk, so ROUGE-L recall is 1.
        assert PrecisionRecallF1(RougeChunkMatch())(
            retrieved_context=retrieved, ground_truth_context=gt
        ) == {"context_precision": 1.0, "context_recall": 1.0, "context_f1": 1.0}
        ranked = ctx_ranked(RougeChunkMatch(), retrieved, gt)
        assert ranked["average_precision"] == ranked["reciprocal_rank"] == ranked["ndcg"] == 1.0
        # The same with ctxeval's port of continuous-eval's own ROUGE (the rouge package's
        # summary-level ROUGE-L), which does not recurse: every gt word is in the LCS.
        assert PrecisionRecallF1(RougeChunkMatch(scorer="py-rouge"))(
            retrieved_context=retrieved, ground_truth_context=gt
        ) == {"context_precision": 1.0, "context_recall": 1.0, "context_f1": 1.0}


# Sentences with pairwise disjoint, lower-case vocabularies and no periods: ROUGE-L recall
# is 1 between identical texts and 0 otherwise, in rouge-score and in the rouge package alike.
DISJOINT = [
    "paris is the capital of france",
    "lyon sits on two rivers",
    "berlin has many museums",
    "madrid hosts a royal palace",
    "rome was founded early",
]


@settings(max_examples=60)
@given(
    retrieved=st.lists(st.sampled_from(DISJOINT), max_size=6, unique=True),
    gt=st.lists(st.sampled_from(DISJOINT), min_size=1, max_size=4, unique=True),
)
def test_rouge_agrees_on_identical_or_disjoint_texts(retrieved: list[str], gt: list[str]) -> None:
    ce = continuous_eval_retrieval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got_set = PrecisionRecallF1(RougeChunkMatch())(
            retrieved_context=retrieved, ground_truth_context=gt
        )
        got_rank = ctx_ranked(RougeChunkMatch(), retrieved, gt)
    assert got_set == ce_scores("PrecisionRecallF1", ce.RougeChunkMatch(), retrieved, gt)
    expected_rank = ce_scores("RankedRetrievalMetrics", ce.RougeChunkMatch(), retrieved, gt)
    assert {key: got_rank[key] for key in RANK_KEYS} == {
        key: expected_rank[key] for key in RANK_KEYS
    }
    assert_ndcg_close(got_rank["ndcg"], expected_rank["ndcg"])
