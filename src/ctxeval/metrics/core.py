"""The vectorised core: every measure for a whole batch of judged records at once, in numpy.

This is the second of the two places a measure is defined (the first, readable one is
:mod:`ctxeval.metrics.reference`). Every evaluation path runs it: text batches
(:func:`judge_batch`), ID-mode and sentence-unit records judged one by one
(:func:`stack_judgments`), and whole TREC-style runs (:mod:`ctxeval.judging.runs`) all emit
the same padded :class:`BatchJudgments`, and :func:`measure_values` computes any measure from it.

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

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.judging.judgments import Credit, Judgments, judge_matrix
from ctxeval.metrics.reference import power_by_squaring

__all__ = [
    "CORE",
    "BatchJudgments",
    "Cut",
    "IntArray",
    "judge_batch",
    "measure_values",
    "set_counts",
    "stack_judgments",
    "tie_ends_array",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Cut = int | IntArray | None
"""A cut-off as the core takes it: a number of chunks, ``None`` for the whole list, or one number
per record: a budget's :meth:`~ctxeval.cutoffs.budgets.BudgetCut.equivalent_k`, never beyond the record's
list except for the whole list, given as a count no list reaches."""

NEVER = np.iinfo(np.int64).max
"""``first_match`` of a padding column, or of a ground-truth unit never matched."""


@lru_cache(maxsize=64)
def _discounts(size: int) -> FloatArray:
    """``log2(rank + 1)`` for ranks 1..size, from ``math.log2`` as the reference."""
    return np.array([math.log2(i + 2) for i in range(size)], dtype=np.float64)


@lru_cache(maxsize=64)
def _ranks(size: int) -> FloatArray:
    return np.arange(1, size + 1, dtype=np.float64)


@dataclass(frozen=True)
class BatchJudgments:
    """The :class:`~ctxeval.judging.judgments.Judgments` of ``B`` records, padded.

    ``n[b]`` units were judged for record ``b`` and it has ``m[b]`` relevant ground-truth units;
    rows beyond ``n[b]`` and columns beyond ``m[b]`` are padding (never relevant, never a hit,
    gain 0, first match never). ``chunk_ends`` (sentence units only) holds, per record, the
    number of units in its first 1, 2, ... chunks, padded with its last value, and ``chunks``
    the number of chunks: a cut-off then counts chunks, as in the reference.
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
    chunk_ends: IntArray | None = None  # (B, C)
    chunks: IntArray | None = None  # (B,)
    # Explicit judgments (ID mode): ranks judged non-relevant and how many the qrels judge so;
    # None: every rank that matches nothing is judged non-relevant, of unbounded number.
    nonrelevant: BoolArray | None = None  # (B, N)
    num_nonrelevant: IntArray | None = None  # (B,)
    # Where each group of equal run scores ends (exclusive), padded with n[b]; None: no scores.
    tie_ends: IntArray | None = None  # (B, T)

    # Optional: :attr:`hit_ranks` known by the caller (ID mode already has it); None: derived.
    known_hit_ranks: IntArray | None = None  # (B, H)
    # Running sums shared by the measures of a batch, each as wide as a cut-off has needed.
    _sums: dict[str, FloatArray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __len__(self) -> int:
        return len(self.n)

    @cached_property
    def hit_ranks(self) -> IntArray:
        """The ranks (0-based) of each record's hits, in rank order, compacted left and padded
        with ``NEVER``: (B, H), H at least the most hits of a record, and 1."""
        if self.known_hit_ranks is not None:
            return self.known_hit_ranks
        return _compacted(self.hits)

    @cached_property
    def relevant_ranks(self) -> IntArray:
        """The same for the relevant ranks."""
        return self.hit_ranks if self.relevant is self.hits else _compacted(self.relevant)

    def dcg_so_far(self, width: int) -> FloatArray:
        """Linear-gain DCG at ranks 1..``width`` (at most N)."""
        return self._running("dcg", self.gains, width)

    def ideal_dcg_so_far(self, width: int) -> FloatArray:
        """Linear-gain DCG of the ideal ranking at ranks 1..``width`` (at most I)."""
        return self._running("ideal", self.ideal, width)

    def _running(self, key: str, gains: FloatArray, width: int) -> FloatArray:
        # A running sum's first columns do not depend on the others: compute only as many as
        # asked for (widening when a later cut-off asks for more).
        width = min(width, gains.shape[1])
        done = self._sums.get(key)
        if done is None or done.shape[1] < width:
            done = self._sums[key] = _dcg_so_far(gains[:, :width])
        return done[:, :width]

    def cut(self, k: Cut) -> IntArray:
        """Units kept by the cut-off ``k`` per record (``k`` counts chunks: one number for
        every record, or one per record)."""
        if k is None:
            return self.n
        if self.chunk_ends is None or self.chunks is None:
            return np.minimum(self.n, k)
        kept = np.minimum(self.chunks, k)
        return np.where(kept > 0, _pick(self.chunk_ends, kept - 1), 0)


def _compacted(marks: BoolArray) -> IntArray:
    """:attr:`BatchJudgments.hit_ranks` of a (B, N) array of marks."""
    count = np.count_nonzero(marks, axis=1)
    out = np.full((len(marks), max(int(count.max(initial=0)), 1)), NEVER, dtype=np.int64)
    out[np.arange(out.shape[1]) < count[:, None]] = np.flatnonzero(marks) % max(marks.shape[1], 1)
    return out


def _pick(table: npt.NDArray[Any], column: IntArray) -> npt.NDArray[Any]:
    """``table[b, column[b]]`` per row (``column`` clipped into the table)."""
    if table.shape[1] == 0:
        return np.zeros(len(column), dtype=table.dtype)
    index = np.clip(column, 0, table.shape[1] - 1)[:, None]
    return np.take_along_axis(table, index, axis=1)[:, 0]


def _padded(
    lengths: IntArray, rows: Iterable[Sequence[Any]], dtype: Any, fill: Any, width: int = 1
) -> Any:
    """Rows of the given lengths, concatenated, into a (B, max length) array."""
    count = len(lengths)
    width = max(int(lengths.max(initial=0)), width)
    out = np.full((count, width), fill, dtype=dtype)
    out[np.arange(width) < lengths[:, None]] = np.fromiter(
        itertools.chain.from_iterable(rows), dtype=dtype, count=int(lengths.sum())
    )
    return out


def tie_ends_array(ends: Sequence[Sequence[int] | None], n: IntArray) -> IntArray:
    """Each record's groups of equal scores (where each ends, exclusive) as a padded (B, T)
    array for :attr:`BatchJudgments.tie_ends`: a group cut by the end of the judged list (``n``)
    ends there, the padding is ``n``, and a record without scores (None) has every rank as a
    group of its own."""
    rows: list[tuple[int, ...]] = []
    for row, size in zip(ends, n.tolist(), strict=True):
        if row is None:
            rows.append(tuple(range(1, size + 1)))
        else:
            rows.append((*(end for end in row if end < size), size) if size else ())
    groups = np.fromiter(map(len, rows), np.int64, count=len(rows))
    table: IntArray = _padded(groups, rows, np.int64, 0)
    return np.where(np.arange(table.shape[1]) < groups[:, None], table, n[:, None])


def judge_batch(
    matrices: Sequence[BoolArray],
    grades: Sequence[Sequence[float] | None],
    credit: Credit,
) -> BatchJudgments:
    """Judge relevance matrices (retrieved chunks x distinct ground truth) of a batch.

    Equal to :func:`~ctxeval.judging.judgments.judge_matrix` on each matrix: rows that match at
    most one ground-truth unit are credited in bulk (the first such row of a column is its hit,
    under either credit rule); a record with a row matching several units is judged on its own.
    The records' groups of equal scores, when a measure needs them, are added to the batch
    afterwards (:func:`tie_ends_array`): they do not depend on the matching.
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
    first_match = np.where(matched, relevance.argmax(axis=1), NEVER)
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
    """Pad per-record :class:`Judgments` into a batch (ID mode, sentence units, and any record
    judged on its own)."""
    count = len(judged)
    n = np.fromiter((j.n for j in judged), dtype=np.int64, count=count)
    m = np.fromiter((j.num_relevant for j in judged), dtype=np.int64, count=count)
    ideal_n = np.fromiter((len(j.ideal) for j in judged), dtype=np.int64, count=count)
    chunk_ends = chunks = None
    if count and judged[0].chunk_ends is not None:
        ends = [j.chunk_ends or () for j in judged]
        chunks = np.fromiter(map(len, ends), dtype=np.int64, count=count)
        chunk_ends = _padded(chunks, ends, np.int64, 0)
        # Pad each row with its last value, so that a cut beyond the last chunk keeps all.
        last = np.where(chunks > 0, _pick(chunk_ends, chunks - 1), 0)
        chunk_ends = np.where(
            np.arange(chunk_ends.shape[1]) < chunks[:, None], chunk_ends, last[:, None]
        )
    nonrelevant = num_nonrelevant = None
    if count and all(j.nonrelevant is not None for j in judged):
        nonrelevant = _padded(n, (j.nonrelevant or () for j in judged), np.bool_, False)
        num_nonrelevant = np.fromiter(
            (j.num_nonrelevant or 0 for j in judged), dtype=np.int64, count=count
        )
    tie_ends = None
    if any(j.tie_ends is not None for j in judged):
        tie_ends = tie_ends_array([j.tie_ends for j in judged], n)
    return BatchJudgments(
        n=n,
        m=m,
        relevant=_padded(n, (j.relevant for j in judged), np.bool_, False),
        hits=_padded(n, (j.hits for j in judged), np.bool_, False),
        gains=_padded(n, (j.gains for j in judged), np.float64, 0.0),
        first_match=_padded(m, (j.first_match for j in judged), np.int64, NEVER),
        ideal=_padded(ideal_n, (j.ideal for j in judged), np.float64, 0.0),
        ideal_n=ideal_n,
        chunk_ends=chunk_ends,
        chunks=chunks,
        nonrelevant=nonrelevant,
        num_nonrelevant=num_nonrelevant,
        tie_ends=tie_ends,
    )


# -- shared pieces ---------------------------------------------------------------------------


def _at(cumulative: npt.NDArray[Any], cut: IntArray) -> npt.NDArray[Any]:
    """``cumulative[b, cut[b] - 1]``, or 0 where ``cut[b] == 0``."""
    if cumulative.shape[1] == 0:
        return np.zeros(len(cut), dtype=cumulative.dtype)
    return np.where(cut > 0, _pick(cumulative, cut - 1), 0)


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
        dcg_so_far = j.dcg_so_far(width)
        ideal_so_far = j.ideal_dcg_so_far(ideal_width)
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
    return np.where(reached, _pick(best_below, start), 0.0)


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
