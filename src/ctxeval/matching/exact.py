"""Exact matching of chunks or sentences, with optional case and whitespace normalisation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ctxeval.foundation.params import own_init
from ctxeval.matching.base import Matches, Unit
from ctxeval.matching.builtin import BuiltinStrategy, check_bool

__all__ = ["ExactChunkMatch", "ExactSentenceMatch"]

_SPACES = re.compile(r"\s+")


class _ExactMatch(BuiltinStrategy):
    defaults: ClassVar[dict[str, Any]] = {
        "ignore_case": False,
        "normalize_whitespace": False,
    }
    __slots__ = ("_ignore_case", "_normalize_whitespace")

    def __init__(
        self,
        *,
        ignore_case: bool = False,
        normalize_whitespace: bool = False,
        splitter: object = "default",
    ) -> None:
        owner = type(self).__name__
        self._ignore_case = check_bool(owner, "ignore_case", ignore_case)
        self._normalize_whitespace = check_bool(owner, "normalize_whitespace", normalize_whitespace)
        super().__init__(splitter)

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "ignore_case": self._ignore_case,
            "normalize_whitespace": self._normalize_whitespace,
        }
        if self._splitter is not None:
            opts["splitter"] = self._splitter
        return opts

    def _key(self, text: str) -> str:
        if self._normalize_whitespace:
            text = _SPACES.sub(" ", text).strip()
        if self._ignore_case:
            text = text.casefold()
        return text

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        relevant = np.zeros((len(retrieved), len(ground_truth)), dtype=bool)
        columns: dict[str, list[int]] = {}
        for j, text in enumerate(ground_truth):
            if text.strip():  # an empty or blank text matches nothing, not even itself
                columns.setdefault(self._key(text), []).append(j)
        for i, text in enumerate(retrieved):
            js = columns.get(self._key(text))
            if js:
                relevant[i, js] = True
        return Matches(relevant=relevant)


@own_init
class ExactChunkMatch(_ExactMatch):
    """A retrieved chunk is relevant to a ground-truth chunk when the two strings are equal.

    ``ignore_case`` compares case-folded text; ``normalize_whitespace`` collapses runs of
    whitespace and strips the ends. With neither, this is ID mode on the strings themselves.
    """

    spec_name: ClassVar[str] = "exact-chunk"
    unit_kind: ClassVar[Unit] = "chunk"
    __slots__ = ()


@own_init
class ExactSentenceMatch(_ExactMatch):
    """Sentences of retrieved chunks are relevant when equal to a ground-truth sentence.

    Both sides are split with ``splitter`` (the offline default unless given); precision counts
    retrieved sentences and recall ground-truth sentences.
    """

    spec_name: ClassVar[str] = "exact-sentence"
    unit_kind: ClassVar[Unit] = "sentence"
    __slots__ = ()
