"""Records from a live retriever: each question's retrieved items are asked for when the
evaluation reads it (``RetrievalEvaluator.from_retriever``), so no run file is needed.

The retriever returns texts (text mode: a question with ground-truth contexts) or ids (ID mode:
a question whose ground truth is ids or ``qrels``, as every question of a llama-index
``EmbeddingQAFinetuneDataset``), best first: plain strings, LangChain ``Document`` s or
llama-index ``NodeWithScore`` s (:mod:`ctxeval.retrieval.objects`). The retriever is a function,
or a LangChain or llama-index retriever object as it is. A question's ground truth may be the
chunking harness's ``excerpts`` (texts, or ``{"text", "doc", "start", "end"}``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.io.fields import GROUND_TRUTH_CANDIDATES
from ctxeval.io.sources import json_error, text_lines
from ctxeval.retrieval.objects import hit_id, hit_text, retriever_function

__all__ = ["LiveRecords", "question_lines"]

_OWNER = "RetrievalEvaluator.from_retriever"
_ID_TRUTH = frozenset(GROUND_TRUTH_CANDIDATES["id"])
_TRUTH = frozenset(name for names in GROUND_TRUTH_CANDIDATES.values() for name in names)
_SPAN_KEYS = ("doc", "start", "end")


class LiveRecords:
    """Records whose retrieved items come from a live retriever, one question at a time."""

    def __init__(self, questions: Iterable[Mapping[str, Any]], retrieve: object) -> None:
        self.retrieve: Callable[[str], Any] = retriever_function(
            retrieve, f"{_OWNER}(retrieve=...)"
        )
        if isinstance(questions, str | bytes | Mapping) or not isinstance(questions, Iterable):
            raise InvalidArgumentTypeError(
                f"{_OWNER}(questions=...): got {type(questions).__name__}; give a list of "
                "question dicts ({'question': ..., 'ground_truth_context': [...]}), llama-index's "
                "EmbeddingQAFinetuneDataset, or the path of its JSON file"
            )
        self.questions = questions

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index, question in enumerate(self.questions):
            number = _which(index, question)
            if not isinstance(question, Mapping):
                raise InvalidArgumentTypeError(
                    f"{_OWNER}: {number} is {type(question).__name__}; give each "
                    "question as a dict with its 'question' text and ground truth"
                )
            text = question.get("question", question.get("query"))
            if not isinstance(text, str):
                raise InvalidArgumentError(
                    f"{_OWNER}: {number} has no 'question' (or 'query') text to "
                    "retrieve for; give each question its text"
                )
            question = _with_excerpts(question, number)
            by_id = not _ID_TRUTH.isdisjoint(question)
            retrieved = self.retrieve(text)
            what = "ids" if by_id else "texts"
            if isinstance(retrieved, str) or not isinstance(retrieved, Sequence):
                raise InvalidArgumentTypeError(
                    f"{_OWNER}: the retriever returned {type(retrieved).__name__} for "
                    f"{number}; return a list of {what}, best first"
                )
            retrieved = [hit_id(hit) if by_id else hit_text(hit) for hit in retrieved]
            if by_id:
                bad = next((item for item in retrieved if not isinstance(item, str)), None)
                if bad is not None:
                    raise InvalidArgumentTypeError(
                        f"{_OWNER}: the retriever returned {bad!r} ({type(bad).__name__}) among "
                        f"the ids for {number}; the ground truth is ids, so return node "
                        "ids (strings), best first: for a llama-index retriever, "
                        "lambda q: [n.node.node_id for n in retriever.retrieve(q)]"
                    )
                yield {**question, "retrieved_ids": list(retrieved)}
            else:
                yield {**question, "retrieved_context": list(retrieved)}


def _which(index: int, question: object) -> str:
    """A question as a message names it: ``questions[3]``, with its id when it has one."""
    given = question.get("id") if isinstance(question, Mapping) else None
    return f"questions[{index}]" + ("" if given is None else f" (id {given!r})")


def _with_excerpts(question: Mapping[str, Any], number: str) -> Mapping[str, Any]:
    """A question whose ground truth is the harness's ``excerpts``, with it as
    ``ground_truth_context`` (and ``ground_truth_spans`` when every excerpt gives its span)."""
    if "excerpts" not in question or not _TRUTH.isdisjoint(question):
        return question
    items = question["excerpts"]
    if not isinstance(items, list):
        raise InvalidArgumentError(
            f"{_OWNER}: {number}: 'excerpts' must be a list of texts or "
            '{"text": ..., "doc": ..., "start": ..., "end": ...} objects'
        )
    texts, spans = [], []
    for item in items:
        text = item if isinstance(item, str) else None
        if isinstance(item, Mapping) and isinstance(item.get("text"), str):
            text = item["text"]
            spans.append({key: item[key] for key in _SPAN_KEYS if key in item})
        if text is None:
            raise InvalidArgumentError(
                f"{_OWNER}: {number}: the excerpt {item!r} has no text; give each "
                "excerpt its text (ctxeval chunking reads a span's text from the corpus)"
            )
        texts.append(text)
    out = {key: value for key, value in question.items() if key != "excerpts"}
    out["ground_truth_context"] = texts
    if len(spans) == len(texts) and all(len(span) == len(_SPAN_KEYS) for span in spans):
        out["ground_truth_spans"] = spans
    return out


def question_lines(path: str) -> list[dict[str, Any]]:
    """The questions of a JSONL file, one object a line (blank lines skipped)."""
    questions = []
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(
                f"{path}:{number}: not valid JSON ({json_error(exc)}); each line must be one "
                'question object, e.g. {"question": ..., "excerpts": [...]}'
            ) from None
        if not isinstance(row, dict):
            raise InvalidArgumentError(
                f"{path}:{number}: expected a question object, got {type(row).__name__}"
            )
        questions.append(row)
    return questions
