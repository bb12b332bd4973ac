"""Context budgets: how much of each record's ranked chunks a cut-off takes, and what it feeds.

A budget (``300w``, ``2000c``, ``512t``; :class:`~ctxeval.cutoffs.Budget`) takes chunks in rank
order until it is filled. The chunk that crosses it is left out (policy ``"whole"``, the
default) or cut to what fits (``"truncate"``). Every measure at a budget is the same measure at
a per-record cut-off: the core (:class:`~ctxeval.metrics.core.BatchJudgments`) takes one number
of chunks per record, which :meth:`ContextSizes.cut` computes for a whole batch at once from
cumulative sizes (no loop over records, except to fit the crossing chunk under ``"truncate"``).

Sizes: words are whitespace-separated words (``len(text.split())``), characters ``len(text)``,
tokens those of the token counter: ``"rouge"`` (default: :mod:`ctxeval.text.tokenize`'s ROUGE
tokenizer), ``"unicode"``, or any callable ``str -> int`` such as
``lambda s: len(enc.encode(s))`` for a tiktoken encoder.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ctxeval.arrays import IntArray
from ctxeval.cutoffs import Budget, BudgetUnit
from ctxeval.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.text.tokenize import get_tokenizer

__all__ = [
    "BUDGET_POLICIES",
    "SPACE_CODES",
    "WHOLE_LIST",
    "BudgetCut",
    "BudgetPolicy",
    "ContextSizes",
    "ContextUsed",
    "TokenCounter",
    "budget_cut",
    "check_budget_policy",
    "check_token_counter",
    "counting",
    "token_counter",
    "word_counts",
]

BudgetPolicy = Literal["whole", "truncate"]
BUDGET_POLICIES: tuple[BudgetPolicy, ...] = ("whole", "truncate")
TokenCounter = Callable[[str], int]
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


def token_counter(tokens: str | TokenCounter) -> TokenCounter:
    """The counter of ``t`` budgets: a tokenizer name (``"rouge"``, ``"unicode"``) or a callable
    ``str -> int``, returned as it is."""
    if isinstance(tokens, str):
        tokenizer = get_tokenizer(tokens)
        return lambda text: len(tokenizer.tokenize(text))
    if callable(tokens):
        return tokens
    raise InvalidArgumentTypeError(
        f"token_counter must be 'rouge', 'unicode' or a callable str -> int, got "
        f"{type_name(tokens)}"
    )


def _words(text: str) -> int:
    return len(text.split())


# The characters str.split() splits on: str.isspace() (tests/metrics/test_budgets.py checks it).
_SPACES = (*range(9, 14), *range(28, 33), 133, 160, 5760, *range(8192, 8203), 8232, 8233)
SPACE_CODES = np.array([*_SPACES, 8239, 8287, 12288], dtype=np.uint32)


def word_counts(texts: Sequence[str]) -> IntArray:
    """``len(text.split())`` of every text, computed for all of them at once: a word starts
    where a non-space follows a space (or a text's start). A text that occurs several times
    (chunks repeat across queries) is counted once."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    distinct = dict.fromkeys(texts)
    if len(distinct) < len(texts):
        counted = dict(zip(distinct, _word_counts(list(distinct)).tolist(), strict=True))
        return np.fromiter(map(counted.__getitem__, texts), dtype=np.int64, count=len(texts))
    return _word_counts(texts)


def _word_counts(texts: Sequence[str]) -> IntArray:
    joined = "\n".join(texts)
    if not joined.isascii():
        # str.split in C beats numpy over UTF-32 code points (measured: 0.27 s against 0.45 s
        # for 25,000 texts of 120 words), and it is the definition.
        return np.fromiter(map(_words, texts), dtype=np.int64, count=len(texts))
    # ASCII: one byte per character; the spaces are 9-13 and 28-32 (about 2x str.split).
    byte = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    space = (byte == 32) | (byte - np.uint8(9) <= 4) | (byte - np.uint8(28) <= 3)
    starts = ~space
    starts[1:] &= space[:-1]
    positions = np.flatnonzero(starts)  # where each word starts, in order
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    offsets = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    counts: IntArray = np.searchsorted(positions, offsets + lengths) - np.searchsorted(
        positions, offsets
    )
    return counts


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
            return _words
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
            words[b] += _words(text)
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


def _checked(count: TokenCounter) -> TokenCounter:
    """A user's counter whose answers are checked: a whole number >= 0 per text."""

    def checked(text: str) -> int:
        value = count(text)
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise InvalidArgumentError(
                f"token_counter returned {value!r} for a text; it must return a whole number "
                ">= 0 (e.g. lambda s: len(enc.encode(s)))"
            )
        return int(value)

    return checked


def counting(tokens: str | TokenCounter) -> TokenCounter:
    """:func:`token_counter` whose answers are checked (a whole number >= 0 per text)."""
    return _checked(token_counter(tokens))


def check_token_counter(
    counter: object, where: str = "RetrievalEvaluator(token_counter=...)"
) -> str | TokenCounter:
    """A token counter as given, when it is a tokenizer name or a callable; else an error
    naming ``where``."""
    if isinstance(counter, str):
        try:
            get_tokenizer(counter)
        except ValueError as exc:
            raise InvalidArgumentError(f"{where}: {exc}") from None
        return counter
    if callable(counter):
        return counter
    raise InvalidArgumentTypeError(
        f"{where}: {counter!r} is not a token counter; give 'rouge', 'unicode' or a callable "
        "str -> int, e.g. lambda s: len(enc.encode(s))"
    )
