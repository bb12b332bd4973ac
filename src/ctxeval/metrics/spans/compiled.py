"""The compiled span path: when it is used, and the tables it gives the core.

With numba installed (``pip install 'ctxeval[fast]'``), the span measures in characters or
token starts (every unit but a token counter) get their lengths from
:mod:`ctxeval.metrics.spans.kernel`: one compiled pass per batch gives every record's |R|,
|R ∩ G| and chroma's sums at every number of items kept, so any integer cut-off, and a size
budget's whole items, is then a lookup. The integers are the numpy path's, so every value is
the same bit for bit (``tests/metrics/test_span_compiled.py`` compares the two paths).

Measured (docs/performance.md, "Span measures with a compiled kernel" and "Span kernel: the
fast path for up to 64 spans"), it is about 3.5 times as fast as the numpy path on ten chunks
a query (every measure at four cut-offs), more with more cut-offs, about 2 times on fifty
chunks a query, and no faster past about a hundred (records with many overlapping spans sort
every endpoint). Importing numba and loading the cached machine code costs most of a
second per process (compiling it the first time, several seconds), which a small run would not
win back. So by default (``auto``) the kernel is loaded once the numpy path has measured
:data:`AUTO_AFTER` records (a record at a cut-off counts once; about the load's time: rent,
then buy), and then used for batches of at most :data:`AUTO_MOST_SPANS` retrieved spans a
record on average. ``CTXEVAL_COMPILED`` (the variable the ROUGE-L kernel reads, with the same
values) says otherwise: ``always`` (every batch, from the first), ``never``. It is read when
the first batch is measured (:func:`read_environment` reads it again; :func:`mode` overrides
it for a block, in this thread). Without numba, or if the kernel cannot load, the numpy path
is used throughout (:func:`status` says why).
"""

from __future__ import annotations

from collections.abc import Callable
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

__all__ = [
    "AUTO_AFTER",
    "AUTO_MOST_SPANS",
    "MODES",
    "counts_at",
    "mode",
    "prefix_tables",
    "ratios_at",
    "read_environment",
    "status",
]

AUTO_AFTER = 3_000_000
"""Records (each once per cut-off) the numpy path measures before ``auto`` loads the kernel: at
about 0.25 µs a record and cut-off (four measures), about the 0.8 s the load takes."""
AUTO_MOST_SPANS = 64
"""``auto`` uses the kernel for batches with at most this many retrieved spans a record on
average (the most its branch-light path takes; at a hundred, the numpy path was as fast)."""
_state: dict[str, Any] = {"kernel": None, "why": "not loaded yet", "records": 0}

Tables = tuple[IntArray, IntArray, IntArray]


def _kernel(records: int, spans: int) -> Callable[..., Any] | None:
    """The compiled kernel when a batch of ``records`` records and ``spans`` retrieved spans
    should use it, else None (``auto`` counts the records towards :data:`AUTO_AFTER`)."""
    current = current_mode()
    if current == "never":
        return None
    if current == "auto":
        if spans > AUTO_MOST_SPANS * records:
            return None
        if _state["kernel"] is None:
            _state["records"] += records
            if _state["records"] < AUTO_AFTER:
                return None
    return load_kernel(_state, _checked_kernel)


def _check(kernel: Callable[..., Any]) -> None:
    """Run the kernel once (compiling it or loading it from numba's cache) on a record whose
    answer is known: spans [0, 4) and [2, 6) retrieved, [3, 8) the excerpt."""
    one = np.array([0, 0], dtype=np.int64)
    status_, _, table, truth = kernel(
        np.array([2], dtype=np.int64),
        one,
        np.array([0, 1], dtype=np.int64),
        one,
        np.array([0, 2], dtype=np.int64),
        np.array([4, 6], dtype=np.int64),
        one[:1],
        one[:1],
        np.array([3], dtype=np.int64),
        np.array([8], dtype=np.int64),
        one[:0],
        one[:0],
        False,
    )
    expected = [[0, 0, 0, 0], [4, 1, 1, 4], [6, 3, 3, 8]]
    if status_ != 0 or table.tolist() != expected or truth.tolist() != [[5, 5]]:
        raise RuntimeError(f"its self-check failed: {status_}, {table.tolist()}, {truth}")


def _checked_kernel() -> Callable[..., Any]:
    from ctxeval.metrics.spans import kernel as compiled_kernel

    kernel: Callable[..., Any] = compiled_kernel.span_prefix
    _check(kernel)
    return kernel


def status() -> str:
    """Whether the compiled span kernel is in use in this process, and if not, why."""
    auto = current_mode() == "auto"
    return kernel_status(
        _state,
        in_use=f"in use (auto: {AUTO_MOST_SPANS} spans a record at most)" if auto else "in use",
        waiting=(
            f"loads once the numpy path has measured {AUTO_AFTER:,} records "
            f"({_state['records']:,} so far; CTXEVAL_COMPILED=always loads it at once)"
            if auto
            else "loads with the first batch"
        ),
    )


def counts_at(
    tables: Tables, n: IntArray, kept: IntArray, missing: IntArray, chroma: bool
) -> IntArray:
    """The span counts of every record keeping ``min(kept[b], n[b])`` items, from the tables
    of :func:`prefix_tables` (the kernel is loaded: they came from it)."""
    from ctxeval.metrics.spans import kernel as compiled_kernel

    offsets, table, truth = tables
    found: IntArray = compiled_kernel.counts_at(offsets, table, truth, missing, n, kept, chroma)
    return found


def ratios_at(
    tables: Tables, n: IntArray, kept: IntArray, missing: IntArray, chroma: bool
) -> FloatArray:
    """``(B, 4)``: span precision, recall, IoU and F1 of every record at the cut-off of
    :func:`counts_at`, the same floats as the numpy path's divisions (a transposed view: each
    measure's column is contiguous)."""
    from ctxeval.metrics.spans import kernel as compiled_kernel

    offsets, table, truth = tables
    found: FloatArray = compiled_kernel.ratios_at(offsets, table, truth, missing, n, kept, chroma)
    return found.T


def prefix_tables(
    n: IntArray,
    retrieved: tuple[IntArray, ...],
    truth: tuple[IntArray, ...],
    token_starts: IntArray | None,
    base: IntArray | None,
) -> Tables | None:
    """``(offsets, table, truth)`` from the kernel (:func:`~ctxeval.metrics.spans.kernel.
    span_prefix`) for spans grouped by record: ``retrieved`` = (record, rank, doc, start,
    end), ``truth`` = (record, doc, start, end); None when the kernel is not in use or cannot
    take the batch."""
    kernel = _kernel(len(n), len(retrieved[0]))
    if kernel is None:
        return None
    tokens = token_starts is not None and base is not None
    empty = np.zeros(0, dtype=np.int64)
    found = kernel(
        n,
        *retrieved,
        *truth,
        token_starts if tokens else empty,
        base if tokens else empty,
        tokens,
    )
    if found[0] != 0:
        return None
    return found[1], found[2], found[3]
