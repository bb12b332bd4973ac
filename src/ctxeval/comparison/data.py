"""The data of a comparison: how the runs' queries align, the side-by-side means of each metric,
each paired comparison with the baseline, and :class:`ComparisonData`, the report's fields with
the lookups and descriptions (legends, notes, settings) every rendering shares.

Plain dataclasses, importing no rendering: the renderings (text, Markdown, LaTeX, dict,
DataFrame in :mod:`ctxeval.comparison.render`; HTML in :mod:`ctxeval.report`) read these
attributes, and :class:`~ctxeval.comparison.model.ComparisonReport` adds the rendering methods
on top of :class:`ComparisonData`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxeval.comparison.settings import RunSettings, shared_setting
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.metrics.measures import parse_measure
from ctxeval.results import EvaluationResult

__all__ = [
    "SHOWN_IDS",
    "Alignment",
    "ComparisonData",
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
    ``significant[run]`` is True when that run differs from the baseline after correction;
    ``leader`` is the best run when the tests order it above every other run (through the
    baseline, :func:`~ctxeval.comparison.stats.leader`), else ``None``.
    """

    metric: str
    means: dict[str, float | None]
    queries: int
    excluded: int
    best: tuple[str, ...]
    significant: dict[str, bool]
    leader: str | None = None


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


#: What each family of columns measures, for :meth:`ComparisonData.columns_legend`.
_COLUMN_FAMILIES: tuple[tuple[frozenset[str], str], ...] = (
    (
        frozenset({"context_precision", "context_recall", "context_f1"}),
        "context_*: of the chunks fed (at most K), the share that match a ground-truth item, "
        "and the share of ground-truth items some chunk matches",
    ),
    (
        frozenset({"precision", "recall", "f1", "hit_rate"}),
        "precision/recall@K: trec_eval's, precision over K even when fewer were retrieved; "
        "hit_rate: some relevant item in the top K",
    ),
    (
        frozenset({"average_precision", "reciprocal_rank", "ndcg", "map", "mrr"}),
        "average_precision, reciprocal_rank, ndcg: rank-aware, higher when relevant items come "
        "first",
    ),
    (
        frozenset({"span_precision", "span_recall", "span_iou", "span_f1"}),
        "span_*: over characters of the documents, the share of the context that is answer, of "
        "the answer in the context, and their intersection over union",
    ),
)


# -- the report's data ---------------------------------------------------------------------------
@dataclass
class ComparisonData:
    """The fields of a :class:`~ctxeval.comparison.model.ComparisonReport` (documented there),
    with its lookups (:meth:`row`, :meth:`comparison`, ...) and the descriptions its renderings
    share (:meth:`legend`, :meth:`notes`, :meth:`settings_line`, ...)."""

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
    identical: dict[str, tuple[str, ...]] = field(default_factory=dict)
    settings: dict[str, RunSettings] = field(default_factory=dict, repr=False)
    results: dict[str, EvaluationResult] = field(default_factory=dict, repr=False, compare=False)

    # -- lookups ---------------------------------------------------------------------------------
    @property
    def best(self) -> dict[str, tuple[str, ...]]:
        """``{metric: run names with the highest mean}`` (several when tied)."""
        return {row.metric: row.best for row in self.rows}

    def shown_as(self, metric: str) -> str:
        """The metric a comparison shows for ``metric``: itself, or the one it equals."""
        for kept, equal in self.identical.items():
            if metric in equal:
                return kept
        return metric

    def comparison(self, run: str, metric: str) -> PairedComparison:
        """The comparison of ``run`` with the baseline on ``metric``."""
        metric = self.shown_as(metric)
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
        metric = self.shown_as(metric)
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

    def tested(self) -> int:
        """How many comparisons have a test: the correction's family."""
        return sum(item.p_value is not None for item in self.comparisons)

    def family(self) -> str:
        """The correction's family, in words."""
        runs = len(self.runs) - 1
        metrics = len(self.metrics)
        size = f"{self.tested()} comparisons ({metrics} metric{'s' * (metrics != 1)} x {runs} run"
        return size + ("s)" if runs != 1 else ")")

    def legend(self) -> str:
        """What the marks of the side-by-side table mean, in one line."""
        adjusted = "Holm-adjusted p" if self.correction == "holm" else "p (uncorrected)"
        starred = any(item.significant for item in self.comparisons)
        return (
            ("*: differs" if starred else "no run differs")
            + f" from {self.baseline} with {adjusted} < {self.alpha:g} over "
            f"{self.family()}; best: the highest mean, named only when the tests put it above "
            "every other run"
        )

    def columns_legend(self) -> str | None:
        """One line on what each family of the compared columns measures (those present only):
        ``precision@5`` and ``context_precision@5`` differ, and a reader needs to know how."""
        names = {metric.partition("@")[0] for metric in self.metrics}
        said = [text for family, text in _COLUMN_FAMILIES if family & names]
        return "columns: " + "; ".join(said) if said else None

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

    def comparison_legend(self) -> str:
        """What each column of a comparison table means, in one line."""
        level = f"{100 * (1 - self.alpha):g}%"
        adjusted = (
            f"p (Holm): p adjusted by Holm over {self.family()}"
            if self.correction == "holm"
            else "p (adj.): p, uncorrected"
        )
        return (
            f"diff: mean per query of (this run - baseline {self.baseline}), with its {level} "
            f"bootstrap CI; p: {self.test_name()}, {self.n_resamples} resamples, seed "
            f"{self.seed}; {adjusted}; W/T/L: queries where this run is above / level with / "
            f"below baseline {self.baseline}; n: queries compared"
        )

    def identical_note(self) -> str | None:
        """The metrics shown once because they equal another on these queries, in one line."""
        if not self.identical:
            return None
        groups = "; ".join(" = ".join([kept, *equal]) for kept, equal in self.identical.items())
        return f"identical per query in every run, shown and tested once (first name): {groups}"

    def setting(self, name: str) -> str:
        """One setting (``strategy``, ``threshold``, ``convention``, ``ks``, ``source``) of
        every run: one value when they agree, else each run's."""
        return shared_setting({run: getattr(s, name) for run, s in self.settings.items()})

    def settings_line(self) -> str:
        """What the runs were evaluated with, for the metrics compared: how their items were
        judged (the matching strategy and its threshold, by id, or where the spans came from),
        the rank metrics' convention, the cut-offs."""
        if not self.settings:
            return ""
        families = self._families()
        matches = bool(families - {"span"})
        spans = "span" in families
        parts = []
        judged = {run: s.judging(spans=spans, matches=matches) for run, s in self.settings.items()}
        if all(judged.values()):
            shown = shared_setting(judged)
            parts.append(shown if shown.startswith("spans ") else f"matching {shown}")
        if "rank" in families and any(s.convention for s in self.settings.values()):
            conventions = {run: s.convention or "not recorded" for run, s in self.settings.items()}
            parts.append(f"rank convention {shared_setting(conventions)}")
        parts.append(f"cut-offs {self.setting('ks')}")
        return "; ".join(parts)

    def _families(self) -> set[str]:
        """The families (``set``, ``rank``, ``span``) of the metrics compared; a column that is
        not a measure spec (a custom metric's) counts as a measure of matches."""
        names = [row.metric for row in self.rows]
        names += [name for equal in self.identical.values() for name in equal]
        families: set[str] = set()
        for name in names:
            try:
                families.add(parse_measure(name).definition.family)
            except ValueError:
                families.add("custom")
        return families

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
