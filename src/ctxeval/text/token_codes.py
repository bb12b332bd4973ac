"""rouge-score's tokens of many texts at once, as strings of one character per token.

:func:`rouge_codes` gives each text as a ``str`` in which every token of rouge-score's
tokenizer (without stemming: lowercase, runs of ``[a-z0-9]``) is one character, and two tokens
of any of the texts are the same character exactly when they are the same token. rapidfuzz
compares such strings as it compares the texts' token lists, about three times faster, and no
Python object is made per token: the work is a few numpy passes over all the texts joined.

How a token becomes its character, exactly (no hashing decides equality):

1. Each byte becomes a symbol: ``0-9`` 1 to 10, ``a-z`` and ``A-Z`` 11 to 36, anything else 0
   (a separator). Texts outside ASCII are lowercased and encoded with ``?`` for every other
   character first, as :meth:`RougeTokenizer.match_keys` does.
2. A token of at most 10 characters is the integer of its symbols, 6 bits each (below 2**60:
   two tokens are equal exactly when their integers are). A longer token (about 3% of English
   tokens) gets 2**60 plus its rank among the call's distinct long tokens, from a dict.
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

__all__ = ["MAX_CHARACTERS", "rouge_codes"]

#: The most characters one call may tokenise: tokens are at most half as many (each is
#: followed by a separator or the end), so at most 2**19 distinct tokens in a 2**20-slot table.
MAX_CHARACTERS = 1 << 20

_SYMBOLS = bytes(
    c - 47 if 48 <= c <= 57 else c - 86 if 97 <= c <= 122 else c - 54 if 65 <= c <= 90 else 0
    for c in range(256)
)
_U = np.uint64
Words = npt.NDArray[np.uint64]
# The low l bytes of a word, l = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=_U)
_LONG = 1 << 60
_FIBONACCI = _U(0x9E3779B97F4A7C15)
_SURROGATES = 0xD800


def rouge_codes(texts: Sequence[str]) -> list[str]:
    """Each text as one character per rouge-score token (no stemming); equal characters, across
    all of ``texts``, exactly where the tokens are equal. At most :data:`MAX_CHARACTERS`
    characters in all (``ValueError`` beyond)."""
    if not texts:
        return []
    data, lengths = _ascii_bytes(texts)
    if len(data) > MAX_CHARACTERS:
        raise ValueError(f"rouge_codes: {len(data):,} characters, at most {MAX_CHARACTERS:,}")
    # 8 separators first (a token's word then never starts before the buffer), 16 after (its
    # last two symbols are read past it), and a length that is a multiple of 8.
    tail = 16 + (-len(data) % 8)
    symbols = np.frombuffer(b"\0" * 8 + data.translate(_SYMBOLS) + b"\0" * tail, dtype=np.uint8)
    edges = np.diff((symbols != 0).view(np.int8))
    starts = np.flatnonzero(edges == 1) + 1
    ends = np.flatnonzero(edges == -1) + 1
    keys = _token_keys(symbols, starts, ends)
    codes = _slots(keys)
    codes += (codes >= _SURROGATES) * 0x800
    joined = codes.astype("<u4").tobytes().decode("utf-32-le")
    # Text i's bytes start at 8 + sum of the earlier lengths and separators.
    offsets = np.cumsum([8, *[n + 1 for n in lengths]])
    bounds = np.searchsorted(starts, offsets).tolist()
    return [joined[a:b] for a, b in itertools.pairwise(bounds)]


def _ascii_bytes(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """The texts joined by spaces, as bytes with the same rouge-score tokens, and each one's
    length in them."""
    joined = " ".join(texts)
    if joined.isascii():  # the byte table lowercases A-Z
        return joined.encode(), list(map(len, texts))
    # lower() first: a few non-ASCII letters lowercase to ASCII ones ("K" Kelvin -> "k"), and
    # one to two characters; every other non-ASCII character separates tokens ("?").
    parts = [t.encode() if t.isascii() else t.lower().encode("ascii", "replace") for t in texts]
    return b" ".join(parts), list(map(len, parts))


def _token_keys(symbols: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray) -> Words:
    """Every token's exact integer: its first 10 symbols, 6 bits each, or 2**60 plus its rank
    among the distinct tokens longer than 10 characters."""
    sizes = ends - starts
    words = symbols.view("<u8")
    # The 8 bytes from each start: two aligned words shifted together (a shift of 64 is 0).
    shift = ((starts & 7) << 3).astype(_U)
    index = starts >> 3
    x: Words = (words[index] >> shift) | ((words[index + 1] << _U(1)) << (_U(63) - shift))
    x &= _BYTE_MASKS[np.minimum(sizes, 8)]
    # Symbols are below 64: squeeze 8 bits each to 6 (pairs, then quads, then the eight).
    x = (x & _U(0x00FF00FF00FF00FF)) | ((x & _U(0xFF00FF00FF00FF00)) >> _U(2))
    x = (x & _U(0x0000FFFF0000FFFF)) | ((x & _U(0xFFFF0000FFFF0000)) >> _U(4))
    x = (x & _U(0x00000000FFFFFFFF)) | ((x & _U(0xFFFFFFFF00000000)) >> _U(8))
    over = np.flatnonzero(sizes > 8)
    if len(over):
        at, size = starts[over], sizes[over]
        ninth = symbols[at + 8].astype(_U) << _U(48)
        tenth = (symbols[at + 9] * (size > 9)).astype(_U) << _U(54)
        x[over] |= ninth | tenth
        long = over[size > 10]
        if len(long):
            raw = symbols.tobytes()
            ranks: dict[bytes, int] = {}
            x[long] = [
                ranks.setdefault(raw[a:b], _LONG | len(ranks))
                for a, b in zip(starts[long].tolist(), ends[long].tolist(), strict=True)
            ]
    return x


def _slots(keys: Words) -> IntArray:
    """Each key's slot in an open-addressing table of at least twice as many slots as keys
    (linear probing; 0 marks a free slot, and no key is 0): equal keys get the same slot,
    different keys different ones."""
    bits = max(10, (2 * len(keys) - 1).bit_length())
    table = np.zeros(1 << bits, dtype=_U)
    mask = _U((1 << bits) - 1)
    slot = (keys * _FIBONACCI) >> _U(64 - bits)
    found = np.empty(len(keys), dtype=np.int64)
    left = np.arange(len(keys))
    key = keys
    while len(left):
        free = table[slot] == 0
        table[slot[free]] = key[free]  # of keys contending for a slot, one wins
        won = table[slot] == key
        found[left[won]] = slot[won]
        lost = ~won
        left, key, slot = left[lost], key[lost], (slot[lost] + _U(1)) & mask
    return found
