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
from typing import Literal, NamedTuple

from ctxeval.metrics.judgments import Judgments

__all__ = [
    "APCredit",
    "APDenominator",
    "Gain",
    "Ideal",
    "PrecisionDenominator",
    "SetCounts",
    "average_precision",
    "context_f1",
    "context_precision",
    "context_recall",
    "f1",
    "hit_rate",
    "hits",
    "ndcg",
    "precision",
    "recall",
    "reciprocal_rank",
    "set_counts",
]

APDenominator = Literal["relevant", "hits"]
APCredit = Literal["one_to_one", "any"]
Gain = Literal["linear", "exponential"]
Ideal = Literal["ground_truth", "retrieved"]
PrecisionDenominator = Literal["k", "retrieved"]


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


def reciprocal_rank(j: Judgments, k: int | None = None) -> float:
    """1 / rank of the first hit in the top ``k``; 0 when there is none."""
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


def ndcg(
    j: Judgments,
    k: int | None = None,
    *,
    gain: Gain = "linear",
    ideal: Ideal = "ground_truth",
) -> float:
    """DCG of the top ``k`` divided by the ideal DCG; 0 when the ideal DCG is 0.

    ``gain``: ``"linear"`` (the grade; trec_eval, ranx ``ndcg``) or ``"exponential"``
    (2^grade - 1; ranx ``ndcg_burges``). ``ideal``: ``"ground_truth"`` orders every relevant
    ground-truth unit by grade (trec_eval); ``"retrieved"`` reorders only the retrieved list.
    """
    n = j.cutoff(k)
    exponential = gain == "exponential"
    dcg = _dcg(j.gains[:n], exponential)
    if ideal == "ground_truth":
        best = list(j.ideal if k is None else j.ideal[:k])
    else:
        best = sorted(j.gains, reverse=True)[:n]
    idcg = _dcg(best, exponential)
    return dcg / idcg if idcg > 0 else 0.0
