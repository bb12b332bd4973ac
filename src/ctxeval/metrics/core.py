"""The vectorised core: every measure for a whole batch of judged records at once, in numpy.

This is the second of the two places a measure is defined (the first, readable one is
:mod:`ctxeval.metrics.reference`). Every evaluation path runs it: text batches
(:func:`~ctxeval.judging.batch.judge_batch`), ID-mode and sentence-unit records judged one by
one (:func:`~ctxeval.judging.batch.stack_judgments`), and whole TREC-style runs
(:mod:`ctxeval.judging.runs`) all emit the same padded
:class:`~ctxeval.judging.batch.BatchJudgments`, and :func:`measure_values` computes any measure
from it.

The values are the reference's, bit for bit, because every floating-point operation is the same
one in the same order:

- quotients of small integers (precision, recall, ``hits / rank``) are exact integers divided
  once, correctly rounded either way;
- running sums (AP, DCG) accumulate with ``np.cumsum``, which adds sequentially like the Python
  loop (``np.sum`` would not: it sums pairwise): DCG rank by rank (as wide as the cut-off
  needs), AP over each record's hit ranks compacted left (``hit_ranks``), in rank order, as
  the loop adds only at hits; a rank that contributes ``0.0`` leaves a sum unchanged;
- NDCG discounts come from the same ``math.log2`` calls, and exponential gains from the same
  ``2.0 ** g - 1.0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.judging.batch import BatchJudgments, Cut, pick
from ctxeval.metrics.reference import power_by_squaring

__all__ = [
    "CORE",
    "IntArray",
    "measure_values",
    "set_counts",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@lru_cache(maxsize=64)
def _discounts(size: int) -> FloatArray:
    """``log2(rank + 1)`` for ranks 1..size, from ``math.log2`` as the reference."""
    return np.array([math.log2(i + 2) for i in range(size)], dtype=np.float64)


@lru_cache(maxsize=64)
def _ranks(size: int) -> FloatArray:
    return np.arange(1, size + 1, dtype=np.float64)


# -- shared pieces ---------------------------------------------------------------------------


def _at(cumulative: npt.NDArray[Any], cut: IntArray) -> npt.NDArray[Any]:
    """``cumulative[b, cut[b] - 1]``, or 0 where ``cut[b] == 0``."""
    if cumulative.shape[1] == 0:
        return np.zeros(len(cut), dtype=cumulative.dtype)
    return np.where(cut > 0, pick(cumulative, cut - 1), 0)


def _divide(numerator: npt.NDArray[Any], denominator: npt.NDArray[Any]) -> FloatArray:
    """``numerator / denominator``, 0.0 where the denominator is 0."""
    num = numerator.astype(np.float64)
    den = denominator.astype(np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _within(ranks: IntArray, cut: IntArray) -> IntArray:
    """How many of each record's compacted ranks (:attr:`BatchJudgments.hit_ranks`) are
    kept by the cut: the running count of hits at the cut."""
    kept: IntArray = np.count_nonzero(ranks < cut[:, None], axis=1).astype(np.int64)
    return kept


def _hits(j: BatchJudgments, k: Cut) -> IntArray:
    return _within(j.hit_ranks, j.cut(k))


def set_counts(j: BatchJudgments, k: Cut) -> IntArray:
    """The counts behind the set measures, one row per record: relevant retrieved units,
    retrieved units, matched ground-truth units, ground-truth units (for micro averages)."""
    cut = j.cut(k)
    relevant_retrieved = _within(j.relevant_ranks, cut)
    matched = (j.first_match < cut[:, None]).sum(axis=1)
    return np.stack([relevant_retrieved, cut, matched, j.m], axis=1).astype(np.int64)


def _exponential(grades: FloatArray) -> FloatArray:
    """``2.0 ** g - 1.0`` per value, computed by Python as the reference does."""
    flat = grades.ravel().tolist()
    table = {g: (2.0**g - 1.0 if g else 0.0) for g in set(flat)}
    return np.array([table[g] for g in flat], dtype=np.float64).reshape(grades.shape)


def _dcg_so_far(gains: FloatArray) -> FloatArray:
    return np.cumsum(gains / _discounts(gains.shape[1]), axis=1)


def _batch_dcg(j: BatchJudgments, key: str, gains: FloatArray, width: int) -> FloatArray:
    """Linear-gain DCG of ``gains`` at ranks 1..``width``, shared by the measures of the batch
    (``key``: ``"dcg"`` for the ranking's gains, ``"ideal"`` for the ideal's)."""
    width = min(width, gains.shape[1])
    return j.running(key, width, lambda w: _dcg_so_far(gains[:, :w]))


# -- the measures ----------------------------------------------------------------------------


def context_precision(j: BatchJudgments, k: Cut) -> FloatArray:
    counts = set_counts(j, k)
    return _divide(counts[:, 0], counts[:, 1])


def context_recall(j: BatchJudgments, k: Cut) -> FloatArray:
    counts = set_counts(j, k)
    return _divide(counts[:, 2], counts[:, 3])


def context_f1(j: BatchJudgments, k: Cut) -> FloatArray:
    p, r = context_precision(j, k), context_recall(j, k)
    total = p + r
    return np.divide(2 * p * r, total, out=np.zeros_like(p), where=total > 0)


def precision(j: BatchJudgments, k: Cut, *, precision_denominator: str = "k") -> FloatArray:
    if precision_denominator == "k" and k is not None and j.chunk_ends is None:
        if isinstance(k, np.ndarray):  # a budget's cut-offs (never beyond a record's list)
            return _divide(_hits(j, k), j.cut(k))  # a budget that takes no chunk: 0.0
        return _hits(j, k) / float(k)
    return _divide(_hits(j, k), j.cut(k))


def recall(j: BatchJudgments, k: Cut) -> FloatArray:
    return _divide(_hits(j, k), j.m)


def hits(j: BatchJudgments, k: Cut) -> FloatArray:
    return _hits(j, k).astype(np.float64)


def f1(j: BatchJudgments, k: Cut) -> FloatArray:
    p, r = precision(j, k), recall(j, k)
    total = p + r
    return np.where(
        total > 0, 2 * np.divide(p * r, total, out=np.zeros_like(p), where=total > 0), 0.0
    )


def hit_rate(j: BatchJudgments, k: Cut) -> FloatArray:
    return np.where(_hits(j, k) > 0, 1.0, 0.0)


def reciprocal_rank(j: BatchJudgments, k: Cut, *, granular: bool = False) -> FloatArray:
    if granular:
        return granular_reciprocal_rank(j, k)
    first = j.hit_ranks[:, 0]
    within = first < j.cut(k)
    return np.where(within, 1.0 / (np.where(within, first, 0) + 1), 0.0)


def average_precision(
    j: BatchJudgments,
    k: Cut,
    *,
    ap_denominator: str = "relevant",
    ap_credit: str = "one_to_one",
) -> FloatArray:
    """Sum over hit ranks of (hits so far / rank), rank by rank, over the denominator.

    Summed over the hits only (compacted ranks: the hits so far at the i-th is i): the ranks
    between them would add 0.0, which leaves the running sum unchanged."""
    ranks = j.relevant_ranks if ap_credit == "any" else j.hit_ranks
    found = _within(ranks, j.cut(k))
    # (Past a record's last hit the padding's quotients are never read.)
    contributions = _ranks(ranks.shape[1]) / (ranks + 1.0)
    total = _at(np.cumsum(contributions, axis=1), found)
    return _divide(total, j.m if ap_denominator == "relevant" else found)


def ndcg(
    j: BatchJudgments,
    k: Cut,
    *,
    gain: str = "linear",
    ideal: str = "ground_truth",
    ties: str = "ordered",
) -> FloatArray:
    """DCG of the top ``k`` over the ideal DCG: every relevant ground-truth unit by grade
    (``ideal="ground_truth"``), or the judged list's own gains re-sorted (``"retrieved"``)."""
    cut = j.cut(k)
    if ideal == "ground_truth":
        ideal_cut = j.ideal_n if k is None else np.minimum(j.ideal_n, k)
    else:
        ideal_cut = cut
    # Running sums only as wide as the cut-offs need.
    width, ideal_width = int(cut.max(initial=0)), int(ideal_cut.max(initial=0))
    if gain == "linear" and ideal == "ground_truth" and ties != "average":
        dcg_so_far = _batch_dcg(j, "dcg", j.gains, width)
        ideal_so_far = _batch_dcg(j, "ideal", j.ideal, ideal_width)
    else:
        gains = j.gains
        best = j.ideal if ideal == "ground_truth" else -np.sort(-gains, axis=1)
        if gain == "exponential":
            gains, best = _exponential(gains), _exponential(best)
        if ties == "average":
            gains = tie_averaged(j, gains)
        dcg_so_far = _dcg_so_far(gains[:, :width])
        ideal_so_far = _dcg_so_far(best[:, :ideal_width])
    dcg: FloatArray = _at(dcg_so_far, cut)
    idcg: FloatArray = _at(ideal_so_far, ideal_cut)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def tie_averaged(j: BatchJudgments, gains: FloatArray) -> FloatArray:
    """Each rank's gain replaced by the mean gain of its group of tied scores, as the
    reference: differences of running sums at the group's ends, over its size."""
    if j.tie_ends is None:
        return gains
    width = gains.shape[1]
    running = np.concatenate([np.zeros((len(j), 1)), np.cumsum(gains, axis=1)], axis=1)
    ranks = np.arange(width)
    end = np.empty((len(j), width), dtype=np.int64)
    start = np.empty((len(j), width), dtype=np.int64)
    for b, ends in enumerate(j.tie_ends):
        group = np.minimum(np.searchsorted(ends, ranks, side="right"), len(ends) - 1)
        end[b] = np.maximum(ends[group], ranks + 1)
        start[b] = np.where(group > 0, ends[np.maximum(group - 1, 0)], 0)
    start = np.minimum(start, end - 1)
    rows = np.arange(len(j))[:, None]
    total = running[rows, end] - running[rows, start]
    size = end - start
    return np.asarray(np.where(size == 1, gains, total / size), dtype=np.float64)


def granular_reciprocal_rank(j: BatchJudgments, k: Cut) -> FloatArray:
    """The mean of 1 / rank over the units in the top ``k`` that match some ground truth
    (llama-index's granular MRR)."""
    cut = j.cut(k)
    within = j.relevant & (np.arange(j.relevant.shape[1]) < cut[:, None])
    inverse = np.where(within, 1.0 / _ranks(within.shape[1]), 0.0)
    return _divide(_at(np.cumsum(inverse, axis=1), cut), within.sum(axis=1))


def dcg(j: BatchJudgments, k: Cut, *, gain: str = "linear") -> FloatArray:
    gains = _exponential(j.gains) if gain == "exponential" else j.gains
    cut = j.cut(k)
    return _at(_dcg_so_far(gains[:, : int(cut.max(initial=0))]), cut)


def r_precision(j: BatchJudgments, k: Cut) -> FloatArray:
    return _divide(_within(j.hit_ranks, np.minimum(j.cut(k), j.m)), j.m)


def _judged_nonrelevant(j: BatchJudgments) -> tuple[BoolArray, IntArray]:
    """Ranks judged non-relevant, and min(judged non-relevant, relevant) per record."""
    if j.nonrelevant is not None and j.num_nonrelevant is not None:
        return j.nonrelevant, np.minimum(j.num_nonrelevant, j.m)
    judged = np.arange(j.relevant.shape[1]) < j.n[:, None]
    return ~j.relevant & judged, j.m


def bpref(j: BatchJudgments, k: Cut) -> FloatArray:
    """Per hit: 1 - min(non-relevant above, R) / min(judged non-relevant, R); summed, over R."""
    nonrelevant, bound = _judged_nonrelevant(j)
    above = np.cumsum(nonrelevant, axis=1)  # at a hit, the non-relevant ranks above it
    relevant = j.m[:, None]
    penalty = np.minimum(above, relevant) / np.maximum(bound, 1)[:, None]
    credit = np.where(j.hits, np.where(above > 0, 1.0 - penalty, 1.0), 0.0)
    return _divide(_at(np.cumsum(credit, axis=1), j.cut(k)), j.m)


def _recall_cutoff(recall: float, relevant: IntArray, rounding: str) -> IntArray:
    """The reference's ``recall_cutoff`` for every record."""
    exact = recall * relevant.astype(np.float64)
    if rounding == "trec_eval9":
        return (exact + 0.9).astype(np.int64)
    whole = exact.astype(np.int64)
    return whole + (exact - whole >= 0.5)


def iprec_at_recall(
    j: BatchJudgments, k: Cut, *, recall: float = 0.0, recall_rounding: str = "trec_eval9"
) -> FloatArray:
    """The best precision at or below the rank where ``recall`` is reached."""
    cut = j.cut(k)
    width = j.hits.shape[1]
    within = np.arange(width) < cut[:, None]
    hits = j.hits & within
    found = np.cumsum(hits, axis=1)
    precisions = np.where(within, found / _ranks(width), 0.0)
    best_below = np.maximum.accumulate(precisions[:, ::-1], axis=1)[:, ::-1]
    wanted = _recall_cutoff(recall, j.m, recall_rounding)
    start = np.where(wanted > 0, (hits & (found == wanted[:, None])).argmax(axis=1), 0)
    reached = (cut > 0) & (wanted <= _at(found, cut))
    return np.where(reached, pick(best_below, start), 0.0)


@lru_cache(maxsize=64)
def _powers(base: float, size: int) -> FloatArray:
    """``base ** i`` for i in 0..size-1, multiplied out as the reference."""
    return np.array([power_by_squaring(base, i) for i in range(size)], dtype=np.float64)


def rbp(j: BatchJudgments, k: Cut, *, persistence: float = 0.8) -> FloatArray:
    weighted = np.where(j.hits, j.gains * _powers(persistence, j.hits.shape[1]), 0.0)
    return (1 - persistence) * _at(np.cumsum(weighted, axis=1), j.cut(k))


def gm_map(j: BatchJudgments, k: Cut) -> FloatArray:
    return average_precision(j, k)


def num_q(j: BatchJudgments, k: Cut) -> FloatArray:
    return np.ones(len(j), dtype=np.float64)


def num_ret(j: BatchJudgments, k: Cut) -> FloatArray:
    return j.cut(k).astype(np.float64)


def num_rel(j: BatchJudgments, k: Cut) -> FloatArray:
    return j.m.astype(np.float64)


def num_rel_ret(j: BatchJudgments, k: Cut) -> FloatArray:
    return _hits(j, k).astype(np.float64)


CoreFn = Callable[..., FloatArray]

CORE: dict[str, CoreFn] = {
    "context_precision": context_precision,
    "context_recall": context_recall,
    "context_f1": context_f1,
    "average_precision": average_precision,
    "reciprocal_rank": reciprocal_rank,
    "ndcg": ndcg,
    "precision": precision,
    "recall": recall,
    "hit_rate": hit_rate,
    "hits": hits,
    "f1": f1,
    "dcg": dcg,
    "r_precision": r_precision,
    "bpref": bpref,
    "iprec_at_recall": iprec_at_recall,
    "rbp": rbp,
    "gm_map": gm_map,
    "num_q": num_q,
    "num_ret": num_ret,
    "num_rel": num_rel,
    "num_rel_ret": num_rel_ret,
}
"""The core function of each measure by canonical name (the registry in
:mod:`ctxeval.metrics.measures` pairs it with its reference)."""


def measure_values(
    j: BatchJudgments, name: str, k: Cut, options: Iterable[tuple[str, Any]] = ()
) -> FloatArray:
    """One measure at one cut-off for every record of the batch."""
    return CORE[name](j, k, **dict(options))
