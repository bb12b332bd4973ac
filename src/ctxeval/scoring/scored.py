"""A scored batch, handed from scoring to the aggregator: its rows as columns.

Scoring computes every number of a batch at once (a float64 table of values, set and span
counts, the context fed) and the aggregator folds them at once (:meth:`Aggregator.add_scored`):
no object per record on the way. :class:`ScoredBatch` holds those columns, with the batch's bad
records (:class:`~ctxeval.records.model.RecordError`) at their places among the rows; it is what a
worker process sends back. :meth:`ScoredBatch.items` gives the same batch as one
:class:`RowResult` per record (what the reference implementation builds record by record).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxeval.cutoffs.cutoff import Cutoff
from ctxeval.foundation.arrays import BoolArray, BoolMatrix, FloatMatrix, IntArray
from ctxeval.metrics.reference import SetCounts
from ctxeval.metrics.spans.reference import SpanCounts
from ctxeval.records.model import RecordError
from ctxeval.scoring.views import ContextColumns

__all__ = ["Located", "RowResult", "ScoredBatch"]

# A located row's LocatedRecord.counts and .unlocated (see RowResult.located).
Located = tuple[tuple[int, ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class RowResult:
    """The scores of one record, plus what aggregation needs."""

    index: int
    id: str
    metadata: dict[str, Any]
    values: dict[str, float | None]
    # (metric position, k) -> counts behind the set metrics, for micro averages
    counts: dict[tuple[int, Cutoff], SetCounts]
    num_relevant: int
    num_retrieved: int
    empty_ground_truth: bool
    tokenless: int = 0
    skipped_values: bool = field(default=False)
    # (metric position, k) -> the lengths behind the span measures, for micro averages
    span_counts: dict[tuple[int, Cutoff], SpanCounts] = field(default_factory=dict)
    located: tuple[int, ...] = ()  # texts whose span was given / located each way (LOCATED_KEYS)
    unlocated: tuple[tuple[str, str], ...] = ()  # (field[i], text) of the first few not located
    # cut-off label ("5", "300w", "all") -> context fed: chunks, words, characters (words and
    # characters None in ID mode, which has no texts)
    context: dict[str, tuple[int, int | None, int | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredBatch:
    """A batch's scored rows as columns (one entry per row, in input order), and its bad
    records at their positions in the batch, in order of position (the rows fill the other
    positions, in order).

    ``values`` holds 0.0 where ``skipped`` is True (a value that is None: the query skipped by
    its metric's ``empty_ground_truth`` policy); ``skipped`` is None when no value is.
    ``counts`` and ``span_counts`` have a row for every row; ``dropped`` marks, per metric
    position, the rows whose counts that metric dropped (skipped), which a row's dicts lack.
    """

    errors: dict[int, RecordError]
    index: list[int]
    ids: list[str]
    metadata: list[dict[str, Any]]
    columns: tuple[str, ...]
    values: FloatMatrix
    skipped: BoolMatrix | None
    counts: dict[tuple[int, Cutoff], IntArray]
    span_counts: dict[tuple[int, Cutoff], IntArray]
    dropped: dict[int, BoolArray]
    num_relevant: IntArray
    num_retrieved: IntArray
    empty_ground_truth: BoolArray
    tokenless: IntArray
    context: ContextColumns
    # per row when the plan locates spans (None for a row not located), else None
    located: list[Located | None] | None = None

    def __len__(self) -> int:
        """Rows and bad records."""
        return len(self.ids) + len(self.errors)

    @property
    def rows(self) -> int:
        return len(self.ids)

    def skipped_rows(self) -> BoolArray:
        """Rows with a value that is None."""
        if self.skipped is None:
            return np.zeros(self.rows, dtype=bool)
        return np.asarray(self.skipped.any(axis=1), dtype=bool)

    def kept(self, key: tuple[int, Cutoff]) -> BoolArray | None:
        """The rows that have counts under ``key`` (None: every row)."""
        dropped = self.dropped.get(key[0])
        return None if dropped is None else ~dropped

    def head(self, rows: int) -> ScoredBatch:
        """The first ``rows`` rows, without bad records."""

        def cut(array: Any) -> Any:
            return None if array is None else array[:rows]

        context: ContextColumns = {
            label: (c[:rows], cut(w), cut(ch)) for label, (c, w, ch) in self.context.items()
        }
        return ScoredBatch(
            errors={},
            index=self.index[:rows],
            ids=self.ids[:rows],
            metadata=self.metadata[:rows],
            columns=self.columns,
            values=self.values[:rows],
            skipped=cut(self.skipped),
            counts={key: c[:rows] for key, c in self.counts.items()},
            span_counts={key: c[:rows] for key, c in self.span_counts.items()},
            dropped={position: d[:rows] for position, d in self.dropped.items()},
            num_relevant=self.num_relevant[:rows],
            num_retrieved=self.num_retrieved[:rows],
            empty_ground_truth=self.empty_ground_truth[:rows],
            tokenless=self.tokenless[:rows],
            context=context,
            located=cut(self.located),
        )

    def items(self) -> list[RowResult | RecordError]:
        """The batch in input order: one :class:`RowResult` per row, the bad records between."""
        rows = iter(self._rows())
        return [
            self.errors[position] if position in self.errors else next(rows)
            for position in range(len(self))
        ]

    def _rows(self) -> Iterator[RowResult]:
        values: list[list[Any]] = self.values.tolist()
        skipped = self.skipped_rows().tolist()
        if self.skipped is not None:
            for row, mask in enumerate(self.skipped.tolist()):
                if skipped[row]:
                    values[row] = [
                        None if gone else v for v, gone in zip(values[row], mask, strict=True)
                    ]
        counts = {key: c.tolist() for key, c in self.counts.items()}
        lengths = {key: c.tolist() for key, c in self.span_counts.items()}
        dropped = {position: d.tolist() for position, d in self.dropped.items()}
        context: dict[str, list[list[Any]]] = {
            label: [c.tolist() if c is not None else [None] * self.rows for c in used]
            for label, used in self.context.items()
        }
        relevant = self.num_relevant.tolist()
        retrieved = self.num_retrieved.tolist()
        empty = self.empty_ground_truth.tolist()
        tokenless = self.tokenless.tolist()
        for row in range(self.rows):

            def kept(key: tuple[int, Cutoff], row: int = row) -> bool:
                return key[0] not in dropped or not dropped[key[0]][row]

            located: dict[str, Any] = {}
            spans = None if self.located is None else self.located[row]
            if spans is not None:
                located = {"located": spans[0], "unlocated": spans[1]}
            yield RowResult(
                index=self.index[row],
                id=self.ids[row],
                metadata=self.metadata[row],
                values=dict(zip(self.columns, values[row], strict=True)),
                counts={key: SetCounts(*c[row]) for key, c in counts.items() if kept(key)},
                num_relevant=relevant[row],
                num_retrieved=retrieved[row],
                empty_ground_truth=empty[row],
                tokenless=tokenless[row],
                skipped_values=skipped[row],
                span_counts={key: SpanCounts(*c[row]) for key, c in lengths.items() if kept(key)},
                **located,
                context={label: (c[row], w[row], ch[row]) for label, (c, w, ch) in context.items()},
            )
