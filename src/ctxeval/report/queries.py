"""The records behind a query in a report: each run's retrieved texts, marked as the run's own
matching strategy judged them, or its retrieved ids with their relevance, and the ground truth."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ctxeval.comparison.family import deepest_columns
from ctxeval.foundation.errors import CtxevalError
from ctxeval.io.readers import read_records
from ctxeval.matching import MatchingStrategy, parse_strategy
from ctxeval.metrics import judge_texts
from ctxeval.records.model import Record
from ctxeval.report.page import clip, escape, fmt
from ctxeval.results import EvaluationResult

__all__ = ["focus_metric", "query_panel", "records_by_run", "run_strategy"]

# -- the texts and ids behind a query -------------------------------------------------------------
_SHOWN_CHUNKS = 3
_SHOWN_IDS = 10
_SHOWN_TRUTH = 10  # ground-truth items shown per query (TREC qrels can list hundreds)
_NOT_JUDGED = (
    "not judged again: the run does not record a matching strategy that ctxeval can rebuild (a "
    "custom strategy, several strategies, or a result saved by an older ctxeval), so no chunk "
    "is marked"
)


def _load_records(
    source: str | os.PathLike[str] | Any, ids: set[str] | None, fields: Mapping[str, str] | None
) -> dict[str, Record]:
    """The records of ``ids`` (every record when None) in a run's dataset (a path or the records
    themselves), read with the run's field names."""
    found: dict[str, Record] = {}
    for item in read_records(source, fields=dict(fields) if fields else None):
        if isinstance(item, Record) and (ids is None or item.id in ids):
            found[item.id] = item
    return found


def _run_fields(result: EvaluationResult | None) -> Mapping[str, str] | None:
    fields = None if result is None else result.summary.get("fields")
    return fields if isinstance(fields, Mapping) else None


def run_strategy(result: EvaluationResult | None) -> MatchingStrategy | None:
    """The matching strategy the run judged its records with, rebuilt from the spec its summary
    records; None when there is none to rebuild (ID mode, a custom strategy, an older file)."""
    spec = None if result is None else result.summary.get("strategy")
    if not isinstance(spec, str):
        return None
    try:
        return parse_strategy(spec)
    except CtxevalError:
        return None


def _matched(strategy: MatchingStrategy, record: Record) -> list[bool]:
    """For each retrieved chunk: whether the run's strategy judges it (or one of its sentences)
    relevant to some ground-truth item, as the metrics did."""
    judged = judge_texts(
        strategy, record.retrieved, record.ground_truth, k=len(record.retrieved), validated=True
    ).judgments
    ends = judged.chunk_ends or tuple(range(1, judged.n + 1))
    starts = (0, *ends[:-1])
    return [any(judged.relevant[a:b]) for a, b in zip(starts, ends, strict=True)]


def _shown(hits: Sequence[bool], first: int) -> list[int]:
    """The positions shown: the first ``first``, and every relevant one after them (so a run
    that found the answer lower down shows where)."""
    return [i for i, hit in enumerate(hits) if i < first or hit]


def _items(rows: list[tuple[int, str, bool]], total: int) -> str:
    """Numbered items (rank from 1), ``hit`` marked, a gap line where items are left out."""
    out, last = [], -1
    for i, text, hit in rows:
        if i > last + 1:
            out.append(f'<div class="gap">... {i - last - 1} not relevant ...</div>')
        out.append(f'<div class="chunk{" hit" if hit else ""}">{i + 1}. {text}</div>')
        last = i
    if total > last + 1:
        out.append(f'<div class="gap">... {total - last - 1} more, not relevant</div>')
    return "".join(out)


def _retrieved_html(record: Record | None, strategy: MatchingStrategy | None) -> str:
    """A run's retrieved items for one query: the first few, and every relevant one below them
    with its rank: texts marked as judged, or ids with their grade."""
    if record is None:
        return (
            '<span class="note">retrieved items not available: the report was not given this '
            "run's records (in Python: dataset=...; on the command line: the dataset, not a "
            "saved result)</span>"
        )
    total = len(record.retrieved)
    if not total:
        return '<p class="note">no retrieved item for this query</p>'
    if record.mode == "id":
        grades = record.ground_truth if isinstance(record.ground_truth, Mapping) else {}
        level = [grades.get(item, grades.get(str(item), 0)) for item in record.retrieved]
        rows = [
            (i, escape(record.retrieved[i]) + ": " + _grade(level[i]), level[i] > 0)
            for i in _shown([g > 0 for g in level], _SHOWN_IDS)
        ]
        shown = min(total, _SHOWN_IDS)
        note = f"top {shown} of {total} retrieved ids, judged by the qrels, and every relevant one"
        return f'<p class="note">{note}</p>' + _items(rows, total)
    hits = [False] * total if strategy is None else _matched(strategy, record)
    rows = [(i, escape(clip(record.retrieved[i])), hits[i]) for i in _shown(hits, _SHOWN_CHUNKS)]
    judged = f"matched with {escape(strategy.spec)}" if strategy is not None else _NOT_JUDGED
    return f'<p class="note">{judged}</p>' + _items(rows, total)


def _grade(grade: float) -> str:
    return f"relevant (grade {grade:g})" if grade > 0 else "not relevant"


#: The metadata fields that hold a query's question (continuous-eval, ragas, llama-index).
QUESTION_FIELDS = ("question", "user_input", "query")


def question_of(fields: Mapping[str, Any]) -> str:
    """A query's question from its metadata (or a per-query row), or "" when it has none."""
    found = next((fields[name] for name in QUESTION_FIELDS if fields.get(name) is not None), "")
    return str(found)


def _truth_html(records: Mapping[str, Mapping[str, Record]], qid: str) -> tuple[str, str]:
    """The question and the ground truth of a query, from the first run that has its record."""
    for run_records in records.values():
        record = run_records.get(qid)
        if record is None:
            continue
        question = question_of(record.metadata)
        if record.mode == "id":
            grades = record.ground_truth if isinstance(record.ground_truth, Mapping) else {}
            truth = [f"{doc} (grade {grade:g})" for doc, grade in grades.items() if grade > 0]
        else:
            truth = [str(getattr(t, "text", t)) for t in record.ground_truth]
        shown = "".join(f'<div class="gt">{escape(clip(t))}</div>' for t in truth[:_SHOWN_TRUTH])
        if len(truth) > _SHOWN_TRUTH:
            shown += f'<p class="note">... and {len(truth) - _SHOWN_TRUTH} more</p>'
        return question, shown
    return "", ""


def query_panel(
    qid: str,
    caption: str,
    columns: Sequence[tuple[str, float | None]],
    records: Mapping[str, Mapping[str, Record]],
    strategies: Mapping[str, MatchingStrategy | None],
    metric: str,
    opened: bool,
) -> str:
    question, truth = _truth_html(records, qid)
    cols = "".join(
        f'<div class="col"><h4>{escape(run)} &middot; {escape(metric)} = {fmt(value, 3)}</h4>'
        f"{_retrieved_html(records.get(run, {}).get(qid), strategies.get(run))}</div>"
        for run, value in columns
    )
    title = escape(qid) + (" &middot; " + escape(question) if question else "")
    state = " open" if opened else ""
    return (
        f'<details class="query"{state}><summary>{title} '
        f'<span class="note">({escape(caption)})</span></summary>'
        f"{('<b>Ground truth</b>' + truth) if truth else ''}"
        f'<div class="cols">{cols}</div></details>'
    )


def records_by_run(
    results: Mapping[str, EvaluationResult],
    datasets: Mapping[str, str | os.PathLike[str] | Any] | None,
    ids: set[str] | None,
) -> dict[str, dict[str, Record]]:
    return {
        run: _load_records(source, ids, _run_fields(results.get(run)))
        for run, source in (datasets or {}).items()
        if run in results
    }


def focus_metric(
    metrics: Sequence[str],
    order: tuple[str, ...] = (
        "context_recall",
        "recall",
        "ndcg",
        "context_f1",
        "average_precision",
        "span_iou",
        "reciprocal_rank",
    ),
) -> str:
    """The metric a page leads with: the first of ``order`` the run has (at its deepest
    cut-off), else its first measure of quality, never a count (trec_eval's ``num_q``,
    ``num_ret``, ... are the same in every query or say nothing about quality)."""
    for base in order:
        columns = [m for m in metrics if m.partition("@")[0] == base]
        if columns:
            return deepest_columns(columns)[base]  # the largest budget, else the largest k
    return next((m for m in metrics if not m.startswith("num_")), metrics[0])
