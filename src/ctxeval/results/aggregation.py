"""Aggregation: row results folded into exact running sums and the per-query table.

Aggregates are folded in as records arrive (:class:`Aggregator`), so a run never needs every row
in memory to compute them:

- ``{metric}@{k}``: macro average, the mean of per-query values; a query whose values are
  ``None`` (``empty_ground_truth="skip"``) is left out and counted;
- ``micro_{metric}@{k}`` for the set metrics: TP, FP and FN summed over queries first;
- a measure whose registry entry says so aggregates otherwise (``MeasureDefinition.aggregate``):
  trec_eval's counts (``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``) are summed, and
  ``gm_map`` is the geometric mean of the values floored at 1e-5 (``exp`` of the exact mean of
  their logarithms), as trec_eval's summary reports them.
- the context used at each cut-off (``summary["context_used"]``): mean chunks, words and
  characters fed per query (integers summed exactly, one rounding).

Sums are exact (:mod:`ctxeval.foundation.exact`), so the aggregate does not depend on the order of
the records: a run split into any partitions, merged in any order, gives the same numbers.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxeval.cutoffs.cutoff import Cutoff, cutoff_key, cutoff_label
from ctxeval.foundation.errors import CtxevalError, InvalidArgumentError
from ctxeval.foundation.exact import column_sums, mean_of_units, units
from ctxeval.io.fields import as_field_map
from ctxeval.judging.spans import LOCATED_KEYS, UNLOCATED_SHOWN
from ctxeval.matching import parse_strategy
from ctxeval.metrics.measures import GEOMETRIC_FLOOR, Aggregate
from ctxeval.metrics.reference import f1_score
from ctxeval.records.model import RecordError
from ctxeval.results import EvaluationResult, PerQueryTable, metadata_column
from ctxeval.scoring.driver import ScoredBatch, ScoringPlan, column_name

__all__ = ["Aggregator", "AggregatorState", "column_aggregates", "floored_log", "strategy_spec"]

# Rows of plain float values buffered before their exact sums are taken together.
FOLD_ROWS = 1024


@dataclass(frozen=True)
class AggregatorState:
    """A picklable snapshot of an :class:`Aggregator`'s sums (what a worker sends back)."""

    values: dict[str, Any]


def strategy_spec(plan: ScoringPlan) -> str | None:
    """The spec of the matching strategy of the plan's text metrics, when they share one that
    :func:`~ctxeval.matching.parse_strategy` rebuilds equal (so that a report can judge the
    records again as the run did); None otherwise: ID mode, a custom strategy, several."""
    strategies = {
        strategy
        for metric in plan.metrics
        if (strategy := getattr(metric, "matching_strategy", None)) is not None
    }
    if len(strategies) != 1:
        return None
    (strategy,) = strategies
    spec = getattr(strategy, "spec", None)
    if not isinstance(spec, str):
        return None
    try:
        rebuilt = parse_strategy(spec)
    except CtxevalError:
        return None
    return spec if rebuilt == strategy else None


def column_aggregates(plan: ScoringPlan) -> dict[str, Aggregate]:
    """How each column of the plan aggregates over queries (its measure's registry entry)."""
    return {
        entry.column: entry.measure.definition.aggregate
        for metric in plan.metrics
        for entry in plan.evaluated(metric)
    }


def floored_log(value: float) -> float:
    """``log(max(value, 1e-5))``: a query's term in trec_eval's geometric mean (``gm_map``)."""
    return math.log(max(value, GEOMETRIC_FLOOR))


TOKENLESS_SHOWN = 3
"""How many records with tokenless texts the summary names (the first, in input order)."""


class Aggregator:
    """Folds row results into per-query rows and running sums, in input order.

    ``fields``: the field mapping the dataset was read with (recorded in the summary, with the
    matching strategy's spec, so that the records can be read and judged again as the run did).
    """

    def __init__(
        self,
        plan: ScoringPlan,
        source: str,
        *,
        keep_rows: bool = True,
        row_sink: Callable[[dict[str, Any]], None] | None = None,
        fields: Any = None,
    ) -> None:
        self.plan = plan
        self.source = source
        self.keep_rows = keep_rows
        self.row_sink = row_sink
        field_map = as_field_map(fields)
        self.fields = {
            name: value
            for name in ("retrieved", "ground_truth", "id", "mode")
            if (value := getattr(field_map, name)) is not None
        }
        self.columns = plan.columns()
        self._column_order = tuple(self.columns)
        self.aggregates = column_aggregates(plan)
        # Exact sums of log(max(value, floor)) of the geometric-mean columns.
        self._geometric = [
            i for i, column in enumerate(self.columns) if self.aggregates[column] == "geometric"
        ]
        self._log_sums = {self.columns[i]: 0 for i in self._geometric}
        self.rows = PerQueryTable(self.columns)
        self.skipped: list[dict[str, Any]] = []
        # Exact sums (see ctxeval.foundation.exact): the mean does not depend on the order of the
        # records,
        # so a run split into any partitions, merged in any order, gives the same aggregate.
        self._sums = dict.fromkeys(self.columns, 0)
        self._counts = dict.fromkeys(self.columns, 0)
        # Rows whose values are all floats wait here, row-major, for _fold.
        self._pending = array("d")
        self._pending_rows = 0
        self._micro: dict[tuple[int, Cutoff], list[int]] = {}
        self._span_micro: dict[tuple[int, Cutoff], list[int]] = {}
        self._located = [0] * len(LOCATED_KEYS)
        # (record index, id, field[i], text) of the first texts not located, in input order
        self._unlocated: list[tuple[int, str, str, str]] = []
        self._queries = 0
        self._empty = 0
        self._excluded = 0
        self._relevant = 0
        self._retrieved = 0
        self._k_used = {k: 0 for k in self._all_ks()}
        self._k_labels = [(k, cutoff_label(k)) for k in self._k_used]
        # cut-off label -> sums of chunks, words, characters fed (words, characters: text mode)
        self._context: dict[str, list[int]] = {}
        self._text = any(metric.mode == "text" for metric in plan.metrics)
        self._tokenless = 0
        self._tokenless_records = 0
        self._tokenless_first: list[tuple[int, str]] = []  # (position, id), the first few

    def _all_ks(self) -> list[Cutoff]:
        ks: dict[Cutoff, None] = {}
        for metric in self.plan.metrics:
            ks.update(dict.fromkeys(self.plan.metric_ks(metric)))
        return list(ks)

    _STATE = (
        "_sums",
        "_counts",
        "_log_sums",
        "_micro",
        "_span_micro",
        "_located",
        "_unlocated",
        "_queries",
        "_empty",
        "_excluded",
        "_relevant",
        "_retrieved",
        "_k_used",
        "_context",
        "_tokenless",
        "_tokenless_records",
        "_tokenless_first",
        "skipped",
    )

    def state(self) -> AggregatorState:
        """The running sums, to merge into another aggregator (a partition's share of a run),
        and the per-query rows when this aggregator keeps them."""
        self._fold()
        values = {name: getattr(self, name) for name in self._STATE}
        if self.keep_rows:
            values["rows"] = self.rows
        return AggregatorState(values)

    def merge(self, state: AggregatorState) -> None:
        """Add another aggregator's sums (all exact, so the order of merging never matters)."""
        other = state.values
        for name in ("_sums", "_counts", "_log_sums", "_k_used"):
            mine = getattr(self, name)
            for key, value in other[name].items():
                mine[key] = mine.get(key, 0) + value
        for table, theirs in (
            (self._micro, other["_micro"]),
            (self._span_micro, other["_span_micro"]),
        ):
            for key, counts in theirs.items():
                sums = table.setdefault(key, [0, 0, 0, 0])
                for i, value in enumerate(counts):
                    sums[i] += value
        self._located = [a + b for a, b in zip(self._located, other["_located"], strict=True)]
        self._unlocated = sorted(self._unlocated + other["_unlocated"])[:UNLOCATED_SHOWN]
        self._tokenless_first = sorted(self._tokenless_first + other["_tokenless_first"])[
            :TOKENLESS_SHOWN
        ]
        for label, used in other["_context"].items():
            self._add_context(label, used)
        for name in (
            "_queries",
            "_empty",
            "_excluded",
            "_relevant",
            "_retrieved",
            "_tokenless",
            "_tokenless_records",
        ):
            setattr(self, name, getattr(self, name) + other[name])
        self.skipped.extend(other["skipped"])
        rows = other.get("rows")
        if rows is not None:  # merged in input order by the caller
            if self.keep_rows:
                self.rows.extend(rows)
            if self.row_sink is not None:
                for row in rows:
                    self.row_sink(row)

    def add_scored(self, scored: ScoredBatch, *, stop_at_error: bool = False) -> RecordError | None:
        """Add a scored batch's rows and bad records, in order.
        ``stop_at_error``: stop after the first bad record, and return it (None when the batch
        has none)."""
        if stop_at_error and scored.errors:
            position, error = next(iter(scored.errors.items()))  # the first: every item
            self._add_batch(scored.head(position))  # before it is a row
            self._add_error(error)
            return error
        self._add_batch(scored)
        for error in scored.errors.values():
            self._add_error(error)
        return None

    def _add_error(self, item: RecordError) -> None:
        skipped: dict[str, Any] = {
            "index": item.index,
            "id": item.id,
            "location": item.location,
            "field": item.field,
            "message": item.message,
        }
        if item.fixes:  # the fixes the message names, as data (see Fix)
            skipped["fixes"] = [fix.as_dict() for fix in item.fixes]
        self.skipped.append(skipped)

    def _add_values_one_by_one(self, values: list[Any]) -> list[float | None]:
        """Add one row's values to the exact sums value by value (None is left out; NaN and
        infinity raise, from :func:`units`)."""
        values = [None if value is None else float(value) for value in values]
        exact = [None if value is None else units(value) for value in values]
        for column, value in zip(self.columns, exact, strict=True):
            if value is not None:
                self._sums[column] += value
                self._counts[column] += 1
        for i in self._geometric:
            if values[i] is not None:
                self._log_sums[self.columns[i]] += units(floored_log(values[i]))
        return values

    def _add_batch(self, batch: ScoredBatch) -> None:
        """A batch's rows, folded column by column (rows of finite floats buffered, then summed
        exactly together)."""
        n = batch.rows
        if not n:
            return
        if batch.columns != self._column_order:
            raise InvalidArgumentError(
                f"Aggregator: a scored batch has columns {list(batch.columns)}, not "
                f"{list(self.columns)}"
            )
        block = batch.values
        skipped = batch.skipped_rows()
        # NaN and infinity (an error) and None go row by row, value by value.
        fast = ~skipped & np.isfinite(block).all(axis=1)
        slow_rows = np.flatnonzero(~fast).tolist()
        values = self._batch_rows(batch, skipped, slow_rows)
        fast_block = block if not slow_rows else block[fast]
        if len(fast_block):
            self._pending.frombytes(np.ascontiguousarray(fast_block).tobytes())
            self._pending_rows += len(fast_block)
            if self._pending_rows >= FOLD_ROWS:
                self._fold()
        self._add_batch_totals(batch, skipped)
        self._add_batch_micro(batch)
        if batch.located is not None:
            for row, spans in enumerate(batch.located):
                if spans is not None:
                    self._add_located(batch.index[row], batch.ids[row], *spans)
        if values is not None:
            self._add_rows(batch, values)

    def _batch_rows(
        self, batch: ScoredBatch, skipped: Any, slow_rows: list[int]
    ) -> list[list[Any]] | None:
        """The batch's rows as lists (None for the values skipped by policy) when they are
        kept, streamed or added one by one (``slow_rows``: those with None, NaN or infinity,
        which are added here); else None."""
        if not (slow_rows or self.keep_rows or self.row_sink is not None):
            return None
        values: list[list[Any]] = batch.values.tolist()
        if batch.skipped is not None:
            for row, mask in zip(
                np.flatnonzero(skipped).tolist(), batch.skipped[skipped].tolist(), strict=True
            ):
                values[row] = [
                    None if gone else v for v, gone in zip(values[row], mask, strict=True)
                ]
        for row in slow_rows:
            self._add_values_one_by_one(values[row])
        return values

    def _add_batch_totals(self, batch: ScoredBatch, skipped: Any) -> None:
        """The batch's counts of queries and items, and its context used at each cut-off."""
        n = batch.rows
        self._queries += n
        self._empty += int(np.count_nonzero(batch.empty_ground_truth))
        self._excluded += int(np.count_nonzero(skipped))
        self._relevant += int(batch.num_relevant.sum())
        self._retrieved += int(batch.num_retrieved.sum())
        self._tokenless += int(batch.tokenless.sum())
        self._tokenless_records += int(np.count_nonzero(batch.tokenless))
        if len(self._tokenless_first) < TOKENLESS_SHOWN and batch.tokenless.any():
            rows = np.flatnonzero(batch.tokenless)[:TOKENLESS_SHOWN].tolist()
            found = [(batch.index[row], batch.ids[row]) for row in rows]
            self._tokenless_first = sorted(self._tokenless_first + found)[:TOKENLESS_SHOWN]
        for k, label in self._k_labels:
            used = batch.context.get(label)
            if used is not None:
                self._k_used[k] += int(used[0].sum())
            elif isinstance(k, int):
                self._k_used[k] += int(np.minimum(batch.num_retrieved, k).sum())
            else:
                self._k_used[k] += int(batch.num_retrieved.sum())
        for label, (chunks, words, characters) in batch.context.items():
            self._add_context(
                label,
                [int(c.sum()) if c is not None else None for c in (chunks, words, characters)],
            )

    def _add_batch_micro(self, batch: ScoredBatch) -> None:
        """The batch's set and span counts (of the rows each metric kept), into the micro
        averages' sums."""
        for table, found in ((self._micro, batch.counts), (self._span_micro, batch.span_counts)):
            for key, counts in found.items():
                kept = batch.kept(key)
                if kept is not None:
                    if not kept.any():
                        continue
                    counts = counts[kept]
                sums = table.setdefault(key, [0, 0, 0, 0])
                for i, total in enumerate(counts.sum(axis=0).tolist()):
                    sums[i] += total

    def _add_rows(self, batch: ScoredBatch, values: list[list[Any]]) -> None:
        """The per-query rows of a batch: into the table, and one dict each to the sink."""
        if self.keep_rows:
            self.rows.append_many(batch.ids, batch.metadata, batch.values, batch.skipped)
        if self.row_sink is not None:
            columns = self.columns
            for record_id, metadata, row_values in zip(
                batch.ids, batch.metadata, values, strict=True
            ):
                row: dict[str, Any] = {"id": record_id}
                for name, value in metadata.items():
                    row[metadata_column(name, self.aggregates)] = value
                row.update(zip(columns, row_values, strict=True))
                self.row_sink(row)

    def _add_located(
        self,
        index: int,
        record_id: str,
        located: tuple[int, ...],
        unlocated: tuple[tuple[str, str], ...],
    ) -> None:
        self._located = [a + b for a, b in zip(self._located, located, strict=True)]
        if len(self._unlocated) < UNLOCATED_SHOWN:
            found = [(index, record_id, where, text) for where, text in unlocated]
            self._unlocated = sorted(self._unlocated + found)[:UNLOCATED_SHOWN]

    def _add_context(self, label: str, used: Sequence[int | None]) -> None:
        sums = self._context.get(label)
        if sums is None:
            self._context[label] = [value or 0 for value in used]
            return
        for i, value in enumerate(used):
            sums[i] += value or 0

    def context_used(self) -> dict[str, dict[str, float]]:
        """``{cut-off label: {"chunks": mean, "words": mean, "characters": mean}}`` over the
        scored queries (chunks only for ids, which have no texts)."""
        q = self._queries
        names = ("chunks", "words", "characters") if self._text else ("chunks",)
        return {
            label: {
                name: mean_of_units(units(total), q) or 0.0
                for name, total in zip(names, sums[: len(names)], strict=True)
            }
            for label, sums in self._context.items()
        }

    def _fold(self) -> None:
        """Add the pending rows to the exact sums."""
        rows = self._pending_rows
        if not rows:
            return
        block = np.frombuffer(self._pending, dtype=np.float64).reshape(rows, len(self.columns))
        self._pending = array("d")
        self._pending_rows = 0
        for column, total in zip(self.columns, column_sums(block), strict=True):
            self._sums[column] += total
            self._counts[column] += rows
        for i in self._geometric:
            logs = [floored_log(value) for value in block[:, i].tolist()]
            self._log_sums[self.columns[i]] += sum(map(units, logs))

    def aggregate(self) -> dict[str, float | None]:
        self._fold()
        out: dict[str, float | None] = {}
        for column in self.columns:
            out[column] = self._aggregate(column)
        for (position, k), (tp_r, retrieved, tp_g, truth) in sorted(
            self._micro.items(), key=lambda item: (item[0][0], cutoff_key(item[0][1]))
        ):
            del position
            p = tp_r / retrieved if retrieved else 0.0
            r = tp_g / truth if truth else 0.0
            out[column_name("micro_context_precision", k)] = p
            out[column_name("micro_context_recall", k)] = r
            out[column_name("micro_context_f1", k)] = f1_score(p, r)
        out.update(self._span_aggregate())
        return out

    def _aggregate(self, column: str) -> float | None:
        kind = self.aggregates[column]
        if kind == "sum":
            return mean_of_units(self._sums[column], 1)
        if kind == "geometric":
            mean_log = mean_of_units(self._log_sums[column], self._counts[column])
            return None if mean_log is None else math.exp(mean_log)
        return mean_of_units(self._sums[column], self._counts[column])

    def _span_aggregate(self) -> dict[str, float]:
        """Micro averages of the span measures: their lengths summed over queries first."""
        out: dict[str, float] = {}
        for position, metric in enumerate(self.plan.metrics):
            for entry in self.plan.span_entries(metric):
                sums = self._span_micro.get((position, entry.k))
                if sums is None:
                    continue
                intersection, p_den, r_den, iou_den = sums
                p = intersection / p_den if p_den else 0.0
                r = intersection / r_den if r_den else 0.0
                value = {
                    "span_precision": p,
                    "span_recall": r,
                    "span_iou": intersection / iou_den if iou_den else 0.0,
                    "span_f1": f1_score(p, r),
                }[entry.measure.name]
                out[f"micro_{entry.column}"] = value
        return out

    def located(self) -> dict[str, Any] | None:
        """How the texts' spans were settled (None when no span metric ran)."""
        if not self.plan.has_spans():
            return None
        report: dict[str, Any] = dict(zip(LOCATED_KEYS, self._located, strict=True))
        report["first_unlocated"] = [
            {"record": record_id, "field": where, "text": text}
            for _, record_id, where, text in self._unlocated
        ]
        return report

    def summary(self) -> dict[str, Any]:
        q = self._queries
        return {
            "source": self.source,
            "queries": q,
            "skipped_records": len(self.skipped),
            "empty_ground_truth": self._empty,
            "excluded_from_aggregates": self._excluded,
            "mean_relevant_per_query": self._relevant / q if q else 0.0,
            "mean_retrieved_per_query": self._retrieved / q if q else 0.0,
            "mean_k_used": {
                cutoff_label(k): (used / q if q else 0.0) for k, used in self._k_used.items()
            },
            "context_used": self.context_used(),
            **self._budget_summary(),
            "ks": [k if k is None or isinstance(k, int) else str(k) for k in self._all_ks()],
            "metrics": [repr(m) for m in self.plan.metrics],
            "strategy": strategy_spec(self.plan),
            "fields": dict(self.fields),
            "tokenless_texts": self._tokenless,
            "records_with_tokenless_texts": self._tokenless_records,
            "first_records_with_tokenless_texts": [id_ for _, id_ in self._tokenless_first],
            **({"located": located} if (located := self.located()) is not None else {}),
        }

    def _budget_summary(self) -> dict[str, Any]:
        """How budgets were filled and counted (only when the run has budgets)."""
        budgets = self.plan.budgets()
        if not budgets:
            return {}
        out: dict[str, Any] = {"budget_policy": self.plan.budget_policy}
        if any(b.unit == "t" for b in budgets):
            counter = self.plan.token_counter
            out["token_counter"] = (
                counter if isinstance(counter, str) else getattr(counter, "__name__", "callable")
            )
        return out

    def result(self) -> EvaluationResult:
        return EvaluationResult(
            per_query=self.rows,
            aggregate=self.aggregate(),
            summary=self.summary(),
            skipped=self.skipped,
        )
