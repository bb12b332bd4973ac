"""The data of a comparison: how the runs' queries align, the side-by-side means of each metric,
each paired comparison with the baseline, and the :class:`ComparisonReport` that holds them.

Plain dataclasses, so every rendering (text, Markdown, LaTeX, dict, DataFrame in
:mod:`ctxeval.comparison.render`; HTML in :mod:`ctxeval.report`) reads the same attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxeval.comparison.render import (
    render_latex,
    render_markdown,
    render_text,
    report_dict,
    report_frame,
)
from ctxeval.errors import InvalidArgumentError

__all__ = [
    "SHOWN_IDS",
    "Alignment",
    "ComparisonReport",
    "MetricRow",
    "PairedComparison",
    "RunAlignment",
    "id_list",
]

#: How many query ids a message or note shows.
SHOWN_IDS = 5


def id_list(ids: Sequence[str]) -> str:
    """Ids for a message: ``'q1', 'q2', ...`` (the ellipsis when :data:`SHOWN_IDS` are shown)."""
    return ", ".join(repr(i) for i in ids) + (", ..." if len(ids) >= SHOWN_IDS else "")


@dataclass(frozen=True)
class RunAlignment:
    """How one run's query ids relate to the others'.

    ``missing``: ids that some other run has and this one lacks; ``dropped``: ids of this run
    left out because some other run lacks them. ``*_ids`` hold the first few of each, in order.
    """

    run: str
    queries: int
    missing: int
    missing_ids: tuple[str, ...]
    dropped: int
    dropped_ids: tuple[str, ...]


@dataclass(frozen=True)
class Alignment:
    """The queries compared (those in every run) and the mismatches, per run."""

    policy: str
    queries: int
    runs: tuple[RunAlignment, ...]

    @property
    def complete(self) -> bool:
        """True when every run has exactly the same query ids."""
        return not any(run.missing or run.dropped for run in self.runs)


@dataclass(frozen=True)
class MetricRow:
    """One metric, side by side: each run's mean over the same queries.

    ``queries`` is the number of queries averaged (those in every run whose value is not
    ``None`` in any run); ``excluded`` the aligned queries left out because some run has
    ``None`` (a query skipped by policy). ``best`` names the run(s) with the highest mean;
    ``significant[run]`` is True when that run differs from the baseline after correction.
    """

    metric: str
    means: dict[str, float | None]
    queries: int
    excluded: int
    best: tuple[str, ...]
    significant: dict[str, bool]


@dataclass(frozen=True)
class PairedComparison:
    """``run`` against ``baseline`` on one metric, over the same ``queries``.

    ``diff`` is the mean of per-query differences (run − baseline); ``ci_low``/``ci_high`` the
    paired percentile bootstrap interval of that mean at level 1 − alpha; ``p_value`` the
    two-sided p-value of the report's test and ``p_adjusted`` after the report's correction;
    ``wins``/``ties``/``losses`` count queries where the run is above, level with (within
    :data:`TIE_TOLERANCE`) or below the baseline.
    """

    metric: str
    run: str
    baseline: str
    queries: int
    excluded: int
    baseline_mean: float | None
    run_mean: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    significant: bool
    wins: int
    ties: int
    losses: int


# -- the report ----------------------------------------------------------------------------------
@dataclass
class ComparisonReport:
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

    Render with ``str(report)``, :meth:`to_markdown`, :meth:`to_latex`, :meth:`to_dict` or
    :meth:`to_pandas`.
    """

    runs: tuple[str, ...]
    baseline: str
    metrics: tuple[str, ...]
    rows: list[MetricRow]
    comparisons: list[PairedComparison]
    alignment: Alignment
    test: str
    n_resamples: int
    seed: int
    alpha: float
    correction: str
    query_ids: list[str] = field(default_factory=list, repr=False)
    values: dict[str, dict[str, list[float | None]]] = field(default_factory=dict, repr=False)
    context_used: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    # -- lookups ---------------------------------------------------------------------------------
    @property
    def best(self) -> dict[str, tuple[str, ...]]:
        """``{metric: run names with the highest mean}`` (several when tied)."""
        return {row.metric: row.best for row in self.rows}

    def comparison(self, run: str, metric: str) -> PairedComparison:
        """The comparison of ``run`` with the baseline on ``metric``."""
        for item in self.comparisons:
            if item.run == run and item.metric == metric:
                return item
        others = [name for name in self.runs if name != self.baseline]
        raise InvalidArgumentError(
            f"ComparisonReport.comparison(run={run!r}, metric={metric!r}): no such comparison; "
            f"runs compared with {self.baseline!r}: {others}, metrics: {list(self.metrics)}"
        )

    def row(self, metric: str) -> MetricRow:
        """The side-by-side row of ``metric``."""
        for row in self.rows:
            if row.metric == metric:
                return row
        raise InvalidArgumentError(
            f"ComparisonReport.row({metric!r}): not in this report; metrics: {list(self.metrics)}"
        )

    # -- descriptions shared by the renderings ---------------------------------------------------
    def test_name(self) -> str:
        """The test, in words."""
        if self.test == "randomization":
            return "two-sided paired randomization (sign-flip) test"
        return "two-sided paired bootstrap test"

    def correction_name(self) -> str:
        """What the adjusted p-value is, in words."""
        return "Holm-adjusted p" if self.correction == "holm" else "p (uncorrected)"

    def legend(self) -> str:
        """What the significance mark means, in words."""
        return (
            f"* differs from {self.baseline} with {self.correction_name()} < {self.alpha:g} "
            f"({self.test_name()}, {self.n_resamples} resamples, seed {self.seed})"
        )

    def context_lines(self) -> list[str]:
        """One line per run: the mean context it fed per query at each cut-off."""
        lines = []
        for run in self.runs:
            used = self.context_used.get(run)
            if not used:
                continue
            parts = [
                f"{label}: " + ", ".join(f"{means[name]:.1f} {name}" for name in means)
                for label, means in used.items()
            ]
            lines.append(f"{run}: " + "; ".join(parts))
        return lines

    def notes(self) -> list[str]:
        """What a reader must know to read the numbers: queries not in every run, queries left
        out of a metric."""
        notes: list[str] = []
        if not self.alignment.complete:
            parts = []
            for run in self.alignment.runs:
                if run.missing:
                    parts.append(f"{run.run} lacks {run.missing} ({id_list(run.missing_ids)})")
            notes.append(
                f"runs do not cover the same queries: {self.alignment.queries} in every run "
                f"compared; " + "; ".join(parts)
            )
        for row in self.rows:
            if row.excluded:
                notes.append(
                    f"{row.metric}: {row.excluded} queries left out (no value in some run)"
                )
        return notes

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
