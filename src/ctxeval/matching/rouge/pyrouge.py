"""ROUGE-L recall exactly as the ``rouge`` package computes it, which is what continuous-eval uses.

continuous-eval's ``RougeChunkMatch`` / ``RougeSentenceMatch`` decide relevance with
``Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)[0]["rouge-l"]["r"] >= threshold``
from the ``rouge`` package (pltrdy/rouge 1.0.1), inside a ``try`` that scores *any* exception as
"not relevant". :func:`py_rouge_l_recall` returns that ``"r"`` value bit for bit, without the
package (it is a test-only reference) and without its recursion: the package reconstructs each LCS
recursively, so a sentence pair whose backtrack path is longer than the interpreter's recursion
limit (about 1,000 steps, fewer when called from deep in a stack) raises ``RecursionError``, which
continuous-eval silently turns into "not relevant". Here such pairs get their real score.

What the package computes (``Rouge._get_scores`` and ``rouge_score.rouge_l_summary_level``), which
is *not* what rouge-score (and ctxeval's default ROUGE) computes:

- A text is split into "sentences" on ``"."`` only (not ``!``, ``?`` or newlines; ``3.14`` and
  ``e.g.`` are split too); a piece of length 0 (``"a..b"``, a leading or trailing dot) is dropped.
- Tokens are ``piece.split()``: any Unicode whitespace (``\\xa0``, ``\\x1c``-``\\x1f``, ...),
  case-sensitive, punctuation kept (``"word,"`` is not ``"word"``).
- A piece made of whitespace only is *kept* and becomes one sentence whose single word is the
  empty string ``""``. That word counts in the denominator, and is matched only by another
  whitespace-only piece in the retrieved text. So ``"The end. "`` (a space after the final dot)
  has three distinct words, ``"The end."`` recalls 2/3 of it, and two whitespace-only texts
  score 1.0 against each other.
- Recall = |U| / (number of *distinct* ground-truth words), where U is the union, as a set of
  words, of the words of one reconstructed LCS for every (ground-truth sentence, retrieved
  sentence) pair. Repeated words count once (``"a"`` recalls 1/2 of ``"a b a"``), and the LCS is
  taken per sentence pair, so word order only matters inside a sentence: ``"b. a"`` recalls all
  of ``"a b"``.
- Only one LCS is reconstructed per pair, by backtracking from the end of both sentences: on a
  match take it; else step back in the ground-truth sentence if that keeps a strictly longer LCS,
  otherwise step back in the retrieved sentence. Which of several LCSs is chosen decides which
  words enter U: for ground truth ``"a b"``, ``"b a"`` reconstructs ``["b"]`` (recall 1/2), and
  ``"b a. b"`` still scores 1/2 although ``"a"`` and ``"b"`` are each in an LCS.
- ``ignore_empty=True`` only drops texts of length 0, and with a single pair that leaves nothing,
  so ``zip(*[])`` raises ``ValueError``. See :func:`py_rouge_l_recall` for every case that raises.
- ``get_scores`` also computes ROUGE-1 and ROUGE-2 on every call; they raise nothing that the
  ROUGE-L part does not, so they do not change the outcome.
- The recursion depth is the backtrack length of one sentence pair, at least as long as the
  shorter of the two sentences: a 5,000-word text of short sentences is scored, two 1,000-word
  sentences without a dot are not. The limit also counts the caller's own stack frames, so
  whether continuous-eval scores a borderline pair depends on where it is called from.
- continuous-eval's "not relevant" on an exception holds even at ``threshold=0``; a caller that
  maps ``None`` to a recall of 0.0 and compares ``>= 0`` would call such a pair relevant.

Speed: the LCS table of a sentence pair is computed bit-parallel (Hyyrö's recurrence on Python
ints, one row per ground-truth word), and the backtrack reads the table's horizontal increments
from the stored rows, jumping over runs of steps in the retrieved sentence in one operation. The
backtrack only needs "is ``T[i][j-1] < T[i][j]``?", which is one bit of row ``i``, so it makes
exactly the package's choices. Sentence pairs that cannot add a word to U are skipped. Very long
sentence pairs keep only every ``isqrt(n)``-th row and recompute the others block by block.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from math import isqrt
from typing import Any

import numpy as np

__all__ = ["py_rouge_l_recall", "py_rouge_l_recall_matrix"]

# Above this many table bits for one sentence pair (8 MiB), keep only checkpoint rows.
_FULL_TABLE_BITS = 1 << 26


class _Sentence:
    """One "sentence" of a text: its words, their set, and (lazily) their position bit masks."""

    __slots__ = ("_masks", "word_set", "words")

    def __init__(self, words: tuple[Hashable, ...]) -> None:
        self.words = words
        self.word_set = frozenset(words)
        self._masks: dict[Hashable, int] | None = None

    @property
    def masks(self) -> dict[Hashable, int]:
        """Bit ``k`` of ``masks[w]`` is set when ``words[k] == w``."""
        masks = self._masks
        if masks is None:
            masks = {}
            bit = 1
            for word in self.words:
                masks[word] = masks.get(word, 0) | bit
                bit <<= 1
            self._masks = masks
        return masks


class _Text:
    __slots__ = ("_n_distinct", "sentences")

    def __init__(self, sentences: tuple[_Sentence, ...]) -> None:
        self.sentences = sentences
        self._n_distinct = 0

    @property
    def n_distinct(self) -> int:
        """The number of distinct words, the recall's denominator (never 0)."""
        if not self._n_distinct:
            self._n_distinct = len(frozenset().union(*(s.word_set for s in self.sentences)))
        return self._n_distinct


def _split(text: str) -> list[tuple[str, ...]]:
    """The package's sentences and words: ``" ".join(piece.split()).split(" ")`` per piece."""
    return [tuple(piece.split()) or ("",) for piece in text.split(".") if piece]


def _bit_rows(x: Sequence[Hashable], masks: dict[Hashable, int], v: int) -> list[int]:
    """Rows ``v, V_1, ..., V_len(x)`` of the bit-parallel LCS table, starting from row ``v``.

    Bit ``j-1`` of a row ``V_i`` is 0 exactly when ``T[i][j] = T[i][j-1] + 1``. Rows are negative
    ints (infinitely many leading ones), so no masking to the sentence width is needed.
    """
    rows = [v]
    append = rows.append
    get = masks.get
    for word in x:
        u = v & get(word, 0)
        if u:
            v = (v + u) | (v - u)
        append(v)
    return rows


def _backtrack(
    x: Sequence[Hashable],
    y: Sequence[Hashable],
    masks: dict[Hashable, int],
    rows: list[int],
    lo: int,
    i: int,
    j: int,
    out: set[Hashable],
) -> int:
    """Walk the package's backtrack from ``(i, j)`` down to row ``lo``, adding matched words.

    ``rows[k]`` is row ``lo + k``. Each step leaves row ``i``: the path first moves left over
    every column that is neither a match nor an increment (the package's "else" branch), then
    either takes the match or moves up. Returns the column reached, or -1 once ``T[i][j] == 0``.
    """
    get = masks.get
    while i > lo:
        word = x[i - 1]
        candidates = (get(word, 0) | ~rows[i - lo]) & ((1 << j) - 1)
        if not candidates:
            return -1
        j = candidates.bit_length()
        if y[j - 1] == word:
            out.add(word)
            j -= 1
        i -= 1
    return j


def _lcs_words(x: Sequence[Hashable], y: _Sentence) -> set[Hashable]:
    """The words of the one LCS of ``x`` (ground truth) and ``y`` (retrieved) the package builds."""
    yw = y.words
    i, j = len(x), len(yw)
    if i * j > _FULL_TABLE_BITS:
        return _lcs_words_checkpointed(x, y)
    # _bit_rows and _backtrack inlined: this is the hot loop for ordinary sentences.
    get = y.masks.get
    rows = [-1]
    append = rows.append
    v = -1
    for word in x:
        u = v & get(word, 0)
        if u:
            v = (v + u) | (v - u)
        append(v)
    out: set[Hashable] = set()
    while i:
        word = x[i - 1]
        candidates = (get(word, 0) | ~rows[i]) & ((1 << j) - 1)
        if not candidates:
            break
        j = candidates.bit_length()
        if yw[j - 1] == word:
            out.add(word)
            j -= 1
        i -= 1
    return out


def _lcs_words_checkpointed(x: Sequence[Hashable], y: _Sentence) -> set[Hashable]:
    """:func:`_lcs_words` keeping every ``isqrt(n)``-th row and recomputing the rest per block."""
    masks = y.masks
    n = len(x)
    step = max(1, isqrt(n))
    checkpoints = [-1]
    for lo in range(0, n - step, step):
        checkpoints.append(_bit_rows(x[lo : lo + step], masks, checkpoints[-1])[-1])
    out: set[Hashable] = set()
    j = len(y.words)
    for block in range(len(checkpoints) - 1, -1, -1):
        lo = block * step
        hi = n if block == len(checkpoints) - 1 else lo + step
        rows = _bit_rows(x[lo:hi], masks, checkpoints[block])
        j = _backtrack(x, y.words, masks, rows, lo, hi, j, out)
        if j < 0:
            break
    return out


def _recall(retrieved: _Text, ground_truth: _Text) -> float:
    union: set[Hashable] = set()
    for g in ground_truth.sentences:
        missing = g.word_set - union
        if not missing:
            continue
        for r in retrieved.sentences:
            # The LCS only holds words common to both sentences; skip pairs that cannot add one.
            if missing.isdisjoint(r.word_set):
                continue
            new = _lcs_words(g.words, r) & missing
            if new:
                union |= new
                missing -= new
                if not missing:
                    break
    # Same two ints as the package's ``llcs / m``, so the same float.
    return len(union) / ground_truth.n_distinct


def _text(text: str) -> _Text | None:
    if not text:
        return None
    pieces = _split(text)
    if not pieces:
        return None
    # A repeated sentence adds nothing to the union.
    return _Text(tuple(map(_Sentence, dict.fromkeys(pieces))))


def py_rouge_l_recall(retrieved: str, ground_truth: str) -> float | None:
    """``Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)[0]["rouge-l"]["r"]``.

    Identical, as a float, to the ``rouge`` package's value wherever the package returns one, and
    also defined where the package runs out of recursion depth. Returns ``None`` exactly where the
    package raises for another reason — always a ``ValueError``, which continuous-eval scores as
    "not relevant":

    - ``retrieved == ""`` or ``ground_truth == ""`` (``ignore_empty`` drops the pair, then
      ``zip(*[])`` fails to unpack);
    - ``retrieved`` is non-empty but has no sentence, i.e. consists of ``"."`` only
      (``"Hypothesis is empty."``);
    - ``ground_truth`` likewise (``"Reference is empty."``).

    Whitespace-only texts are not ``None``: they hold one empty-string word (see the module
    docstring). Arguments must be ``str``.
    """
    r = _text(retrieved)
    g = _text(ground_truth)
    if r is None or g is None:
        return None
    return _recall(r, g)


def py_rouge_l_recall_matrix(
    retrieved: Sequence[str], ground_truth: Sequence[str], *, unscorable: float = 0.0
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """:func:`py_rouge_l_recall` of every pair, shape ``(len(retrieved), len(ground_truth))``.

    Pairs where it returns ``None`` hold ``unscorable`` (0.0 by default; pass ``-1.0`` or NaN
    where a threshold of 0 must still treat them as not relevant, as continuous-eval does). Each
    distinct text is split once, words are interned to ints, and a sentence shared by several
    texts builds its bit masks once.
    """
    n, m = len(retrieved), len(ground_truth)
    out = np.full((n, m), unscorable, dtype=np.float64)
    if n == 0 or m == 0:
        return out
    vocabulary: dict[str, int] = {}
    sentences: dict[tuple[Hashable, ...], _Sentence] = {}
    texts: dict[str, _Text | None] = {}

    def prepare(text: str) -> _Text | None:
        if text in texts:
            return texts[text]
        prepared = None
        if text:
            pieces = _split(text)
            if pieces:
                ids = (tuple(vocabulary.setdefault(w, len(vocabulary)) for w in p) for p in pieces)
                unique = dict.fromkeys(ids)
                prepared = _Text(
                    tuple(sentences.get(p) or sentences.setdefault(p, _Sentence(p)) for p in unique)
                )
        texts[text] = prepared
        return prepared

    r_texts = [prepare(t) for t in retrieved]
    g_texts = [prepare(t) for t in ground_truth]
    scores: dict[tuple[int, int], float] = {}
    for a, r in enumerate(r_texts):
        if r is None:
            continue
        for b, g in enumerate(g_texts):
            if g is None:
                continue
            key = (id(r), id(g))
            score = scores.get(key)
            if score is None:
                score = scores[key] = _recall(r, g)
            out[a, b] = score
    return out
