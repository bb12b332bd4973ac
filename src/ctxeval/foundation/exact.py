"""Exact sums and means of doubles: the one mean behind every number ctxeval prints.

Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a sum of
doubles can be kept exactly as a Python integer in those *units*. A mean is then that integer
divided by the count, rounded once (``int / int`` is correctly rounded). Unlike a float sum, the
result does not depend on the order of the values: a run split into partitions and merged in any
order, the aggregate of a result and the mean :func:`ctxeval.comparison.compare` shows for the
same queries are equal to the last bit.

- :func:`units`: one value in units of 2**-1074;
- :func:`exact_sum`: the sum of values, in units;
- :func:`column_sums`: the sum of each column of a 2-D float64 array, in units (fast, numpy);
- :func:`mean_of_units`: a sum in units divided by a count, rounded once;
- :func:`exact_mean`: the mean of values, rounded once (``None`` for no values).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["SHIFT", "column_sums", "exact_mean", "exact_sum", "mean_of_units", "units"]

#: Every finite double is an integer multiple of 2**-SHIFT.
SHIFT = 1074


def units(value: float) -> int:
    """``value`` as an exact integer in units of 2**-1074.

    ``value`` is a float or an int (anything with ``as_integer_ratio`` whose denominator is a
    power of two). NaN raises ``ValueError`` and infinity ``OverflowError``, as
    ``float.as_integer_ratio`` does: neither has an exact value to add.
    """
    numerator, denominator = value.as_integer_ratio()
    return numerator << (SHIFT + 1 - denominator.bit_length())


def column_sums(block: Any) -> list[int]:
    """The exact sum of each column of a 2-D float64 array, in units of 2**-1074: what adding
    :func:`units` of every value gives, for many rows at once.

    Each value is ``m * 2**(e - 53)`` with an integer ``|m| < 2**53`` (``frexp``); the ``m`` of
    one column and exponent are summed in float64 as two 26-bit halves, which stays exact for up
    to 2**25 rows a call; only one big integer per (column, exponent) is then made. Values must be
    finite (``ValueError`` otherwise).
    """
    rows, width = block.shape
    if not rows or not width:
        return [0] * width
    if not np.isfinite(block).all():
        raise ValueError("column_sums(): every value must be finite (no NaN or infinity)")
    fractions, exponents = np.frexp(block)
    mantissas = np.ldexp(fractions, 53).astype(np.int64)
    high = mantissas >> 26
    low = mantissas - (high << 26)  # in [0, 2**26)
    lowest = int(exponents.min())
    span = int(exponents.max()) - lowest + 1
    keys = ((exponents - lowest) + np.arange(width) * span).ravel()
    high_sums = np.bincount(keys, weights=high.ravel(), minlength=width * span)
    low_sums = np.bincount(keys, weights=low.ravel(), minlength=width * span)
    sums = [0] * width
    for key in np.flatnonzero((high_sums != 0) | (low_sums != 0)).tolist():
        column, exponent = divmod(key, span)
        total = (int(high_sums[key]) << 26) + int(low_sums[key])
        shift = exponent + lowest - 53 + SHIFT
        # A negative shift only for subnormals, whose mantissas end in that many zero bits.
        sums[column] += total << shift if shift >= 0 else total >> -shift
    return sums


# Rows summed by one column_sums call (its float64 partial sums are exact up to 2**25 rows).
_CHUNK = 1 << 24


def exact_sum(values: Iterable[float]) -> int:
    """The exact sum of ``values`` (floats or ints, finite), in units of 2**-1074.

    A float64 numpy array is summed with :func:`column_sums`; anything else value by value.
    """
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        flat = values.reshape(-1, 1)
        return sum(
            column_sums(flat[start : start + _CHUNK])[0] for start in range(0, len(flat), _CHUNK)
        )
    return sum(map(units, values))


def mean_of_units(total: int, count: int) -> float | None:
    """``total`` (units of 2**-1074) divided by ``count``, rounded once; None when count is 0."""
    if not count:
        return None
    # int / int is correctly rounded: the exact mean, rounded once. A quotient beyond the float
    # range raises OverflowError; a mean of doubles never is.
    return total / (count << SHIFT)


def exact_mean(values: Iterable[float]) -> float | None:
    """The mean of ``values``, computed exactly and rounded once; ``None`` when there are none.

    Equal, bit for bit, to ``float(sum(map(Fraction, values)) / len(values))`` and to the
    aggregate of a result over the same values, whatever their order.
    """
    if isinstance(values, np.ndarray):
        array = values.astype(np.float64, copy=False)
        return mean_of_units(exact_sum(array), len(array))
    listed = list(values)
    return mean_of_units(exact_sum(listed), len(listed))
