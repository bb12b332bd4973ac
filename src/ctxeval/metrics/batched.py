"""Judgments and metric values for a whole batch of records at once, in numpy.

The per-record path (:mod:`ctxeval.metrics.judgments`, :mod:`ctxeval.metrics.functional`)
spends most of its time in Python calls on lists of ten items; here a batch of records becomes a
few padded arrays (records x ranks) and every metric at every cut-off is a handful of array
operations. The values are the per-record path's, bit for bit, because every floating-point
operation is the same one in the same order:

- quotients of small integers (precision, recall, ``hits / rank``) are exact integers divided
  once, correctly rounded either way;
- running sums (AP, DCG) accumulate rank by rank with ``np.cumsum``, which adds sequentially like
  the Python loop (``np.sum`` would not: it sums pairwise); the ranks a loop skips contribute
  ``0.0``, which leaves a sum unchanged;
- NDCG discounts come from the same ``math.log2`` calls, and exponential gains from the same
  ``2.0 ** g - 1.0``.

``tests/test_batched.py`` checks the equality on random batches against the per-record path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.metrics.conventions import RankOptions
from ctxeval.metrics.functional import SetCounts
from ctxeval.metrics.judgments import Credit, Judgments, judge_matrix

__all__ = ["BatchJudgments", "judge_batch", "rank_values", "set_values", "stack_judgments"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_NEVER = np.iinfo(np.int64).max  # first_match of a padding column: never within a cut-off


@lru_cache(maxsize=64)
def _discounts(size: int) -> FloatArray:
    """``log2(rank + 1)`` for ranks 1..size, from ``math.log2`` as the per-record path."""
    return np.array([math.log2(i + 2) for i in range(size)], dtype=np.float64)


@lru_cache(maxsize=64)
def _ranks(size: int) -> FloatArray:
    return np.arange(1, size + 1, dtype=np.float64)


@dataclass(frozen=True)
class BatchJudgments:
    """The :class:`~ctxeval.metrics.judgments.Judgments` of ``B`` records, padded.

    ``n[b]`` units were judged for record ``b`` and it has ``m[b] >= 1`` relevant ground-truth
    units; rows beyond ``n[b]`` and columns beyond ``m[b]`` are padding (never relevant, never a
    hit, gain 0, first match never).
    """

    n: IntArray  # (B,)
    m: IntArray  # (B,)
    relevant: BoolArray  # (B, N)
    hits: BoolArray  # (B, N)
    gains: FloatArray  # (B, N)
    first_match: IntArray  # (B, M)
    ideal: FloatArray  # (B, I), highest first
    ideal_n: IntArray  # (B,) gains in the ideal ranking: m[b] in text mode, every positive
    # grade in ID mode (NDCG counts grades below the relevance level there, as trec_eval)

    def cut(self, k: int | None) -> IntArray:
        """Units kept by the cut-off ``k`` per record (``k`` counts chunks: chunk units only)."""
        return self.n if k is None else np.minimum(self.n, k)


def judge_batch(
    matrices: Sequence[BoolArray],
    grades: Sequence[Sequence[float] | None],
    credit: Credit,
) -> BatchJudgments:
    """Judge relevance matrices (retrieved x distinct ground truth, every ``m >= 1``).

    Equal to :func:`~ctxeval.metrics.judgments.judge_matrix` on each matrix: rows that match at
    most one ground-truth unit are credited in bulk (the first such row of a column is its hit,
    under either credit rule); a record with a row matching several units is judged on its own.
    """
    count = len(matrices)
    n = np.fromiter((mat.shape[0] for mat in matrices), dtype=np.int64, count=count)
    m = np.fromiter((mat.shape[1] for mat in matrices), dtype=np.int64, count=count)
    width = max(int(n.max(initial=0)), 1)
    depth = max(int(m.max(initial=0)), 1)
    relevance = np.zeros((count, width, depth), dtype=bool)
    grade = np.zeros((count, depth), dtype=np.float64)
    for b, (mat, g) in enumerate(zip(matrices, grades, strict=True)):
        relevance[b, : mat.shape[0], : mat.shape[1]] = mat
        grade[b, : mat.shape[1]] = 1.0 if g is None else g
    relevant: BoolArray = np.asarray(relevance.any(axis=2))
    column = relevance.argmax(axis=2)
    matched = relevance.any(axis=1)
    first_match = np.where(matched, relevance.argmax(axis=1), _NEVER)
    ranks = np.arange(width)
    hits = relevant & (np.take_along_axis(first_match, column, axis=1) == ranks)
    gains = np.where(hits, np.take_along_axis(grade, column, axis=1), 0.0)
    # Rows matching several ground-truth units: the credit rule decides, record by record.
    for b in np.flatnonzero((relevance.sum(axis=2) > 1).any(axis=1)).tolist():
        judged = judge_matrix(matrices[b], grades[b], credit=credit)
        rows = len(judged.hits)
        hits[b, :rows] = judged.hits
        gains[b, :rows] = judged.gains
    ideal = -np.sort(-grade, axis=1)  # highest first; padding (0.0) last
    return BatchJudgments(n, m, relevant, hits, gains, first_match, ideal, m)


def stack_judgments(judged: Sequence[Judgments]) -> BatchJudgments:
    """Pad per-record :class:`Judgments` (chunk units, ``num_relevant >= 1``) into a batch.

    ID mode judges each record in Python (:func:`~ctxeval.metrics.judgments.judge_ids`: a
    dictionary lookup per id) and scores the batch here."""
    count = len(judged)
    n = np.fromiter((j.n for j in judged), dtype=np.int64, count=count)
    m = np.fromiter((j.num_relevant for j in judged), dtype=np.int64, count=count)
    ideal_n = np.fromiter((len(j.ideal) for j in judged), dtype=np.int64, count=count)

    def padded(lengths: IntArray, rows: Iterable[Sequence[Any]], dtype: Any, fill: Any) -> Any:
        width = max(int(lengths.max(initial=0)), 1)
        out = np.full((count, width), fill, dtype=dtype)
        out[np.arange(width) < lengths[:, None]] = np.fromiter(
            itertools.chain.from_iterable(rows), dtype=dtype, count=int(lengths.sum())
        )
        return out

    return BatchJudgments(
        n=n,
        m=m,
        relevant=padded(n, (j.relevant for j in judged), np.bool_, False),
        hits=padded(n, (j.hits for j in judged), np.bool_, False),
        gains=padded(n, (j.gains for j in judged), np.float64, 0.0),
        first_match=padded(m, (j.first_match for j in judged), np.int64, _NEVER),
        ideal=padded(ideal_n, (j.ideal for j in judged), np.float64, 0.0),
        ideal_n=ideal_n,
    )


def _at(cumulative: npt.NDArray[Any], cut: IntArray) -> npt.NDArray[Any]:
    """``cumulative[b, cut[b] - 1]``, or 0 where ``cut[b] == 0``."""
    if cumulative.shape[1] == 0:
        return np.zeros(len(cut), dtype=cumulative.dtype)
    picked = np.take_along_axis(cumulative, np.maximum(cut - 1, 0)[:, None], axis=1)[:, 0]
    return np.where(cut > 0, picked, 0)


def _divide(numerator: npt.NDArray[Any], denominator: npt.NDArray[Any]) -> FloatArray:
    """``numerator / denominator``, 0.0 where the denominator is 0."""
    num = numerator.astype(np.float64)
    den = denominator.astype(np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _f1(p: FloatArray, r: FloatArray) -> FloatArray:
    total = p + r
    return np.divide(2 * p * r, total, out=np.zeros_like(p), where=total > 0)


def set_values(j: BatchJudgments, k: int | None) -> tuple[dict[str, FloatArray], list[SetCounts]]:
    """``context_precision``, ``context_recall``, ``context_f1`` and the counts behind them."""
    cut = j.cut(k)
    relevant_retrieved = _at(np.cumsum(j.relevant, axis=1), cut)
    matched = (j.first_match < cut[:, None]).sum(axis=1)
    p = _divide(relevant_retrieved, cut)
    r = _divide(matched, j.m)
    counts = [
        SetCounts(*row)
        for row in zip(
            relevant_retrieved.tolist(), cut.tolist(), matched.tolist(), j.m.tolist(), strict=True
        )
    ]
    return {"context_precision": p, "context_recall": r, "context_f1": _f1(p, r)}, counts


def rank_values(j: BatchJudgments, k: int | None, options: RankOptions) -> dict[str, FloatArray]:
    """AP, RR, NDCG, hit rate, precision and recall (``options.ideal`` must be "ground_truth")."""
    cut = j.cut(k)
    width = j.hits.shape[1]
    hit_count = np.cumsum(j.hits, axis=1)
    hits = _at(hit_count, cut)

    # AP: sum over hit ranks of (hits so far / rank), rank by rank.
    marks, marked = (
        (j.relevant, np.cumsum(j.relevant, axis=1))
        if options.ap_credit == "any"
        else (j.hits, hit_count)
    )
    contributions = np.where(marks, marked / _ranks(width), 0.0)
    total = _at(np.cumsum(contributions, axis=1), cut)
    count = j.m if options.ap_denominator == "relevant" else _at(marked, cut)
    ap = _divide(total, count)

    # RR: 1 / rank of the first hit within the cut-off.
    within = j.hits & (np.arange(width) < cut[:, None])
    rr = np.where(within.any(axis=1), 1.0 / (within.argmax(axis=1) + 1), 0.0)

    # NDCG against every relevant ground-truth unit (the "ground_truth" ideal).
    gains, ideal = j.gains, j.ideal
    if options.gain == "exponential":
        gains, ideal = _exponential(gains), _exponential(ideal)
    dcg = _at(np.cumsum(gains / _discounts(width), axis=1), cut)
    depth = ideal.shape[1]
    ideal_cut = j.ideal_n if k is None else np.minimum(j.ideal_n, k)
    idcg = _at(np.cumsum(ideal / _discounts(depth), axis=1), ideal_cut)
    ndcg = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)

    if options.precision_denominator == "k" and k is not None:
        precision = hits / float(k)
    else:
        precision = _divide(hits, cut)
    return {
        "average_precision": ap,
        "reciprocal_rank": rr,
        "ndcg": ndcg,
        "hit_rate": np.where(hits > 0, 1.0, 0.0),
        "precision": precision,
        "recall": _divide(hits, j.m),
    }


def _exponential(grades: FloatArray) -> FloatArray:
    """``2.0 ** g - 1.0`` per value, computed by Python as the per-record path does."""
    flat = grades.ravel().tolist()
    table = {g: (2.0**g - 1.0 if g else 0.0) for g in set(flat)}
    return np.array([table[g] for g in flat], dtype=np.float64).reshape(grades.shape)
