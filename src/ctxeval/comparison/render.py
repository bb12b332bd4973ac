"""Renderings of a :class:`~ctxeval.comparison.model.ComparisonReport`: a terminal table,
Markdown, LaTeX (booktabs), a JSON-serialisable dict and pandas DataFrames. The report's methods
(``to_text``, ``to_markdown``, ...) call these; they read only the report's data
(:class:`~ctxeval.comparison.data.ComparisonData`), so this module does not import the report.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from ctxeval.comparison.data import ComparisonData, MetricRow, PairedComparison
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require

__all__ = [
    "md_table",
    "md_text",
    "render_latex",
    "render_markdown",
    "render_text",
    "report_dict",
    "report_frame",
]


def render_text(report: ComparisonData, digits: int = 4) -> str:
    """A plain-text report for the terminal: what was compared, the side-by-side table with its
    legend, then each run's comparison with the baseline and the columns' legend."""
    lines = [_title(report)]
    if report.settings_line():
        lines.append(report.settings_line())
    header = ["metric", *report.runs, "best"]
    body = [
        [row.metric, *(_mean_cell(row, run, digits) for run in report.runs), _best(row)]
        for row in report.rows
    ]
    lines += ["", *_text_table(header, body, left={0, len(header) - 1}), "", report.legend()]
    if report.columns_legend():
        lines.append(str(report.columns_legend()))
    if report.identical_note():
        lines.append(str(report.identical_note()))
    context = report.context_lines()
    if context:
        lines += ["", "context used (mean per query):", *(f"  {line}" for line in context)]
    for run in report.runs:
        if run == report.baseline:
            continue
        lines += ["", f"{run} vs {report.baseline}"]
        lines += _text_table(
            _comparison_header(report),
            [_comparison_cells(c, digits) for c in _of(report, run)],
            left={0},
        )
    if len(report.runs) > 1:
        lines += ["", report.comparison_legend()]
    notes = report.notes()
    if notes:
        lines += ["", *(f"note: {note}" for note in notes)]
    return "\n".join(lines)


def render_markdown(report: ComparisonData, digits: int = 4) -> str:
    """Markdown: what was compared, the side-by-side table and its legend, then a table per
    comparison and the columns' legend."""
    header = ["metric", *report.runs, "best"]
    body = [
        [row.metric, *(_mean_cell(row, run, digits) for run in report.runs), _best(row)]
        for row in report.rows
    ]
    parts = [f"**{md_text(_title(report))}**", ""]
    if report.settings_line():
        parts += [md_text(report.settings_line()), ""]
    parts += [*md_table(header, body, left={0, len(header) - 1}), "", md_text(report.legend())]
    if report.identical_note():
        parts += ["", md_text(str(report.identical_note()))]
    context = report.context_lines()
    if context:
        parts += [
            "",
            "Context used (mean per query):",
            "",
            *(f"- {md_text(line)}" for line in context),
        ]
    for run in report.runs:
        if run == report.baseline:
            continue
        parts += ["", f"### {md_text(run)} vs {md_text(report.baseline)}", ""]
        parts += md_table(
            _comparison_header(report),
            [_comparison_cells(c, digits) for c in _of(report, run)],
            left={0},
        )
    if len(report.runs) > 1:
        parts += ["", md_text(report.comparison_legend())]
    notes = report.notes()
    if notes:
        parts += ["", *(f"- {md_text(note)}" for note in notes)]
    return "\n".join(parts) + "\n"


def _title(report: ComparisonData) -> str:
    return (
        f"{len(report.runs)} runs on {report.alignment.queries} queries, baseline {report.baseline}"
    )


def render_latex(report: ComparisonData, digits: int = 4) -> str:
    """LaTeX (``booktabs``): the means table and the comparisons table.

    The best mean of each metric is bold; ``$^{*}$`` marks a significant difference from the
    baseline.
    """
    columns = "l" + "r" * len(report.runs)
    lines = [
        r"\begin{table}",
        r"\centering",
        rf"\begin{{tabular}}{{{columns}}}",
        r"\toprule",
        " & ".join(["Metric", *(_tex(run) for run in report.runs)]) + r" \\",
        r"\midrule",
    ]
    for row in report.rows:
        cells = [_tex(row.metric)]
        for run in report.runs:
            mean = row.means[run]
            cell = _number(mean, digits)
            if run in row.best:
                cell = rf"\textbf{{{cell}}}"
            if row.significant.get(run, False):
                cell += r"$^{*}$"
            cells.append(cell)
        lines.append(" & ".join(cells) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{Mean over {report.alignment.queries} queries; best in bold. "
        rf"{_tex(report.legend())}.}}",
        r"\end{table}",
    ]
    if len(report.runs) > 1:
        header = ["Run", *_comparison_header(report)]
        lines += [
            "",
            r"\begin{table}",
            r"\centering",
            rf"\begin{{tabular}}{{ll{'r' * (len(header) - 2)}}}",
            r"\toprule",
            " & ".join(_tex(h) for h in header) + r" \\",
            r"\midrule",
        ]
        for item in (c for run in report.runs for c in _of(report, run)):
            cells = [item.run, *_comparison_cells(item, digits)]
            lines.append(" & ".join(_tex(cell) for cell in cells) + r" \\")
        lines += [
            r"\bottomrule",
            r"\end{tabular}",
            rf"\caption{{Each run against {_tex(report.baseline)}: mean difference, "
            rf"{100 * (1 - report.alpha):g}\% bootstrap interval, {_tex(report.test_name())} "
            rf"p-value and {_tex(report.correction_name())}, wins/ties/losses.}}",
            r"\end{table}",
        ]
    return "\n".join(lines) + "\n"


def report_dict(report: ComparisonData, *, per_query: bool = False) -> dict[str, Any]:
    """Everything in the report as JSON-serialisable values.

    ``per_query=True`` adds ``query_ids`` and the aligned per-query ``values``.
    """
    out: dict[str, Any] = {
        "runs": list(report.runs),
        "baseline": report.baseline,
        "metrics": list(report.metrics),
        "test": report.test,
        "n_resamples": report.n_resamples,
        "seed": report.seed,
        "alpha": report.alpha,
        "correction": report.correction,
        "identical": {metric: list(equal) for metric, equal in report.identical.items()},
        "settings": {run: _plain(asdict(item)) for run, item in report.settings.items()},
        "alignment": _plain(asdict(report.alignment)),
        "rows": [_plain(asdict(row)) for row in report.rows],
        "comparisons": [_plain(asdict(item)) for item in report.comparisons],
        "context_used": report.context_used,
    }
    if per_query:
        out["query_ids"] = list(report.query_ids)
        out["values"] = {
            metric: {run: list(values) for run, values in by_run.items()}
            for metric, by_run in report.values.items()
        }
    return out


def report_frame(report: ComparisonData, table: Literal["means", "comparisons"] = "means") -> Any:
    """A pandas DataFrame (requires pandas).

    ``"means"``: one row per metric, one column per run; ``"comparisons"``: one row per
    comparison with every field of :class:`PairedComparison`.
    """
    pd = require("pandas", purpose="ComparisonReport.to_pandas()", extra="pandas")
    if table == "means":
        frame = pd.DataFrame(
            [[row.means[run] for run in report.runs] for row in report.rows],
            index=pd.Index(list(report.metrics), name="metric"),
            columns=list(report.runs),
        )
        return frame
    if table == "comparisons":
        return pd.DataFrame([asdict(item) for item in report.comparisons])
    raise InvalidArgumentError(
        f"ComparisonReport.to_pandas(table={table!r}): use 'means' or 'comparisons'"
    )


# -- cells ---------------------------------------------------------------------------------------
def _of(report: ComparisonData, run: str) -> list[PairedComparison]:
    return [item for item in report.comparisons if item.run == run]


def _mean_cell(row: MetricRow, run: str, digits: int) -> str:
    mark = "*" if row.significant.get(run, False) else ""
    return _number(row.means[run], digits) + mark


def _comparison_header(report: ComparisonData) -> list[str]:
    level = f"{100 * (1 - report.alpha):g}% CI"
    adjusted = "p (Holm)" if report.correction == "holm" else "p (adj.)"
    return ["metric", "diff", level, "p", adjusted, "W/T/L", "n"]


def _comparison_cells(item: PairedComparison, digits: int) -> list[str]:
    interval = (
        "n/a"
        if item.ci_low is None or item.ci_high is None
        else f"[{_signed(item.ci_low, digits)}, {_signed(item.ci_high, digits)}]"
    )
    mark = "*" if item.significant else ""
    return [
        item.metric,
        _signed(item.diff, digits),
        interval,
        _pvalue(item.p_value, digits),
        _pvalue(item.p_adjusted, digits) + mark,
        f"{item.wins}/{item.ties}/{item.losses}",
        str(item.queries),
    ]


# -- formatting ----------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if value != 0 else f"{0:.{digits}f}"


def _pvalue(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    if value >= 10**-digits:
        return f"{value:.{digits}f}"
    return f"{value:.1e}"


def _best(row: MetricRow) -> str:
    return row.leader or "-"


def _text_table(header: list[str], body: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in body)]


def md_text(text: str) -> str:
    """``text`` with Markdown's table and emphasis characters escaped."""
    return text.replace("|", r"\|").replace("*", r"\*")


def md_table(header: list[str], body: list[list[str]], left: set[int]) -> list[str]:
    """A Markdown table's lines, the columns in ``left`` left-aligned, the others right."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(md_text(cell) for cell in cells) + " |"

    rule = "|" + "|".join(" --- " if i in left else " ---: " for i in range(len(header))) + "|"
    return [line(header), rule, *(line(r) for r in body)]


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # Outside T1 font encoding these print as other glyphs (¡, ¿, —).
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def _tex(text: str) -> str:
    return "".join(_TEX.get(char, char) for char in text)
