"""A batch's judgments, padded: the one representation the vectorised core measures.

Every bulk producer emits :class:`BatchJudgments`: text batches (:func:`judge_batch`, from the
relevance matrices; :func:`judge_flat`, from a batch's matrices held flat, :class:`FlatPairs`),
records judged one by one (:func:`stack_judgments`: ID mode, sentence
units), and whole TREC-style runs (:func:`ctxeval.judging.runs.judge_run`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from ctxeval.judging.judgments import Credit, Judgments, judge_matrix

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

__all__ = [
    "FLAT_CELLS",
    "NEVER",
    "BatchJudgments",
    "Cut",
    "FlatPairs",
    "Pair",
    "judge_batch",
    "judge_flat",
    "pick",
    "stack_judgments",
    "tie_ends_array",
]


Cut = int | IntArray | None
"""A cut-off as the core takes it: a number of chunks, ``None`` for the whole list, or one number
per record: a budget's :meth:`~ctxeval.cutoffs.budgets.BudgetCut.equivalent_k`, never beyond the
record's
list except for the whole list, given as a count no list reaches."""


NEVER = np.iinfo(np.int64).max
"""``first_match`` of a padding column, or of a ground-truth unit never matched."""


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

    def running(self, key: str, width: int, compute: Callable[[int], FloatArray]) -> FloatArray:
        """A running sum shared by the measures of a batch (``compute(width)``: its first
        ``width`` columns), kept under ``key`` and widened when a later cut-off asks for more:
        a running sum's first columns do not depend on the others."""
        done = self._sums.get(key)
        if done is None or done.shape[1] < width:
            done = self._sums[key] = compute(width)
        return done[:, :width]

    def cut(self, k: Cut) -> IntArray:
        """Units kept by the cut-off ``k`` per record (``k`` counts chunks: one number for
        every record, or one per record)."""
        if k is None:
            return self.n
        if self.chunk_ends is None or self.chunks is None:
            return np.minimum(self.n, k)
        kept = np.minimum(self.chunks, k)
        return np.where(kept > 0, pick(self.chunk_ends, kept - 1), 0)


def _compacted(marks: BoolArray) -> IntArray:
    """:attr:`BatchJudgments.hit_ranks` of a (B, N) array of marks."""
    count = np.count_nonzero(marks, axis=1)
    out = np.full((len(marks), max(int(count.max(initial=0)), 1)), NEVER, dtype=np.int64)
    out[np.arange(out.shape[1]) < count[:, None]] = np.flatnonzero(marks) % max(marks.shape[1], 1)
    return out


def pick(table: npt.NDArray[Any], column: IntArray) -> npt.NDArray[Any]:
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


Pair = tuple[BoolArray, Sequence[float] | None]  # a relevance matrix and its grades


class FlatPairs(Sequence[Pair]):
    """A pass's relevance matrices with their grades, held as a strategy gave them for a batch
    (:class:`~ctxeval.matching.base.FlatMatches`): record *b*'s matrix (``n[b]`` by ``m[b]``) is
    ``relevant[blocks[b] : blocks[b] + n[b] * m[b]]``. Read like a list of (matrix, grades),
    each matrix a view; :func:`judge_flat` judges them without a matrix per record."""

    def __init__(
        self,
        relevant: BoolArray,
        blocks: IntArray,
        n: IntArray,
        m: IntArray,
        grades: Sequence[Sequence[float] | None],
    ) -> None:
        self.relevant, self.blocks, self.n, self.m = relevant, blocks, n, m
        self.grades = grades

    def __len__(self) -> int:
        return len(self.n)

    @overload
    def __getitem__(self, index: int) -> Pair: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Pair]: ...

    def __getitem__(self, index: int | slice) -> Pair | Sequence[Pair]:
        if isinstance(index, slice):
            return self.select(list(range(len(self)))[index])
        n, m, start = int(self.n[index]), int(self.m[index]), int(self.blocks[index])
        return self.relevant[start : start + n * m].reshape(n, m), self.grades[index]

    def select(self, rows: Sequence[int]) -> FlatPairs:
        """The pairs of ``rows``, in that order (the same flat array)."""
        index = np.asarray(rows, dtype=np.int64)
        grades = [self.grades[row] for row in rows]
        return FlatPairs(self.relevant, self.blocks[index], self.n[index], self.m[index], grades)


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
    return _judge_padded(_copied(matrices, n, m), n, m, grades, credit)


# Cells of a batch padded by array operations at most (each cell costs about 40 bytes of index
# arrays for a moment: 40 MB here); past them each record's matrix is copied into place.
FLAT_CELLS = 1 << 20


def judge_flat(pairs: FlatPairs, credit: Credit) -> BatchJudgments:
    """:func:`judge_batch` of the matrices ``pairs`` holds flat, padded in a few array
    operations instead of a copy per record (copied record by record past
    :data:`FLAT_CELLS` cells, where the operations' index arrays would cost more memory than
    the copies save time)."""
    n, m = pairs.n, pairs.m
    sizes = n * m
    total = int(sizes.sum())
    if total > FLAT_CELLS:
        relevance = _copied([matrix for matrix, _ in pairs], n, m)
        return _judge_padded(relevance, n, m, pairs.grades, credit)
    relevance = _unfilled(n, m)
    if total:
        record = np.repeat(np.arange(len(n)), sizes)
        within = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        columns = m[record]
        cells = pairs.relevant[np.repeat(pairs.blocks, sizes) + within]
        relevance[record, within // columns, within % columns] = cells
    return _judge_padded(relevance, n, m, pairs.grades, credit)


def _copied(matrices: Sequence[BoolArray], n: IntArray, m: IntArray) -> BoolArray:
    """The matrices (``n[b]`` by ``m[b]``) padded into one (B, N, M) array, one copy each."""
    relevance = _unfilled(n, m)
    for b, matrix in enumerate(matrices):
        relevance[b, : matrix.shape[0], : matrix.shape[1]] = matrix
    return relevance


def _unfilled(n: IntArray, m: IntArray) -> BoolArray:
    """An all-False (B, N, M) relevance array for matrices of ``n`` rows and ``m`` columns."""
    return np.zeros((len(n), max(int(n.max(initial=0)), 1), max(int(m.max(initial=0)), 1)), bool)


def _judge_padded(
    relevance: BoolArray,
    n: IntArray,
    m: IntArray,
    grades: Sequence[Sequence[float] | None],
    credit: Credit,
) -> BatchJudgments:
    """:func:`judge_batch` of the matrices padded into ``relevance`` (B, N, M)."""
    _, width, depth = relevance.shape
    grade = np.asarray(np.arange(depth) < m[:, None], dtype=np.float64)
    for b in [b for b, g in enumerate(grades) if g is not None]:
        grade[b, : m[b]] = grades[b]
    relevant: BoolArray = np.asarray(relevance.any(axis=2))
    column = relevance.argmax(axis=2)
    matched = relevance.any(axis=1)
    first_match = np.where(matched, relevance.argmax(axis=1), NEVER)
    ranks = np.arange(width)
    hits = relevant & (np.take_along_axis(first_match, column, axis=1) == ranks)
    gains = np.where(hits, np.take_along_axis(grade, column, axis=1), 0.0)
    # Rows matching several ground-truth units: the credit rule decides, record by record.
    for b in np.flatnonzero((relevance.sum(axis=2) > 1).any(axis=1)).tolist():
        judged = judge_matrix(relevance[b, : n[b], : m[b]], grades[b], credit=credit)
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
        last = np.where(chunks > 0, pick(chunk_ends, chunks - 1), 0)
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
