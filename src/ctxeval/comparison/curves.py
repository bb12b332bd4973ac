"""Each metric at every cut-off, per run, with a bootstrap band: the data of the report's per-k
curves. The centre of each point is the run's aggregate (the one exact mean); the band is the
percentile bootstrap interval of that mean (:func:`~ctxeval.comparison.stats.mean_interval`),
drawn from a stream keyed by the seed, the column and the run, so it does not move when runs or
metrics are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ctxeval.comparison.stats import mean_interval, random_stream
from ctxeval.cutoffs.cutoff import budget_problem, parse_budget
from ctxeval.results import EvaluationResult, PerQueryTable

__all__ = ["BAND_RESAMPLES", "CurvePoint", "column_values", "metric_curves"]

#: Resamples of each band: a drawn band needs far fewer than a p-value, and a report draws one
#: per run, metric and cut-off.
BAND_RESAMPLES = 1000


@dataclass(frozen=True)
class CurvePoint:
    """One run's ``measure`` at cut-off ``k``: its mean over ``queries`` and the band."""

    k: int
    mean: float
    low: float
    high: float
    queries: int
    unit: str = "k"
    """What ``k`` counts: ``"k"`` (chunks), or a budget's unit (``"words"``, ``"characters"``,
    ``"tokens"``)."""


def _cut_off(label: str) -> tuple[int, str] | None:
    """A column's cut-off as ``(size, unit)``: ``(5, "k")``, ``(300, "words")``; None for the
    whole list."""
    if label.isdigit():
        return int(label), "k"
    if label and budget_problem(label) is None:
        budget = parse_budget(label)
        return budget.size, budget.unit_name
    return None


def metric_curves(
    results: Mapping[str, EvaluationResult],
    *,
    seed: int = 0,
    alpha: float = 0.05,
    n_resamples: int = BAND_RESAMPLES,
) -> dict[str, dict[str, list[CurvePoint]]]:
    """``{panel: {run: points in order of k}}`` for every macro column with a cut-off,
    measures in the order of the first run's columns: a measure's counts in one panel (named
    by the measure), its budgets in one panel per unit (``"ndcg @ words"``)."""
    curves: dict[str, dict[str, list[CurvePoint]]] = {}
    for run, result in results.items():
        for column, mean in result.aggregate.items():
            measure, _, label = column.partition("@")
            cut = _cut_off(label)
            if column.startswith("micro_") or cut is None or mean is None:
                continue
            k, unit = cut
            point = _point(run, column, k, mean, result, seed, alpha, n_resamples, unit)
            if point is not None:
                panel = measure if unit == "k" else f"{measure} @ {unit}"
                curves.setdefault(panel, {}).setdefault(run, []).append(point)
    for by_run in curves.values():
        for points in by_run.values():
            points.sort(key=lambda point: point.k)
    return curves


def column_values(result: EvaluationResult, column: str) -> list[object]:
    """One column of a result's per-query rows (None where a row lacks it), read from the
    table's column when the rows are a :class:`PerQueryTable` (no row is built)."""
    rows = result.per_query
    if isinstance(rows, PerQueryTable):
        return rows.column(column)
    return [row.get(column) for row in rows]


def _point(
    run: str,
    column: str,
    k: int,
    mean: float,
    result: EvaluationResult,
    seed: int,
    alpha: float,
    n_resamples: int,
    unit: str = "k",
) -> CurvePoint | None:
    values = np.array(
        [value for value in column_values(result, column) if value is not None],
        dtype=np.float64,
    )
    if not len(values):
        return None
    rng = random_stream(seed, f"{column}\n{run}", "bootstrap")
    low, high = mean_interval(values, rng, n_resamples, alpha)
    return CurvePoint(k=k, mean=mean, low=low, high=high, queries=len(values), unit=unit)
