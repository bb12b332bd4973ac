"""The duplicate-id check: the ids a source's records claimed, each with where it was first claimed.

A dataset of millions of queries must not keep millions of id strings (a dict of ids and
locations costs ~125 bytes an id). :class:`SeenIds` keeps, for each id, a 128-bit hash and the
place where the id was first claimed, in one flat array (open addressing, linear probing): 24
bytes a slot, 34 to 51 bytes an id as the table fills between resizes (~100 for the moment of a
resize, which holds both tables). A duplicate is reported from what the table holds, so the
source is never read twice, and a file changed or replaced during the run cannot hide one.

Two different ids are taken for one only if their 128-bit BLAKE2b hashes are equal: for a billion
distinct ids the chance that any two are is below 10^-20 (see ``docs/decisions.md``).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable
from hashlib import blake2b

import numpy as np

__all__ = ["SeenIds", "hash_id", "split_hash"]

_MASK64 = (1 << 64) - 1
_PARTS = 16
_TOP_BYTE = 7 if sys.byteorder == "little" else 0  # of a word of the table


def hash_id(record_id: str) -> int:
    """128 bits of ``record_id`` (BLAKE2b of its UTF-8 bytes): the same in every process and on
    every run, so a run is reproducible whatever ``PYTHONHASHSEED`` is."""
    digest = blake2b(record_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest, "little")


def split_hash(value: int) -> tuple[int, int]:
    """A ``hash_id`` as :meth:`SeenIds.claim_many` takes it: its low and high 64 bits."""
    return value & _MASK64, value >> 64


class SeenIds:
    """The ids claimed so far, as 128-bit hashes, each with where it was first claimed.

    ``where`` is the caller's compact location of a record (an integer in ``[0, 2**63)``: the
    reader packs the file's number and the line or row into it). ``hash_id`` is the hash,
    replaceable so that tests can force collisions; it must return an integer in ``[0, 2**128)``.
    ``capacity``: how many ids the table holds before its first resize (a caller that knows
    how many ids will come saves the resizes; the table's memory is then that of those ids).
    """

    _MAX_LOAD = 0.7
    _INITIAL_SLOTS = 1024

    def __init__(self, hash_id: Callable[[str], int] = hash_id, *, capacity: int = 0) -> None:
        self._hash = hash_id
        self._count = 0
        self._size = max(self._INITIAL_SLOTS, int(capacity / self._MAX_LOAD) + 2)
        # Slot i is words 3i, 3i+1, 3i+2: the hash's low and high 64 bits, and the first
        # location + 1 (0: an empty slot). One flat array: one lookup per probe, no objects.
        self._slots = array("Q", [0]) * (3 * self._size)
        self._limit = int(self._size * self._MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """The memory the table holds."""
        return self._slots.itemsize * len(self._slots)

    def claim(self, record_id: str, where: int, *, record: bool) -> int | None:
        """Register ``record_id`` as claimed at ``where``. For a record (``record=True``; a bad
        record claims its id too, with ``record=False``), return where the id was first claimed
        if that is elsewhere: the record is a duplicate. Else None."""
        value = self._hash(record_id)
        low, high = value & _MASK64, value >> 64
        slots = self._slots
        end = len(slots)
        # The home slot grows with the hash (see _grow); the product fits in 64 bits, as numpy
        # needs there, for tables of up to 2**32 slots.
        j = ((low >> 32) * self._size >> 32) * 3
        while stored := slots[j + 2]:
            if slots[j] == low and slots[j + 1] == high:
                first = stored - 1
                return first if record and first != where else None
            j += 3
            if j == end:
                j = 0
        slots[j], slots[j + 1], slots[j + 2] = low, high, where + 1
        self._count += 1
        if self._count > self._limit:
            self._grow()
        return None

    def claim_many(self, claims: Iterable[tuple[int, int, int, bool]]) -> list[tuple[int, int]]:
        """:meth:`claim` for each ``(low, high, where, record)`` in order, of ids already hashed
        (``low``, ``high``: the ``hash_id``'s 64-bit halves, :func:`split_hash`), in one loop:
        the ``(where, first)`` of each record whose id was first claimed elsewhere. So that
        worker processes hash the ids of their partitions, and one table checks them all."""
        found: list[tuple[int, int]] = []
        slots, size, end = self._slots, self._size, len(self._slots)
        count, limit = self._count, self._limit
        for low, high, where, record in claims:
            j = ((low >> 32) * size >> 32) * 3
            while stored := slots[j + 2]:
                if slots[j] == low and slots[j + 1] == high:
                    if record and stored - 1 != where:
                        found.append((where, stored - 1))
                    break
                j += 3
                if j == end:
                    j = 0
            else:  # not claimed before
                slots[j], slots[j + 1], slots[j + 2] = low, high, where + 1
                count += 1
                if count > limit:
                    self._count = count
                    self._grow()
                    slots, size, end = self._slots, self._size, len(self._slots)
                    limit = self._limit
        self._count = count
        return found

    def _grow(self) -> None:
        """Move every entry into a table half as large again, with numpy rather than a loop.

        An entry's home slot grows with its hash (the top 32 bits of ``low`` scaled to the
        table), so entries sorted by ``low`` are sorted by home, and linear probing places each
        at ``max(home, previous place + 1)``: a running maximum. The few pushed past the end wrap
        around to the first free slots, as a probe would. The entries are moved a sixteenth at
        a time (by the top 4 bits of ``low``), so that the moment of a resize holds the two
        tables and only a few bytes an id more.
        """
        size = self._size * 3 // 2
        slots = array("Q", [0]) * (3 * size)
        old = np.frombuffer(self._slots, dtype=np.uint64).reshape(-1, 3)
        new = np.frombuffer(slots, dtype=np.uint64).reshape(-1, 3)
        # The top byte of low, to keep the temporary arrays to a byte a slot.
        part_of = np.frombuffer(self._slots, dtype=np.uint8)[_TOP_BYTE::24] >> 4
        part_of[old[:, 2] == 0] = _PARTS  # empty slots are in no part
        last = -1  # the last place filled
        wrapped: list[list[int]] = []
        for part in range(_PARTS):
            taken = np.flatnonzero(part_of == part)
            taken = taken[np.argsort(old[taken, 0], kind="stable")]
            place = ((old[taken, 0] >> np.uint64(32)) * np.uint64(size) >> np.uint64(32)).view(
                np.int64
            )
            ranks = np.arange(len(place), dtype=np.int64)
            place -= ranks
            np.maximum.accumulate(place, out=place)
            np.maximum(place, last + 1, out=place)
            place += ranks
            if len(place):
                last = int(place[-1])
            fits = int(np.searchsorted(place, size))
            for word in range(3):
                new[place[:fits], word] = old[taken[:fits], word]
            wrapped += old[taken[fits:]].tolist()
        del old, new, part_of, taken, place, ranks  # release the tables' buffers
        self._slots, self._size = slots, size
        self._limit = int(size * self._MAX_LOAD)
        for low, high, stored in wrapped:
            j = 0
            while slots[j + 2]:
                j += 3
            slots[j], slots[j + 1], slots[j + 2] = low, high, stored
