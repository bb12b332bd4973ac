"""Which metric columns a comparison tests when nobody names them: the one place that decides
the default family, for ``compare()`` and ``ctxeval compare`` alike.

The default is small on purpose: Holm's correction pays for every comparison shown, so testing
every column at every cut-off buries a real difference (docs/comparing.md, "The family").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_METRICS",
    "characters_fed",
    "deepest_columns",
    "default_metrics",
    "label_depth",
]

#: The metrics compared by default, each at its deepest cut-off: whether the relevant context
#: was retrieved at all, and how high. The first name a run has of each group is used.
DEFAULT_METRICS: tuple[tuple[str, ...], ...] = (("context_recall", "recall"), ("ndcg",))


def _depth(column: str) -> tuple[str, tuple[int, str, int]]:
    """A column's measure and how deep its cut-off reaches: counts by size, then the whole list,
    then budgets (by unit, then size). With budgets the deepest is the largest budget, so runs
    are compared at equal context, which counts of chunks of different sizes are not."""
    name, _, k = column.partition("@")
    if k.isdigit():
        return name, (0, "", int(k))
    if not k:
        return name, (1, "", 0)
    return name, (2, k[-1], int(k[:-1]) if k[:-1].isdigit() else 0)


def label_depth(label: str, fed: Mapping[str, float] | None = None) -> tuple[int, str, float]:
    """How deep a cut-off label (``"5"``, ``"300w"``, ``"all"``) reaches, as :func:`_depth`
    orders columns; with ``fed`` (``{label: mean characters fed}``), budgets of different units
    are ordered by the text they fed instead of by unit (``512t`` may feed more than
    ``2000c``)."""
    depth = _depth("x" if label == "all" else f"x@{label}")[1]
    if fed is not None and depth[0] == 2 and label in fed:
        return (2, "", fed[label])
    return depth


def deepest_columns(
    columns: Sequence[str], fed: Mapping[str, float] | None = None
) -> dict[str, str]:
    """``{measure: its column at the deepest cut-off}``, micro averages left out, in the order
    the measures first appear. ``fed``: see :func:`label_depth`."""
    deepest: dict[str, tuple[tuple[int, str, float], str]] = {}
    for column in columns:
        if column.startswith("micro_"):
            continue
        name, _, label = column.partition("@")
        depth = label_depth(label or "all", fed)
        if name not in deepest or depth > deepest[name][0]:
            deepest[name] = (depth, column)
    return {name: column for name, (_, column) in deepest.items()}


def characters_fed(summaries: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``{cut-off label: mean characters fed}``, averaged over runs' ``summary`` dicts (their
    ``context_used``), for the labels every run reports."""
    used = [summary.get("context_used") or {} for summary in summaries]
    if not used:
        return {}
    labels = [label for label in used[0] if all(label in u for u in used)]
    return {
        label: sum(float(u[label].get("characters") or 0.0) for u in used) / len(used)
        for label in labels
    }


def default_metrics(columns: Sequence[str], fed: Mapping[str, float] | None = None) -> list[str]:
    """:data:`DEFAULT_METRICS` at the deepest cut-off of ``columns``; every metric at its
    deepest cut-off when the columns have neither recall nor NDCG. ``fed``: see
    :func:`label_depth`."""
    deepest = deepest_columns(columns, fed)
    chosen = []
    for group in DEFAULT_METRICS:
        found = next((deepest[name] for name in group if name in deepest), None)
        if found is not None:
            chosen.append(found)
    return chosen or list(deepest.values())
