"""Hypothesis properties of the metrics (style.md): bounds, invariances, ideal rankings, text mode
equals ID mode, one matching pass serves every K, and judge_matrix equals a slow reference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import (
    ExactChunkMatch,
    ExactSentenceMatch,
    FuzzyChunkMatch,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RougeChunkMatch,
    RougeSentenceMatch,
    evaluate_run,
    parse_measure,
)
from ctxeval.judging.judgments import Judgments, judge_matrix
from ctxeval.metrics import reference as F

CONVENTIONS = (None, "trec_eval", "ranx", "continuous_eval")
RANK_OPTIONS: list[dict[str, Any]] = [
    *({"convention": c} for c in CONVENTIONS),
    {"gain": "exponential"},
    {"ideal": "retrieved"},
    {"precision_denominator": "retrieved"},
    {"ap_denominator": "hits", "gain": "exponential", "ideal": "retrieved"},
    {"convention": "continuous_eval", "ap_credit": "one_to_one"},
]
CUTOFFS = (None, 1, 2, 3, 5)

# Texts that overlap word-wise (so ROUGE and fuzzy matching find partial matches), differ only in
# case or spacing (so normalisation options matter), and hold several sentences (for sentence
# strategies). Every one has ASCII tokens, so no EmptyTokensWarning is due.
TEXTS = [
    "the cat sat on the mat",
    "the cat sat",
    "The Cat sat",
    "the  cat   sat",
    "a dog ran on the mat",
    "mat",
    "paris is the capital of france",
    "Paris is the capital of France. Lyon is a city.",
    "Lyon is a city. The cat sat.",
    "quantum chromodynamics",
]
GRADES = (0.5, 1, 2, 3)

text = st.sampled_from(TEXTS)
retrieved_texts = st.lists(st.one_of(text, st.just("")), max_size=7)
graded_item = st.builds(lambda t, g: {"text": t, "grade": g}, text, st.sampled_from(GRADES))
ground_truth = st.one_of(
    st.lists(text, max_size=5), st.lists(st.one_of(text, graded_item), min_size=1, max_size=5)
)

CHUNK_STRATEGIES = [
    ExactChunkMatch(),
    ExactChunkMatch(ignore_case=True, normalize_whitespace=True),
    RougeChunkMatch(),
    RougeChunkMatch(0.3, tokenizer="rouge-stem"),
    RougeChunkMatch(0.5, tokenizer="unicode"),
    FuzzyChunkMatch(),
    FuzzyChunkMatch("token_set_ratio", 0.6),
]
SENTENCE_STRATEGIES = [ExactSentenceMatch(), RougeSentenceMatch(0.5)]

IDS: list[Hashable] = ["c1", "c2", "c3", "c10", 4, 5]
retrieved_ids = st.lists(st.sampled_from(IDS), max_size=10)
qrels_maps = st.dictionaries(st.sampled_from(IDS), st.sampled_from((0, 0.5, 1, 2, 3)), max_size=6)
LEVELS = (0.5, 1, 2)


def in_unit_interval(scores: dict[str, float | None]) -> bool:
    return all(value is not None and 0.0 <= value <= 1.0 for value in scores.values())


def set_metrics(strategy: object, k: int | None) -> PrecisionRecallF1:
    return PrecisionRecallF1(strategy, k=k)


def rank_metric_factories(strategy: object) -> list[Callable[[int | None], Any]]:
    return [
        lambda k, o=options: RankedRetrievalMetrics(strategy, k=k, **o) for options in RANK_OPTIONS
    ]


def id_rank_factories(level: float = 1) -> list[Callable[[int | None], Any]]:
    return [
        lambda k, o=options: IDRankedRetrievalMetrics(k=k, relevance_level=level, **o)
        for options in RANK_OPTIONS
    ]


def ground_truth_texts(items: Sequence[str | dict]) -> list[str]:
    return [item["text"] if isinstance(item, dict) else item for item in items]


# --------------------------------------------------------------------------------------------
# Bounds


@settings(max_examples=120)
@given(retrieved=retrieved_texts, gt=ground_truth)
def test_text_metrics_are_in_unit_interval(retrieved: list[str], gt: list) -> None:
    datum = {"retrieved_context": retrieved, "ground_truth_context": gt}
    for strategy in CHUNK_STRATEGIES:
        for k in CUTOFFS:
            assert in_unit_interval(set_metrics(strategy, k)(**datum))
            for make in rank_metric_factories(strategy):
                metric = make(k)
                assert in_unit_interval(metric(**datum)), (metric, datum)
    for strategy in SENTENCE_STRATEGIES:
        for k in CUTOFFS:
            assert in_unit_interval(set_metrics(strategy, k)(**datum))


@settings(max_examples=150)
@given(
    retrieved=retrieved_ids,
    relevant=st.lists(st.sampled_from(IDS), max_size=6),
    qrels=qrels_maps,
    level=st.sampled_from(LEVELS),
)
def test_id_metrics_are_in_unit_interval(
    retrieved: list, relevant: list, qrels: dict, level: float
) -> None:
    for k in CUTOFFS:
        for judged in ({"relevant_ids": relevant}, {"qrels": qrels}):
            datum = {"retrieved_ids": retrieved, **judged}
            assert in_unit_interval(IDPrecisionRecallF1(k=k, relevance_level=level)(**datum))
            for make in id_rank_factories(level):
                assert in_unit_interval(make(k)(**datum))


RUN_MEASURES = [
    "map",
    "map@3",
    "map(ap_denominator='hits')@3",
    "ndcg",
    "ndcg@3",
    "ndcg_burges@3",
    "ndcg(ideal='retrieved')@3",
    "P@3",
    "precision(precision_denominator='retrieved')@3",
    "recall@3",
    "mrr",
    "hit_rate@3",
    "context_precision@3",
    "context_recall@3",
    "context_f1",
]


@settings(max_examples=100)
@given(
    # Heavy duplication: ids from a pool of three.
    rankings=st.lists(st.lists(st.sampled_from(IDS[:3]), max_size=15), min_size=1, max_size=3),
    qrels=st.lists(qrels_maps, min_size=3, max_size=3),
    level=st.sampled_from(LEVELS),
)
def test_duplicate_retrieved_ids_never_exceed_one(
    rankings: list[list], qrels: list[dict], level: float
) -> None:
    run = {f"q{i}": ranking for i, ranking in enumerate(rankings)}
    judged = {f"q{i}": qrels[i] for i in range(len(rankings))}
    for scores in evaluate_run(run, judged, RUN_MEASURES, relevance_level=level).values():
        assert in_unit_interval(scores), scores
    for qid, ranking in run.items():
        for k in CUTOFFS:
            for make in id_rank_factories(level):
                assert in_unit_interval(make(k)(retrieved_ids=ranking, qrels=judged[qid]))


# --------------------------------------------------------------------------------------------
# Invariances


@settings(max_examples=120)
@given(data=st.data(), retrieved=retrieved_texts, gt=ground_truth)
def test_set_metrics_ignore_retrieved_order(data: st.DataObject, retrieved: list, gt: list) -> None:
    shuffled = data.draw(st.permutations(retrieved))
    for strategy in CHUNK_STRATEGIES + SENTENCE_STRATEGIES:
        metric = PrecisionRecallF1(strategy)
        assert metric(retrieved_context=shuffled, ground_truth_context=gt) == metric(
            retrieved_context=retrieved, ground_truth_context=gt
        )


@settings(max_examples=120)
@given(data=st.data(), retrieved=retrieved_texts, gt=ground_truth)
def test_metrics_ignore_ground_truth_order(data: st.DataObject, retrieved: list, gt: list) -> None:
    shuffled = data.draw(st.permutations(gt))
    original = {"retrieved_context": retrieved, "ground_truth_context": gt}
    permuted = {"retrieved_context": retrieved, "ground_truth_context": shuffled}
    for strategy in CHUNK_STRATEGIES + SENTENCE_STRATEGIES:
        for k in CUTOFFS:
            assert set_metrics(strategy, k)(**permuted) == set_metrics(strategy, k)(**original)
    # Rank metrics too: "matching" credit depends on the ranking and the grades, never on the
    # order the ground truth is listed in, also when one chunk matches several items (overlap
    # strategies). continuous-eval's "first_come" credit is order-dependent by definition
    # (docs/metrics.md), so its conventions are left out here.
    for strategy in CHUNK_STRATEGIES:
        for k in CUTOFFS:
            for make in rank_metric_factories(strategy):
                metric = make(k)
                if metric.credit_rule() == "first_come":
                    continue
                assert metric(**permuted) == metric(**original)


def test_overlapping_matches_are_credited_whatever_the_ground_truth_order() -> None:
    # "a b" matches both "a b" and "a" (ROUGE-L recall 1); "a" matches only "a" (recall of
    # "a b" by "a" is 1/2 < 0.7). A first-come rule would credit "a b" with "a" when "a" is
    # listed first and leave "a" nothing; greedy credit with augmenting paths moves "a b" to
    # the other item, so both orders give two hits.
    metric = RankedRetrievalMetrics(RougeChunkMatch())
    retrieved = ["a b", "a"]
    for gt in (["a b", "a"], ["a", "a b"]):
        scores = metric(retrieved_context=retrieved, ground_truth_context=gt)
        assert scores["average_precision"] == (1 / 1 + 2 / 2) / 2
        assert scores["recall"] == 1.0
        assert scores["ndcg"] == 1.0


def test_first_come_credit_reproduces_continuous_eval_order_dependence() -> None:
    # continuous-eval credits the first uncredited item in ground-truth order and never moves
    # an earlier hit: with "a" listed first, "a b" takes "a" and the second chunk gets nothing.
    metric = RankedRetrievalMetrics(RougeChunkMatch(), credit="first_come")
    retrieved = ["a b", "a"]
    first = metric(retrieved_context=retrieved, ground_truth_context=["a b", "a"])
    assert first["recall"] == 1.0
    second = metric(retrieved_context=retrieved, ground_truth_context=["a", "a b"])
    assert second["recall"] == 1 / 2
    assert second["ndcg"] == (1 / math.log2(2)) / (1 / math.log2(2) + 1 / math.log2(3))
    assert RankedRetrievalMetrics(convention="continuous_eval").rank_options.credit == "first_come"


def test_graded_credit_takes_the_best_grade_available_at_each_rank() -> None:
    # Rank 1 matches items of grade 3 and 1; rank 2 matches only the grade-3 item. Rank 1 takes
    # grade 3 (decided without looking ahead, so every cut-off sees the same judgments), and
    # rank 2 then has nothing left: gains (3, 0).
    matrix = np.array([[True, True], [True, False]])
    for order in ([0, 1], [1, 0]):
        judgments = judge_matrix(matrix[:, order], [[3.0, 1.0][j] for j in order])
        assert judgments.gains == (3.0, 0.0)
        assert judgments.hits == (True, False)


@settings(max_examples=100)
@given(data=st.data(), retrieved=retrieved_ids, qrels=qrels_maps, level=st.sampled_from(LEVELS))
def test_id_metrics_ignore_qrels_order(
    data: st.DataObject, retrieved: list, qrels: dict, level: float
) -> None:
    shuffled = dict(data.draw(st.permutations(list(qrels.items()))))
    for k in CUTOFFS:
        for make in [
            *id_rank_factories(level),
            lambda k: IDPrecisionRecallF1(k=k, relevance_level=level),
        ]:
            metric = make(k)
            assert metric(retrieved_ids=retrieved, qrels=shuffled) == metric(
                retrieved_ids=retrieved, qrels=qrels
            )


# --------------------------------------------------------------------------------------------
# Ideal rankings


@settings(max_examples=100)
@given(
    graded=st.dictionaries(st.sampled_from(TEXTS), st.sampled_from(GRADES), min_size=1),
    others=st.lists(st.sampled_from(["unrelated one", "unrelated two", ""]), max_size=3),
)
def test_ideal_text_ranking_scores_one(graded: dict[str, float], others: list[str]) -> None:
    gt = [{"text": t, "grade": g} for t, g in graded.items()]
    retrieved = sorted(graded, key=graded.__getitem__, reverse=True) + others
    datum = {"retrieved_context": retrieved, "ground_truth_context": gt}
    m = len(graded)
    for k in (None, m, m + 2):
        for make in rank_metric_factories(ExactChunkMatch()):
            scores = make(k)(**datum)
            assert scores["average_precision"] == 1.0
            assert scores["reciprocal_rank"] == 1.0
            assert scores["ndcg"] == 1.0
            assert scores["hit_rate"] == 1.0
            assert scores["recall"] == 1.0
    assert RankedRetrievalMetrics(ExactChunkMatch(), k=m)(**datum)["precision"] == 1.0
    assert PrecisionRecallF1(ExactChunkMatch(), k=m)(**datum) == {
        "context_precision": 1.0,
        "context_recall": 1.0,
        "context_f1": 1.0,
    }


@settings(max_examples=150)
@given(
    qrels=qrels_maps,
    unjudged=st.lists(st.sampled_from(["u1", "u2", 99]), unique=True),
    level=st.sampled_from(LEVELS),
)
def test_ideal_id_ranking_scores_one(qrels: dict, unjudged: list, level: float) -> None:
    positive = [doc for doc, grade in qrels.items() if grade > 0]
    relevant = [doc for doc in positive if qrels[doc] >= level]
    if not relevant:
        return  # nothing to rank first; the empty-ground-truth policy decides (tested elsewhere)
    # All positive grades first, highest first (NDCG counts every positive grade as gain).
    ranking = sorted(positive, key=qrels.__getitem__, reverse=True)
    ranking += [doc for doc in qrels if doc not in positive] + unjudged
    m = len(relevant)
    for k in (None, len(positive), len(ranking) + 1):
        for make in id_rank_factories(level):
            scores = make(k)(retrieved_ids=ranking, qrels=qrels)
            assert scores["average_precision"] == scores["reciprocal_rank"] == 1.0
            assert scores["ndcg"] == scores["hit_rate"] == scores["recall"] == 1.0
    assert (
        IDRankedRetrievalMetrics(k=m, relevance_level=level)(retrieved_ids=ranking, qrels=qrels)[
            "recall"
        ]
        == 1.0
    )
    # The same through evaluate_run, with the grades as scores (ties in any order are ideal).
    run = {"q": {doc: float(qrels.get(doc, 0)) for doc in ranking}}
    scores = evaluate_run(
        run,
        {"q": qrels},
        ["map", "mrr", "ndcg", "ndcg_burges", f"recall@{m}"],
        relevance_level=level,
    )["q"]
    assert scores == dict.fromkeys(scores, 1.0)


# --------------------------------------------------------------------------------------------
# Exact text matching equals ID mode


@settings(max_examples=150)
@given(retrieved=retrieved_texts, gt=ground_truth)
def test_exact_text_mode_equals_id_mode(retrieved: list[str], gt: list) -> None:
    ids = {t: f"id{i}" for i, t in enumerate(["", *TEXTS])}
    retrieved_as_ids = [ids[t] for t in retrieved]
    qrels: dict[str, float] = {}
    for item in gt:
        t, g = (item["text"], item["grade"]) if isinstance(item, dict) else (item, 1)
        qrels[ids[t]] = max(g, qrels.get(ids[t], 0))
    datum = {"retrieved_context": retrieved, "ground_truth_context": gt}
    # Text mode has no relevance level: every ground-truth item is relevant, so the ID level
    # must be at most the smallest grade.
    level = min(GRADES)
    for k in CUTOFFS:
        text_scores = PrecisionRecallF1(ExactChunkMatch(), k=k)(**datum)
        assert text_scores == IDPrecisionRecallF1(k=k, relevance_level=level)(
            retrieved_ids=retrieved_as_ids, qrels=qrels
        )
        if all(not isinstance(item, dict) for item in gt):
            assert text_scores == IDPrecisionRecallF1(k=k)(
                retrieved_ids=retrieved_as_ids, relevant_ids=[ids[t] for t in gt]
            )
        for options in RANK_OPTIONS:
            text_scores = RankedRetrievalMetrics(ExactChunkMatch(), k=k, **options)(**datum)
            id_scores = IDRankedRetrievalMetrics(k=k, relevance_level=level, **options)(
                retrieved_ids=retrieved_as_ids, qrels=qrels
            )
            assert text_scores == id_scores, (k, options)


# --------------------------------------------------------------------------------------------
# One judgment at the largest K gives every K


@settings(max_examples=120)
@given(retrieved=retrieved_texts, gt=ground_truth)
def test_k_sweep_text_mode(retrieved: list[str], gt: list) -> None:
    datum = {"retrieved_context": retrieved, "ground_truth_context": gt}
    ks = range(1, len(retrieved) + 3)
    for strategy in CHUNK_STRATEGIES + SENTENCE_STRATEGIES:
        factories = [lambda k, s=strategy: PrecisionRecallF1(s, k=k)]
        if strategy.unit == "chunk":
            factories += rank_metric_factories(strategy)
        for make in factories:
            metric = make(None)
            judgments = metric.judge(retrieved, gt).judgments
            for k in ks:
                assert metric.scores(judgments, k) == make(k)(**datum), (metric, k)


@settings(max_examples=100)
@given(retrieved=retrieved_ids, qrels=qrels_maps, level=st.sampled_from(LEVELS))
def test_k_sweep_id_mode_and_evaluate_run(retrieved: list, qrels: dict, level: float) -> None:
    factories = [
        *id_rank_factories(level),
        lambda k: IDPrecisionRecallF1(k=k, relevance_level=level),
    ]
    for make in factories:
        metric = make(None)
        judgments = metric.judge(retrieved, qrels=qrels)
        for k in range(1, len(retrieved) + 3):
            assert metric.scores(judgments, k) == make(k)(retrieved_ids=retrieved, qrels=qrels)
    # evaluate_run's measures at k equal the metric objects' keys at k, also for a query whose
    # positive grades are all below the level (NDCG from those gains, as trec_eval).
    names = {
        "map": "average_precision",
        "mrr": "reciprocal_rank",
        "ndcg": "ndcg",
        "hit_rate": "hit_rate",
        "P": "precision",
        "recall": "recall",
    }
    for k in range(1, len(retrieved) + 3):
        specs = [f"{name}@{k}" for name in names]
        by_run = evaluate_run({"q": retrieved}, {"q": qrels}, specs, relevance_level=level)["q"]
        by_metric = IDRankedRetrievalMetrics(k=k, relevance_level=level)(
            retrieved_ids=retrieved, qrels=qrels
        )
        # by_run's keys are the canonical specs (map@3 -> average_precision@3).
        assert len(by_run) == len(names)
        assert {key: by_run[str(parse_measure(f"{name}@{k}"))] for name, key in names.items()} == (
            by_metric
        )


# --------------------------------------------------------------------------------------------
# judge_matrix and the metric functions against slow, obvious implementations


def _assignable(
    rows: list[tuple[int, float]], matrix: list[list[bool]], grade: list[float]
) -> bool:
    """Brute force: can every (row, grade) get its own column of that grade that it matches?"""
    m = len(grade)
    for columns in itertools.permutations(range(m), len(rows)):
        if all(matrix[r][c] and grade[c] == g for (r, g), c in zip(rows, columns, strict=True)):
            return True
    return False


def reference_judgments(matrix: list[list[bool]], m: int, grades: list[float] | None) -> dict:
    """Credit as docs/metrics.md defines it, by brute force over assignments."""
    n = len(matrix)
    grade = [1.0] * m if grades is None else [float(g) for g in grades]
    credited: list[tuple[int, float]] = []
    hits, gains = [], []
    for i in range(n):
        options = sorted({grade[j] for j in range(m) if matrix[i][j]}, reverse=True)
        chosen = next((g for g in options if _assignable([*credited, (i, g)], matrix, grade)), None)
        hits.append(chosen is not None)
        gains.append(0.0 if chosen is None else chosen)
        if chosen is not None:
            credited.append((i, chosen))
    return {
        "relevant": tuple(any(row) for row in matrix),
        "hits": tuple(hits),
        "gains": tuple(gains),
        "first_match": tuple(next((i for i in range(n) if matrix[i][j]), n) for j in range(m)),
        "ideal": tuple(sorted(grade, reverse=True)),
    }


def reference_metrics(ref: dict, k: int | None) -> dict[str, float]:
    """The definitions of docs/metrics.md, written out longhand, summing in rank order."""
    hits, gains = ref["hits"], ref["gains"]
    total = len(hits)
    n = total if k is None else min(k, total)
    m = len(ref["first_match"])
    if m == 0:
        return {}
    hits_at = [sum(hits[: i + 1]) for i in range(n)]
    ap_sum = 0.0
    for i in range(n):
        if hits[i]:
            ap_sum += hits_at[i] / (i + 1)
    n_hits = hits_at[-1] if n else 0
    # ap_credit="any": every relevant retrieved unit counts, repeats included.
    relevant = ref["relevant"]
    ap_any_sum = 0.0
    for i in range(n):
        if relevant[i]:
            ap_any_sum += sum(relevant[: i + 1]) / (i + 1)
    n_relevant = sum(relevant[:n])
    first_hit = next((i for i in range(n) if hits[i]), None)

    def dcg(values: Sequence[float], exponential: bool) -> float:
        out = 0.0
        for i, g in enumerate(values):
            if g:
                out += (2.0**g - 1.0 if exponential else g) / math.log2(i + 2)
        return out

    ideal_gt = list(ref["ideal"] if k is None else ref["ideal"][:k])
    ideal_ret = sorted(gains, reverse=True)[:n]
    out = {
        "ap_relevant": ap_sum / m,
        "ap_hits": ap_sum / n_hits if n_hits else 0.0,
        "ap_any": ap_any_sum / n_relevant if n_relevant else 0.0,
        "rr": 1.0 / (first_hit + 1) if first_hit is not None else 0.0,
        "hit_rate": 1.0 if n_hits else 0.0,
        "precision_k": n_hits / k if k is not None else (n_hits / n if n else 0.0),
        "precision_n": n_hits / n if n else 0.0,
        "recall": n_hits / m,
        "context_precision": sum(ref["relevant"][:n]) / n if n else 0.0,
        "context_recall": sum(1 for f in ref["first_match"] if f < n) / m,
    }
    for exponential in (False, True):
        for name, ideal in (("gt", ideal_gt), ("ret", ideal_ret)):
            idcg = dcg(ideal, exponential)
            value = dcg(gains[:n], exponential) / idcg if idcg > 0 else 0.0
            out[f"ndcg_{'exp' if exponential else 'lin'}_{name}"] = value
    return out


def fast_metrics(j: Judgments, k: int | None) -> dict[str, float]:
    out = {
        "ap_relevant": F.average_precision(j, k),
        "ap_hits": F.average_precision(j, k, ap_denominator="hits"),
        "ap_any": F.average_precision(j, k, ap_denominator="hits", ap_credit="any"),
        "rr": F.reciprocal_rank(j, k),
        "hit_rate": F.hit_rate(j, k),
        "precision_k": F.precision(j, k),
        "precision_n": F.precision(j, k, precision_denominator="retrieved"),
        "recall": F.recall(j, k),
        "context_precision": F.context_precision(j, k),
        "context_recall": F.context_recall(j, k),
    }
    for gain, g in (("linear", "lin"), ("exponential", "exp")):
        for ideal, i in (("ground_truth", "gt"), ("retrieved", "ret")):
            out[f"ndcg_{g}_{i}"] = F.ndcg(j, k, gain=gain, ideal=ideal)
    return out


@st.composite
def matrices(draw: st.DrawFn) -> tuple[list[list[bool]], int, list[float] | None]:
    n = draw(st.integers(0, 7))
    m = draw(st.integers(0, 6))
    matrix = [[draw(st.booleans()) for _ in range(m)] for _ in range(n)]
    grades = draw(st.none() | st.lists(st.sampled_from(GRADES), min_size=m, max_size=m))
    return matrix, m, grades


@settings(max_examples=300)
@given(case=matrices())
def test_judge_matrix_equals_reference(case: tuple) -> None:
    matrix, m, grades = case
    array = np.array(matrix, dtype=bool).reshape(len(matrix), m)
    judgments = judge_matrix(array, grades)
    ref = reference_judgments(matrix, m, grades)
    assert {name: getattr(judgments, name) for name in ref} == ref
    # Greedy credit is decided rank by rank: a shorter list gets the prefix of the judgments.
    for p in range(len(matrix) + 1):
        prefix = judge_matrix(array[:p], grades)
        assert prefix.hits == judgments.hits[:p]
        assert prefix.gains == judgments.gains[:p]
        assert prefix.relevant == judgments.relevant[:p]
    if m:
        for k in (None, *range(1, len(matrix) + 3)):
            assert fast_metrics(judgments, k) == reference_metrics(ref, k), k


@settings(max_examples=100)
@given(case=matrices())
def test_greedy_credit_is_a_maximal_matching(case: tuple) -> None:
    # Brute force over every assignment: greedy credit is a matching (never more hits than a
    # maximum matching) and a maximal one (so at least half of a maximum matching).
    matrix, m, grades = case
    judgments = judge_matrix(np.array(matrix, dtype=bool).reshape(len(matrix), m), grades)
    best = maximum_matching(matrix, m)
    hits = sum(judgments.hits)
    assert hits <= best <= 2 * hits
    if grades is None or len(set(grades)) <= 1:
        # Ungraded, greedy credit with augmenting paths is a maximum matching.
        assert hits == best
    assert all(
        relevant for hit, relevant in zip(judgments.hits, judgments.relevant, strict=True) if hit
    )


def maximum_matching(matrix: list[list[bool]], m: int) -> int:
    """Size of a maximum bipartite matching, by trying every assignment (small inputs only)."""
    n = len(matrix)
    best = 0

    def extend(i: int, used: frozenset[int], size: int) -> None:
        nonlocal best
        if size + (n - i) <= best:
            return
        if i == n:
            best = max(best, size)
            return
        extend(i + 1, used, size)
        for j in range(m):
            if matrix[i][j] and j not in used:
                extend(i + 1, used | {j}, size + 1)

    extend(0, frozenset(), 0)
    return best


@pytest.mark.parametrize("policy", ["zero", "skip"])
@settings(max_examples=30)
@given(retrieved=retrieved_texts)
def test_empty_ground_truth_policy(policy: str, retrieved: list[str]) -> None:
    expected = 0.0 if policy == "zero" else None
    for strategy in CHUNK_STRATEGIES:
        scores = RankedRetrievalMetrics(strategy, empty_ground_truth=policy)(
            retrieved_context=retrieved, ground_truth_context=[]
        )
        assert scores == dict.fromkeys(scores, expected)
        scores = PrecisionRecallF1(strategy, empty_ground_truth=policy)(
            retrieved_context=retrieved, ground_truth_context=[]
        )
        assert scores == dict.fromkeys(scores, expected)
