"""RetrievalEvaluator.from_retriever: a live retriever, no run file, the same numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import CtxevalError

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


# -- llama-index's EmbeddingQAFinetuneDataset: ID mode, the retriever returns node ids ----------
QA = {
    "queries": {"q1": "capital of France", "q2": "river Paris", "q3": "capital of Germany"},
    "corpus": {"n1": DOCS[0], "n2": DOCS[1], "n3": DOCS[2], "n4": "Lyon is in France."},
    "relevant_docs": {"q1": ["n1"], "q2": ["n3", "n1"], "q3": ["n2"]},
    "mode": "text",
}
RANKED = {"q1": ["n4", "n1", "n2"], "q2": ["n3", "n2"], "q3": ["n1", "n4"]}


def node_retriever(question: str) -> list[str]:
    qid = next(q for q, text in QA["queries"].items() if text == question)  # type: ignore[union-attr]
    return RANKED[qid]


class EmbeddingQAFinetuneDataset:
    """llama-index's class, as its attributes: the dataset object itself is accepted. (A stand-in:
    the class left llama-index-core for llama-index-finetuning, which the test extra lacks.)"""

    def __init__(self, queries: dict, corpus: dict, relevant_docs: dict, mode: str) -> None:
        self.queries, self.corpus, self.relevant_docs, self.mode = (
            queries,
            corpus,
            relevant_docs,
            mode,
        )


def test_a_llama_index_dataset_is_id_mode_ground_truth(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_text(json.dumps(QA), encoding="utf-8")
    measures = ["mrr", "ndcg@3", "recall@1", "P@2", "map"]
    by_path = RetrievalEvaluator.from_retriever(path, node_retriever, measures, workers=1).run()
    # By hand: q1 hit at rank 2; q2 hits at 1 (n3) of {n3, n1}; q3 no hit.
    assert [row["reciprocal_rank"] for row in by_path.per_query] == [1 / 2, 1.0, 0.0]
    assert [row["recall@1"] for row in by_path.per_query] == [0.0, 1 / 2, 0.0]
    assert by_path.per_query[0]["ndcg@3"] == 1 / math.log2(3)
    assert by_path.per_query[1]["ndcg@3"] == 1 / (1 + 1 / math.log2(3))
    assert [row["id"] for row in by_path.per_query] == ["q1", "q2", "q3"]
    assert by_path.per_query[0]["question"] == "capital of France"
    # The same dataset as a dict and as the object; and the same numbers as the run file of
    # these rankings judged by the same JSON as qrels (from_trec, trec_eval's ranking).
    as_dict = RetrievalEvaluator.from_retriever(QA, node_retriever, measures, workers=1).run()
    obj = EmbeddingQAFinetuneDataset(**QA)  # type: ignore[arg-type]
    as_object = RetrievalEvaluator.from_retriever(obj, node_retriever, measures, workers=1).run()
    run = tmp_path / "run.trec"
    run.write_text(
        "".join(
            f"{q} Q0 {doc} {rank} {10 - rank} live\n"
            for q, docs in RANKED.items()
            for rank, doc in enumerate(docs, 1)
        ),
        encoding="utf-8",
    )
    trec = RetrievalEvaluator.from_trec(run, path, measures, workers=1).run()
    assert by_path.aggregate == as_dict.aggregate == as_object.aggregate == trec.aggregate


def test_default_metrics_of_a_llama_index_dataset_are_the_id_metrics() -> None:
    result = RetrievalEvaluator.from_retriever(QA, node_retriever, workers=1).run(k=[1, 3])
    assert result.aggregate["hit_rate@3"] == 2 / 3
    assert result.aggregate["context_recall@1"] == (0 + 1 / 2 + 0) / 3


def test_questions_with_relevant_ids_are_id_mode() -> None:
    questions = [
        {"id": q, "question": QA["queries"][q], "relevant_ids": docs}  # type: ignore[index]
        for q, docs in QA["relevant_docs"].items()  # type: ignore[union-attr]
    ]
    live = RetrievalEvaluator.from_retriever(questions, node_retriever, ["mrr"], workers=1).run()
    assert live.aggregate == {"reciprocal_rank": (1 / 2 + 1 + 0) / 3}


@pytest.mark.parametrize(
    ("questions", "retrieve", "message"),
    [
        ("missing.json", node_retriever, r"questions='missing.json'\): the file does not exist"),
        (3, node_retriever, r"questions=...\): got int; give a list of question dicts"),
        # Counted from 0, as records are (it said "question 1" for questions[0]).
        (["q"], node_retriever, r"questions\[0\] is str; give each question as a dict"),
        (QA, lambda q: "n1", r"returned str for questions\[0\] \(id 'q1'\); return a list"),
        ({**QA, "relevant_docs": {"q1": ["n1"]}}, node_retriever, "query 'q2' has no"),
        ({**QA, "relevant_docs": {**QA["relevant_docs"], "q9": ["n1"]}}, node_retriever, "'q9'"),  # type: ignore[dict-item]
        ({**QA, "relevant_docs": {"q1": "n1"}}, node_retriever, "must be a list of node ids"),
        (QA, lambda q: [1, 2], r"returned 1 \(int\) among the ids.*n.node.node_id"),
        (QA, lambda q: "n1", "return a list of ids, best first"),
    ],
)
def test_bad_llama_index_inputs(questions: object, retrieve: object, message: str) -> None:
    with pytest.raises(CtxevalError, match=message):
        RetrievalEvaluator.from_retriever(questions, retrieve, ["mrr"], workers=1).run()  # type: ignore[arg-type]


def test_a_json_file_that_is_not_the_dataset(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_text('{"questions": []}', encoding="utf-8")
    with pytest.raises(
        CtxevalError, match=r"qa.json: expected llama-index's .*found \['questions'\]"
    ):
        RetrievalEvaluator.from_retriever(path, node_retriever)
    path.write_text('{"queries": {', encoding="utf-8")
    with pytest.raises(CtxevalError, match=r"qa.json:1: not valid JSON"):
        RetrievalEvaluator.from_retriever(path, node_retriever)
