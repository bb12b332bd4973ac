"""Compare runs on the same queries: means side by side, paired tests, Holm, wins/ties/losses.

:func:`compare` aligns the per-query rows of two or more :class:`EvaluationResult` by query id,
compares every run with a baseline on every metric, and returns one :class:`ComparisonReport`
that renders as a terminal table, Markdown, LaTeX, a dict or a DataFrame. Its data are plain
dataclass rows (:class:`MetricRow`, :class:`PairedComparison`), so other renderings (HTML) read
the same attributes.

One job per module:

- :mod:`~ctxeval.comparison.inputs`: loading, naming and aligning the runs;
- :mod:`~ctxeval.comparison.stats`: random streams, the randomization test, the bootstrap, Holm;
- :mod:`~ctxeval.comparison.model`: the report's data;
- :mod:`~ctxeval.comparison.render`: its renderings.

Reproducibility: every random draw comes from a PCG64 stream derived from ``seed``, the metric
name and the test (:func:`random_stream`), so the same seed gives the same report to the last
digit, and adding or removing a metric or a run leaves the other p-values and intervals as they
were. Means are exact (:mod:`ctxeval.exact`): a run's mean over the same queries equals its
aggregate to the last bit. docs/comparing.md has the definitions.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ctxeval.comparison.inputs import (
    RunInput,
    align_runs,
    choose_metrics,
    index_rows,
    named_runs,
    value_of,
)
from ctxeval.comparison.model import (
    Alignment,
    ComparisonReport,
    MetricRow,
    PairedComparison,
    RunAlignment,
)
from ctxeval.comparison.stats import (
    TIE_TOLERANCE,
    best_runs,
    holm,
    paired_statistics,
    random_stream,
)
from ctxeval.errors import InvalidArgumentError
from ctxeval.exact import exact_mean
from ctxeval.validation import check_choice

__all__ = [
    "TIE_TOLERANCE",
    "Alignment",
    "ComparisonReport",
    "MetricRow",
    "PairedComparison",
    "RunAlignment",
    "compare",
    "holm",
    "random_stream",
]

Test = Literal["randomization", "bootstrap"]
Correction = Literal["holm", "none"]
Align = Literal["intersection", "error"]


def compare(
    runs: Mapping[str, RunInput] | Sequence[RunInput],
    *,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    test: Test = "randomization",
    n_resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    correction: Correction = "holm",
    align: Align = "intersection",
) -> ComparisonReport:
    """Compare two or more runs on the same queries, each against ``baseline``.

    ``runs``: ``{name: result}`` or a list of results, where a result is an
    :class:`EvaluationResult` or the path of one saved with ``result.save`` (a list names each
    run after the file stem of its ``summary["source"]``, made unique). ``metrics``: result
    columns such as ``"context_recall@5"`` (default: every macro column the runs share).
    ``baseline``: a run name (default: the first run).

    For every metric and every other run: each run's mean over the same queries, the mean
    per-query difference (run − baseline), a paired two-sided p-value (``test``: a sign-flip
    randomization test, or the bootstrap), a paired percentile bootstrap interval at level
    1 − ``alpha``, wins/ties/losses, and the p-value corrected across every comparison in the
    report (``correction="holm"``). ``seed`` fixes every random draw (:func:`random_stream`).

    Queries are aligned by ``id``. ``align="intersection"`` compares the queries every run has
    and warns (:class:`~ctxeval.errors.ConventionWarning`) when some are missing;
    ``align="error"`` raises instead. A query whose value is ``None`` in any run (skipped by the
    empty-ground-truth policy) is left out of that metric for every run, and counted.
    """
    owner = "compare"
    test = check_choice(owner, "test", test, ("randomization", "bootstrap"))
    correction = check_choice(owner, "correction", correction, ("holm", "none"))
    align = check_choice(owner, "align", align, ("intersection", "error"))
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral):
        raise InvalidArgumentError(
            f"compare(n_resamples={n_resamples!r}): give a whole number >= 1 (10000 is usual)"
        )
    if n_resamples < 1:
        raise InvalidArgumentError(
            f"compare(n_resamples={n_resamples}): give a whole number >= 1 (10000 is usual)"
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidArgumentError(f"compare(seed={seed!r}): give a whole number >= 0")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < float(alpha) < 1:
        raise InvalidArgumentError(
            f"compare(alpha={alpha!r}): give the significance level, a number between 0 and 1 "
            "(0.05 is usual)"
        )
    n_resamples, seed, alpha = int(n_resamples), int(seed), float(alpha)

    named = named_runs(runs)
    names = [name for name, _ in named]
    if baseline is None:
        baseline = names[0]
    elif baseline not in names:
        raise InvalidArgumentError(
            f"compare(baseline={baseline!r}): no run has that name; runs: {names}"
        )
    others = [name for name in names if name != baseline]

    indexed = [(name, index_rows(name, result)) for name, result in named]
    alignment, query_ids = align_runs(indexed, align)
    chosen = choose_metrics(named, metrics)

    values: dict[str, dict[str, list[float | None]]] = {}
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for metric in chosen:
        by_run = {
            name: [value_of(name, metric, qid, table[qid]) for qid in query_ids]
            for name, table in indexed
        }
        values[metric] = by_run
        keep = [
            i for i in range(len(query_ids)) if all(by_run[name][i] is not None for name in names)
        ]
        excluded = len(query_ids) - len(keep)
        matrix = np.array(
            [[by_run[name][i] for name in names] for i in keep], dtype=np.float64
        ).reshape(len(keep), len(names))
        means = {name: exact_mean(matrix[:, j]) for j, name in enumerate(names)}
        rows.append({"metric": metric, "means": means, "queries": len(keep), "excluded": excluded})
        base = matrix[:, names.index(baseline)]
        diffs = np.stack([matrix[:, names.index(o)] - base for o in others], axis=1)
        diffs = diffs.reshape(len(keep), len(others))
        diffs[np.abs(diffs) <= TIE_TOLERANCE] = 0.0
        stats = paired_statistics(diffs, metric, test, n_resamples, seed, alpha)
        for j, other in enumerate(others):
            pending.append(
                {
                    "metric": metric,
                    "run": other,
                    "baseline": baseline,
                    "queries": len(keep),
                    "excluded": excluded,
                    "baseline_mean": means[baseline],
                    "run_mean": means[other],
                    **stats[j],
                }
            )

    raw = [item["p_value"] for item in pending]
    tested = [i for i, p in enumerate(raw) if p is not None]
    if correction == "holm":
        adjusted_tested = holm([raw[i] for i in tested])
    else:
        adjusted_tested = [raw[i] for i in tested]
    adjusted: list[float | None] = [None] * len(raw)
    for i, p in zip(tested, adjusted_tested, strict=True):
        adjusted[i] = p
    comparisons = [
        PairedComparison(**item, p_adjusted=p, significant=p is not None and p < alpha)
        for item, p in zip(pending, adjusted, strict=True)
    ]
    metric_rows = []
    for row in rows:
        marks = {name: False for name in names}
        for item in comparisons:
            if item.metric == row["metric"]:
                marks[item.run] = item.significant
        metric_rows.append(MetricRow(**row, best=best_runs(row["means"]), significant=marks))
    return ComparisonReport(
        runs=tuple(names),
        baseline=baseline,
        metrics=tuple(chosen),
        rows=metric_rows,
        comparisons=comparisons,
        alignment=alignment,
        test=test,
        n_resamples=n_resamples,
        seed=seed,
        alpha=alpha,
        correction=correction,
        query_ids=query_ids,
        values=values,
        context_used={
            name: used
            for name, result in named
            if (used := (getattr(result, "summary", None) or {}).get("context_used"))
        },
    )
