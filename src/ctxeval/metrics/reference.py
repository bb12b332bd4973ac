"""The reference definition of every measure: a readable pure function of one record's
:class:`Judgments` and a cut-off ``k``.

This is one of the two places a measure is defined; the other is the vectorised core
(:mod:`ctxeval.metrics.core`), which every evaluation path runs. ``tests/metrics`` checks the two
against each other on every measure, option and cut-off (set ``CTXEVAL_IMPLEMENTATION=reference``
to run any evaluation through these functions instead).

``k=None`` means the whole judged list. Sums run rank by rank in plain floats, in the order
trec_eval accumulates them, so values agree with it to the last bit. The definitions are the ones
in docs/metrics.md; the options that switch between conventions are named there too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

from ctxeval.judging.judgments import Judgments

__all__ = [
    "APCredit",
    "APDenominator",
    "Gain",
    "Ideal",
    "PrecisionDenominator",
    "RecallRounding",
    "SetCounts",
    "Ties",
    "average_precision",
    "bpref",
    "context_f1",
    "context_precision",
    "context_recall",
    "dcg",
    "f1",
    "gm_map",
    "hit_rate",
    "hits",
    "iprec_at_recall",
    "ndcg",
    "num_q",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "power_by_squaring",
    "precision",
    "r_precision",
    "rbp",
    "recall",
    "recall_cutoff",
    "reciprocal_rank",
    "set_counts",
    "tie_averaged",
]

APDenominator = Literal["relevant", "hits"]
APCredit = Literal["one_to_one", "any"]
Gain = Literal["linear", "exponential"]
Ideal = Literal["ground_truth", "retrieved"]
PrecisionDenominator = Literal["k", "retrieved"]
Ties = Literal["ordered", "average"]
RecallRounding = Literal["trec_eval9", "trec_eval10"]


class SetCounts(NamedTuple):
    """Counts behind the set metrics at one cut-off (summed over queries for micro averages)."""

    relevant_retrieved: int  # retrieved units that match some ground truth (TP for precision)
    retrieved: int  # retrieved units considered (TP + FP)
    matched_ground_truth: int  # ground-truth units matched by some retrieved unit (TP for recall)
    ground_truth: int  # ground-truth units (TP + FN)


def set_counts(j: Judgments, k: int | None = None) -> SetCounts:
    n = j.cutoff(k)
    return SetCounts(
        relevant_retrieved=sum(j.relevant[:n]),
        retrieved=n,
        matched_ground_truth=sum(1 for first in j.first_match if first < n),
        ground_truth=j.num_relevant,
    )


def f1_score(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def context_precision(j: Judgments, k: int | None = None) -> float:
    """Fraction of the retrieved units (top ``k``) that match some ground-truth unit."""
    c = set_counts(j, k)
    return c.relevant_retrieved / c.retrieved if c.retrieved else 0.0


def context_recall(j: Judgments, k: int | None = None) -> float:
    """Fraction of ground-truth units matched by some retrieved unit in the top ``k``."""
    c = set_counts(j, k)
    return c.matched_ground_truth / c.ground_truth if c.ground_truth else 0.0


def context_f1(j: Judgments, k: int | None = None) -> float:
    return f1_score(context_precision(j, k), context_recall(j, k))


def precision(
    j: Judgments, k: int | None = None, *, precision_denominator: PrecisionDenominator = "k"
) -> float:
    """Hits in the top ``k`` divided by ``k`` (trec_eval ``P_k``) or by the units retrieved."""
    n = j.cutoff(k)
    found = sum(j.hits[:n])
    if precision_denominator == "k" and k is not None and j.chunk_ends is None:
        return found / k if k else 0.0  # k == 0: a budget that takes no chunk
    return found / n if n else 0.0


def recall(j: Judgments, k: int | None = None) -> float:
    """Hits in the top ``k`` divided by the number of relevant ground-truth units."""
    m = j.num_relevant
    return sum(j.hits[: j.cutoff(k)]) / m if m else 0.0


def hits(j: Judgments, k: int | None = None) -> float:
    """The number of hits in the top ``k`` (ranx ``hits``: relevant documents retrieved)."""
    return float(sum(j.hits[: j.cutoff(k)]))


def f1(j: Judgments, k: int | None = None) -> float:
    """The harmonic mean of ``precision`` (denominator ``k``) and ``recall`` at ``k`` (ranx
    ``f1``), written as ranx computes it: ``2 * ((p * r) / (p + r))``."""
    p, r = precision(j, k), recall(j, k)
    return 2 * ((p * r) / (p + r)) if p + r > 0 else 0.0


def hit_rate(j: Judgments, k: int | None = None) -> float:
    """1 when any of the top ``k`` is a hit, else 0 (trec_eval ``success_k``)."""
    return 1.0 if any(j.hits[: j.cutoff(k)]) else 0.0


def reciprocal_rank(j: Judgments, k: int | None = None, *, granular: bool = False) -> float:
    """1 / rank of the first hit in the top ``k``; 0 when there is none.

    ``granular=True``: llama-index's ``MRR(use_granular_mrr=True)``, the mean of 1 / rank over
    every retrieved unit in the top ``k`` that matches some ground truth (a repeated match
    counts again, as there); 0 when there is none.
    """
    if granular:
        ranks = [i + 1 for i in itertools.compress(range(j.cutoff(k)), j.relevant)]
        total = 0.0
        for rank in ranks:
            total += 1.0 / rank
        return total / len(ranks) if ranks else 0.0
    for i, hit in enumerate(j.hits[: j.cutoff(k)]):
        if hit:
            return 1.0 / (i + 1)
    return 0.0


def average_precision(
    j: Judgments,
    k: int | None = None,
    *,
    ap_denominator: APDenominator = "relevant",
    ap_credit: APCredit = "one_to_one",
) -> float:
    """Sum of precision at each hit in the top ``k``, divided by ``ap_denominator``.

    ``"relevant"``: the number of relevant ground-truth units (trec_eval, ranx, pytrec_eval);
    ``"hits"``: the number of hits retrieved (continuous-eval). ``ap_credit="any"`` counts every
    retrieved unit that matches some ground truth as a hit, even when an earlier one already
    matched the same item (continuous-eval's AP); it is only defined with ``"hits"``, where the
    result stays <= 1.
    """
    total = 0.0
    hits_so_far = 0
    marks = j.relevant if ap_credit == "any" else j.hits
    # Only the hit ranks contribute; compress walks to them in C (lists are mostly misses).
    for i in itertools.compress(range(j.cutoff(k)), marks):
        hits_so_far += 1
        total += hits_so_far / (i + 1)
    count = j.num_relevant if ap_denominator == "relevant" else hits_so_far
    return total / count if count else 0.0


def _dcg(gains: tuple[float, ...] | list[float], exponential: bool) -> float:
    total = 0.0
    for i in itertools.compress(range(len(gains)), gains):
        g = gains[i]
        total += (2.0**g - 1.0 if exponential else g) / math.log2(i + 2)
    return total


def tie_averaged(gains: Sequence[float], tie_ends: Sequence[int]) -> list[float]:
    """Each rank's gain replaced by the mean gain of its group of tied scores: the difference
    of the running sums (rank by rank) at the group's ends, over its size; an untied rank keeps
    its gain."""
    running = list(itertools.accumulate(gains, initial=0.0))
    out: list[float] = []
    start = 0
    for end in tie_ends:
        # a group of one keeps its gain exactly (a difference of running sums may not)
        mean = gains[start] if end - start == 1 else (running[end] - running[start]) / (end - start)
        out.extend([mean] * (end - start))
        start = end
    return out


def ndcg(
    j: Judgments,
    k: int | None = None,
    *,
    gain: Gain = "linear",
    ideal: Ideal = "ground_truth",
    ties: Ties = "ordered",
) -> float:
    """DCG of the top ``k`` divided by the ideal DCG; 0 when the ideal DCG is 0.

    ``gain``: ``"linear"`` (the grade; trec_eval, ranx ``ndcg``) or ``"exponential"``
    (2^grade - 1; ranx ``ndcg_burges``). ``ideal``: ``"ground_truth"`` orders every relevant
    ground-truth unit by grade (trec_eval); ``"retrieved"`` reorders only the retrieved list.
    ``ties="average"``: documents of equal run score share the mean of their gains (scikit-learn's
    ``ndcg_score``, torchmetrics); the ideal DCG is unchanged.
    """
    n = j.cutoff(k)
    exponential = gain == "exponential"
    if ties == "average" and j.tie_ends is not None:
        gains = [2.0**g - 1.0 if exponential and g else g for g in j.gains]
        dcg = _dcg(tie_averaged(gains, j.tie_ends)[:n], False)
    else:
        dcg = _dcg(j.gains[:n], exponential)
    if ideal == "ground_truth":
        best = list(j.ideal if k is None else j.ideal[:k])
    else:
        best = sorted(j.gains, reverse=True)[:n]
    idcg = _dcg(best, exponential)
    return dcg / idcg if idcg > 0 else 0.0


def dcg(j: Judgments, k: int | None = None, *, gain: Gain = "linear") -> float:
    """Discounted cumulative gain of the top ``k``, not normalised (ranx ``dcg``; with
    ``gain="exponential"``, ranx ``dcg_burges``)."""
    return _dcg(j.gains[: j.cutoff(k)], gain == "exponential")


def r_precision(j: Judgments, k: int | None = None) -> float:
    """Hits in the top R over R, R the number of relevant units (trec_eval ``Rprec``, ranx
    ``r-precision``); 0 when nothing is relevant."""
    m = j.num_relevant
    return sum(j.hits[: min(j.cutoff(k), m)]) / m if m else 0.0


def bpref(j: Judgments, k: int | None = None) -> float:
    """trec_eval's ``bpref``: for each hit in the top ``k``, 1 - min(N, R) / min(|judged
    non-relevant|, R), N the judged non-relevant units ranked above it, summed and divided by
    R. Units neither relevant nor judged are skipped. Without explicit judgments (text mode)
    every unit matching nothing is judged non-relevant and their number is taken as >= R."""
    m = j.num_relevant
    if not m:
        return 0.0
    nonrelevant = j.nonrelevant if j.nonrelevant is not None else [not r for r in j.relevant]
    bound = m if j.num_nonrelevant is None else min(j.num_nonrelevant, m)
    total = 0.0
    above = 0
    for i in range(j.cutoff(k)):
        if nonrelevant[i]:
            above += 1
        elif j.hits[i]:
            total += 1.0 - min(above, m) / bound if above > 0 else 1.0
    return total / m


def recall_cutoff(recall: float, relevant: int, rounding: RecallRounding = "trec_eval9") -> int:
    """The number of hits that reach ``recall`` out of ``relevant``, rounded as trec_eval 9
    and pytrec_eval do, ``(long) (recall * R + 0.9)``, or as trec_eval 10 does, ``lround``
    (to nearest, halves up)."""
    if rounding == "trec_eval9":
        return int(recall * relevant + 0.9)
    exact = recall * relevant
    whole = int(exact)
    return whole + (exact - whole >= 0.5)


def iprec_at_recall(
    j: Judgments,
    k: int | None = None,
    *,
    recall: float = 0.0,
    recall_rounding: RecallRounding = "trec_eval9",
) -> float:
    """Interpolated precision at a recall level (trec_eval ``iprec_at_recall_0.50``): the
    highest precision at any rank from the one where the level is reached down to ``k``; 0
    when the top ``k`` never reaches it. ``recall_rounding``: how the level becomes a number
    of hits (see :func:`recall_cutoff`)."""
    n = j.cutoff(k)
    wanted = recall_cutoff(recall, j.num_relevant, recall_rounding)
    precisions = []
    found = 0
    start = 0
    for i in range(n):
        found += j.hits[i]
        if j.hits[i] and found == wanted:
            start = i
        precisions.append(found / (i + 1))
    if n == 0 or wanted > found:
        return 0.0
    return max(precisions[start:])


def power_by_squaring(base: float, exponent: int) -> float:
    """``base ** exponent`` multiplied out by squaring, as numba computes a float to an integer
    power (so as ranx's RBP weights are): not always the last bit of Python's ``**``."""
    result = 1.0
    while True:
        if exponent & 1:
            result *= base
        exponent >>= 1
        if not exponent:
            return result
        base *= base


def rbp(j: Judgments, k: int | None = None, *, persistence: float = 0.8) -> float:
    """Rank-biased precision: (1 - p) * sum of grade_i * p^(i - 1) over the hits in the top
    ``k``, p the persistence (ranx ``rbp.95`` is p = 0.95; graded, as ranx)."""
    total = 0.0
    for i in itertools.compress(range(j.cutoff(k)), j.hits):
        total += j.gains[i] * power_by_squaring(persistence, i)
    return (1 - persistence) * total


def gm_map(j: Judgments, k: int | None = None) -> float:
    """Average precision (trec_eval's); its aggregate over queries is the geometric mean of
    max(AP, 1e-5) (trec_eval ``gm_map``)."""
    return average_precision(j, k)


def num_q(j: Judgments, k: int | None = None) -> float:
    """1 for every query: summed over queries, the number of queries (trec_eval ``num_q``)."""
    return 1.0


def num_ret(j: Judgments, k: int | None = None) -> float:
    """Units retrieved in the top ``k``; summed over queries (trec_eval ``num_ret``)."""
    return float(j.cutoff(k))


def num_rel(j: Judgments, k: int | None = None) -> float:
    """Relevant units; summed over queries (trec_eval ``num_rel``)."""
    return float(j.num_relevant)


def num_rel_ret(j: Judgments, k: int | None = None) -> float:
    """Hits in the top ``k``; summed over queries (trec_eval ``num_rel_ret``)."""
    return float(sum(j.hits[: j.cutoff(k)]))
