"""Records from a live retriever: each question's retrieved items are asked for when the
evaluation reads it (``RetrievalEvaluator.from_retriever``), so no run file is needed.

The retriever returns texts (text mode: a question with ground-truth contexts) or ids (ID mode:
a question whose ground truth is ids or ``qrels``, as every question of a llama-index
``EmbeddingQAFinetuneDataset``), best first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.io.fields import GROUND_TRUTH_CANDIDATES

__all__ = ["LiveRecords"]

_OWNER = "RetrievalEvaluator.from_retriever"
_ID_TRUTH = frozenset(GROUND_TRUTH_CANDIDATES["id"])


class LiveRecords:
    """Records whose retrieved items come from a live retriever, one question at a time."""

    def __init__(
        self, questions: Iterable[Mapping[str, Any]], retrieve: Callable[[str], Sequence[str]]
    ) -> None:
        if not callable(retrieve):
            raise InvalidArgumentTypeError(
                f"{_OWNER}(retrieve=...): give a function question -> ranked texts or ids, got "
                f"{type(retrieve).__name__}"
            )
        if isinstance(questions, str | bytes | Mapping) or not isinstance(questions, Iterable):
            raise InvalidArgumentTypeError(
                f"{_OWNER}(questions=...): got {type(questions).__name__}; give a list of "
                "question dicts ({'question': ..., 'ground_truth_context': [...]}), llama-index's "
                "EmbeddingQAFinetuneDataset, or the path of its JSON file"
            )
        self.questions = questions
        self.retrieve = retrieve

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, question in enumerate(self.questions, 1):
            if not isinstance(question, Mapping):
                raise InvalidArgumentTypeError(
                    f"{_OWNER}: question {number} is {type(question).__name__}; give each "
                    "question as a dict with its 'question' text and ground truth"
                )
            text = question.get("question", question.get("query"))
            if not isinstance(text, str):
                raise InvalidArgumentError(
                    f"{_OWNER}: question {number} has no 'question' (or 'query') text to "
                    "retrieve for; give each question its text"
                )
            by_id = not _ID_TRUTH.isdisjoint(question)
            retrieved = self.retrieve(text)
            what = "ids" if by_id else "texts"
            if isinstance(retrieved, str) or not isinstance(retrieved, Sequence):
                raise InvalidArgumentTypeError(
                    f"{_OWNER}: the retriever returned {type(retrieved).__name__} for question "
                    f"{number}; return a list of {what}, best first"
                )
            if by_id:
                bad = next((item for item in retrieved if not isinstance(item, str)), None)
                if bad is not None:
                    raise InvalidArgumentTypeError(
                        f"{_OWNER}: the retriever returned {bad!r} ({type(bad).__name__}) among "
                        f"the ids for question {number}; the ground truth is ids, so return node "
                        "ids (strings), best first: for a llama-index retriever, "
                        "lambda q: [n.node.node_id for n in retriever.retrieve(q)]"
                    )
                yield {**question, "retrieved_ids": list(retrieved)}
            else:
                yield {**question, "retrieved_context": list(retrieved)}
