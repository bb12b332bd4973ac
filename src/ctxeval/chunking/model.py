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
from ctxeval.chunking.chunkers import Chunk
from ctxeval.chunking.questions import Question
from ctxeval.comparison import ComparisonReport
from ctxeval.comparison.family import characters_fed, label_depth
from ctxeval.comparison.verdict import Verdict
from ctxeval.cutoffs.budgets import BudgetPolicy
from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_label, sort_cutoffs
from ctxeval.results import EvaluationResult

__all__ = [
    "HARNESS_METRICS",
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
class HarnessResult:
    """What :func:`~ctxeval.chunking.compare_chunkers` found: one :class:`ChunkingRun` per
    chunker (by name), the paired comparison, and the seconds each step took."""

    runs: dict[str, ChunkingRun]
    comparison: ComparisonReport
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
        return {
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "warnings": list(self.warnings),
            "questions": len(self.questions),
            "retriever": self.retriever,
            "matching": self.matching,
            "metrics": list(HARNESS_METRICS),
            "ks": [k if isinstance(k, int) else str(k) for k in self.ks],
            "compared_at": cutoff_label(self.top),
            "budget_policy": self.budget_policy,
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

    def attribution_text(self) -> str:
        """A table of the three shares at each k and the ceilings, one row per chunker."""
        lines = [
            "Miss attribution (share of ground-truth excerpts; macro over questions; rule: "
            f"{self.attribution}), with the mean context fed per question:",
            f"  {'chunker':<20} {'k':>6} {'found':>7} {'missed':>7} {'unreach':>7} "
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
        lines.append("Ceilings (best any retriever could do with these chunks):")
        lines.append(f"  {'chunker':<20} {'recall':>7} {'span IoU':>9} {'chunks':>7} {'words':>7}")
        for name, run in self.runs.items():
            stats = run.statistics
            lines.append(
                f"  {name:<20} {run.attribution.ceiling:>7.3f} "
                f"{run.attribution.span_ceiling:>9.3f} {stats['chunks']:>7} "
                f"{stats['words']['mean']:>7.1f}"
            )
        return "\n".join(lines)


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
