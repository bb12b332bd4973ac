"""Users' retrievers as they are: LangChain retrievers and vector stores (real classes from
langchain-core), llama-index-shaped results, and the chunking harness's questions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.retrieval.embedders import as_embedder

TEXTS = [
    "Cats sleep most of the day.",
    "Banks lend money at interest.",
    "Dogs bark at night.",
]


class WordLlamaEmbeddings(Embeddings):
    """LangChain's embeddings interface over ctxeval's offline embedder."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(as_embedder("wordllama")(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="module")
def store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(WordLlamaEmbeddings())
    store.add_documents([Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)])
    return store


QUESTIONS = [
    {"id": "q1", "question": "When do dogs bark?", "ground_truth_context": ["Dogs bark at night."]},
    {"id": "q2", "question": "Who lends money?", "ground_truth_context": [TEXTS[1]]},
]


def test_a_langchain_retriever_plugs_in_as_it_is(store: InMemoryVectorStore) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 2})
    result = RetrievalEvaluator.from_retriever(QUESTIONS, retriever, ["hit_rate@2"]).run()
    assert result.aggregate["hit_rate@2"] == 1.0
    by_hand = RetrievalEvaluator.from_retriever(
        QUESTIONS, lambda q: [d.page_content for d in retriever.invoke(q)], ["hit_rate@2"]
    ).run()
    assert result.per_query == by_hand.per_query


def test_documents_give_their_ids_in_id_mode(store: InMemoryVectorStore) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 1})
    questions = [{"id": "q1", "question": "When do dogs bark?", "relevant_ids": ["d2"]}]
    result = RetrievalEvaluator.from_retriever(questions, retriever, ["hit_rate@1"]).run()
    assert result.aggregate["hit_rate@1"] == 1.0


class Node:
    """The shape of llama-index's TextNode and NodeWithScore (read by what they offer)."""

    def __init__(self, text: str, node_id: str) -> None:
        self.text, self.node_id = text, node_id

    def get_content(self) -> str:
        return self.text


class NodeWithScore:
    def __init__(self, node: Node, score: float) -> None:
        self.node, self.score = node, score


class LlamaIndexLikeRetriever:
    def retrieve(self, question: str) -> list[NodeWithScore]:
        return [NodeWithScore(Node(t, f"d{i}"), 1.0 / (i + 1)) for i, t in enumerate(TEXTS)]


def test_a_llama_index_retriever_plugs_in_as_it_is() -> None:
    result = RetrievalEvaluator.from_retriever(
        QUESTIONS, LlamaIndexLikeRetriever(), ["hit_rate@3", "reciprocal_rank"]
    ).run()
    assert result.aggregate["hit_rate@3"] == 1.0
    assert result.per_query[0]["reciprocal_rank"] == 1 / 3  # "Dogs bark" is third
    ids = [{"id": "q", "question": "?", "relevant_ids": ["d1"]}]
    by_id = RetrievalEvaluator.from_retriever(ids, LlamaIndexLikeRetriever(), ["mrr"]).run()
    assert by_id.aggregate["reciprocal_rank"] == 0.5


def test_the_harness_questions_and_their_file(tmp_path: Path) -> None:
    questions = [
        {"id": "q1", "question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]},
        {"id": "q2", "question": "Who lends?", "excerpts": [{"text": TEXTS[1], "doc": "b",
                                                            "start": 0, "end": 29}]},
    ]  # fmt: skip
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")

    def retrieve(question: str) -> list[str]:
        return list(TEXTS)

    from_list = RetrievalEvaluator.from_retriever(questions, retrieve, ["hit_rate@3"]).run()
    from_file = RetrievalEvaluator.from_retriever(path, retrieve, ["hit_rate@3"]).run()
    assert from_list.aggregate == from_file.aggregate == {"hit_rate@3": 1.0}


def test_what_cannot_be_used_is_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"LangChain retriever .* llama-index"):
        RetrievalEvaluator.from_retriever(QUESTIONS, 42)
    spans_only = [{"question": "?", "excerpts": [{"doc": "a", "start": 0, "end": 3}]}]
    with pytest.raises(InvalidArgumentError, match=r"question 1: the excerpt .* has no text"):
        RetrievalEvaluator.from_retriever(spans_only, lambda q: ["x"]).run()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "?", "excerpts": ["x"]}\n{oops\n', encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"bad\.jsonl:2: not valid JSON"):
        RetrievalEvaluator.from_retriever(bad, lambda q: ["x"])


def test_a_vector_store_per_chunking_in_the_harness() -> None:
    from ctxeval.chunking import PerChunking, compare_chunkers

    def store_of(chunks: list) -> object:
        store = InMemoryVectorStore(WordLlamaEmbeddings())
        store.add_texts([c.text for c in chunks])
        return store.as_retriever(search_kwargs={"k": 3})

    corpus = {"pets": " ".join(TEXTS[::2]), "money": TEXTS[1]}
    questions = [{"question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]}]
    result = compare_chunkers(
        corpus, questions, {"s": "sentences(n=1)", "w": "fixed(words=3)"},
        retriever=PerChunking(store_of, "in-memory"), k=[1, 3],
    )  # fmt: skip
    assert result.retriever == "in-memory"
    assert result.runs["s"].records[0]["retrieved_context"][0] == "Dogs bark at night."

    def foreign(chunks: list) -> object:
        return lambda question: ["a text that is no chunk"]

    with pytest.raises(InvalidArgumentError, match="not one of this chunking's chunks"):
        compare_chunkers(corpus, questions, {"s": "sentences(n=1)", "w": "fixed(words=3)"},
                         retriever=PerChunking(foreign, "foreign"), k=[1])  # fmt: skip


def test_a_langchain_retriever_in_the_harness_asks_for_a_factory(
    store: InMemoryVectorStore,
) -> None:
    from ctxeval.chunking import compare_chunkers

    with pytest.raises(InvalidArgumentTypeError, match="wrap the function that builds it"):
        compare_chunkers({"a": "x y"}, [], {"a": "fixed(words=1)", "b": "fixed(words=2)"},
                         retriever=store.as_retriever())  # fmt: skip
