"""Compare runs on the same queries: means side by side, paired tests, Holm, wins/ties/losses.

:func:`compare` aligns the per-query rows of two or more :class:`EvaluationResult` by query id,
compares every run with a baseline on every metric, and returns one :class:`ComparisonReport`
that renders as a terminal table, Markdown, LaTeX, a dict or a DataFrame. Its data are plain
dataclass rows (:class:`MetricRow`, :class:`PairedComparison`), so other renderings (HTML) read
the same attributes.

Reproducibility: every random draw comes from a PCG64 stream derived from ``seed``, the metric
name and the test (:func:`random_stream`), so the same seed gives the same report to the last
digit, and adding or removing a metric or a run leaves the other p-values and intervals as they
were. docs/comparing.md has the definitions.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ctxeval.errors import (
    ConventionWarning,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    type_name,
)
from ctxeval.results import EvaluationResult
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
RunInput = EvaluationResult | str | os.PathLike[str]
FloatArray = npt.NDArray[np.float64]

#: Two per-query values closer than this are a tie (wins/ties/losses; a difference this small is
#: taken as 0). Metric values live in [0, 1], so an absolute tolerance is the right scale.
TIE_TOLERANCE = 1e-12

# Resampling works in blocks of about this many (resample × query) cells, so memory stays near
# 8 MB per block whatever n_resamples and the number of queries are. The random streams do not
# depend on it: a block of resamples draws exactly what the same resamples drawn one by one do.
_BLOCK_CELLS = 1 << 20

_RANDOMIZATION = 0
_BOOTSTRAP = 1
_SHOWN_IDS = 5


def random_stream(
    seed: int, metric: str, purpose: Literal["randomization", "bootstrap"]
) -> np.random.Generator:
    """The numpy ``Generator`` that :func:`compare` draws from for one metric and one test.

    ``PCG64(SeedSequence(seed, spawn_key=(purpose, *words)))`` where ``purpose`` is 0 for the
    randomization test and 1 for the bootstrap, and ``words`` are the first 16 bytes of the
    SHA-256 of the metric name as four little-endian 32-bit integers. Keying the stream by the
    metric's name, rather than by its position, is what keeps a p-value unchanged when metrics
    or runs are added, removed or reordered. Every comparison of one metric uses the same stream
    (common random numbers), so swapping the baseline and the other run gives the same p-value.
    """
    digest = hashlib.sha256(metric.encode("utf-8")).digest()[:16]
    words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    code = _RANDOMIZATION if purpose == "randomization" else _BOOTSTRAP
    sequence = np.random.SeedSequence(seed, spawn_key=(code, *words))
    return np.random.Generator(np.random.PCG64(sequence))


# -- report rows ---------------------------------------------------------------------------------
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
      run has none), for per-query plots.

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
    def _test_name(self) -> str:
        if self.test == "randomization":
            return "two-sided paired randomization (sign-flip) test"
        return "two-sided paired bootstrap test"

    def _correction_name(self) -> str:
        return "Holm-adjusted p" if self.correction == "holm" else "p (uncorrected)"

    def legend(self) -> str:
        """What the significance mark means, in words."""
        return (
            f"* differs from {self.baseline} with {self._correction_name()} < {self.alpha:g} "
            f"({self._test_name()}, {self.n_resamples} resamples, seed {self.seed})"
        )

    def _notes(self) -> list[str]:
        notes: list[str] = []
        if not self.alignment.complete:
            parts = []
            for run in self.alignment.runs:
                if run.missing:
                    parts.append(f"{run.run} lacks {run.missing} ({_id_list(run.missing_ids)})")
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

    # -- renderings ------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, digits: int = 4) -> str:
        """A plain-text report for the terminal: the side-by-side table, then each comparison."""
        lines = [
            f"{len(self.runs)} runs on {self.alignment.queries} queries, baseline {self.baseline}",
            "",
        ]
        header = ["metric", *self.runs, "best"]
        body = [
            [row.metric, *(self._mean_cell(row, run, digits) for run in self.runs), _best(row)]
            for row in self.rows
        ]
        lines += _text_table(header, body, left={0, len(header) - 1})
        lines += ["", self.legend()]
        for run in self.runs:
            if run == self.baseline:
                continue
            lines += ["", f"{run} vs {self.baseline}"]
            lines += _text_table(
                self._comparison_header(),
                [self._comparison_cells(c, digits) for c in self._of(run)],
                left={0},
            )
        notes = self._notes()
        if notes:
            lines += ["", *(f"note: {note}" for note in notes)]
        return "\n".join(lines)

    def to_markdown(self, digits: int = 4) -> str:
        """Markdown: the side-by-side table, a legend, then a table per comparison."""
        header = ["metric", *self.runs, "best"]
        body = [
            [row.metric, *(self._mean_cell(row, run, digits) for run in self.runs), _best(row)]
            for row in self.rows
        ]
        parts = [
            f"**{len(self.runs)} runs on {self.alignment.queries} queries, baseline "
            f"{_md(self.baseline)}**",
            "",
            *_md_table(header, body, left={0, len(header) - 1}),
            "",
            _md(self.legend()),
        ]
        for run in self.runs:
            if run == self.baseline:
                continue
            parts += ["", f"### {_md(run)} vs {_md(self.baseline)}", ""]
            parts += _md_table(
                self._comparison_header(),
                [self._comparison_cells(c, digits) for c in self._of(run)],
                left={0},
            )
        notes = self._notes()
        if notes:
            parts += ["", *(f"- {_md(note)}" for note in notes)]
        return "\n".join(parts) + "\n"

    def to_latex(self, digits: int = 4) -> str:
        """LaTeX (``booktabs``): the means table and the comparisons table.

        The best mean of each metric is bold; ``$^{*}$`` marks a significant difference from the
        baseline.
        """
        columns = "l" + "r" * len(self.runs)
        lines = [
            r"\begin{table}",
            r"\centering",
            rf"\begin{{tabular}}{{{columns}}}",
            r"\toprule",
            " & ".join(["Metric", *(_tex(run) for run in self.runs)]) + r" \\",
            r"\midrule",
        ]
        for row in self.rows:
            cells = [_tex(row.metric)]
            for run in self.runs:
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
            rf"\caption{{Mean over {self.alignment.queries} queries; best in bold. "
            rf"{_tex(self.legend())}.}}",
            r"\end{table}",
        ]
        if len(self.runs) > 1:
            header = ["Run", *self._comparison_header()]
            lines += [
                "",
                r"\begin{table}",
                r"\centering",
                rf"\begin{{tabular}}{{ll{'r' * (len(header) - 2)}}}",
                r"\toprule",
                " & ".join(_tex(h) for h in header) + r" \\",
                r"\midrule",
            ]
            for item in (c for run in self.runs for c in self._of(run)):
                cells = [item.run, *self._comparison_cells(item, digits)]
                lines.append(" & ".join(_tex(cell) for cell in cells) + r" \\")
            lines += [
                r"\bottomrule",
                r"\end{tabular}",
                rf"\caption{{Each run against {_tex(self.baseline)}: mean difference, "
                rf"{100 * (1 - self.alpha):g}\% bootstrap interval, {_tex(self._test_name())} "
                rf"p-value and {_tex(self._correction_name())}, wins/ties/losses.}}",
                r"\end{table}",
            ]
        return "\n".join(lines) + "\n"

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """Everything in the report as JSON-serialisable values.

        ``per_query=True`` adds ``query_ids`` and the aligned per-query ``values``.
        """
        out: dict[str, Any] = {
            "runs": list(self.runs),
            "baseline": self.baseline,
            "metrics": list(self.metrics),
            "test": self.test,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "alpha": self.alpha,
            "correction": self.correction,
            "alignment": _plain(asdict(self.alignment)),
            "rows": [_plain(asdict(row)) for row in self.rows],
            "comparisons": [_plain(asdict(item)) for item in self.comparisons],
        }
        if per_query:
            out["query_ids"] = list(self.query_ids)
            out["values"] = {
                metric: {run: list(values) for run, values in by_run.items()}
                for metric, by_run in self.values.items()
            }
        return out

    def to_pandas(self, table: Literal["means", "comparisons"] = "means") -> Any:
        """A pandas DataFrame (requires pandas).

        ``"means"``: one row per metric, one column per run; ``"comparisons"``: one row per
        comparison with every field of :class:`PairedComparison`.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError(
                "ComparisonReport.to_pandas() needs pandas: pip install 'ctxeval[pandas]'"
            ) from exc
        if table == "means":
            frame = pd.DataFrame(
                [[row.means[run] for run in self.runs] for row in self.rows],
                index=pd.Index(list(self.metrics), name="metric"),
                columns=list(self.runs),
            )
            return frame
        if table == "comparisons":
            return pd.DataFrame([asdict(item) for item in self.comparisons])
        raise InvalidArgumentError(
            f"ComparisonReport.to_pandas(table={table!r}): use 'means' or 'comparisons'"
        )

    # -- cells -----------------------------------------------------------------------------------
    def _of(self, run: str) -> list[PairedComparison]:
        return [item for item in self.comparisons if item.run == run]

    def _mean_cell(self, row: MetricRow, run: str, digits: int) -> str:
        mark = "*" if row.significant.get(run, False) else ""
        return _number(row.means[run], digits) + mark

    def _comparison_header(self) -> list[str]:
        level = f"{100 * (1 - self.alpha):g}% CI"
        adjusted = "p (Holm)" if self.correction == "holm" else "p (adj.)"
        return ["metric", "diff", level, "p", adjusted, "W/T/L", "n"]

    def _comparison_cells(self, item: PairedComparison, digits: int) -> list[str]:
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


# -- compare -------------------------------------------------------------------------------------
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

    named = _named_runs(runs)
    names = [name for name, _ in named]
    if baseline is None:
        baseline = names[0]
    elif baseline not in names:
        raise InvalidArgumentError(
            f"compare(baseline={baseline!r}): no run has that name; runs: {names}"
        )
    others = [name for name in names if name != baseline]

    indexed = [(name, _index_rows(name, result)) for name, result in named]
    alignment, query_ids = _align(indexed, align)
    chosen = _metrics(named, metrics)

    values: dict[str, dict[str, list[float | None]]] = {}
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for metric in chosen:
        by_run = {
            name: [_value(name, metric, qid, table[qid]) for qid in query_ids]
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
        means = {
            name: (math.fsum(matrix[:, j].tolist()) / len(keep) if keep else None)
            for j, name in enumerate(names)
        }
        rows.append({"metric": metric, "means": means, "queries": len(keep), "excluded": excluded})
        base = matrix[:, names.index(baseline)]
        diffs = np.stack([matrix[:, names.index(o)] - base for o in others], axis=1)
        diffs = diffs.reshape(len(keep), len(others))
        diffs[np.abs(diffs) <= TIE_TOLERANCE] = 0.0
        stats = _paired_statistics(diffs, metric, test, n_resamples, seed, alpha)
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
        metric_rows.append(MetricRow(**row, best=_best_runs(row["means"]), significant=marks))
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
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given.

    With the m p-values sorted ascending, the i-th (from 1) becomes
    ``max over j <= i of min(1, (m - j + 1) * p_(j))``: monotone in the raw p-values and at most
    1. A hypothesis is rejected at level alpha exactly when its adjusted p-value is below alpha.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# -- statistics ----------------------------------------------------------------------------------
def _paired_statistics(
    diffs: FloatArray, metric: str, test: str, n_resamples: int, seed: int, alpha: float
) -> list[dict[str, Any]]:
    """Per column of ``diffs`` (queries × runs): mean, wins/ties/losses, interval, p-value."""
    n, columns = diffs.shape
    out: list[dict[str, Any]] = []
    if n == 0:
        return [
            {
                "diff": None,
                "ci_low": None,
                "ci_high": None,
                "p_value": None,
                "wins": 0,
                "ties": 0,
                "losses": 0,
            }
            for _ in range(columns)
        ]
    boot = _bootstrap_means(diffs, random_stream(seed, metric, "bootstrap"), n_resamples)
    if test == "randomization":
        p_values = _randomization_p(
            diffs, random_stream(seed, metric, "randomization"), n_resamples
        )
    else:
        p_values = [_bootstrap_p(boot[:, j], diffs[:, j]) for j in range(columns)]
    for j in range(columns):
        column = diffs[:, j]
        low, high = np.quantile(boot[:, j], [alpha / 2, 1 - alpha / 2])
        out.append(
            {
                "diff": math.fsum(column.tolist()) / n,
                "ci_low": float(low),
                "ci_high": float(high),
                "p_value": p_values[j],
                "wins": int(np.count_nonzero(column > 0)),
                "ties": int(np.count_nonzero(column == 0)),
                "losses": int(np.count_nonzero(column < 0)),
            }
        )
    return out


def _tolerance(column: FloatArray) -> float:
    # Sums of the same numbers in another order differ by rounding only: far below this.
    return TIE_TOLERANCE * float(np.abs(column).sum())


def _randomization_p(diffs: FloatArray, rng: np.random.Generator, n_resamples: int) -> list[float]:
    """Two-sided sign-flip test of each column's mean, ``(1 + hits) / (1 + n_resamples)``.

    A resample flips query i when bit i of its ``ceil(n / 64)`` raw 64-bit draws is set (bits
    little-endian within each word, words in order). A hit is a resample whose ``|sum|`` reaches
    the observed ``|sum|`` less :func:`_tolerance`, so exact ties count whatever the rounding.
    """
    n, columns = diffs.shape
    words = -(-n // 64)
    total = diffs.sum(axis=0)
    observed = np.abs(total)
    thresholds = observed - np.array([_tolerance(diffs[:, j]) for j in range(columns)])
    hits = np.zeros(columns, dtype=np.int64)
    block = max(1, _BLOCK_CELLS // max(n, 1))
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        flips = _flip_bits(rng.bit_generator.random_raw(size=(size, words)), n)
        # sum of s_i * d_i with s_i = -1 where flipped: total - 2 * (sum of flipped d_i)
        flipped = np.abs(total - 2.0 * (flips @ diffs))
        hits += np.count_nonzero(flipped >= thresholds, axis=0)
        done += size
    return [float((1 + int(h)) / (1 + n_resamples)) for h in hits]


def _flip_bits(raw: Any, n: int) -> FloatArray:
    """Resamples × n matrix of 0.0/1.0: bit i of each row's raw words, little-endian."""
    data = np.ascontiguousarray(raw, dtype="<u8")
    bits = np.unpackbits(data.view(np.uint8), axis=1, bitorder="little")
    return bits[:, :n].astype(np.float64)


def _bootstrap_means(diffs: FloatArray, rng: np.random.Generator, n_resamples: int) -> FloatArray:
    """n_resamples × columns: the mean of each column over paired resamples of the queries.

    Resample k draws ``rng.integers(0, n, size=n)`` (the same indices for every column).
    """
    n, columns = diffs.shape
    by_column = [np.ascontiguousarray(diffs[:, j]) for j in range(columns)]
    means = np.empty((n_resamples, columns), dtype=np.float64)
    block = max(1, _BLOCK_CELLS // n)
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        picks = rng.integers(0, n, size=(size, n))
        for j, column in enumerate(by_column):
            means[done : done + size, j] = column[picks].sum(axis=1) / n
        done += size
    return means


def _bootstrap_p(means: FloatArray, column: FloatArray) -> float:
    """Two-sided bootstrap p-value: twice the share of resampled means on the far side of 0.

    ``min(1, 2 * (1 + min(#{mean <= 0}, #{mean >= 0})) / (1 + n_resamples))``, a mean within
    the tie tolerance of 0 counting on both sides. It is below alpha about when the percentile
    interval at level 1 − alpha excludes 0.
    """
    tolerance = _tolerance(column) / len(column)
    below = int(np.count_nonzero(means <= tolerance))
    above = int(np.count_nonzero(means >= -tolerance))
    return min(1.0, 2 * (1 + min(below, above)) / (1 + len(means)))


def _best_runs(means: Mapping[str, float | None]) -> tuple[str, ...]:
    known = {name: mean for name, mean in means.items() if mean is not None}
    if not known:
        return ()
    top = max(known.values())
    return tuple(name for name, mean in known.items() if top - mean <= TIE_TOLERANCE)


# -- inputs --------------------------------------------------------------------------------------
def _named_runs(runs: object) -> list[tuple[str, EvaluationResult]]:
    if isinstance(runs, str | bytes | os.PathLike | EvaluationResult):
        raise InvalidArgumentTypeError(
            f"compare(runs={_short(runs)}): give two or more runs, as a list or as "
            "{name: run}, e.g. compare(['a.jsonl', 'b.jsonl'])"
        )
    if isinstance(runs, Mapping):
        named: list[tuple[str, EvaluationResult]] = []
        for name, run in runs.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(
                    f"compare(runs={{{name!r}: ...}}): run names must be non-empty strings"
                )
            named.append((name, _load(run, name)))
    elif isinstance(runs, Iterable):
        loaded = [_load(run, f"runs[{i}]") for i, run in enumerate(runs)]
        stems = [_stem(result, i) for i, result in enumerate(loaded)]
        named = list(zip(_unique(stems), loaded, strict=True))
    else:
        raise InvalidArgumentTypeError(
            f"compare(runs=...): got {type_name(runs)}; give a list of runs or {{name: run}}, "
            "each an EvaluationResult or the path of a saved result"
        )
    if len(named) < 2:
        raise InvalidArgumentError(
            f"compare(runs=...): got {len(named)} run(s); comparing needs at least two"
        )
    return named


def _short(value: object) -> str:
    if isinstance(value, EvaluationResult):
        return "<EvaluationResult>"
    text = repr(value)
    return text if len(text) <= 60 else text[:56] + "...'"


def _load(run: object, where: str) -> EvaluationResult:
    if isinstance(run, EvaluationResult):
        return run
    if isinstance(run, str | os.PathLike):
        path = Path(run)
        if not path.exists():
            raise InvalidArgumentError(
                f"compare(): {where} is {os.fspath(path)!r}, which does not exist; give the "
                "path of a result saved with result.save(...), or the EvaluationResult itself"
            )
        return EvaluationResult.load(path)
    raise InvalidArgumentTypeError(
        f"compare(): {where} is {type_name(run)}; give an EvaluationResult or the path of a "
        "saved result (.jsonl, .json, .csv, .parquet)"
    )


def _stem(result: EvaluationResult, index: int) -> str:
    source = result.summary.get("source")
    stem = Path(str(source)).stem if source else ""
    return stem or f"run{index + 1}"


def _unique(names: list[str]) -> list[str]:
    taken = set(names)
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, suffix = name, 2
        while candidate in seen or (candidate != name and candidate in taken):
            candidate, suffix = f"{name}-{suffix}", suffix + 1
        seen.add(candidate)
        out.append(candidate)
    return out


def _query_key(value: Any) -> str:
    # Ids are strings in results, but a CSV round trip turns "7" into 7: compare as strings.
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return repr(value)


def _index_rows(name: str, result: EvaluationResult) -> dict[str, dict[str, Any]]:
    if not result.per_query:
        raise InvalidArgumentError(
            f"compare(): run {name!r} has no per-query rows (evaluated with "
            "keep_per_query=False, or an empty dataset); comparing needs them: keep them, or "
            "stream them to disk with run(output='run.jsonl') and compare that file"
        )
    table: dict[str, dict[str, Any]] = {}
    duplicates: list[str] = []
    for i, row in enumerate(result.per_query):
        if not isinstance(row, Mapping) or row.get("id") is None:
            raise InvalidArgumentError(
                f"compare(): run {name!r}, per-query row {i} has no 'id'; queries are aligned "
                "by id, so every row needs one"
            )
        key = _query_key(row["id"])
        if key in table:
            duplicates.append(key)
        table[key] = row
    if duplicates:
        shown = _id_list(tuple(dict.fromkeys(duplicates))[:_SHOWN_IDS])
        raise InvalidArgumentError(
            f"compare(): run {name!r} has {len(duplicates)} duplicate query id(s) ({shown}); "
            "each query must appear once per run to be paired: give every record a unique id"
        )
    return table


def _align(
    indexed: list[tuple[str, dict[str, dict[str, Any]]]], policy: str
) -> tuple[Alignment, list[str]]:
    key_sets = [set(table) for _, table in indexed]
    common = set.intersection(*key_sets)
    everywhere = set.union(*key_sets)
    first = indexed[0][1]
    query_ids = [key for key in first if key in common]
    every_id = _ordered(indexed)
    reports = []
    for (name, table), keys in zip(indexed, key_sets, strict=True):
        missing = [key for key in every_id if key not in keys]
        dropped = [key for key in table if key not in common]
        reports.append(
            RunAlignment(
                run=name,
                queries=len(table),
                missing=len(missing),
                missing_ids=tuple(missing[:_SHOWN_IDS]),
                dropped=len(dropped),
                dropped_ids=tuple(dropped[:_SHOWN_IDS]),
            )
        )
    alignment = Alignment(policy=policy, queries=len(query_ids), runs=tuple(reports))
    if len(common) == len(everywhere):
        return alignment, query_ids
    detail = "; ".join(
        f"{r.run} lacks {r.missing} ({_id_list(r.missing_ids)})" for r in reports if r.missing
    )
    if policy == "error" or not query_ids:
        fix = (
            "no query is in every run: are these runs of the same dataset?"
            if not query_ids
            else "evaluate every run on the same queries, or pass align='intersection' to "
            "compare the queries they share"
        )
        raise InvalidArgumentError(
            f"compare(align={policy!r}): the runs do not cover the same queries: {detail}; " + fix
        )
    warnings.warn(
        ConventionWarning(
            f"compare(): the runs do not cover the same queries; comparing the {len(query_ids)} "
            f"in every run (align='intersection'): {detail}. Pass align='error' to stop instead"
        ),
        stacklevel=3,
    )
    return alignment, query_ids


def _ordered(indexed: list[tuple[str, dict[str, dict[str, Any]]]]) -> list[str]:
    """Every id of every run, in order of first appearance (first run first)."""
    seen: dict[str, None] = {}
    for _, table in indexed:
        seen.update(dict.fromkeys(table))
    return list(seen)


def _metrics(named: list[tuple[str, EvaluationResult]], metrics: object) -> list[str]:
    if metrics is None:
        shared = [
            column
            for column in named[0][1].aggregate
            if not column.startswith("micro_")
            and all(column in result.aggregate for _, result in named[1:])
        ]
        if not shared:
            raise InvalidArgumentError(
                "compare(): the runs share no metric column; evaluate them with the same "
                "metrics and cut-offs, or name the columns with metrics=[...]"
            )
        return shared
    if isinstance(metrics, str) or not isinstance(metrics, Iterable):
        raise InvalidArgumentTypeError(
            f"compare(metrics={metrics!r}): give a list of result columns, e.g. "
            "metrics=['context_recall@5', 'ndcg@10']"
        )
    chosen = list(metrics)
    if not chosen:
        raise InvalidArgumentError("compare(metrics=[]): give at least one metric column")
    for metric in chosen:
        if not isinstance(metric, str):
            raise InvalidArgumentTypeError(
                f"compare(metrics=[..., {metric!r}, ...]): metric columns are strings such as "
                "'ndcg@10'"
            )
        if metric.startswith("micro_"):
            raise InvalidArgumentError(
                f"compare(metrics=[{metric!r}]): a micro average has no per-query values to "
                f"pair; compare the macro column {metric.removeprefix('micro_')!r} instead"
            )
        for name, result in named:
            if not any(metric in row for row in result.per_query):
                available = [c for c in result.aggregate if not c.startswith("micro_")]
                raise InvalidArgumentError(
                    f"compare(metrics=[{metric!r}]): run {name!r} has no column {metric!r}; "
                    f"its metric columns are {available}"
                )
    duplicated = sorted({m for m in chosen if chosen.count(m) > 1})
    if duplicated:
        raise InvalidArgumentError(f"compare(metrics=...): {duplicated} named more than once")
    return chosen


def _value(run: str, metric: str, query: str, row: Mapping[str, Any]) -> float | None:
    if metric not in row:
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r} has no {metric!r} value (the column is "
            "missing from its row)"
        )
    value = row[metric]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r}: {metric} is {_short(value)}, not a number"
        )
    number = float(value)
    if not math.isfinite(number):
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r}: {metric} is {number}; per-query values "
            "must be finite numbers (or None for a query skipped by policy)"
        )
    return number


# -- formatting ----------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _id_list(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids) + (", ..." if len(ids) >= _SHOWN_IDS else "")


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
    return ", ".join(row.best) if row.best else "n/a"


def _text_table(header: list[str], body: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in body)]


def _md(text: str) -> str:
    return text.replace("|", r"\|").replace("*", r"\*")


def _md_table(header: list[str], body: list[list[str]], left: set[int]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(_md(cell) for cell in cells) + " |"

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
