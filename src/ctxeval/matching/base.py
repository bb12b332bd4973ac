"""The matching-strategy protocol and the pieces every built-in strategy shares.

A strategy decides which retrieved units are relevant to which ground-truth units. It receives a
whole record at once (``retrieved`` x ``ground_truth``) and answers with a boolean relevance
matrix, so that the fast strategies can score every pair in one vectorised kernel call.

Anything with ``unit``, ``spec``, ``units()`` and ``match()`` is a strategy; a per-pair predicate
becomes one through :class:`PairwiseMatch`, and a spec string or a plain function
``f(retrieved, ground_truth) -> matrix`` through :func:`ctxeval.matching.resolve.as_strategy`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ctxeval.foundation.arrays import BoolArray, BoolMatrix, FloatArray, FloatMatrix, IntArray
from ctxeval.foundation.errors import (
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    type_name,
)

__all__ = [
    "FlatMatches",
    "Matches",
    "MatchingStrategy",
    "PairwiseMatch",
    "Unit",
    "as_matches",
    "check_threshold",
]

Unit = Literal["chunk", "sentence"]


@dataclass(frozen=True)
class Matches:
    """What a strategy says about one record.

    ``relevant[i, j]`` is True when retrieved unit *i* is relevant to ground-truth unit *j*;
    ``scores`` holds the similarity behind that decision when the strategy has one (ROUGE-L
    recall, fuzzy ratio in [0, 1]); ``tokenless`` lists texts with letters or digits that
    produced no tokens and so could never match by overlap (reported as a warning, never
    silently scored 0). Texts with no letter or digit at all (a ``")"`` or ``"*"`` left by a
    sentence splitter) have no words under any tokenizer: nothing to warn about.
    """

    relevant: BoolMatrix
    scores: FloatMatrix | None = None
    tokenless: tuple[str, ...] = field(default=())


class FlatMatches(NamedTuple):
    """What a strategy says about a batch of records at once, each record's matrices flat.

    Record *k* with *n* retrieved and *m* ground-truth units has its :class:`Matches` in
    ``relevant[blocks[k] : blocks[k] + n * m]`` (row-major, retrieved by ground truth) and the
    same block of ``scores``; ``tokenless`` holds the records that have such texts (by their
    position in the batch). A strategy may give this from ``match_records_flat(records)``, or
    None when it cannot (then ``match_records`` is used); the evaluator judges and measures
    the batch from these arrays without a matrix per record.
    """

    relevant: BoolArray
    scores: FloatArray
    blocks: IntArray
    tokenless: dict[int, tuple[str, ...]]

    def matches(self, k: int, n: int, m: int) -> Matches:
        """Record *k*'s :class:`Matches` (*n* by *m*), as views of the arrays."""
        start = int(self.blocks[k])
        return Matches(
            relevant=self.relevant[start : start + n * m].reshape(n, m),
            scores=self.scores[start : start + n * m].reshape(n, m),
            tokenless=self.tokenless.get(k, ()),
        )


@runtime_checkable
class MatchingStrategy(Protocol):
    """The protocol every strategy follows (built-in or custom).

    A strategy may also define ``match_records(records)``: ``match`` of every (retrieved,
    ground truth) pair of a batch, as a list, in one call (the ROUGE strategies do, to score a
    batch in one pass of the compiled kernel). The evaluator then calls it once per batch for
    chunk units; it must give what ``match`` gives, one result per pair, in order. If it
    raises, the batch is matched record by record, so the error is named for the record that
    causes it; if ``match`` then judges every record, the run stops naming ``match_records``.
    It may define ``match_records_flat(records)`` (with or without ``match_records``): the same
    answers as one :class:`FlatMatches` (or None when it cannot give them), which the evaluator
    judges and measures as arrays, without a matrix per record; if it raises or gives None,
    ``match_records`` is used, or ``match`` record by record.
    """

    @property
    def unit(self) -> Unit:
        """``"chunk"``: texts are compared whole; ``"sentence"``: split into sentences first."""
        ...

    @property
    def spec(self) -> str:
        """Canonical spec string, e.g. ``"rouge-chunk(threshold=0.7)"``."""
        ...

    def units(self, texts: Sequence[str]) -> list[str]:
        """The units that are matched and counted: the texts themselves, or their sentences."""
        ...

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        """Relevance of every retrieved unit to every ground-truth unit, in one call."""
        ...


def check_threshold(owner: str, threshold: object) -> float:
    """Validate a similarity threshold in [0, 1] at construction time."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise InvalidArgumentTypeError(
            f"{owner}(threshold=...) must be a number between 0 and 1, "
            f"got {type_name(threshold)} {threshold!r}"
        )
    value = float(threshold)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise InvalidArgumentError(
            f"{owner}(threshold={threshold!r}): threshold must be between 0 and 1 "
            f"(a ROUGE-L recall or a fuzzy ratio scaled to [0, 1]); "
            f"for a rapidfuzz score of 85 write threshold=0.85",
            fixes=(
                Fix("threshold", threshold, f"{owner}(threshold={threshold!r})"),
                Fix("threshold", 0.85),
            ),
        )
    return value


def as_matches(result: object, n: int, m: int, strategy: object) -> Matches:
    """Accept what a strategy returns, as the protocol documents it, and check its shape:
    ``Matches``, or a matrix (array or nested lists) of booleans or of 0/1.

    Anything else is an error, never a guess: numpy reads every non-empty string as True, so
    ``"False"`` would silently count as relevant. ``strategy`` only names the culprit.
    """
    if isinstance(result, Matches):
        relevant = _relevance(result.relevant, n, m, strategy)
        if relevant is result.relevant:
            return result
        scores = result.scores if np.shape(result.relevant) == (n, m) else None
        return Matches(relevant, scores, result.tokenless)
    if result is None:
        raise InvalidArgumentTypeError(
            f"strategy {_spec(strategy)} returned None; return Matches(...) or a boolean matrix "
            f"of shape (len(retrieved), len(ground_truth)) = ({n}, {m})"
        )
    return Matches(relevant=_relevance(result, n, m, strategy))


def _spec(strategy: object) -> str:
    return str(getattr(strategy, "spec", repr(strategy)))


def _relevance(value: object, n: int, m: int, strategy: object) -> BoolMatrix:
    if isinstance(value, np.ndarray) and value.dtype == np.bool_ and value.shape == (n, m):
        return value
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentTypeError(
            f"strategy {_spec(strategy)} returned {type_name(value)}, which is not a boolean "
            "matrix: return Matches(...) or an array of shape (len(retrieved), "
            "len(ground_truth))"
        ) from exc
    kind = raw.dtype.kind
    if kind == "O" and all(isinstance(v, bool | np.bool_) for v in raw.flat):
        raw, kind = raw.astype(bool), "b"
    if kind in "iuf":
        if not np.isin(raw, (0, 1)).all():
            raise InvalidArgumentError(
                f"strategy {_spec(strategy)} returned scores, not relevance decisions; compare "
                "them with a threshold (scores >= t) and return the boolean matrix"
            )
    elif kind != "b":
        raise InvalidArgumentTypeError(
            f"strategy {_spec(strategy)} returned {_what(raw)}, not booleans; return True/False "
            "or 0/1 for every (retrieved, ground_truth) pair (numpy would read any non-empty "
            "string, even 'False', as True)"
        )
    if raw.shape != (n, m):
        if n == 0 or m == 0:
            return np.zeros((n, m), dtype=bool)
        raise InvalidArgumentError(
            f"strategy {_spec(strategy)} returned a matrix of shape {raw.shape}, expected "
            f"(len(retrieved), len(ground_truth)) = ({n}, {m})"
        )
    return raw if kind == "b" else raw.astype(bool)


def _what(raw: np.ndarray) -> str:
    if raw.dtype.kind in "US":
        first = raw.flat[0] if raw.size else ""
        return f"strings (such as {str(first)!r})"
    if raw.dtype.kind == "O":
        kinds = sorted({type_name(v) for v in raw.flat})
        return f"objects of type {', '.join(kinds)}"
    return f"values of type {raw.dtype}"


class PairwiseMatch:
    """Wraps a per-pair predicate ``is_relevant(retrieved, ground_truth) -> bool``.

    For porting custom continuous-eval strategies. It calls the predicate for every pair, so it is
    as slow as the predicate; prefer a vectorised ``match`` for large runs.
    """

    def __init__(self, is_relevant: Callable[[str, str], bool], *, name: str | None = None):
        if not callable(is_relevant):
            raise InvalidArgumentTypeError(
                f"PairwiseMatch(is_relevant) needs a function (retrieved, ground_truth) -> bool, "
                f"got {type_name(is_relevant)}"
            )
        self._fn = is_relevant
        self._name = name or getattr(is_relevant, "__qualname__", "predicate")

    @property
    def unit(self) -> Unit:
        return "chunk"

    @property
    def spec(self) -> str:
        return f"pairwise({self._name})"

    def units(self, texts: Sequence[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        relevant = np.array(
            [[bool(self._fn(r, g)) for g in ground_truth] for r in retrieved], dtype=bool
        ).reshape(len(retrieved), len(ground_truth))
        return Matches(relevant=relevant)

    def __repr__(self) -> str:
        return f"PairwiseMatch({self._name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PairwiseMatch) and other._fn is self._fn

    def __hash__(self) -> int:
        return hash((PairwiseMatch, id(self._fn)))
