"""What every metric object shares, in text mode and ID mode alike.

A metric object is a value: its options are validated at construction, it compares and hashes by
them, and its ``repr`` shows them. It judges a record once (``judge``) and computes its values
from the judgments at any cut-off (``scores``), which is how an evaluation derives every K from
one matching pass.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ctxeval.errors import InvalidRecordError
from ctxeval.metrics import functional as F
from ctxeval.metrics.conventions import RankOptions, resolve_rank_options
from ctxeval.metrics.judgments import Credit, Judgments
from ctxeval.validation import EmptyGroundTruthPolicy, check_k, check_policy

__all__ = ["MetricBase", "RankMetricsMixin", "Scores", "SetMetricsMixin"]

Scores = dict[str, float | None]


class MetricBase:
    keys: ClassVar[tuple[str, ...]]

    def __init__(
        self, *, k: int | None = None, empty_ground_truth: EmptyGroundTruthPolicy = "zero"
    ) -> None:
        owner = type(self).__name__
        self.k = check_k(owner, k)
        self.empty_ground_truth = check_policy(owner, empty_ground_truth)

    def _judge_k(self) -> int | None:
        """How many retrieved items to judge (all of them when a metric needs the whole list)."""
        return self.k

    def _credit_rule(self) -> Credit:
        """How hits are credited (only rank metrics have a choice)."""
        return "matching"

    def scores(
        self, judgments: Judgments, k: int | None = None, *, location: str | None = None
    ) -> Scores:
        """The metric's values from judgments, at ``k`` (default: the metric's own ``k``).

        A record with no relevant ground truth follows ``empty_ground_truth``: scored as it is
        ("zero": every value is 0, except that in ID mode NDCG still counts grades below
        ``relevance_level``, as trec_eval does), every value None ("skip": aggregates leave it
        out and count it), or an error.
        """
        k = self.k if k is None else k
        if judgments.num_relevant == 0:
            if self.empty_ground_truth == "error":
                raise InvalidRecordError(
                    "the record has no relevant ground truth, so recall is undefined; give the "
                    "query its ground truth, or pass empty_ground_truth='zero' or 'skip'",
                    field="ground_truth",
                    location=location,
                )
            if self.empty_ground_truth == "skip":
                return dict.fromkeys(self.keys, None)
        return self._scores(judgments, k)

    def _scores(self, judgments: Judgments, k: int | None) -> Scores:
        raise NotImplementedError

    # -- value semantics -------------------------------------------------------------------
    def _identity(self) -> tuple[Any, ...]:
        """Positional parts of the value (the strategy, in text mode)."""
        return ()

    def _options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if self.k is not None:
            opts["k"] = self.k
        if self.empty_ground_truth != "zero":
            opts["empty_ground_truth"] = self.empty_ground_truth
        return opts

    def __repr__(self) -> str:
        args = [repr(p) for p in self._identity()]
        args += [f"{name}={value!r}" for name, value in self._options().items()]
        return f"{type(self).__name__}({', '.join(args)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        assert isinstance(other, MetricBase)
        return other._identity() == self._identity() and other._options() == self._options()

    def __hash__(self) -> int:
        return hash((type(self), self._identity(), tuple(self._options().items())))


class SetMetricsMixin(MetricBase):
    """``context_precision``, ``context_recall`` and ``context_f1`` (order does not matter)."""

    keys: ClassVar[tuple[str, ...]] = ("context_precision", "context_recall", "context_f1")

    def _scores(self, judgments: Judgments, k: int | None) -> Scores:
        c = F.set_counts(judgments, k)
        p = c.relevant_retrieved / c.retrieved if c.retrieved else 0.0
        r = c.matched_ground_truth / c.ground_truth if c.ground_truth else 0.0
        return {"context_precision": p, "context_recall": r, "context_f1": F.f1_score(p, r)}


class RankMetricsMixin(MetricBase):
    """AP, RR, NDCG, hit rate, precision and recall, under a named convention."""

    keys: ClassVar[tuple[str, ...]] = (
        "average_precision",
        "reciprocal_rank",
        "ndcg",
        "hit_rate",
        "precision",
        "recall",
    )
    rank_options: RankOptions

    def _init_rank_options(self, convention: str | None, **overrides: Any) -> None:
        self.rank_options = resolve_rank_options(type(self).__name__, convention, **overrides)

    def _credit_rule(self) -> Credit:
        return self.rank_options.credit

    def _judge_k(self) -> int | None:
        # The "retrieved" ideal re-sorts the whole retrieved list, so judge all of it.
        return None if self.rank_options.ideal == "retrieved" else self.k

    def _scores(self, judgments: Judgments, k: int | None) -> Scores:
        o = self.rank_options
        return {
            "average_precision": F.average_precision(
                judgments, k, denominator=o.ap_denominator, credit=o.ap_credit
            ),
            "reciprocal_rank": F.reciprocal_rank(judgments, k),
            "ndcg": F.ndcg(judgments, k, gain=o.gain, ideal=o.ideal),
            "hit_rate": F.hit_rate(judgments, k),
            "precision": F.precision(judgments, k, denominator=o.precision_denominator),
            "recall": F.recall(judgments, k),
        }

    def _options(self) -> dict[str, Any]:
        opts = super()._options()
        default = RankOptions()
        for name in (
            "credit",
            "ap_denominator",
            "ap_credit",
            "gain",
            "ideal",
            "precision_denominator",
        ):
            value = getattr(self.rank_options, name)
            if value != getattr(default, name):
                opts[name] = value
        return opts
