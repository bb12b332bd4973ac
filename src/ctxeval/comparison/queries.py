"""The per-query view of a comparison: the queries ordered by how much the runs disagree on
them, and the context each run handed over (chunks, words, characters per query).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ctxeval.foundation.exact import exact_mean
from ctxeval.records.model import Record
from ctxeval.results import EvaluationResult

__all__ = ["QueryRow", "context_used", "disagreement"]


@dataclass(frozen=True)
class QueryRow:
    """One query of a comparison on one metric: each run's value (``None`` where a run has
    none), the ``spread`` (highest minus lowest value) and the ``mean`` across runs."""

    query: str
    values: tuple[float | None, ...]
    spread: float | None
    mean: float | None


def disagreement(report: Any, metric: str) -> list[QueryRow]:
    """Every compared query on ``metric``, the runs' widest disagreement first; among equal
    spreads, the lowest mean first (the queries every run fails), then by id."""
    by_run = report.values[report.shown_as(metric)]
    rows = []
    for i, query in enumerate(report.query_ids):
        values = tuple(by_run[run][i] for run in report.runs)
        known = [value for value in values if value is not None]
        spread = max(known) - min(known) if known else None
        rows.append(QueryRow(query, values, spread, exact_mean(known) if known else None))
    return sorted(
        rows,
        key=lambda row: (
            -(row.spread if row.spread is not None else -1.0),
            row.mean if row.mean is not None else 2.0,
            row.query,
        ),
    )


def context_used(
    result: EvaluationResult, records: Iterable[Record] | None = None
) -> dict[str, dict[str, float]]:
    """``{cut-off: {"chunks": mean, "words": mean, "characters": mean}}`` per query.

    The result's own ``summary["context_used"]`` when it has one; else the chunks from
    ``summary["mean_k_used"]`` and, given the run's text ``records``, the words and characters
    of the chunks within each cut-off. Words are whitespace-separated; characters are Python
    string characters.
    """
    recorded = result.summary.get("context_used")
    if isinstance(recorded, Mapping) and recorded:
        return {str(k): dict(v) for k, v in recorded.items()}
    used = result.summary.get("mean_k_used")
    if not isinstance(used, Mapping):
        return {}
    out: dict[str, dict[str, float]] = {str(k): {"chunks": float(v)} for k, v in used.items()}
    texts = [r.retrieved for r in records or () if r.mode == "text"]
    if not texts:
        return out
    for label, sizes in out.items():
        depth = None if label == "all" else int(label)
        chunks = [list(retrieved[:depth]) for retrieved in texts]
        sizes["words"] = exact_mean([sum(len(c.split()) for c in top) for top in chunks]) or 0.0
        sizes["characters"] = exact_mean([sum(len(c) for c in top) for top in chunks]) or 0.0
    return out
