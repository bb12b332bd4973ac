"""trec_eval's report: its default measures, its names, and its ``measure \\t query \\t value``
lines (``ctxeval evaluate --format trec_eval``, with ``-q`` for each query's lines first).

The numbers are ctxeval's columns; only the names and the formatting are trec_eval's: names
padded to 22 characters, counts as whole numbers, everything else with four decimals, and no
per-query line for ``num_q`` and ``gm_map`` (trec_eval prints those in the summary only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ctxeval.errors import CtxevalError
from ctxeval.metrics.measures import RECALL_LEVELS, parse_measure

__all__ = ["DEFAULT_MEASURES", "render_trec_eval", "trec_eval_name"]

DEFAULT_MEASURES: tuple[tuple[str, str], ...] = (
    ("num_q", "num_q"),
    ("num_ret", "num_ret"),
    ("num_rel", "num_rel"),
    ("num_rel_ret", "num_rel_ret"),
    ("map", "average_precision"),
    ("gm_map", "gm_map"),
    ("Rprec", "r_precision"),
    ("bpref", "bpref"),
    ("recip_rank", "reciprocal_rank"),
    *(
        (f"iprec_at_recall_{level:.2f}", f"iprec_at_recall(recall={level!r})")
        for level in RECALL_LEVELS
    ),
    *((f"P_{k}", f"precision@{k}") for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
)
"""trec_eval's default report, in its order: (trec_eval name, ctxeval column)."""

_NAMES = {column: name for name, column in DEFAULT_MEASURES}
# Columns with a cut-off that trec_eval writes as name_k.
_CUT_NAMES = {
    "precision": "P",
    "recall": "recall",
    "ndcg": "ndcg_cut",
    "average_precision": "map_cut",
    "hit_rate": "success",
}
_PLAIN_CUT = re.compile(r"^(?P<name>[a-z_]+)@(?P<k>\d+)$")
# Summary-only measures: trec_eval prints no line for them per query.
_SUMMARY_ONLY = frozenset({"num_q", "gm_map"})


def trec_eval_name(column: str) -> str:
    """trec_eval's name for a result column (``precision@5`` -> ``P_5``), or the column."""
    column_as_default = column.replace(", recall_rounding='trec_eval10'", "")
    if column_as_default in _NAMES:
        return _NAMES[column_as_default]
    if column == "ndcg":
        return "ndcg"
    cut = _PLAIN_CUT.match(column)
    if cut and cut["name"] in _CUT_NAMES:
        return f"{_CUT_NAMES[cut['name']]}_{cut['k']}"
    return column


def _is_count(column: str) -> bool:
    try:
        return parse_measure(column).definition.aggregate == "sum"
    except CtxevalError:  # micro averages and other columns that are not a measure spec
        return False


def _line(name: str, query: str, value: float, count: bool) -> str:
    shown = str(round(value)) if count else f"{value:6.4f}"
    return f"{name:<22}\t{query}\t{shown}"


def render_trec_eval(
    aggregate: dict[str, float | None],
    per_query: Iterable[dict[str, Any]] = (),
) -> str:
    """The report as trec_eval prints it: each query's lines (when ``per_query`` rows are
    given, in query id order, as trec_eval -q), then the summary lines ("all")."""
    columns = list(aggregate)
    counts = {column: _is_count(column) for column in columns}
    names = {column: trec_eval_name(column) for column in columns}
    lines = []
    for row in sorted(per_query, key=lambda row: str(row["id"])):
        for column in columns:
            value = row.get(column)
            if value is not None and column not in _SUMMARY_ONLY:
                lines.append(_line(names[column], str(row["id"]), value, counts[column]))
    for column in columns:
        value = aggregate[column]
        if value is not None:
            lines.append(_line(names[column], "all", value, counts[column]))
    return "\n".join(lines)
