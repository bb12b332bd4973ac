"""The statistics of a comparison: seeded random streams, the paired randomization test, the
paired bootstrap, Holm's correction, and the runs with the best mean.

Every random draw comes from a PCG64 stream derived from the seed, the metric name and the test
(:func:`random_stream`), so the same seed gives the same p-values and intervals to the last digit,
and adding or removing a metric or a run leaves the others as they were. Resampling works in
blocks of bounded size; the streams do not depend on the block size. docs/comparing.md has the
definitions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ctxeval.foundation.exact import exact_mean

__all__ = [
    "TIE_TOLERANCE",
    "FloatArray",
    "best_runs",
    "holm",
    "leader",
    "mean_interval",
    "paired_statistics",
    "random_stream",
]

FloatArray = npt.NDArray[np.float64]

#: Two per-query values closer than this are a tie (wins/ties/losses; a difference this small is
#: taken as 0). Metric values live in [0, 1], so an absolute tolerance is the right scale.
TIE_TOLERANCE = 1e-12

# Resampling works in blocks of about this many (resample × query) cells, so memory stays near
# 512 KB per block whatever n_resamples and the number of queries are: a block's indices and
# values stay in the core's cache (with 1 << 20 cells, 8 MB, a band of 1,000 resamples over 500
# queries took 2-3 times as long, and the sign-flip test twice as long). The random streams do
# not depend on it: a block of resamples draws exactly what the same resamples drawn one by one
# do.
_BLOCK_CELLS = 1 << 16

_RANDOMIZATION = 0
_BOOTSTRAP = 1


def random_stream(
    seed: int, metric: str, purpose: Literal["randomization", "bootstrap"]
) -> np.random.Generator:
    """The numpy ``Generator`` that :func:`compare` draws from for one metric and one test.

    ``PCG64(SeedSequence(seed, spawn_key=(purpose, *words)))`` where ``purpose`` is 0 for the
    randomization test and 1 for the bootstrap, and ``words`` are the first 16 bytes of the
    SHA-256 of the metric name as four little-endian 32-bit integers. Keying the stream by the
    metric's name, rather than by its position, is what keeps a p-value unchanged when metrics
    or runs are added, removed or reordered. Every comparison of one metric uses the same stream
    (common random numbers), so swapping the baseline and the other run gives the same p-value.
    """
    digest = hashlib.sha256(metric.encode("utf-8")).digest()[:16]
    words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    code = _RANDOMIZATION if purpose == "randomization" else _BOOTSTRAP
    sequence = np.random.SeedSequence(seed, spawn_key=(code, *words))
    return np.random.Generator(np.random.PCG64(sequence))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given.

    With the m p-values sorted ascending, the i-th (from 1) becomes
    ``max over j <= i of min(1, (m - j + 1) * p_(j))``: monotone in the raw p-values and at most
    1. A hypothesis is rejected at level alpha exactly when its adjusted p-value is below alpha.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_statistics(
    diffs: FloatArray, metric: str, test: str, n_resamples: int, seed: int, alpha: float
) -> list[dict[str, Any]]:
    """Per column of ``diffs`` (queries × runs): mean, wins/ties/losses, interval, p-value."""
    n, columns = diffs.shape
    out: list[dict[str, Any]] = []
    if n == 0:
        return [
            {
                "diff": None,
                "ci_low": None,
                "ci_high": None,
                "p_value": None,
                "wins": 0,
                "ties": 0,
                "losses": 0,
            }
            for _ in range(columns)
        ]
    boot = _bootstrap_means(diffs, random_stream(seed, metric, "bootstrap"), n_resamples)
    if test == "randomization":
        p_values = _randomization_p(
            diffs, random_stream(seed, metric, "randomization"), n_resamples
        )
    else:
        p_values = [_bootstrap_p(boot[:, j], diffs[:, j]) for j in range(columns)]
    for j in range(columns):
        column = diffs[:, j]
        low, high = np.quantile(boot[:, j], [alpha / 2, 1 - alpha / 2])
        out.append(
            {
                "diff": exact_mean(column),
                "ci_low": float(low),
                "ci_high": float(high),
                "p_value": p_values[j],
                "wins": int(np.count_nonzero(column > 0)),
                "ties": int(np.count_nonzero(column == 0)),
                "losses": int(np.count_nonzero(column < 0)),
            }
        )
    return out


def mean_interval(
    values: FloatArray, rng: np.random.Generator, n_resamples: int, alpha: float
) -> tuple[float, float]:
    """The percentile bootstrap interval of one run's mean at level 1 - ``alpha``: the paired
    bootstrap of :func:`paired_statistics` applied to the values themselves."""
    column = np.ascontiguousarray(values, dtype=np.float64).reshape(-1, 1)
    means = _bootstrap_means(column, rng, n_resamples)[:, 0]
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _tolerance(column: FloatArray) -> float:
    # Sums of the same numbers in another order differ by rounding only: far below this.
    return TIE_TOLERANCE * float(np.abs(column).sum())


def _randomization_p(diffs: FloatArray, rng: np.random.Generator, n_resamples: int) -> list[float]:
    """Two-sided sign-flip test of each column's mean, ``(1 + hits) / (1 + n_resamples)``.

    A resample flips query i when bit i of its ``ceil(n / 64)`` raw 64-bit draws is set (bits
    little-endian within each word, words in order). A hit is a resample whose ``|sum|`` reaches
    the observed ``|sum|`` less :func:`_tolerance`, so exact ties count whatever the rounding.
    """
    n, columns = diffs.shape
    words = -(-n // 64)
    total = diffs.sum(axis=0)
    observed = np.abs(total)
    thresholds = observed - np.array([_tolerance(diffs[:, j]) for j in range(columns)])
    hits = np.zeros(columns, dtype=np.int64)
    block = max(1, _BLOCK_CELLS // max(n, 1))
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        flips = _flip_bits(rng.bit_generator.random_raw(size=(size, words)), n)
        # sum of s_i * d_i with s_i = -1 where flipped: total - 2 * (sum of flipped d_i)
        flipped = np.abs(total - 2.0 * (flips @ diffs))
        hits += np.count_nonzero(flipped >= thresholds, axis=0)
        done += size
    return [float((1 + int(h)) / (1 + n_resamples)) for h in hits]


def _flip_bits(raw: Any, n: int) -> FloatArray:
    """Resamples × n matrix of 0.0/1.0: bit i of each row's raw words, little-endian."""
    data = np.ascontiguousarray(raw, dtype="<u8")
    bits = np.unpackbits(data.view(np.uint8), axis=1, bitorder="little")
    return bits[:, :n].astype(np.float64)


def _bootstrap_means(diffs: FloatArray, rng: np.random.Generator, n_resamples: int) -> FloatArray:
    """n_resamples × columns: the mean of each column over paired resamples of the queries.

    Resample k draws ``rng.integers(0, n, size=n)`` (the same indices for every column).
    """
    n, columns = diffs.shape
    by_column = [np.ascontiguousarray(diffs[:, j]) for j in range(columns)]
    means = np.empty((n_resamples, columns), dtype=np.float64)
    block = max(1, _BLOCK_CELLS // n)
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        picks = rng.integers(0, n, size=(size, n))
        for j, column in enumerate(by_column):
            means[done : done + size, j] = column[picks].sum(axis=1) / n
        done += size
    return means


def _bootstrap_p(means: FloatArray, column: FloatArray) -> float:
    """Two-sided bootstrap p-value: twice the share of resampled means on the far side of 0.

    ``min(1, 2 * (1 + min(#{mean <= 0}, #{mean >= 0})) / (1 + n_resamples))``, a mean within
    the tie tolerance of 0 counting on both sides. It is below alpha about when the percentile
    interval at level 1 − alpha excludes 0.
    """
    tolerance = _tolerance(column) / len(column)
    below = int(np.count_nonzero(means <= tolerance))
    above = int(np.count_nonzero(means >= -tolerance))
    return min(1.0, 2 * (1 + min(below, above)) / (1 + len(means)))


def best_runs(means: Mapping[str, float | None]) -> tuple[str, ...]:
    known = {name: mean for name, mean in means.items() if mean is not None}
    if not known:
        return ()
    top = max(known.values())
    return tuple(name for name, mean in known.items() if top - mean <= TIE_TOLERANCE)


class Signed(Protocol):
    """What :func:`leader` reads of a comparison with the baseline."""

    @property
    def run(self) -> str: ...
    @property
    def diff(self) -> float | None: ...
    @property
    def significant(self) -> bool: ...
    @property
    def wins(self) -> int: ...
    @property
    def losses(self) -> int: ...


def leader(best: Sequence[str], baseline: str, comparisons: Iterable[Signed]) -> str | None:
    """The run with the highest mean, when the tests order it above every other run; else None.

    Only comparisons with the baseline are tested, so the order goes through the baseline: the
    baseline leads when every other run is significantly below it; another run leads when it is
    significantly above the baseline and every remaining run is significantly below the baseline
    or level with it on every query.
    """
    if len(best) != 1:
        return None
    top = best[0]
    for item in comparisons:
        above = item.significant and item.diff is not None and item.diff > 0
        below = item.significant and item.diff is not None and item.diff < 0
        level = top != baseline and item.wins == item.losses == 0
        if item.run == top:
            if not above:
                return None
        elif not (below or level):
            return None
    return top
