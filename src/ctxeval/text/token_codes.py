"""rouge-score's tokens of many texts at once, as strings of one character per token.

:func:`rouge_codes` gives each text as a ``str`` in which every token of rouge-score's
tokenizer (without stemming: lowercase, runs of ``[a-z0-9]``) is one character, and two tokens
of any of the texts are the same character exactly when they are the same token. rapidfuzz
compares such strings as it compares the texts' token lists, about three times faster, and no
Python object is made per token: the work is a few numpy passes over all the texts joined.

How a token becomes its character, exactly (no hashing decides equality):

1. Each byte becomes a symbol: ``0-9`` 1 to 10, ``a-z`` and ``A-Z`` 11 to 36, anything else 0
   (a separator). A character outside ASCII is a separator too (``?``), but for the two whose
   lowercase holds ASCII letters (:data:`LOWER_TO_ASCII`): texts with them are lowercased
   first, as :meth:`RougeTokenizer.match_keys` lowercases every text outside ASCII.
2. A token of at most 10 characters is an integer below 2**62 that holds its symbols (its
   first 8 a byte each, the 9th and 10th in the bytes' free high bits): two tokens are equal
   exactly when their integers are. A longer token (about 3% of English tokens) gets 2**62
   plus its rank among the call's distinct long tokens, from a dict.
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

__all__ = ["LOWER_TO_ASCII", "MAX_CHARACTERS", "rouge_codes"]

#: The most characters one call may tokenise: tokens are at most half as many (each is
#: followed by a separator or the end), so at most 2**19 distinct tokens in a 2**20-slot table.
MAX_CHARACTERS = 1 << 20

#: The characters outside ASCII whose lowercase (``str.lower``, which rouge-score applies
#: first) holds an ASCII letter: the capital I with dot above ("i" and a combining dot) and the
#: Kelvin sign ("k"). A test recomputes the list from the running Python's Unicode tables.
LOWER_TO_ASCII = ("\u0130", "\u212a")

_SYMBOLS = bytes(
    c - 47 if 48 <= c <= 57 else c - 86 if 97 <= c <= 122 else c - 54 if 65 <= c <= 90 else 0
    for c in range(256)
)
_U = np.uint64
Words = npt.NDArray[np.uint64]
# The low l bytes of a word, l = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=_U)
_LONG = 1 << 62
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
    inside = symbols != 0
    # Where a token starts or ends, in turn (the buffer starts and ends with separators).
    edges = np.flatnonzero(inside[1:] ^ inside[:-1])
    edges += 1
    starts, ends = edges[0::2], edges[1::2]
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
    # Every character outside ASCII separates tokens ("?", one byte for one character) but
    # those whose lowercase holds ASCII letters ("K" Kelvin -> "k", and one that becomes two
    # characters): texts holding them are lowercased first, as match_keys does.
    if not any(c in joined for c in LOWER_TO_ASCII):
        return joined.encode("ascii", "replace"), list(map(len, texts))
    parts = [t.encode() if t.isascii() else t.lower().encode("ascii", "replace") for t in texts]
    return b" ".join(parts), list(map(len, parts))


def _token_keys(symbols: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray) -> Words:
    """Every token's exact integer: its first 8 symbols, a byte each (the bytes past its end
    0), the 9th and 10th spread over the two high bits of the first six bytes (symbols are
    below 64, so those bits are free); or 2**62 plus its rank among the call's distinct tokens
    longer than 10 characters (the others stay below 2**62: the last byte's high bits are
    never set)."""
    sizes = ends - starts
    words = symbols.view("<u8")
    # The 8 bytes from each start: two aligned words shifted together (a shift of 64 is 0).
    shift = ((starts & 7) << 3).astype(_U)
    index = starts >> 3
    x: Words = (words[index] >> shift) | ((words[index + 1] << _U(1)) << (_U(63) - shift))
    x &= _BYTE_MASKS[np.minimum(sizes, 8)]
    over = np.flatnonzero(sizes > 8)
    if len(over):
        at, size = starts[over], sizes[over]
        x[over] |= _spread(symbols[at + 8], 6) | _spread(symbols[at + 9] * (size > 9), 30)
        long = over[size > 10]
        if len(long):
            raw = symbols.tobytes()
            ranks: dict[bytes, int] = {}
            x[long] = [
                ranks.setdefault(raw[a:b], _LONG | len(ranks))
                for a, b in zip(starts[long].tolist(), ends[long].tolist(), strict=True)
            ]
    return x


def _spread(symbol: npt.NDArray[np.uint8], at: int) -> Words:
    """A 6-bit symbol's bit pairs at bits ``at``, ``at + 8`` and ``at + 16`` (the high bits of
    three bytes)."""
    v = symbol.astype(_U)
    spread: Words = ((v & _U(3)) | ((v & _U(12)) << _U(6)) | ((v & _U(48)) << _U(12))) << _U(at)
    return spread


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
