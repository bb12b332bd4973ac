"""rouge-score's tokens of many texts at once, as strings of one character per token.

:func:`rouge_codes` gives each text as a ``str`` in which every token of rouge-score's
tokenizer (without stemming: lowercase, runs of ``[a-z0-9]``) is one character, and two tokens
of any of the texts are the same character exactly when they are the same token. rapidfuzz
compares such strings as it compares the texts' token lists, about three times faster, and no
Python object is made per token: the work is a few numpy passes over all the texts joined.

How a token becomes its character, exactly (no hashing decides equality):

1. The texts are encoded to UTF-8 one by one and joined, and each byte becomes a symbol:
   ``0-9`` 1 to 10, ``a-z`` and ``A-Z`` 11 to 36, an ASCII space 64 and anything else 0 (both
   separators; a character outside ASCII is 2 to 4 of them). The two characters outside ASCII
   whose lowercase holds ASCII letters (:data:`LOWER_TO_ASCII`) are the exception: texts with
   them are lowercased first, as :meth:`RougeTokenizer.match_keys` lowercases every text
   outside ASCII. The texts' word counts are read off the same symbols (spaces apart).
2. A token of at most 10 characters is an integer below 2**62 that holds its symbols (its
   first 8 a byte each, read as one unaligned word; the 9th and 10th in the bytes' free high
   bits): two tokens are equal exactly when their integers are. A longer token (about 3% of
   English tokens) gets 2**62 plus its rank among the call's distinct long tokens, from a dict
   (cheaper, at a few hundred long tokens a call, than any vectorised exact scheme measured).
3. The integers are placed in an open-addressing table (linear probing, filled in vectorised
   rounds): a token's character is its integer's slot, so equal integers share a slot and
   different ones never do. The table has at most 2**20 slots and is at most half full (the
   call's tokens are limited to :data:`MAX_TOKENS`), so the characters are code points below
   2**20 + 2,048 (the surrogates skipped).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ctxeval.foundation.arrays import IntArray
from ctxeval.text.sizes import SPACE_CODES, joined_word_counts, remember_word_counts

__all__ = ["LOWER_TO_ASCII", "MAX_CHARACTERS", "rouge_codes"]

#: The most characters one call may tokenise: tokens are at most half as many (each is
#: followed by a separator or the end), so at most 2**19 distinct tokens in a 2**20-slot table.
MAX_CHARACTERS = 1 << 20

#: The characters outside ASCII whose lowercase (``str.lower``, which rouge-score applies
#: first) holds an ASCII letter: the capital I with dot above ("i" and a combining dot) and the
#: Kelvin sign ("k"). A test recomputes the list from the running Python's Unicode tables.
LOWER_TO_ASCII = ("\u0130", "\u212a")

# A byte's symbol: 0-9 1 to 10, a-z and A-Z 11 to 36, an ASCII space (str.split's) _SPACE, any
# other byte 0. Both of the last two separate tokens; spaces also separate words.
_SPACE = 64
_SYMBOLS = bytes(
    c - 47
    if 48 <= c <= 57
    else c - 86
    if 97 <= c <= 122
    else c - 54
    if 65 <= c <= 90
    else _SPACE
    if c in SPACE_CODES[SPACE_CODES < 128]
    else 0
    for c in range(256)
)
_U = np.uint64
Words = npt.NDArray[np.uint64]
# The low l bytes of a word, l = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=_U)
# The low 0, 1 or 2 bytes of a word (the 9th and 10th symbols of a token).
_TWO_BYTES = np.array([0, 0xFF, 0xFFFF], dtype=_U)
_SPREAD_9, _HIGH_9 = _U(1 << 6 | 1 << 12 | 1 << 18), _U(0xC0C0C0)
_SPREAD_10, _HIGH_10 = _SPREAD_9 << _U(24), _HIGH_9 << _U(24)
_LONG = 1 << 62
_FIBONACCI = _U(0x9E3779B97F4A7C15)
# What follows the last text: the widest read past a token's start (8 bytes) stays inside.
_TAIL = b" " * 7
_SURROGATES = 0xD800


def rouge_codes(texts: Sequence[str]) -> list[str]:
    """Each text as one character per rouge-score token (no stemming); equal characters, across
    all of ``texts``, exactly where the tokens are equal. At most :data:`MAX_CHARACTERS`
    characters in all (``ValueError`` beyond).

    The texts' word counts (``len(text.split())``) come from the same bytes, for little more,
    and are handed to :func:`ctxeval.text.sizes.remember_word_counts`."""
    if not texts:
        return []
    characters = sum(map(len, texts)) + len(texts) - 1
    if characters > MAX_CHARACTERS:
        raise ValueError(f"rouge_codes: {characters:,} characters, at most {MAX_CHARACTERS:,}")
    data, lengths = _utf8(texts)
    raw = data.translate(_SYMBOLS)
    symbols = np.frombuffer(raw, dtype=np.uint8)
    inside = (symbols & (_SPACE - 1)) != 0
    # Where a token starts or ends, in turn (the buffer starts and ends with separators).
    edges = np.flatnonzero(inside[1:] ^ inside[:-1])
    edges += 1
    starts, ends = edges[0::2], edges[1::2]
    keys = _token_keys(raw, starts, ends - starts)
    codes = _slots(keys)
    codes += (codes >= _SURROGATES) * 0x800
    joined = codes.astype("<u4").tobytes().decode("utf-32-le")
    # Text i's bytes start after the separator before it, past the earlier texts and theirs.
    offsets = np.cumsum([1, *[n + 1 for n in lengths]])
    bounds = np.searchsorted(starts, offsets).tolist()
    ascii_only = all(map(str.isascii, texts))
    words = joined_word_counts(
        data, (symbols == _SPACE).view(np.uint8), offsets[:-1] - 1, ascii_only=ascii_only
    )
    remember_word_counts(texts, words)
    return [joined[a:b] for a, b in itertools.pairwise(bounds)]


def _utf8(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """The texts' UTF-8 bytes joined by spaces, one space before them and eight after (the
    widest read past a token's start stays inside), with the same rouge-score tokens; and each
    text's length in bytes."""
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    # Every byte outside ASCII separates tokens (a character beyond ASCII is 2-4 of them), but
    # texts holding a character whose lowercase holds ASCII letters ("K" Kelvin -> "k", and one
    # that becomes two characters) are lowercased first, as match_keys does.
    if any(c in t for t in itertools.filterfalse(str.isascii, texts) for c in LOWER_TO_ASCII):
        parts = [
            t.lower().encode("utf-8", "surrogatepass") if _lowers_to_ascii(t) else p
            for t, p in zip(texts, parts, strict=True)
        ]
    joined = b" ".join([b"", *parts, _TAIL])
    return joined, list(map(len, parts))


def _lowers_to_ascii(text: str) -> bool:
    return not text.isascii() and any(c in text for c in LOWER_TO_ASCII)


def _token_keys(raw: bytes, starts: IntArray, sizes: IntArray) -> Words:
    """Every token's exact integer (``raw``: the buffer of symbols, a byte each): its first 10
    symbols (:func:`_pack`, below 2**62) when it has at most 10, else 2**62 plus its rank among
    the call's distinct tokens longer than 10 symbols, from a dict."""
    # Every 8 bytes of the buffer as one unaligned word: a token's first 8 symbols in one read.
    # Read by indexing: ndarray.take copies a non-contiguous array whole first (1 MB a call).
    words = np.ndarray((len(raw) - 7,), dtype="<u8", buffer=raw, strides=(1,))
    keys = _pack(words, starts, sizes)
    long = np.flatnonzero(sizes > 10)
    if len(long):
        ranks: dict[bytes, int] = {}
        keys[long] = [
            ranks.setdefault(raw[a : a + n], _LONG | len(ranks))
            for a, n in zip(starts[long].tolist(), sizes[long].tolist(), strict=True)
        ]
    return keys


def _pack(words: Words, starts: IntArray, sizes: IntArray) -> Words:
    """The first 10 symbols of the tokens at ``starts`` (``sizes`` symbols each, at least 1) as
    integers below 2**62: the first 8 a byte each (the bytes past the token's end 0), the 9th
    and 10th spread over the two high bits of the first six bytes (symbols are below 64, so
    those bits are free; the last byte's stay 0)."""
    x: Words = words[starts]
    x &= _BYTE_MASKS.take(sizes, mode="clip")
    over = np.flatnonzero(sizes > 8)
    if len(over):
        w = words[starts[over] + 8] & _TWO_BYTES.take(sizes[over] - 8, mode="clip")
        # The 9th symbol's bit pairs to bits 6, 14 and 22, the 10th's to 30, 38 and 46: each
        # multiplication makes three copies of a symbol that do not overlap (no carries).
        x[over] |= ((w & _U(63)) * _SPREAD_9) & _HIGH_9 | ((w >> _U(8)) * _SPREAD_10) & _HIGH_10
    return x


def _slots(keys: Words) -> IntArray:
    """Each key's slot in an open-addressing table of at least twice as many slots as keys
    (linear probing; 0 marks a free slot, and no key is 0): equal keys get the same slot,
    different keys different ones."""
    bits = max(10, (2 * len(keys) - 1).bit_length())
    table = np.zeros(1 << bits, dtype=_U)
    mask = _U((1 << bits) - 1)
    slot = (keys * _FIBONACCI) >> _U(64 - bits)
    # The first round, in an empty table: one key of each slot's contenders wins it.
    table[slot] = keys
    found = slot.astype(np.int64)
    left = np.flatnonzero(table[slot] != keys)
    key, slot = keys[left], (slot[left] + _U(1)) & mask
    while len(left):
        free = table[slot] == 0
        table[slot[free]] = key[free]  # of keys contending for a slot, one wins
        won = table[slot] == key
        found[left[won]] = slot[won]
        lost = ~won
        left, key, slot = left[lost], key[lost], (slot[lost] + _U(1)) & mask
    return found
