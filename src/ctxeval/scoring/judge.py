"""Judging records: each record once per judging pass, every metric of a pass sharing it.

A batch's records are judged in bulk (:func:`judge_records`): each record's passes in order,
but chunk passes whose strategy matches whole batches (``match_records``), which are matched
for all the batch's records in one call afterwards. A record whose data a pass cannot judge
becomes a :class:`~ctxeval.records.model.RecordError`; an error that is not the record's (a
strategy's bug, a metric of the wrong mode) stops the run naming the record. Either way errors
are settled as record by record: a record's first failing pass decides, and the first record
whose error stops the run is the one named. How a metric is judged is its judging pass
(:mod:`ctxeval.judging.passes`): nothing here asks what family a metric is.
:func:`batch_judgments` stacks a pass's judgments into the padded batches the vectorised core
measures; :func:`record_judgments` gives them record by record to the reference formulas. The
driver (:mod:`ctxeval.scoring.driver`) measures what is judged here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxeval.foundation.arrays import IntArray
from ctxeval.foundation.errors import (
    CtxevalError,
    EnvironmentVariableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
)
from ctxeval.judging.batch import (
    BatchJudgments,
    FlatPairs,
    Pair,
    judge_batch,
    judge_flat,
    stack_judgments,
)
from ctxeval.judging.judgments import Judgments, judge_matrix
from ctxeval.judging.passes import ChunkTexts, JudgingPass
from ctxeval.judging.spans import LocatedRecord, RecordSpans, locate_record
from ctxeval.judging.ties import ranked_tie_ends
from ctxeval.matching.base import FlatMatches, MatchingStrategy, as_matches
from ctxeval.metrics.base import MetricBase
from ctxeval.metrics.spans.core import SpanBatch
from ctxeval.records.model import Record, RecordError
from ctxeval.scoring.plan import ScoringPlan

__all__ = [
    "PAD_MAX_RANKS",
    "PAD_MAX_TRUTH",
    "Judged",
    "batch_judgments",
    "judge_records",
    "locate",
    "needs_ties",
    "pad_groups",
    "pass_key",
    "record_error",
    "record_judgments",
    "strategy_of",
    "tie_ends",
]


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


def pass_key(plan: ScoringPlan, metric: MetricBase) -> JudgingPass:
    """How ``metric`` is judged in this plan: metrics with equal passes share one."""
    return metric.judging_pass(plan.depth(metric))


def _judge(
    plan: ScoringPlan, way: JudgingPass, record: Record, located: LocatedRecord | None
) -> tuple[Any, int]:
    return way.judge(record, located, locator=plan.locator, token_counter=plan.token_counter)


def locate(plan: ScoringPlan, record: Record) -> LocatedRecord | None:
    """The record's spans, settled once for every span metric of the plan."""
    if not plan.has_spans() or record.mode != "text":
        return None
    return locate_record(record, plan.locator)


def strategy_of(metric: MetricBase) -> MatchingStrategy | None:
    """The strategy ``metric`` matches texts with, if it matches any."""
    return metric.judging_pass(None).strategy


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
        named: Exception = type(exc)(f"{_where(record)}: {exc}", fixes=exc.fixes)
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


def record_error(record: Record, exc: CtxevalError) -> RecordError:
    message = str(exc)
    prefix = f"{record.location}: "
    return RecordError(
        index=record.index,
        id=record.id,
        location=record.location,
        field=getattr(exc, "field", None),
        message=message[len(prefix) :] if message.startswith(prefix) else message,
        fixes=exc.fixes,
    )


# Records longer than this (retrieved items, or distinct ground-truth items) are judged in a
# batch of their own: a batch is padded to its largest record, so one record with 100,000
# retrieved ids among 256 would cost 256 times its memory. Below the caps a batch of 256
# records needs a few MiB at most. (Only memory: every record goes through the same core.)
PAD_MAX_RANKS = 1_000


PAD_MAX_TRUTH = 200


@dataclass
class Judged:
    """A batch judged once per judging pass: records in order, their judgments by pass.
    ``failed`` and ``tokenless`` are keyed by a record's position in the batch's records."""

    failed: dict[int, RecordError] = field(default_factory=dict)
    # pass key -> per good record (in order): a relevance matrix and grades (chunk units: a
    # list, or FlatPairs when the strategy matched the batch flat), or per-record Judgments
    # (ID mode, sentence units)
    matrices: dict[Hashable, Sequence[Pair]] = field(default_factory=dict)
    judgments: dict[Hashable, list[Judgments]] = field(default_factory=dict)
    spans: dict[Hashable, list[RecordSpans]] = field(default_factory=dict)
    tokenless: dict[int, int] = field(default_factory=dict)
    located: dict[int, LocatedRecord] = field(default_factory=dict)
    ties: dict[int, tuple[int, ...]] = field(default_factory=dict)  # groups of equal scores


def judge_records(plan: ScoringPlan, records: list[Record]) -> Judged:
    """Judge every record once per judging pass; a record that fails is a RecordError.

    Chunk passes whose strategy matches whole batches (``match_records``, as the built-in ROUGE
    strategies do) are matched for all the batch's records in one call, after every record's
    other passes (as flat arrays, when the strategy gives them: ``match_records_flat``); the
    rest record by record. Errors are settled as record by record: a record's
    first failing pass (in pass order) decides, and the first record whose error is not its
    own (a configuration mistake, a strategy's exception) stops the run.
    """
    judged = Judged()
    passes: dict[JudgingPass, MetricBase] = {}
    for metric in plan.metrics:
        passes.setdefault(pass_key(plan, metric), metric)
    # Per pass, once per batch: its first metric, whether it is matched in bulk.
    steps = [(key, metric, _in_bulk(key)) for key, metric in passes.items()]
    with_ties = needs_ties(plan)
    found: dict[int, dict[Hashable, Any]] = {}  # per record: each pass's result
    lost: dict[int, int] = {}
    errors: _Errors = {}
    pending: dict[int, list[tuple[int, ChunkTexts]]] = {}  # by pass: matched in bulk below
    for i, record in enumerate(records):
        results: dict[Hashable, Any] = {}
        found[i] = results
        lost[i] = 0
        try:
            located = locate(plan, record)
            ties = tie_ends(record) if with_ties else None
        except Exception as exc:
            errors[i] = (-1, exc)
            continue
        for position, (key, metric, in_bulk) in enumerate(steps):
            try:
                _check_mode(metric, record)
                texts = key.chunk_texts(record) if in_bulk else None
                if texts is not None:
                    pending.setdefault(position, []).append((i, texts))
                    continue
                results[key], tokens = _judge_one(plan, key, record, located)
            except Exception as exc:
                errors[i] = (position, _named_error(record, metric, exc))
                break  # its later passes cannot change what the record is
            lost[i] = max(lost[i], tokens)
        if located is not None:
            judged.located[i] = located
        if ties is not None:
            judged.ties[i] = ties
    flat: dict[JudgingPass, tuple[list[int], FlatPairs]] = {}  # by pass: records, their pairs
    for position in sorted(pending):
        key, metric, _ = steps[position]
        pairs, failure = _flat_pairs(key, pending[position], lost)
        if pairs is not None:
            flat[key] = ([i for i, _ in pending[position]], pairs)
            continue
        bulk = _Bulk(records, position, found, lost, errors)
        bulk.match(key, metric, pending[position], failure)
    _settle_errors(judged, records, errors)
    _stage(judged, list(passes), found, lost)
    for way, (which, pairs) in flat.items():
        kept = [row for row, i in enumerate(which) if i not in judged.failed]
        judged.matrices[way] = pairs if len(kept) == len(which) else pairs.select(kept)
    return judged


def _flat_pairs(
    key: JudgingPass, items: list[tuple[int, ChunkTexts]], lost: dict[int, int]
) -> tuple[FlatPairs | None, Exception | None]:
    """The pass's records matched at once as flat arrays (``match_records_flat``), or None when
    the strategy does not give them, with the error it raised if it did; then :class:`_Bulk`
    matches the records, and meets any error again to name the record it belongs to. Each
    record's tokenless count goes to ``lost``."""
    method = _flat_matcher(key)
    if method is None:
        return None, None
    try:
        found = method([(shown, truth) for _, (shown, truth, _) in items])
    except Exception as exc:
        return None, exc
    if found is None:
        return None, None
    n = np.fromiter((len(shown) for _, (shown, _, _) in items), dtype=np.int64, count=len(items))
    m = np.fromiter((len(truth) for _, (_, truth, _) in items), dtype=np.int64, count=len(items))
    _check_flat(key, found, n, m)
    for k, texts in found.tokenless.items():
        i = items[int(k)][0]
        lost[i] = max(lost[i], len(texts))
    blocks = found.blocks.astype(np.int64, copy=False)
    grades = [grades for _, (_, _, grades) in items]
    return FlatPairs(found.relevant, blocks, n, m, grades), None


def _check_flat(key: JudgingPass, found: object, n: IntArray, m: IntArray) -> None:
    """Stop the run when ``match_records_flat`` gave something else than flat matches of the
    records' shapes (a strategy's bug: it must give what ``match_records`` gives)."""
    if _fits(found, n, m):
        return
    assert key.strategy is not None
    raise InvalidArgumentTypeError(
        f"strategy {key.strategy.spec}: match_records_flat returned {type(found).__name__}, "
        "not FlatMatches of the records' shapes (a flat boolean array holding each record's "
        "len(retrieved) x len(ground_truth) block from blocks[k]); fix it, or remove it to have "
        "match_records used"
    )


def _fits(found: object, n: IntArray, m: IntArray) -> bool:
    """Whether ``found`` is a :class:`FlatMatches` holding blocks of the records' shapes (``n``
    by ``m``) and naming only records of the batch as tokenless."""
    if not isinstance(found, FlatMatches):
        return False
    relevant, blocks, tokenless = found.relevant, found.blocks, found.tokenless
    if not (isinstance(relevant, np.ndarray) and relevant.dtype == np.bool_ and relevant.ndim == 1):
        return False
    if not (
        isinstance(blocks, np.ndarray) and blocks.dtype.kind in "iu" and blocks.shape == n.shape
    ):
        return False
    if not isinstance(tokenless, dict) or not all(
        isinstance(k, int | np.integer) and 0 <= k < len(n) and isinstance(v, tuple)
        for k, v in tokenless.items()
    ):
        return False
    starts = blocks.astype(np.int64)
    return bool(((starts >= 0) & (starts + n * m <= len(relevant))).all())


def _settle_errors(judged: Judged, records: list[Record], errors: _Errors) -> None:
    """The records' errors, in record order: the first that is not the record's own stops the
    run; the others make their records failed."""
    for i in sorted(errors):
        error = errors[i][1]
        if _stops(error):
            raise error
        assert isinstance(error, CtxevalError)
        judged.failed[i] = record_error(records[i], error)


def _stage(
    judged: Judged,
    keys: list[Hashable],
    found: dict[int, dict[Hashable, Any]],
    lost: dict[int, int],
) -> None:
    """The results of the records that did not fail, per pass (``keys``), by kind: spans,
    judgments or match matrices; and each record's tokenless count."""
    staged: dict[Hashable, list[Any]] = {key: [] for key in keys}
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


def _stops(error: Exception) -> bool:
    """Whether ``error`` stops the run rather than making its record a bad one (a package
    missing on this machine is no record's fault either)."""
    stopping = InvalidArgumentError | InvalidArgumentTypeError | MissingDependencyError
    return isinstance(error, stopping) or not isinstance(error, CtxevalError)


# Each failing record's first error: the pass where it was met (-1: before any pass), the error.
_Errors = dict[int, tuple[int, Exception]]


def _in_bulk(way: JudgingPass) -> bool:
    """Whether the pass's strategy matches whole batches (``match_records`` or
    ``match_records_flat``)."""
    return _batch_matcher(way) is not None or _flat_matcher(way) is not None


def _flat_matcher(way: JudgingPass) -> Callable[..., Any] | None:
    """The strategy's ``match_records_flat`` (a whole batch's matches as flat arrays), if it
    has one."""
    found: Callable[..., Any] | None = getattr(way.strategy, "match_records_flat", None)
    return found


def _batch_matcher(way: JudgingPass) -> Callable[..., Any] | None:
    """The strategy's ``match_records`` (a whole batch's records at once), if it has one."""
    found: Callable[..., Any] | None = getattr(way.strategy, "match_records", None)
    return found


@dataclass
class _Bulk:
    """One chunk pass matched for a batch's records at once, into what
    :func:`judge_records` gathers: each record's results, tokenless counts and first error."""

    records: list[Record]
    position: int  # the pass's place among the batch's passes
    found: dict[int, dict[Hashable, Any]]
    lost: dict[int, int]
    errors: _Errors

    def match(
        self,
        key: JudgingPass,
        metric: MetricBase,
        items: list[tuple[int, ChunkTexts]],
        flat_failure: Exception | None = None,
    ) -> None:
        """Match the pass's records in one ``match_records`` call (without one, record by
        record). If that call raises, they are matched one by one, so the error is met again
        and named for its record; if none of them raises then, ``match_records`` is at fault,
        and the run stops saying so; so is ``match_records_flat`` when it raised
        (``flat_failure``) and the strategy has no ``match_records``."""
        strategy = key.strategy
        matcher = _batch_matcher(key)
        assert strategy is not None
        pairs = [(shown, truth) for _, (shown, truth, _) in items]
        failure = flat_failure if matcher is None else None
        matched: list[Any] | None = None
        try:
            matched = None if matcher is None else list(matcher(pairs))
        except Exception as exc:
            failure = exc
        if matched is not None and len(matched) != len(pairs):
            raise InvalidArgumentTypeError(
                f"strategy {strategy.spec}: match_records returned {len(matched)} results for "
                f"{len(pairs)} records; return one Matches (or boolean matrix) per "
                "(retrieved, ground_truth) pair, in order"
            )
        met = False
        for n, (i, (shown, truth, grades)) in enumerate(items):
            earlier = self.errors.get(i)
            superseded = earlier is not None and earlier[0] < self.position
            if superseded and matched is not None:
                continue
            try:
                raw = strategy.match(shown, truth) if matched is None else matched[n]
                matches = as_matches(raw, len(shown), len(truth), strategy)
            except Exception as exc:
                met = True
                if not superseded:
                    self.errors[i] = (self.position, _named_error(self.records[i], metric, exc))
                continue
            if not superseded:
                self.found[i][key] = (matches.relevant, grades)
                self.lost[i] = max(self.lost[i], len(matches.tokenless))
        if failure is not None and not met:
            method = "match_records" if matcher is not None else "match_records_flat"
            raise InvalidArgumentError(
                f"strategy {strategy.spec}: {method} raised {type(failure).__name__}: "
                f"{failure}, but match judged each of the batch's records; fix {method} "
                "(it must give what match gives; the original error is chained to this one)"
            ) from failure


def _judge_one(
    plan: ScoringPlan, way: JudgingPass, record: Record, located: LocatedRecord | None
) -> tuple[Any, int]:
    """A relevance matrix with grades (chunk units, judged in bulk later), or Judgments."""
    texts = way.chunk_texts(record)
    if texts is not None:
        strategy = way.strategy
        assert strategy is not None  # a pass that has chunk texts matches them
        shown, truth, grades = texts
        matches = as_matches(strategy.match(shown, truth), len(shown), len(truth), strategy)
        return (matches.relevant, grades), len(matches.tokenless)
    return _judge(plan, way, record, located)


def pad_groups(sizes: list[tuple[int, int]]) -> list[list[int]]:
    """Positions batched together: every record within the padding caps in one group, each
    outlier in a group of its own."""
    within = [i for i, (n, m) in enumerate(sizes) if n <= PAD_MAX_RANKS and m <= PAD_MAX_TRUTH]
    outliers = [[i] for i, (n, m) in enumerate(sizes) if n > PAD_MAX_RANKS or m > PAD_MAX_TRUTH]
    return ([within] if within else []) + outliers


def batch_judgments(
    plan: ScoringPlan, metric: MetricBase, key: Hashable, judged: Judged
) -> list[tuple[list[int], BatchJudgments | SpanBatch]]:
    """The pass's records as padded batches (with the positions each batch holds)."""
    if key in judged.spans:
        spans = judged.spans[key]
        return [(list(range(len(spans))), SpanBatch.from_records(spans))] if spans else []
    if key in judged.judgments:
        items = judged.judgments[key]
        groups = pad_groups([(j.n, j.num_relevant) for j in items])
        return [(g, stack_judgments([items[i] for i in g])) for g in groups]
    pairs = judged.matrices[key]
    credit = metric.credit_rule()
    if isinstance(pairs, FlatPairs):
        groups = pad_groups(list(zip(pairs.n.tolist(), pairs.m.tolist(), strict=True)))
        return [
            (g, judge_flat(pairs if len(g) == len(pairs) else pairs.select(g), credit))
            for g in groups
        ]
    groups = pad_groups([matrix.shape for matrix, _ in pairs])
    return [
        (
            g,
            judge_batch([pairs[i][0] for i in g], [pairs[i][1] for i in g], credit),
        )
        for g in groups
    ]


def record_judgments(
    metric: MetricBase, key: Hashable, judged: Judged
) -> list[Judgments | RecordSpans]:
    """The pass's judgments record by record, for the reference formulas: each relevance
    matrix credited on its own (:func:`~ctxeval.judging.judgments.judge_matrix`)."""
    if key in judged.spans:
        return list(judged.spans[key])
    if key in judged.judgments:
        return list(judged.judgments[key])
    credit = metric.credit_rule()
    return [judge_matrix(matrix, grades, credit=credit) for matrix, grades in judged.matrices[key]]


def needs_ties(plan: ScoringPlan) -> bool:
    """Whether a measure of the plan averages gains over equal retrieval scores."""
    return any(m.needs_tie_groups() for m in plan.metrics)


def tie_ends(record: Record) -> tuple[int, ...] | None:
    """The record's groups of equal scores, when it has scores (checked: the list must be
    ranked by them)."""
    if record.retrieved_scores is None:
        return None
    return ranked_tie_ends(record.retrieved_scores, "retrieved_scores", location=record.location)
