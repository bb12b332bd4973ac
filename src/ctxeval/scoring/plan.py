"""What a run scores: :class:`ScoringPlan` (the metrics and the cut-offs, checked together: every
column named once, budgets only where texts are, span units with their corpus) and the names of
its columns. :mod:`ctxeval.scoring.driver` applies a plan to batches of records."""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from ctxeval.cutoffs.budgets import BudgetPolicy, check_budget_policy
from ctxeval.cutoffs.cutoff import Budget, Cutoff, sort_cutoffs
from ctxeval.foundation.errors import (
    CORPUS_FIX,
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from ctxeval.metrics.base import MetricBase
from ctxeval.metrics.measures import Implementation, Measure, implementation
from ctxeval.text.locate import Locator
from ctxeval.text.sizes import TokenCounter

__all__ = ["Evaluated", "Ks", "ScoringPlan", "column_name", "sort_ks"]

Ks = tuple[Cutoff, ...]


@functools.lru_cache(maxsize=4096)
def column_name(key: str, k: Cutoff) -> str:
    """``"ndcg@5"``, ``"ndcg@300w"``, or plain ``"ndcg"`` for the whole retrieved list.

    Cached, so that a million per-query rows share one string per column instead of a copy each
    (interned: equal names from a worker process and this one are one object after unpickling).
    """
    return sys.intern(key if k is None else f"{key}@{k}")


def sort_ks(ks: Sequence[Cutoff]) -> Ks:
    """Distinct cut-offs: counts smallest first, then budgets, ``None`` (the whole list) last."""
    return sort_cutoffs(ks)


@dataclass(frozen=True)
class Evaluated:
    """One column of a metric: the measure at its cut-off."""

    k: Cutoff
    measure: Measure
    column: str


@dataclass(frozen=True)
class ScoringPlan:
    """Which metrics, at which cut-offs. ``ks`` holds ``None`` for "the whole list".

    A metric's own ``k`` combines with the run's cut-offs (both are evaluated); a measure given
    with its own cut-off (``"ndcg@10"``) is evaluated there only. A cut-off may be a budget
    (``Budget("w", 300)``), filled under ``budget_policy`` and counting tokens with
    ``token_counter`` (see :mod:`ctxeval.cutoffs.budgets`).
    """

    metrics: tuple[MetricBase, ...]
    ks: Ks
    implementation: Implementation = "core"
    locator: Locator | None = None  # the corpus that span metrics locate texts in
    budget_policy: BudgetPolicy = "whole"
    token_counter: str | TokenCounter = "rouge"

    def __post_init__(self) -> None:
        if not self.metrics:
            raise InvalidArgumentError("RetrievalEvaluator(metrics=...): give at least one metric")
        # A metric given twice (equal options) is evaluated once: its columns appear once.
        object.__setattr__(self, "metrics", tuple(dict.fromkeys(self.metrics)))
        object.__setattr__(self, "implementation", implementation(self.implementation))
        check_budget_policy("RetrievalEvaluator(budget_policy=...)", self.budget_policy)
        object.__setattr__(self, "_evaluated", {})
        seen: dict[str, MetricBase] = {}
        for metric in self.metrics:
            if not isinstance(metric, MetricBase):
                raise InvalidArgumentTypeError(
                    f"RetrievalEvaluator(metrics=...): {metric!r} is not a ctxeval metric; use "
                    "measure specs ('ndcg@10'), PrecisionRecallF1, RankedRetrievalMetrics or "
                    "their ID-mode versions"
                )
            micro = [
                column_name(f"micro_{key}", k)
                for k in self.set_ks(metric)
                for key in ("context_precision", "context_recall", "context_f1")
            ] + [f"micro_{entry.column}" for entry in self.span_entries(metric)]
            unit = metric.judging_pass(None).token_unit
            if unit is not None and not self.locator:
                raise InvalidArgumentError(
                    f"{metric!r}: span unit {unit!r} counts the tokens of the documents; "
                    "give the corpus (corpus=...), or use unit='chars'",
                    fixes=(CORPUS_FIX,),
                )
            for column in [entry.column for entry in self.evaluated(metric)] + micro:
                other = seen.get(column)
                if other is not None and other != metric:
                    raise InvalidArgumentError(
                        f"RetrievalEvaluator(metrics=...): {metric!r} and {other!r} both "
                        f"produce {column!r}; evaluate them in separate runs (or compare "
                        "runs)"
                    )
                seen[column] = metric
            budgets = [k for k in self.metric_ks(metric) if isinstance(k, Budget)]
            if budgets and metric.mode != "text":
                message = (
                    f"RetrievalEvaluator: the budget {budgets[0]} needs the chunks' texts, but "
                    f"{metric!r} scores chunk ids; give budgets for text data, or a number of "
                    "chunks"
                )
                raise InvalidArgumentError(
                    message, fixes=(Fix("k.budget", str(budgets[0]), message),)
                )

    def run_ks(self, metric: MetricBase) -> Ks:
        """The cut-offs of the measures that have none of their own."""
        if metric.k is None:
            return self.ks
        if self.ks == (None,):
            return (metric.k,)
        return sort_ks([*self.ks, metric.k])

    def evaluated(self, metric: MetricBase) -> tuple[Evaluated, ...]:
        """Every column of ``metric``, in order: by cut-off, then by its measures' order. A
        column asked for twice (``"ndcg"`` at k=2 and ``"ndcg@2"``) is computed once."""
        cache: dict[MetricBase, tuple[Evaluated, ...]] = self._evaluated  # type: ignore[attr-defined]
        if metric in cache:
            return cache[metric]
        out: dict[str, Evaluated] = {}
        measures = metric.measures()
        for k in self.run_ks(metric):
            for measure in measures:
                if measure.k is None:
                    at = measure.at(k)
                    out.setdefault(str(at), Evaluated(k, at, sys.intern(str(at))))
        for measure in measures:
            if measure.k is not None:
                out.setdefault(
                    str(measure), Evaluated(measure.k, measure, sys.intern(str(measure)))
                )
        cache[metric] = tuple(out.values())
        return cache[metric]

    def metric_ks(self, metric: MetricBase) -> Ks:
        """Every cut-off ``metric`` is evaluated at."""
        return sort_ks([entry.k for entry in self.evaluated(metric)])

    def set_ks(self, metric: MetricBase) -> Ks:
        """The cut-offs at which ``metric`` has set measures (micro averages are kept there)."""
        return sort_ks(
            [e.k for e in self.evaluated(metric) if e.measure.definition.family == "set"]
        )

    def span_entries(self, metric: MetricBase) -> tuple[Evaluated, ...]:
        """The columns of ``metric`` that are span measures."""
        return tuple(e for e in self.evaluated(metric) if e.measure.definition.family == "span")

    def span_ks(self, metric: MetricBase) -> Ks:
        """The cut-offs at which ``metric`` has span measures (their sums are kept there)."""
        return sort_ks([e.k for e in self.span_entries(metric)])

    def has_spans(self) -> bool:
        """Whether a metric of the plan measures spans (each record's are then located once)."""
        # Asked once per record: answered once per plan.
        spans: bool | None = self.__dict__.get("_spans")
        if spans is None:
            spans = any(metric.judging_pass(None).locates for metric in self.metrics)
            object.__setattr__(self, "_spans", spans)
        return spans

    def depth(self, metric: MetricBase) -> int | None:
        """How many retrieved items to judge so that every cut-off is a prefix."""
        return metric.judge_depth(self.metric_ks(metric))

    def columns(self) -> list[str]:
        return [entry.column for metric in self.metrics for entry in self.evaluated(metric)]

    def all_ks(self) -> Ks:
        """Every cut-off of every metric (the cut-offs whose context used is reported)."""
        return sort_ks([k for metric in self.metrics for k in self.metric_ks(metric)])

    def budgets(self) -> tuple[Budget, ...]:
        return tuple(k for k in self.all_ks() if isinstance(k, Budget))
