"""Fuzzy matching with a rapidfuzz scorer, chosen by name, over a whole record at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from rapidfuzz import fuzz, utils
from rapidfuzz.process import cdist

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.matching.base import Matches, Unit, check_threshold
from ctxeval.matching.builtin import BuiltinStrategy, check_bool

__all__ = ["FUZZY_SCORERS", "FuzzyChunkMatch"]

#: rapidfuzz scorers by name. All return 0-100; ``partial_*`` score the best-aligned substring of
#: the longer text, which suits "is this ground-truth sentence inside that retrieved chunk".
FUZZY_SCORERS: dict[str, Callable[..., float]] = {
    "ratio": fuzz.ratio,
    "partial_ratio": fuzz.partial_ratio,
    "token_sort_ratio": fuzz.token_sort_ratio,
    "token_set_ratio": fuzz.token_set_ratio,
    "token_ratio": fuzz.token_ratio,
    "partial_token_sort_ratio": fuzz.partial_token_sort_ratio,
    "partial_token_set_ratio": fuzz.partial_token_set_ratio,
    "partial_token_ratio": fuzz.partial_token_ratio,
    "WRatio": fuzz.WRatio,
    "QRatio": fuzz.QRatio,
}


class FuzzyChunkMatch(BuiltinStrategy):
    """A retrieved chunk is relevant when ``scorer(retrieved, ground_truth) / 100 >= threshold``.

    ``scorer`` names a rapidfuzz ``fuzz`` function (see :data:`FUZZY_SCORERS`), default
    ``"partial_ratio"``; ``threshold`` is in [0, 1] (0.9 means a rapidfuzz score of 90).
    ``preprocess=True`` (default) applies rapidfuzz's ``default_process`` (lowercase, non
    alphanumerics to spaces, trimmed) to both sides.
    """

    spec_name: ClassVar[str] = "fuzzy-chunk"
    unit_kind: ClassVar[Unit] = "chunk"
    always_shown: ClassVar[tuple[str, ...]] = ("scorer", "threshold")
    defaults: ClassVar[dict[str, Any]] = {"preprocess": True}
    __slots__ = ("_preprocess", "_scorer", "_threshold")

    def __init__(
        self, scorer: str = "partial_ratio", threshold: float = 0.9, *, preprocess: bool = True
    ) -> None:
        if not isinstance(scorer, str):
            raise InvalidArgumentTypeError(
                f"FuzzyChunkMatch(scorer=...) must be the name of a rapidfuzz scorer such as "
                f"'partial_ratio', got {type_name(scorer)}"
            )
        if scorer not in FUZZY_SCORERS:
            names = ", ".join(repr(n) for n in FUZZY_SCORERS)
            raise InvalidArgumentError(
                f"FuzzyChunkMatch(scorer={scorer!r}) is not a rapidfuzz scorer; use one of {names}"
            )
        self._scorer = scorer
        self._threshold = check_threshold("FuzzyChunkMatch", threshold)
        self._preprocess = check_bool("FuzzyChunkMatch", "preprocess", preprocess)
        super().__init__()

    @property
    def threshold(self) -> float:
        return self._threshold

    @property
    def scorer(self) -> str:
        return self._scorer

    def options(self) -> dict[str, Any]:
        return {
            "scorer": self._scorer,
            "threshold": self._threshold,
            "preprocess": self._preprocess,
        }

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        n, m = len(retrieved), len(ground_truth)
        if n == 0 or m == 0:
            return Matches(relevant=np.zeros((n, m), dtype=bool), scores=np.zeros((n, m)))
        scores = cdist(
            retrieved,
            ground_truth,
            scorer=FUZZY_SCORERS[self._scorer],
            processor=utils.default_process if self._preprocess else None,
            dtype=np.float64,
        )
        # Divide rather than multiply the threshold: 85 / 100 is exactly the literal 0.85.
        scaled = scores / 100.0
        relevant = scaled >= self._threshold
        if self._threshold == 0:
            # A score of 0 passes threshold 0; an empty text (after preprocessing) still
            # matches nothing.
            r_ok = np.fromiter(map(self._has_text, retrieved), dtype=bool, count=n)
            g_ok = np.fromiter(map(self._has_text, ground_truth), dtype=bool, count=m)
            relevant &= r_ok[:, None] & g_ok[None, :]
        return Matches(relevant=relevant, scores=scaled)

    def _has_text(self, text: str) -> bool:
        return bool((utils.default_process(text) if self._preprocess else text).strip())
