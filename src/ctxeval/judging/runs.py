"""Judging a whole ID-mode run at once, in numpy, equal to the per-query path bit for bit.

:func:`~ctxeval.metrics.runs.evaluate_run` can rank and judge one query at a time in Python. For
the common input, ``{docid: float score}`` dicts with string ids, this module does the same work
for all queries together:

1. every query's scores go into one array, their types checked in the same pass; each query's
   scores are sorted at once (one 2-D ``np.sort``);
2. only retrieved documents with a positive grade can earn anything, so only their ranks are
   needed: the number of documents scoring higher (a vectorised binary search in each query's
   sorted scores) plus, when others share the score, the number of those the tie rule puts first
   (docid descending as strings, as trec_eval, or input order): by comparing the document with
   each member of its tie group, or, when groups are large and hold many graded documents, by
   sorting each group's ids once (memory stays bounded either way);
3. those ranks and grades become the padded :class:`~ctxeval.metrics.core.BatchJudgments` that
   every other path emits too (in blocks of queries, so memory stays bounded), and the
   vectorised core computes every measure from it, with the same floats as the reference.

Anything else (ranked lists, integer ids, non-numeric or non-finite scores, integer scores that
floats cannot hold exactly, invalid qrels) is not handled here: :func:`judge_run` returns
``None`` and the caller takes its per-query path, which also produces the error messages.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.judging.batch import NEVER, BatchJudgments

__all__ = ["RunJudgments", "judge_run", "plain_judged", "plain_scored"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_chain = itertools.chain.from_iterable
_SCORE_TYPES = frozenset({float, np.float64, int})
# Integer scores below this convert to floats exactly, so they keep their order and their ties.
_EXACT_INTEGERS = 2.0**53
_GRADE_TYPES = frozenset({int, float})
_JUDGED_ID_TYPES = frozenset({str, int})
# Queries whose scores are type-checked and copied together: large enough to amortise the
# Python calls, small enough that the second pass over the score objects finds them in cache.
_CHUNK = 64


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
    """All scores in query order, or None unless every one passes :func:`plain_scored`."""
    out = np.empty(total, dtype=np.float64)
    start = 0
    integers = False
    for first in range(0, len(scored), _CHUNK):
        values = list(_chain(map(dict.values, scored[first : first + _CHUNK])))
        n = len(values)
        if operator.countOf(map(type, values), float) != n:
            types = set(map(type, values))
            if not types <= _SCORE_TYPES:
                return None
            integers = integers or int in types
        try:
            out[start : start + n] = values
        except OverflowError:
            return None
        start += n
    if not np.isfinite(out).all():
        return None
    if integers and not (np.abs(out) < _EXACT_INTEGERS).all():
        return None
    return out


def _grades(judged: Sequence[dict[Any, float]], total: int) -> FloatArray | None:
    """All grades in query order, or None unless every one is a finite int or float and every
    id a string or an integer."""
    if operator.countOf(map(type, judged), dict) != len(judged):
        return None
    if operator.countOf(map(type, _chain(judged)), str) != total and not (
        set(map(type, _chain(judged))) <= _JUDGED_ID_TYPES
    ):
        return None
    if operator.countOf(map(type, _chain(map(dict.values, judged))), int) != total and not (
        set(map(type, _chain(map(dict.values, judged)))) <= _GRADE_TYPES
    ):
        return None
    try:
        grades = np.fromiter(_chain(map(dict.values, judged)), np.float64, total)
    except OverflowError:
        return None
    return grades if np.isfinite(grades).all() else None


def _string_ids(scored: Sequence[dict[str, float]], total: int) -> bool:
    return operator.countOf(map(type, _chain(scored)), str) == total


def _retrieved_scores(
    scored: Sequence[dict[str, float]], judged: Sequence[dict[Any, float]], total: int
) -> FloatArray:
    """The score of each judged document in its query's run, NaN when it was not retrieved
    (run scores are finite, so NaN means only that)."""
    missing = itertools.repeat(math.nan)
    return np.fromiter(
        _chain(map(s.get, j, missing) for s, j in zip(scored, judged, strict=True)),
        np.float64,
        total,
    )


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
    in the qrels, by query then grade descending: ``ideal_query``, ``ideal_grade``.
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


def _by_grade_descending(query: IntArray, grade: FloatArray) -> tuple[IntArray, FloatArray]:
    """Entries grouped by query, re-ordered by grade descending within each query."""
    if len(grade) == 0:
        return query, grade
    distinct, code = np.unique(grade, return_inverse=True)
    order = np.argsort(query * len(distinct) + (len(distinct) - 1 - code), kind="stable")
    return query[order], grade[order]


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
    :func:`plain_judged` (checked here over the whole run at once). ``judged_nonrelevant``:
    rank the retrieved documents of grade 0 too, for bpref (False: they earn nothing in any
    other measure, and the batches then hold no judged non-relevant ranks)."""
    queries = len(scored)
    lengths = np.fromiter(map(len, scored), np.int64, queries)
    total = int(lengths.sum())
    if operator.countOf(map(type, scored), dict) != queries:
        return None
    scores = _scores(scored, total)
    if scores is None or not _string_ids(scored, total):
        return None
    judged_lengths = np.fromiter(map(len, judged), np.int64, queries)
    judged_total = int(judged_lengths.sum())
    grades = _grades(judged, judged_total)
    if grades is None:
        return None

    judged_query = np.repeat(np.arange(queries, dtype=np.int64), judged_lengths)
    found = _retrieved_scores(scored, judged, judged_total)
    # Judged documents retrieved: those with a positive grade earn gains and hits; those of
    # grade 0 (and below the level) are the judged non-relevant ones bpref counts.
    pair = np.flatnonzero(
        ((grades >= 0) if judged_nonrelevant else (grades > 0)) & ~np.isnan(found)
    )
    pair_query, pair_score, pair_grade = judged_query[pair], found[pair], grades[pair]

    positive = grades > 0
    ideal_query, ideal_grade = _by_grade_descending(judged_query[positive], grades[positive])
    num_relevant = np.bincount(judged_query[grades >= relevance_level], minlength=queries)
    below_level = (grades >= 0) & (grades < relevance_level)
    num_nonrelevant = (
        np.bincount(judged_query[below_level], minlength=queries) if judged_nonrelevant else None
    )
    tied = np.zeros(queries, dtype=np.bool_)

    rank = np.zeros(len(pair), dtype=np.int64)
    if len(pair):
        width = int(lengths.max())
        sorted_scores = _SortedScores(scores, lengths, width)
        length = lengths[pair_query]
        pair_base = sorted_scores.base[pair_query]
        below = _search(sorted_scores.ordered, pair_base, length, pair_score, right=False)
        at_or_below = _search(sorted_scores.ordered, pair_base, length, pair_score, right=True)
        rank = length - at_or_below
        equal = at_or_below - below
        shared = np.flatnonzero(equal > 1)
        if len(shared):
            # Documents that share a positive-graded document's score: the tie rule decides
            # how many of them rank before it, and whether the tie changes a score.
            keys = np.fromiter(_chain(judged), object, judged_total)
            rank[shared] += _tied_before(
                scored,
                lengths,
                sorted_scores,
                query=pair_query[shared],
                below=below[shared],
                size=equal[shared],
                doc=keys[pair[shared]],
                ties=ties,
            )
            group = pair_query[shared] * (width + 1) + below[shared]
            same = _count_same(group, pair_grade[shared])
            # Only a positive grade's tie can change a score (grade 0 and unjudged are alike).
            straddles = (equal[shared] > same) & (pair_grade[shared] > 0)
            tied[pair_query[shared][straddles]] = True
        order = np.argsort(pair_query * (width + 1) + rank, kind="stable")
        pair_query, rank, pair_grade = pair_query[order], rank[order], pair_grade[order]

    return RunJudgments(
        lengths=lengths,
        num_relevant=num_relevant,
        num_nonrelevant=num_nonrelevant,
        tied=tied,
        pair_query=pair_query,
        pair_rank=rank,
        pair_grade=pair_grade,
        ideal_query=ideal_query,
        ideal_grade=ideal_grade,
        relevance_level=relevance_level,
    )


class _SortedScores:
    """Each query's scores sorted ascending, all in one array: query *q*'s are
    ``ordered[base[q] : base[q] + lengths[q]]``."""

    def __init__(self, scores: FloatArray, lengths: IntArray, width: int) -> None:
        queries, total = len(lengths), len(scores)
        self._lengths = lengths
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

    def column_index(self, involved: IntArray) -> tuple[IntArray, IntArray]:
        """For the queries ``involved``: ``(columns, start)`` such that the document at sorted
        position *s* of ``involved[r]`` is at position ``columns[start[r] + s]`` in its query's
        dict (which one it is among equal scores is arbitrary but consistent)."""
        if self._flat_order is not None:
            query = np.repeat(np.arange(len(self._lengths), dtype=np.int64), self._lengths)
            return self._flat_order - self._starts[query], self._starts[involved]
        width = self._padded.shape[1]
        order = np.argsort(self._padded[involved], axis=1).ravel().astype(np.int64)
        return order, np.arange(len(involved), dtype=np.int64) * width


def _tied_before(
    scored: Sequence[dict[str, float]],
    lengths: IntArray,
    sorted_scores: _SortedScores,
    *,
    query: IntArray,
    below: IntArray,
    size: IntArray,
    doc: npt.NDArray[np.object_],
    ties: str,
) -> IntArray:
    """For each document *p* that shares its score with others (``size[p]`` documents of
    query ``query[p]``, sorted positions ``below[p]`` onwards: its tie group), how many of them
    the tie rule ranks before it."""
    involved, local = np.unique(query, return_inverse=True)
    columns, column_start = sorted_scores.column_index(involved)
    involved_lengths = lengths[involved]
    id_start = np.cumsum(involved_lengths) - involved_lengths
    ids = np.fromiter(
        _chain(map(scored.__getitem__, involved.tolist())), object, int(involved_lengths.sum())
    )
    tie = _TieGroups(ids, columns, first=column_start[local] + below, id_start=id_start[local])
    group = query * (int(lengths.max()) + 1) + below
    _, first_of_group, group_of = np.unique(group, return_index=True, return_inverse=True)
    if _compare_each(int(size.sum()), size[first_of_group]):
        return tie.count_each(size, doc, ties)
    return tie.count_sorted(size, doc, ties, first_of_group, group_of)


def _compare_each(comparisons: int, group_size: IntArray) -> bool:
    """Whether comparing each tied document with every member of its group (``comparisons``
    in all) is cheaper than sorting each group by id once (~size * log2(size) comparisons per
    group). Measured: the two cost the same at ~0.5-1.4 tied documents per log2(group size)."""
    sorting = float((group_size * np.log2(group_size + 1)).sum())
    return comparisons <= 0.75 * sorting


class _TieGroups:
    """The members of tie groups: the group of pair *p* is ``size[p]`` documents whose columns
    (positions in their query's dict) are ``columns[first[p]:][:size[p]]`` and whose ids are
    ``ids[id_start[p] + column]``."""

    # Members compared at once when each document is compared with its whole group: bounds
    # the memory (tens of bytes per member) whatever the size of the groups.
    CHUNK = 1 << 20

    def __init__(
        self,
        ids: npt.NDArray[np.object_],
        columns: IntArray,
        *,
        first: IntArray,
        id_start: IntArray,
    ) -> None:
        self.ids = ids
        self.columns = columns
        self.first = first
        self.id_start = id_start

    def members(self, pairs: IntArray, size: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """For the groups of ``pairs``: each member's owner (index into ``pairs``), column and
        index into ``ids``."""
        owner = np.repeat(np.arange(len(pairs), dtype=np.int64), size)
        offset = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(size) - size, size)
        pair = pairs[owner]
        column = self.columns[self.first[pair] + offset]
        return owner, column, self.id_start[pair] + column

    def count_each(self, size: IntArray, doc: npt.NDArray[np.object_], ties: str) -> IntArray:
        """Compare each document with every member of its group, a chunk of pairs at a time."""
        before = np.zeros(len(size), dtype=np.int64)
        ends = np.cumsum(size)
        start = 0
        while start < len(size):
            limit = ends[start] + self.CHUNK
            stop = max(int(np.searchsorted(ends, limit, side="right")), start + 1)
            pairs = np.arange(start, stop, dtype=np.int64)
            owner, column, index = self.members(pairs, size[start:stop])
            member = self.ids[index]
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
        owner, column, index = self.members(first_of_group, group_size)
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
        listed[member_slot] = self.ids[index]
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


def _count_same(group: IntArray, grade: FloatArray) -> IntArray:
    """For each entry, how many entries share its group and its grade (itself included)."""
    _, code = np.unique(grade, return_inverse=True)
    key = group * (int(code.max(initial=0)) + 1) + code
    _, index, counts = np.unique(key, return_inverse=True, return_counts=True)
    same: IntArray = counts[index]
    return same
