"""The README example, end to end through the public API."""

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RougeChunkMatch

DATUM = {
    "retrieved_context": [
        "Paris is the capital of France and also the largest city in the country.",
        "Lyon is a major city in France.",
    ],
    "ground_truth_context": ["Paris is the capital of France."],
}


def test_readme_precision_recall_f1() -> None:
    assert PrecisionRecallF1(RougeChunkMatch())(**DATUM) == {
        "context_precision": 0.5,
        "context_recall": 1.0,
        "context_f1": 2 * 0.5 * 1.0 / 1.5,
    }


def test_readme_ranked_at_5() -> None:
    assert RankedRetrievalMetrics(RougeChunkMatch(), k=5)(**DATUM) == {
        "average_precision": 1.0,
        "reciprocal_rank": 1.0,
        "ndcg": 1.0,
        "hit_rate": 1.0,
        "precision": 0.2,
        "recall": 1.0,
    }
