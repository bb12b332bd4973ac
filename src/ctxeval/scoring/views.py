"""Judged records as each cut-off sees them, and the context each cut-off feeds.

A count (``5``) or ``None`` cuts the judgments of the one matching pass as they are. A budget
(``300w``; :mod:`ctxeval.cutoffs.budgets`) is a count of chunks per record, computed for the whole
batch at once: under ``"whole"`` the same judgments are cut there, so no text is matched again.
Under ``"truncate"`` the budget feeds the chunks it takes whole plus the crossing chunk cut to
what fits, and that truncated text is judged as itself (it may no longer match what the whole
chunk matched): the whole chunks keep their judgments, and only each truncated text is matched
again, one call per record and budget. Span measures take the truncated chunk as the first
characters of its span (:func:`~ctxeval.metrics.spans.reference.truncate_spans`), nothing matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ctxeval.cutoffs.budgets import WHOLE_LIST, BudgetCut, BudgetPolicy, ContextSizes
from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_label
from ctxeval.foundation.arrays import BoolMatrix, FloatArray, IntArray
from ctxeval.judging.batch import BatchJudgments, Pair, judge_batch, stack_judgments
from ctxeval.judging.judgments import Credit, Judgments, with_tie_ends
from ctxeval.judging.spans import RecordSpans
from ctxeval.judging.texts import ground_truth_units, judge_texts
from ctxeval.matching.base import MatchingStrategy, as_matches
from ctxeval.metrics.core import set_counts as core_set_counts
from ctxeval.metrics.measures import Measure
from ctxeval.metrics.reference import set_counts as reference_set_counts
from ctxeval.metrics.spans.core import SpanBatch, span_counts_at, truncate_batch
from ctxeval.metrics.spans.reference import SpanConvention, span_counts, truncate_spans
from ctxeval.records.model import Record
from ctxeval.text.sizes import TokenCounter

__all__ = [
    "BatchView",
    "ContextColumns",
    "Cuts",
    "RecordView",
    "ReferenceView",
    "context_columns",
    "truncated_judgments",
    "truncated_matrix",
]

ContextRow = dict[str, tuple[int, int | None, int | None]]
Pairs = Sequence[Pair]


class Cuts:
    """The sizes of a batch's retrieved chunks (text mode) and what each budget takes."""

    def __init__(
        self,
        records: Sequence[Record],
        budgets: Sequence[Budget],
        policy: BudgetPolicy,
        tokens: str | TokenCounter,
    ) -> None:
        self.records = records
        self.policy = policy
        self.sizes: ContextSizes | None = None
        self.budgets: dict[Budget, BudgetCut] = {}
        if records and records[0].mode == "text":
            self.sizes = ContextSizes([r.retrieved for r in records], tokens)
            self.budgets = {b: self.sizes.cut(b, policy) for b in budgets}

    def partial(self, budget: Budget) -> dict[int, str]:
        """``{record position: its truncated chunk's text}`` at ``budget``."""
        assert self.sizes is not None
        return self.sizes.partial_texts(self.budgets[budget])


# cut-off label -> per record: chunks, words, characters (words and characters None in ID mode)
ContextColumns = dict[str, tuple[IntArray, IntArray | None, IntArray | None]]


def context_columns(cuts: Cuts, ks: Sequence[Cutoff]) -> ContextColumns:
    """The context each cut-off feeds, for the whole batch: chunks, words, characters per
    record (words and characters None in ID mode, which has no texts)."""
    out: ContextColumns = {}
    lengths = None
    for k in ks:
        label = cutoff_label(k)
        if cuts.sizes is None:
            assert not isinstance(k, Budget)  # budgets need texts: the plan refuses them
            if lengths is None:
                lengths = np.array([len(r.retrieved) for r in cuts.records], dtype=np.int64)
            out[label] = (lengths if k is None else np.minimum(lengths, k), None, None)
            continue
        used = cuts.sizes.used(cuts.budgets[k] if isinstance(k, Budget) else k)
        out[label] = (used.chunks, used.words, used.characters)
    return out


def truncated_matrix(
    strategy: MatchingStrategy,
    record: Record,
    matrix: BoolMatrix,
    chunks: int,
    partial: str | None,
) -> BoolMatrix:
    """The relevance matrix of what the budget feeds: the rows of the ``chunks`` whole chunks
    taken, then the row of the truncated text ``partial`` (matched now), if any."""
    if partial is None:
        return matrix[:chunks]
    truth, _ = ground_truth_units(strategy, record.ground_truth)  # type: ignore[arg-type]
    row = as_matches(strategy.match([partial], truth), 1, len(truth), strategy).relevant
    return np.vstack([matrix[:chunks], np.asarray(row, dtype=bool)])


def truncated_judgments(
    strategy: MatchingStrategy,
    credit: Credit,
    record: Record,
    judgments: Judgments,
    chunks: int,
    partial: str | None,
) -> Judgments:
    """The judgments of what the budget feeds (any unit: the truncated chunk is judged with
    the whole chunks taken). Without a truncated text, the judgments as they are (the budget's
    count of chunks cuts them)."""
    if partial is None:
        if judgments.tie_ends is None or not 0 < chunks < judgments.n:
            return judgments
        # a tie group ends where the budget does
        return replace(judgments, tie_ends=tuple(sorted({*judgments.tie_ends, chunks})))
    retrieved: Sequence[str] = record.retrieved
    fed = [*retrieved[:chunks], partial]
    judged = judge_texts(
        strategy, fed, record.ground_truth, credit=credit, location=record.location, validated=True
    ).judgments
    return with_tie_ends(judged, judgments.tie_ends)  # a tie group ends where the budget does


def with_batch_ties(
    truncated: BatchJudgments | SpanBatch, whole: BatchJudgments | SpanBatch
) -> BatchJudgments | SpanBatch:
    """A truncated batch with the whole batch's groups of equal scores, each ending at most
    where the budget does (as :func:`truncated_judgments` for one record)."""
    if not isinstance(truncated, BatchJudgments) or not isinstance(whole, BatchJudgments):
        return truncated
    if whole.tie_ends is None:
        return truncated
    return replace(truncated, tie_ends=np.minimum(whole.tie_ends, truncated.n[:, None]))


class RecordView:
    """One record's judgments and count of chunks at each cut-off, for the reference formulas
    (``position``: the record's place in ``cuts.records``)."""

    def __init__(
        self,
        strategy: MatchingStrategy | None,
        credit: Credit,
        judgments: Judgments | RecordSpans,
        cuts: Cuts,
        position: int = 0,
    ) -> None:
        self.strategy, self.credit = strategy, credit
        self.judgments, self.cuts, self.position = judgments, cuts, position
        self._truncated: dict[Budget, Judgments | RecordSpans] = {}

    def at(self, k: Cutoff) -> tuple[Any, int | None]:
        """The judgments (a span pass: the spans) and the count of chunks at ``k``."""
        if not isinstance(k, Budget):
            return self.judgments, k
        cut = self.cuts.budgets[k]
        equivalent = int(cut.equivalent_k()[self.position])
        count = None if equivalent == WHOLE_LIST else equivalent
        if self.cuts.policy == "whole":
            return self.judgments, count
        if k not in self._truncated:
            self._truncated[k] = self._truncate(k, cut)
        return self._truncated[k], count

    def _truncate(self, budget: Budget, cut: BudgetCut) -> Judgments | RecordSpans:
        b = self.position
        chunks, partial = int(cut.chunks[b]), int(cut.partial_chars[b])
        if isinstance(self.judgments, RecordSpans):
            return truncate_spans(self.judgments, chunks, partial)
        assert self.strategy is not None
        return truncated_judgments(
            self.strategy,
            self.credit,
            self.cuts.records[b],
            self.judgments,
            chunks,
            self.cuts.partial(budget).get(b),
        )


class ReferenceView:
    """A pass's records judged one by one and measured by the reference formulas
    (``implementation="reference"``): the same questions as :class:`BatchView`, each answered
    record by record, so the driver is the same and only the kernel differs."""

    def __init__(self, views: Sequence[RecordView]) -> None:
        self.views = views
        self.m = np.fromiter(
            (view.judgments.num_relevant for view in views), dtype=np.int64, count=len(views)
        )

    def values(self, measure: Measure, k: Cutoff) -> FloatArray:
        """``measure`` at ``k``, record by record (:mod:`ctxeval.metrics.reference`)."""
        found = [measure(*view.at(k)) for view in self.views]
        return np.array(found, dtype=np.float64)

    def set_counts(self, k: Cutoff) -> IntArray:
        counts = [reference_set_counts(*view.at(k)) for view in self.views]
        return np.array(counts, dtype=np.int64).reshape(len(counts), 4)

    def span_counts(self, k: Cutoff, convention: SpanConvention) -> IntArray:
        counts = []
        for view in self.views:
            spans, count = view.at(k)  # under "truncate": the crossing chunk's span cut
            counts.append(span_counts(spans, spans.cut(count), 0, convention))
        return np.array(counts, dtype=np.int64).reshape(len(counts), 4)


class BatchView:
    """One padded batch of a judging pass as each cut-off sees it: the judgments and the count
    of chunks (one number, or one per record at a budget) to hand to the core.

    ``rows``: the batch's records, as positions in ``cuts.records``; ``items`` (per-record
    judgments) or ``pairs`` (relevance matrices with grades): the pass's judgments of every
    record in ``cuts.records``, from which a truncated batch is made.
    """

    def __init__(
        self,
        strategy: MatchingStrategy | None,
        credit: Credit,
        batch: BatchJudgments | SpanBatch,
        rows: list[int],
        cuts: Cuts,
        items: Sequence[Judgments] | None,
        pairs: Pairs | None,
    ) -> None:
        self.strategy, self.credit, self.batch, self.rows = strategy, credit, batch, rows
        self.cuts, self.items, self.pairs = cuts, items, pairs
        self.index = np.asarray(rows, dtype=np.int64)
        self.m = batch.m
        self._truncated: dict[Budget, BatchJudgments | SpanBatch] = {}

    def values(self, measure: Measure, k: Cutoff) -> FloatArray:
        """``measure`` at ``k`` for the whole batch (:mod:`ctxeval.metrics.core`)."""
        found: FloatArray = measure.values(*self.at(k))
        return found

    def set_counts(self, k: Cutoff) -> IntArray:
        batch, cut = self.at(k)
        return core_set_counts(batch, cut)

    def span_counts(self, k: Cutoff, convention: SpanConvention) -> IntArray:
        batch, cut = self.at(k)
        return span_counts_at(batch, cut, convention)

    def at(self, k: Cutoff) -> tuple[Any, int | IntArray | None]:
        """The batch's judgments (a span pass: its ``SpanBatch``) and the cut-off at ``k``."""
        if not isinstance(k, Budget):
            return self.batch, k
        cut = self.cuts.budgets[k]
        equivalent = cut.equivalent_k()[self.index]
        if self.cuts.policy == "whole":
            return self.batch, equivalent
        if k not in self._truncated:
            self._truncated[k] = with_batch_ties(self._truncate(k, cut), self.batch)
        return self._truncated[k], equivalent

    def _truncate(self, budget: Budget, cut: BudgetCut) -> BatchJudgments | SpanBatch:
        """The judgments of what the budget feeds, each truncated chunk judged as cut."""
        if isinstance(self.batch, SpanBatch):
            return truncate_batch(self.batch, cut.chunks[self.index], cut.partial_chars[self.index])
        strategy = self.strategy
        assert strategy is not None
        partial = self.cuts.partial(budget)
        records = self.cuts.records
        if self.items is not None:
            items = self.items
            return stack_judgments(
                [
                    truncated_judgments(
                        strategy,
                        self.credit,
                        records[i],
                        items[i],
                        int(cut.chunks[i]),
                        partial.get(i),
                    )
                    for i in self.rows
                ]
            )
        assert self.pairs is not None
        pairs = self.pairs
        matrices = [
            truncated_matrix(strategy, records[i], pairs[i][0], int(cut.chunks[i]), partial.get(i))
            for i in self.rows
        ]
        return judge_batch(matrices, [pairs[i][1] for i in self.rows], self.credit)
