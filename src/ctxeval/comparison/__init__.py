"""Compare runs on the same queries: means side by side, paired tests, Holm, wins/ties/losses.

:func:`compare` aligns the per-query rows of two or more :class:`EvaluationResult` by query id,
compares every run with a baseline on every metric, and returns one :class:`ComparisonReport`
that renders as a terminal table, Markdown, LaTeX, a dict or a DataFrame. Its data are plain
dataclass rows (:class:`MetricRow`, :class:`PairedComparison`), so other renderings (HTML) read
the same attributes.

One job per module:

- :mod:`~ctxeval.comparison.inputs`: loading, naming and aligning the runs;
- :mod:`~ctxeval.comparison.family`: the metrics compared when none are named;
- :mod:`~ctxeval.comparison.collapse`: metrics whose per-query values are identical;
- :mod:`~ctxeval.comparison.stats`: random streams, the randomization test, the bootstrap, Holm,
  the leader;
- :mod:`~ctxeval.comparison.settings`: what each run was evaluated with;
- :mod:`~ctxeval.comparison.model`: the report's data;
- :mod:`~ctxeval.comparison.render`: its renderings;
- :mod:`~ctxeval.comparison.curves` and :mod:`~ctxeval.comparison.queries`: the data of the HTML
  report's per-k curves and per-query views.

Reproducibility: every random draw comes from a PCG64 stream derived from ``seed``, the metric
name and the test (:func:`random_stream`), so the same seed gives the same report to the last
digit, and adding or removing a metric or a run leaves the other p-values and intervals as they
were. Means are exact (:mod:`ctxeval.foundation.exact`): a run's mean over the same queries equals
its aggregate to the last bit. docs/comparing.md has the definitions.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from ctxeval.comparison.collapse import identical_groups
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
from ctxeval.comparison.settings import (
    RunSettings,
    UnlikeRunsWarning,
    run_settings,
    warn_unlike,
)
from ctxeval.comparison.stats import (
    TIE_TOLERANCE,
    best_runs,
    holm,
    leader,
    paired_statistics,
    random_stream,
)
from ctxeval.comparison.verdict import Duel, Standing, Verdict, verdict
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.exact import exact_mean
from ctxeval.foundation.params import check_choice

__all__ = [
    "TIE_TOLERANCE",
    "Alignment",
    "ComparisonReport",
    "Duel",
    "MetricRow",
    "PairedComparison",
    "RunAlignment",
    "RunSettings",
    "Standing",
    "UnlikeRunsWarning",
    "Verdict",
    "compare",
    "holm",
    "random_stream",
    "verdict",
]

Test = Literal["randomization", "bootstrap"]
Correction = Literal["holm", "none"]
Align = Literal["intersection", "error"]


def compare(
    runs: Mapping[str, RunInput] | Sequence[RunInput],
    *,
    metrics: Sequence[str] | Literal["all"] | None = None,
    baseline: str | None = None,
    test: Test = "randomization",
    n_resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    correction: Correction = "holm",
    align: Align = "intersection",
    collapse: bool = True,
) -> ComparisonReport:
    """Compare two or more runs on the same queries, each against ``baseline``.

    ``runs``: ``{name: result}`` or a list of results, where a result is an
    :class:`EvaluationResult` or the path of one saved with ``result.save`` (a list names each
    run after the file stem of its ``summary["source"]``, made unique). ``metrics``: result
    columns such as ``"context_recall@5"``; by default recall (``context_recall`` for text
    runs) and NDCG at the deepest cut-off the runs share (the largest budget when they have
    budgets), every metric there when they have neither, as ``ctxeval compare`` does
    (:mod:`ctxeval.comparison.family`); ``"all"``: every metric at its deepest cut-off.
    ``baseline``: a run name (default: the first run).

    For every metric and every other run: each run's mean over the same queries, the mean
    per-query difference (run − baseline), a paired two-sided p-value (``test``: a sign-flip
    randomization test, or the bootstrap), a paired percentile bootstrap interval at level
    1 − ``alpha``, wins/ties/losses, and the p-value corrected across every comparison in the
    report (``correction="holm"``). ``seed`` fixes every random draw (:func:`random_stream`).

    ``collapse=True``: metrics whose per-query values are identical in every run (average
    precision and reciprocal rank when each query has one relevant item) are compared once,
    under the first one's name; ``report.identical`` lists the others. The correction's family
    is the comparisons the report shows: each distinct metric × each non-baseline run.
    ``row.leader`` names the best run only when its lead is significant.

    Queries are aligned by ``id``. ``align="intersection"`` compares the queries every run has
    and warns (:class:`~ctxeval.foundation.errors.ConventionWarning`) when some are missing;
    ``align="error"`` raises instead. A query whose value is ``None`` in any run (skipped by the
    empty-ground-truth policy) is left out of that metric for every run, and counted.
    """
    test, correction, align, n_resamples, seed, alpha = _checked_options(
        test, correction, align, n_resamples, seed, alpha
    )
    named = named_runs(runs)
    names = [name for name, _ in named]
    baseline = _baseline(names, baseline)
    indexed = [(name, index_rows(name, result)) for name, result in named]
    alignment, query_ids = align_runs(indexed, align)
    chosen = choose_metrics(named, metrics)
    values = _aligned_values(indexed, chosen, query_ids)
    identical = identical_groups(values) if collapse else {m: () for m in chosen}
    shown = list(identical)
    settings = _TestSettings(test, n_resamples, seed, alpha, correction)
    rows, comparisons = _compare_metrics(values, shown, names, baseline, settings)
    judged = {name: run_settings(result.summary) for name, result in named}
    warn_unlike(judged)
    return ComparisonReport(
        runs=tuple(names),
        baseline=baseline,
        metrics=tuple(shown),
        rows=rows,
        comparisons=comparisons,
        alignment=alignment,
        test=test,
        n_resamples=n_resamples,
        seed=seed,
        alpha=alpha,
        correction=correction,
        query_ids=query_ids,
        values={metric: values[metric] for metric in shown},
        identical={metric: equal for metric, equal in identical.items() if equal},
        settings=judged,
        results=dict(named),
        context_used=_context_used(named),
    )


def _aligned_values(
    indexed: list[tuple[str, Any]], metrics: Sequence[str], query_ids: Sequence[Any]
) -> dict[str, dict[str, list[Any]]]:
    """Each metric's per-query values in every run, on the aligned queries, in their order."""
    return {
        metric: {
            name: [value_of(name, metric, qid, table[qid]) for qid in query_ids]
            for name, table in indexed
        }
        for metric in metrics
    }


def _context_used(named: list[tuple[str, Any]]) -> dict[str, Any]:
    """The context each run fed at each cut-off, where its summary says."""
    return {
        name: used
        for name, result in named
        if (used := (getattr(result, "summary", None) or {}).get("context_used"))
    }


class _TestSettings(NamedTuple):
    """How every comparison of a report is tested and corrected."""

    test: str
    n_resamples: int
    seed: int
    alpha: float
    correction: str


def _checked_options(
    test: str, correction: str, align: str, n_resamples: Any, seed: Any, alpha: Any
) -> tuple[Any, Any, Any, int, int, float]:
    """:func:`compare`'s options, checked: the choices as given, the numbers as int, int and
    float."""
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
    return test, correction, align, int(n_resamples), int(seed), float(alpha)


def _baseline(names: list[str], baseline: str | None) -> str:
    """The baseline run's name (default: the first run's)."""
    if baseline is None:
        return names[0]
    if baseline not in names:
        raise InvalidArgumentError(
            f"compare(baseline={baseline!r}): no run has that name; runs: {names}"
        )
    return baseline


def _compare_metrics(
    values: dict[str, dict[str, list[float | None]]],
    shown: list[str],
    names: list[str],
    baseline: str,
    settings: _TestSettings,
) -> tuple[list[MetricRow], list[PairedComparison]]:
    """Every shown metric's row, and its comparisons of each other run with the baseline, the
    p-values corrected across all of them."""
    others = [name for name in names if name != baseline]
    test, n_resamples, seed, alpha, correction = settings
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for metric in shown:
        row, stats = _paired(
            values[metric], names, baseline, metric, test, n_resamples, seed, alpha
        )
        rows.append({"metric": metric, **row})
        for j, other in enumerate(others):
            pending.append(
                {
                    "metric": metric,
                    "run": other,
                    "baseline": baseline,
                    "queries": row["queries"],
                    "excluded": row["excluded"],
                    "baseline_mean": row["means"][baseline],
                    "run_mean": row["means"][other],
                    **stats[j],
                }
            )

    adjusted = _corrected([item["p_value"] for item in pending], correction)
    comparisons = [
        PairedComparison(**item, p_adjusted=p, significant=p is not None and p < alpha)
        for item, p in zip(pending, adjusted, strict=True)
    ]
    metric_rows = [_metric_row(row, names, baseline, comparisons) for row in rows]
    return metric_rows, comparisons


def _paired(
    by_run: dict[str, list[float | None]],
    names: list[str],
    baseline: str,
    metric: str,
    test: str,
    n_resamples: int,
    seed: int,
    alpha: float,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One metric: each run's mean over the queries every run has a value for, and each other
    run's paired statistics against the baseline."""
    count = len(by_run[names[0]])
    keep = [i for i in range(count) if all(by_run[name][i] is not None for name in names)]
    matrix = np.array(
        [[by_run[name][i] for name in names] for i in keep], dtype=np.float64
    ).reshape(len(keep), len(names))
    means = {name: exact_mean(matrix[:, j]) for j, name in enumerate(names)}
    others = [name for name in names if name != baseline]
    base = matrix[:, names.index(baseline)]
    diffs = np.stack([matrix[:, names.index(o)] - base for o in others], axis=1)
    diffs = diffs.reshape(len(keep), len(others))
    diffs[np.abs(diffs) <= TIE_TOLERANCE] = 0.0
    stats = paired_statistics(diffs, metric, test, n_resamples, seed, alpha)
    row = {"means": means, "queries": len(keep), "excluded": count - len(keep)}
    return row, stats


def _corrected(raw: list[float | None], correction: str) -> list[float | None]:
    """The p-values after the correction, over every comparison that has a test."""
    tested = [i for i, p in enumerate(raw) if p is not None]
    given = [raw[i] for i in tested]
    fixed = holm(given) if correction == "holm" else given  # type: ignore[arg-type]
    adjusted: list[float | None] = [None] * len(raw)
    for i, p in zip(tested, fixed, strict=True):
        adjusted[i] = p
    return adjusted


def _metric_row(
    row: dict[str, Any], names: list[str], baseline: str, comparisons: list[PairedComparison]
) -> MetricRow:
    own = {item.run: item for item in comparisons if item.metric == row["metric"]}
    marks = {name: name in own and own[name].significant for name in names}
    best = best_runs(row["means"])
    return MetricRow(
        **row, best=best, significant=marks, leader=leader(best, baseline, own.values())
    )
