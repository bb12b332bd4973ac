"""The pieces of ctxeval's HTML pages: styles, the per-query table's script, panels, tables,
and the plots (per-k curves with bands, first relevant rank, per-query scatter)."""

from __future__ import annotations

import base64
import functools
import html
import io
import math
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from ctxeval.comparison import ComparisonReport
from ctxeval.comparison.curves import BAND_RESAMPLES, CurvePoint
from ctxeval.comparison.family import characters_fed, deepest_columns, label_depth
from ctxeval.comparison.settings import RunSettings
from ctxeval.foundation.optional import require
from ctxeval.results import EvaluationResult

__all__ = [
    "breakable",
    "clip",
    "ctxeval_version",
    "curves_plot",
    "escape",
    "figure_html",
    "first_rank_plot",
    "fmt",
    "page",
    "panel",
    "pyplot",
    "query_table",
    "runs_table",
    "scatter_plot",
    "table",
]

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
#: Rows of the per-query table: enough for any review, small enough for a browser.
_TABLE_ROWS = 5000

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330;
       margin: 0; background: #f5f6f8; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 26px; margin: 8px 0 4px; } h2 { font-size: 19px; margin: 0; display: inline; }
p.sub { color: #5b6475; margin: 0 0 18px; }
section, details.panel { background: #fff; border-radius: 10px; padding: 16px 20px;
          margin: 16px 0; box-shadow: 0 1px 3px rgba(20, 30, 50, .08); }
details.panel > summary { cursor: pointer; margin-bottom: 10px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 8px; border-bottom: 1px solid #e6e8ee; text-align: right; }
th:first-child, td:first-child, td.text, th.text { text-align: left; }
thead th { background: #f0f2f6; font-weight: 600; }
table.runs td { overflow-wrap: anywhere; }
table.runs th, table.runs td { text-align: left; }
.gap { color: #888; font-size: 13px; margin: 2px 0 2px 8px; }
table.fit { width: auto; display: inline-table; margin: 0 24px 12px 0; vertical-align: top; }
th.sort { cursor: pointer; user-select: none; white-space: nowrap; }
th.sort::after { content: " \\2195"; color: #999; }
td.best { font-weight: 700; } .sig { color: #c0392b; font-weight: 700; }
.up { color: #1e8449; } .down { color: #c0392b; }
.figs { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 16px; }
figure { margin: 0; } figure img { width: 100%; height: auto; }
figcaption, .note { color: #5b6475; font-size: 13px; }
.tools { margin: 0 0 8px; display: flex; gap: 16px; align-items: center; font-size: 14px; }
.tools input[type=search] { flex: 1; padding: 5px 8px; }
.scroll { max-height: 520px; overflow: auto; }
.wide { overflow-x: auto; }
details.query { border-top: 1px solid #e6e8ee; padding: 8px 0; }
details.query > summary { cursor: pointer; font-weight: 600; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(250px, 1fr)); gap: 10px;
        margin-top: 8px; }
.col { background: #f7f8fb; border-radius: 6px; padding: 8px 10px; font-size: 13px; }
.col h4 { margin: 0 0 6px; font-size: 13px; }
.chunk { border-left: 3px solid #c9ced8; padding: 2px 8px; margin: 6px 0; white-space: pre-wrap;
         overflow-wrap: anywhere; }
.chunk.hit { border-color: #1e8449; background: #eef8f1; }
.gt { border-left: 3px solid #1f77b4; padding: 2px 8px; background: #eef4fb;
      white-space: pre-wrap; overflow-wrap: anywhere; }
"""

# Sorting (click a header) and filtering (text, "only where the runs differ") of the per-query
# table; numbers sort by their data-v value.
_SCRIPT = """
document.querySelectorAll("table.queries").forEach(function (table) {
  var body = table.tBodies[0], box = table.closest("details");
  var search = box.querySelector("input[type=search]");
  var differ = box.querySelector("input[type=checkbox]");
  var count = box.querySelector(".count");
  function value(row, i) {
    var cell = row.cells[i], v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.toLowerCase() : parseFloat(v);
  }
  table.querySelectorAll("th.sort").forEach(function (th, i) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("data-dir") !== "up";
      th.setAttribute("data-dir", up ? "up" : "down");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = value(a, i), y = value(b, i);
        return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  function filter() {
    var text = search.value.toLowerCase(), shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var show = row.textContent.toLowerCase().indexOf(text) >= 0 &&
        (!differ || !differ.checked || row.getAttribute("data-differ") === "1");
      row.style.display = show ? "" : "none";
      shown += show ? 1 : 0;
    });
    count.textContent = shown + " of " + body.rows.length + " queries shown";
  }
  search.addEventListener("input", filter);
  if (differ) { differ.addEventListener("change", filter); }
  filter();
});
"""


# -- small pieces ---------------------------------------------------------------------------------
def escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def clip(text: str, limit: int = 700) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (needs ``ctxeval[report]``), for report plots."""
    purpose = "drawing the HTML report's plots"
    require("matplotlib", purpose=purpose, extra="report").use("Agg")
    return require("matplotlib.pyplot", purpose=purpose, extra="report")


def figure_html(fig: Any, caption: str) -> str:
    """A matplotlib figure as an embedded PNG ``<figure>`` with its caption (closes ``fig``)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    src = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<figure><img src="{src}" alt="{escape(caption)}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def panel(title: str, body: str, *, opened: bool = True) -> str:
    """A collapsible section: its title is the ``<h2>`` of the ``<summary>``."""
    state = " open" if opened else ""
    return (
        f'<details class="panel"{state}><summary><h2>{escape(title)}</h2></summary>{body}</details>'
    )


def breakable(name: str) -> str:
    """A run or metric name escaped, with a line-break opportunity after each ``+`` and ``_``
    and before ``@`` (so ``paragraphs+hybrid`` heads a narrow column on two lines, not a wide
    one)."""
    marked = escape(name).replace("+", "+<wbr>").replace("_", "_<wbr>").replace("@", "<wbr>@")
    return marked.removeprefix("<wbr>")


def table(header: Sequence[str], rows: Sequence[Sequence[str]], classes: str = "") -> str:
    """A table of cells already in HTML; ``header`` is escaped."""
    head = "".join(f"<th>{breakable(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


@functools.cache
def ctxeval_version() -> str:
    """The installed ctxeval's version (the distribution's metadata, which ``ctxeval.__version__``
    matches), or ``"unknown"`` when run from a source tree that is not installed. Read from the
    metadata so that no stage imports the root package ``ctxeval``, whose lazy re-exports import
    the stages."""
    try:
        return metadata.version("ctxeval")
    except metadata.PackageNotFoundError:
        return "unknown"


def page(title: str, subtitle: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}</style></head>
<body><main>
<h1>{escape(title)}</h1>
<p class="sub">{subtitle} &middot; ctxeval {escape(ctxeval_version())}</p>
{body}
</main><script>{_SCRIPT}</script></body></html>
"""


# -- what was compared ----------------------------------------------------------------------------
def _context_cell(used: Mapping[str, Mapping[str, float]]) -> str:
    """The context at the deepest cut-off: chunks (and characters, words when known)."""
    if not used:
        return "n/a"
    fed = {label: float(sizes.get("characters") or 0.0) for label, sizes in used.items()}
    label = max(used, key=lambda label: label_depth(label, fed))  # the budget feeding most
    sizes = used[label]
    parts = [f"{sizes['chunks']:.2f} chunks"]
    if "characters" in sizes:
        parts.append(f"{sizes['characters']:,.0f} characters")
    if "words" in sizes:
        parts.append(f"{sizes['words']:,.0f} words")
    return escape(f"@{label}: " + ", ".join(parts))


def runs_table(
    settings: Mapping[str, RunSettings],
    results: Mapping[str, EvaluationResult],
    context: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> str:
    header = ["run", "file", "matching", "threshold", "convention", "cut-offs", "queries"]
    rows = []
    for run, item in settings.items():
        summary = results[run].summary if run in results else {}
        rows.append(
            [
                escape(run),
                escape(item.source or "n/a"),
                escape(item.judging()),
                # Blank where it does not apply (no threshold, no rank metric): not "n/a",
                # which reads as a setting the result failed to record.
                escape("" if item.threshold is None else f"{item.threshold:g}"),
                escape(item.convention or ""),
                escape(", ".join(item.ks) or "n/a"),
                escape(summary.get("queries", "n/a")),
                _context_cell(context.get(run, {})),
            ]
        )
    return table([*header, "context used per query"], rows, classes="runs")


# -- plots ----------------------------------------------------------------------------------------
def curves_plot(curves: Mapping[str, Mapping[str, Sequence[CurvePoint]]], alpha: float) -> str:
    """Every metric against k (and against each budget unit), one panel per metric and axis,
    each run a line with its band."""
    if not curves:
        return ""
    plt = pyplot()
    columns = min(3, len(curves))
    rows = -(-len(curves) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.8 * rows), squeeze=False)
    runs = list(dict.fromkeys(run for by_run in curves.values() for run in by_run))
    for ax, (measure, by_run) in zip(axes.flat, curves.items(), strict=False):
        for run, points in by_run.items():
            color = _COLORS[runs.index(run) % len(_COLORS)]
            ks = [p.k for p in points]
            ax.plot(ks, [p.mean for p in points], marker="o", color=color, label=run)
            ax.fill_between(ks, [p.low for p in points], [p.high for p in points], color=color,
                            alpha=0.15, linewidth=0)  # fmt: skip
        ax.set_title(measure, fontsize=10)
        ax.grid(alpha=0.3)
        unit = next(iter(by_run.values()))[0].unit
        ax.set_xlabel("k (chunks)" if unit == "k" else f"budget ({unit})", fontsize=8)
    for ax in axes.flat[len(curves) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    return figure_html(
        fig,
        f"Each metric at every cut-off (macro mean), per run; the band is the "
        f"{100 * (1 - alpha):g}% percentile bootstrap interval of the mean "
        f"({BAND_RESAMPLES} resamples).",
    )


def _rr_column(results: Mapping[str, EvaluationResult]) -> str | None:
    """The reciprocal-rank column at the deepest cut-off the runs share: the largest budget,
    ordered by the text the runs fed (as the comparison's cut-off), else the largest k."""
    summaries = [result.summary for result in results.values()]
    shared = set.intersection(*(set(result.aggregate) for result in results.values()))
    columns = [c for c in next(iter(results.values())).aggregate if c in shared]
    return deepest_columns(columns, characters_fed(summaries)).get("reciprocal_rank")


def first_rank_plot(results: Mapping[str, EvaluationResult]) -> str:
    """Where the first relevant context appears (1/RR) at the deepest cut-off the runs share,
    and how often it never does there."""
    column = _rr_column(results) if results else None
    if column is None:
        return ""
    counts: dict[str, dict[int, int]] = {}
    depth = 1
    for name, result in results.items():
        tally: dict[int, int] = {}
        for row in result.per_query:
            rr = row.get(column)
            if rr is not None:
                rank = round(1 / rr) if rr > 0 else 0
                tally[rank] = tally.get(rank, 0) + 1
                depth = max(depth, rank)
        counts[name] = tally
    fig, ax = pyplot().subplots(figsize=(9.6, 3.4))
    labels = [str(r) for r in range(1, depth + 1)] + ["none"]
    width = 0.8 / len(counts)
    for i, ((name, tally), color) in enumerate(zip(counts.items(), _COLORS * 4, strict=False)):
        heights = [tally.get(r, 0) for r in range(1, depth + 1)] + [tally.get(0, 0)]
        positions = [x + (i - (len(counts) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(positions, heights, width=width, color=color, label=name)
    ax.set_xticks(range(len(labels)), labels)
    at = column.partition("@")[2] or "all"
    ax.set_xlabel(f"rank of the first relevant context at @{at} (lower is better)")
    ax.set_ylabel("queries")
    ax.legend(fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return figure_html(
        fig,
        f"Rank of the first relevant retrieved context per query, at @{at} (the deepest "
        "cut-off the runs share); 'none': not found there.",
    )


def scatter_plot(report: ComparisonReport, metric: str) -> str:
    """Per-query values of the baseline against each other run, for one metric."""
    others = [r for r in report.runs if r != report.baseline]
    if not others or metric not in report.values:
        return ""
    fig, axes = pyplot().subplots(1, len(others), figsize=(4.2 * len(others), 4.0), squeeze=False)
    base = report.values[metric][report.baseline]
    for ax, other, color in zip(axes[0], others, _COLORS[1:] * 4, strict=False):
        # Equal pairs are common (0/1 metrics): one bubble per distinct pair, sized and
        # labelled by how many queries it stands for, drawn as one collection.
        bubbles: dict[tuple[float, float], int] = {}
        for b, o in zip(base, report.values[metric][other], strict=True):
            if b is not None and o is not None:
                key = (round(b, 3), round(o, 3))
                bubbles[key] = bubbles.get(key, 0) + 1
        points = list(bubbles.items())
        if points:
            xs, ys = [x for (x, _), _ in points], [y for (_, y), _ in points]
            sizes = [18 + 28 * math.sqrt(n) for _, n in points]
            ax.scatter(xs, ys, s=sizes, alpha=0.5, color=color)
        for (x, y), n in points:
            if n > 1:
                ax.annotate(str(n), (x, y), fontsize=7, ha="center", va="center")
        ax.plot([0, 1], [0, 1], color="#888", linewidth=1, linestyle="--")
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(report.baseline)
        ax.set_ylabel(other)
        ax.set_title(metric, fontsize=10)
        ax.grid(alpha=0.3)
    return figure_html(
        fig,
        f"{metric} per query: baseline on x, each other run on y; above the diagonal the other "
        "run does better.",
    )


# -- per query ------------------------------------------------------------------------------------
def query_table(
    header: Sequence[str],
    rows: Sequence[tuple[str, str, Sequence[float | None], bool]],
    *,
    runs: int = 1,
) -> str:
    """The sortable, filterable per-query table: ``(id, question, numbers, differ)`` rows;
    with several ``runs``, a box to keep only the queries where they differ."""
    heads = "".join(
        f'<th class="sort{" text" if i < 2 else ""}">{escape(h)}</th>' for i, h in enumerate(header)
    )
    body = []
    for qid, question, numbers, differ in rows[:_TABLE_ROWS]:
        cells = "".join(
            f'<td data-v="{-1 if v is None else v!r}">{fmt(v, 3)}</td>' for v in numbers
        )
        body.append(
            f'<tr data-differ="{int(differ)}"><td>{escape(qid)}</td>'
            f'<td class="text">{escape(clip(question, 120))}</td>{cells}</tr>'
        )
    more = len(rows) - _TABLE_ROWS
    tools = (
        '<div class="tools"><input type="search" placeholder="filter by id or question">'
        + ('<label><input type="checkbox"> only where the runs differ</label>' if runs > 1 else "")
        + '<span class="count note"></span></div>'
    )
    tail = f'<p class="note">{more} more queries not shown.</p>' if more > 0 else ""
    table = (
        f'<div class="scroll"><table class="queries"><thead><tr>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    return tools + table + tail
