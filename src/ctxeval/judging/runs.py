"""Judging a whole ID-mode run at once, in numpy, equal to the per-query path bit for bit.

:func:`~ctxeval.metrics.runs.evaluate_run` can rank and judge one query at a time in Python. For
the common input, ``{docid: float score}`` dicts with string ids, this module does the same work
for all queries together, a chunk of queries at a time: a chunk holds a few thousand documents,
so that its Python objects (dict entries, ids, scores), read from memory once, are still in the
CPU's cache for the later passes over them. For each chunk:

1. its scores go into one array and its grades into another, their types checked in the same
   passes, and each judged document is looked up in its query's scores;
2. only retrieved judged documents can earn anything, so only their ranks are needed: the
   number of documents scoring higher plus, when others share the score, the number of those
   the tie rule puts first (docid descending as strings, as trec_eval, or input order). Both
   counts come from comparing each judged document's score with every score of its query (one
   2-D comparison for the chunk) or, when queries are long or of very uneven lengths, from
   binary searches in each query's sorted scores. The ids of the documents in a judged
   document's tie group are then compared with its own, or, when groups are large and hold
   many judged documents, each group is sorted by id once (memory stays bounded either way);
3. the ranks, with the grades of every chunk, become the padded
   :class:`~ctxeval.metrics.core.BatchJudgments` that every other path emits too (in blocks of
   queries, so memory stays bounded), and the vectorised core computes every measure from it,
   with the same floats as the reference.

Anything else (ranked lists, integer ids, non-numeric or non-finite scores, integer scores that
floats cannot hold exactly, invalid qrels) is not handled here: :func:`judge_run` returns
``None`` and the caller takes its per-query path, which also produces the error messages.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import struct
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ctxeval.judging.batch import NEVER, BatchJudgments

__all__ = ["RunJudgments", "judge_run", "plain_judged", "plain_scored"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_chain = itertools.chain.from_iterable
_GET = operator.attrgetter("get")
_SCORE_TYPES = frozenset({float, np.float64, int})
# Integer scores below this convert to floats exactly, so they keep their order and their ties.
_EXACT_INTEGERS = 2.0**53
_GRADE_TYPES = frozenset({int, float})
_JUDGED_ID_TYPES = frozenset({str, int})
# Documents per chunk (about 100 bytes of Python objects each, to stay in cache between the
# passes over them; on benchmarks/id_vs_trec.py, 8,192 and 16,384 ran alike and 32,768 about
# 20% slower), and queries per chunk at most (for runs of many queries with few documents).
_CHUNK_DOCS = 1 << 13
_CHUNK_QUERIES = 1 << 10
# Judged documents x the chunk's longest query: the most scores compared at once; beyond it
# (long queries), ranks come from binary searches in sorted scores.
_COMPARED_CELLS = 1 << 18


def plain_scored(scored: object) -> bool:
    """One query's scores are a dict of string ids to finite floats, or to integers that
    floats represent exactly (what :func:`judge_run` takes)."""
    if type(scored) is not dict or not set(map(type, scored)) <= {str}:
        return False
    types = set(map(type, scored.values()))
    if not types <= _SCORE_TYPES:
        return False
    if int in types:  # (also false for nan and inf)
        return all(abs(score) < _EXACT_INTEGERS for score in scored.values())
    return all(map(math.isfinite, scored.values()))


def plain_judged(judged: object) -> bool:
    """One query's qrels are a dict of string or integer ids to finite int or float grades."""
    if not (
        type(judged) is dict
        and set(map(type, judged)) <= _JUDGED_ID_TYPES
        and set(map(type, judged.values())) <= _GRADE_TYPES
    ):
        return False
    try:
        return all(map(math.isfinite, judged.values()))
    except OverflowError:  # an int beyond float range: the per-query path reports it
        return False


def _scores(scored: Sequence[dict[str, float]], total: int) -> FloatArray | None:
    """All scores in query order, or None unless every one passes :func:`plain_scored`. (The
    tuple reads every score object; the type check and the copy then find them in cache.
    ``struct.pack`` copies floats about twice as fast as ``np.fromiter``, to the same
    doubles, and takes the tuple as its arguments as it is.)"""
    values = tuple(_chain(map(dict.values, scored)))
    integers = False
    if operator.countOf(map(type, values), float) != total:
        types = set(map(type, values))
        if not types <= _SCORE_TYPES:
            return None
        integers = int in types
    try:
        out = np.frombuffer(struct.pack(f"{total}d", *values), dtype=np.float64)
    except (OverflowError, struct.error):  # an int beyond float range
        return None
    if not np.isfinite(out).all():
        return None
    if integers and not (np.abs(out) < _EXACT_INTEGERS).all():
        return None
    return out


def _grades(judged: Sequence[dict[Any, float]], total: int) -> FloatArray | None:
    """All grades in query order, or None unless every one is a finite int or float and every
    id a string or an integer."""
    if operator.countOf(map(type, _chain(judged)), str) != total and not (
        set(map(type, _chain(judged))) <= _JUDGED_ID_TYPES
    ):
        return None
    values = list(_chain(map(dict.values, judged)))
    if operator.countOf(map(type, values), int) != total and not (
        set(map(type, values)) <= _GRADE_TYPES
    ):
        return None
    try:
        grades = np.fromiter(values, np.float64, total)
    except OverflowError:
        return None
    return grades if np.isfinite(grades).all() else None


def _string_ids(scored: Sequence[dict[str, float]], total: int) -> bool:
    return operator.countOf(map(type, _chain(scored)), str) == total


def _retrieved_scores(
    scored: Sequence[dict[str, float]], judged: Sequence[dict[Any, float]], total: int
) -> FloatArray | None:
    """The score of each judged document in its query's run, NaN when it was not retrieved
    (run scores are finite, so NaN means only that); None when an id cannot be looked up
    (it is not plain). Done before the judged ids' types are checked: the lookups read every
    one of them, and the check then finds them in cache."""
    lookups = map(map, map(_GET, scored), judged, itertools.repeat(itertools.repeat(math.nan)))
    try:
        return np.fromiter(_chain(lookups), np.float64, total)
    except Exception:  # an unhashable id, or one whose hash fails: the per-query path tells
        return None


def _positions(query: IntArray, queries: int) -> IntArray:
    """For entries grouped by query: each entry's position within its query (0, 1, ...)."""
    counts = np.bincount(query, minlength=queries)
    starts = np.cumsum(counts) - counts
    return np.arange(len(query), dtype=np.int64) - starts[query]


def _search(
    ordered: FloatArray, base: IntArray, length: IntArray, target: FloatArray, *, right: bool
) -> IntArray:
    """How many of ``ordered[base : base + length]`` (sorted ascending) are below ``target``
    (``right``: at or below), per target: a binary search for all targets at once."""
    lo = np.zeros(len(target), dtype=np.int64)
    hi = length.copy()
    last = np.maximum(length - 1, 0)
    for _ in range(int(length.max(initial=0)).bit_length()):
        mid = (lo + hi) >> 1
        value = ordered[base + np.minimum(mid, last)]
        below = value <= target if right else value < target
        open_ = lo < hi
        lo = np.where(open_ & below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    return lo


class RunJudgments:
    """What every query of a run earned, for all measures at every cut-off.

    Per query: ``lengths`` (documents retrieved), ``num_relevant`` (judged documents with a
    grade at or above the relevance level), ``num_nonrelevant`` (judged documents with a grade
    from 0 to below the level; None when those of grade 0 were not ranked), ``tied``
    (documents of equal score but different grades, so the tie rule decided a score). Per
    retrieved judged document (grade 0 or more; positive only without ``num_nonrelevant``), by
    query then rank: ``pair_query``, ``pair_rank`` (0-based), ``pair_grade``. Per positive grade
    in the qrels, by query (in qrels order within a query): ``ideal_query``, ``ideal_grade``.
    """

    def __init__(
        self,
        *,
        lengths: IntArray,
        num_relevant: IntArray,
        num_nonrelevant: IntArray | None,
        tied: BoolArray,
        pair_query: IntArray,
        pair_rank: IntArray,
        pair_grade: FloatArray,
        ideal_query: IntArray,
        ideal_grade: FloatArray,
        relevance_level: float,
    ) -> None:
        self.queries = len(lengths)
        self.lengths = lengths
        self.num_relevant = num_relevant
        self.num_nonrelevant = num_nonrelevant
        self.tied = tied
        self.pair_query = pair_query
        self.pair_rank = pair_rank
        self.pair_grade = pair_grade
        self.pair_hit = pair_grade >= relevance_level
        self.ideal_query = ideal_query
        self.ideal_grade = ideal_grade

    def batches(
        self, depth: int | None, cells: int = 1 << 22
    ) -> Iterator[tuple[slice, BatchJudgments]]:
        """The run as padded judgments for the core, judged to ``depth`` (None: every
        document), in blocks of queries of at most about ``cells`` ranks (memory stays bounded
        on long runs)."""
        n = self.lengths if depth is None else np.minimum(self.lengths, depth)
        width = max(int(n.max(initial=0)), 1)
        step = max(cells // width, 1)
        for start in range(0, max(self.queries, 1), step):
            stop = min(start + step, self.queries)
            yield slice(start, stop), self._batch(start, stop, n[start:stop], width)

    def _batch(self, start: int, stop: int, n: IntArray, width: int) -> BatchJudgments:
        queries = stop - start
        lo, hi = np.searchsorted(self.pair_query, [start, stop])
        query = self.pair_query[lo:hi] - start
        rank = self.pair_rank[lo:hi]
        grade = self.pair_grade[lo:hi]
        hit = self.pair_hit[lo:hi]
        keep = rank < n[query]
        query, rank, grade, hit = query[keep], rank[keep], grade[keep], hit[keep]
        hits = np.zeros((queries, width), dtype=np.bool_)
        hits[query[hit], rank[hit]] = True
        gains = np.zeros((queries, width), dtype=np.float64)
        gains[query, rank] = grade
        nonrelevant = num_nonrelevant = None
        if self.num_nonrelevant is not None:  # (only bpref reads them)
            nonrelevant = np.zeros((queries, width), dtype=np.bool_)
            nonrelevant[query[~hit], rank[~hit]] = True
            num_nonrelevant = self.num_nonrelevant[start:stop].astype(np.int64)
        m = self.num_relevant[start:stop]
        first_match = np.full((queries, max(int(m.max(initial=0)), 1)), NEVER, dtype=np.int64)
        hit_query = query[hit]
        first_match[hit_query, _positions(hit_query, queries)] = rank[hit]
        lo, hi = np.searchsorted(self.ideal_query, [start, stop])
        ideal_query = self.ideal_query[lo:hi] - start
        ideal_n = np.bincount(ideal_query, minlength=queries).astype(np.int64)
        ideal = np.zeros((queries, max(int(ideal_n.max(initial=0)), 1)), dtype=np.float64)
        ideal[ideal_query, _positions(ideal_query, queries)] = self.ideal_grade[lo:hi]
        ideal = -np.sort(-ideal, axis=1)  # each query's grades highest first, then the padding
        # A dict run cannot repeat a document, so "matches some ground truth" is "is a hit";
        # the relevant documents' first matches, laid out in rank order, are the hits' ranks.
        return BatchJudgments(
            n=n.astype(np.int64),
            m=m.astype(np.int64),
            relevant=hits,
            hits=hits,
            gains=gains,
            first_match=first_match,
            ideal=ideal,
            ideal_n=ideal_n,
            nonrelevant=nonrelevant,
            num_nonrelevant=num_nonrelevant,
            known_hit_ranks=first_match,
        )


def judge_run(
    scored: Sequence[dict[str, float]],
    judged: Sequence[dict[Any, float]],
    *,
    ties: str,
    relevance_level: float,
    judged_nonrelevant: bool = True,
) -> RunJudgments | None:
    """Judge every query at once: ``scored[i]`` is query *i*'s ``{docid: score}``, ``judged[i]``
    its ``{docid: grade}``. None unless all of them pass :func:`plain_scored` and
    :func:`plain_judged` (checked here over the whole run, a chunk at a time).
    ``judged_nonrelevant``: rank the retrieved documents of grade 0 too, for bpref (False: they
    earn nothing in any other measure, and the batches then hold no judged non-relevant
    ranks)."""
    queries = len(scored)
    if (
        operator.countOf(map(type, scored), dict) != queries
        or operator.countOf(map(type, judged), dict) != queries
    ):
        return None
    lengths = np.fromiter(map(len, scored), np.int64, queries)
    judged_lengths = np.fromiter(map(len, judged), np.int64, queries)
    chunks: list[_Chunk] = []
    for start, stop in _chunk_bounds(lengths):
        chunk = _judge_chunk(
            scored[start:stop],
            judged[start:stop],
            _Lengths(lengths[start:stop], judged_lengths[start:stop]),
            ties=ties,
            judged_nonrelevant=judged_nonrelevant,
        )
        if chunk is None:
            return None
        chunks.append(chunk._replace(pair_query=chunk.pair_query + start))

    grades = _joined([c.grades for c in chunks], np.float64)
    judged_query = np.repeat(np.arange(queries, dtype=np.int64), judged_lengths)
    positive = grades > 0
    below_level = (grades >= 0) & (grades < relevance_level)
    return RunJudgments(
        lengths=lengths,
        num_relevant=np.bincount(judged_query[grades >= relevance_level], minlength=queries),
        num_nonrelevant=(
            np.bincount(judged_query[below_level], minlength=queries)
            if judged_nonrelevant
            else None
        ),
        tied=_joined([c.tied for c in chunks], np.bool_),
        pair_query=_joined([c.pair_query for c in chunks], np.int64),
        pair_rank=_joined([c.pair_rank for c in chunks], np.int64),
        pair_grade=_joined([c.pair_grade for c in chunks], np.float64),
        ideal_query=judged_query[positive],
        ideal_grade=grades[positive],
        relevance_level=relevance_level,
    )


def _joined(parts: list[Any], dtype: type) -> Any:
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _chunk_bounds(lengths: IntArray) -> Iterator[tuple[int, int]]:
    """Consecutive ranges of queries, each of about ``_CHUNK_DOCS`` documents (at least one
    query, at most ``_CHUNK_QUERIES``)."""
    ends = np.cumsum(lengths).tolist()
    start, queries = 0, len(ends)
    while start < queries:
        before = ends[start - 1] if start else 0
        stop = bisect.bisect_right(ends, before + _CHUNK_DOCS, start, queries)
        stop = min(max(stop, start + 1), start + _CHUNK_QUERIES)
        yield start, stop
        start = stop


class _Lengths(NamedTuple):
    """A chunk's queries: documents retrieved and documents judged, per query."""

    scored: IntArray
    judged: IntArray


class _Chunk(NamedTuple):
    """A chunk's judgments (see :class:`RunJudgments`): every judged document's grade, in
    qrels order; the retrieved judged documents' query, rank and grade, by query then rank;
    per query, whether the tie rule changed a score."""

    grades: FloatArray
    pair_query: IntArray
    pair_rank: IntArray
    pair_grade: FloatArray
    tied: BoolArray


def _judge_chunk(
    scored: Sequence[dict[str, float]],
    judged: Sequence[dict[Any, float]],
    lengths: _Lengths,
    *,
    ties: str,
    judged_nonrelevant: bool,
) -> _Chunk | None:
    """One chunk of queries judged; None unless all of them are plain."""
    total, judged_total = int(lengths.scored.sum()), int(lengths.judged.sum())
    scores = _scores(scored, total)
    # The run's ids are read before the lookups, which read them again (a dict of strings keeps
    # no hashes: each probe reads the key's), and the tie rule compares them.
    if scores is None or not _string_ids(scored, total):
        return None
    found = _retrieved_scores(scored, judged, judged_total)
    grades = None if found is None else _grades(judged, judged_total)
    if found is None or grades is None:
        return None
    # Judged documents retrieved: those with a positive grade earn gains and hits; those of
    # grade 0 (and below the level) are the judged non-relevant ones bpref counts.
    pair = np.flatnonzero(
        ((grades >= 0) if judged_nonrelevant else (grades > 0)) & ~np.isnan(found)
    )
    queries = len(lengths.scored)
    pair_query = np.repeat(np.arange(queries, dtype=np.int64), lengths.judged)[pair]
    pair_grade = grades[pair]
    ranks = _ranks(scores, lengths.scored, pair_query, found[pair])
    width = int(lengths.scored.max(initial=0))
    rank = ranks.greater.copy()
    tied = np.zeros(queries, dtype=np.bool_)
    shared = np.flatnonzero(ranks.equal > 1)
    if len(shared):
        # Documents that share a judged document's score: the tie rule decides how many of
        # them rank before it, and whether the tie changes a score.
        groups = _Groups.of_keys(*ranks.group_keys(shared))
        rank[shared] += _tied_before(
            ranks,
            shared,
            groups,
            ids=np.fromiter(_chain(scored), object, total),
            doc=np.fromiter(_chain(judged), object, judged_total)[pair[shared]],
            ties=ties,
        )
        # Only a positive grade's tie can change a score (grade 0 and unjudged are alike).
        grade = pair_grade[shared]
        straddles = (grade > 0) & groups.mixed(ranks.equal[shared], grade)
        tied[pair_query[shared][straddles]] = True
    order = np.argsort(pair_query * (width + 1) + rank, kind="stable")
    return _Chunk(grades, pair_query[order], rank[order], pair_grade[order], tied)


def _ranks(
    scores: FloatArray, lengths: IntArray, query: IntArray, score: FloatArray
) -> _ComparedRanks | _SortedRanks:
    """For documents of score ``score`` in query ``query`` (of a chunk whose queries have
    ``scores``, ``lengths[q]`` each): how many documents of its query score higher, and how
    many the same (itself included)."""
    queries, width = len(lengths), int(lengths.max(initial=0))
    if len(query) * width <= _COMPARED_CELLS and queries * width <= 2 * len(scores) + 4096:
        return _ComparedRanks(scores, lengths, query, score, width)
    return _SortedRanks(scores, lengths, query, score, width)


class _ComparedRanks:
    """Ranks by comparing each document's score with every score of its query, in one
    (documents x longest query) comparison. ``groups(shared)``: the positions (in ``scores``)
    of the members of each ``shared`` document's tie group, group after group, and where each
    group starts in them."""

    def __init__(
        self, scores: FloatArray, lengths: IntArray, query: IntArray, score: FloatArray, width: int
    ) -> None:
        queries = len(lengths)
        if queries * width == len(scores):
            padded = scores.reshape(queries, width)
        else:  # padding: NaN is never higher, nor equal
            padded = np.full((queries, width), np.nan)
            padded[np.arange(width) < lengths[:, None]] = scores
        rows = padded[query]
        self.greater = _row_counts(rows > score[:, None])
        self._equal = rows == score[:, None]
        self.equal = _row_counts(self._equal)
        self._start = (np.cumsum(lengths) - lengths)[query]
        self._query = query
        self._width = width
        self._queries = queries

    def groups(self, shared: IntArray) -> tuple[IntArray, IntArray]:
        row, column = np.divmod(np.flatnonzero(self._equal[shared]), self._width)
        size = self.equal[shared]
        return self._start[shared][row] + column, np.cumsum(size) - size

    def group_keys(self, shared: IntArray) -> tuple[IntArray, int]:
        """Each ``shared`` document's tie group as a number, and a bound on those numbers."""
        return self._query[shared] * self._width + self.greater[shared], self._queries * self._width


def _row_counts(mask: BoolArray) -> IntArray:
    """The number of true values in each row of ``mask``: summed as bytes when rows are
    shorter than 256 (about twice as fast as ``np.count_nonzero``)."""
    if mask.shape[1] < 256:
        counts = np.add.reduce(mask.view(np.uint8), axis=1, dtype=np.uint8)
    else:
        counts = np.count_nonzero(mask, axis=1)
    out: IntArray = counts.astype(np.int64)
    return out


class _SortedRanks:
    """Ranks by binary searches in each query's sorted scores (long queries, or lengths too
    uneven to pad). ``groups(shared)`` as :class:`_ComparedRanks`'s."""

    def __init__(
        self, scores: FloatArray, lengths: IntArray, query: IntArray, score: FloatArray, width: int
    ) -> None:
        self._sorted = _SortedScores(scores, lengths, width)
        self._base = self._sorted.base[query]
        length = lengths[query]
        self._below = _search(self._sorted.ordered, self._base, length, score, right=False)
        at_or_below = _search(self._sorted.ordered, self._base, length, score, right=True)
        self.greater: IntArray = length - at_or_below
        self.equal: IntArray = at_or_below - self._below

    def groups(self, shared: IntArray) -> tuple[IntArray, IntArray]:
        return self._sorted.positions(), self._base[shared] + self._below[shared]

    def group_keys(self, shared: IntArray) -> tuple[IntArray, int]:
        return self._base[shared] + self._below[shared], len(self._sorted.ordered)


class _SortedScores:
    """Each query's scores sorted ascending, all in one array: query *q*'s are
    ``ordered[base[q] : base[q] + lengths[q]]``."""

    def __init__(self, scores: FloatArray, lengths: IntArray, width: int) -> None:
        queries, total = len(lengths), len(scores)
        self._starts = np.cumsum(lengths) - lengths
        self._padded: FloatArray = np.empty((0, 0))
        self._flat_order: IntArray | None = None
        if queries * width <= 2 * total + 4096:
            # Rows of one 2-D array, padded when lengths differ (padding sorts last and is
            # never read).
            if queries * width == total:
                self._padded = scores.reshape(queries, width)
            else:
                self._padded = np.full((queries, width), np.inf)
                self._padded[np.arange(width) < lengths[:, None]] = scores
            self.ordered: FloatArray = np.sort(self._padded, axis=1).ravel()
            self.base: IntArray = np.arange(queries, dtype=np.int64) * width
        else:  # lengths too uneven to pad: one sort of the flat array by (query, score)
            query = np.repeat(np.arange(queries, dtype=np.int64), lengths)
            self._flat_order = np.lexsort((scores, query)).astype(np.int64)
            self.ordered = scores[self._flat_order]
            self.base = self._starts

    def positions(self) -> IntArray:
        """Where the document at each place of ``ordered`` is in ``scores`` (which one it is
        among equal scores is arbitrary, but each appears once)."""
        if self._flat_order is not None:
            return self._flat_order
        order = np.argsort(self._padded, axis=1).astype(np.int64)
        return (order + self._starts[:, None]).ravel()


def _tied_before(
    ranks: _ComparedRanks | _SortedRanks,
    shared: IntArray,
    groups: _Groups,
    *,
    ids: npt.NDArray[np.object_],
    doc: npt.NDArray[np.object_],
    ties: str,
) -> IntArray:
    """For each document ``shared[p]`` (id ``doc[p]``, in ``groups``) that shares its score
    with others, how many of them the tie rule ranks before it; ``ids``: the chunk's ids, in
    the order of its scores."""
    positions, first = ranks.groups(shared)
    size = ranks.equal[shared]
    tie = _TieGroups(ids, positions, first, pair_major=isinstance(ranks, _ComparedRanks))
    if _compare_each(int(size.sum()), size[groups.first]):
        return tie.count_each(size, doc, ties)
    return tie.count_sorted(size, doc, ties, groups.first, groups.of)


def _compare_each(comparisons: int, group_size: IntArray) -> bool:
    """Whether comparing each tied document with every member of its group (``comparisons``
    in all) is cheaper than sorting each group by id once (~size * log2(size) comparisons per
    group). Measured: the two cost the same at ~0.5-1.4 tied documents per log2(group size)."""
    sorting = float((group_size * np.log2(group_size + 1)).sum())
    return comparisons <= 0.75 * sorting


class _TieGroups:
    """The members of tie groups: the group of pair *p* is ``size[p]`` documents whose columns
    (positions in the chunk, in their queries' dict order) are ``columns[first[p]:][:size[p]]``
    and whose ids are ``ids[column]``. ``pair_major``: each pair has its own copy of its
    group's members, pair after pair (``first`` is the running sum of ``size``)."""

    # Members compared at once when each document is compared with its whole group: bounds
    # the memory (tens of bytes per member) whatever the size of the groups.
    CHUNK = 1 << 20

    def __init__(
        self,
        ids: npt.NDArray[np.object_],
        columns: IntArray,
        first: IntArray,
        *,
        pair_major: bool = False,
    ) -> None:
        self.ids = ids
        self.columns = columns
        self.first = first
        self.pair_major = pair_major

    def members(self, pairs: IntArray, size: IntArray) -> tuple[IntArray, IntArray]:
        """For the groups of ``pairs``: each member's owner (index into ``pairs``) and
        column."""
        owner = np.repeat(np.arange(len(pairs), dtype=np.int64), size)
        offset = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(size) - size, size)
        pair = pairs[owner]
        column = self.columns[self.first[pair] + offset]
        return owner, column

    def count_each(self, size: IntArray, doc: npt.NDArray[np.object_], ties: str) -> IntArray:
        """Compare each document with every member of its group, a chunk of pairs at a time."""
        before = np.zeros(len(size), dtype=np.int64)
        ends = np.cumsum(size)
        start = 0
        while start < len(size):
            limit = ends[start] + self.CHUNK
            stop = max(int(np.searchsorted(ends, limit, side="right")), start + 1)
            pairs = np.arange(start, stop, dtype=np.int64)
            if self.pair_major:  # the members of these pairs, as they are listed
                owner = np.repeat(np.arange(stop - start, dtype=np.int64), size[start:stop])
                column = self.columns[self.first[start] :][: len(owner)]
            else:
                owner, column = self.members(pairs, size[start:stop])
            member = self.ids[column]
            if ties == "trec_eval":  # docid descending, compared as strings (trec_eval's strcmp)
                earlier = member > doc[start:stop][owner]
            else:  # input order: the documents listed earlier in the query's dict
                own = np.empty(stop - start, dtype=np.int64)
                is_self = np.asarray(member == doc[start:stop][owner], dtype=np.bool_)
                own[owner[is_self]] = column[is_self]
                earlier = column < own[owner]
            before[start:stop] = np.bincount(
                owner[np.asarray(earlier, dtype=np.bool_)], minlength=stop - start
            )
            start = stop
        return before

    def count_sorted(
        self,
        size: IntArray,
        doc: npt.NDArray[np.object_],
        ties: str,
        first_of_group: IntArray,
        group_of: IntArray,
    ) -> IntArray:
        """Sort each group's members once, by id, together with the tied documents."""
        group_size = size[first_of_group]
        groups = len(group_size)
        owner, column = self.members(first_of_group, group_size)
        member_start = np.cumsum(group_size) - group_size
        # One list, group after group: the group's members, then its tied documents.
        doc_order = np.argsort(group_of, kind="stable")
        docs_in_group = np.bincount(group_of, minlength=groups)
        end = np.cumsum(group_size + docs_in_group)
        start = end - group_size - docs_in_group
        member_slot = np.repeat(start, group_size) + _positions(owner, groups)
        doc_slot = np.repeat(start + group_size, docs_in_group) + _positions(
            group_of[doc_order], groups
        )
        listed = np.empty(len(member_slot) + len(doc_slot), dtype=object)
        listed[member_slot] = self.ids[column]
        listed[doc_slot] = doc[doc_order]
        ids: list[str] = listed.tolist()
        is_member = np.ones(len(ids), dtype=np.bool_)
        is_member[doc_slot] = False
        # Each group sorted by id with Python's sort (fast on strings). It is stable, so each
        # document comes right after its own entry among the members.
        order = np.fromiter(
            _chain(
                sorted(range(a, b), key=ids.__getitem__)
                for a, b in zip(start.tolist(), end.tolist(), strict=True)
            ),
            np.int64,
            len(ids),
        )
        sorted_position = np.empty(len(order), dtype=np.int64)
        sorted_position[order] = np.arange(len(order), dtype=np.int64)
        doc_position = np.empty(len(doc), dtype=np.int64)
        doc_position[doc_order] = sorted_position[doc_slot]
        if ties == "trec_eval":  # members with a greater id come after the document
            members_so_far = np.cumsum(is_member[order])  # members among order[: i + 1]
            at_or_below = members_so_far[doc_position] - member_start[group_of]
            greater: IntArray = size - at_or_below
            return greater
        # Input order: members of the group listed before the document in the query's dict.
        member_of_slot = np.empty(len(ids), dtype=np.int64)
        member_of_slot[member_slot] = np.arange(len(member_slot), dtype=np.int64)
        own_column = column[member_of_slot[order[doc_position - 1]]]
        scale = int(column.max()) + 1
        by_column = np.sort(owner * scale + column)
        listed_before: IntArray = np.searchsorted(by_column, group_of * scale + own_column)
        return listed_before - member_start[group_of]


class _Groups(NamedTuple):
    """Tie groups of documents, numbered below ``bound``: per document, its group's number
    (``key``), its group's index among the groups in order (``of``) and how many of these
    documents are in its group (``sharing``); per group, one of its documents (``first``)."""

    key: IntArray
    bound: int
    of: IntArray
    sharing: IntArray
    first: IntArray

    @classmethod
    def of_keys(cls, key: IntArray, bound: int) -> _Groups:
        one = np.full(bound, -1, dtype=np.int64)
        one[key] = np.arange(len(key), dtype=np.int64)
        present = one >= 0
        index = np.cumsum(present) - 1
        count = np.bincount(key, minlength=bound)
        return cls(key, bound, index[key], count[key], one[present])

    def mixed(self, size: IntArray, grade: FloatArray) -> BoolArray:
        """Per document: whether its tie group (of ``size[p]`` documents) holds another grade
        than its own (a member of the group that is not among these documents, an unjudged
        one for instance, counts as another grade)."""
        one_grade = np.zeros(self.bound, dtype=np.float64)
        one_grade[self.key] = grade
        differs = np.zeros(self.bound, dtype=np.bool_)
        differs[self.key[grade != one_grade[self.key]]] = True
        mixed: BoolArray = (self.sharing < size) | differs[self.key]
        return mixed
