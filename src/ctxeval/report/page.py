"""The pieces of ctxeval's HTML pages: styles, the per-query table's script, panels, tables,
and the plots (per-k curves with bands, first relevant rank, per-query scatter)."""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Mapping, Sequence
from importlib import metadata

from ctxeval.comparison import ComparisonReport
from ctxeval.comparison.curves import BAND_RESAMPLES, CurvePoint, column_values
from ctxeval.comparison.family import characters_fed, deepest_columns, label_depth
from ctxeval.comparison.settings import RunSettings
from ctxeval.report import svg
from ctxeval.results import EvaluationResult

__all__ = [
    "breakable",
    "clip",
    "ctxeval_version",
    "curves_plot",
    "escape",
    "first_rank_plot",
    "first_ranks",
    "fmt",
    "page",
    "panel",
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
figure { margin: 0; } figure svg { max-width: 100%; height: auto; display: block; }
.figs figure.full { grid-column: 1 / -1; }
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
// "save as SVG" under a figure: the drawing as a file of its own.
document.querySelectorAll("figure a.save").forEach(function (link) {
  link.addEventListener("click", function () {
    var drawing = link.closest("figure").querySelector("svg");
    var text = new XMLSerializer().serializeToString(drawing);
    link.href = URL.createObjectURL(new Blob([text], {type: "image/svg+xml"}));
  });
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
_PANEL_W, _PANEL_H = 356.0, 262.0


def _curve_panel(
    frame: svg.Frame, measure: str, by_run: Mapping[str, Sequence[CurvePoint]], runs: list[str]
) -> str:
    """One panel of :func:`curves_plot`: each run's band, line and points."""
    unit = next(iter(by_run.values()))[0].unit
    x_ticks = svg.ticks(*frame.x_range, count=5)
    parts = [
        svg.axes(
            frame,
            [t for t in x_ticks if frame.x_range[0] <= t[0] <= frame.x_range[1]],
            svg.ticks(*frame.y_range, count=6),
            x_label="k (chunks)" if unit == "k" else f"budget ({unit})",
            title=measure,
        )
    ]
    for run, points in by_run.items():
        color = _COLORS[runs.index(run) % len(_COLORS)]
        upper = [(frame.x(p.k), frame.y(p.high)) for p in points]
        lower = [(frame.x(p.k), frame.y(p.low)) for p in reversed(points)]
        parts.append(svg.polygon(upper + lower, color))
        parts.append(svg.polyline([(frame.x(p.k), frame.y(p.mean)) for p in points], color))
        unit_name = "" if unit == "k" else f" {unit}"
        parts.extend(
            svg.circle(
                frame.x(p.k),
                frame.y(p.mean),
                3.4,
                color,
                tip=f"{run}, {measure.partition(' @ ')[0]} at {p.k}{unit_name}: {fmt(p.mean)} "
                f"[{fmt(p.low)}, {fmt(p.high)}], {p.queries} queries",
            )
            for p in points
        )
    return "".join(parts)


def curves_plot(curves: Mapping[str, Mapping[str, Sequence[CurvePoint]]], alpha: float) -> str:
    """Every metric against k (and against each budget unit), one panel per metric and axis,
    each run a line with its band."""
    if not curves:
        return ""
    columns = min(3, len(curves))
    runs = list(dict.fromkeys(run for by_run in curves.values() for run in by_run))
    entries = [(run, _COLORS[i % len(_COLORS)], "line", "") for i, run in enumerate(runs)]
    key, height = svg.legend_row(52, 4, columns * _PANEL_W - 60, entries)
    top = height + 10
    parts = [key]
    for i, (measure, by_run) in enumerate(curves.items()):
        points = [p for ps in by_run.values() for p in ps]
        x_range = svg.padded(min(p.k for p in points), max(p.k for p in points))
        y_range = svg.padded(min(p.low for p in points), max(p.high for p in points))
        row, column = divmod(i, columns)
        frame = svg.Frame(
            left=column * _PANEL_W + 52,
            top=top + row * _PANEL_H + 24,
            width=_PANEL_W - 66,
            height=_PANEL_H - 72,
            x_range=x_range,
            y_range=y_range,
        )
        parts.append(_curve_panel(frame, measure, by_run, runs))
    rows = -(-len(curves) // columns)
    drawing = svg.svg(
        columns * _PANEL_W, top + rows * _PANEL_H, "".join(parts), "each metric at every cut-off"
    )
    return svg.figure(
        drawing,
        f"Each metric at every cut-off (macro mean), per run; the band is the "
        f"{100 * (1 - alpha):g}% percentile bootstrap interval of the mean "
        f"({BAND_RESAMPLES} resamples). Hover over a point for its numbers.",
        name="metrics-at-every-cut-off",
    )


def _rr_column(results: Mapping[str, EvaluationResult]) -> str | None:
    """The reciprocal-rank column at the deepest cut-off the runs share: the largest budget,
    ordered by the text the runs fed (as the comparison's cut-off), else the largest k."""
    summaries = [result.summary for result in results.values()]
    shared = set.intersection(*(set(result.aggregate) for result in results.values()))
    columns = [c for c in next(iter(results.values())).aggregate if c in shared]
    return deepest_columns(columns, characters_fed(summaries)).get("reciprocal_rank")


def first_ranks(
    results: Mapping[str, EvaluationResult],
) -> tuple[str, dict[str, list[int]]] | None:
    """The histogram :func:`first_rank_plot` draws: the reciprocal-rank column (at the deepest
    cut-off the runs share) and, per run, how many queries first found a relevant context at
    rank 1, 2, ... up to the deepest rank any run reached, then how many found none there.
    None without such a column."""
    column = _rr_column(results) if results else None
    if column is None:
        return None
    tallies: dict[str, dict[int, int]] = {}
    depth = 1
    for name, result in results.items():
        tally: dict[int, int] = {}
        for rr in column_values(result, column):
            if isinstance(rr, float | int):
                rank = round(1 / rr) if rr > 0 else 0
                tally[rank] = tally.get(rank, 0) + 1
                depth = max(depth, rank)
        tallies[name] = tally
    counts = {
        name: [tally.get(r, 0) for r in range(1, depth + 1)] + [tally.get(0, 0)]
        for name, tally in tallies.items()
    }
    return column, counts


def first_rank_plot(results: Mapping[str, EvaluationResult]) -> str:
    """Where the first relevant context appears (1/RR) at the deepest cut-off the runs share,
    and how often it never does there."""
    found = first_ranks(results)
    if found is None:
        return ""
    column, counts = found
    labels = [str(r) for r in range(1, len(next(iter(counts.values()))))] + ["none"]
    top = max((n for heights in counts.values() for n in heights), default=0)
    entries = [(name, color, "box", "") for name, color in zip(counts, _COLORS * 4, strict=False)]
    key, height = svg.legend_row(56, 2, 880, entries)
    frame = svg.Frame(56, height + 12, 880, 250, (-0.6, len(labels) - 0.4), (0, max(top, 1) * 1.05))
    every = max(1, math.ceil(26 / (frame.width / len(labels))))  # labels at least 26 px apart
    x_ticks = [(float(i), label) for i, label in enumerate(labels) if i % every == 0]
    at = column.partition("@")[2] or "all"
    parts = [
        svg.axes(
            frame,
            x_ticks,
            [t for t in svg.ticks(0, frame.y_range[1], 6) if t[0] <= frame.y_range[1]],
            x_label=f"rank of the first relevant context at @{at} (lower is better)",
            y_label="queries",
            grid="y",
        )
    ]
    width = 0.8 / len(counts)
    for i, ((name, heights), color) in enumerate(zip(counts.items(), _COLORS * 4, strict=False)):
        for x, (label, n) in enumerate(zip(labels, heights, strict=True)):
            middle = x + (i - (len(counts) - 1) / 2) * width
            left, right = frame.x(middle - width / 2), frame.x(middle + width / 2)
            where = "found none" if label == "none" else f"at rank {label}"
            tip = f"{name}: {n} {'query' if n == 1 else 'queries'} {where}"
            parts.append(
                svg.rect(left, frame.y(n), right - left, frame.y(0) - frame.y(n), color, tip=tip)
            )
    parts.append(key)
    drawing = svg.svg(950, frame.bottom + 46, "".join(parts), "rank of the first relevant context")
    return svg.figure(
        drawing,
        f"Rank of the first relevant retrieved context per query, at @{at} (the deepest "
        "cut-off the runs share); 'none': not found there.",
        full=True,
        name="first-relevant-rank",
    )


def _bubbles(
    base: Sequence[float | None], other: Sequence[float | None]
) -> dict[tuple[float, float], int]:
    """Equal pairs are common (0/1 metrics): one bubble per distinct pair (to 3 decimals),
    with how many queries it stands for."""
    bubbles: dict[tuple[float, float], int] = {}
    for b, o in zip(base, other, strict=True):
        if b is not None and o is not None:
            key = (round(b, 3), round(o, 3))
            bubbles[key] = bubbles.get(key, 0) + 1
    return bubbles


def _scatter_panel(
    frame: svg.Frame, report: ComparisonReport, metric: str, other: str, color: str
) -> str:
    unit = [(float(v), label) for v, label in svg.ticks(0, 1, 5)]
    parts = [
        svg.axes(frame, unit, unit, x_label=report.baseline, y_label=other, title=metric),
        svg.polyline(
            [(frame.x(0), frame.y(0)), (frame.x(1), frame.y(1))], "#888", dash="5 3", width=1
        ),
    ]
    bubbles = _bubbles(report.values[metric][report.baseline], report.values[metric][other])
    for (x, y), n in bubbles.items():
        radius = 1.25 * math.sqrt((18 + 28 * math.sqrt(n)) / math.pi)
        tip = f"{report.baseline} {x:g}, {other} {y:g}: {n} " + ("query" if n == 1 else "queries")
        parts.append(svg.circle(frame.x(x), frame.y(y), radius, color, opacity=0.5, tip=tip))
    parts.extend(
        svg.text(frame.x(x), frame.y(y) + 3, str(n), size=8, extra=' pointer-events="none"')
        for (x, y), n in bubbles.items()
        if n > 1
    )
    return "".join(parts)


def scatter_plot(report: ComparisonReport, metric: str) -> str:
    """Per-query values of the baseline against each other run, for one metric (three panels
    a row)."""
    others = [r for r in report.runs if r != report.baseline]
    if not others or metric not in report.values:
        return ""
    size, step = 300.0, 360.0
    columns = min(3, len(others))
    parts = []
    for i, (other, color) in enumerate(zip(others, _COLORS[1:] * 4, strict=False)):
        row, column = divmod(i, columns)
        frame = svg.Frame(
            column * step + 58, row * step + 24, size, size, (-0.05, 1.05), (-0.05, 1.05)
        )
        parts.append(_scatter_panel(frame, report, metric, other, color))
    rows = -(-len(others) // columns)
    drawing = svg.svg(columns * step + 10, rows * step + 10, "".join(parts), f"{metric} per query")
    return svg.figure(
        drawing,
        f"{metric} per query: baseline on x, each other run on y; above the diagonal the other "
        "run does better (a bubble per distinct pair, its number: how many queries).",
        full=len(others) > 1,
        name=f"per-query-{metric}",
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
