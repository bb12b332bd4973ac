"""The same metrics over chunk or document ids (ID mode).

Called as ``metric(retrieved_ids=[...], relevant_ids=[...])`` or with graded judgments,
``metric(retrieved_ids=[...], qrels={"c4": 2, "c9": 1, "c2": 0})`` (grade 0: judged non-relevant);
``retrieved_scores=[...]`` (one per id) serves ``ndcg(ties='average')``.
With ``ExactChunkMatch`` on the texts of those chunks, text mode gives the same numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ctxeval.cutoffs.cutoff import check_count
from ctxeval.foundation.errors import InvalidRecordError
from ctxeval.foundation.params import EmptyGroundTruthPolicy, check_relevance_level, own_init
from ctxeval.judging.judgments import Judgments, judge_ids, scored_tie_ends, with_tie_ends
from ctxeval.judging.passes import IdPass
from ctxeval.metrics import reference as F
from ctxeval.metrics.base import MetricBase, RankMetricsMixin, Scores, SetMetricsMixin
from ctxeval.records.checks import validate_ids, validate_qrels

__all__ = ["IDPrecisionRecallF1", "IDRankedRetrievalMetrics", "IdMetric", "judge_id_record"]


def judge_id_record(
    retrieved_ids: object,
    relevant_ids: object = None,
    qrels: object = None,
    *,
    k: int | None = None,
    relevance_level: float = 1,
    location: str | None = None,
    retrieved_scores: object = None,
    tie_groups: bool = False,
) -> Judgments:
    """Validate and judge one ID-mode record (top ``k`` ids); its ``retrieved_scores``, when
    given, are checked, and their groups of equal scores kept when ``tie_groups``."""
    retrieved = validate_ids(retrieved_ids, "retrieved_ids", location=location)
    ends = scored_tie_ends(
        retrieved_scores,
        len(retrieved),
        items_field="retrieved_ids",
        needed=tie_groups,
        location=location,
    )
    if (relevant_ids is None) == (qrels is None):
        raise InvalidRecordError(
            "give exactly one of relevant_ids (a list of relevant ids) or qrels "
            "({id: grade}); got " + ("both" if relevant_ids is not None else "neither"),
            field="relevant_ids",
            location=location,
        )
    judged = (
        validate_qrels(relevant_ids, "relevant_ids", location=location)
        if qrels is None
        else validate_qrels(qrels, "qrels", location=location)
    )
    if k is not None:
        retrieved = retrieved[:k]
    return with_tie_ends(judge_ids(retrieved, judged, relevance_level=relevance_level), ends)


class IdMetric(MetricBase):
    """A metric over chunk or document ids, judged against graded qrels."""

    mode = "id"

    def __init__(
        self,
        *,
        k: int | None = None,
        relevance_level: float = 1,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        super().__init__(
            k=check_count(type(self).__name__, k), empty_ground_truth=empty_ground_truth
        )
        self.relevance_level = check_relevance_level(type(self).__name__, relevance_level)

    def judging_pass(self, depth: int | None) -> IdPass:
        return IdPass(self.relevance_level, depth)

    def judge(
        self,
        retrieved_ids: object,
        relevant_ids: object = None,
        qrels: object = None,
        *,
        location: str | None = None,
        retrieved_scores: object = None,
    ) -> Judgments:
        return judge_id_record(
            retrieved_ids,
            relevant_ids,
            qrels,
            k=self._judge_k(),
            relevance_level=self.relevance_level,
            location=location,
            retrieved_scores=retrieved_scores,
            tie_groups=self.needs_tie_groups(),
        )

    def __call__(
        self,
        retrieved_ids: object = None,
        relevant_ids: object = None,
        qrels: object = None,
        *,
        retrieved_scores: object = None,
        **_other_fields: object,
    ) -> Scores:
        judged = self.judge(retrieved_ids, relevant_ids, qrels, retrieved_scores=retrieved_scores)
        return self.scores(judged)

    def _options(self) -> dict[str, Any]:
        opts = super()._options()
        if self.relevance_level != 1:
            opts["relevance_level"] = self.relevance_level
        return opts


@own_init
class IDPrecisionRecallF1(SetMetricsMixin, IdMetric):
    """Context precision, recall and F1 over ids: TP / (TP + FP), TP / (TP + FN)."""


@own_init
class IDRankedRetrievalMetrics(RankMetricsMixin, IdMetric):
    """AP, RR, NDCG, hit rate, P and R over ranked ids; options as RankedRetrievalMetrics."""

    def __init__(
        self,
        *,
        k: int | None = None,
        convention: str | None = None,
        ap_denominator: F.APDenominator | None = None,
        ap_credit: F.APCredit | None = None,
        gain: F.Gain | None = None,
        ideal: F.Ideal | None = None,
        precision_denominator: F.PrecisionDenominator | None = None,
        relevance_level: float = 1,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        super().__init__(
            k=check_count("IDRankedRetrievalMetrics", k),
            relevance_level=relevance_level,
            empty_ground_truth=empty_ground_truth,
        )
        self._init_rank_options(
            convention,
            ap_denominator=ap_denominator,
            ap_credit=ap_credit,
            gain=gain,
            ideal=ideal,
            precision_denominator=precision_denominator,
        )
        # An id matches one qrels entry, so there is no credit rule to choose.
        self.rank_options = replace(self.rank_options, credit="matching")
