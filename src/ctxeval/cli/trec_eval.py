"""trec_eval's report: its default measures, its names, and its ``measure \\t query \\t value``
lines (``ctxeval evaluate --format trec_eval``, with ``-q`` for each query's lines first).

The numbers are ctxeval's columns; the names, the formatting and the summary's arithmetic are
trec_eval's: names padded to 22 characters, counts as whole numbers, everything else with four
decimals, no per-query line for ``num_q`` and ``gm_map`` (trec_eval prints those in the summary
only), and each summary mean accumulated as trec_eval does (:func:`trec_eval_means`), so that a
mean halfway between two four-decimal values is printed as trec_eval prints it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ctxeval.cli.common import fail
from ctxeval.foundation.errors import CtxevalError
from ctxeval.metrics.measures import RECALL_LEVELS, make_measure, parse_measure
from ctxeval.results.aggregation import floored_log

__all__ = [
    "DEFAULT_MEASURES",
    "TREC_EVAL_VERSIONS",
    "render_trec_eval",
    "trec_eval_means",
    "trec_eval_name",
    "with_trec_eval_version",
]

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

#: ``--trec-eval-version``: the ``recall_rounding`` of ``iprec_at_recall`` that each version
#: uses (9, also pytrec_eval's: add 0.9 and truncate; 10: round to nearest, as ``lround``).
TREC_EVAL_VERSIONS = {"9": "trec_eval9", "10": "trec_eval10"}

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


def _aggregate(column: str) -> str | None:
    """How the column's measure is aggregated (``mean``, ``sum``, ``geometric``); None for a
    column that is not a measure spec (micro averages, custom metrics)."""
    try:
        return parse_measure(column).definition.aggregate
    except CtxevalError:
        return None


def _is_count(column: str) -> bool:
    return _aggregate(column) == "sum"


def trec_eval_means(
    aggregate: dict[str, float | None], per_query: Sequence[dict[str, Any]]
) -> dict[str, float | None]:
    """``aggregate`` with each mean (and ``gm_map``) computed as trec_eval computes it: the
    queries' values added one after another in query id order, in floating point, then divided
    by their number (``gm_map``: their floored logs, then ``exp``). ctxeval's own means are
    exact, and differ from these in the last bits; printed with four decimals, only a mean that
    falls halfway between two (``0.08125``) shows it, and this is what trec_eval prints there."""
    rows = sorted(per_query, key=lambda row: str(row["id"]))
    means = dict(aggregate)
    for column, value in aggregate.items():
        kind = _aggregate(column)
        values = [row[column] for row in rows if row.get(column) is not None]
        if value is None or kind not in ("mean", "geometric") or not values:
            continue
        total = 0.0
        for item in values:
            total += floored_log(item) if kind == "geometric" else item
        means[column] = (
            math.exp(total / len(values)) if kind == "geometric" else total / len(values)
        )
    return means


def _line(name: str, query: str, value: float, count: bool) -> str:
    shown = str(round(value)) if count else f"{value:6.4f}"
    return f"{name:<22}\t{query}\t{shown}"


def render_trec_eval(
    aggregate: dict[str, float | None],
    per_query: Iterable[dict[str, Any]] = (),
    runid: str | None = None,
) -> str:
    """The report as trec_eval prints it: each query's lines (when ``per_query`` rows are
    given, in query id order, as trec_eval -q), then the summary lines ("all"), the first of
    them ``runid`` (the run's tag) when given."""
    columns = list(aggregate)
    counts = {column: _is_count(column) for column in columns}
    names = {column: trec_eval_name(column) for column in columns}
    lines = []
    for row in sorted(per_query, key=lambda row: str(row["id"])):
        for column in columns:
            value = row.get(column)
            if value is not None and column not in _SUMMARY_ONLY:
                lines.append(_line(names[column], str(row["id"]), value, counts[column]))
    if runid is not None:
        lines.append(f"{'runid':<22}\tall\t{runid}")
    for column in columns:
        value = aggregate[column]
        if value is not None:
            lines.append(_line(names[column], "all", value, counts[column]))
    return "\n".join(lines)


def with_trec_eval_version(specs: Sequence[str], version: str) -> list[str]:
    """``specs`` with every ``iprec_at_recall`` rounding its recall level as trec_eval
    ``version`` does; a usage error when none of them is an ``iprec_at_recall`` (the flag would
    change nothing) or one sets another rounding itself."""
    rounding = TREC_EVAL_VERSIONS[version]
    changed = []
    for spec in specs:
        try:
            measure = parse_measure(spec)
        except CtxevalError:  # reported with the other -m errors when the metrics are built
            changed.append(spec)
            continue
        if measure.name != "iprec_at_recall":
            changed.append(spec)
            continue
        own = measure.option("recall_rounding")
        if "recall_rounding" in spec and own != rounding:
            fail(
                f"-m {spec} sets recall_rounding={own!r}, and --trec-eval-version {version} "
                f"asks for {rounding!r}; leave recall_rounding out of -m, or drop the flag"
            )
        options = {**dict(measure.options), "recall_rounding": rounding}
        changed.append(str(make_measure(measure.name, measure.k, **options)))
    if not any(_measure_name(spec) == "iprec_at_recall" for spec in changed):
        fail(
            f"--trec-eval-version {version} changes only how iprec_at_recall rounds its recall "
            "level, and no iprec_at_recall measure is evaluated; add one (-m "
            "iprec_at_recall_0.10), or use --run/--qrels with --format trec_eval and no -m for "
            "trec_eval's default report"
        )
    return changed


def _measure_name(spec: str) -> str | None:
    """The registry name of a measure spec, or None when it is not one."""
    try:
        return parse_measure(spec).name
    except CtxevalError:
        return None
