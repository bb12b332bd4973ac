"""Context budgets: how much of each record's ranked chunks a cut-off takes, and what it feeds.

A budget (``300w``, ``2000c``, ``512t``; :class:`~ctxeval.cutoffs.cutoff.Budget`) takes chunks in
rank order until it is filled. The chunk that crosses it is left out (policy ``"whole"``, the
default) or cut to what fits (``"truncate"``). Every measure at a budget is the same measure at
a per-record cut-off: the core (:class:`~ctxeval.metrics.core.BatchJudgments`) takes one number
of chunks per record, which :meth:`ContextSizes.cut` computes for a whole batch at once from
cumulative sizes (no loop over records, except to fit the crossing chunk under ``"truncate"``).
Sizes (words, characters, tokens of a counter) are :mod:`ctxeval.text.sizes`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ctxeval.cutoffs.cutoff import Budget, BudgetUnit
from ctxeval.foundation.arrays import IntArray
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.text.sizes import TokenCounter, count_words, counting, word_counts

__all__ = [
    "BUDGET_POLICIES",
    "WHOLE_LIST",
    "BudgetCut",
    "BudgetPolicy",
    "ContextSizes",
    "ContextUsed",
    "budget_cut",
    "check_budget_policy",
]

BudgetPolicy = Literal["whole", "truncate"]
BUDGET_POLICIES: tuple[BudgetPolicy, ...] = ("whole", "truncate")
WHOLE_LIST = np.iinfo(np.int64).max
"""The per-record cut-off "the whole list" (a count no list reaches)."""


def check_budget_policy(where: str, policy: object) -> BudgetPolicy:
    """``policy`` when it is ``"whole"`` or ``"truncate"``; else an error naming ``where``
    (``"RetrievalEvaluator(budget_policy=...)"``, ``"--budget-policy"``)."""
    if policy not in BUDGET_POLICIES:
        raise InvalidArgumentError(
            f"{where}: {policy!r} is not a budget policy; use 'whole' (only whole chunks that "
            "fit; the default) or 'truncate' (the chunk that crosses the budget cut to fit)"
        )
    return policy


@dataclass(frozen=True)
class BudgetCut:
    """What one budget takes from each record of a batch (the one representation that every
    measure at a budget uses: chunk-level measures through the core, span measures too).

    - ``chunks[b]``: the number of whole chunks taken from record ``b``, in rank order: the
      longest prefix of its ranked chunks whose total size is within the budget;
    - ``partial_chars[b]``: under ``"truncate"``, how many characters of the next chunk (the
      one that crosses the budget) fit: its text is ``chunk[:partial_chars[b]]``; 0 under
      ``"whole"``, when every chunk fits, or when nothing of the crossing chunk fits.

    - ``retrieved[b]``: the number of chunks record ``b`` retrieved.

    The context fed to the model is ``chunks[b]`` whole chunks plus that prefix.
    """

    chunks: IntArray
    partial_chars: IntArray
    retrieved: IntArray

    def used_chunks(self) -> IntArray:
        """Chunks fed to the model, the truncated one included."""
        return self.chunks + (self.partial_chars > 0)

    def equivalent_k(self) -> IntArray:
        """The cut-off the budget stands for, per record: the chunks it feeds where it leaves
        some out, and the whole list (:data:`WHOLE_LIST`) where every chunk fits, so that a
        budget beyond every record's size is ``k=None`` (NDCG's ideal is then not cut)."""
        return np.where(self.chunks < self.retrieved, self.used_chunks(), WHOLE_LIST)


@dataclass(frozen=True)
class ContextUsed:
    """The context a cut-off feeds, per record: chunks (a truncated one counts), words and
    characters (of the truncated text for a truncated chunk)."""

    chunks: IntArray
    words: IntArray
    characters: IntArray


class ContextSizes:
    """The sizes of a batch's ranked chunks (``texts[b]``: record ``b``'s chunks in rank
    order), computed once per unit and shared by every cut-off of the batch."""

    def __init__(self, texts: Sequence[Sequence[str]], tokens: str | TokenCounter = "rouge"):
        self.texts = texts
        self.tokens = tokens
        self.lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        self._cumulative: dict[str, IntArray] = {}

    def counter(self, unit: BudgetUnit) -> TokenCounter:
        if unit == "w":
            return count_words
        if unit == "c":
            return len
        return counting(self.tokens)

    def cumulative(self, unit: BudgetUnit) -> IntArray:
        """``(B, N)``: the total size of each record's first 1, 2, ... chunks, padded with its
        total."""
        found = self._cumulative.get(unit)
        if found is None:
            found = self._cumulative[unit] = self._sizes(unit)
        return found

    def _sizes(self, unit: BudgetUnit) -> IntArray:
        flat = list(itertools.chain.from_iterable(self.texts))
        sizes: Any
        if unit == "c":
            sizes = list(map(len, flat))
        elif unit == "w":
            sizes = word_counts(flat)
        else:
            count = self.counter(unit)
            known: dict[str, int] = {}  # chunks repeat across queries: count each text once
            sizes = [known[t] if t in known else known.setdefault(t, count(t)) for t in flat]
        width = max(int(self.lengths.max(initial=0)), 1)
        table = np.zeros((len(self.texts), width), dtype=np.int64)
        table[np.arange(width) < self.lengths[:, None]] = np.asarray(sizes, dtype=np.int64)
        return np.cumsum(table, axis=1)

    def cut(self, budget: Budget, policy: BudgetPolicy = "whole") -> BudgetCut:
        """What ``budget`` takes from each record under ``policy``."""
        cumulative = self.cumulative(budget.unit)
        # Sizes are >= 0, so each row is sorted: the count within budget is the searchsorted
        # position, computed for every record at once.
        chunks = np.minimum((cumulative <= budget.size).sum(axis=1), self.lengths)
        partial = np.zeros(len(self.texts), dtype=np.int64)
        if policy == "truncate":
            left = budget.size - _at(cumulative, chunks)
            crossing = np.flatnonzero((chunks < self.lengths) & (left > 0))
            if budget.unit == "c":
                partial[crossing] = left[crossing]
            else:
                count = self.counter(budget.unit)
                for b in crossing.tolist():
                    text = self.texts[b][int(chunks[b])]
                    partial[b] = _fitting_prefix(text, int(left[b]), count)
        return BudgetCut(chunks.astype(np.int64), partial, self.lengths)

    def partial_texts(self, cut: BudgetCut) -> dict[int, str]:
        """``{b: the truncated text of record b's crossing chunk}`` where one is fed."""
        return {
            b: self.texts[b][int(cut.chunks[b])][: int(cut.partial_chars[b])]
            for b in np.flatnonzero(cut.partial_chars).tolist()
        }

    def used(self, cut: BudgetCut | int | None) -> ContextUsed:
        """The context a cut-off (a budget's cut, a number of chunks, or None) feeds."""
        if not isinstance(cut, BudgetCut):
            taken = self.lengths if cut is None else np.minimum(self.lengths, cut)
            cut = BudgetCut(taken, np.zeros(len(self.texts), dtype=np.int64), self.lengths)
        words = _at(self.cumulative("w"), cut.chunks)
        for b, text in self.partial_texts(cut).items():
            words[b] += count_words(text)
        characters = _at(self.cumulative("c"), cut.chunks) + cut.partial_chars
        return ContextUsed(cut.used_chunks(), words, characters)


def budget_cut(
    texts: Sequence[Sequence[str]],
    budget: Budget,
    *,
    policy: BudgetPolicy = "whole",
    tokens: str | TokenCounter = "rouge",
) -> BudgetCut:
    """What ``budget`` takes from each record's ranked chunks (``texts[b]``), under ``policy``,
    counting ``t`` budgets with ``tokens`` (see :class:`BudgetCut`)."""
    return ContextSizes(texts, tokens).cut(budget, check_budget_policy("policy", policy))


def _at(cumulative: IntArray, count: IntArray) -> IntArray:
    """``cumulative[b, count[b] - 1]``, 0 where ``count[b] == 0``."""
    index = np.clip(count - 1, 0, cumulative.shape[1] - 1)[:, None]
    picked = np.take_along_axis(cumulative, index, axis=1)[:, 0]
    return np.where(count > 0, picked, 0).astype(np.int64)


def _fitting_prefix(text: str, limit: int, count: TokenCounter) -> int:
    """The length of the longest prefix of ``text`` of at most ``limit`` words or tokens,
    without trailing whitespace (binary search: a prefix never counts more than its text)."""
    low, high = 0, len(text)  # count(text[:low]) <= limit < count(text[:high])
    while high - low > 1:
        middle = (low + high) // 2
        if count(text[:middle]) <= limit:
            low = middle
        else:
            high = middle
    return len(text[:low].rstrip())
