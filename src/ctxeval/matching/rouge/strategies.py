"""ROUGE-L recall matching, scored for a whole record at once (one rapidfuzz call), or for a
whole batch of records in one compiled pass (:mod:`ctxeval.matching.rouge.compiled`, with numba;
``match_records``).

ROUGE-L recall of a ground-truth unit *g* by a retrieved unit *r* is
``LCS(tokens(r), tokens(g)) / len(tokens(g))`` — rouge-score's
``RougeScorer(["rougeL"]).score(target=g, prediction=r).recall``, and 0 when either side has no
tokens, as there. Each text is tokenised once per run (cached), and the LCS lengths of every pair
come from rapidfuzz's bit-parallel ``LCSseq`` in C++, which makes 5,000-word chunks as routine as
short ones; the compiled kernel gives the same integers (tested on both paths).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from rapidfuzz.distance import LCSseq
from rapidfuzz.process import cdist

from ctxeval.foundation.arrays import BoolArray, FloatArray, IntArray
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.params import check_choice, own_init
from ctxeval.matching.base import FlatMatches, Matches, Unit, check_threshold
from ctxeval.matching.builtin import BuiltinStrategy
from ctxeval.matching.rouge.compiled import RecordTexts, rouge_recall, rouge_recall_records
from ctxeval.matching.rouge.pyrouge import py_rouge_l_recall_matrix
from ctxeval.matching.tokens import default_cache, has_word
from ctxeval.text.tokenize import RougeTokenizer, Tokenizer, get_tokenizer

__all__ = ["RougeChunkMatch", "RougeSentenceMatch", "rouge_l_recall_matrix"]


def rouge_l_recall_matrix(
    retrieved: Sequence[str], ground_truth: Sequence[str], tokenizer: Tokenizer
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], tuple[str, ...]]:
    """ROUGE-L recall of every ground-truth text by every retrieved text, shape (n, m).

    Also returns the non-empty texts that produced no tokens. A text without tokens scores 0
    against everything.
    """
    recall, _, tokenless = _recall(retrieved, ground_truth, tokenizer)
    return recall, tokenless


def _recall(
    retrieved: Sequence[str],
    ground_truth: Sequence[str],
    tokenizer: Tokenizer,
    *,
    with_tokens: bool = False,
    kernel: bool = True,
    keyed: list[list[str]] | None = None,
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], BoolArray | None, tuple[str, ...]]:
    """Recall (n, m); with ``with_tokens``, whether each text has tokens (retrieved first);
    the non-empty texts without tokens. ``kernel=False``: the Python path, always; ``keyed``:
    the record's keys made in bulk (``TokenCache.keyed_records``), if any."""
    n, m = len(retrieved), len(ground_truth)
    found = (
        rouge_recall(retrieved, ground_truth) if n and m and kernel and _plain(tokenizer) else None
    )
    if found is not None:  # the compiled kernel: the same quotients of the same integers
        flat, counts, without = found
        has = counts > 0
        tokenless = _tokenless([*retrieved, *ground_truth], has) if without else ()
        return flat.reshape(n, m), has if with_tokens else None, tokenless
    (r_codes, g_codes), tokenless = default_cache(tokenizer).encode_record(
        retrieved, ground_truth, keyed=keyed
    )
    has_tokens = (
        np.fromiter(map(bool, itertools.chain(r_codes, g_codes)), dtype=bool, count=n + m)
        if with_tokens
        else None
    )
    if n == 0 or m == 0:
        return np.zeros((n, m), dtype=np.float64), has_tokens, tokenless
    # Ground truth as the queries: rapidfuzz then encodes the short texts as bit patterns once
    # and streams the long ones past them, about 1.4x faster than the other way round.
    lcs = cdist(g_codes, r_codes, scorer=LCSseq.similarity, processor=None)
    g_len = list(map(len, g_codes))
    # rouge-score divides the same two integers (exact as floats), so the quotient is
    # bit-for-bit the same. (A few numpy calls: each costs about a microsecond a record.)
    if 0 in g_len:  # a ground truth without tokens: recall 0 against everything
        lengths = np.array(g_len, dtype=np.float64)[:, None]
        recall = np.divide(lcs, lengths, out=np.zeros((m, n)), where=lengths > 0)
    else:
        recall = lcs / np.array(g_len, dtype=np.float64)[:, None]
    return recall.T, has_tokens, tokenless


def _tokenless(texts: Sequence[str], has_tokens: BoolArray) -> tuple[str, ...]:
    """The texts with a word but no token (warned about; see :class:`Matches`)."""
    return tuple(texts[i] for i in np.flatnonzero(~has_tokens).tolist() if has_word(texts[i]))


def _relevant(
    recall: np.ndarray[Any, np.dtype[np.float64]],
    threshold: float,
    has_tokens: BoolArray | None,
    n: int,
) -> BoolArray:
    """``recall >= threshold``; at threshold 0 (``has_tokens`` given, retrieved first), an empty
    or tokenless text still matches nothing, though its recall 0 passes."""
    relevant = recall >= threshold
    if has_tokens is not None:
        relevant &= has_tokens[:n, None] & has_tokens[None, n:]
    return relevant


def _plain(tokenizer: Tokenizer) -> bool:
    """Whether the compiled kernel gives ``tokenizer``'s tokens: only rouge-score's own (a
    subclass may tokenise otherwise; stems are not read)."""
    return type(tokenizer) is RougeTokenizer and not tokenizer.stem


#: ROUGE-L implementations: rouge-score's (the reference definition, on rapidfuzz) and the
#: ``rouge`` package's summary-level ROUGE-L that continuous-eval uses (see matching/pyrouge.py).
ROUGE_SCORERS = ("rouge-score", "py-rouge")


class _RougeMatch(BuiltinStrategy):
    always_shown: ClassVar[tuple[str, ...]] = ("threshold",)
    defaults: ClassVar[dict[str, Any]] = {"scorer": "rouge-score"}
    default_threshold: ClassVar[float]
    __slots__ = ("_scorer", "_threshold", "_tokenizer")

    def __init__(
        self,
        threshold: float | None = None,
        *,
        tokenizer: str | Tokenizer = "rouge",
        splitter: object = "default",
        scorer: str = "rouge-score",
    ) -> None:
        owner = type(self).__name__
        self._threshold = check_threshold(
            owner, self.default_threshold if threshold is None else threshold
        )
        self._tokenizer = get_tokenizer(tokenizer)
        self._scorer = check_choice(owner, "scorer", scorer, ROUGE_SCORERS)
        if self._scorer == "py-rouge" and self._tokenizer != get_tokenizer("rouge"):
            raise InvalidArgumentError(
                f"{owner}(scorer='py-rouge', tokenizer={tokenizer!r}): the py-rouge scorer "
                "reproduces continuous-eval with its own whitespace tokens; drop tokenizer= or "
                "use scorer='rouge-score'"
            )
        super().__init__(splitter)

    @property
    def threshold(self) -> float:
        return self._threshold

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"threshold": self._threshold, "tokenizer": self._tokenizer}
        if self._splitter is not None:
            opts["splitter"] = self._splitter
        opts["scorer"] = self._scorer
        return opts

    def _shown_options(self) -> dict[str, Any]:
        shown = super()._shown_options()
        if shown.get("tokenizer") == get_tokenizer("rouge"):
            del shown["tokenizer"]
        return shown

    def match_records(self, records: Sequence[RecordTexts]) -> list[Matches]:
        """:meth:`match` of every (retrieved, ground truth) pair, the same :class:`Matches`: in
        one call of the compiled kernel for them all when it is in use, else one by one (the
        texts of those bound to be tokenised afresh tokenised in bulk first)."""
        flat = self.match_records_flat(records)
        if flat is not None:
            return [flat.matches(k, len(r), len(g)) for k, (r, g) in enumerate(records)]
        if self._rouge_score_tokens():
            keyed = default_cache(self._tokenizer).keyed_records(records)
            return [
                self._match(retrieved, truth, kernel=False, keyed=keys)
                for (retrieved, truth), keys in zip(records, keyed, strict=True)
            ]
        return [self.match(retrieved, truth) for retrieved, truth in records]

    def match_records_flat(self, records: Sequence[RecordTexts]) -> FlatMatches | None:
        """:meth:`match_records` as flat arrays (:class:`FlatMatches`), from one call of the
        compiled kernel; None when the kernel is not in use or does not score these options."""
        if not self._rouge_score_tokens():
            return None
        found = rouge_recall_records(records)
        if found is None:
            return None
        recall, counts, tokenless, blocks = found
        relevant = recall >= self._threshold
        lost: dict[int, tuple[str, ...]] = {}
        if tokenless.any():  # records with a text without tokens, or too large for the kernel
            self._settle(records, (recall, counts, tokenless, blocks), relevant, lost)
        return FlatMatches(relevant, recall, blocks, lost)

    def _rouge_score_tokens(self) -> bool:
        """Whether this strategy scores rouge-score's own ROUGE-L on its own tokens: what the
        compiled kernel and the bulk token codes reproduce."""
        return _plain(self._tokenizer) and self._scorer == "rouge-score"

    def _settle(
        self,
        records: Sequence[RecordTexts],
        found: tuple[FloatArray, IntArray, IntArray, IntArray],
        relevant: BoolArray,
        lost: dict[int, tuple[str, ...]],
    ) -> None:
        """What the kernel's arrays do not settle alone, in place: a record too large for the
        kernel is scored on the Python path; one with texts without a token lists them (as
        ``tokenless``), and at threshold 0 those match nothing, though their recall 0 passes."""
        recall, counts, tokenless, blocks = found
        has_tokens = counts > 0
        text = 0
        for k, ((retrieved, truth), block, without) in enumerate(
            zip(records, blocks.tolist(), tokenless.tolist(), strict=True)
        ):
            n, m = len(retrieved), len(truth)
            has = has_tokens[text : text + n + m]
            text += n + m
            cells = slice(block, block + n * m)
            if without < 0:  # too large for the kernel's masks: the Python path
                matches = self._match(retrieved, truth, kernel=False)
                assert matches.scores is not None  # ROUGE-L recall
                recall[cells] = matches.scores.ravel()
                relevant[cells] = matches.relevant.ravel()
                texts = matches.tokenless
            elif without:
                scores = recall[cells].reshape(n, m)
                relevant[cells] = _relevant(scores, self._threshold, has, n).ravel()
                texts = _tokenless([*retrieved, *truth], has)
            else:
                continue
            if texts:
                lost[k] = texts

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        if self._scorer == "py-rouge":
            # Pairs the rouge package cannot score are never relevant (as in continuous-eval),
            # even at threshold 0, so they are marked -1 before the comparison.
            recall = py_rouge_l_recall_matrix(retrieved, ground_truth, unscorable=-1.0)
            relevant = recall >= self._threshold
            if self._threshold == 0:
                # Blank texts have no (whitespace) tokens: they match nothing.
                r_ok = np.fromiter((bool(t.split()) for t in retrieved), bool, len(retrieved))
                g_ok = np.fromiter((bool(t.split()) for t in ground_truth), bool, len(ground_truth))
                relevant &= r_ok[:, None] & g_ok[None, :]
            return Matches(relevant=relevant, scores=np.maximum(recall, 0.0))
        return self._match(retrieved, ground_truth)

    def _match(
        self,
        retrieved: Sequence[str],
        ground_truth: Sequence[str],
        *,
        kernel: bool = True,
        keyed: list[list[str]] | None = None,
    ) -> Matches:
        """:meth:`match` under rouge-score's ROUGE-L (``kernel=False``: on the Python path;
        ``keyed``: the record's keys made in bulk)."""
        at_zero = self._threshold == 0
        recall, has_tokens, tokenless = _recall(
            retrieved,
            ground_truth,
            self._tokenizer,
            with_tokens=at_zero,
            kernel=kernel,
            keyed=keyed,
        )
        relevant = _relevant(recall, self._threshold, has_tokens, len(retrieved))
        return Matches(relevant=relevant, scores=recall, tokenless=tokenless)


@own_init
class RougeChunkMatch(_RougeMatch):
    """A retrieved chunk is relevant to a ground-truth chunk when ROUGE-L recall >= threshold.

    ``threshold`` defaults to 0.7. ``tokenizer`` is ``"rouge"`` (rouge-score's, ASCII only),
    ``"rouge-stem"`` (with Porter stemming), ``"unicode"`` (every script) or an object with a
    ``tokenize`` method. ``scorer="py-rouge"`` reproduces continuous-eval's RougeChunkMatch (the
    ``rouge`` package's summary-level ROUGE-L on whitespace tokens) without its long-text
    failures.
    """

    spec_name: ClassVar[str] = "rouge-chunk"
    unit_kind: ClassVar[Unit] = "chunk"
    default_threshold: ClassVar[float] = 0.7
    __slots__ = ()


@own_init
class RougeSentenceMatch(_RougeMatch):
    """Like :class:`RougeChunkMatch` on sentences (threshold 0.8 by default).

    Retrieved chunks and ground-truth contexts are split into sentences with ``splitter`` first.
    """

    spec_name: ClassVar[str] = "rouge-sentence"
    unit_kind: ClassVar[Unit] = "sentence"
    default_threshold: ClassVar[float] = 0.8
    __slots__ = ()
