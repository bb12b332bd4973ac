"""Metric objects over context texts, called as ``metric(**datum)``.

``PrecisionRecallF1(RougeChunkMatch())(retrieved_context=[...], ground_truth_context=[...])``
returns ``{"context_precision": ..., "context_recall": ..., "context_f1": ...}``. Extra fields
in the datum (question, answer, metadata) are accepted and ignored, so a whole dataset row can
be passed as it is; ``retrieved_scores`` (one per context), when given, is checked and serves
``ndcg(ties='average')``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ctxeval.cutoffs.budgets import budget_cut
from ctxeval.cutoffs.cutoff import Budget
from ctxeval.foundation.errors import EmptyTokensWarning, Fix, InvalidArgumentError
from ctxeval.foundation.params import EmptyGroundTruthPolicy, own_init
from ctxeval.judging.judgments import (
    Credit,
)
from ctxeval.judging.passes import TextPass
from ctxeval.judging.texts import JudgedRecord, judge_texts
from ctxeval.matching.base import MatchingStrategy
from ctxeval.matching.resolve import as_strategy
from ctxeval.matching.rouge.strategies import RougeChunkMatch
from ctxeval.metrics import reference as F
from ctxeval.metrics.base import MetricBase, RankMetricsMixin, Scores, SetMetricsMixin
from ctxeval.records.checks import validate_texts

__all__ = [
    "PrecisionRecallF1",
    "RankedRetrievalMetrics",
    "TextMetric",
    "warn_tokenless",
]


_UNICODE = Fix("tokenizer", "unicode", "RougeChunkMatch(tokenizer='unicode')")


def warn_tokenless(tokenless: Sequence[str], strategy: MatchingStrategy, stacklevel: int) -> None:
    """One warning with the count of non-empty texts that produced no tokens."""
    if not tokenless:
        return
    tokenizer = getattr(strategy, "tokenizer", None)
    hint = (
        "; for text in other scripts than Latin use RougeChunkMatch(tokenizer='unicode')"
        if getattr(tokenizer, "spec", "").startswith("rouge")
        else ""
    )
    sample = tokenless[0] if len(tokenless[0]) <= 60 else tokenless[0][:57] + "..."
    warnings.warn(
        EmptyTokensWarning(
            f"{len(tokenless)} text(s) with letters or digits produced no tokens with "
            f"{strategy.spec} and cannot match anything (first: {sample!r}){hint}",
            fixes=(_UNICODE,) if hint else (),
        ),
        stacklevel=stacklevel + 1,
    )


class TextMetric(MetricBase):
    """A metric over context texts: its matching strategy decides which retrieved units match
    which ground-truth units."""

    mode = "text"

    def __init__(
        self,
        matching_strategy: object = None,
        *,
        k: int | None = None,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        super().__init__(k=k, empty_ground_truth=empty_ground_truth)
        self.matching_strategy: MatchingStrategy = (
            RougeChunkMatch()
            if matching_strategy is None
            else as_strategy(matching_strategy, owner=type(self).__name__)
        )

    def judge(
        self,
        retrieved_context: object,
        ground_truth_context: object,
        *,
        location: str | None = None,
        retrieved_scores: object = None,
    ) -> JudgedRecord:
        """Match and judge one record (the step every K of an evaluation shares)."""
        return judge_texts(
            self.matching_strategy,
            retrieved_context,
            ground_truth_context,
            k=self._judge_k(),
            location=location,
            credit=self.credit_rule(),
            retrieved_scores=retrieved_scores,
            tie_groups=self.needs_tie_groups(),
        )

    def __call__(
        self,
        retrieved_context: object = None,
        ground_truth_context: object = None,
        *,
        retrieved_scores: object = None,
        **_other_fields: object,
    ) -> Scores:
        record = self.judge(
            retrieved_context, ground_truth_context, retrieved_scores=retrieved_scores
        )
        warn_tokenless(record.tokenless, self.matching_strategy, stacklevel=2)
        return self.scores(record.judgments, self._budget_chunks(retrieved_context))

    def judging_pass(self, depth: int | None) -> TextPass:
        return TextPass(self.matching_strategy, self.credit_rule(), depth)

    def _budget_chunks(self, retrieved_context: object) -> int | None:
        """At a budget, the number of whole chunks it takes from this record (counting tokens
        with the ROUGE tokenizer; an evaluation offers other counters and policies)."""
        if not isinstance(self.k, Budget):
            return None
        texts = [
            t for t in validate_texts(retrieved_context, "retrieved_context") if isinstance(t, str)
        ]
        return int(budget_cut([texts], self.k).equivalent_k()[0])

    def _identity(self) -> tuple[Any, ...]:
        return (self.matching_strategy,)


@own_init
class PrecisionRecallF1(SetMetricsMixin, TextMetric):
    """Context precision, recall and F1 of the retrieved contexts (order does not matter).

    - precision: retrieved units that match some ground-truth unit / retrieved units;
    - recall: ground-truth units matched by some retrieved unit / distinct ground-truth units;
    - F1: their harmonic mean.

    ``k`` keeps the top ``k`` retrieved contexts. Values never exceed 1: ground-truth duplicates
    are removed and each ground-truth unit counts once however often it is matched.
    """


@own_init
class RankedRetrievalMetrics(RankMetricsMixin, TextMetric):
    """Rank-aware metrics of the retrieved contexts: AP, RR, NDCG, hit rate, P and R (at ``k``).

    Credit is one-to-one and greedy by rank (see :mod:`ctxeval.judging.judgments`). Conventions
    where tools disagree are options, preset by ``convention`` ("trec_eval" by default, "ranx",
    "continuous_eval"); an explicit option overrides the preset:

    - ``ap_denominator``: "relevant" (trec_eval, ranx) or "hits" (continuous-eval);
    - ``gain``: "linear" (trec_eval, ranx ndcg) or "exponential" (ranx ndcg_burges);
    - ``ideal``: "ground_truth" (trec_eval) or "retrieved" (the retrieved list re-sorted);
    - ``precision_denominator``: "k" (trec_eval P_k) or "retrieved" (units actually retrieved).

    Ground-truth items may carry grades, ``{"text": ..., "grade": 2}``, used as NDCG gains.
    """

    def __init__(
        self,
        matching_strategy: object = None,
        *,
        k: int | None = None,
        convention: str | None = None,
        ap_denominator: F.APDenominator | None = None,
        ap_credit: F.APCredit | None = None,
        credit: Credit | None = None,
        gain: F.Gain | None = None,
        ideal: F.Ideal | None = None,
        precision_denominator: F.PrecisionDenominator | None = None,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        super().__init__(matching_strategy, k=k, empty_ground_truth=empty_ground_truth)
        if self.matching_strategy.unit != "chunk":
            raise InvalidArgumentError(
                f"RankedRetrievalMetrics({self.matching_strategy.spec}): rank metrics need "
                "chunk-level matching, because a rank belongs to a retrieved chunk, not to a "
                "sentence; use RougeChunkMatch/ExactChunkMatch here, or PrecisionRecallF1 for "
                "sentence-level matching"
            )
        self._init_rank_options(
            convention,
            ap_denominator=ap_denominator,
            ap_credit=ap_credit,
            credit=credit,
            gain=gain,
            ideal=ideal,
            precision_denominator=precision_denominator,
        )
