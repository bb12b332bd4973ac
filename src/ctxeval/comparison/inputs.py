"""The inputs of a comparison: runs given as results or result files, named, indexed by query
id, aligned across runs, and the metric columns and per-query values to compare.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ctxeval.comparison.data import SHOWN_IDS, Alignment, RunAlignment, id_list
from ctxeval.comparison.family import characters_fed, deepest_columns, default_metrics
from ctxeval.foundation.errors import (
    ConventionWarning,
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    caller,
    type_name,
)
from ctxeval.results import EvaluationResult

__all__ = [
    "RunInput",
    "align_runs",
    "choose_metrics",
    "index_rows",
    "named_runs",
    "run_name",
    "value_of",
]

RunInput = EvaluationResult | str | os.PathLike[str]
#: The rows of one run by query id (as a string).
Indexed = dict[str, dict[str, Any]]


def named_runs(runs: object) -> list[tuple[str, EvaluationResult]]:
    if isinstance(runs, str | bytes | os.PathLike | EvaluationResult):
        raise InvalidArgumentTypeError(
            f"compare(runs={_short(runs)}): give two or more runs, as a list or as "
            "{name: run}, e.g. compare(['a.jsonl', 'b.jsonl'])"
        )
    if isinstance(runs, Mapping):
        named: list[tuple[str, EvaluationResult]] = []
        for name, run in runs.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(
                    f"compare(runs={{{name!r}: ...}}): run names must be non-empty strings"
                )
            named.append((name, _load(run, name)))
    elif isinstance(runs, Iterable):
        loaded = [_load(run, f"runs[{i}]") for i, run in enumerate(runs)]
        stems = [_stem(result, i) for i, result in enumerate(loaded)]
        named = list(zip(_unique(stems), loaded, strict=True))
    else:
        raise InvalidArgumentTypeError(
            f"compare(runs=...): got {type_name(runs)}; give a list of runs or {{name: run}}, "
            "each an EvaluationResult or the path of a saved result"
        )
    if len(named) < 2:
        raise InvalidArgumentError(
            f"compare(runs=...): got {len(named)} run(s); comparing needs at least two"
        )
    return named


def _short(value: object) -> str:
    if isinstance(value, EvaluationResult):
        return "<EvaluationResult>"
    text = repr(value)
    return text if len(text) <= 60 else text[:56] + "...'"


_CALLER = caller("compare()")  # the command line drops it: the command is the call


def _load(run: object, where: str) -> EvaluationResult:
    if isinstance(run, EvaluationResult):
        return run
    if isinstance(run, str | os.PathLike):
        path = Path(run)
        if not path.exists():
            raise InvalidArgumentError(
                f"compare(): {where} is {os.fspath(path)!r}, which does not exist; give the "
                "path of a result saved with result.save(...), or the EvaluationResult itself"
            )
        return EvaluationResult.load(path)
    raise InvalidArgumentTypeError(
        f"compare(): {where} is {type_name(run)}; give an EvaluationResult or the path of a "
        "saved result (.jsonl, .json, .csv, .parquet)"
    )


def run_name(path: str | os.PathLike[str]) -> str:
    """A run's name from its file: the stem, without the ``.result`` of a saved result's name
    (``runs/bm25.result.jsonl`` -> ``bm25``); empty for a name that is only a suffix."""
    stem = Path(path).stem
    return stem.removesuffix(".result") or stem


def _stem(result: EvaluationResult, index: int) -> str:
    source = result.summary.get("source")
    stem = run_name(str(source)) if source else ""
    return stem or f"run{index + 1}"


def _unique(names: list[str]) -> list[str]:
    taken = set(names)
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, suffix = name, 2
        while candidate in seen or (candidate != name and candidate in taken):
            candidate, suffix = f"{name}-{suffix}", suffix + 1
        seen.add(candidate)
        out.append(candidate)
    return out


def _query_key(value: Any) -> str:
    # Ids are strings in results, but a CSV round trip turns "7" into 7: compare as strings.
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return repr(value)


def index_rows(name: str, result: EvaluationResult) -> dict[str, dict[str, Any]]:
    if not result.per_query:
        raise InvalidArgumentError(
            f"compare(): run {name!r} has no per-query rows (evaluated with "
            "keep_per_query=False, or an empty dataset); comparing needs them: keep them, or "
            "stream them to disk with run(output='run.jsonl') and compare that file"
        )
    table: dict[str, dict[str, Any]] = {}
    duplicates: list[str] = []
    for i, row in enumerate(result.per_query):
        if not isinstance(row, Mapping) or row.get("id") is None:
            raise InvalidArgumentError(
                f"compare(): run {name!r}, per-query row {i + 1} has no 'id'; queries are "
                "aligned by id, so every row needs one",
                fixes=(_CALLER,),
            )
        key = _query_key(row["id"])
        if key in table:
            duplicates.append(key)
        table[key] = row
    if duplicates:
        shown = id_list(tuple(dict.fromkeys(duplicates))[:SHOWN_IDS])
        raise InvalidArgumentError(
            f"compare(): run {name!r} has {len(duplicates)} duplicate query id(s) ({shown}); "
            "each query must appear once per run to be paired: give every record a unique id",
            fixes=(_CALLER,),
        )
    return table


def align_runs(
    indexed: list[tuple[str, dict[str, dict[str, Any]]]], policy: str
) -> tuple[Alignment, list[str]]:
    key_sets = [set(table) for _, table in indexed]
    common = set.intersection(*key_sets)
    everywhere = set.union(*key_sets)
    first = indexed[0][1]
    query_ids = [key for key in first if key in common]
    every_id = _ordered(indexed)
    reports = []
    for (name, table), keys in zip(indexed, key_sets, strict=True):
        missing = [key for key in every_id if key not in keys]
        dropped = [key for key in table if key not in common]
        reports.append(
            RunAlignment(
                run=name,
                queries=len(table),
                missing=len(missing),
                missing_ids=tuple(missing[:SHOWN_IDS]),
                dropped=len(dropped),
                dropped_ids=tuple(dropped[:SHOWN_IDS]),
            )
        )
    alignment = Alignment(policy=policy, queries=len(query_ids), runs=tuple(reports))
    if len(common) == len(everywhere):
        return alignment, query_ids
    detail = "; ".join(
        f"{r.run} lacks {r.missing} ({id_list(r.missing_ids)})" for r in reports if r.missing
    )
    if policy == "error" or not query_ids:
        fix = (
            "no query is in every run: are these runs of the same dataset?"
            if not query_ids
            else "evaluate every run on the same queries, or pass align='intersection' to "
            "compare the queries they share"
        )
        raise InvalidArgumentError(
            f"compare(): the runs do not cover the same queries: {detail}; " + fix,
            fixes=(_CALLER, Fix("align", "intersection")) if query_ids else (_CALLER,),
        )
    warnings.warn(
        ConventionWarning(
            f"compare(): the runs do not cover the same queries; comparing the {len(query_ids)} "
            f"in every run: {detail}. Pass align='error' to stop instead",
            fixes=(_CALLER, Fix("align", "error")),
        ),
        stacklevel=3,
    )
    return alignment, query_ids


def _ordered(indexed: list[tuple[str, dict[str, dict[str, Any]]]]) -> list[str]:
    """Every id of every run, in order of first appearance (first run first)."""
    seen: dict[str, None] = {}
    for _, table in indexed:
        seen.update(dict.fromkeys(table))
    return list(seen)


def choose_metrics(named: list[tuple[str, EvaluationResult]], metrics: object) -> list[str]:
    """The columns to compare: ``metrics`` checked against every run, or the default family
    (:func:`~ctxeval.comparison.family.default_metrics`, the CLI's) of the macro columns every
    run has; ``"all"``: every metric at its deepest cut-off, as ``--metric all``."""
    if metrics is None or metrics == "all":
        shared = [
            column
            for column in named[0][1].aggregate
            if not column.startswith("micro_")
            and all(column in result.aggregate for _, result in named[1:])
        ]
        if not shared:
            raise InvalidArgumentError(
                "compare(): the runs share no metric column; evaluate them with the same "
                "metrics and cut-offs, or name the columns with metrics=[...]",
                fixes=(_CALLER,),
            )
        fed = characters_fed([getattr(result, "summary", None) or {} for _, result in named])
        if metrics == "all":
            return list(deepest_columns(shared, fed).values())
        return default_metrics(shared, fed)
    if isinstance(metrics, str) or not isinstance(metrics, Iterable):
        raise InvalidArgumentTypeError(
            f"compare(metrics={metrics!r}): give a list of result columns, e.g. "
            "metrics=['context_recall@5', 'ndcg@10'], or 'all' for every metric at its deepest "
            "cut-off"
        )
    chosen = list(metrics)
    if not chosen:
        raise InvalidArgumentError("compare(metrics=[]): give at least one metric column")
    for metric in chosen:
        if not isinstance(metric, str):
            raise InvalidArgumentTypeError(
                f"compare(metrics=[..., {metric!r}, ...]): metric columns are strings such as "
                "'ndcg@10'"
            )
        if metric.startswith("micro_"):
            raise InvalidArgumentError(
                f"compare(metrics=[{metric!r}]): a micro average has no per-query values to "
                f"pair; compare the macro column {metric.removeprefix('micro_')!r} instead"
            )
        for name, result in named:
            if not any(metric in row for row in result.per_query):
                available = [c for c in result.aggregate if not c.startswith("micro_")]
                raise InvalidArgumentError(
                    f"compare(metrics=[{metric!r}]): run {name!r} has no column {metric!r}; "
                    f"its metric columns are {available}"
                )
    duplicated = sorted({m for m in chosen if chosen.count(m) > 1})
    if duplicated:
        raise InvalidArgumentError(f"compare(metrics=...): {duplicated} named more than once")
    return chosen


def value_of(run: str, metric: str, query: str, row: Mapping[str, Any]) -> float | None:
    if metric not in row:
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r} has no {metric!r} value (the column is "
            "missing from its row)",
            fixes=(_CALLER,),
        )
    value = row[metric]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r}: {metric} is {_short(value)}, not a number",
            fixes=(_CALLER,),
        )
    number = float(value)
    if not math.isfinite(number):
        raise InvalidArgumentError(
            f"compare(): run {run!r}, query {query!r}: {metric} is {number}; per-query values "
            "must be finite numbers (or None for a query skipped by policy)",
            fixes=(_CALLER,),
        )
    return number
