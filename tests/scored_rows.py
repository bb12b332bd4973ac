"""The tests' view of a scored batch one row at a time.

ctxeval hands a batch's rows on as columns only (:class:`~ctxeval.scoring.scored.ScoredBatch`,
folded by ``Aggregator.add_scored``). Tests that compare two implementations record by record,
or read one record's values, take the same columns apart here: one :class:`Row` per record, the
bad records (:class:`~ctxeval.records.model.RecordError`) at their places.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxeval.cutoffs.cutoff import Cutoff
from ctxeval.records.model import Record, RecordError
from ctxeval.scoring.driver import ScoringPlan, score_columns
from ctxeval.scoring.scored import ScoredBatch


@dataclass(frozen=True)
class Row:
    """One record's scores, and the counts behind them, as plain Python values."""

    index: int
    id: str
    metadata: dict[str, Any]
    values: dict[str, float | None]  # None: skipped by the metric's empty_ground_truth policy
    counts: dict[tuple[int, Cutoff], tuple[int, ...]]  # only the keys the row's metric kept
    span_counts: dict[tuple[int, Cutoff], tuple[int, ...]]
    num_relevant: int
    num_retrieved: int
    empty_ground_truth: bool
    tokenless: int
    context: dict[str, tuple[int, int | None, int | None]] = field(default_factory=dict)
    located: Any = None


def score_rows(plan: ScoringPlan, batch: Sequence[Record | RecordError]) -> list[Row | RecordError]:
    """``batch`` scored (one :func:`score_columns` call), one :class:`Row` per record."""
    return rows_of(score_columns(plan, batch))


def rows_of(scored: ScoredBatch) -> list[Row | RecordError]:
    """A scored batch in input order: one :class:`Row` per row, the bad records between."""
    rows = iter(_rows(scored))
    return [
        scored.errors[position] if position in scored.errors else next(rows)
        for position in range(len(scored))
    ]


def _rows(scored: ScoredBatch) -> list[Row]:
    values: list[list[Any]] = scored.values.tolist()
    if scored.skipped is not None:
        for row, mask in enumerate(scored.skipped.tolist()):
            values[row] = [None if gone else v for v, gone in zip(values[row], mask, strict=True)]

    def kept(found: dict[tuple[int, Cutoff], Any], row: int) -> dict[tuple[int, Cutoff], Any]:
        return {
            key: tuple(counts[row].tolist())
            for key, counts in found.items()
            if key[0] not in scored.dropped or not scored.dropped[key[0]][row]
        }

    def context(row: int) -> dict[str, tuple[int, int | None, int | None]]:
        return {
            label: tuple(None if c is None else int(c[row]) for c in used)  # type: ignore[misc]
            for label, used in scored.context.items()
        }

    return [
        Row(
            index=scored.index[row],
            id=scored.ids[row],
            metadata=scored.metadata[row],
            values=dict(zip(scored.columns, values[row], strict=True)),
            counts=kept(scored.counts, row),
            span_counts=kept(scored.span_counts, row),
            num_relevant=int(scored.num_relevant[row]),
            num_retrieved=int(scored.num_retrieved[row]),
            empty_ground_truth=bool(scored.empty_ground_truth[row]),
            tokenless=int(scored.tokenless[row]),
            context=context(row),
            located=None if scored.located is None else scored.located[row],
        )
        for row in range(scored.rows)
    ]
