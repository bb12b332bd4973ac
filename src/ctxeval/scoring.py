"""Scoring a batch of records with several metrics at several cut-offs, matching each once.

This is the unit of work the evaluator ships to worker processes: a :class:`ScoringPlan` (the
metrics and cut-offs, picklable) applied to a batch of records. Every metric that shares a way
of judging (strategy, credit rule, depth; or relevance level in ID mode) shares one judging
pass, at the largest cut-off; every cut-off is then a prefix of the same judgments.

One path computes every number: the records of a batch are judged into one padded
:class:`~ctxeval.metrics.core.BatchJudgments` per judging pass and every measure at every
cut-off is a column of the vectorised core. ``implementation="reference"`` (or the environment
variable ``CTXEVAL_IMPLEMENTATION=reference``) scores record by record with the readable
reference formulas instead, for checking: the numbers are the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ctxeval.arrays import BoolMatrix
from ctxeval.cut_views import BatchView, Cuts, RecordView, context_columns, context_used
from ctxeval.cutoffs import Cutoff
from ctxeval.errors import (
    CtxevalError,
    EnvironmentVariableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from ctxeval.matching.base import MatchingStrategy, as_matches
from ctxeval.metrics.base import MetricBase
from ctxeval.metrics.core import (
    BatchJudgments,
    judge_batch,
    set_counts,
    stack_judgments,
    tie_ends_array,
)
from ctxeval.metrics.id_metrics import IdMetric
from ctxeval.metrics.judgments import Judgments, judge_ids, with_tie_ends
from ctxeval.metrics.reference import SetCounts
from ctxeval.metrics.reference import set_counts as reference_set_counts
from ctxeval.metrics.span_core import SpanBatch, span_counts_at
from ctxeval.metrics.span_judging import LocatedRecord, locate_record, record_spans
from ctxeval.metrics.span_metrics import SpanMetric
from ctxeval.metrics.span_reference import RecordSpans, SpanCounts, span_counts
from ctxeval.metrics.text_metrics import TextMetric, ground_truth_units, judge_texts
from ctxeval.plan import Evaluated, Ks, ScoringPlan, column_name, sort_ks
from ctxeval.records import Record, RecordError
from ctxeval.scored import RowResult, Scored, ScoredBatch
from ctxeval.validation import GradedText, ranked_tie_ends

__all__ = [
    "Evaluated",
    "Ks",
    "RowResult",
    "Scored",
    "ScoredBatch",
    "ScoringPlan",
    "column_name",
    "score_batch",
    "score_columns",
    "sort_ks",
]


def _num_relevant(record: Record) -> int:
    truth = record.ground_truth
    if isinstance(truth, dict):
        return sum(1 for grade in truth.values() if grade > 0)
    return len({t.text if isinstance(t, GradedText) else t for t in truth})


def _check_mode(metric: MetricBase, record: Record) -> None:
    if metric.mode == record.mode:
        return
    if record.mode == "id":
        raise InvalidArgumentError(
            f"{metric!r} scores contexts, but the dataset has chunk ids; use measure specs "
            "('ndcg@10') or IDPrecisionRecallF1 / IDRankedRetrievalMetrics for ID-mode data"
        )
    raise InvalidArgumentError(
        f"{metric!r} scores chunk ids, but the dataset has contexts; use measure specs "
        "('ndcg@10') or PrecisionRecallF1 / RankedRetrievalMetrics for text data"
    )


def _pass_key(plan: ScoringPlan, metric: MetricBase) -> Hashable:
    """Metrics with equal keys share one judging pass."""
    depth = plan.depth(metric)
    if isinstance(metric, SpanMetric):
        return ("span", metric.unit)
    if isinstance(metric, TextMetric):
        return ("text", metric.matching_strategy, metric.credit_rule(), depth)
    if isinstance(metric, IdMetric):
        return ("id", metric.relevance_level, depth)
    raise InvalidArgumentTypeError(f"{metric!r} is not a metric the evaluator can run")


def _judge(
    plan: ScoringPlan, record: Record, metric: MetricBase, located: LocatedRecord | None
) -> tuple[Any, int]:
    """One record's judgments for ``metric`` (the reference path), with its tokenless count;
    for a span metric, its spans in the metric's unit."""
    _check_mode(metric, record)
    if isinstance(metric, SpanMetric):
        assert located is not None  # located for every record when the plan has span metrics
        return record_spans(located, metric.unit, plan.locator, plan.token_counter), 0
    depth = plan.depth(metric)
    if isinstance(metric, TextMetric):
        judged = judge_texts(
            metric.matching_strategy,
            record.retrieved,
            record.ground_truth,
            k=depth,
            location=record.location,
            credit=metric.credit_rule(),
            validated=True,  # the reader validated the record with the same checks
        )
        return judged.judgments, len(judged.tokenless)
    assert isinstance(metric, IdMetric)
    assert isinstance(record.ground_truth, dict)
    retrieved = record.retrieved if depth is None else record.retrieved[:depth]
    judgments = judge_ids(retrieved, record.ground_truth, relevance_level=metric.relevance_level)
    return judgments, 0


def _locate(plan: ScoringPlan, record: Record) -> LocatedRecord | None:
    """The record's spans, settled once for every span metric of the plan."""
    if not plan.has_spans() or record.mode != "text":
        return None
    return locate_record(record, plan.locator)


def score_record(plan: ScoringPlan, record: Record) -> RowResult:
    """One record through the reference formulas."""
    values: dict[str, float | None] = {}
    counts: dict[tuple[int, Cutoff], SetCounts] = {}
    lengths: dict[tuple[int, Cutoff], SpanCounts] = {}
    cache: dict[Hashable, tuple[Any, int]] = {}
    tokenless = 0
    relevant = None
    located = _locate(plan, record)
    ties = _tie_ends(record) if _needs_ties(plan) else None
    cuts = _cuts(plan, [record])
    for position, metric in enumerate(plan.metrics):
        key = _pass_key(plan, metric)
        if key not in cache:
            with _named(record, metric):
                cache[key] = _judge(plan, record, metric, located)
        judgments, lost = cache[key]
        if isinstance(judgments, Judgments):
            judgments = with_tie_ends(judgments, ties)
        tokenless = max(tokenless, lost)
        relevant = judgments.num_relevant if relevant is None else relevant
        if judgments.num_relevant == 0 and metric.empty_ground_truth != "zero":
            if metric.empty_ground_truth == "error":
                raise metric.empty_ground_truth_error(record.location)
            values.update(dict.fromkeys((e.column for e in plan.evaluated(metric)), None))
            continue
        view = RecordView(_strategy(metric), metric.credit_rule(), judgments, cuts)
        for entry in plan.evaluated(metric):
            values[entry.column] = entry.measure(*view.at(entry.k))
        for k in plan.set_ks(metric):
            counts[(position, k)] = reference_set_counts(*view.at(k))
        for k in plan.span_ks(metric):
            spans, count = view.at(k)  # under "truncate": the crossing chunk's span cut
            assert isinstance(spans, RecordSpans)
            assert isinstance(metric, SpanMetric)
            lengths[(position, k)] = span_counts(
                spans,
                spans.cut(count),
                0,
                metric.convention,  # type: ignore[arg-type]
            )
    return RowResult(
        index=record.index,
        id=record.id,
        metadata=record.metadata,
        values=values,
        counts=counts,
        num_relevant=_num_relevant(record),
        num_retrieved=len(record.retrieved),
        empty_ground_truth=relevant == 0,
        tokenless=tokenless,
        skipped_values=any(v is None for v in values.values()),
        span_counts=lengths,
        **_located_fields(located),
        context=context_used(cuts, plan.all_ks())[0],
    )


def _cuts(plan: ScoringPlan, records: Sequence[Record]) -> Cuts:
    return Cuts(records, plan.budgets(), plan.budget_policy, plan.token_counter)


def _strategy(metric: MetricBase) -> MatchingStrategy | None:
    return metric.matching_strategy if isinstance(metric, TextMetric) else None


def score_batch(
    plan: ScoringPlan, batch: Sequence[Record | RecordError]
) -> list[RowResult | RecordError]:
    """Score a batch in order, one row per record; a record that fails while scoring becomes a
    RecordError. (:func:`score_columns` hands the same over as columns.)"""
    scored = score_columns(plan, batch)
    return scored if isinstance(scored, list) else scored.items()


def score_columns(plan: ScoringPlan, batch: Sequence[Record | RecordError]) -> Scored:
    """Score a batch in order, as a :class:`ScoredBatch` (the reference implementation: one
    RowResult per record); a record that fails while scoring becomes a RecordError."""
    if plan.implementation == "reference":
        return [_score_one(plan, item) for item in batch]
    errors = {p: item for p, item in enumerate(batch) if isinstance(item, RecordError)}
    positions = [p for p, item in enumerate(batch) if isinstance(item, Record)]
    records: list[Record] = [batch[p] for p in positions]  # type: ignore[misc]
    judged = _judge_batch(plan, records)
    for i, error in judged.failed.items():
        errors[positions[i]] = error
    good = [i for i in range(len(records)) if i not in judged.failed]
    scored, failed = _rows(plan, [records[i] for i in good], judged, good)
    for row, error in failed.items():
        errors[positions[good[row]]] = error
    return replace(scored, errors=dict(sorted(errors.items())))


def _score_one(plan: ScoringPlan, item: Record | RecordError) -> RowResult | RecordError:
    if isinstance(item, RecordError):
        return item
    try:
        return score_record(plan, item)
    except (InvalidArgumentError, InvalidArgumentTypeError):
        raise  # a configuration mistake, not a bad record: stop the run
    except CtxevalError as exc:
        return _record_error(item, exc)


@contextmanager
def _named(record: Record, metric: MetricBase) -> Iterator[None]:
    """Errors that stop the run name the record that met them (see :func:`_named_error`)."""
    try:
        yield
    except Exception as exc:
        raise _named_error(record, metric, exc)  # noqa: B904 (chained there, or raised as is)


def _named_error(record: Record, metric: MetricBase, exc: Exception) -> Exception:
    """What to raise for ``exc``, met while judging ``record`` for ``metric``.

    A configuration mistake (a strategy that returns a wrong shape or strings, a metric of the
    wrong mode) stops the run; so does any exception raised by a custom strategy's code, which
    is chained, not taken for a bad record. A ``CtxevalError`` about the record itself passes
    through, to be counted as a bad record.
    """
    if isinstance(exc, InvalidArgumentError | InvalidArgumentTypeError):
        if isinstance(exc, EnvironmentVariableError) or str(exc).startswith(record.location):
            return exc
        named: Exception = type(exc)(f"{_where(record)}: {exc}")
    elif isinstance(exc, CtxevalError | MemoryError):
        return exc
    else:
        strategy = getattr(metric, "matching_strategy", None)
        culprit = f"strategy {strategy.spec}" if strategy is not None else repr(metric)
        named = InvalidArgumentError(
            f"{_where(record)}: {culprit} raised {type(exc).__name__}: {exc} (fix the strategy; "
            "the original error and its traceback are chained to this one)"
        )
    named.__cause__ = exc
    return named


def _where(record: Record) -> str:
    return f"{record.location} (record {record.id!r})"


def _record_error(record: Record, exc: CtxevalError) -> RecordError:
    message = str(exc)
    prefix = f"{record.location}: "
    return RecordError(
        index=record.index,
        id=record.id,
        location=record.location,
        field=getattr(exc, "field", None),
        message=message[len(prefix) :] if message.startswith(prefix) else message,
    )


# Records longer than this (retrieved items, or distinct ground-truth items) are judged in a
# batch of their own: a batch is padded to its largest record, so one record with 100,000
# retrieved ids among 256 would cost 256 times its memory. Below the caps a batch of 256
# records needs a few MiB at most. (Only memory: every record goes through the same core.)
PAD_MAX_RANKS = 1_000
PAD_MAX_TRUTH = 200


@dataclass
class _Judged:
    """A batch judged once per judging pass: records in order, their judgments by pass.
    ``failed`` and ``tokenless`` are keyed by a record's position in the batch's records."""

    failed: dict[int, RecordError] = field(default_factory=dict)
    # pass key -> per good record (in order): a relevance matrix and grades (chunk units), or
    # per-record Judgments (ID mode, sentence units)
    matrices: dict[Hashable, list[tuple[BoolMatrix, list[float] | None]]] = field(
        default_factory=dict
    )
    judgments: dict[Hashable, list[Judgments]] = field(default_factory=dict)
    spans: dict[Hashable, list[RecordSpans]] = field(default_factory=dict)
    tokenless: dict[int, int] = field(default_factory=dict)
    located: dict[int, LocatedRecord] = field(default_factory=dict)
    ties: dict[int, tuple[int, ...]] = field(default_factory=dict)  # groups of equal scores


def _judge_batch(plan: ScoringPlan, records: list[Record]) -> _Judged:
    """Judge every record once per judging pass; a record that fails is a RecordError.

    Chunk passes whose strategy matches whole batches (``match_records``, as the built-in ROUGE
    strategies do) are matched for all the batch's records in one call, after every record's
    other checks; the rest record by record."""
    judged = _Judged()
    passes: dict[Hashable, MetricBase] = {}
    for metric in plan.metrics:
        passes.setdefault(_pass_key(plan, metric), metric)
    # Per pass, once per batch: its metric, how deep it judges, whether it is matched in bulk.
    steps = [
        (key, metric, plan.depth(metric), _batch_matcher(metric) is not None)
        for key, metric in passes.items()
    ]
    with_ties = _needs_ties(plan)
    found: dict[int, dict[Hashable, Any]] = {}  # per surviving record: each pass's result
    lost: dict[int, int] = {}
    pending: dict[Hashable, list[tuple[int, _ChunkTexts]]] = {}  # matched in bulk below
    for i, record in enumerate(records):
        results: dict[Hashable, Any] = {}
        waiting: list[tuple[Hashable, _ChunkTexts]] = []
        most = 0
        try:
            located = _locate(plan, record)
            ties = _tie_ends(record) if with_ties else None
            for key, metric, depth, in_bulk in steps:
                try:
                    _check_mode(metric, record)
                    texts = _chunk_texts(metric, record, depth) if in_bulk else None
                    if texts is not None:
                        waiting.append((key, texts))
                        continue
                    results[key], tokens = _judge_one(plan, metric, record, located, depth)
                except Exception as exc:
                    raise _named_error(record, metric, exc)  # noqa: B904 (chained there)
                most = max(most, tokens)
        except (InvalidArgumentError, InvalidArgumentTypeError):
            raise  # a configuration mistake, not a bad record: stop the run
        except CtxevalError as exc:
            judged.failed[i] = _record_error(record, exc)
            continue
        found[i], lost[i] = results, most
        for key, texts in waiting:
            pending.setdefault(key, []).append((i, texts))
        if located is not None:
            judged.located[i] = located
        if ties is not None:
            judged.ties[i] = ties
    for key, items in pending.items():
        _match_in_bulk(records, passes[key], key, items, judged, found, lost)
    staged: dict[Hashable, list[Any]] = {key: [] for key in passes}
    for i, results in found.items():
        if i in judged.failed:
            continue
        judged.tokenless[i] = lost[i]
        for key, result in results.items():
            staged[key].append(result)
    for key, kept in staged.items():
        if kept and isinstance(kept[0], RecordSpans):
            judged.spans[key] = kept
        elif kept and isinstance(kept[0], Judgments):
            judged.judgments[key] = kept
        else:
            judged.matrices[key] = kept
    return judged


# A chunk pass's texts for one record: the chunks shown, the ground-truth units, their grades.
_ChunkTexts = tuple[list[str], list[str], list[float] | None]


def _chunk_texts(metric: MetricBase, record: Record, depth: int | None) -> _ChunkTexts | None:
    """What a chunk pass matches for ``record`` (None for other passes)."""
    if not (isinstance(metric, TextMetric) and metric.matching_strategy.unit == "chunk"):
        return None
    truth, grades = ground_truth_units(metric.matching_strategy, record.ground_truth)  # type: ignore[arg-type]
    chunks: list[str] = record.retrieved  # validated by the reader: strings only
    shown = chunks if depth is None or depth >= len(chunks) else chunks[:depth]
    return shown, truth, grades


def _batch_matcher(metric: MetricBase) -> Any:
    """The strategy's ``match_records`` (a whole batch's records at once), if it has one."""
    return getattr(_strategy(metric), "match_records", None)


def _match_in_bulk(
    records: list[Record],
    metric: MetricBase,
    key: Hashable,
    items: list[tuple[int, _ChunkTexts]],
    judged: _Judged,
    found: dict[int, dict[Hashable, Any]],
    lost: dict[int, int],
) -> None:
    """Match a chunk pass's records in one ``match_records`` call. If that call raises, they
    are matched one by one, so the error is met again and named for its record as it would
    be record by record."""
    strategy = metric.matching_strategy  # type: ignore[attr-defined]
    pairs = [(shown, truth) for _, (shown, truth, _) in items]
    try:
        matched: list[Any] | None = _batch_matcher(metric)(pairs)
    except Exception:
        matched = None
    for position, (i, (shown, truth, grades)) in enumerate(items):
        if i in judged.failed:
            continue
        record = records[i]
        try:
            raw = strategy.match(shown, truth) if matched is None else matched[position]
            matches = as_matches(raw, len(shown), len(truth), strategy)
        except Exception as exc:
            error = _named_error(record, metric, exc)
            stops = isinstance(error, InvalidArgumentError | InvalidArgumentTypeError)
            if stops or not isinstance(error, CtxevalError):
                raise error  # noqa: B904 (chained there): a configuration mistake stops the run
            judged.failed[i] = _record_error(record, error)
            continue
        found[i][key] = (matches.relevant, grades)
        lost[i] = max(lost[i], len(matches.tokenless))


def _judge_one(
    plan: ScoringPlan,
    metric: MetricBase,
    record: Record,
    located: LocatedRecord | None,
    depth: int | None,
) -> tuple[Any, int]:
    """A relevance matrix with grades (chunk units, judged in bulk later), or Judgments
    (``depth``: the pass's, :meth:`ScoringPlan.depth`)."""
    texts = _chunk_texts(metric, record, depth)
    if texts is not None:
        strategy = metric.matching_strategy  # type: ignore[attr-defined]
        shown, truth, grades = texts
        matches = as_matches(strategy.match(shown, truth), len(shown), len(truth), strategy)
        return (matches.relevant, grades), len(matches.tokenless)
    return _judge(plan, record, metric, located)


def _groups(sizes: list[tuple[int, int]]) -> list[list[int]]:
    """Positions batched together: every record within the padding caps in one group, each
    outlier in a group of its own."""
    within = [i for i, (n, m) in enumerate(sizes) if n <= PAD_MAX_RANKS and m <= PAD_MAX_TRUTH]
    outliers = [[i] for i, (n, m) in enumerate(sizes) if n > PAD_MAX_RANKS or m > PAD_MAX_TRUTH]
    return ([within] if within else []) + outliers


def _batch_judgments(
    plan: ScoringPlan, metric: MetricBase, key: Hashable, judged: _Judged
) -> list[tuple[list[int], BatchJudgments | SpanBatch]]:
    """The pass's records as padded batches (with the positions each batch holds)."""
    if key in judged.spans:
        spans = judged.spans[key]
        return [(list(range(len(spans))), SpanBatch.from_records(spans))] if spans else []
    if key in judged.judgments:
        items = judged.judgments[key]
        groups = _groups([(j.n, j.num_relevant) for j in items])
        return [(g, stack_judgments([items[i] for i in g])) for g in groups]
    pairs = judged.matrices[key]
    groups = _groups([matrix.shape for matrix, _ in pairs])
    credit = metric.credit_rule()
    return [
        (
            g,
            judge_batch([pairs[i][0] for i in g], [pairs[i][1] for i in g], credit),
        )
        for g in groups
    ]


def _rows(
    plan: ScoringPlan, records: list[Record], judged: _Judged, ids: list[int]
) -> tuple[ScoredBatch, dict[int, RecordError]]:
    """Every measure of every metric at every cut-off for the judged records, as the columns
    of their rows in order (``ids``: each record's position among the judged ones), and the
    records that became errors (``empty_ground_truth="error"``), by position in ``records``."""
    count = len(records)
    columns = plan.columns()
    table = np.zeros((count, len(columns)), dtype=np.float64)
    skipped = np.zeros((count, len(columns)), dtype=bool)
    errors: dict[int, RecordError] = {}
    counts: dict[tuple[int, Cutoff], Any] = {}
    lengths: dict[tuple[int, Cutoff], Any] = {}
    dropped: dict[int, Any] = {}
    relevant = np.zeros(count, dtype=np.int64)  # relevant units, as the first metric judged them
    batches: dict[Hashable, list[tuple[list[int], Any]]] = {}
    cuts = _cuts(plan, records)
    views: dict[tuple[Hashable, int], BatchView] = {}
    column = 0
    for position, metric in enumerate(plan.metrics):
        key = _pass_key(plan, metric)
        if key not in batches:
            batches[key] = _batch_judgments(plan, metric, key, judged)
            batches[key] = _with_ties(plan, judged, ids, batches[key])
        entries = plan.evaluated(metric)
        width = len(entries)
        for k in plan.set_ks(metric):
            counts[position, k] = np.zeros((count, 4), dtype=np.int64)
        for k in plan.span_ks(metric):
            lengths[position, k] = np.zeros((count, 4), dtype=np.int64)
        for group, (rows, batch) in enumerate(batches[key]):
            index = np.asarray(rows, dtype=np.int64)
            if (key, group) not in views:
                views[key, group] = BatchView(
                    _strategy(metric),
                    metric.credit_rule(),
                    batch,
                    rows,
                    cuts,
                    judged.judgments.get(key),
                    judged.matrices.get(key),
                )
            view = views[key, group]
            if position == 0:
                relevant[index] = batch.m
            for offset, entry in enumerate(entries):
                table[index, column + offset] = entry.measure.values(*view.at(entry.k))
            for k in plan.set_ks(metric):
                counts[position, k][index] = set_counts(*view.at(k))
            for k in plan.span_ks(metric):
                convention = metric.convention  # type: ignore[attr-defined]
                lengths[position, k][index] = span_counts_at(*view.at(k), convention)
            if metric.empty_ground_truth != "zero":
                empty = index[np.asarray(batch.m) == 0]
                if not len(empty):
                    continue
                if metric.empty_ground_truth == "error":
                    for row in empty.tolist():
                        record = records[row]
                        errors.setdefault(
                            row,
                            _record_error(record, metric.empty_ground_truth_error(record.location)),
                        )
                skipped[empty, column : column + width] = True
                dropped.setdefault(position, np.zeros(count, dtype=bool))[empty] = True
        column += width
    context = context_columns(cuts, plan.all_ks()) if count else {}
    keep = [row for row in range(count) if row not in errors]
    picked = slice(None) if len(keep) == count else np.asarray(keep, dtype=np.int64)
    skipped = skipped[picked]
    table = np.where(skipped, 0.0, table[picked])
    kept_records = [records[row] for row in keep]
    located = [judged.located.get(ids[row]) for row in keep]
    scored = ScoredBatch(
        errors={},
        index=[record.index for record in kept_records],
        ids=[record.id for record in kept_records],
        metadata=[record.metadata for record in kept_records],
        columns=tuple(columns),
        values=table,
        skipped=skipped if skipped.any() else None,
        counts={key: c[picked] for key, c in counts.items()},
        span_counts={key: c[picked] for key, c in lengths.items()},
        dropped={position: d[picked] for position, d in dropped.items()},
        num_relevant=np.array([_num_relevant(r) for r in kept_records], dtype=np.int64),
        num_retrieved=np.array([len(r.retrieved) for r in kept_records], dtype=np.int64),
        empty_ground_truth=relevant[picked] == 0,
        tokenless=np.array([judged.tokenless.get(ids[row], 0) for row in keep], dtype=np.int64),
        context={
            label: (c[picked], None if w is None else w[picked], None if h is None else h[picked])
            for label, (c, w, h) in context.items()
        },
        located=None
        if all(spans is None for spans in located)
        else [None if spans is None else (spans.counts, spans.unlocated) for spans in located],
    )
    return scored, errors


def _needs_ties(plan: ScoringPlan) -> bool:
    """Whether a measure of the plan averages gains over equal retrieval scores."""
    return any(m.needs_tie_groups() for m in plan.metrics)


def _tie_ends(record: Record) -> tuple[int, ...] | None:
    """The record's groups of equal scores, when it has scores (checked: the list must be
    ranked by them)."""
    if record.retrieved_scores is None:
        return None
    return ranked_tie_ends(record.retrieved_scores, "retrieved_scores", location=record.location)


def _with_ties(
    plan: ScoringPlan,
    judged: _Judged,
    ids: list[int],
    batches: list[tuple[list[int], Any]],
) -> list[tuple[list[int], Any]]:
    """The pass's batches with each record's groups of equal scores, when a measure of the plan
    averages over ties (a record without scores: every rank a group of its own)."""
    if not _needs_ties(plan):
        return batches
    out = []
    for rows, batch in batches:
        if isinstance(batch, BatchJudgments):
            ends = tie_ends_array([judged.ties.get(ids[r]) for r in rows], batch.n)
            batch = replace(batch, tie_ends=ends)
        out.append((rows, batch))
    return out


def _located_fields(located: LocatedRecord | None) -> dict[str, Any]:
    if located is None:
        return {}
    return {"located": located.counts, "unlocated": located.unlocated}
