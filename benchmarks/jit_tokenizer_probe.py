"""Would a compiled tokeniser bring text mode within 3x of the bare kernel? A numba probe.

Run from the repository root (numba comes with the test extra, through ranx):

    .venv/bin/python benchmarks/jit_tokenizer_probe.py
    .venv/bin/python benchmarks/jit_tokenizer_probe.py --records 5000 --table-bits 15

Issue 13 asks for text mode on distinct chunks within 3x of the bare rapidfuzz kernel. The
tokens are what separates them: ctxeval makes rouge-score's tokens with ``bytes.translate`` and
``bytes.split`` (one Python object per token, then hashed by rapidfuzz), the kernel gets them
pre-tokenised. This probe measures the best case of the other road: one JIT-compiled pass over
a record's bytes (numba, which installs from wheels) that lowercases, splits on everything
outside ``[a-z0-9]``, and gives each token a dense id through an open-addressing table that
compares token bytes (exact: no hash collision can merge two tokens), then each text's ids as
one ``str`` of code points, the form rapidfuzz compares fastest. Nothing of this is used by
ctxeval; the numbers are in docs/performance.md.

Checked, asserted: the probe's codes give exactly the LCS lengths and token counts of
ctxeval's tokens on every record. Timed, CPU time, best of ``--repeats``, per record: the
compile (or cache load), the kernel alone, the whole encode (join, kernel, ``str`` codes), and
encode + ``cdist`` against today's ``bytes.split`` keys + ``cdist``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba
import numpy as np
from rapidfuzz.distance import LCSseq
from rapidfuzz.process import cdist

from _data import print_machine, text_records
from ctxeval import get_tokenizer

_SPACE = 32
_LOWER = np.array(
    [
        c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else _SPACE
        for c in range(256)
    ],
    dtype=np.uint8,
)


@numba.njit(cache=True)  # type: ignore[misc]
def _encode(
    buf: Any, lut: Any, table: Any, bounds: Any, arena: Any, state: Any, out: Any, counts: Any
) -> int:
    """Token ids of ``buf`` (texts separated by NUL bytes) into ``out``, tokens per text into
    ``counts``; ``table`` maps a token's hash slot to its id + 1, ``arena``/``bounds`` hold each
    id's bytes, ``state`` the next id and the arena's end. Returns the number of tokens."""
    mask = len(table) - 1
    n, i, text, o, c = len(buf), 0, 0, 0, 0
    while i < n:
        b = buf[i]
        if b == 0:
            counts[text] = c
            text += 1
            c = 0
            i += 1
            continue
        if lut[b] == _SPACE:
            i += 1
            continue
        start = i
        h = np.uint64(1469598103934665603)
        while i < n and buf[i] != 0 and lut[buf[i]] != _SPACE:
            h = (h ^ np.uint64(lut[buf[i]])) * np.uint64(1099511628211)
            i += 1
        size = i - start
        j = np.int64(h & np.uint64(mask))
        while True:
            v = table[j]
            if v == 0:  # a new token
                new, end = state[0], state[1]
                for q in range(size):
                    arena[end + q] = lut[buf[start + q]]
                bounds[new], bounds[new + 1] = end, end + size
                state[0], state[1] = new + 1, end + size
                table[j] = new + 1
                out[o] = new
                break
            lo, hi = bounds[v - 1], bounds[v]
            if hi - lo == size:
                same = True
                for q in range(size):
                    if arena[lo + q] != lut[buf[start + q]]:
                        same = False
                        break
                if same:
                    out[o] = v - 1
                    break
            j = (j + 1) & mask
        o += 1
        c += 1
    counts[text] = c
    return o


class Probe:
    def __init__(self, table_bits: int) -> None:
        self.table = np.zeros(1 << table_bits, np.int64)
        self.bounds = np.zeros(1 << 20, np.int64)
        self.arena = np.zeros(1 << 24, np.uint8)
        self.state = np.zeros(2, np.int64)
        self.out = np.zeros(1 << 16, np.uint32)
        self.counts = np.zeros(256, np.int64)

    def kernel(self, buf: Any) -> int:
        return int(
            _encode(
                buf, _LOWER, self.table, self.bounds, self.arena, self.state, self.out, self.counts
            )
        )

    def codes(self, texts: list[str]) -> list[str]:
        """Each text's token ids as one str (surrogates skipped), as ctxeval's tokenizer
        would tokenise it (non-ASCII letters separate tokens, after lower())."""
        if not all(map(str.isascii, texts)):
            texts = [
                t if t.isascii() else t.lower().encode("ascii", "replace").decode() for t in texts
            ]
        tokens = self.kernel(np.frombuffer("\0".join(texts).encode(), np.uint8))
        ids = self.out[:tokens]
        ids = ids + (ids >= 0xD800) * np.uint32(0x800)
        joined = ids.astype(np.uint32).tobytes().decode("utf-32-le")
        out, at = [], 0
        for count in self.counts[: len(texts)].tolist():
            out.append(joined[at : at + count])
            at += count
        return out


def _best(
    repeats: int, records: list[dict[str, Any]], work: Callable[[dict[str, Any]], object]
) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for record in records:
            work(record)
        best = min(best, time.process_time() - start)
    return best / len(records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--table-bits", type=int, default=15, help="log2 of the id table's slots")
    args = parser.parse_args()
    print_machine()
    records = [json.loads(json.dumps(r)) for r in text_records(args.records, seed=0)]
    probe = Probe(args.table_bits)
    start = time.perf_counter()
    probe.codes(["warm up"])
    compiled = time.perf_counter() - start
    keys = get_tokenizer("rouge").match_keys  # type: ignore[attr-defined]

    def texts(record: dict[str, Any]) -> list[str]:
        return list(record["retrieved_context"]) + list(record["ground_truth_context"])

    for record in records:  # the check: the same LCS lengths and token counts
        n = len(record["retrieved_context"])
        codes, made = probe.codes(texts(record)), [keys(t) for t in texts(record)]
        assert [len(c) for c in codes] == [len(k) for k in made]
        ours = cdist(codes[n:], codes[:n], scorer=LCSseq.similarity, processor=None)
        theirs = cdist(made[n:], made[:n], scorer=LCSseq.similarity, processor=None)
        assert (ours == theirs).all()

    buffers = iter(
        [np.frombuffer("\0".join(texts(r)).encode(), np.uint8) for r in records] * args.repeats
    )

    def both(codes: list[str], n: int) -> object:
        return cdist(codes[n:], codes[:n], scorer=LCSseq.similarity, processor=None)

    rows = [
        (
            "kernel alone (one pass over the record's bytes)",
            _best(args.repeats, records, lambda r: probe.kernel(next(buffers))),
        ),
        (
            "encode: join + kernel + str codes",
            _best(args.repeats, records, lambda r: probe.codes(texts(r))),
        ),
        (
            "today: bytes.split keys",
            _best(args.repeats, records, lambda r: [keys(t) for t in texts(r)]),
        ),
        (
            "encode + cdist",
            _best(
                args.repeats,
                records,
                lambda r: both(probe.codes(texts(r)), len(r["retrieved_context"])),
            ),
        ),
        (
            "today: keys + cdist",
            _best(
                args.repeats,
                records,
                lambda r: both([keys(t) for t in texts(r)], len(r["retrieved_context"])),
            ),
        ),
    ]
    print(f"\ncompile or cache load: {compiled:.2f} s; checks: {len(records)} records, identical\n")
    print("| per record (distinct chunks) | µs |\n|---|---:|")
    for name, micros in rows:
        print(f"| {name} | {micros:.1f} |")


if __name__ == "__main__":
    main()
