"""continuous-eval's ROUGE metrics reproduced end to end with ``scorer="py-rouge"``.

continuous-eval's RougeChunkMatch/RougeSentenceMatch use the ``rouge`` package, not rouge-score;
``RougeChunkMatch(scorer="py-rouge")`` reproduces it. These tests run whole records through
continuous-eval's PrecisionRecallF1 and RankedRetrievalMetrics and demand the same numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from types import ModuleType

import pytest

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RougeChunkMatch


@pytest.fixture(scope="module")
def ce() -> Iterator[ModuleType]:
    import nltk

    # continuous_eval.metrics.retrieval calls nltk.download at import; make that a no-op.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nltk, "download", lambda *args, **kwargs: False)
        yield pytest.importorskip("continuous_eval.metrics.retrieval")


WORDS = (
    "the capital of France is Paris and Lyon a major city in country river Seine flows "
    "through north west museum Louvre holds art"
).split(" ")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "."


def _records(seed: int, count: int) -> list[dict[str, list[str]]]:
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        chunks = [" ".join(_sentence(rng) for _ in range(rng.randint(1, 4))) for _ in range(5)]
        truth = []
        for _ in range(rng.randint(1, 3)):
            source = rng.choice(chunks).split(".")[0] + "."
            # Some ground truth copied from a chunk, some perturbed, some unrelated.
            roll = rng.random()
            if roll < 0.4:
                truth.append(source)
            elif roll < 0.8:
                words = source.rstrip(".").split()
                words[rng.randrange(len(words))] = rng.choice(WORDS)
                truth.append(" ".join(words) + ".")
            else:
                truth.append(_sentence(rng))
        # continuous-eval's NDCG ideal counts duplicate ground truth; ctxeval removes them.
        records.append(
            {"retrieved_context": chunks, "ground_truth_context": list(dict.fromkeys(truth))}
        )
    return records


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.9])
def test_precision_recall_f1_equals_continuous_eval(ce: ModuleType, threshold: float) -> None:
    ours = PrecisionRecallF1(RougeChunkMatch(threshold, scorer="py-rouge"))
    theirs = ce.PrecisionRecallF1(ce.RougeChunkMatch(threshold))
    for record in _records(seed=int(threshold * 10), count=60):
        assert ours(**record) == theirs(**record), record


@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_ranked_metrics_equal_continuous_eval(ce: ModuleType, threshold: float) -> None:
    ours = RankedRetrievalMetrics(
        RougeChunkMatch(threshold, scorer="py-rouge"), convention="continuous_eval"
    )
    theirs = ce.RankedRetrievalMetrics(ce.RougeChunkMatch(threshold))
    for record in _records(seed=100 + int(threshold * 10), count=80):
        expected = theirs(**record)
        got = ours(**record)
        assert got["average_precision"] == expected["average_precision"], record
        assert got["reciprocal_rank"] == expected["reciprocal_rank"], record
        # continuous-eval discounts with 1 / math.log(i + 2, 2), ctxeval (like trec_eval) with
        # g / math.log2(i + 2): the two logarithms can differ in the last bit.
        assert math.isclose(got["ndcg"], expected["ndcg"], rel_tol=1e-12), record


def test_default_scorer_is_rouge_score_not_continuous_eval() -> None:
    # Case and punctuation: rouge-score lowercases and drops punctuation; the rouge package
    # compares whitespace tokens as they are, so "PARIS" does not match "Paris".
    record = {
        "retrieved_context": ["PARIS IS THE CAPITAL"],
        "ground_truth_context": ["Paris is the capital"],
    }
    assert PrecisionRecallF1(RougeChunkMatch())(**record)["context_recall"] == 1.0
    assert PrecisionRecallF1(RougeChunkMatch(scorer="py-rouge"))(**record)["context_recall"] == 0.0
