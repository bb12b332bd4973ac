"""ROUGE-L's tokens and LCS lengths for whole records in one compiled pass (needs numba).

Imported only through :mod:`ctxeval.matching.rouge.compiled`, which decides when it is used and
hands it a batch of records' texts as one buffer of bytes: ASCII as it is, a character beyond
ASCII as its UTF-8 bytes, each a separator as rouge-score reads that character, but for the two
characters whose lowercase is ASCII, given as that lowercase. The kernel reads each byte
through rouge-score's rules (``[A-Za-z0-9]`` kept and lowered, everything else a separator)
and gives, for every ground-truth text *g* and retrieved text *r* of each record,
``LCS(tokens(r), tokens(g)) / len(tokens(g))`` and every text's token count. So ROUGE-L recall
is the same quotient of the same two integers as on the Python path, bit for bit. On the same
bytes it counts each retrieved text's words as ``str.split`` does (the context's size in
words), which the caller hands on instead of counting them again.

How, per record:

1. The texts are read once, the ground truth first, token by token. A ground-truth token gets a
   record-local id through a small open-addressing table (hash of the token's characters, then
   the characters themselves compared: ids are exact, never a hash's guess). A retrieved text's
   token is looked up: one no ground truth holds (id -1) cannot add to any LCS and is only
   counted.
2. Each ground truth gets a bit mask per id (bit *p* set where its token *p* has that id), in
   64-bit words.
3. Each retrieved text's tokens update every ground truth's bit vector with the bit-parallel
   LCS step of Hyyrö (2004): ``V = (V + (V & M)) | (V & ~M)``, carrying across words. The LCS
   length is the number of zero bits of ``V`` within the ground truth's length.

Only numbers cross the boundary: arrays of characters and lengths in, arrays of numbers out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

__all__ = ["lcs_records"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(function: _F) -> _F:
    # Compiled on first call; the machine code is cached on disk (numba's cache: the package's
    # __pycache__, else the user's cache directory) so later processes load it instead.
    return cast(_F, numba.njit(cache=True, nogil=True)(function))


#: The most 64-bit mask words a record may need (distinct ground-truth tokens times the ground
#: truths' words: 32 MiB). A record past it (a ground truth of a whole book) gets counts of -1,
#: and the caller scores it on the Python path, whose memory grows with the texts only.
MAX_MASK_WORDS = 1 << 22

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_ALL = ~np.uint64(0)


# A named numeric kernel, kept whole (tests/foundation/test_function_size.py lists it): one
# numba loop over every record, where a call per step would cost.
@_jit
def lcs_records(  # noqa: C901, PLR0912, PLR0915
    buf: Any,
    lengths: Any,
    records: Any,
    table: Any,
    spaces: Any,
    recall: Any,
    counts: Any,
    word_counts: Any,
    tokenless: Any,
) -> None:
    """Fill ``recall``, ``counts``, ``word_counts`` and ``tokenless`` for every record.
    ``tokenless[rec]``: how many of the record's texts have no token, or -1 for a record too
    large for the bit masks (:data:`MAX_MASK_WORDS`), left unscored (its texts' counts -1 too).

    ``buf``: the texts' bytes, each text followed by one separator; ``lengths[t]``: text
    *t*'s length. ``records`` (int64, four per record): the record's first text, how many
    retrieved texts follow it, how many ground-truth texts follow those, and where its block
    starts in ``recall``. The block is retrieved by ground truth, row-major:
    ``recall[block + i * n_g + j] = LCS(r_i, g_j) / len(g_j)`` (0 when ``g_j`` has no token), the
    same quotient of the same integers as rouge-score. ``counts[t]``: text *t*'s token count.
    ``table`` (uint8, 256): 0 for bytes that separate tokens, else the lowercase.
    ``word_counts[t]``: ``len(text.split())`` of each retrieved text *t* (the context's size in
    words, counted here on the bytes at hand); ``spaces`` (uint8, 256) is 1 for the ASCII bytes
    ``str.split`` splits at, 0 for the others, 2 for the bytes beyond ASCII (UTF-8: the spaces
    beyond ASCII are found by their bytes); a ground truth's count is left as it was.

    The per-token work is written out here: helpers that take arrays were not inlined by numba
    (with or without ``inline="always"``), and calling them cost a third of the time.
    """
    n_texts = len(lengths)
    starts = np.empty(n_texts + 1, np.int64)
    starts[0] = 0
    for t in range(n_texts):
        starts[t + 1] = starts[t] + lengths[t] + 1
    n_records = len(records) // 4
    # Scratch, sized once for the largest record of the batch.
    most = 1
    most_g = 0
    most_g_tokens = 1
    for rec in range(n_records):
        first, n_r, n_g = records[4 * rec], records[4 * rec + 1], records[4 * rec + 2]
        size = 0
        for t in range(first, first + n_r + n_g):
            size += lengths[t]
        g_size = 0
        for t in range(first + n_r, first + n_r + n_g):
            g_size += lengths[t]
        # a token and a separator take at least two characters
        most = max(most, size // 2 + n_r + n_g)
        most_g_tokens = max(most_g_tokens, g_size // 2 + n_g)
        most_g = max(most_g, n_g)
    # The table holds the ground truth's distinct tokens only: at most half full.
    cap = 16
    while cap < 2 * most_g_tokens:
        cap <<= 1
    slots = np.full(cap, -1, np.int64)
    slot_hash = np.empty(cap, np.uint64)  # read only where a slot is taken
    used = np.empty(most_g_tokens, np.int64)
    id_start = np.empty(most_g_tokens, np.int64)  # where each id's token first occurs
    id_len = np.empty(most_g_tokens, np.int64)
    tok_id = np.empty(most, np.int64)
    text_tok = np.empty(most_g + 1, np.int64)  # each ground truth's first token
    word_of = np.empty(most_g + 1, np.int64)  # each ground truth's first mask word
    mask = cap - 1
    for rec in range(n_records):
        first, n_r, n_g = records[4 * rec], records[4 * rec + 1], records[4 * rec + 2]
        block = records[4 * rec + 3]
        g0 = first + n_r
        # 1. every token's record-local id, ground truth first: its tokens enter the table,
        # the retrieved texts' are looked up (-1: in no ground truth, so in no LCS)
        x = 0
        k = 0
        empty = 0  # texts without a token
        for step in range(n_r + n_g):
            into_table = step < n_g
            t = g0 + step if into_table else first + step - n_g
            if into_table:
                text_tok[step] = x
            i, end = starts[t], starts[t] + lengths[t]
            x0 = x
            while i < end:
                c = table[buf[i]]
                if c == 0:
                    i += 1
                    continue
                s = i
                h = np.uint64(c)
                i += 1
                while i < end:
                    c = table[buf[i]]
                    if c == 0:
                        break
                    h = ((h << np.uint64(7)) | (h >> np.uint64(57))) ^ np.uint64(c)
                    i += 1
                h *= np.uint64(0x9E3779B97F4A7C15)
                n = i - s
                p = int(h >> np.uint64(32)) & mask
                found = -1
                while True:
                    u = slots[p]
                    if u < 0:
                        break
                    if slot_hash[p] == h and id_len[u] == n:
                        q = id_start[u]
                        z = 0
                        while z < n and table[buf[q + z]] == table[buf[s + z]]:
                            z += 1
                        if z == n:
                            found = u
                            break
                    p = (p + 1) & mask
                if found < 0 and into_table:
                    found = k
                    slots[p] = k
                    slot_hash[p] = h
                    used[k] = p
                    id_start[k] = s
                    id_len[k] = n
                    k += 1
                tok_id[x] = found
                x += 1
            counts[t] = x - x0
            empty += x == x0
        text_tok[n_g] = text_tok[n_g - 1] + counts[g0 + n_g - 1] if n_g else 0
        # the retrieved texts' words: a word starts where a non-space follows a space
        for t in range(first, first + n_r):
            i, end = starts[t], starts[t] + lengths[t]
            after_space = 1
            w = 0
            wide = 0
            for j in range(i, end):  # ASCII's spaces only, by comparisons (vectorised)
                b = buf[j]
                space = (b == 32) | ((b >= 9) & (b <= 13)) | ((b >= 28) & (b <= 31))
                w += after_space & (space ^ 1)
                after_space = space
                wide |= b
            if wide < 0x80:
                word_counts[t] = w
                continue
            after_space = 1  # bytes beyond ASCII: count again, finding their spaces
            w = 0
            while i < end:
                b = buf[i]
                i += 1
                space = spaces[b]
                if space > 1:  # a UTF-8 lead or continuation byte: is it a space's lead?
                    space = 0
                    if b == 0xC2 and i < end and (buf[i] == 0x85 or buf[i] == 0xA0):
                        space = 1  # U+0085, U+00A0
                    elif 0xE1 <= b <= 0xE3 and i + 1 < end:
                        c1, c2 = buf[i], buf[i + 1]
                        if b == 0xE1:
                            space = 1 if c1 == 0x9A and c2 == 0x80 else 0  # U+1680
                        elif b == 0xE2 and c1 == 0x80:  # U+2000-200A, 2028, 2029, 202F
                            space = 1 if c2 <= 0x8A or c2 in (0xA8, 0xA9, 0xAF) else 0
                        elif b == 0xE2:
                            space = 1 if c1 == 0x81 and c2 == 0x9F else 0  # U+205F
                        else:
                            space = 1 if c1 == 0x80 and c2 == 0x80 else 0  # U+3000
                    if space:
                        i += 1 if b == 0xC2 else 2  # the space's other bytes
                w += after_space & (space ^ 1)
                after_space = space
            word_counts[t] = w
        # 2. bit masks: ground truth j's words are word_of[j]:word_of[j + 1]
        word_of[0] = 0
        for j in range(n_g):
            word_of[j + 1] = word_of[j] + (counts[g0 + j] + 63) // 64
        words = word_of[n_g]
        if k * words > MAX_MASK_WORDS:  # too large for the masks: the caller scores it
            for t in range(first, first + n_r + n_g):
                counts[t] = -1
            for q in range(k):
                slots[used[q]] = -1
            tokenless[rec] = -1
            continue
        tokenless[rec] = empty
        masks = np.zeros((max(k, 1), max(words, 1)), np.uint64)
        for j in range(n_g):
            for q in range(counts[g0 + j]):
                masks[tok_id[text_tok[j] + q], word_of[j] + q // 64] |= _U1 << np.uint64(q % 64)
        # 3. each retrieved text against every ground truth at once
        v = np.empty(max(words, 1), np.uint64)
        y0 = text_tok[n_g]
        for r in range(n_r):
            v[:] = _ALL
            y1 = y0 + counts[first + r]
            for y in range(y0, y1):
                tid = tok_id[y]
                if tid < 0:
                    continue
                for j in range(n_g):
                    carry = _U0
                    for w in range(word_of[j], word_of[j + 1]):
                        m = masks[tid, w]
                        a = v[w]
                        b = a + (a & m)
                        d = b + carry
                        carry = _U1 if (b < a) or (d < b) else _U0
                        v[w] = d | (a & ~m)
            y0 = y1
            for j in range(n_g):
                length = counts[g0 + j]
                matched = 0
                for w in range(word_of[j], word_of[j + 1]):
                    bits = min(64, length - (w - word_of[j]) * 64)
                    a = ~v[w]
                    if bits < 64:
                        a &= (_U1 << np.uint64(bits)) - _U1
                    while a:
                        a &= a - _U1
                        matched += 1
                recall[block + r * n_g + j] = matched / length if length else 0.0
        for q in range(k):
            slots[used[q]] = -1
