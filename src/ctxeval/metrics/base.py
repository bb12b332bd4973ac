"""What every metric object shares, in text mode and ID mode alike.

A metric object is a value: its options are validated at construction, it compares and hashes by
them, and its ``repr`` shows them. It is a bundle of :class:`~ctxeval.metrics.measures.Measure`
values (``measures()``) plus how to judge a record (the matching strategy, or the relevance
level in ID mode). It judges a record once (``judge``) and computes its values from the
judgments at any cut-off (``scores``), which is how an evaluation derives every K from one
matching pass. The keys of ``metric(**datum)`` are its measures' names (continuous-eval's
shape); the columns of an evaluation are their canonical specs at each cut-off.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ctxeval.cutoffs.budgets import WHOLE_LIST
from ctxeval.cutoffs.cutoff import Budget, Cutoff, check_k
from ctxeval.foundation.errors import InvalidArgumentTypeError, InvalidRecordError
from ctxeval.foundation.params import EmptyGroundTruthPolicy, check_policy
from ctxeval.judging.judgments import Credit, Judgments
from ctxeval.judging.passes import JudgingPass
from ctxeval.metrics.conventions import RankOptions, resolve_rank_options
from ctxeval.metrics.measures import Measure, make_measure

__all__ = ["MetricBase", "RankMetricsMixin", "Scores", "SetMetricsMixin"]

Scores = dict[str, float | None]


class MetricBase:
    keys: tuple[str, ...]
    mode: ClassVar[str]  # "text" or "id": the records it scores

    def __init__(
        self, *, k: Cutoff = None, empty_ground_truth: EmptyGroundTruthPolicy = "zero"
    ) -> None:
        owner = type(self).__name__
        self.k = check_k(owner, k)
        self.empty_ground_truth = check_policy(owner, empty_ground_truth)

    def _judge_k(self) -> int | None:
        """How many retrieved items to judge (all of them when a metric needs the whole list,
        or its cut-off is a budget)."""
        return self.k if isinstance(self.k, int) else None

    def credit_rule(self) -> Credit:
        """How hits are credited (only rank metrics have a choice)."""
        return "matching"

    def judging_pass(self, depth: int | None) -> JudgingPass:
        """How this metric is judged when ``depth`` retrieved items are (None: all): metrics
        with equal passes share one judging of each record."""
        raise InvalidArgumentTypeError(f"{self!r} is not a metric the evaluator can run")

    def needs_whole_list(self) -> bool:
        """True when a value at any cut-off depends on the whole retrieved list."""
        return False

    def needs_tie_groups(self) -> bool:
        """True when a measure averages gains over equal retrieval scores
        (``ndcg(ties='average')``): records' ``retrieved_scores`` are then used."""
        return False

    def judge_depth(self, ks: tuple[Cutoff, ...]) -> int | None:
        """How many retrieved items to judge so that every cut-off in ``ks`` is a prefix
        (None: all of them; a budget may take all of them)."""
        counts = [k for k in ks if isinstance(k, int)]
        if len(counts) < len(ks) or self.needs_whole_list():
            return None
        return max(counts)

    def measures(self) -> tuple[Measure, ...]:
        """The measures this metric computes, in the order of ``keys``, without a cut-off."""
        cached: tuple[Measure, ...] | None = self.__dict__.get("_measures")
        if cached is None:
            cached = self._measures()
            self.__dict__["_measures"] = cached
        return cached

    def _measures(self) -> tuple[Measure, ...]:
        raise NotImplementedError

    def scores(
        self, judgments: Judgments, k: int | None = None, *, location: str | None = None
    ) -> Scores:
        """The metric's values from judgments, at ``k`` (default: the metric's own ``k``).

        A record with no relevant ground truth follows ``empty_ground_truth``: scored as it is
        ("zero": every value is 0, except that in ID mode NDCG still counts grades below
        ``relevance_level``, as trec_eval does), every value None ("skip": aggregates leave it
        out and count it), or an error.
        """
        cutoff: Cutoff = self.k if k is None else None if k == WHOLE_LIST else k
        if judgments.num_relevant == 0:
            if self.empty_ground_truth == "error":
                raise self.empty_ground_truth_error(location)
            if self.empty_ground_truth == "skip":
                return dict.fromkeys(self.keys, None)
        return self._scores(judgments, cutoff)

    def empty_ground_truth_error(self, location: str | None) -> InvalidRecordError:
        """The error of ``empty_ground_truth="error"`` for a record with no relevant item."""
        return InvalidRecordError(
            "the record has no relevant ground truth, so recall is undefined; give the "
            "query its ground truth, or pass empty_ground_truth='zero' or 'skip'",
            field="ground_truth",
            location=location,
        )

    def _scores(self, judgments: Judgments, k: Cutoff) -> Scores:
        return {
            key: (measure if measure.k is not None else measure.at(k))(judgments)
            for key, measure in zip(self.keys, self.measures(), strict=True)
        }

    # -- value semantics -------------------------------------------------------------------
    def _identity(self) -> tuple[Any, ...]:
        """Positional parts of the value (the strategy, in text mode)."""
        return ()

    def _options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if self.k is not None:
            opts["k"] = str(self.k) if isinstance(self.k, Budget) else self.k
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

    keys: tuple[str, ...] = ("context_precision", "context_recall", "context_f1")

    def _measures(self) -> tuple[Measure, ...]:
        return tuple(make_measure(key) for key in self.keys)


class RankMetricsMixin(MetricBase):
    """AP, RR, NDCG, hit rate, precision and recall, under a named convention."""

    keys: tuple[str, ...] = (
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

    def credit_rule(self) -> Credit:
        return self.rank_options.credit

    def needs_whole_list(self) -> bool:
        # The "retrieved" ideal re-sorts the whole retrieved list, so judge all of it.
        return self.rank_options.ideal == "retrieved"

    def _judge_k(self) -> int | None:
        return None if self.needs_whole_list() else super()._judge_k()

    def _measures(self) -> tuple[Measure, ...]:
        o = self.rank_options
        return (
            make_measure(
                "average_precision",
                credit=o.credit,
                ap_denominator=o.ap_denominator,
                ap_credit=o.ap_credit,
            ),
            make_measure("reciprocal_rank"),
            make_measure("ndcg", credit=o.credit, gain=o.gain, ideal=o.ideal),
            make_measure("hit_rate"),
            make_measure(
                "precision", credit=o.credit, precision_denominator=o.precision_denominator
            ),
            make_measure("recall", credit=o.credit),
        )

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
