"""ID mode over whole runs: pytrec_eval-style dicts in, ``{qid: {measure: value}}`` out.

Two policies that IR tools leave implicit are explicit here, with trec_eval's behaviour as the
default and a :class:`~ctxeval.foundation.errors.ConventionWarning` when they change a result:

- ``ties``: documents with equal scores are ordered by docid descending (``"trec_eval"``), or
  kept in the order the run lists them (``"input"``);
- ``missing_queries``: a query in the qrels but absent from the run scores 0 and is counted
  (``"zero"``, trec_eval ``-c``), is left out (``"skip"``), or is an error.

A query in the run but not in the qrels has no judgments and is left out, as trec_eval does.

Queries given as ``{str docid: score}`` are judged all at once in numpy
(:mod:`ctxeval.judging.runs`); the others (ranked lists, integer ids, invalid input) one by
one here, with the same results to the last bit and the same errors. Either way the values come
from the vectorised core (:mod:`ctxeval.metrics.core`), or, with ``implementation="reference"``,
from the reference formulas.
"""

from __future__ import annotations

import itertools
import numbers
import operator
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from ctxeval.cutoffs.cutoff import Budget
from ctxeval.foundation.errors import (
    ConventionWarning,
    Fix,
    InvalidArgumentError,
    InvalidRecordError,
    type_name,
)
from ctxeval.foundation.params import (
    EmptyGroundTruthPolicy,
    check_choice,
    check_policy,
    check_relevance_level,
)
from ctxeval.judging.batch import stack_judgments
from ctxeval.judging.judgments import Judgments, judge_ids
from ctxeval.judging.runs import judge_run, plain_judged, plain_scored
from ctxeval.metrics.measures import Measure, implementation, parse_measure
from ctxeval.records.checks import is_finite, validate_ids, validate_qrels

__all__ = [
    "evaluate_run",
    "needs_tie_groups",
    "rank_documents",
    "tie_ends",
    "ties_straddle_relevance",
    "warn_policies",
]

Ties = Literal["trec_eval", "input"]
MissingQueries = Literal["zero", "skip", "error"]


def needs_tie_groups(measures: Iterable[Measure]) -> bool:
    """Whether a measure averages gains over tied scores (``ndcg(ties='average')``)."""
    return any(m.averages_ties for m in measures)


def tie_ends(
    scored: Mapping[Any, float] | Sequence[Hashable], ranked: Sequence[Hashable]
) -> list[int]:
    """Where each group of equal scores ends in ``ranked`` (exclusive); every rank is its own
    group when ``scored`` is a list (no scores)."""
    if not isinstance(scored, Mapping):
        return list(range(1, len(ranked) + 1))
    ends = [i + 1 for i, (a, b) in enumerate(itertools.pairwise(ranked)) if scored[a] != scored[b]]
    return [*ends, len(ranked)] if ranked else []


def _tie_key(item: tuple[Hashable, float]) -> tuple[float, str]:
    doc = item[0]
    return item[1], doc if isinstance(doc, str) else str(doc)


def rank_documents(
    scored: Mapping[Any, float] | Sequence[Hashable],
    *,
    ties: Ties = "trec_eval",
    location: str = "run",
) -> list[Hashable]:
    """Order one query's documents: by score, highest first, ties broken by ``ties``.

    A sequence is taken as already ranked.
    """
    if not isinstance(scored, Mapping):
        return validate_ids(scored, location)
    items = list(scored.items())
    all_str = set(map(type, scored)) <= {str}
    # Fast path: str ids and float scores (what run files give) need no per-item ABC checks.
    if not (all_str and set(map(type, scored.values())) <= {float}):
        _check_scored(items, location)
    if not all(map(is_finite, scored.values())):
        _check_scored(items, location)
    if ties == "trec_eval":
        items.sort(key=operator.itemgetter(1, 0) if all_str else _tie_key, reverse=True)
    else:
        items.sort(key=operator.itemgetter(1), reverse=True)  # stable: input order within ties
    return [doc for doc, _ in items]


def _check_scored(items: list[tuple[Hashable, Any]], location: str) -> None:
    for doc, score in items:
        if isinstance(doc, bool) or not isinstance(doc, str | numbers.Integral):
            raise InvalidRecordError(
                f"{location} has document id {doc!r} ({type_name(doc)}); ids must be strings "
                "or integers"
            )
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not is_finite(score):
            raise InvalidRecordError(
                f"{location}[{doc!r}] has score {score!r:.40}; a score must be a finite number "
                "(higher ranks first)"
            )


def ties_straddle_relevance(
    scored: Mapping[Any, float], ranked: Sequence[Hashable], qrels: Mapping[Any, float]
) -> bool:
    """True when two documents of equal score differ in grade, so tie order changes a score.

    Unjudged and grade-0 documents count alike (gain 0); any other difference in grade moves
    NDCG, and, across the relevance level, the binary measures.
    """
    for a, b in itertools.pairwise(ranked):
        if scored[a] == scored[b] and max(qrels.get(a, 0), 0) != max(qrels.get(b, 0), 0):
            return True
    return False


def evaluate_run(
    run: Mapping[Any, Mapping[Any, float] | Sequence[Hashable]],
    qrels: Mapping[Any, Mapping[Any, float] | Sequence[Hashable]],
    measures: Iterable[str | Measure],
    *,
    ties: Ties = "trec_eval",
    missing_queries: MissingQueries = "zero",
    empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    relevance_level: float = 1,
    implementation: str | None = None,
) -> dict[Hashable, dict[str, float]]:
    """Score a run against qrels, per query, for each measure.

    ``run``: ``{qid: {docid: score}}`` (or ``{qid: [docid, ...]}`` already ranked);
    ``qrels``: ``{qid: {docid: grade}}`` (or ``{qid: [relevant docid, ...]}``);
    ``measures``: specs such as ``"map"``, ``"ndcg@10"``, ``"P@5"``, ``"recall@10"``, ``"mrr"``,
    ``"hit_rate@5"`` (trec_eval's ``P_5``, ``ndcg_cut_10`` too). The result keys each query's
    values by the measure's canonical spec (``"map"`` and ``"AP"`` both give
    ``"average_precision"``; ``"P_5"`` gives ``"precision@5"``), as every result column does.
    ``implementation``: ``"core"`` (default) or ``"reference"`` (see
    :func:`ctxeval.metrics.measures.implementation`).
    """
    use = _implementation(implementation)
    check_choice("evaluate_run", "ties", ties, ("trec_eval", "input"))
    check_choice("evaluate_run", "missing_queries", missing_queries, ("zero", "skip", "error"))
    check_policy("evaluate_run", empty_ground_truth)
    relevance_level = check_relevance_level("evaluate_run", relevance_level)
    canonical = _canonical_measures(measures)
    parsed: list[tuple[str, Measure]] = [(str(m), m) for m in canonical]
    _check_mappings(run, qrels)

    with_ties = needs_tie_groups(canonical)
    plain = (
        _evaluate_plain_queries(run, qrels, parsed, ties, relevance_level)
        if use == "core" and not with_ties
        else _PlainQueries({}, set(), 0)
    )
    if len(plain.scores) == len(qrels) and (
        empty_ground_truth == "zero" or not plain.without_relevant
    ):
        # every query done, in qrels order, no policy to apply
        results, missing, skipped_empty = plain.scores, [], []
        tied_queries = plain.tied_queries
    else:
        policies = _Policies(
            ties, missing_queries, empty_ground_truth, relevance_level, with_ties, use
        )
        queries = _QueryByQuery(run, parsed, policies, plain)
        queries.score(qrels)
        results, missing, skipped_empty = queries.results, queries.missing, queries.skipped_empty
        tied_queries = queries.tied_queries

    if all(m.averages_ties for m in canonical):
        tied_queries = 0  # every measure averages over tied documents: their order is moot
    warn_policies(run, qrels, missing, missing_queries, tied_queries, ties)
    if skipped_empty:
        warnings.warn(
            ConventionWarning(
                f"{len(skipped_empty)} query(ies) have no relevant document in the qrels and "
                f"were left out (empty_ground_truth='skip'); first: {skipped_empty[0]!r}"
            ),
            stacklevel=2,
        )
    return results


def _canonical_measures(measures: Iterable[str | Measure]) -> list[Measure]:
    """The measures parsed, each once, in order; at least one, none with a budget."""
    if isinstance(measures, str | Measure):
        measures = [measures]
    canonical = list(dict.fromkeys(parse_measure(m) for m in measures))
    if not canonical:
        raise InvalidArgumentError("evaluate_run(measures=...): give at least one measure")
    spans = [str(m) for m in canonical if m.definition.family == "span"]
    if spans:
        raise InvalidArgumentError(
            f"evaluate_run(measures=...): {', '.join(spans)} measure the spans of texts, and "
            "evaluate_run scores ids: evaluate text-mode records with RetrievalEvaluator"
        )
    budgets = [str(m) for m in canonical if isinstance(m.k, Budget)]
    if budgets:
        raise InvalidArgumentError(
            f"evaluate_run(measures=...): {budgets[0]!r} has a budget, which needs the chunks' "
            "texts; evaluate_run scores ids: give a number of documents (e.g. 'ndcg@10')"
        )
    return canonical


def _check_mappings(run: object, qrels: object) -> None:
    for mapping, name in ((run, "run"), (qrels, "qrels")):
        if not isinstance(mapping, Mapping):
            raise InvalidArgumentError(
                f"evaluate_run({name}=...) must be a dict {{query_id: ...}}, got "
                f"{type_name(mapping)}"
            )


class _Policies(NamedTuple):
    """:func:`evaluate_run`'s options, checked, as the query-by-query path applies them."""

    ties: Ties
    missing_queries: MissingQueries
    empty_ground_truth: EmptyGroundTruthPolicy
    relevance_level: float
    with_ties: bool  # whether a measure averages over tied documents
    use: str  # the implementation


def _no_relevant_error(qid: Hashable) -> InvalidRecordError:
    return InvalidRecordError(
        f"query {qid!r} has no relevant document in the qrels; pass "
        "empty_ground_truth='zero' or 'skip'"
    )


class _QueryByQuery:
    """The queries in qrels order, those the batch path did not evaluate judged one by one,
    with the missing-query and empty-ground-truth policies applied to all of them."""

    def __init__(
        self,
        run: Mapping[Any, Any],
        measures: list[tuple[str, Measure]],
        policies: _Policies,
        plain: _PlainQueries,
    ) -> None:
        self.run = run
        self.measures = measures
        self.policies = policies
        self.plain = plain
        self.results: dict[Hashable, dict[str, float]] = {}
        self.missing: list[Hashable] = []
        self.skipped_empty: list[Hashable] = []
        self.tied_queries = plain.tied_queries

    def score(self, qrels: Mapping[Any, Any]) -> None:
        for qid, judged_raw in qrels.items():
            values = self.plain.scores.get(qid)
            if values is None:
                judgments = self._judge(qid, judged_raw)
                if judgments is None or not self._kept(qid, judgments.num_relevant > 0):
                    continue
                values = _values(judgments, self.measures, self.policies.use)
            elif not self._kept(qid, qid not in self.plain.without_relevant):
                continue
            self.results[qid] = values

    def _kept(self, qid: Hashable, has_relevant: bool) -> bool:
        """Whether a query judged is kept: a query without a relevant document is an error,
        left out, or scored, as ``empty_ground_truth`` says."""
        if not has_relevant:
            if self.policies.empty_ground_truth == "error":
                raise _no_relevant_error(qid)
            if self.policies.empty_ground_truth == "skip":
                self.skipped_empty.append(qid)
                return False
        return True

    def _judge(self, qid: Hashable, judged_raw: Any) -> Judgments | None:
        """One query's judgments; None for a query absent from the run (which the policies
        have settled)."""
        judged = validate_qrels(judged_raw, f"qrels[{qid!r}]")
        if qid not in self.run:
            self._absent(qid, judged)
            return None
        policies = self.policies
        scored = self.run[qid]
        ranked = rank_documents(scored, ties=policies.ties, location=f"run[{qid!r}]")
        if (
            isinstance(scored, Mapping)
            and len(set(scored.values())) < len(scored)
            and ties_straddle_relevance(scored, ranked, judged)
        ):
            self.tied_queries += 1
        groups = tie_ends(scored, ranked) if policies.with_ties else None
        return judge_ids(ranked, judged, relevance_level=policies.relevance_level, tie_ends=groups)

    def _absent(self, qid: Hashable, judged: Mapping[Hashable, float]) -> None:
        """A query in the qrels but not in the run: left to the empty-ground-truth policy when
        it has no relevant document, else to the missing-query policy."""
        policies = self.policies
        if policies.empty_ground_truth != "zero" and not any(
            grade >= policies.relevance_level for grade in judged.values()
        ):
            # No relevant document and no results: the empty-ground-truth policy
            # decides, as for a query in the run.
            if policies.empty_ground_truth == "error":
                raise _no_relevant_error(qid)
            self.skipped_empty.append(qid)
            return
        self.missing.append(qid)
        if policies.missing_queries == "error":
            raise InvalidRecordError(
                f"query {qid!r} is in the qrels but not in the run; pass "
                "missing_queries='zero' (score 0, as trec_eval -c) or 'skip'"
            )
        if policies.missing_queries == "zero":
            self.results[qid] = dict.fromkeys([key for key, _ in self.measures], 0.0)


class _PlainQueries(NamedTuple):
    """The queries evaluated all at once (:mod:`ctxeval.judging.runs`)."""

    scores: dict[Hashable, dict[str, float]]  # {qid: {measure key: value}}, in qrels order
    without_relevant: set[Hashable]  # those with no relevant document in the qrels
    tied_queries: int  # those where the tie rule changed a score


def _evaluate_plain_queries(
    run: Mapping[Any, Any],
    qrels: Mapping[Any, Any],
    measures: list[tuple[str, Measure]],
    ties: Ties,
    relevance_level: float,
) -> _PlainQueries:
    """Evaluate at once every judged query whose run is ``{str id: finite float}`` and whose
    qrels are valid; the others are left to the per-query path (which reports what is wrong
    with them, in qrels order: nothing here raises)."""
    qids: list[Hashable] = list(qrels)
    scored: list[Any] = list(map(run.get, qids))
    judged: list[Any] = list(qrels.values())
    if operator.countOf(map(type, scored), dict) != len(scored):
        candidate = [type(ranking) is dict for ranking in scored]
        qids, scored, judged = (
            list(itertools.compress(items, candidate)) for items in (qids, scored, judged)
        )
    # Only bpref counts the judged non-relevant documents: rank them only then.
    bpref = any(m.name == "bpref" for _, m in measures)
    judgments = judge_run(
        scored, judged, ties=ties, relevance_level=relevance_level, judged_nonrelevant=bpref
    )
    if judgments is None:
        # Some query is not plain. Qrels are small: validate them one by one (lists of ids
        # become dicts) and try again; only then check each query's scores (~0.1 s per 1M).
        valid = [_valid_qrels(qid, grades) for qid, grades in zip(qids, judged, strict=True)]
        qids, scored, judged = _drop_none(qids, scored, valid)
        judgments = judge_run(
            scored, judged, ties=ties, relevance_level=relevance_level, judged_nonrelevant=bpref
        )
    if judgments is None:
        plain = [
            grades if plain_scored(ranking) else None
            for ranking, grades in zip(scored, judged, strict=True)
        ]
        qids, scored, judged = _drop_none(qids, scored, plain)
        judgments = judge_run(
            scored, judged, ties=ties, relevance_level=relevance_level, judged_nonrelevant=bpref
        )
    if judgments is None:
        return _PlainQueries({}, set(), 0)
    keys = [key for key, _ in measures]
    columns: list[list[float]] = [[] for _ in measures]
    for _, batch in judgments.batches(_depth([m for _, m in measures])):
        for column, (_, measure) in zip(columns, measures, strict=True):
            column.extend(measure.values(batch).tolist())
    rows = map(dict, map(zip, itertools.repeat(keys), zip(*columns, strict=True)))
    no_relevant = (judgments.num_relevant == 0).tolist()
    return _PlainQueries(
        scores=dict(zip(qids, rows, strict=True)),
        without_relevant=set(itertools.compress(qids, no_relevant)),
        tied_queries=int(judgments.tied.sum()),
    )


def _implementation(choice: str | None) -> str:
    try:
        return implementation(choice)
    except ValueError as exc:
        raise InvalidArgumentError(f"evaluate_run(implementation=...): {exc}") from None


def _depth(measures: list[Measure]) -> int | None:
    """How many documents to judge so that every measure's cut-off is a prefix."""
    ks = [m.k for m in measures]
    whole = any(
        "ideal" in m.definition.options and m.option("ideal") == "retrieved" for m in measures
    )
    counts = [k for k in ks if isinstance(k, int)]
    if whole or len(counts) < len(ks):
        return None
    return max(counts)


def _values(
    judgments: Judgments, measures: list[tuple[str, Measure]], use: str
) -> dict[str, float]:
    """One query's values, from the reference or from the core (a batch of one)."""
    if use == "reference":
        return {key: measure(judgments) for key, measure in measures}
    batch = stack_judgments([judgments])
    return {key: float(measure.values(batch)[0]) for key, measure in measures}


def _valid_qrels(qid: Hashable, judged: object) -> dict[Hashable, float] | None:
    """One query's qrels as ``{id: grade}`` when valid, else None."""
    if plain_judged(judged):
        return judged  # type: ignore[return-value]
    try:
        return validate_qrels(judged, f"qrels[{qid!r}]")
    except (ValueError, TypeError, OverflowError):
        return None


def _drop_none(
    qids: list[Hashable], scored: list[Any], judged: list[Any]
) -> tuple[list[Hashable], list[Any], list[Any]]:
    """The queries whose ``judged`` entry is not None."""
    keep = [grades is not None for grades in judged]
    return (
        list(itertools.compress(qids, keep)),
        list(itertools.compress(scored, keep)),
        list(itertools.compress(judged, keep)),
    )


def warn_policies(
    run: Mapping[Any, Any],
    qrels: Mapping[Any, Any],
    missing: Sequence[Hashable],
    missing_queries: str,
    tied_queries: int,
    ties: str,
) -> None:
    if missing:
        effect = "scored 0" if missing_queries == "zero" else "left out"
        warnings.warn(
            ConventionWarning(
                f"{len(missing)} query(ies) in the qrels have no results in the run and were "
                f"{effect} (missing_queries={missing_queries!r}); first: {missing[0]!r}",
                fixes=(Fix("missing_queries", missing_queries),),
            ),
            stacklevel=3,
        )
    unjudged = [qid for qid in run if qid not in qrels]
    if unjudged:
        more = ", ..." if len(unjudged) > 3 else ""
        warnings.warn(
            ConventionWarning(
                f"{len(unjudged)} query(ies) in the run have no relevance judgments in the qrels "
                f"and were left out, as trec_eval does; first: "
                f"{', '.join(map(repr, unjudged[:3]))}{more}"
            ),
            stacklevel=3,
        )
    if tied_queries:
        order = "docid descending" if ties == "trec_eval" else "their order in the run"
        warnings.warn(
            ConventionWarning(
                f"{tied_queries} query(ies) have documents with equal scores but different "
                f"grades; ties were ordered by {order} (ties={ties!r}), which changes "
                "their scores"
            ),
            stacklevel=3,
        )
