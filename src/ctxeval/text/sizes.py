"""Sizes of texts: words (whitespace-separated, counted in bulk), characters, and tokens of a
token counter (``"rouge"``: rouge-score's tokenizer, ``"unicode"``, an LLM's tokenizer such as
``"cl100k_base"`` or ``"hf:tokenizer.json"`` (:mod:`ctxeval.text.tokenizers`, offline), or any
callable ``str -> int``)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.foundation.arrays import IntArray
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.text.tokenize import get_tokenizer
from ctxeval.text.tokenizers import is_llm_tokenizer, llm_token_counter

__all__ = [
    "SPACE_CODES",
    "TokenCounter",
    "WordMemo",
    "check_token_counter",
    "count_words",
    "counting",
    "joined_word_counts",
    "remember_word_counts",
    "token_counter",
    "word_counts",
]


TokenCounter = Callable[[str], int]


def token_counter(tokens: str | TokenCounter) -> TokenCounter:
    """The counter of ``t`` budgets: a tokenizer name (``"rouge"``, ``"unicode"``, an LLM's:
    ``"cl100k_base"``, ``"hf:PATH"``) or a callable ``str -> int``, returned as it is."""
    if isinstance(tokens, str) and is_llm_tokenizer(tokens):
        return llm_token_counter(tokens)
    if isinstance(tokens, str):
        tokenizer = get_tokenizer(tokens)
        return lambda text: len(tokenizer.tokenize(text))
    if callable(tokens):
        return tokens
    raise InvalidArgumentTypeError(
        f"token_counter must be 'rouge', 'unicode', an LLM tokenizer ('cl100k_base', "
        f"'hf:tokenizer.json') or a callable str -> int, got "
        f"{type_name(tokens)}"
    )


def count_words(text: str) -> int:
    return len(text.split())


# The characters str.split() splits on: str.isspace() (tests/metrics/test_budgets.py checks it).
_SPACES = (*range(9, 14), *range(28, 33), 133, 160, 5760, *range(8192, 8203), 8232, 8233)


SPACE_CODES = np.array([*_SPACES, 8239, 8287, 12288], dtype=np.uint32)


def word_counts(texts: Sequence[str]) -> IntArray:
    """``len(text.split())`` of every text, computed for all of them at once: a word starts
    where a non-space follows a space (or a text's start). Counts handed on for these very
    text objects (:func:`remember_word_counts`) are taken as they are. A text that occurs
    several times (chunks repeat across queries) is counted once, and its count is remembered
    for later batches (see :class:`WordMemo`)."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    memo = _memo()
    if memo.handed:
        return _handed_word_counts(texts, memo.take_handed())
    if memo.resting():
        return _fresh_word_counts(texts)  # all-new texts of late: no lookups
    known: list[int | None] = list(map(memo.counts.get, texts))
    found = len(texts) - known.count(None)
    if found == len(texts):
        return np.array(known, dtype=np.int64)
    if not found and not memo.admits(hits=0, texts=len(texts)):
        return _fresh_word_counts(texts)  # all-new texts, and the memo idle: count them all
    missing = [k is None for k in known]
    fresh = list(dict.fromkeys(itertools.compress(texts, missing)))
    counted = dict(zip(fresh, _fresh_word_counts(fresh).tolist(), strict=True))
    if found:
        memo.keep(counted, hits=found, texts=len(texts))
    else:  # admitted above
        memo.store(counted)
    return np.array(
        [counted[t] if k is None else k for t, k in zip(texts, known, strict=True)],
        dtype=np.int64,
    )


def _handed_word_counts(texts: Sequence[str], handed: dict[int, tuple[str, int]]) -> IntArray:
    """Word counts of ``texts``: those handed on (:func:`remember_word_counts`; the same
    objects, found by identity: no text is hashed) as they are, the others by
    :func:`word_counts`."""
    known = [
        None if h is None or h[0] is not t else h[1]
        for t, h in zip(texts, map(handed.get, map(id, texts)), strict=True)
    ]
    if None in known:
        rest = iter(word_counts([t for t, k in zip(texts, known, strict=True) if k is None]))
        known = [next(rest) if k is None else k for k in known]
    return np.array(known, dtype=np.int64)


def _fresh_word_counts(texts: Sequence[str]) -> IntArray:
    """Word counts of texts not remembered: the ASCII ones (most chunks) joined and counted
    at once (:func:`_ascii_word_counts`, about 1.3 µs a 120-word chunk), the others on their
    UTF-8 bytes encoded one by one (:func:`_word_counts`, about 2 µs)."""
    flags = list(map(str.isascii, texts))
    if all(flags):
        return _ascii_word_counts(texts)
    counts = np.empty(len(texts), dtype=np.int64)
    plain = np.array(flags, dtype=bool)
    if plain.any():
        counts[plain] = _ascii_word_counts(list(itertools.compress(texts, flags)))
    counts[~plain] = _word_counts([t for t, f in zip(texts, flags, strict=True) if not f])
    return counts


def _ascii_word_counts(texts: Sequence[str]) -> IntArray:
    """``len(text.split())`` of ASCII texts, all at once: joined with a space before each
    (one ``str.join`` and ``encode``, no per-text copy), each byte made 1 for a space and 0
    otherwise (one ``bytes.translate``), and counted by :func:`joined_word_counts`."""
    joined = (" " + " ".join(texts) + " ").encode("ascii")
    space = np.frombuffer(joined.translate(_SPACE_BYTES), dtype=np.uint8)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    separators = np.cumsum(lengths + 1) - lengths - 1  # where each text's separator is
    return joined_word_counts(joined, space, separators, ascii_only=True)


def joined_word_counts(
    joined: bytes, space: npt.NDArray[np.uint8], separators: IntArray, *, ascii_only: bool
) -> IntArray:
    """``len(text.split())`` of texts whose UTF-8 bytes lie end to end in ``joined``, each
    after the space byte at its entry of ``separators``, the last one followed by spaces (at
    least three unless ``ascii_only``): a word starts where a non-space follows a space, and
    each text's starts are summed (no start counts for the wrong text). ``space``: 1 for each
    byte that is an ASCII space, else 0. Unless ``ascii_only`` (no text beyond ASCII), the
    bytes of the other spaces (U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029,
    U+202F, U+205F, U+3000: :data:`SPACE_CODES`, two or three bytes each) are marked too, in a
    copy of ``space``."""
    if not ascii_only:
        space = _mark_wide_spaces(np.frombuffer(joined, dtype=np.uint8), space.copy())
    starts = (space[:-1] > space[1:]).view(np.uint8)
    counts: IntArray = np.add.reduceat(starts, separators, dtype=np.uint32).astype(np.int64)
    return counts


def remember_word_counts(texts: Sequence[str], counts: IntArray) -> None:
    """Hand on the word counts of ``texts``, counted elsewhere on bytes at hand (by
    :func:`ctxeval.text.token_codes.rouge_codes`: a batch's texts are tokenised for matching
    before its context sizes are counted), to the next :func:`word_counts` call of this
    thread, which takes those of the same text objects."""
    _memo().hand(texts, counts.tolist())


class WordMemo:
    """Word counts of texts counted before, for the next batches: chunks repeat across the
    queries of a run (a retriever over a fixed corpus), so each is counted once per run, not
    once per batch. At most ``max_chars`` characters of texts are kept (the texts are the keys);
    when a batch's new texts would pass that, the memo starts afresh with them.

    Keeping costs a little (0.3 µs a text): a batch's new counts are kept only while texts come
    back (at least one in eight of a batch's texts found), or when the memo is empty, or afresh
    after eight batches in a row where almost nothing came back. So do lookups (a text's first
    hash: about 0.5 µs for a 120-word chunk): after a batch where almost nothing came back, the
    next six are counted without them (all-new texts: the memo then costs the lookups of two
    batches in eight, and still notices when texts start to repeat)."""

    def __init__(self, max_chars: int = 1 << 23) -> None:
        self.max_chars = max_chars
        self.counts: dict[str, int] = {}
        self.chars = 0
        self.idle = 0  # batches in a row where almost nothing came back
        # Counts handed on for the next call, by the id of their text (kept alive with it).
        self.handed: dict[int, tuple[str, int]] = {}
        self.handed_chars = 0

    def hand(self, texts: Sequence[str], counts: list[int]) -> None:
        """Hold ``counts`` for the next :meth:`take_handed` (at most ``max_chars`` characters
        of texts: beyond, the earlier ones are dropped)."""
        size = sum(map(len, texts))
        if self.handed_chars + size > self.max_chars:
            self.handed.clear()
            self.handed_chars = 0
        self.handed.update(zip(map(id, texts), zip(texts, counts, strict=True), strict=True))
        self.handed_chars += size

    def take_handed(self) -> dict[int, tuple[str, int]]:
        handed, self.handed, self.handed_chars = self.handed, {}, 0
        return handed

    def keep(self, counted: dict[str, int], *, hits: int = 0, texts: int = 0) -> None:
        if self.admits(hits=hits, texts=texts):
            self.store(counted)

    def resting(self) -> bool:
        """Whether to count a batch afresh without looking its texts up: the batches after
        one where almost nothing came back, but for the eighth in a row."""
        if 0 < self.idle < 7:
            self.idle += 1
            return True
        return False

    def admits(self, *, hits: int, texts: int) -> bool:
        """Whether a batch that found ``hits`` of its ``texts`` should keep its new counts
        (counting the batches in a row where almost nothing came back)."""
        if self.counts and hits * 8 < texts:
            self.idle += 1
            if self.idle < 8:
                return False
            self.counts.clear()
            self.chars = 0
        self.idle = 0
        return True

    def store(self, counted: dict[str, int]) -> None:
        size = sum(map(len, counted))
        if self.chars + size > self.max_chars:
            self.counts.clear()
            self.chars = 0
            if size > self.max_chars:
                return
        self.counts.update(counted)
        self.chars += size


_local = threading.local()


def _memo() -> WordMemo:
    """This thread's memo (a thread's batches never see another's resets)."""
    memo: WordMemo | None = getattr(_local, "memo", None)
    if memo is None:
        memo = _local.memo = WordMemo()
    return memo


def _word_counts(texts: Sequence[str]) -> IntArray:
    """``len(text.split())`` of every text, on their UTF-8 bytes all at once (2.5x faster
    than str.split text by text on 120-word chunks, 15% of them beyond ASCII): each byte
    becomes 1 when it is an ASCII space and 0 otherwise, then :func:`joined_word_counts`."""
    # Encoded one by one: joining first would widen every ASCII text to the widest one's form.
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    joined = b"\n" + b"\n".join(encoded) + b"\n\n\n"  # (three: see _mark_wide_spaces)
    space = np.frombuffer(joined.translate(_SPACE_BYTES), dtype=np.uint8)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(texts))
    separators = np.cumsum(lengths + 1) - lengths - 1  # where each text's separator is
    ascii_only = len(joined) == sum(map(len, texts)) + len(texts) + 3
    return joined_word_counts(joined, space, separators, ascii_only=ascii_only)


def _mark_wide_spaces(byte: npt.NDArray[np.uint8], space: npt.NDArray[np.uint8]) -> Any:
    """``space`` with every byte of each two- and three-byte UTF-8 space set to 1 (``byte``
    ends with at least three bytes of ASCII)."""
    lead = np.flatnonzero(byte[:-3] >= 0xC2)  # lead bytes beyond ASCII (continuations < 0xC0)
    # Each lead's character as a number of 3 bytes (one unaligned read of 4 bytes at each).
    code = np.ndarray((len(byte) - 3,), dtype=">u4", buffer=byte, strides=(1,))[lead] >> 8
    at = lead[np.searchsorted(_SPACE_RANGES, code, side="right") % 2 == 1]
    space[at] = space[at + 1] = 1
    at = at[byte[at] >= 0xE0]  # three bytes
    space[at + 2] = 1
    return space


# Byte -> 1 for an ASCII space, else 0 (so every byte of a character beyond ASCII is 0 until
# _mark_wide_spaces marks the spaces among them). All from SPACE_CODES.
_SPACE_BYTES = bytes(1 if b in SPACE_CODES[SPACE_CODES < 128] else 0 for b in range(256))


# The numbers of 3 bytes that start with the UTF-8 encoding of a space beyond ASCII, as ranges
# [first, first + width), both ends of each in order (SPACE_CODES is in order, and so are its
# encodings): a number is in a range when an odd count of ends is at or below it. A two-byte
# space (U+0085, U+00A0) is a range of 256 (any third byte), a three-byte one a range of 1.
_SPACE_RANGES = np.array(
    [
        int.from_bytes(encoded.ljust(3, b"\0"), "big") + end * (256 if len(encoded) == 2 else 1)
        for encoded in (chr(c).encode("utf-8") for c in SPACE_CODES.tolist() if c >= 128)
        for end in (0, 1)
    ],
    dtype=np.int64,
)


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
    if isinstance(counter, str) and is_llm_tokenizer(counter):
        try:
            llm_token_counter(counter)  # loaded now: a missing file is said before any work
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{where}: {exc}") from None
        return counter
    if isinstance(counter, str):
        try:
            get_tokenizer(counter)
        except ValueError as exc:
            raise InvalidArgumentError(
                f"{where}: {exc}; or an LLM tokenizer: 'cl100k_base', 'o200k_base', "
                "'hf:tokenizer.json'"
            ) from None
        return counter
    if callable(counter):
        return counter
    raise InvalidArgumentTypeError(
        f"{where}: {counter!r} is not a token counter; give 'rouge', 'unicode', an LLM "
        "tokenizer ('cl100k_base', 'hf:tokenizer.json') or a callable str -> int"
    )
