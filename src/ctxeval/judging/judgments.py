"""Judgments: what a ranked list of retrieved units earned, from which every metric derives.

One record is judged once, at the largest cut-off needed; every metric at every ``k`` is then a
prefix computation over the same judgments (greedy credit is decided rank by rank, so it never
changes when the list is cut shorter).

Credit is one-to-one and greedy by rank. Going down the ranking, retrieved unit *i* is a *hit*
with gain *g* for the highest grade *g* such that unit *i* and every earlier hit can still be
credited with distinct ground-truth units, each earlier hit with a unit of the grade it was
given. Earlier hits may swap which unit of their grade they hold (an augmenting path), so the
result depends on the ranking and the grades only, never on the order the ground truth is
listed in; a duplicate of an earlier hit is never a second hit, so no metric can exceed 1.
When every retrieved unit matches at most one ground-truth unit (ID mode, exact matching) this is
simply "a hit when it matches a ground-truth unit no earlier hit was credited with".

``credit="first_come"`` is the rule continuous-eval uses instead: a unit takes the best-graded
uncredited ground-truth unit it matches, the first listed among equals, and never moves an
earlier hit; it can depend on the order of the ground truth when one unit matches several.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ctxeval.foundation.arrays import BoolMatrix
from ctxeval.judging.ties import ranked_tie_ends
from ctxeval.records.checks import validate_scores

__all__ = [
    "Credit",
    "Judgments",
    "judge_ids",
    "judge_matrix",
    "scored_tie_ends",
    "with_tie_ends",
]

Credit = Literal["matching", "first_come"]


@dataclass(frozen=True, slots=True)
class Judgments:
    """The judged ranking of one record.

    - ``relevant[i]``: retrieved unit *i* matches some ground-truth unit (set precision);
    - ``hits[i]``: unit *i* is a one-to-one credited hit (rank metrics);
    - ``gains[i]``: the credited gain of unit *i* (its ground-truth grade; 0 when not a hit);
    - ``first_match[j]``: the first rank (0-based) whose unit matches relevant ground-truth unit
      *j*, or ``n`` when none does (set recall at any cut-off);
    - ``ideal``: the gains of every relevant ground-truth unit, highest first (IDCG);
    - ``chunk_ends``: for sentence units, the number of units in the first 1, 2, ... retrieved
      chunks, so that a cut-off ``k`` counts chunks; ``None`` when units are chunks;
    - ``nonrelevant[i]``: unit *i* was judged non-relevant (a qrels grade at least 0 and below
      the relevance level: bpref's non-relevant documents), and ``num_nonrelevant`` how many
      documents the qrels judge so; ``None`` when there are no explicit judgments (text mode:
      every retrieved unit that matches nothing counts as judged non-relevant, and the number
      of non-relevant units is unbounded);
    - ``tie_ends``: the rank (exclusive) where each group of equal run scores ends, in rank
      order, for NDCG's ``ties="average"``; ``None`` when no scores are known (every rank is a
      group of its own).
    """

    relevant: tuple[bool, ...]
    hits: tuple[bool, ...]
    gains: tuple[float, ...]
    first_match: tuple[int, ...]
    ideal: tuple[float, ...]
    chunk_ends: tuple[int, ...] | None = None
    nonrelevant: tuple[bool, ...] | None = None
    num_nonrelevant: int | None = None
    tie_ends: tuple[int, ...] | None = None

    @property
    def n(self) -> int:
        """Number of retrieved units judged."""
        return len(self.hits)

    @property
    def num_relevant(self) -> int:
        """Number of distinct relevant ground-truth units (*m* in design.md)."""
        return len(self.first_match)

    def cutoff(self, k: int | None) -> int:
        """How many retrieved units the cut-off ``k`` keeps (``k`` counts chunks)."""
        if k is None:
            return self.n
        if self.chunk_ends is None:
            return min(k, self.n)
        if k <= 0 or not self.chunk_ends:
            return 0
        return self.chunk_ends[min(k, len(self.chunk_ends)) - 1]


def judge_matrix(
    relevant: BoolMatrix,
    grades: Sequence[float] | None = None,
    *,
    chunk_ends: Sequence[int] | None = None,
    credit: Credit = "matching",
) -> Judgments:
    """Judge a relevance matrix (retrieved x distinct ground truth) with optional grades."""
    n, m = relevant.shape
    gt_grades = [1.0] * m if grades is None else [float(g) for g in grades]
    matches = [[j for j, hit in enumerate(row) if hit] for row in relevant.tolist()]
    if credit == "first_come" or all(len(columns) <= 1 for columns in matches):
        # With at most one match per row there is no choice to make: both rules agree.
        hits, gains = _credit_first_come(matches, gt_grades)
    else:
        hits, gains = _credit(matches, gt_grades)
    if n and m:
        any_row: list[bool] = np.asarray(relevant.any(axis=1)).tolist()
        first = np.where(relevant.any(axis=0), relevant.argmax(axis=0), n)
        relevant_rows = tuple(any_row)
        first_match: tuple[int, ...] = tuple(first.tolist())
    else:
        relevant_rows = (False,) * n
        first_match = (n,) * m
    return Judgments(
        relevant=relevant_rows,
        hits=tuple(hits),
        gains=tuple(gains),
        first_match=first_match,
        ideal=tuple(sorted(gt_grades, reverse=True)),
        chunk_ends=None if chunk_ends is None else tuple(chunk_ends),
    )


def _credit(matches: list[list[int]], grades: list[float]) -> tuple[list[bool], list[float]]:
    """Greedy-by-rank credit (see the module docstring) over ``matches[i]``: the ground-truth
    columns row *i* matches. Returns hits and gains per row."""
    owner: dict[int, int] = {}  # column -> the hit row credited with it
    held: dict[int, int] = {}  # hit row -> its column
    grade_of_row: dict[int, float] = {}
    hits: list[bool] = []
    gains: list[float] = []
    for i, columns in enumerate(matches):
        credited = False
        for grade in sorted({grades[c] for c in columns}, reverse=True):
            if _augment(i, grade, matches, grades, grade_of_row, owner, held):
                grade_of_row[i] = grade
                credited = True
                break
        hits.append(credited)
        gains.append(grade_of_row[i] if credited else 0.0)
    return hits, gains


def _credit_first_come(
    matches: list[list[int]], grades: list[float]
) -> tuple[list[bool], list[float]]:
    credited: set[int] = set()
    hits: list[bool] = []
    gains: list[float] = []
    for columns in matches:
        best = -1
        for column in columns:
            if column not in credited and (best < 0 or grades[column] > grades[best]):
                best = column
        hits.append(best >= 0)
        gains.append(grades[best] if best >= 0 else 0.0)
        if best >= 0:
            credited.add(best)
    return hits, gains


def _augment(
    start: int,
    grade: float,
    matches: list[list[int]],
    grades: list[float],
    grade_of_row: dict[int, float],
    owner: dict[int, int],
    held: dict[int, int],
) -> bool:
    """Find an alternating path from ``start`` (restricted to columns of ``grade``) to a free
    column, moving earlier hits only among columns of their own grade; apply it if found."""
    reached_from: dict[int, int] = {}  # column -> the row whose search reached it
    queue = [start]
    for row in queue:
        wanted = grade if row == start else grade_of_row[row]
        for column in matches[row]:
            if column in reached_from or grades[column] != wanted:
                continue
            reached_from[column] = row
            if column not in owner:
                while True:  # flip the path back to start
                    row_on_path = reached_from[column]
                    previous = held.get(row_on_path)
                    owner[column] = row_on_path
                    held[row_on_path] = column
                    if row_on_path == start:
                        return True
                    column = previous  # type: ignore[assignment]
            queue.append(owner[column])
    return False


def judge_ids(
    retrieved: Sequence[Hashable],
    qrels: Mapping[Hashable, float],
    *,
    relevance_level: float = 1,
    tie_ends: Sequence[int] | None = None,
) -> Judgments:
    """Judge a ranked list of ids against graded qrels (``{id: grade}``).

    An id is relevant (a hit, for the binary measures) when its grade is at least
    ``relevance_level`` (trec_eval's ``-l``); every positive grade is a gain for NDCG, as in
    trec_eval, whose NDCG ignores the level. Grade 0 means "judged non-relevant".
    """
    gain_of = {doc: float(grade) for doc, grade in qrels.items() if grade > 0}
    relevant_ids = [doc for doc, grade in qrels.items() if grade >= relevance_level]
    judged_nonrelevant = {doc for doc, grade in qrels.items() if 0 <= grade < relevance_level}
    position = {doc: j for j, doc in enumerate(relevant_ids)}
    n = len(retrieved)
    first_match = [n] * len(relevant_ids)
    relevant = [doc in position for doc in retrieved]
    if len(set(retrieved)) == n:
        # No repeated id (the usual case): every relevant id is a first-time hit.
        hits = relevant
        gains = [gain_of.get(doc, 0.0) for doc in retrieved]
        for i in itertools.compress(range(n), relevant):
            first_match[position[retrieved[i]]] = i
    else:
        seen: set[Hashable] = set()
        hits = []
        gains = []
        for i, doc in enumerate(retrieved):
            first_time = doc not in seen
            seen.add(doc)
            gains.append(gain_of.get(doc, 0.0) if first_time else 0.0)
            hit = first_time and relevant[i]
            hits.append(hit)
            if hit:
                first_match[position[doc]] = i
    nonrelevant = _first_occurrences_in(retrieved, judged_nonrelevant, unique=hits is relevant)
    return Judgments(
        relevant=tuple(relevant),
        hits=tuple(hits),
        gains=tuple(gains),
        first_match=tuple(first_match),
        ideal=tuple(sorted(gain_of.values(), reverse=True)),
        nonrelevant=tuple(nonrelevant),
        num_nonrelevant=len(judged_nonrelevant),
        tie_ends=None if tie_ends is None else tuple(tie_ends),
    )


def _first_occurrences_in(
    retrieved: Sequence[Hashable], chosen: set[Hashable], *, unique: bool
) -> list[bool]:
    """Per rank: the id is in ``chosen`` and did not appear at an earlier rank."""
    if unique:
        return [doc in chosen for doc in retrieved]
    seen: set[Hashable] = set()
    out = []
    for doc in retrieved:
        out.append(doc in chosen and doc not in seen)
        seen.add(doc)
    return out


def scored_tie_ends(
    scores: object,
    count: int,
    *,
    items_field: str,
    needed: bool,
    location: str | None = None,
    field: str = "retrieved_scores",
) -> tuple[int, ...] | None:
    """The groups of equal scores of a record's ``count`` retrieved items (where each ends,
    exclusive), when ``needed`` (a measure averages over ties) and the record has scores; the
    scores are checked whenever given. A list not ranked by its scores is an error when needed."""
    if scores is None:
        return None
    values = validate_scores(scores, field, count, items_field=items_field, location=location)
    return ranked_tie_ends(values, field, location=location) if needed else None


def with_tie_ends(judgments: Judgments, ends: Sequence[int] | None) -> Judgments:
    """``judgments`` with the groups of equal scores ``ends`` (over the whole retrieved list),
    a group cut by the end of the judged units ending there; unchanged when ``ends`` is None."""
    if ends is None:
        return judgments
    n = judgments.n
    return replace(judgments, tie_ends=(*(end for end in ends if end < n), n) if n else ())
