"""Scoring one record with several metrics at several cut-offs, matching it only once.

This is the unit of work the evaluator ships to worker processes: a :class:`ScoringPlan` (the
metrics and cut-offs, picklable) applied to a batch of :class:`~ctxeval.io.records.Record`. Every
metric that shares a strategy shares one matching pass, judged at the largest cut-off; every
cut-off is then a prefix of the same judgments.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxeval.errors import CtxevalError, InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.matching.base import BoolMatrix, as_matches
from ctxeval.matching.builtin import BuiltinStrategy
from ctxeval.metrics.base import MetricBase, SetMetricsMixin
from ctxeval.metrics.batched import (
    BatchJudgments,
    judge_batch,
    rank_values,
    set_values,
    stack_judgments,
)
from ctxeval.metrics.functional import SetCounts, set_counts
from ctxeval.metrics.id_metrics import _IdMetric
from ctxeval.metrics.judgments import Judgments, judge_ids
from ctxeval.metrics.text_metrics import _TextMetric, ground_truth_units, judge_texts
from ctxeval.records import Record, RecordError
from ctxeval.validation import GradedText

__all__ = ["RowResult", "ScoringPlan", "column_name", "score_batch"]

Ks = tuple[int | None, ...]


@functools.lru_cache(maxsize=4096)
def column_name(key: str, k: int | None) -> str:
    """``"ndcg@5"``, or plain ``"ndcg"`` for the whole retrieved list.

    Cached, so that a million per-query rows share one string per column instead of a copy each
    (interned: equal names from a worker process and this one are one object after unpickling).
    """
    return sys.intern(key if k is None else f"{key}@{k}")


@dataclass(frozen=True)
class ScoringPlan:
    """Which metrics, at which cut-offs. ``ks`` holds ``None`` for "the whole list"."""

    metrics: tuple[MetricBase, ...]
    ks: Ks

    def __post_init__(self) -> None:
        if not self.metrics:
            raise InvalidArgumentError("RetrievalEvaluator(metrics=...): give at least one metric")
        # A metric given twice (equal options) is evaluated once: its columns appear once.
        object.__setattr__(self, "metrics", tuple(dict.fromkeys(self.metrics)))
        seen: dict[str, MetricBase] = {}
        for metric in self.metrics:
            if not isinstance(metric, MetricBase):
                raise InvalidArgumentTypeError(
                    f"RetrievalEvaluator(metrics=...): {metric!r} is not a ctxeval metric; use "
                    "PrecisionRecallF1, RankedRetrievalMetrics or their ID-mode versions"
                )
            for key in metric.keys:
                if key in seen and seen[key] != metric:
                    raise InvalidArgumentError(
                        f"RetrievalEvaluator(metrics=...): {metric!r} and {seen[key]!r} both "
                        f"produce {key!r}; evaluate them in separate runs (or compare runs)"
                    )
                seen[key] = metric

    def metric_ks(self, metric: MetricBase) -> Ks:
        """The cut-offs a metric is evaluated at: the run's, or the metric's own ``k``."""
        if self.ks == (None,) and metric.k is not None:
            return (metric.k,)
        return self.ks

    def columns(self) -> list[str]:
        return [
            column_name(key, k)
            for metric in self.metrics
            for k in self.metric_ks(metric)
            for key in metric.keys
        ]


@dataclass(frozen=True, slots=True)
class RowResult:
    """The scores of one record, plus what aggregation needs."""

    index: int
    id: str
    metadata: dict[str, Any]
    values: dict[str, float | None]
    # (metric position, k) -> counts behind the set metrics, for micro averages
    counts: dict[tuple[int, int | None], SetCounts]
    num_relevant: int
    num_retrieved: int
    empty_ground_truth: bool
    tokenless: int = 0
    skipped_values: bool = field(default=False)


def _depth(plan: ScoringPlan, metric: MetricBase) -> int | None:
    """How many retrieved items to judge so that every cut-off is a prefix."""
    ks = plan.metric_ks(metric)
    options = getattr(metric, "rank_options", None)
    if None in ks or (options is not None and options.ideal == "retrieved"):
        return None  # the whole list: no cut-off, or an ideal built from all of it
    return max(k for k in ks if k is not None)


def _judge(
    plan: ScoringPlan, record: Record, metric: MetricBase, cache: dict[Hashable, Any]
) -> tuple[Judgments, int]:
    depth = _depth(plan, metric)
    if isinstance(metric, _TextMetric):
        if record.mode != "text":
            raise InvalidArgumentError(
                f"{metric!r} scores contexts, but the dataset has chunk ids; use "
                "IDPrecisionRecallF1 / IDRankedRetrievalMetrics for ID-mode data"
            )
        credit = metric._credit_rule()
        key: Hashable = ("text", metric.matching_strategy, credit, depth)
        if key not in cache:
            judged = judge_texts(
                metric.matching_strategy,
                record.retrieved,
                record.ground_truth,
                k=depth,
                location=record.location,
                credit=credit,
                validated=True,  # the reader validated the record with the same checks
            )
            cache[key] = (judged.judgments, len(judged.tokenless))
        return cache[key]  # type: ignore[no-any-return]
    if isinstance(metric, _IdMetric):
        if record.mode != "id":
            raise InvalidArgumentError(
                f"{metric!r} scores chunk ids, but the dataset has contexts; use "
                "PrecisionRecallF1 / RankedRetrievalMetrics for text data"
            )
        key = ("id", metric.relevance_level, depth)
        if key not in cache:
            retrieved = record.retrieved if depth is None else record.retrieved[:depth]
            qrels = record.ground_truth
            assert isinstance(qrels, dict)
            cache[key] = (judge_ids(retrieved, qrels, relevance_level=metric.relevance_level), 0)
        return cache[key]  # type: ignore[no-any-return]
    raise InvalidArgumentTypeError(f"{metric!r} is not a metric the evaluator can run")


def _num_relevant(record: Record) -> int:
    truth = record.ground_truth
    if isinstance(truth, dict):
        return sum(1 for grade in truth.values() if grade > 0)
    return len({t.text if isinstance(t, GradedText) else t for t in truth})


def score_record(plan: ScoringPlan, record: Record) -> RowResult:
    values: dict[str, float | None] = {}
    counts: dict[tuple[int, int | None], SetCounts] = {}
    cache: dict[Hashable, Any] = {}
    tokenless = 0
    relevant = None
    for position, metric in enumerate(plan.metrics):
        judgments, lost = _judge(plan, record, metric, cache)
        tokenless = max(tokenless, lost)
        relevant = judgments.num_relevant if relevant is None else relevant
        for k in plan.metric_ks(metric):
            scores = metric.scores(judgments, k, location=record.location)
            for key, value in scores.items():
                values[column_name(key, k)] = value
            if isinstance(metric, SetMetricsMixin) and None not in scores.values():
                counts[(position, k)] = set_counts(judgments, k)
    return RowResult(
        index=record.index,
        id=record.id,
        metadata=record.metadata,
        values=values,
        counts=counts,
        num_relevant=_num_relevant(record),
        num_retrieved=len(record.retrieved),
        empty_ground_truth=relevant == 0,
        tokenless=tokenless,
        skipped_values=any(v is None for v in values.values()),
    )


def score_batch(
    plan: ScoringPlan, batch: Sequence[Record | RecordError]
) -> list[RowResult | RecordError]:
    """Score a batch in order; a record that fails while scoring becomes a RecordError.

    Plans of chunk-level text metrics, or of ID metrics, score the batch in bulk
    (:func:`_score_bulk`, :func:`_score_bulk_ids`); every other plan, and any record the bulk
    path does not cover, goes record by record.
    """
    if _bulk_eligible(plan):
        if isinstance(plan.metrics[0], _IdMetric):
            return _score_bulk_ids(plan, batch)
        return _score_bulk(plan, batch)
    return [_score_one(plan, item) for item in batch]


def _score_one(plan: ScoringPlan, item: Record | RecordError) -> RowResult | RecordError:
    if isinstance(item, RecordError):
        return item
    try:
        return score_record(plan, item)
    except InvalidArgumentError:
        raise  # a configuration mistake, not a bad record: stop the run
    except CtxevalError as exc:
        message = str(exc)
        prefix = f"{item.location}: "
        return RecordError(
            index=item.index,
            id=item.id,
            location=item.location,
            field=getattr(exc, "field", None),
            message=message[len(prefix) :] if message.startswith(prefix) else message,
        )


# Records longer than this (retrieved items, or distinct ground-truth items) are scored one by
# one: the bulk path pads every record of a batch to the largest, so one record with 100,000
# retrieved ids would cost batch_size times that. Below the caps a batch of 256 records needs a
# few MiB at most.
BULK_MAX_RANKS = 1_000
BULK_MAX_TRUTH = 200


@functools.lru_cache(maxsize=64)
def _bulk_eligible(plan: ScoringPlan) -> bool:
    """What ``batched`` computes: text metrics on whole chunks, or ID metrics; both with the
    ground-truth ideal."""
    text = all(isinstance(m, _TextMetric) for m in plan.metrics)
    ids = all(isinstance(m, _IdMetric) for m in plan.metrics)
    for metric in plan.metrics:
        if isinstance(metric, _TextMetric) and metric.matching_strategy.unit != "chunk":
            return False
        options = getattr(metric, "rank_options", None)
        if options is not None and options.ideal != "ground_truth":
            return False
    return text or ids


def _score_bulk(
    plan: ScoringPlan, batch: Sequence[Record | RecordError]
) -> list[RowResult | RecordError]:
    """Match every record, then judge and score the batch with array operations.

    Records with no ground truth (their policy decides), records that fail, and anything that is
    not a text record go through :func:`score_record`, which gives them their usual result or
    error; the rest get the same values as there (``tests/test_batched.py``).
    """
    out: list[RowResult | RecordError | None] = [None] * len(batch)
    text_metrics = [m for m in plan.metrics if isinstance(m, _TextMetric)]
    # One matching pass per (strategy, depth), one judging pass per credit rule on top of it.
    passes = list(dict.fromkeys((m.matching_strategy, _depth(plan, m)) for m in text_metrics))
    strategies = list(dict.fromkeys(strategy for strategy, _ in passes))
    builtin = all(isinstance(s, BuiltinStrategy) for s in strategies)
    bulk: list[int] = []
    found: list[list[BoolMatrix]] = [[] for _ in passes]
    grades: list[list[list[float] | None]] = [[] for _ in strategies]
    tokenless: list[int] = []
    relevant: list[int] = []
    which = [strategies.index(strategy) for strategy, _ in passes]
    for position, item in enumerate(batch):
        if isinstance(item, RecordError) or item.mode != "text":
            out[position] = _score_one(plan, item)
            continue
        try:
            units = [ground_truth_units(s, item.ground_truth) for s in strategies]  # type: ignore[arg-type]
            if not all(truth for truth, _ in units):
                out[position] = _score_one(plan, item)  # the empty-ground-truth policy
                continue
            chunks: list[str] = item.retrieved  # validated by the reader: strings only
            if len(chunks) > BULK_MAX_RANKS or any(len(t) > BULK_MAX_TRUTH for t, _ in units):
                # Padding a batch to an outlier's size would cost batch_size times its memory.
                out[position] = _score_one(plan, item)
                continue
            matched = []
            lost = 0
            for (strategy, depth), s in zip(passes, which, strict=True):
                truth = units[s][0]
                shown = chunks if depth is None or depth >= len(chunks) else chunks[:depth]
                matches = as_matches(strategy.match(shown, truth), len(shown), len(truth), strategy)
                matched.append(matches.relevant)
                if matches.tokenless:
                    lost = max(lost, len(matches.tokenless))
        except InvalidArgumentError:
            raise
        except CtxevalError:
            out[position] = _score_one(plan, item)  # the same error, as a RecordError
            continue
        bulk.append(position)
        for into, relevance in zip(found, matched, strict=True):
            into.append(relevance)
        for graded_into, (_, graded) in zip(grades, units, strict=True):
            graded_into.append(graded)
        tokenless.append(lost)
        # Chunk units of a built-in strategy are the distinct texts themselves.
        relevant.append(len(units[0][0]) if builtin else _num_relevant(item))
    if bulk:
        matrices = dict(zip(passes, found, strict=True))
        grades_of = dict(zip(strategies, grades, strict=True))
        judged: dict[tuple[Any, ...], BatchJudgments] = {}

        def judgments(metric: MetricBase) -> BatchJudgments:
            assert isinstance(metric, _TextMetric)
            strategy, depth = metric.matching_strategy, _depth(plan, metric)
            credit = metric._credit_rule()
            key = (strategy, depth, credit)
            if key not in judged:
                judged[key] = judge_batch(matrices[(strategy, depth)], grades_of[strategy], credit)
            return judged[key]

        rows = _bulk_rows(plan, batch, bulk, judgments, tokenless, relevant)
        for position, row in zip(bulk, rows, strict=True):
            out[position] = row
    return out  # type: ignore[return-value]


def _score_bulk_ids(
    plan: ScoringPlan, batch: Sequence[Record | RecordError]
) -> list[RowResult | RecordError]:
    """ID mode: judge every record (a lookup per id), then score the batch with arrays."""
    out: list[RowResult | RecordError | None] = [None] * len(batch)
    passes = list(
        dict.fromkeys((m.relevance_level, _depth(plan, m)) for m in plan.metrics)  # type: ignore[attr-defined]
    )
    bulk: list[int] = []
    judged: list[list[Judgments]] = [[] for _ in passes]
    relevant: list[int] = []
    for position, item in enumerate(batch):
        if isinstance(item, RecordError) or item.mode != "id":
            out[position] = _score_one(plan, item)
            continue
        qrels = item.ground_truth
        assert isinstance(qrels, dict)
        retrieved = item.retrieved
        if len(retrieved) > BULK_MAX_RANKS or len(qrels) > BULK_MAX_TRUTH:
            out[position] = _score_one(plan, item)  # an outlier: see _score_bulk
            continue
        found = [
            judge_ids(
                retrieved if depth is None else retrieved[:depth], qrels, relevance_level=level
            )
            for level, depth in passes
        ]
        if not all(j.num_relevant for j in found):
            out[position] = _score_one(plan, item)  # the empty-ground-truth policy
            continue
        bulk.append(position)
        for into, j in zip(judged, found, strict=True):
            into.append(j)
        relevant.append(_num_relevant(item))
    if bulk:
        stacked = {key: stack_judgments(j) for key, j in zip(passes, judged, strict=True)}

        def judgments(metric: MetricBase) -> BatchJudgments:
            assert isinstance(metric, _IdMetric)
            return stacked[(metric.relevance_level, _depth(plan, metric))]

        rows = _bulk_rows(plan, batch, bulk, judgments, [0] * len(bulk), relevant)
        for position, row in zip(bulk, rows, strict=True):
            out[position] = row
    return out  # type: ignore[return-value]


def _bulk_rows(
    plan: ScoringPlan,
    batch: Sequence[Record | RecordError],
    bulk: list[int],
    judgments: Callable[[MetricBase], BatchJudgments],
    tokenless: list[int],
    relevant: list[int],
) -> list[RowResult]:
    """Every metric at every cut-off for the records at ``bulk`` positions, as rows."""
    columns: list[Any] = []
    counts: list[tuple[tuple[int, int | None], list[SetCounts]]] = []
    for position, metric in enumerate(plan.metrics):
        j = judgments(metric)
        for k in plan.metric_ks(metric):
            if isinstance(metric, SetMetricsMixin):
                values, set_count = set_values(j, k)
                counts.append(((position, k), set_count))
            else:
                values = rank_values(j, k, metric.rank_options)  # type: ignore[attr-defined]
            columns.extend(values[key] for key in metric.keys)
    names = plan.columns()
    table = np.column_stack(columns).tolist()
    rows = []
    for i, position in enumerate(bulk):
        record = batch[position]
        assert isinstance(record, Record)
        rows.append(
            RowResult(
                index=record.index,
                id=record.id,
                metadata=record.metadata,
                values=dict(zip(names, table[i], strict=True)),
                counts={key: set_count[i] for key, set_count in counts},
                num_relevant=relevant[i],
                num_retrieved=len(record.retrieved),
                empty_ground_truth=False,
                tokenless=tokenless[i],
            )
        )
    return rows
