"""The harness's data: :class:`ChunkingRun` (one chunker's run) and :class:`HarnessResult` (what
:func:`~ctxeval.chunking.compare_chunkers` found), the measures every run is evaluated with
(:data:`HARNESS_METRICS`) and the cut-off the runs are compared at (:func:`comparison_cutoff`).

The harness (:mod:`ctxeval.chunking.harness`) builds these, :mod:`ctxeval.chunking.outputs`
writes them and :mod:`ctxeval.chunking.report` draws them; each imports this module, which
imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxeval.chunking.attribution import Attribution
from ctxeval.chunking.chroma import chroma_metrics
from ctxeval.chunking.chunkers import Chunk
from ctxeval.chunking.questions import Question
from ctxeval.comparison import ComparisonReport
from ctxeval.comparison.family import characters_fed, label_depth
from ctxeval.comparison.verdict import Verdict
from ctxeval.cutoffs.budgets import BudgetPolicy
from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_key, cutoff_label, sort_cutoffs
from ctxeval.results import EvaluationResult

__all__ = [
    "HARNESS_METRICS",
    "NO_RETRIEVAL",
    "ChunkingCeilings",
    "ChunkingRun",
    "HarnessInterrupted",
    "HarnessResult",
    "comparison_cutoff",
]

# The measures every harness run is evaluated with, at every cut-off: chunk-level matching
# (a chunk holds the excerpt or not) and span overlap (how much of the excerpt the retrieved
# text covers, and how much of that text is excerpt).
HARNESS_METRICS: tuple[str, ...] = (
    "context_recall",
    "context_precision",
    "hit_rate",
    "reciprocal_rank",
    "ndcg",
    "span_recall",
    "span_precision",
    "span_iou",
)

#: What the harness says when it ran without a retriever (``retriever=None``, ``--retriever
#: none``).
NO_RETRIEVAL = (
    "No retrieval (retriever none): chunk statistics and ceilings only; no runs were "
    "evaluated, so there are no retrieval metrics, comparison or verdict."
)


class HarnessInterrupted(KeyboardInterrupt):
    """:func:`~ctxeval.chunking.compare_chunkers` was interrupted (Ctrl-C): a
    ``KeyboardInterrupt`` whose message says during which step, and which of its files were
    written and which not, e.g. ``interrupted while writing report.html: wrote runs/ (9 runs,
    summary.json); report.html not written``. No file is ever half-written."""


@dataclass
class ChunkingRun:
    """One chunker x retriever run: its chunks, the retrieval records, their evaluation,
    attribution, chunk statistics and the mean context fed at each cut-off (``context[k]``:
    ``chunks``, ``words``, ``characters``; the evaluation's own ``summary["context_used"]``);
    ``chunker`` and ``retriever`` name the pair (``name`` is ``CHUNKER+RETRIEVER`` when the
    harness ran several retrievers, else the chunker's name)."""

    name: str
    spec: str
    chunks: list[Chunk]
    records: list[dict[str, Any]]
    result: EvaluationResult
    attribution: Attribution
    statistics: dict[str, Any]
    context: dict[Cutoff, dict[str, float]]
    chunker: str = ""
    retriever: str = ""


@dataclass
class ChunkingCeilings:
    """One chunker without retrieval (``retriever=None``): its chunks, their statistics and
    what any retriever could reach with them (``attribution``: its ``ceiling`` and
    ``span_ceiling``; no cut-offs, nothing retrieved)."""

    name: str
    spec: str
    chunks: list[Chunk]
    statistics: dict[str, Any]
    attribution: Attribution

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunker": self.name,
            "spec": self.spec,
            "statistics": self.statistics,
            "ceilings": {
                "rule": self.attribution.rule,
                "ceiling_recall": self.attribution.ceiling,
                "ceiling_span_iou": self.attribution.span_ceiling,
            },
        }


@dataclass
class HarnessResult:
    """What :func:`~ctxeval.chunking.compare_chunkers` found: one :class:`ChunkingRun` per
    chunker (by name), the paired comparison, and the seconds each step took."""

    runs: dict[str, ChunkingRun]
    comparison: ComparisonReport | None
    """The paired comparison of the runs; None without retrieval (:attr:`ceilings`)."""
    ks: tuple[Cutoff, ...]
    questions: list[Question]
    retriever: str
    matching: str
    timings: dict[str, float] = field(default_factory=dict)
    budget_policy: BudgetPolicy = "whole"
    attribution: str = "match"
    top: Cutoff = None
    """The cut-off the runs are compared at (:func:`comparison_cutoff`)."""
    token_counter: Any = "rouge"
    verdict: Verdict | None = None
    """Which run to pick at each cut-off on the primary measure (None for a single run)."""
    ceilings: dict[str, ChunkingCeilings] = field(default_factory=dict)
    """Without retrieval (``retriever=None``): each chunker's statistics and ceilings (and
    :attr:`runs` is empty)."""
    convention: str | None = None
    """``"chroma"`` when the span measures, ceilings and attribution follow chroma's
    chunking_evaluation; None for ctxeval's own."""
    warnings: list[str] = field(default_factory=list)
    """What the harness warned of (:mod:`ctxeval.chunking.checks`), one message each."""

    def __post_init__(self) -> None:
        if self.top is None:
            fed = characters_fed([run.result.summary for run in self.runs.values()])
            self.top = comparison_cutoff(self.ks, fed)

    @property
    def results(self) -> dict[str, EvaluationResult]:
        return {name: run.result for name, run in self.runs.items()}

    def summary(self) -> dict[str, Any]:
        """Everything but the per-query rows, as plain JSON-ready data."""
        if self.comparison is None:
            return self._ceilings_summary()
        chroma = self.convention == "chroma"
        metrics = chroma_metrics(HARNESS_METRICS) if chroma else list(HARNESS_METRICS)
        return {
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "warnings": list(self.warnings),
            "questions": len(self.questions),
            "retriever": self.retriever,
            "matching": self.matching,
            "metrics": metrics,
            "convention": self.convention,
            "ks": [k if isinstance(k, int) else str(k) for k in self.ks],
            "compared_at": cutoff_label(self.top),
            "budget_policy": self.budget_policy,
            **({"token_counter": self.token_counter_name} if self.counts_tokens else {}),
            "attribution": self.attribution,
            "chunkers": {
                name: {
                    "chunker": run.chunker or name,
                    "retriever": run.retriever,
                    "spec": run.spec,
                    "statistics": run.statistics,
                    "context": {cutoff_label(k): v for k, v in run.context.items()},
                    "attribution": run.attribution.to_dict(),
                    "aggregate": run.result.aggregate,
                }
                for name, run in self.runs.items()
            },
            "comparison": self.comparison.to_dict(),
        }

    @property
    def counts_tokens(self) -> bool:
        """Whether a cut-off is a budget in tokens (``512t``), counted by the token counter."""
        return any(isinstance(k, Budget) and k.unit == "t" for k in self.ks)

    @property
    def token_counter_name(self) -> str:
        """The token counter by its name (``"rouge"``, ``"cl100k_base"``, a function's name)."""
        counter = self.token_counter
        return counter if isinstance(counter, str) else getattr(counter, "__name__", "callable")

    def _ceilings_summary(self) -> dict[str, Any]:
        """The summary without retrieval: what exists (statistics, ceilings), and saying so."""
        return {
            "verdict": None,
            "warnings": list(self.warnings),
            "retrieval": None,
            "note": NO_RETRIEVAL,
            "questions": len(self.questions),
            "retriever": "none",
            "matching": self.matching,
            "convention": self.convention,
            "attribution": self.attribution,
            "chunkers": {name: c.to_dict() for name, c in self.ceilings.items()},
            "comparison": None,
        }

    def attribution_text(self) -> str:
        """A table of the three shares at each k and the ceilings, one row per chunker."""
        if self.comparison is None:
            return "\n".join([NO_RETRIEVAL, *self._ceilings_lines()])
        lines = [
            "Miss attribution (share of ground-truth excerpts; macro over questions; rule: "
            f"{self.attribution}), with the mean context fed per question:",
            f"  {self._run_heading():<20} {'k':>6} {'found':>7} {'missed':>7} {'unreach':>7} "
            f"{'chunks':>7} {'words':>7}",
        ]
        for name, run in self.runs.items():
            att = run.attribution
            for k in self.ks:
                used = run.context[k]
                lines.append(
                    f"  {name:<20} {cutoff_label(k):>6} {att.found[k]:>7.3f} "
                    f"{att.missed[k]:>7.3f} {att.unreachable[k]:>7.3f} "
                    f"{used['chunks']:>7.2f} {used['words']:>7.1f}"
                )
        return "\n".join(lines + self._ceilings_lines())

    def _run_heading(self) -> str:
        """What the runs' names name: a chunker, or a chunker and a retriever."""
        return "chunker+retriever" if any("+" in name for name in self.runs) else "chunker"

    def _ceilings_lines(self) -> list[str]:
        """The ceilings table: one row per chunker (with retrieval, from its first run: every
        retriever over the same chunks has the same ceilings)."""
        rows = [(name, c.attribution, c.statistics) for name, c in self.ceilings.items()]
        if not rows:
            firsts: dict[str, ChunkingRun] = {}
            for run in self.runs.values():
                firsts.setdefault(run.chunker or run.name, run)
            rows = [(name, run.attribution, run.statistics) for name, run in firsts.items()]
        said = " (chroma's convention)" if self.convention == "chroma" else ""
        lines = [
            f"Ceilings (best any retriever could do with these chunks){said}:",
            f"  {'chunker':<20} {'recall':>7} {'span IoU':>9} {'chunks':>7} {'words':>7}",
        ]
        for name, attribution, stats in rows:
            lines.append(
                f"  {name:<20} {attribution.ceiling:>7.3f} "
                f"{attribution.span_ceiling:>9.3f} {stats['chunks']:>7} "
                f"{stats['words']['mean']:>7.1f}"
            )
        return lines


def fed_order(ks: Sequence[Cutoff], fed: Mapping[str, float]) -> tuple[Cutoff, ...]:
    """``ks`` in the order of the text each feeds: counts, then budgets by the mean characters
    they fed (``fed``: ``{label: characters}``, over the runs), so that ``200w`` comes before
    a ``512t`` that fed more (budgets ``fed`` lacks: by unit, then size); the whole list last."""

    def key(k: Cutoff) -> tuple[int, float, str, int]:
        first, unit, size = cutoff_key(k)
        return (first, fed.get(cutoff_label(k), 0.0) if isinstance(k, Budget) else 0.0, unit, size)

    return tuple(sorted(ks, key=key))


def comparison_cutoff(ks: Sequence[Cutoff], fed: Mapping[str, float] | None = None) -> Cutoff:
    """The cut-off chunkings are compared at: the largest budget when there are budgets, where
    each run feeds the same amount of text; else the largest k. Budgets of different units are
    ordered by ``fed`` (``{label: mean characters fed}``, over the runs) when it is given: the
    budget that fed the most text (``512t`` may feed more than ``2000c``); else by unit, then
    size (:func:`~ctxeval.cutoffs.cutoff.sort_cutoffs`)."""
    budgets = [k for k in ks if isinstance(k, Budget)]
    if not budgets:
        return sort_cutoffs(ks)[-1]
    ordered = sort_cutoffs(budgets)
    return max(ordered, key=lambda k: label_depth(cutoff_label(k), fed))
