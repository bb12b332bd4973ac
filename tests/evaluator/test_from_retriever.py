"""RetrievalEvaluator.from_retriever: a live retriever, no run file, the same numbers."""

from __future__ import annotations

import pytest

from ctxeval import RetrievalEvaluator
from ctxeval.errors import CtxevalError

DOCS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "The Seine flows through Paris.",
]
QUESTIONS = [
    {"id": "q1", "question": "capital of France", "ground_truth_context": [DOCS[0]]},
    {"id": "q2", "question": "river Paris", "ground_truth_context": [DOCS[2]]},
    {"id": "q3", "question": "capital of Germany", "ground_truth_context": [DOCS[1]]},
]


def overlap_retriever(question: str) -> list[str]:
    words = set(question.lower().split())
    return sorted(DOCS, key=lambda d: (-len(words & set(d.lower().rstrip(".").split())), d))


def test_a_live_retriever_equals_its_materialised_run() -> None:
    live = RetrievalEvaluator.from_retriever(QUESTIONS, overlap_retriever, workers=1).run(k=[1, 3])
    records = [{**q, "retrieved_context": overlap_retriever(q["question"])} for q in QUESTIONS]
    stored = RetrievalEvaluator(records, workers=1).run(k=[1, 3])
    assert live.aggregate == stored.aggregate
    assert live.summary["source"] == "overlap_retriever"
    assert [row["id"] for row in live.per_query] == ["q1", "q2", "q3"]


def test_each_run_asks_the_retriever_again() -> None:
    calls: list[str] = []

    def counting(question: str) -> list[str]:
        calls.append(question)
        return overlap_retriever(question)

    evaluator = RetrievalEvaluator.from_retriever(QUESTIONS, counting, ["hit_rate@1"], workers=1)
    assert evaluator.run().aggregate["hit_rate@1"] == 2 / 3  # q2's words are mostly elsewhere
    evaluator.run()
    assert len(calls) == 6


@pytest.mark.parametrize(
    ("questions", "retrieve", "message"),
    [
        ([{"ground_truth_context": ["x"]}], overlap_retriever, "no 'question'"),
        (QUESTIONS, lambda q: "one text", "return a list of texts"),
        (QUESTIONS, "not callable", "give a function"),
    ],
)
def test_bad_live_inputs(questions, retrieve, message: str) -> None:
    with pytest.raises(CtxevalError, match=message):
        RetrievalEvaluator.from_retriever(questions, retrieve, workers=1).run()
