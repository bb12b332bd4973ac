"""Scoring a batch of records with several metrics at several cut-offs, matching each once.

This is the unit of work the evaluator ships to worker processes: a :class:`ScoringPlan` (the
metrics and cut-offs, picklable) applied to a batch of records. Every metric that shares a way
of judging (strategy, credit rule, depth; or relevance level in ID mode) shares one judging
pass, at the largest cut-off; every cut-off is then a prefix of the same judgments.

One path computes every number: the records of a batch are judged into one padded
:class:`~ctxeval.metrics.core.BatchJudgments` per judging pass and every measure at every
cut-off is a column of the vectorised core. ``implementation="reference"`` (or the environment
variable ``CTXEVAL_IMPLEMENTATION=reference``) scores record by record with the readable
reference formulas instead, for checking: the numbers are the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ctxeval.cutoffs.cutoff import Cutoff
from ctxeval.foundation.errors import (
    CtxevalError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from ctxeval.judging.batch import BatchJudgments, tie_ends_array
from ctxeval.judging.judgments import Judgments, with_tie_ends
from ctxeval.judging.spans import LocatedRecord, RecordSpans
from ctxeval.metrics.core import set_counts
from ctxeval.metrics.reference import SetCounts
from ctxeval.metrics.reference import set_counts as reference_set_counts
from ctxeval.metrics.spans.core import span_counts_at
from ctxeval.metrics.spans.metrics import SpanMetric
from ctxeval.metrics.spans.reference import SpanCounts, span_counts
from ctxeval.records.model import Record, RecordError
from ctxeval.records.values import GradedText
from ctxeval.scoring.judge import (
    Judged,
    batch_judgments,
    judge_record,
    judge_records,
    locate,
    named,
    needs_ties,
    pass_key,
    record_error,
    strategy_of,
    tie_ends,
)
from ctxeval.scoring.plan import Evaluated, Ks, ScoringPlan, column_name, sort_ks
from ctxeval.scoring.scored import RowResult, Scored, ScoredBatch
from ctxeval.scoring.views import BatchView, Cuts, RecordView, context_columns, context_used

__all__ = [
    "Evaluated",
    "Ks",
    "RowResult",
    "Scored",
    "ScoredBatch",
    "ScoringPlan",
    "column_name",
    "score_batch",
    "score_columns",
    "sort_ks",
]


def _num_relevant(record: Record) -> int:
    truth = record.ground_truth
    if isinstance(truth, dict):
        return sum(1 for grade in truth.values() if grade > 0)
    return len({t.text if isinstance(t, GradedText) else t for t in truth})


def score_record(plan: ScoringPlan, record: Record) -> RowResult:
    """One record through the reference formulas."""
    values: dict[str, float | None] = {}
    counts: dict[tuple[int, Cutoff], SetCounts] = {}
    lengths: dict[tuple[int, Cutoff], SpanCounts] = {}
    cache: dict[Hashable, tuple[Any, int]] = {}
    tokenless = 0
    relevant = None
    located = locate(plan, record)
    ties = tie_ends(record) if needs_ties(plan) else None
    cuts = _cuts(plan, [record])
    for position, metric in enumerate(plan.metrics):
        key = pass_key(plan, metric)
        if key not in cache:
            with named(record, metric):
                cache[key] = judge_record(plan, record, metric, located)
        judgments, lost = cache[key]
        if isinstance(judgments, Judgments):
            judgments = with_tie_ends(judgments, ties)
        tokenless = max(tokenless, lost)
        relevant = judgments.num_relevant if relevant is None else relevant
        if judgments.num_relevant == 0 and metric.empty_ground_truth != "zero":
            if metric.empty_ground_truth == "error":
                raise metric.empty_ground_truth_error(record.location)
            values.update(dict.fromkeys((e.column for e in plan.evaluated(metric)), None))
            continue
        view = RecordView(strategy_of(metric), metric.credit_rule(), judgments, cuts)
        for entry in plan.evaluated(metric):
            values[entry.column] = entry.measure(*view.at(entry.k))
        for k in plan.set_ks(metric):
            counts[(position, k)] = reference_set_counts(*view.at(k))
        for k in plan.span_ks(metric):
            spans, count = view.at(k)  # under "truncate": the crossing chunk's span cut
            assert isinstance(spans, RecordSpans)
            assert isinstance(metric, SpanMetric)
            lengths[(position, k)] = span_counts(
                spans,
                spans.cut(count),
                0,
                metric.convention,  # type: ignore[arg-type]
            )
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
        span_counts=lengths,
        **_located_fields(located),
        context=context_used(cuts, plan.all_ks())[0],
    )


def _cuts(plan: ScoringPlan, records: Sequence[Record]) -> Cuts:
    return Cuts(records, plan.budgets(), plan.budget_policy, plan.token_counter)


def score_batch(
    plan: ScoringPlan, batch: Sequence[Record | RecordError]
) -> list[RowResult | RecordError]:
    """Score a batch in order, one row per record; a record that fails while scoring becomes a
    RecordError. (:func:`score_columns` hands the same over as columns.)"""
    scored = score_columns(plan, batch)
    return scored if isinstance(scored, list) else scored.items()


def score_columns(plan: ScoringPlan, batch: Sequence[Record | RecordError]) -> Scored:
    """Score a batch in order, as a :class:`ScoredBatch` (the reference implementation: one
    RowResult per record); a record that fails while scoring becomes a RecordError."""
    if plan.implementation == "reference":
        return [_score_one(plan, item) for item in batch]
    errors = {p: item for p, item in enumerate(batch) if isinstance(item, RecordError)}
    positions = [p for p, item in enumerate(batch) if isinstance(item, Record)]
    records: list[Record] = [batch[p] for p in positions]  # type: ignore[misc]
    judged = judge_records(plan, records)
    for i, error in judged.failed.items():
        errors[positions[i]] = error
    good = [i for i in range(len(records)) if i not in judged.failed]
    scored, failed = _rows(plan, [records[i] for i in good], judged, good)
    for row, error in failed.items():
        errors[positions[good[row]]] = error
    return replace(scored, errors=dict(sorted(errors.items())))


def _score_one(plan: ScoringPlan, item: Record | RecordError) -> RowResult | RecordError:
    if isinstance(item, RecordError):
        return item
    try:
        return score_record(plan, item)
    except (InvalidArgumentError, InvalidArgumentTypeError):
        raise  # a configuration mistake, not a bad record: stop the run
    except CtxevalError as exc:
        return record_error(item, exc)


def _rows(
    plan: ScoringPlan, records: list[Record], judged: Judged, ids: list[int]
) -> tuple[ScoredBatch, dict[int, RecordError]]:
    """Every measure of every metric at every cut-off for the judged records, as the columns
    of their rows in order (``ids``: each record's position among the judged ones), and the
    records that became errors (``empty_ground_truth="error"``), by position in ``records``."""
    count = len(records)
    columns = plan.columns()
    table = np.zeros((count, len(columns)), dtype=np.float64)
    skipped = np.zeros((count, len(columns)), dtype=bool)
    errors: dict[int, RecordError] = {}
    counts: dict[tuple[int, Cutoff], Any] = {}
    lengths: dict[tuple[int, Cutoff], Any] = {}
    dropped: dict[int, Any] = {}
    relevant = np.zeros(count, dtype=np.int64)  # relevant units, as the first metric judged them
    batches: dict[Hashable, list[tuple[list[int], Any]]] = {}
    cuts = _cuts(plan, records)
    views: dict[tuple[Hashable, int], BatchView] = {}
    column = 0
    for position, metric in enumerate(plan.metrics):
        key = pass_key(plan, metric)
        if key not in batches:
            batches[key] = batch_judgments(plan, metric, key, judged)
            batches[key] = _with_ties(plan, judged, ids, batches[key])
        entries = plan.evaluated(metric)
        width = len(entries)
        for k in plan.set_ks(metric):
            counts[position, k] = np.zeros((count, 4), dtype=np.int64)
        for k in plan.span_ks(metric):
            lengths[position, k] = np.zeros((count, 4), dtype=np.int64)
        for group, (rows, batch) in enumerate(batches[key]):
            index = np.asarray(rows, dtype=np.int64)
            if (key, group) not in views:
                views[key, group] = BatchView(
                    strategy_of(metric),
                    metric.credit_rule(),
                    batch,
                    rows,
                    cuts,
                    judged.judgments.get(key),
                    judged.matrices.get(key),
                )
            view = views[key, group]
            if position == 0:
                relevant[index] = batch.m
            for offset, entry in enumerate(entries):
                table[index, column + offset] = entry.measure.values(*view.at(entry.k))
            for k in plan.set_ks(metric):
                counts[position, k][index] = set_counts(*view.at(k))
            for k in plan.span_ks(metric):
                convention = metric.convention  # type: ignore[attr-defined]
                lengths[position, k][index] = span_counts_at(*view.at(k), convention)
            if metric.empty_ground_truth != "zero":
                empty = index[np.asarray(batch.m) == 0]
                if not len(empty):
                    continue
                if metric.empty_ground_truth == "error":
                    for row in empty.tolist():
                        record = records[row]
                        errors.setdefault(
                            row,
                            record_error(record, metric.empty_ground_truth_error(record.location)),
                        )
                skipped[empty, column : column + width] = True
                dropped.setdefault(position, np.zeros(count, dtype=bool))[empty] = True
        column += width
    context = context_columns(cuts, plan.all_ks()) if count else {}
    keep = [row for row in range(count) if row not in errors]
    picked = slice(None) if len(keep) == count else np.asarray(keep, dtype=np.int64)
    skipped = skipped[picked]
    table = np.where(skipped, 0.0, table[picked])
    kept_records = [records[row] for row in keep]
    located = [judged.located.get(ids[row]) for row in keep]
    scored = ScoredBatch(
        errors={},
        index=[record.index for record in kept_records],
        ids=[record.id for record in kept_records],
        metadata=[record.metadata for record in kept_records],
        columns=tuple(columns),
        values=table,
        skipped=skipped if skipped.any() else None,
        counts={key: c[picked] for key, c in counts.items()},
        span_counts={key: c[picked] for key, c in lengths.items()},
        dropped={position: d[picked] for position, d in dropped.items()},
        num_relevant=np.array([_num_relevant(r) for r in kept_records], dtype=np.int64),
        num_retrieved=np.array([len(r.retrieved) for r in kept_records], dtype=np.int64),
        empty_ground_truth=relevant[picked] == 0,
        tokenless=np.array([judged.tokenless.get(ids[row], 0) for row in keep], dtype=np.int64),
        context={
            label: (c[picked], None if w is None else w[picked], None if h is None else h[picked])
            for label, (c, w, h) in context.items()
        },
        located=None
        if all(spans is None for spans in located)
        else [None if spans is None else (spans.counts, spans.unlocated) for spans in located],
    )
    return scored, errors


def _with_ties(
    plan: ScoringPlan,
    judged: Judged,
    ids: list[int],
    batches: list[tuple[list[int], Any]],
) -> list[tuple[list[int], Any]]:
    """The pass's batches with each record's groups of equal scores, when a measure of the plan
    averages over ties (a record without scores: every rank a group of its own)."""
    if not needs_ties(plan):
        return batches
    out = []
    for rows, batch in batches:
        if isinstance(batch, BatchJudgments):
            ends = tie_ends_array([judged.ties.get(ids[r]) for r in rows], batch.n)
            batch = replace(batch, tie_ends=ends)
        out.append((rows, batch))
    return out


def _located_fields(located: LocatedRecord | None) -> dict[str, Any]:
    if located is None:
        return {}
    return {"located": located.counts, "unlocated": located.unlocated}
