"""A scored batch, handed from scoring to the aggregator: its rows as columns.

Scoring computes every number of a batch at once (a float64 table of values, set and span
counts, the context fed) and the aggregator folds them at once (:meth:`Aggregator.add_scored`):
no object per record on the way. :class:`ScoredBatch` holds those columns, with the batch's bad
records (:class:`~ctxeval.records.model.RecordError`) at their places among the rows; it is what a
worker process sends back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxeval.cutoffs.cutoff import Cutoff
from ctxeval.foundation.arrays import BoolArray, BoolMatrix, FloatMatrix, IntArray
from ctxeval.records.model import RecordError
from ctxeval.scoring.views import ContextColumns

__all__ = ["Located", "ScoredBatch"]

# A located row's LocatedRecord.counts and .unlocated: the texts whose span was given or
# located each way (LOCATED_KEYS), and (field[i], text) of the first few not located.
Located = tuple[tuple[int, ...], tuple[tuple[str, str], ...]]


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
