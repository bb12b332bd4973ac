"""The compiled ROUGE-L path: when it is used, and the records' characters it is given.

With numba installed (``pip install 'ctxeval[fast]'``), ROUGE-L under rouge-score's tokenizer
(``tokenizer="rouge"``, no stemming) is scored by :mod:`ctxeval.matching.rouge.lcs_kernel`: one
compiled call per batch of records (:func:`rouge_recall_records`) that tokenises, matches and
computes every LCS length, several times faster than tokenising in Python and calling rapidfuzz
on texts seen once (docs/performance.md). It gives the same two integers per pair (LCS length,
token count), so every score is the same bit for bit; the property tests compare the two paths
on random texts of every kind.

Loading numba and the cached machine code costs about half a second per process (compiling it
the first time, 4 to 8 s), which a small run would not win back. So by default (``auto``) the
kernel is loaded once the Python path has tokenised :data:`AUTO_AFTER_CHARACTERS` characters
afresh in a thread (the token cache counts per thread): about as long as the load takes (rent,
then buy: such a run spends at most about twice the time it would with the best choice made in
advance). Texts that repeat (chunks of a fixed corpus) are tokenised once and then kept, and
the kernel saves little on them, so a run over them may never load it. The environment variable
``CTXEVAL_COMPILED`` says otherwise: ``always`` (from the first record), ``never``; case and
spaces around it are ignored. It is read when the first record is matched
(:func:`read_environment` reads it again; :func:`mode` overrides it for a block). Without numba,
or if it cannot load the kernel, the Python path is used throughout (:func:`status` says why).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ctxeval.foundation.arrays import FloatArray, IntArray
from ctxeval.foundation.compiled import (
    MODES,
    current_mode,
    kernel_status,
    load_kernel,
    mode,
    read_environment,
)
from ctxeval.matching.tokens import default_cache
from ctxeval.text.sizes import SPACE_CODES, remember_word_counts
from ctxeval.text.tokenize import ROUGE_TOKEN_BYTES, get_tokenizer

__all__ = [
    "AUTO_AFTER_CHARACTERS",
    "LOWER_TO_ASCII",
    "MODES",
    "mode",
    "read_environment",
    "rouge_recall",
    "rouge_recall_records",
    "status",
]

AUTO_AFTER_CHARACTERS = 20_000_000
"""Characters the Python path tokenises afresh before ``auto`` loads the kernel: at about 26
ns a character (tokens and rapidfuzz), about the 0.5 s the load takes."""

# The tokenizer's byte table (a-z and 0-9 stay, A-Z are lowered, the rest is a space), with
# 0 for the separators, as the kernel reads it.
_TABLE = np.frombuffer(ROUGE_TOKEN_BYTES, dtype=np.uint8).copy()
_TABLE[ord(" ") == _TABLE] = 0
# 1 for the ASCII bytes str.split splits at, 0 for the other ASCII bytes, 2 beyond ASCII (the
# kernel reads the spaces beyond ASCII off their UTF-8 bytes).
_SPACES = np.isin(np.arange(256), SPACE_CODES[SPACE_CODES < 128]).astype(np.uint8)
_SPACES[128:] = 2

_ROUGE = get_tokenizer("rouge")  # the tokenizer the kernel reproduces
_state: dict[str, Any] = {"kernel": None, "why": "not loaded yet"}


def _kernel() -> Callable[..., Any] | None:
    """The compiled kernel when this record should use it, else None."""
    mode = current_mode()
    kernel: Callable[..., Any] | None = _state["kernel"]
    if kernel is not None:
        return kernel if mode != "never" else None
    if mode == "never" or _state["why"] != "not loaded yet":
        return None
    if mode == "auto" and default_cache(_ROUGE).keyed_chars < AUTO_AFTER_CHARACTERS:
        return None
    return load_kernel(_state, _checked_kernel)


def _checked_kernel() -> Callable[..., Any]:
    from ctxeval.matching.rouge import lcs_kernel

    kernel = lcs_kernel.lcs_records
    # Compile (or load from numba's cache) now, on a record whose answer is known: "ab b"
    # against "b", recall 1.
    recall = np.zeros(1, dtype=np.float64)
    counts = np.zeros(2, dtype=np.int64)
    tokenless = np.zeros(1, dtype=np.int64)
    records = array("q", [0, 1, 1, 0])
    words = np.full(2, -1, dtype=np.int64)
    buf = b"ab b b"
    kernel(buf, array("q", [4, 1]), records, _TABLE, _SPACES, recall, counts, words, tokenless)
    found = (recall.tolist(), counts.tolist(), words.tolist(), tokenless.tolist())
    if found != ([1.0], [2, 1], [2, -1], [0]):
        raise RuntimeError(f"its self-check failed: {found}")
    return kernel


def status() -> str:
    """Whether the compiled kernel is in use in this process, and if not, why."""
    waiting = "loads with the first record"
    if current_mode() == "auto":
        done = default_cache(_ROUGE).keyed_chars
        waiting = (
            f"loads once {AUTO_AFTER_CHARACTERS:,} characters have been tokenised in Python "
            f"({done:,} so far; CTXEVAL_COMPILED=always loads it at once)"
        )
    return kernel_status(_state, in_use="in use", waiting=waiting)


# The characters outside ASCII whose lowercase holds an ASCII letter (str.lower, which
# rouge-score applies first): the capital I with dot above ("i" and a combining dot, two
# characters for one) and the Kelvin sign ("k"). A test recomputes this list from the running
# Python's Unicode tables.
LOWER_TO_ASCII = ("\u0130", "\u212a")
# What rouge-score reads in each of them, in ASCII: the letters and digits of its lowercase,
# anything else a separator ("?"): "i?" and "k".
_AS_ASCII = {
    c: "".join(x if x.isascii() and x.isalnum() else "?" for x in c.lower()) for c in LOWER_TO_ASCII
}


def _kernel_text(text: str) -> str:
    """``text`` as the kernel reads it, one character per byte: an ASCII text as it is; any other
    as its UTF-8 bytes (every byte beyond ASCII separates tokens, as rouge-score reads every
    character beyond ASCII) but for the two characters of :data:`LOWER_TO_ASCII`, given in
    ASCII first. (Lone surrogates, never in records read by ctxeval, are separators too.)"""
    for c, ascii_ in _AS_ASCII.items():
        if c in text:
            text = text.replace(c, ascii_)
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


RecordTexts = tuple[Sequence[str], Sequence[str]]


def rouge_recall_records(
    records: Sequence[RecordTexts],
) -> tuple[FloatArray, IntArray, IntArray, IntArray] | None:
    """ROUGE-L recall of every record's ground truths by its retrieved texts, from one call of
    the compiled kernel for them all; None when the kernel is not in use (see the module's
    docstring).

    ``records``: (retrieved, ground truth) pairs. Returns ``recall``, flat: record *k*'s
    n x m block (row-major) starts at ``blocks[k]``; ``counts``, every text's token count
    (each record's retrieved texts, then its ground truth, record after record); ``tokenless``,
    how many of each record's texts have no token, or -1 for a record too large for the
    kernel's bit masks (a ground truth of a whole book: score it on the Python path); and
    ``blocks``.

    The retrieved texts' word counts (the context's size, counted by the kernel on the bytes
    it reads) are handed on to the thread's next word count
    (:func:`~ctxeval.text.sizes.remember_word_counts`).
    """
    return _records(records, hand_words=True)


def _records(
    records: Sequence[RecordTexts], *, hand_words: bool
) -> tuple[FloatArray, IntArray, IntArray, IntArray] | None:
    kernel = _kernel()
    if kernel is None:
        return None
    texts: list[str] = []
    rows = array("q")
    blocks = array("q")
    block = 0
    for retrieved, ground_truth in records:
        n, m = len(retrieved), len(ground_truth)
        rows.extend((len(texts), n, m, block))
        blocks.append(block)
        texts += retrieved
        texts += ground_truth
        block += n * m
    buf, lengths = _buffer(texts)
    recall = np.empty(block, dtype=np.float64)
    counts = np.empty(len(texts), dtype=np.int64)
    words = np.full(len(texts), -1, dtype=np.int64)
    tokenless = np.empty(len(records), dtype=np.int64)
    kernel(buf, lengths, rows, _TABLE, _SPACES, recall, counts, words, tokenless)
    if hand_words:  # a ground truth's is -1
        counted = words >= 0
        remember_word_counts(list(itertools.compress(texts, counted.tolist())), words[counted])
    return recall, counts, tokenless, np.frombuffer(blocks, dtype=np.int64)


def _buffer(texts: list[str]) -> tuple[bytes, array[int]]:
    """The texts as the kernel reads them (:func:`_kernel_text`), each followed by a space, and
    their lengths there. Each text beyond ASCII is made bytes on its own before the join:
    joining first would widen every text of the batch to the widest one's form, and encoding
    that costs twice what the rest of this does."""
    if not all(map(str.isascii, texts)):
        texts = [text if text.isascii() else _kernel_text(text) for text in texts]
    return " ".join(texts).encode("latin-1"), array("q", map(len, texts))


def rouge_recall(
    retrieved: Sequence[str], ground_truth: Sequence[str]
) -> tuple[FloatArray, IntArray, int] | None:
    """ROUGE-L recall of every ground truth by every retrieved text (n x m, row-major, flat),
    every text's token count (retrieved, then ground truth) and how many texts have no token,
    from the compiled kernel; None when the kernel is not in use or the record is too large
    for it (:func:`rouge_recall_records`, for one record).
    """
    found = _records([(retrieved, ground_truth)], hand_words=False)
    if found is None or found[2][0] < 0:
        return None
    recall, counts, tokenless, _ = found
    return recall, counts, int(tokenless[0])
