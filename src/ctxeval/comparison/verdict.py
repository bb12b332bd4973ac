"""The verdict: at each cut-off, which run to pick on one primary measure, and how sure that is.

For each *family* of runs (by default every run; the chunking harness adds the chunkers under
each retriever of its grid) and each cut-off: the run with the highest mean of the primary
measure (``context_recall@200w``), and its paired comparison with every other run of the family
over the queries they all have a value for: the mean per-query difference *best − other*, its
paired percentile bootstrap interval, the paired two-sided p-value (the sign-flip randomization
test by default) and wins/ties/losses, drawn from the same seeded streams as
:func:`~ctxeval.comparison.compare` (:func:`~ctxeval.comparison.stats.random_stream`). The
p-values are corrected by Holm over every comparison of the verdict: all families and all
cut-offs, so "p < 0.05" holds for the verdict as a whole. A best run *leads* when it is
significantly above every other run of its family; runs it cannot be told apart from are named
with their p-value. docs/comparing.md has the definitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ctxeval.comparison.inputs import index_rows, value_of
from ctxeval.comparison.render import md_table, md_text
from ctxeval.comparison.stats import TIE_TOLERANCE, holm, paired_statistics
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.exact import exact_mean
from ctxeval.results import EvaluationResult

__all__ = ["Duel", "Standing", "Verdict", "text_lines", "verdict"]

#: Comparisons listed one by one in a sentence; more are summarised as a count and a range.
_LISTED = 3


@dataclass(frozen=True)
class Duel:
    """The best run of a :class:`Standing` against one other ``run`` of its family: ``diff`` is
    the mean per-query difference best − run, ``ci_low``/``ci_high`` its paired bootstrap
    interval, ``p_value`` the paired test's p-value and ``p_adjusted`` after Holm's correction
    over the whole verdict; ``wins``/``ties``/``losses`` count queries where the best run is
    above, level with or below ``run``."""

    run: str
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    significant: bool
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class Standing:
    """One family of runs at one cut-off: each run's mean of the primary measure over the
    ``queries`` every run of the family has a value for, the ``best`` run (the highest mean;
    the first in the family's order on a tie) and its :class:`Duel` with every other run."""

    family: str
    cutoff: str
    column: str
    means: dict[str, float]
    best: str
    duels: tuple[Duel, ...]
    queries: int

    @property
    def leads(self) -> bool:
        """True when the best run is significantly above every other run of the family."""
        return bool(self.duels) and all(d.significant and d.diff > 0 for d in self.duels)

    @property
    def level(self) -> tuple[Duel, ...]:
        """The runs the best cannot be told apart from (not significant, or a zero difference)."""
        return tuple(d for d in self.duels if not (d.significant and d.diff > 0))

    def sentence(self, measure: str) -> str:
        """The standing in words: ``"at 200w: sentences is best (context_recall 0.667), above
        fixed (+0.111, p = 0.004) and paragraphs (+0.131, p < 0.001)"``."""
        top = f"{self.best} ({measure} {self.means[self.best]:.3f})"
        above = [d for d in self.duels if d not in self.level]
        tied = [d.run for d in self.duels if self.means.get(d.run) == self.means[self.best]]
        highest = f"ties for highest with {', '.join(tied)}" if tied else "is highest"
        if not above:
            return f"at {self.cutoff}: no run differs; {top} {highest} but not above " + _listed(
                self.level, "or"
            )
        if not self.level:
            return f"at {self.cutoff}: {top} is best, above " + _listed(above, "and")
        return (
            f"at {self.cutoff}: {top} {highest} but does not differ from "
            + _listed(self.level, "or")
            + "; it is above "
            + _listed(above, "and")
        )


@dataclass(frozen=True)
class Verdict:
    """Which run to pick at each cut-off on ``primary``: one :class:`Standing` per family and
    cut-off, the p-values corrected by Holm over all of their duels (``comparisons``)."""

    primary: str
    standings: tuple[Standing, ...]
    test: str
    n_resamples: int
    seed: int
    alpha: float

    @property
    def comparisons(self) -> int:
        return sum(len(s.duels) for s in self.standings)

    def families(self) -> list[str]:
        return list(dict.fromkeys(s.family for s in self.standings))

    def of(self, family: str = "") -> list[Standing]:
        """The standings of one family, in cut-off order."""
        return [s for s in self.standings if s.family == family]

    def table(self, family: str = "") -> tuple[list[str], list[list[str]]]:
        """The duels of one family as a table: a row per cut-off and other run."""
        header = ["cut-off", "best", "other", "diff", "95% CI", "p (Holm)", "W/T/L", "n"]
        rows = [
            [
                s.cutoff,
                s.best,
                d.run,
                f"{d.diff:+.4f}",
                f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}]",
                _p(d.p_adjusted).removeprefix("p ").removeprefix("= ")
                + ("*" if d.significant else ""),
                f"{d.wins}/{d.ties}/{d.losses}",
                str(s.queries),
            ]
            for s in self.of(family)
            for d in s.duels
        ]
        return header, rows

    def legend(self) -> str:
        return (
            f"{self.primary}: mean per query; +d: mean per-query difference best - other; p: "
            f"paired {self.test} test ({self.n_resamples} resamples, seed {self.seed}), "
            f"Holm-adjusted over the verdict's {self.comparisons} comparisons; above (*): p < "
            f"{self.alpha:g}; 95% CI: paired bootstrap of diff, not adjusted; W/T/L: queries "
            "where best is above / level with / below other; n: queries"
        )

    def conclusion(self) -> str | None:
        """One line when no run of the whole family is above any other at any cut-off (the
        differences are within chance), else None."""
        overall = self.of("")
        if not overall or any(len(s.level) < len(s.duels) for s in overall):
            return None
        queries = min(s.queries for s in overall)
        return (
            f"No run is above another at any cut-off: with {queries} queries these differences "
            "are within chance; choose on cost (chunks, context fed), or add questions"
        )

    def in_short(self) -> str:
        """The verdict over every run in a few lines: a sentence per cut-off and the
        conclusion (what a long output ends with)."""
        lines = [f"In short, on {self.primary}:"]
        lines += [f"  {s.sentence(self.primary)}" for s in self.of("")]
        if self.conclusion():
            lines.append(f"  {self.conclusion()}")
        return "\n".join(lines)

    def to_text(self) -> str:
        """Every standing as a sentence, by family, the conclusion, then the legend."""
        lines = [f"Verdict on {self.primary}:"]
        for family in self.families():
            if family:
                lines.append(f"  with {family}:")
            indent = "    " if family else "  "
            lines += [f"{indent}{s.sentence(self.primary)}" for s in self.of(family)]
        if self.conclusion():
            lines.append(f"  {self.conclusion()}")
        lines += ["", *text_lines(*self.table()), f"  ({self.legend()})"]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """:meth:`to_text` in Markdown: the sentences as lists, the table as a table."""
        lines = [f"**Verdict on {md_text(self.primary)}**", ""]
        for family in self.families():
            if family:
                lines += ["", f"With {md_text(family)}:", ""]
            lines += [f"- {md_text(s.sentence(self.primary))}" for s in self.of(family)]
        if self.conclusion():
            lines += ["", md_text(str(self.conclusion()))]
        lines += ["", *md_table(*self.table(), left={0, 1, 2}), "", md_text(self.legend())]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the settings and, per family (``""``: every run) and cut-off, the best
        run, every run's mean, the sentence and the duels."""
        return {
            "primary": self.primary,
            "test": self.test,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "alpha": self.alpha,
            "correction": "holm",
            "comparisons": self.comparisons,
            "conclusion": self.conclusion(),
            "families": {
                family: {
                    s.cutoff: {
                        "best": s.best,
                        "leads": s.leads,
                        "queries": s.queries,
                        "means": s.means,
                        "sentence": s.sentence(self.primary),
                        "against": [asdict(d) for d in s.duels],
                    }
                    for s in self.of(family)
                }
                for family in self.families()
            },
        }


def verdict(
    results: Mapping[str, EvaluationResult],
    primary: str,
    cutoffs: Sequence[str],
    families: Mapping[str, Mapping[str, str]] | None = None,
    *,
    test: str = "randomization",
    n_resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
) -> Verdict:
    """The :class:`Verdict` on measure ``primary`` at each of ``cutoffs`` (labels such as
    ``"200w"``; the results' columns ``primary@label``), over the runs ``results`` (by name).

    ``families``: ``{family: {shown name: run name}}``, each family judged on its own (default:
    one family ``""`` of every run, shown by name); a family of one run has no standing."""
    groups = families if families is not None else {"": {name: name for name in results}}
    tables = {name: index_rows(name, result) for name, result in results.items()}
    pending: list[tuple[str, str, str, dict[str, float], str, int, list[dict[str, Any]]]] = []
    for family, members in groups.items():
        if len(members) < 2:
            continue
        for cutoff in cutoffs:
            column = f"{primary}@{cutoff}"
            matrix = _values(tables, members, column)
            means = {shown: exact_mean(matrix[:, j]) or 0.0 for j, shown in enumerate(members)}
            best = max(members, key=lambda shown: means[shown])  # the first on a tie
            stats = _duels(matrix, list(members), best, column, (test, n_resamples, seed, alpha))
            pending.append((family, cutoff, column, means, best, matrix.shape[0], stats))
    adjusted = iter(holm([s["p_value"] for *_, stats in pending for s in stats]))
    standings = tuple(
        Standing(family, cutoff, column, means, best, _judged(stats, adjusted, alpha), queries)
        for family, cutoff, column, means, best, queries, stats in pending
    )
    return Verdict(primary, standings, test, n_resamples, seed, alpha)


def _values(
    tables: Mapping[str, Mapping[str, Mapping[str, Any]]], members: Mapping[str, str], column: str
) -> np.ndarray:
    """Queries × runs: the column's values in each member run, on the queries every member has
    (in the first member's order) with no ``None`` (a query skipped by policy)."""
    runs = list(members.values())
    first = tables[runs[0]]
    ids = [qid for qid in first if all(qid in tables[run] for run in runs)]
    rows = [[value_of(run, column, qid, tables[run][qid]) for run in runs] for qid in ids]
    kept = [row for row in rows if all(value is not None for value in row)]
    if not kept:
        raise InvalidArgumentError(
            f"verdict: no query has a {column} value in every run of {runs}; the runs share no "
            "judged query"
        )
    return np.array(kept, dtype=np.float64)


def _duels(
    matrix: np.ndarray, shown: list[str], best: str, column: str, settings: tuple[Any, ...]
) -> list[dict[str, Any]]:
    """The paired statistics of best − each other run, named."""
    test, n_resamples, seed, alpha = settings
    top = shown.index(best)
    others = [j for j in range(len(shown)) if j != top]
    diffs = np.stack([matrix[:, top] - matrix[:, j] for j in others], axis=1)
    diffs[np.abs(diffs) <= TIE_TOLERANCE] = 0.0
    stats = paired_statistics(diffs, column, test, n_resamples, seed, alpha)
    return [{"run": shown[j], **s} for j, s in zip(others, stats, strict=True)]


def _judged(stats: list[dict[str, Any]], adjusted: Any, alpha: float) -> tuple[Duel, ...]:
    duels = []
    for s in stats:
        p = next(adjusted)
        duels.append(Duel(**s, p_adjusted=p, significant=p < alpha))
    return tuple(duels)


def text_lines(header: list[str], rows: list[list[str]], left: int = 3) -> list[str]:
    """A plain-text table indented by two spaces, its first ``left`` columns left-aligned and
    the others right-aligned (the verdict's and the harness's grid tables)."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        parts = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  " + "  ".join(parts).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _listed(duels: Sequence[Duel], joiner: str) -> str:
    """Duels as ``"fixed (+0.111, p = 0.004) and paragraphs (+0.131, p < 0.001)"``, or, when
    there are many, ``"6 others (+0.060 to +0.434, p <= 0.012)"`` (``joiner`` "and": runs the
    best is above, bounded by the largest p; "or": runs it does not differ from, by the
    smallest)."""
    if len(duels) > _LISTED:
        low = min(d.diff for d in duels)
        high = max(d.diff for d in duels)
        if joiner == "and":  # significant: the largest p bounds them all
            worst = max(d.p_adjusted for d in duels)
            bound = "p < 0.001" if worst < 0.001 else f"p <= {worst:.3f}"
        else:  # not significant: the smallest p
            least = min(d.p_adjusted for d in duels)
            bound = f"p = {least:.3f}" if least == 1.0 else f"p >= {least:.3f}"
        return f"{len(duels)} others ({low:+.3f} to {high:+.3f}, {bound})"
    parts = [f"{d.run} ({d.diff:+.3f}, {_p(d.p_adjusted)})" for d in duels]
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + f" {joiner} " + parts[-1]
