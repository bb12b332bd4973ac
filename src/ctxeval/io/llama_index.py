"""llama-index's ``EmbeddingQAFinetuneDataset``: ``{"queries": {qid: question}, "corpus":
{node id: text}, "relevant_docs": {qid: [node id, ...]}}``, what ``generate_qa_embedding_pairs``
writes and ``EmbeddingQAFinetuneDataset.save_json`` saves.

As ID-mode ground truth: :func:`llama_index_qrels` for a run file (``--qrels qa.json``,
``RetrievalEvaluator.from_trec``), :func:`llama_index_questions` for a live retriever
(``RetrievalEvaluator.from_retriever(qa, retrieve)``). Every listed node has relevance 1, as in
llama-index's ``RetrieverEvaluator``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.io.sources import json_error, text_lines

__all__ = [
    "is_llama_index_dataset",
    "llama_index_qrels",
    "llama_index_questions",
    "read_json_document",
]


def read_json_document(path: str | os.PathLike[str]) -> object:
    """A whole JSON file (UTF-8, or UTF-16/32 with a byte-order mark); an error naming the file
    and line when it is not JSON."""
    lines = [line for _, line in text_lines(Path(path))]
    try:
        return json.loads("".join(lines))
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"{path}:{exc.lineno}: not valid JSON ({json_error(exc)})"
        ) from None


def is_llama_index_dataset(value: object) -> bool:
    """Whether ``value`` is the dataset itself: a mapping with ``queries`` and
    ``relevant_docs``, or an object with those attributes (``EmbeddingQAFinetuneDataset``)."""
    if isinstance(value, Mapping):
        return "relevant_docs" in value and "queries" in value
    return hasattr(value, "relevant_docs") and hasattr(value, "queries")


def _parts(value: object) -> tuple[object, object]:
    if isinstance(value, Mapping):
        return value.get("queries"), value.get("relevant_docs")
    return getattr(value, "queries", None), getattr(value, "relevant_docs", None)


def llama_index_qrels(relevant: object, where: str) -> dict[str, dict[str, int]]:
    """``{qid: {node id: 1}}`` from ``relevant_docs``; ``where`` names the file or argument."""
    if not isinstance(relevant, Mapping):
        raise InvalidArgumentError(
            f'{where}: "relevant_docs" must map each query id to a list of node ids, found '
            f"{type(relevant).__name__}"
        )
    qrels: dict[str, dict[str, int]] = {}
    for qid, docs in relevant.items():
        if isinstance(docs, str) or not isinstance(docs, list | tuple):
            raise InvalidArgumentError(
                f'{where}: "relevant_docs"[{qid!r}] must be a list of node ids, found '
                f"{type(docs).__name__}"
            )
        if not all(isinstance(d, str) for d in docs):
            raise InvalidArgumentError(
                f'{where}: "relevant_docs"[{qid!r}] must be a list of node ids (strings)'
            )
        qrels[str(qid)] = dict.fromkeys(docs, 1)
    return qrels


def llama_index_questions(source: object, where: str) -> list[dict[str, Any]]:
    """One question per query, in the order of ``queries``: ``{"id", "question", "qrels"}``.

    ``source``: the dataset (a mapping, or an ``EmbeddingQAFinetuneDataset``), or the path of
    its JSON file. A query without ``relevant_docs``, or relevant docs of a query that is not in
    ``queries``, is an error naming it: the two halves of the file disagree."""
    if isinstance(source, str | os.PathLike):
        where = os.fspath(source)
        document = read_json_document(source)
        if not is_llama_index_dataset(document):
            found = sorted(document) if isinstance(document, Mapping) else type(document).__name__
            raise InvalidArgumentError(
                f'{where}: expected llama-index\'s EmbeddingQAFinetuneDataset JSON ("queries", '
                f'"corpus", "relevant_docs"), found {found}'
            )
        source = document
    queries, relevant = _parts(source)
    if not isinstance(queries, Mapping):
        raise InvalidArgumentError(
            f'{where}: "queries" must map each query id to its question, found '
            f"{type(queries).__name__}"
        )
    qrels = llama_index_qrels(relevant, where)
    questions = []
    for qid, text in queries.items():
        key = str(qid)
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f'{where}: "queries"[{qid!r}] must be the question text, found '
                f"{type(text).__name__}"
            )
        if key not in qrels:
            raise InvalidArgumentError(
                f'{where}: query {qid!r} has no "relevant_docs" entry; give its relevant node '
                'ids, or remove it from "queries"'
            )
        questions.append({"id": key, "question": text, "qrels": qrels[key]})
    extra = [qid for qid in qrels if qid not in {q["id"] for q in questions}]
    if extra:
        raise InvalidArgumentError(
            f'{where}: "relevant_docs" lists query {extra[0]!r}, which is not in "queries" '
            f"({len(extra)} such); give its question, or remove it"
        )
    return questions
