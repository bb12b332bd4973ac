"""The :class:`ComparisonReport`: the data of a comparison (:mod:`ctxeval.comparison.data`) with
its renderings, each delegating to :mod:`ctxeval.comparison.render` (text, Markdown, LaTeX, dict,
DataFrame) or to the HTML report backend (:mod:`ctxeval.results.backends`).

The report's row types are re-exported from :mod:`ctxeval.comparison.data`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxeval.comparison.data import (
    SHOWN_IDS,
    Alignment,
    ComparisonData,
    MetricRow,
    PairedComparison,
    RunAlignment,
    id_list,
)
from ctxeval.comparison.render import (
    render_latex,
    render_markdown,
    render_text,
    report_dict,
    report_frame,
)
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.results.backends import check_html_path, report_backend

__all__ = [
    "SHOWN_IDS",
    "Alignment",
    "ComparisonReport",
    "MetricRow",
    "PairedComparison",
    "RunAlignment",
    "id_list",
]


@dataclass
class ComparisonReport(ComparisonData):
    """The comparison of ``runs`` with ``baseline``: one object, many renderings.

    - ``rows``: one :class:`MetricRow` per metric (the side-by-side table);
    - ``comparisons``: one :class:`PairedComparison` per metric and non-baseline run, metric by
      metric in the order of ``metrics``, runs in the order of ``runs``;
    - ``alignment``: the queries compared and what each run was missing;
    - ``query_ids`` and ``values[metric][run]``: the aligned per-query values (``None`` where a
      run has none), for per-query plots;
    - ``context_used[run]``: the mean context each run fed per query at each cut-off
      (``{"300w": {"chunks": ..., "words": ..., "characters": ...}}``, over the run's scored
      queries), so that runs are compared knowing how much text each used.
    - ``identical``: ``{metric: metrics with the same per-query values}``, compared once under
      the first name (:meth:`row` and :meth:`comparison` accept either name);
    - ``settings``: each run's file, strategy, threshold, convention and cut-offs;
    - ``results``: the runs' :class:`~ctxeval.results.EvaluationResult` by name, for the HTML
      page's per-k curves and plots (not part of :meth:`to_dict`).

    Render with ``str(report)``, :meth:`to_markdown`, :meth:`to_latex`, :meth:`to_dict`,
    :meth:`to_pandas`, or save the HTML page with :meth:`to_html`.
    """

    # -- renderings (ctxeval.comparison.render) --------------------------------------------------
    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, digits: int = 4) -> str:
        """A plain-text report for the terminal: the side-by-side table, then each comparison."""
        return render_text(self, digits)

    def to_markdown(self, digits: int = 4) -> str:
        """Markdown: the side-by-side table, a legend, then a table per comparison."""
        return render_markdown(self, digits)

    def to_latex(self, digits: int = 4) -> str:
        """LaTeX (``booktabs``): the means table and the comparisons table.

        The best mean of each metric is bold; ``$^{*}$`` marks a significant difference from the
        baseline.
        """
        return render_latex(self, digits)

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """Everything in the report as JSON-serialisable values.

        ``per_query=True`` adds ``query_ids`` and the aligned per-query ``values``.
        """
        return report_dict(self, per_query=per_query)

    def to_pandas(self, table: Literal["means", "comparisons"] = "means") -> Any:
        """A pandas DataFrame (requires pandas).

        ``"means"``: one row per metric, one column per run; ``"comparisons"``: one row per
        comparison with every field of :class:`PairedComparison`.
        """
        return report_frame(self, table)

    def to_html(
        self,
        path: str | os.PathLike[str],
        *,
        datasets: Mapping[str, str | os.PathLike[str] | Any] | None = None,
        backend: str | None = None,
        **options: Any,
    ) -> Path:
        """Write the comparison's self-contained HTML page (what ``ctxeval compare --report``
        writes) to ``path``, atomically; returns the path.

        ``datasets``: each run's records by run name (a path, or the records themselves), so
        that the queries where the runs disagree show their retrieved texts or ids.
        ``options``: ``title``, ``focus`` (the per-query table's metric, one of
        :attr:`metrics`), ``worst`` (queries shown in full), ``sections`` (extra ``(title,
        html)`` panels). The plots are inline SVG: nothing to install.

        As with ``--report``: an existing file is replaced; a path that is one of the runs'
        files or datasets, a directory, or does not end in .html/.htm is refused before
        anything is drawn. Drawn by :mod:`ctxeval.report` (or the module ``backend`` names).
        """
        owner = "ComparisonReport.to_html"
        if not self.results:
            raise InvalidArgumentError(
                f"{owner}(): this report holds no results to draw (it was built by hand, not by "
                "compare()); use ctxeval.report.write_html_report(path, report, results)"
            )
        if datasets is not None and not isinstance(datasets, Mapping):
            raise InvalidArgumentTypeError(
                f"{owner}(datasets=...): give {{run name: dataset path or records}}, e.g. "
                f"datasets={{{self.runs[0]!r}: 'run.jsonl'}}"
            )
        unknown = [name for name in datasets or {} if name not in self.results]
        if unknown:
            raise InvalidArgumentError(
                f"{owner}(datasets=...): no run is named {unknown[0]!r}; runs: {list(self.runs)}"
            )
        inputs = [s.source for s in self.settings.values()] + list((datasets or {}).values())
        target = check_html_path(path, owner=owner, inputs=inputs)
        writer = report_backend(backend, owner=owner)
        return writer.write_html_report(target, self, self.results, datasets=datasets, **options)
