"""Users' retrievers as they are, real classes: LangChain retrievers and vector stores
(langchain-core), llama-index retrievers and vector indexes (llama-index-core), and the chunking
harness's questions.

llama-index-core loads nothing from the network here: its default text splitter would load
tiktoken's encoding (from a copy in its wheel, unless ``TIKTOKEN_CACHE_DIR`` points elsewhere, when
tiktoken downloads it), so every index is given a splitter with its own tokenizer, and the tests
point ``TIKTOKEN_CACHE_DIR`` at an empty folder: taking that path would try a download, which the
network guard of ``tests/conftest.py`` turns into a failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.retrieval.dense import DenseRetriever
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


# -- llama-index: a retriever of its own, and a vector index's ------------------------------------


@pytest.fixture(autouse=True)
def _tiktoken_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading tiktoken's encoding now means a download, which the network guard fails."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-tiktoken"))


class WordLlamaEmbedding(BaseEmbedding):
    """llama-index's embeddings interface over ctxeval's offline embedder."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(as_embedder("wordllama")(texts)).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def vector_index(nodes: list[TextNode]) -> VectorStoreIndex:
    """llama-index's in-memory vector index of ``nodes`` as they are, embedded offline. The
    splitter is never used (nodes are not split); given none, llama-index would build its default
    one, which loads tiktoken's encoding."""
    unused = SentenceSplitter(tokenizer=str.split)
    return VectorStoreIndex(nodes, embed_model=WordLlamaEmbedding(), transformations=[unused])


class EveryTextRetriever(BaseRetriever):
    """A llama-index retriever of a user's own: every text in order, each node with metadata
    (which is not part of its text)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(text=text, id_=f"d{i}", metadata={"file": f"{i}.txt"}),
                score=1.0 / (i + 1),
            )
            for i, text in enumerate(TEXTS)
        ]


def test_a_llama_index_retriever_plugs_in_as_it_is() -> None:
    retriever = EveryTextRetriever()
    measures = ["hit_rate@3", "reciprocal_rank"]
    result = RetrievalEvaluator.from_retriever(QUESTIONS, retriever, measures).run()
    assert result.aggregate["hit_rate@3"] == 1.0
    # "Dogs bark" is third, "Banks lend" second: the nodes' texts, without their metadata.
    assert [row["reciprocal_rank"] for row in result.per_query] == [1 / 3, 1 / 2]
    ids = [
        {"id": "q1", "question": "?", "relevant_ids": ["d1"]},
        {"id": "q2", "question": "?", "relevant_ids": ["d2", "d9"]},
    ]
    by_id = RetrievalEvaluator.from_retriever(ids, retriever, ["mrr", "recall@3"]).run()
    assert [row["reciprocal_rank"] for row in by_id.per_query] == [1 / 2, 1 / 3]
    assert [row["recall@3"] for row in by_id.per_query] == [1.0, 1 / 2]


def test_a_llama_index_vector_index_plugs_in_as_it_is() -> None:
    index = vector_index([TextNode(text=text, id_=f"d{i}") for i, text in enumerate(TEXTS)])
    retriever = index.as_retriever(similarity_top_k=2)
    # The same vectors and the cosine: llama-index ranks as ctxeval's dense retriever does
    # ("When do dogs bark?": dogs 0.82, cats 0.11, banks 0.07; "Who lends money?": banks 0.50,
    # dogs 0.10, cats 0.09).
    dense = DenseRetriever("wordllama").index(TEXTS)
    for question in ("When do dogs bark?", "Who lends money?"):
        hits = retriever.retrieve(question)
        assert [hit.node.node_id for hit in hits] == [f"d{p}" for p, _ in dense(question, 2)]
    by_text = [*QUESTIONS, {"id": "q3", "question": "When do dogs bark?",
                            "ground_truth_context": [TEXTS[0]]}]  # fmt: skip
    result = RetrievalEvaluator.from_retriever(by_text, retriever, ["reciprocal_rank"]).run()
    assert [row["reciprocal_rank"] for row in result.per_query] == [1.0, 1.0, 1 / 2]
    by_id = [
        {"id": "q1", "question": "When do dogs bark?", "relevant_ids": ["d2", "d0"]},
        {"id": "q2", "question": "Who lends money?", "relevant_ids": ["d0"]},
    ]
    result = RetrievalEvaluator.from_retriever(by_id, retriever, ["P@2", "hit_rate@2"]).run()
    assert [row["precision@2"] for row in result.per_query] == [1.0, 0.0]
    assert result.aggregate["hit_rate@2"] == 1 / 2


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
    with pytest.raises(InvalidArgumentError, match=r"questions\[0\]: the excerpt .* has no text"):
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


def test_a_llama_index_vector_index_per_chunking_in_the_harness() -> None:
    from ctxeval.chunking import PerChunking, compare_chunkers

    def index_of(chunks: list) -> object:
        nodes = [TextNode(text=chunk.text) for chunk in chunks]
        return vector_index(nodes).as_retriever(similarity_top_k=3)

    corpus = {"pets": " ".join(TEXTS[::2]), "money": TEXTS[1]}
    questions = [
        {"question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]},
        {"question": "Who lends money?", "excerpts": [TEXTS[1]]},
    ]
    chunkers = {"s": "sentences(n=1)", "w": "fixed(words=3)"}
    llama = compare_chunkers(
        corpus, questions, chunkers, retriever=PerChunking(index_of, "llama-index"), k=[1, 3]
    )
    ours = compare_chunkers(corpus, questions, chunkers, retriever="dense", k=[1, 3])
    assert llama.retriever == "llama-index"
    # The same vectors and the cosine: the rankings and numbers of ctxeval's dense retriever.
    for name in chunkers:
        got, want = llama.runs[name], ours.runs[name]
        assert [r["retrieved_context"] for r in got.records] == [
            r["retrieved_context"] for r in want.records
        ]
        for record, expected in zip(got.records, want.records, strict=True):
            assert record["retrieved_scores"] == pytest.approx(expected["retrieved_scores"])
        assert got.result.aggregate == want.result.aggregate
    assert [r["retrieved_context"] for r in llama.runs["s"].records] == [
        ["Dogs bark at night.", "Cats sleep most of the day.", TEXTS[1]],
        [TEXTS[1], "Dogs bark at night.", "Cats sleep most of the day."],
    ]
    assert [r["retrieved_context"] for r in llama.runs["w"].records] == [
        ["Dogs bark at", "Cats sleep most", "night."],
        ["Banks lend money", "Cats sleep most", "Dogs bark at"],
    ]
    # By hand: 3-word chunks cover 12 then 12 + 6 of the 19 characters of "Dogs bark at night.",
    # and 16 of the 29 of "Banks lend money at interest.".
    spans = llama.runs["w"].result.aggregate
    assert spans["span_recall@1"] == pytest.approx((12 / 19 + 16 / 29) / 2)
    assert spans["span_recall@3"] == pytest.approx((18 / 19 + 16 / 29) / 2)
