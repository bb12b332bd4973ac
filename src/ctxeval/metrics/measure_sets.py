"""Metric objects built from measure specs: ``TextMeasures(["ndcg@10", "P@5"], RougeChunkMatch())``
and ``IDMeasures(["map", "recall@100"])``.

What ``RetrievalEvaluator(metrics=["ndcg@10", "context_recall@5"])`` and the CLI's ``-m`` build.
A measure given with ``@k`` is evaluated at that cut-off only; one without is evaluated at every
cut-off of the run. The keys of ``metric(**datum)`` are the measures' canonical specs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxeval.foundation.errors import CtxevalError, Fix, InvalidArgumentError
from ctxeval.foundation.params import EmptyGroundTruthPolicy, own_init
from ctxeval.judging.judgments import Credit
from ctxeval.metrics.base import MetricBase
from ctxeval.metrics.id_metrics import IdMetric, IDPrecisionRecallF1, IDRankedRetrievalMetrics
from ctxeval.metrics.measures import Measure, parse_measure
from ctxeval.metrics.text_metrics import TextMetric

__all__ = [
    "IDMeasures",
    "MeasureSetMixin",
    "TextMeasures",
    "at_relevance_level",
    "parse_measures",
]


def parse_measures(owner: str, measures: object) -> tuple[Measure, ...]:
    """Specs or Measures (one, or an iterable) as distinct canonical Measures, in order."""
    if isinstance(measures, str | Measure):
        measures = [measures]
    if not isinstance(measures, Iterable):
        raise InvalidArgumentError(
            f"{owner}(measures={measures!r}): give measure specs such as ['ndcg@10', 'P@5']"
        )
    parsed = tuple(dict.fromkeys(parse_measure(m) for m in measures))
    if not parsed:
        raise InvalidArgumentError(f"{owner}(measures=[]): give at least one measure")
    return parsed


class MeasureSetMixin(MetricBase):
    """A metric object that is any set of measures sharing one way of judging."""

    _chosen: tuple[Measure, ...]

    def _init_measures(self, measures: object) -> None:
        owner = type(self).__name__
        self._chosen = parse_measures(owner, measures)
        self._ties = any(m.averages_ties for m in self._chosen)
        spans = [str(m) for m in self._chosen if m.definition.family == "span"]
        if spans and owner != "SpanMeasures":
            raise InvalidArgumentError(
                f"{owner}: {', '.join(spans)} measure spans, not matches; use SpanMeasures for "
                "them (RetrievalEvaluator(metrics=[...]) and the CLI's -m split them for you)"
            )
        self.keys = tuple(str(m) for m in self._chosen)
        credits = {m.option("credit") for m in self._chosen if "credit" in m.definition.options}
        if len(credits) > 1:
            raise InvalidArgumentError(
                f"{owner}: the measures ask for different credit rules ({sorted(credits)}); a "
                "record is judged once per metric object: split them into two objects"
            )
        self._credit: Credit = credits.pop() if credits else "matching"

    def _measures(self) -> tuple[Measure, ...]:
        return self._chosen

    def credit_rule(self) -> Credit:
        return self._credit

    def needs_whole_list(self) -> bool:
        # A tie group is averaged over all its members, also those beyond the cut-off.
        return self._ties or any(
            "ideal" in m.definition.options and m.option("ideal") == "retrieved"
            for m in self._chosen
        )

    def needs_tie_groups(self) -> bool:
        return self._ties

    def _identity(self) -> tuple[Any, ...]:
        return (self.keys,)


@own_init
class TextMeasures(MeasureSetMixin, TextMetric):
    """Any measures over context texts, judged with one matching strategy (ROUGE-L chunk
    matching by default)."""

    def __init__(
        self,
        measures: object,
        matching_strategy: object = None,
        *,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        TextMetric.__init__(self, matching_strategy, empty_ground_truth=empty_ground_truth)
        self._init_measures(measures)
        ranked = [str(m) for m in self._chosen if m.definition.family == "rank"]
        if ranked and self.matching_strategy.unit != "chunk":
            spec, measures = self.matching_strategy.spec, ", ".join(ranked)
            fix = Fix(
                "matching_strategy.chunk",
                {"strategy": spec, "measures": measures},
                f"TextMeasures({spec}): {measures} rank retrieved chunks, but this strategy "
                "matches sentences; use a chunk strategy",
            )
            raise InvalidArgumentError(
                f"{fix.text} (rouge-chunk, exact-chunk, fuzzy-chunk) for rank measures, or only "
                "the context_* measures with sentence matching",
                fixes=(fix,),
            )

    def _identity(self) -> tuple[Any, ...]:
        return (self.keys, self.matching_strategy)


@own_init
class IDMeasures(MeasureSetMixin, IdMetric):
    """Any measures over chunk or document ids."""

    def __init__(
        self,
        measures: object,
        *,
        relevance_level: float = 1,
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        IdMetric.__init__(
            self, relevance_level=relevance_level, empty_ground_truth=empty_ground_truth
        )
        self._init_measures(measures)
        # An id matches one qrels entry, so both credit rules credit the same hits: a spec's
        # credit option changes nothing here (the column keeps the spec as it was asked for).
        self._credit = "matching"


def at_relevance_level(
    owner: str,
    metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None,
    level: float,
) -> Any:
    """The metrics of a TREC evaluation judged at relevance level ``level``: measure specs
    become one :class:`IDMeasures` at that level; metric objects carry their own level."""
    if level == 1:
        return metrics
    if metrics is None:
        return [
            IDPrecisionRecallF1(relevance_level=level),
            IDRankedRetrievalMetrics(relevance_level=level),
        ]
    items = [metrics] if isinstance(metrics, MetricBase | str | Measure) else list(metrics)
    objects = [m for m in items if isinstance(m, MetricBase)]
    if objects:
        raise InvalidArgumentError(
            f"{owner}(relevance_level={level!r}): give measure specs ('map', 'P@5'), or give "
            f"the level to the metric objects themselves ({objects[0]!r})"
        )
    return [IDMeasures(items, relevance_level=level)] if items else items


def tie_order_matters(
    metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None,
) -> bool:
    """Whether the order given to documents with equal scores can change a score of these
    metrics (None: the default measures): true of every measure but
    ``ndcg(ties='average')``, which averages over each group of tied documents. A spec that
    does not parse counts as mattering (the evaluator reports it)."""
    if metrics is None:
        return True
    items = [metrics] if isinstance(metrics, MetricBase | str | Measure) else list(metrics)
    for item in items:
        if isinstance(item, MetricBase):
            measures = item.measures()
        else:
            try:
                measures = (parse_measure(item),)
            except CtxevalError:  # the evaluator reports it, in its own words
                return True
        if not all(m.averages_ties for m in measures):
            return True
    return False
