"""Scoring a batch of records with several metrics at several cut-offs, matching each once.

This is the unit of work the evaluator ships to worker processes: a :class:`ScoringPlan` (the
metrics and cut-offs, picklable) applied to a batch of records. Every metric that shares a way
of judging (strategy, credit rule, depth; or relevance level in ID mode) shares one judging
pass, at the largest cut-off; every cut-off is then a prefix of the same judgments.

One driver computes every number: each record is judged once per judging pass
(:mod:`ctxeval.scoring.judge`), and every measure at every cut-off is a column of the batch's
table, with the empty-ground-truth policies, set and span counts and the context used. Only the
kernel differs between implementations: by default the records of a pass are padded into one
:class:`~ctxeval.judging.batch.BatchJudgments` and measured by the vectorised core;
``implementation="reference"`` (or the environment variable
``CTXEVAL_IMPLEMENTATION=reference``) judges each record's matrix on its own and measures it with
the readable reference formulas, for checking: the numbers are the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from ctxeval.cutoffs.cutoff import Cutoff
from ctxeval.foundation.arrays import IntArray
from ctxeval.judging.batch import BatchJudgments, tie_ends_array
from ctxeval.judging.judgments import Judgments, with_tie_ends
from ctxeval.metrics.base import MetricBase
from ctxeval.records.model import Record, RecordError
from ctxeval.records.values import GradedText
from ctxeval.scoring.judge import (
    Judged,
    batch_judgments,
    judge_records,
    needs_ties,
    pass_key,
    record_error,
    record_judgments,
    strategy_of,
)
from ctxeval.scoring.plan import Evaluated, Ks, ScoringPlan, column_name, sort_ks
from ctxeval.scoring.scored import ScoredBatch
from ctxeval.scoring.views import BatchView, Cuts, RecordView, ReferenceView, context_columns

__all__ = [
    "Evaluated",
    "Ks",
    "ScoredBatch",
    "ScoringPlan",
    "column_name",
    "score_columns",
    "sort_ks",
]


def _num_relevant(record: Record) -> int:
    truth = record.ground_truth
    if isinstance(truth, dict):
        return sum(1 for grade in truth.values() if grade > 0)
    return len({t.text if isinstance(t, GradedText) else t for t in truth})


def _cuts(plan: ScoringPlan, records: Sequence[Record]) -> Cuts:
    return Cuts(records, plan.budgets(), plan.budget_policy, plan.token_counter)


def score_columns(plan: ScoringPlan, batch: Sequence[Record | RecordError]) -> ScoredBatch:
    """Score a batch in order, as a :class:`ScoredBatch`; a record that fails while scoring
    becomes a RecordError."""
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


def _rows(
    plan: ScoringPlan, records: list[Record], judged: Judged, ids: list[int]
) -> tuple[ScoredBatch, dict[int, RecordError]]:
    """Every measure of every metric at every cut-off for the judged records, as the columns
    of their rows in order (``ids``: each record's position among the judged ones), and the
    records that became errors (``empty_ground_truth="error"``), by position in ``records``."""
    count = len(records)
    columns = plan.columns()
    cuts = _cuts(plan, records)
    tables = _Tables(count, len(columns))
    views: dict[Hashable, list[tuple[IntArray, View]]] = {}
    column = 0
    for position, metric in enumerate(plan.metrics):
        key = pass_key(plan, metric)
        if key not in views:
            views[key] = _views(plan, metric, key, judged, ids, cuts)
        place = _Place(position, metric, plan.evaluated(metric), column)
        tables.start(plan, place)
        for index, view in views[key]:
            tables.write(plan, place, index, view)
            if position == 0:
                tables.relevant[index] = view.m
            if metric.empty_ground_truth != "zero":
                tables.apply_empty_policy(place, index, view.m, records)
        column += len(place.entries)
    context = context_columns(cuts, plan.all_ks()) if count else {}
    keep = [row for row in range(count) if row not in tables.errors]
    picked = slice(None) if len(keep) == count else np.asarray(keep, dtype=np.int64)
    scored = ScoredBatch(
        errors={},
        columns=tuple(columns),
        context={
            label: (c[picked], None if w is None else w[picked], None if h is None else h[picked])
            for label, (c, w, h) in context.items()
        },
        **tables.picked(picked),
        **_record_fields([records[row] for row in keep], judged, [ids[row] for row in keep]),
    )
    return scored, tables.errors


class _Place(NamedTuple):
    """A metric's place in the table: its position in the plan, and its columns."""

    position: int
    metric: Any
    entries: tuple[Evaluated, ...]
    column: int  # its first column


class _Tables:
    """What :func:`_rows` fills in, metric by metric and batch by batch: every column of every
    record, which values are left out (``empty_ground_truth="skip"``), the set and span counts
    at each cut-off, and the records that became errors."""

    def __init__(self, count: int, width: int) -> None:
        self.count = count
        self.table = np.zeros((count, width), dtype=np.float64)
        self.skipped = np.zeros((count, width), dtype=bool)
        self.errors: dict[int, RecordError] = {}
        self.counts: dict[tuple[int, Cutoff], Any] = {}
        self.lengths: dict[tuple[int, Cutoff], Any] = {}
        self.dropped: dict[int, Any] = {}
        # relevant units, as the first metric judged them
        self.relevant = np.zeros(count, dtype=np.int64)

    def start(self, plan: ScoringPlan, place: _Place) -> None:
        """The metric's set and span counts, at each of its cut-offs."""
        for k in plan.set_ks(place.metric):
            self.counts[place.position, k] = np.zeros((self.count, 4), dtype=np.int64)
        for k in plan.span_ks(place.metric):
            self.lengths[place.position, k] = np.zeros((self.count, 4), dtype=np.int64)

    def write(self, plan: ScoringPlan, place: _Place, index: Any, view: View) -> None:
        """The metric's values and counts for the rows ``index`` of one batch."""
        position, metric, entries, column = place
        for offset, entry in enumerate(entries):
            self.table[index, column + offset] = view.values(entry.measure, entry.k)
        for k in plan.set_ks(metric):
            self.counts[position, k][index] = view.set_counts(k)
        for k in plan.span_ks(metric):
            self.lengths[position, k][index] = view.span_counts(k, metric.convention)

    def apply_empty_policy(
        self, place: _Place, index: Any, relevant: IntArray, records: list[Record]
    ) -> None:
        """The rows of one batch without ground truth (``relevant``: each row's relevant
        units): errors (``"error"``), and their values of the metric left out."""
        position, metric, entries, column = place
        empty = index[np.asarray(relevant) == 0]
        if not len(empty):
            return
        if metric.empty_ground_truth == "error":
            for row in empty.tolist():
                record = records[row]
                self.errors.setdefault(
                    row,
                    record_error(record, metric.empty_ground_truth_error(record.location)),
                )
        self.skipped[empty, column : column + len(entries)] = True
        self.dropped.setdefault(position, np.zeros(self.count, dtype=bool))[empty] = True

    def picked(self, picked: Any) -> dict[str, Any]:
        """The :class:`ScoredBatch` fields of the tables, for the rows ``picked``."""
        skipped = self.skipped[picked]
        return {
            "values": np.where(skipped, 0.0, self.table[picked]),
            "skipped": skipped if skipped.any() else None,
            "counts": {key: c[picked] for key, c in self.counts.items()},
            "span_counts": {key: c[picked] for key, c in self.lengths.items()},
            "dropped": {position: d[picked] for position, d in self.dropped.items()},
            "empty_ground_truth": self.relevant[picked] == 0,
        }


def _record_fields(kept: list[Record], judged: Judged, ids: list[int]) -> dict[str, Any]:
    """The :class:`ScoredBatch` fields of the records kept (``ids``: their positions among the
    judged ones)."""
    located = [judged.located.get(i) for i in ids]
    return {
        "index": [record.index for record in kept],
        "ids": [record.id for record in kept],
        "metadata": [record.metadata for record in kept],
        "num_relevant": np.array([_num_relevant(r) for r in kept], dtype=np.int64),
        "num_retrieved": np.array([len(r.retrieved) for r in kept], dtype=np.int64),
        "tokenless": np.array([judged.tokenless.get(i, 0) for i in ids], dtype=np.int64),
        "located": None
        if all(spans is None for spans in located)
        else [None if spans is None else (spans.counts, spans.unlocated) for spans in located],
    }


View = BatchView | ReferenceView


def _views(
    plan: ScoringPlan,
    metric: MetricBase,
    key: Hashable,
    judged: Judged,
    ids: list[int],
    cuts: Cuts,
) -> list[tuple[IntArray, View]]:
    """The pass's records as the measures see them, with the rows each view holds: padded
    batches for the vectorised core, or (``implementation="reference"``) one view of every
    record judged on its own for the reference formulas. Only this choice differs."""
    strategy, credit = strategy_of(metric), metric.credit_rule()
    if plan.implementation == "reference":
        items = record_judgments(metric, key, judged)
        if needs_ties(plan):
            items = [
                with_tie_ends(item, judged.ties.get(ids[row]))
                if isinstance(item, Judgments)
                else item
                for row, item in enumerate(items)
            ]
        views = [RecordView(strategy, credit, item, cuts, row) for row, item in enumerate(items)]
        return [(np.arange(len(views), dtype=np.int64), ReferenceView(views))] if views else []
    batches = _with_ties(plan, judged, ids, batch_judgments(plan, metric, key, judged))
    return [
        (
            np.asarray(rows, dtype=np.int64),
            BatchView(
                strategy,
                credit,
                batch,
                rows,
                cuts,
                judged.judgments.get(key),
                judged.matrices.get(key),
            ),
        )
        for rows, batch in batches
    ]


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
