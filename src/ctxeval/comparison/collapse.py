"""Metrics that are the same numbers on the data: found once, compared once.

With one relevant item per query, average precision equals reciprocal rank and hit rate equals
recall for every query. Testing each copy would count one hypothesis several times and make the
multiple-comparison correction pay for it; a comparison keeps the first of each group and lists
the others as equal to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["identical_groups"]


def identical_groups(
    values: Mapping[str, Mapping[str, Sequence[float | None]]],
) -> dict[str, tuple[str, ...]]:
    """``{kept metric: the later metrics equal to it}``, every metric of ``values`` a key or in
    one group, in the order given.

    Two metrics are equal when, in every run, their per-query values are equal query by query
    (``None`` where the other is ``None``): exactly, since a copy computes the same float.
    """
    groups: dict[str, list[str]] = {}
    first_of: dict[tuple[tuple[float | None, ...], ...], str] = {}
    for metric, by_run in values.items():
        key = tuple(tuple(by_run[run]) for run in sorted(by_run))
        kept = first_of.setdefault(key, metric)
        groups.setdefault(kept, [])
        if kept != metric:
            groups[kept].append(metric)
    return {metric: tuple(equal) for metric, equal in groups.items()}
