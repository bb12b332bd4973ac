"""Records from a live retriever: each question's retrieved contexts are asked for when the
evaluation reads it (``RetrievalEvaluator.from_retriever``), so no run file is needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ctxeval.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["LiveRecords"]


class LiveRecords:
    """Records whose retrieved contexts come from a live retriever, one question at a time."""

    def __init__(
        self, questions: Iterable[Mapping[str, Any]], retrieve: Callable[[str], Sequence[str]]
    ) -> None:
        if not callable(retrieve):
            raise InvalidArgumentTypeError(
                "RetrievalEvaluator.from_retriever(retrieve=...): give a function question -> "
                f"ranked texts, got {type(retrieve).__name__}"
            )
        self.questions = questions
        self.retrieve = retrieve

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, question in enumerate(self.questions, 1):
            text = question.get("question", question.get("query"))
            if not isinstance(text, str):
                raise InvalidArgumentError(
                    f"RetrievalEvaluator.from_retriever: question {number} has no 'question' "
                    "(or 'query') text to retrieve for; give each question its text"
                )
            retrieved = self.retrieve(text)
            if isinstance(retrieved, str) or not isinstance(retrieved, Sequence):
                raise InvalidArgumentTypeError(
                    f"RetrievalEvaluator.from_retriever: the retriever returned "
                    f"{type(retrieved).__name__} for question {number}; return a list of "
                    "texts, best first"
                )
            yield {**question, "retrieved_context": list(retrieved)}
