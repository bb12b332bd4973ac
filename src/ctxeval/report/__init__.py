"""Self-contained HTML reports: a comparison of runs, or a single run.

One file each, plots drawn as inline SVG by :mod:`ctxeval.report.svg` and a small inline script
(sorting and filtering the per-query table), no network: it opens from disk or as an e-mail
attachment. It needs nothing beyond ctxeval's own dependencies (no plotting library).

- :func:`write_html_report` / :func:`html_report`: a :class:`ComparisonReport` and the results it
  compared: what was compared, the tables, per-k curves with bootstrap bands, the context each
  run used, the per-query table, and the queries where the runs disagree most;
- :func:`write_result_report` / :func:`result_html`: one :class:`EvaluationResult` (what
  ``ctxeval evaluate --report`` writes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxeval.comparison import ComparisonReport
from ctxeval.comparison.curves import metric_curves
from ctxeval.comparison.queries import QueryRow, context_used, disagreement
from ctxeval.comparison.settings import run_settings
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.exact import exact_mean
from ctxeval.io.atomic import atomic_write
from ctxeval.records.model import Record
from ctxeval.report.page import (
    breakable,
    curves_plot,
    escape,
    first_rank_plot,
    fmt,
    page,
    panel,
    query_table,
    runs_table,
    scatter_plot,
    table,
)
from ctxeval.report.queries import (
    focus_metric,
    query_panel,
    question_of,
    records_by_run,
    run_strategy,
)
from ctxeval.results import EvaluationResult
from ctxeval.results.backends import check_html_path
from ctxeval.results.result import queries_from

__all__ = [
    "html_report",
    "result_html",
    "write_html_report",
    "write_result_report",
]


def _what_was_compared(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    context: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> str:
    lines = [
        f"{report.alignment.queries} queries compared, baseline <b>{escape(report.baseline)}</b>; "
        f"{escape(report.test_name())}, {report.n_resamples} resamples, seed {report.seed}, "
        f"alpha {report.alpha:g}, correction {escape(report.correction)} over "
        f"{escape(report.family())}.",
        *(escape(note) for note in [report.identical_note(), *report.notes()] if note),
    ]
    notes = "".join(f"<li>{line}</li>" for line in lines)
    return runs_table(report.settings, results, context) + f'<ul class="note">{notes}</ul>'


# -- the comparison tables ------------------------------------------------------------------------
def _tables(report: ComparisonReport) -> str:
    rows = []
    for row in report.rows:
        cells = [breakable(row.metric)]
        for run in report.runs:
            best = ' class="best"' if run == row.leader else ""
            mark = ' <span class="sig">*</span>' if row.significant.get(run) else ""
            cells.append(f"<span{best}>{fmt(row.means.get(run))}</span>{mark}")
        cells.append(breakable(row.leader or "-"))
        rows.append(cells)
    means = table(["metric", *report.runs, "best"], rows)
    pairs = []
    for item in report.comparisons:
        trend = "" if not item.diff else ("up" if item.diff > 0 else "down")
        mark = ' <span class="sig">*</span>' if item.significant else ""
        pairs.append(
            [
                escape(item.metric),
                escape(item.run),
                f'<span class="{trend}">{fmt(item.diff)}</span>',
                f"[{fmt(item.ci_low)}, {fmt(item.ci_high)}]",
                fmt(item.p_value),
                fmt(item.p_adjusted) + mark,
                f"{item.wins} / {item.ties} / {item.losses}",
                str(item.queries),
            ]
        )
    level = f"{100 * (1 - report.alpha):g}% CI"
    header = ["metric", "run", "diff", level, "p", "p adjusted", "W/T/L", "n"]
    columns = report.columns_legend()
    return (
        f'{means}<p class="note">{escape(report.legend())}</p>'
        + (f'<p class="note">{escape(columns)}</p>' if columns else "")
        + f'{table(header, pairs)}<p class="note">{escape(report.comparison_legend())}</p>'
    )


def _questions(results: Mapping[str, EvaluationResult]) -> dict[str, str]:
    found: dict[str, str] = {}
    for result in results.values():
        for row in result.per_query:
            if question := question_of(row):
                found.setdefault(str(row.get("id")), question)
    return found


def _comparison_queries(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    order: Sequence[QueryRow],
    metric: str,
) -> str:
    questions = _questions(results)
    header = ["query", "question", "spread", "mean", *report.runs]
    rows = [
        (
            row.query,
            questions.get(row.query, ""),
            [row.spread, row.mean, *row.values],
            bool(row.spread),
        )
        for row in order
    ]
    return (
        f'<p class="note">{escape(metric)} per query; spread: highest minus lowest run. Sorted by '
        "spread (the runs' widest disagreement first), then by the mean across runs. Click a "
        "header to sort.</p>" + query_table(header, rows, runs=len(report.runs))
    )


def _disagreeing_queries(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    order: Sequence[QueryRow],
    metric: str,
    records: Mapping[str, Mapping[str, Record]],
    count: int,
) -> str:
    strategies = {run: run_strategy(results.get(run)) for run in records}
    return "".join(
        query_panel(
            row.query,
            f"spread {fmt(row.spread, 3)}, mean {metric} {fmt(row.mean, 3)}",
            list(zip(report.runs, row.values, strict=True)),
            records,
            strategies,
            metric,
            opened=i < 3,
        )
        for i, row in enumerate(order[:count])
    )


def html_report(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    *,
    datasets: Mapping[str, str | os.PathLike[str] | Any] | None = None,
    title: str = "ctxeval: retrieval comparison",
    focus: str | None = None,
    worst: int = 8,
    sections: Sequence[tuple[str, str]] = (),
    lead: Sequence[tuple[str, str]] = (),
) -> str:
    """Render a comparison (and the results it compared) as one self-contained HTML page.

    ``results`` are the runs' :class:`EvaluationResult`, by the names the report uses (for the
    per-k curves, the context used and the first-relevant-rank plot); ``datasets`` each run's
    records, by the same names (a path, or the records themselves), so that the queries show
    their retrieved texts (marked as each run's matching strategy judged them) or ids (with
    their relevance), and the context used counts characters. ``focus`` is the metric of the
    per-query table (default: the deepest recall); ``worst`` how many of the queries where the
    runs disagree most are shown in full. ``sections`` are extra ``(title, html)`` panels shown
    after what was compared; ``lead`` panels open the page (a verdict).
    """
    metric = report.shown_as(focus) if focus else focus_metric(report.metrics)
    if metric not in report.values:
        raise InvalidArgumentError(
            f"focus={focus!r}: the comparison has no per-query values of that "
            f"metric; give one of {list(report.metrics)}, or compare it too "
            f"(compare(..., metrics=[..., {focus!r}]))"
        )
    graded = focus_metric(report.metrics, ("ndcg", "average_precision", "context_f1", "recall"))
    order = disagreement(report, metric)
    records = records_by_run(results, datasets, None)
    context = {run: context_used(results[run], records.get(run, {}).values()) for run in results}
    curves = metric_curves(results, seed=report.seed, alpha=report.alpha)
    figures = [first_rank_plot(results), scatter_plot(report, graded)]
    parts = [
        *(panel(name, body) for name, body in lead),
        panel("What was compared", _what_was_compared(report, results, context)),
        *(panel(name, body) for name, body in sections),
        panel("Comparison", _tables(report)),
        panel("Metrics at every cut-off", curves_plot(curves, report.alpha)),
        panel("Plots", f'<div class="figs">{"".join(f for f in figures if f)}</div>'),
        panel(f"Per query: {metric}", _comparison_queries(report, results, order, metric)),
        panel(
            "Queries where the runs disagree most",
            '<p class="note">The queries with the widest spread of '
            f"{escape(metric)} across runs (then the lowest mean), with the ground truth and each "
            "run's top retrieved items (green: relevant, as the run's own matching strategy or "
            "qrels judged it for its metrics).</p>"
            + _disagreeing_queries(report, results, order, metric, records, worst),
        ),
    ]
    subtitle = f"{escape(', '.join(report.runs))} &middot; baseline {escape(report.baseline)}"
    return page(title, subtitle, "\n".join(parts))


def write_html_report(
    path: str | os.PathLike[str],
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    **options: Any,
) -> Path:
    """Write :func:`html_report` to ``path`` atomically; returns the path. The path is checked
    first, as ``--report``'s: .html or .htm, not a directory, none of the runs' files or
    datasets (an existing page is replaced). ``report.to_html(path)`` calls this."""
    datasets = options.get("datasets")
    sources = [run_settings(result.summary).source for result in results.values()]
    given = list(datasets.values()) if isinstance(datasets, Mapping) else []
    target = Path(check_html_path(path, owner="write_html_report", inputs=sources + given))
    page = html_report(report, results, **options)
    with atomic_write(target) as out:
        out.write(page)
    return target


# -- a single run ---------------------------------------------------------------------------------
def _cutoff_order(label: str) -> tuple[int, str, float]:
    """Counts by size, then budgets by unit and size, then the whole list ("all")."""
    if label.isdigit():
        return (0, "", int(label))
    if label == "all":
        return (2, "", 0)
    size = label[:-1]
    return (1, label[-1:], float(size) if size.isdigit() else 0)


def _aggregate_table(result: EvaluationResult, curves: Mapping[str, Any]) -> str:
    """The aggregate as measures x cut-offs, each mean with its bootstrap interval below it."""
    bands = {
        f"{measure}@{point.k}": point
        for measure, by_run in curves.items()
        for points in by_run.values()
        for point in points
    }
    grid: dict[str, dict[str, str]] = {}
    for column, value in result.aggregate.items():
        measure, _, label = column.partition("@")
        band = bands.get(column)
        interval = "" if band is None else f"<br><small>[{fmt(band.low)}, {fmt(band.high)}]</small>"
        grid.setdefault(measure, {})[label or "all"] = fmt(value) + interval
    ks = sorted(dict.fromkeys(k for cells in grid.values() for k in cells), key=_cutoff_order)
    rows = [[escape(m), *(cells.get(k, "") for k in ks)] for m, cells in grid.items()]
    header = ["metric", *(f"@{k}" for k in ks)]
    note = '<p class="note">Macro means (micro_: pooled over queries); below each at a count '
    note += "cut-off, the 95% percentile bootstrap interval of the mean.</p>"
    return table(header, rows) + note


def result_html(
    result: EvaluationResult,
    *,
    dataset: str | os.PathLike[str] | Any | None = None,
    title: str = "ctxeval: retrieval evaluation",
    focus: str | None = None,
    worst: int = 8,
    seed: int = 0,
) -> str:
    """Render one run as a self-contained HTML page: what was evaluated, the aggregate with
    bootstrap intervals, every metric at every cut-off, the context used, the per-query table
    (lowest first) and the lowest-scoring queries with their retrieved items (``dataset``: the
    run's records, a path or the records themselves)."""
    source = run_settings(result.summary).source
    name = Path(source).stem if source else "run"
    results = {name: result}
    columns = [c for c in result.aggregate if not c.startswith("micro_")]
    if not columns:
        raise InvalidArgumentError(
            "the result has no metric column to report (no query was scored?); evaluate a "
            "dataset with at least one record"
        )
    metric = focus or focus_metric(columns)
    if metric not in columns:
        raise InvalidArgumentError(
            f"focus={focus!r}: the result has no per-query column of that name; give one of "
            f"{columns}"
        )
    scored = [
        (row[metric], str(row.get("id")), question_of(row))
        for row in result.per_query
        if row.get(metric) is not None
    ]
    scored.sort(key=lambda item: (item[0], item[1]))
    records = records_by_run(results, {name: dataset} if dataset is not None else None, None)
    context = {name: context_used(result, records.get(name, {}).values())}
    curves = metric_curves(results, seed=seed)
    mean = exact_mean(v for v, _, _ in scored)
    strategies = {name: run_strategy(result)}
    panels = "".join(
        query_panel(
            qid, f"{metric} {fmt(v, 3)}", [(name, v)], records, strategies, metric, opened=i < 3
        )
        for i, (v, qid, _) in enumerate(scored[:worst])
    )
    table = query_table(
        ["query", "question", metric],
        [(qid, question, [v], False) for v, qid, question in scored],
    )
    parts = [
        panel(
            "What was evaluated",
            runs_table({name: run_settings(result.summary)}, results, context),
        ),
        panel("Aggregate", _aggregate_table(result, curves)),
        panel("Metrics at every cut-off", curves_plot(curves, 0.05)),
        panel("Plots", f'<div class="figs">{first_rank_plot(results)}</div>'),
        panel(f"Per query: {metric} (mean {fmt(mean)})", table),
        panel(f"Lowest {metric}", panels),
    ]
    subtitle = escape(queries_from(result.summary.get("queries", 0), name))
    return page(title, subtitle, "\n".join(parts))


def write_result_report(
    path: str | os.PathLike[str], result: EvaluationResult, **options: Any
) -> Path:
    """Write :func:`result_html` to ``path`` atomically; returns the path. The path is checked
    first, as ``--report``'s: .html or .htm, not a directory, neither the run's dataset nor its
    source file (an existing page is replaced). ``result.to_html(path)`` calls this."""
    inputs = [result.summary.get("source"), options.get("dataset")]
    target = Path(check_html_path(path, owner="write_result_report", inputs=inputs))
    page = result_html(result, **options)
    with atomic_write(target) as out:
        out.write(page)
    return target
