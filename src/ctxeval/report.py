"""A self-contained HTML report of a comparison: tables, plots, and the worst queries.

One file, images embedded as PNG data URIs, no script, no server: it opens from disk or as an
e-mail attachment. Plots need matplotlib (``pip install 'ctxeval[report]'``); the rest is the
standard library.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxeval import __version__
from ctxeval.comparison import ComparisonReport
from ctxeval.errors import CtxevalError
from ctxeval.exact import exact_mean
from ctxeval.io.atomic import atomic_write
from ctxeval.io.readers import read_records
from ctxeval.matching import MatchingStrategy, parse_strategy
from ctxeval.metrics import judge_texts
from ctxeval.optional import require
from ctxeval.records import Record
from ctxeval.results import EvaluationResult

__all__ = ["figure_html", "html_report", "pyplot", "write_html_report"]

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330;
       margin: 0; background: #f5f6f8; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 26px; margin: 8px 0 4px; } h2 { font-size: 19px; margin: 34px 0 10px; }
p.sub { color: #5b6475; margin: 0 0 18px; }
section { background: #fff; border-radius: 10px; padding: 16px 20px; margin: 16px 0;
          box-shadow: 0 1px 3px rgba(20, 30, 50, .08); }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid #e6e8ee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f2f6; font-weight: 600; }
td.best { font-weight: 700; } .sig { color: #c0392b; font-weight: 700; }
.up { color: #1e8449; } .down { color: #c0392b; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { flex: 1 1 160px; background: #f7f8fb; border-radius: 8px; padding: 10px 14px; }
.card b { display: block; font-size: 22px; }
.figs { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 16px; }
figure { margin: 0; } figure img { width: 100%; height: auto; }
figcaption { color: #5b6475; font-size: 13px; }
.query { border-top: 1px solid #e6e8ee; padding: 12px 0; }
.query h3 { font-size: 15px; margin: 0 0 6px; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(250px, 1fr)); gap: 10px; }
.col { background: #f7f8fb; border-radius: 6px; padding: 8px 10px; font-size: 13px; }
.col h4 { margin: 0 0 6px; font-size: 13px; }
.chunk { border-left: 3px solid #c9ced8; padding: 2px 8px; margin: 6px 0; white-space: pre-wrap; }
.chunk.hit { border-color: #1e8449; background: #eef8f1; }
.gt { border-left: 3px solid #1f77b4; padding: 2px 8px; background: #eef4fb;
      white-space: pre-wrap; }
.note { color: #5b6475; font-size: 13px; }
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None, digits: int = 4) -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{value:.{digits}f}")
    )


def _pyplot() -> Any:
    purpose = "drawing the HTML report's plots"
    require("matplotlib", purpose=purpose, extra="report").use("Agg")
    return require("matplotlib.pyplot", purpose=purpose, extra="report")


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(src: str, caption: str) -> str:
    return (
        f'<figure><img src="{src}" alt="{_esc(caption)}">'
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
    )


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (needs ``ctxeval[report]``), for report plots."""
    return _pyplot()


def figure_html(fig: Any, caption: str) -> str:
    """A matplotlib figure as an embedded PNG ``<figure>`` with its caption (closes ``fig``)."""
    return _figure(_png(fig), caption)


def _split(column: str) -> tuple[str, int | None]:
    name, _, k = column.partition("@")
    return name, int(k) if k.isdigit() else None


def _curves(results: Mapping[str, EvaluationResult]) -> str | None:
    """Precision and recall at every k the runs were evaluated at."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.6))
    drawn = False
    for (name, result), color in zip(results.items(), _COLORS * 4, strict=False):
        for ax, metric in zip(axes, ("context_precision", "context_recall"), strict=True):
            points = sorted(
                (k, value)
                for column, value in result.aggregate.items()
                for base, k in [_split(column)]
                if base == metric and k is not None and value is not None
            )
            if len(points) >= 2:
                ks, values = zip(*points, strict=True)
                ax.plot(ks, values, marker="o", color=color, label=name)
                drawn = True
    if not drawn:
        plt.close(fig)
        return None
    for ax, title in zip(axes, ("context precision @ k", "context recall @ k"), strict=True):
        ax.set_title(title)
        ax.set_xlabel("k (retrieved contexts)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[1].legend(loc="lower right", fontsize=9)
    return _figure(_png(fig), "Precision and recall at each cut-off, per run (macro averages).")


def _rr_column(result: EvaluationResult) -> str | None:
    columns = [c for c in result.aggregate if _split(c)[0] == "reciprocal_rank"]
    if not columns:
        return None
    return max(columns, key=lambda c: _split(c)[1] or 10**9)


def _first_rank_plot(results: Mapping[str, EvaluationResult]) -> str | None:
    """Where the first relevant context appears (1/RR), and how often it never does."""
    plt = _pyplot()
    counts: dict[str, dict[int, int]] = {}
    depth = 1
    for name, result in results.items():
        column = _rr_column(result)
        if column is None:
            continue
        tally: dict[int, int] = {}
        for row in result.per_query:
            rr = row.get(column)
            if rr is None:
                continue
            rank = round(1 / rr) if rr > 0 else 0
            tally[rank] = tally.get(rank, 0) + 1
            depth = max(depth, rank)
        counts[name] = tally
    if not counts:
        return None
    fig, ax = plt.subplots(figsize=(9.6, 3.4))
    labels = [str(r) for r in range(1, depth + 1)] + ["none"]
    width = 0.8 / len(counts)
    for i, ((name, tally), color) in enumerate(zip(counts.items(), _COLORS * 4, strict=False)):
        heights = [tally.get(r, 0) for r in range(1, depth + 1)] + [tally.get(0, 0)]
        positions = [x + (i - (len(counts) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(positions, heights, width=width, color=color, label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("rank of the first relevant context (lower is better)")
    ax.set_ylabel("queries")
    ax.legend(fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return _figure(
        _png(fig), "Rank of the first relevant retrieved context per query; 'none': not found."
    )


def _scatter(report: ComparisonReport, metric: str) -> str | None:
    """Per-query values of the baseline against each other run, for one metric."""
    others = [r for r in report.runs if r != report.baseline]
    if not others or metric not in report.values:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(others), figsize=(4.2 * len(others), 4.0), squeeze=False)
    base = report.values[metric][report.baseline]
    for ax, other, color in zip(axes[0], others, _COLORS[1:] * 4, strict=False):
        pairs = [
            (b, o)
            for b, o in zip(base, report.values[metric][other], strict=True)
            if b is not None and o is not None
        ]
        # Equal pairs are common (0/1 metrics): one bubble per distinct pair, sized and
        # labelled by how many queries it stands for.
        bubbles: dict[tuple[float, float], int] = {}
        for pair in pairs:
            key = (round(pair[0], 3), round(pair[1], 3))
            bubbles[key] = bubbles.get(key, 0) + 1
        if bubbles:  # one collection for every bubble: one artist per bubble is slow to draw
            points = list(bubbles.items())
            ax.scatter(
                [x for (x, _), _ in points],
                [y for (_, y), _ in points],
                s=[18 + 28 * math.sqrt(n) for _, n in points],
                alpha=0.5,
                color=color,
            )
        for (x, y), n in bubbles.items():
            if n > 1:
                ax.annotate(str(n), (x, y), fontsize=7, ha="center", va="center")
        ax.plot([0, 1], [0, 1], color="#888", linewidth=1, linestyle="--")
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(f"{report.baseline}")
        ax.set_ylabel(f"{other}")
        ax.set_title(metric, fontsize=10)
        ax.grid(alpha=0.3)
    return _figure(
        _png(fig),
        f"{metric} per query: baseline on x, each other run on y; above the diagonal the other "
        "run does better.",
    )


def _tables(report: ComparisonReport) -> tuple[str, str]:
    head = "".join(f"<th>{_esc(run)}</th>" for run in report.runs)
    body = []
    for row in report.rows:
        cells = []
        for run in report.runs:
            classes = "best" if run in row.best else ""
            mark = ' <span class="sig">*</span>' if row.significant.get(run) else ""
            cells.append(f'<td class="{classes}">{_fmt(row.means.get(run))}{mark}</td>')
        body.append(f"<tr><td>{_esc(row.metric)}</td>{''.join(cells)}</tr>")
    means = (
        f"<table><thead><tr><th>metric</th>{head}</tr></thead><tbody>"
        f"{''.join(body)}</tbody></table>"
        f'<p class="note">Bold: best mean. <span class="sig">*</span>: different from the '
        f"baseline <b>{_esc(report.baseline)}</b> after correction ({_esc(report.legend())})</p>"
    )
    rows = []
    for item in report.comparisons:
        trend = (
            ""
            if item.diff is None
            else ("up" if item.diff > 0 else "down" if item.diff < 0 else "")
        )
        mark = ' <span class="sig">*</span>' if item.significant else ""
        rows.append(
            f"<tr><td>{_esc(item.metric)}</td><td>{_esc(item.run)}</td>"
            f'<td class="{trend}">{_fmt(item.diff)}</td>'
            f"<td>[{_fmt(item.ci_low)}, {_fmt(item.ci_high)}]</td>"
            f"<td>{_fmt(item.p_value)}</td><td>{_fmt(item.p_adjusted)}{mark}</td>"
            f"<td>{item.wins} / {item.ties} / {item.losses}</td><td>{item.queries}</td></tr>"
        )
    pairs = (
        "<table><thead><tr><th>metric</th><th>run</th><th>diff vs baseline</th>"
        f"<th>{round(100 * (1 - report.alpha))}% CI</th><th>p</th><th>p adjusted</th>"
        "<th>wins / ties / losses</th><th>queries</th></tr></thead><tbody>"
        f"{''.join(rows)}</tbody></table>"
    )
    return means, pairs


def _load_records(
    path: str | os.PathLike[str] | Any, ids: set[str], fields: Mapping[str, str] | None
) -> dict[str, Record]:
    """The records of ``ids`` in the dataset at ``path``, read with the run's field names."""
    found: dict[str, Record] = {}
    for item in read_records(path, fields=dict(fields) if fields else None):
        if isinstance(item, Record) and item.id in ids:
            found[item.id] = item
    return found


def _run_strategy(result: EvaluationResult | None) -> MatchingStrategy | None:
    """The matching strategy the run judged its records with, rebuilt from the spec its summary
    records; None when there is none to rebuild (ID mode, a custom strategy, an older file)."""
    spec = None if result is None else result.summary.get("strategy")
    if not isinstance(spec, str):
        return None
    try:
        return parse_strategy(spec)
    except CtxevalError:
        return None


_SHOWN_CHUNKS = 3
_NOT_JUDGED = (
    "not judged again: the run does not record a matching strategy that ctxeval can rebuild (a "
    "custom strategy, several strategies, or a result saved by an older ctxeval), so no chunk "
    "is marked"
)


def _worst_queries(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    metric: str,
    datasets: Mapping[str, str | os.PathLike[str] | Any] | None,
    count: int,
) -> str:
    if metric not in report.values:
        return ""
    by_run = report.values[metric]
    scored = []
    for i, qid in enumerate(report.query_ids):
        values = [by_run[run][i] for run in report.runs]
        mean = exact_mean([v for v in values if v is not None])
        if mean is not None:
            scored.append((mean, qid, values))
    scored.sort(key=lambda item: (item[0], item[1]))
    worst = scored[:count]
    if not worst:
        return ""
    ids = {qid for _, qid, _ in worst}
    records = {
        run: _load_records(path, ids, _run_fields(results.get(run)))
        for run, path in (datasets or {}).items()
        if run in report.runs
    }
    strategies = {run: _run_strategy(results.get(run)) for run in records}
    blocks = []
    for mean, qid, values in worst:
        question = ""
        truth: list[str] = []
        for run_records in records.values():
            record = run_records.get(qid)
            if record is not None:
                question = str(record.metadata.get("question", ""))
                truth = [str(getattr(t, "text", t)) for t in record.ground_truth]
                break
        columns = []
        for run, value in zip(report.runs, values, strict=True):
            record = records.get(run, {}).get(qid)
            chunks = ""
            if record is not None and record.mode == "text":
                strategy = strategies[run]
                top = record.retrieved[:_SHOWN_CHUNKS]
                marks = [False] * len(top) if strategy is None else _matched(strategy, record)
                chunks = "".join(
                    f'<div class="chunk{" hit" if hit else ""}">{i + 1}. {_esc(_clip(text))}</div>'
                    for i, (text, hit) in enumerate(zip(top, marks, strict=True))
                )
                judged = (
                    f"matched with {_esc(strategy.spec)}" if strategy is not None else _NOT_JUDGED
                )
                chunks = f'<p class="note">{judged}</p>{chunks}'
            columns.append(
                f'<div class="col"><h4>{_esc(run)} &middot; {_esc(metric)} = {_fmt(value, 3)}</h4>'
                f"{chunks or '<span class=note>retrieved text not available</span>'}</div>"
            )
        truth_html = "".join(f'<div class="gt">{_esc(_clip(t))}</div>' for t in truth)
        blocks.append(
            f'<div class="query"><h3>{_esc(qid)}'
            f"{' &middot; ' + _esc(question) if question else ''}"
            f' <span class="note">(mean {_esc(metric)} {_fmt(mean, 3)})</span></h3>'
            f"{('<b>Ground truth</b>' + truth_html) if truth else ''}"
            f'<div class="cols">{"".join(columns)}</div></div>'
        )
    return "".join(blocks)


def _run_fields(result: EvaluationResult | None) -> Mapping[str, str] | None:
    fields = None if result is None else result.summary.get("fields")
    return fields if isinstance(fields, Mapping) else None


def _matched(strategy: MatchingStrategy, record: Record) -> list[bool]:
    """For each of the first retrieved chunks: whether the run's strategy judges it (or, for a
    sentence strategy, one of its sentences) relevant to some ground-truth item, as the metrics
    did (the ``relevant`` judgments behind context precision)."""
    judged = judge_texts(
        strategy, record.retrieved, record.ground_truth, k=_SHOWN_CHUNKS, validated=True
    ).judgments
    ends = judged.chunk_ends or tuple(range(1, judged.n + 1))
    starts = (0, *ends[:-1])
    return [any(judged.relevant[a:b]) for a, b in zip(starts, ends, strict=True)]


def _clip(text: str, limit: int = 700) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _focus_metric(
    report: ComparisonReport, order: tuple[str, ...] = ("context_recall", "ndcg", "context_f1")
) -> str:
    for base in order:
        columns = [m for m in report.metrics if _split(m)[0] == base]
        if columns:
            return max(columns, key=lambda c: _split(c)[1] or 0)
    return report.metrics[0]


def html_report(
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    *,
    datasets: Mapping[str, str | os.PathLike[str] | Any] | None = None,
    title: str = "ctxeval: retrieval comparison",
    focus: str | None = None,
    worst: int = 8,
    sections: Sequence[tuple[str, str]] = (),
) -> str:
    """Render a comparison (and the results it compared) as one self-contained HTML page.

    ``results`` are the runs' :class:`EvaluationResult`, by the names the report uses (for the
    curves and the first-relevant-rank plot); ``datasets`` the run files, by the same names, so
    that the worst queries show their retrieved and ground-truth text, read with each run's field
    names and marked as each run's matching strategy judged them (``summary["fields"]`` and
    ``summary["strategy"]`` of its result); ``focus`` the metric of
    the worst-query list (default: the deepest context recall; the scatter plot shows the
    deepest NDCG, whose per-query values spread more). A dataset may also be the records
    themselves (a list of dicts). ``sections`` are extra ``(title, html)`` parts shown after the
    summary cards (the chunking harness adds its own).
    """
    metric = focus or _focus_metric(report)
    graded = _focus_metric(report, ("ndcg", "average_precision", "context_f1", "context_recall"))
    means, pairs = _tables(report)
    figures = [
        fig
        for fig in (_curves(results), _first_rank_plot(results), _scatter(report, graded))
        if fig
    ]
    queries = report.alignment.queries
    first = next(iter(results.values()), None)
    summary = first.summary if first is not None else {}
    cards = [
        ("runs", len(report.runs)),
        ("queries compared", queries),
        ("mean relevant per query", _fmt(summary.get("mean_relevant_per_query"), 2)),
        ("baseline", report.baseline),
    ]
    notes = "".join(f"<li>{_esc(note)}</li>" for note in report.notes())
    used = "".join(f"<li>{_esc(line)}</li>" for line in report.context_lines())
    context = f"<section><b>Context used (mean per query)</b><ul>{used}</ul></section>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title><style>{_CSS}</style></head>
<body><main>
<h1>{_esc(title)}</h1>
<p class="sub">{_esc(", ".join(report.runs))} &middot; {_esc(report.legend())} &middot;
seed {report.seed}, {report.n_resamples} resamples &middot; ctxeval {__version__}</p>
<section><div class="cards">{
        "".join(f'<div class="card"><b>{_esc(v)}</b>{_esc(k)}</div>' for k, v in cards)
    }</div>{f"<ul class=note>{notes}</ul>" if notes else ""}</section>
{"".join(f"<h2>{_esc(name)}</h2><section>{body}</section>" for name, body in sections)}
<h2>Comparison</h2><section>{means}</section>
{context if used else ""}
<section>{pairs}</section>
<h2>Plots</h2><section><div class="figs">{"".join(figures)}</div></section>
<h2>Worst queries by {_esc(metric)}</h2>
<section><p class="note">The queries with the lowest {_esc(metric)} averaged over the runs, with
the ground truth and each run's top three retrieved contexts (green: relevant to the ground truth
as the run's own matching strategy judged it for its metrics). Look for answers straddling a chunk
boundary.</p>
{_worst_queries(report, results, metric, datasets, worst)}</section>
</main></body></html>
"""


def write_html_report(
    path: str | os.PathLike[str],
    report: ComparisonReport,
    results: Mapping[str, EvaluationResult],
    **options: Any,
) -> Path:
    """Write :func:`html_report` to ``path`` atomically; returns the path."""
    target = Path(path)
    page = html_report(report, results, **options)
    with atomic_write(target) as out:
        out.write(page)
    return target
