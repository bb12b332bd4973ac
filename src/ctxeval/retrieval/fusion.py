"""Fusion of rankings, as ranx defines it: reciprocal rank fusion and weighted score sums.

A ranking is a list of ``(position, score)`` pairs, best first (``score`` None when the retriever
gives none). Each ranking becomes a score per position, then the scores are summed position by
position, each ranking's weighted (``weight * score``, ranking by ranking in order, a position
missing from a ranking counting 0.0), as ranx's ``comb_sum`` and ``wsum`` add them:

- ``"rrf"``: reciprocal rank fusion, ``1 / (k + rank)`` with ``k = 60`` (Cormack et al.; ranx's
  ``rrf``); with weights, weighted RRF (ranx's ``wsum`` over each ranking's RRF scores);
- ``"min-max"``: the retriever's scores rescaled to [0, 1] per question, ``(s - min) / max(max -
  min, 1e-9)`` (ranx's ``min-max`` norm), then the weighted sum;
- ``"z-score"``: ``(s - mean) / max(std, 1e-9)``, the population standard deviation (ranx's
  ``zmuv``), then the weighted sum.

The fused ranking is best first, ties broken by position (chunk order), so it is reproducible.
``tests/retrieval/test_fusion.py`` checks every fused score against ranx's ``fuse`` to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from ctxeval.foundation.errors import InvalidArgumentError

__all__ = ["FUSIONS", "Fusion", "Ranking", "fuse", "fused_scores"]

Ranking = list[tuple[int, float | None]]
Fusion = Literal["rrf", "min-max", "z-score"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "min-max", "z-score")


def _rrf(ranking: Ranking, k: float) -> dict[int, float]:
    return {position: 1 / (k + rank + 1) for rank, (position, _) in enumerate(ranking)}


def _scores(ranking: Ranking, name: str) -> tuple[list[int], list[float]]:
    if any(score is None for _, score in ranking):
        raise InvalidArgumentError(
            f"{name} fusion needs the retrievers' scores, and one gives none; fuse by rank "
            "instead (rrf)"
        )
    return [p for p, _ in ranking], [float(s) for _, s in ranking]  # type: ignore[arg-type]


def _min_max(ranking: Ranking) -> dict[int, float]:
    positions, scores = _scores(ranking, "min-max")
    if not positions:
        return {}
    low, high = min(scores), max(scores)
    spread = max(high - low, 1e-9)
    return {p: (s - low) / spread for p, s in zip(positions, scores, strict=True)}


def _mean(values: list[float]) -> float:
    """The mean as ranx's compiled ``np.mean`` adds it: one value after another (numpy's
    pairwise sum can differ in the last bit)."""
    total = 0.0
    for value in values:
        total += value
    return total / len(values)


def _z_score(ranking: Ranking) -> dict[int, float]:
    positions, scores = _scores(ranking, "z-score")
    if not positions:
        return {}
    mean = _mean(scores)
    # The deviation as ranx's compiled ``np.std`` takes it: ``** 0.5`` compiles to a square
    # root, which can differ from Python's ``** 0.5`` (a call to pow) in the last bit.
    spread = max(math.sqrt(_mean([(s - mean) * (s - mean) for s in scores])), 1e-9)
    return {p: (s - mean) / spread for p, s in zip(positions, scores, strict=True)}


def fused_scores(
    rankings: Sequence[Ranking],
    method: Fusion = "rrf",
    *,
    weights: Sequence[float] | None = None,
    k: float = 60,
) -> dict[int, float]:
    """Each position's fused score (positions in the order first met, ranking by ranking)."""
    if method == "rrf":
        each = [_rrf(ranking, k) for ranking in rankings]
    elif method == "min-max":
        each = [_min_max(ranking) for ranking in rankings]
    else:
        each = [_z_score(ranking) for ranking in rankings]
    scale = [1.0] * len(each) if weights is None else [float(w) for w in weights]
    fused: dict[int, float] = {}
    for scored in each:
        for position in scored:
            if position not in fused:
                fused[position] = sum(
                    [w * other.get(position, 0.0) for w, other in zip(scale, each, strict=True)]
                )
    return fused


def fuse(
    rankings: Sequence[Ranking],
    method: Fusion = "rrf",
    *,
    weights: Sequence[float] | None = None,
    k: float = 60,
) -> Ranking:
    """The fused ranking, best first, ties by position."""
    fused = fused_scores(rankings, method, weights=weights, k=k)
    return [(p, fused[p]) for p in sorted(fused, key=lambda p: (-fused[p], p))]
