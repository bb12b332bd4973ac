"""ctxeval.evaluate_run against trec_eval (through pytrec_eval), per query, with exact equality.

trec_eval's conventions that matter here, each exercised below:
- ranking: score descending, ties broken by docno descending (strcmp), which is not numeric
  order ("d9" ranks above "d10" in a tie);
- a query in the qrels but missing from the run is left out of pytrec_eval's output (trec_eval
  without ``-c``); ctxeval's default ``missing_queries="zero"`` scores it 0 (``-c``) and warns;
- a query in the run but not in the qrels is ignored by both (ctxeval warns);
- grades below ``relevance_level`` (``-l``) are non-relevant for the binary measures.

Every measure is summed rank by rank in the same order as trec_eval (see
ctxeval.metrics.reference), so equality is exact, not approximate.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import ConventionWarning, evaluate_run, parse_measure

pytrec_eval = pytest.importorskip("pytrec_eval")


CUTOFFS = (1, 2, 3, 5, 10)
TREC_MEASURES = {
    "map",
    "ndcg",
    "recip_rank",
    *(
        f"{name}.{','.join(map(str, CUTOFFS))}"
        for name in ("P", "recall", "ndcg_cut", "success", "map_cut")
    ),
}
# pytrec_eval's output keys, which ctxeval accepts as measure specs as they are; its results are
# keyed by each spec's canonical form, key(spec) (P_5 -> precision@5).
MEASURE_KEYS = [
    "map",
    "ndcg",
    "recip_rank",
    *(f"{name}_{k}" for name in ("P", "recall", "ndcg_cut", "success", "map_cut") for k in CUTOFFS),
]
NDCG_KEYS = [name for name in MEASURE_KEYS if name.startswith("ndcg")]


def key(spec: str) -> str:
    """evaluate_run's result key for a spec: its canonical form (recip_rank -> reciprocal_rank)."""
    return str(parse_measure(spec))


# Doc ids whose string order differs from numeric order, upper case before lower case, and
# non-ASCII (UTF-8 byte order equals code-point order, so strcmp and Python agree).
DOC_IDS = ["d1", "d2", "d9", "d10", "d100", "D3", "a", "b", "B", "9", "10", "100", "é", "z", "zz"]
QUERY_IDS = ["q1", "q2", "q3", "q4"]

# Few distinct scores, so ties are common.
scores = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.25])
rankings = st.dictionaries(st.sampled_from(DOC_IDS), scores, max_size=12)
judgments = st.dictionaries(st.sampled_from(DOC_IDS), st.integers(0, 3), min_size=1, max_size=10)


@st.composite
def runs_and_qrels(draw: st.DrawFn) -> tuple[dict, dict]:
    judged_qids = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, unique=True))
    qrels = {qid: draw(judgments) for qid in judged_qids}
    # Some judged queries are missing from the run; the run may have an unjudged query.
    run_qids = draw(st.lists(st.sampled_from([*QUERY_IDS, "q_unjudged"]), unique=True))
    run = {qid: draw(rankings) for qid in run_qids}
    return run, qrels


def evaluate_with_warnings(
    run: dict, qrels: dict, measures: list[str], **options: object
) -> tuple[dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_run(run, qrels, measures, **options)
    assert all(issubclass(w.category, ConventionWarning) for w in caught), caught
    return result, [str(w.message) for w in caught]


def trec_eval(run: dict, qrels: dict, relevance_level: int = 1) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, TREC_MEASURES, relevance_level=relevance_level
    )
    return evaluator.evaluate(run)


def ties_change_scores(ranking: Mapping[str, float], judged: Mapping[str, int]) -> bool:
    # Tied documents with different gains (grade 0 and unjudged alike) can trade places.
    by_score: dict[float, set[int]] = {}
    for doc, score in ranking.items():
        by_score.setdefault(score, set()).add(max(judged.get(doc, 0), 0))
    return any(len(grades) > 1 for grades in by_score.values())


def check_against_trec_eval(run: dict, qrels: dict, keys: list[str], relevance_level: int) -> None:
    expected = trec_eval(run, qrels, relevance_level)
    got, messages = evaluate_with_warnings(run, qrels, keys, relevance_level=relevance_level)

    common = set(qrels) & set(run)
    assert set(expected) == common  # pytrec_eval: judged queries that are in the run
    for qid in common:
        for name in keys:
            assert got[qid][key(name)] == expected[qid][name], (qid, name, run[qid], qrels[qid])

    missing = set(qrels) - set(run)
    assert set(got) == common | missing
    for qid in missing:  # trec_eval -c: a judged query without results scores 0
        assert got[qid] == dict.fromkeys(map(key, keys), 0.0)
    assert any("no results in the run" in m for m in messages) == bool(missing)
    assert any("no relevance judgments" in m for m in messages) == bool(set(run) - set(qrels))
    tied = any(ties_change_scores(run[q], qrels[q]) for q in common)
    assert any("equal scores" in m for m in messages) == tied


@settings(max_examples=300)
@given(data=runs_and_qrels())
def test_evaluate_run_equals_trec_eval(data: tuple[dict, dict]) -> None:
    run, qrels = data
    check_against_trec_eval(run, qrels, MEASURE_KEYS, relevance_level=1)


@pytest.mark.parametrize("relevance_level", [2, 3])
@settings(max_examples=150)
@given(data=runs_and_qrels())
def test_relevance_level_equals_trec_eval(relevance_level: int, data: tuple[dict, dict]) -> None:
    # trec_eval -l changes the binary measures only; its ndcg keeps every positive grade as a
    # gain. ctxeval follows it (docs/decisions.md), so every measure is compared.
    run, qrels = data
    check_against_trec_eval(run, qrels, MEASURE_KEYS, relevance_level)


def test_relevance_level_keeps_lower_grades_as_ndcg_gains() -> None:
    qrels = {"q": {"a": 1, "b": 2, "c": 3, "d": 0}}
    run = {"q": {"a": 5.0, "b": 4.0, "c": 1.0, "d": 6.0, "e": 3.0}}
    # By hand, ranking d a b e c: gains 0 1 2 0 3 (grade 1 still counts at -l 2), ideal 3 2 1.
    dcg = 1 / math.log2(3) + 2 / math.log2(4) + 3 / math.log2(6)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    expected = trec_eval(run, qrels, relevance_level=2)["q"]
    assert math.isclose(expected["ndcg"], dcg / idcg, rel_tol=1e-15)
    got = evaluate_run(run, qrels, ["ndcg", "map", "P_2"], relevance_level=2)["q"]
    assert got["ndcg"] == expected["ndcg"]
    # Binary measures: relevant are b (rank 3) and c (rank 5), by hand (1/3 + 2/5) / 2.
    assert got["average_precision"] == expected["map"] == (1 / 3 + 2 / 5) / 2
    assert got["precision@2"] == expected["P_2"] == 0.0


def test_ties_between_different_grades_warn() -> None:
    # Both documents are relevant, so only their grades differ: the tie order still moves NDCG,
    # and at relevance_level=2 the binary measures too.
    run = {"q": {"a": 1.0, "b": 1.0}}
    qrels = {"q": {"a": 1, "b": 2}}
    with pytest.warns(ConventionWarning, match="equal scores"):
        by_trec = evaluate_run(run, qrels, ["ndcg", "P_1"], relevance_level=2)["q"]
    with pytest.warns(ConventionWarning, match="equal scores"):
        by_input = evaluate_run(run, qrels, ["ndcg", "P_1"], relevance_level=2, ties="input")["q"]
    # By hand: trec_eval order b, a is the ideal one; input order a, b is not.
    assert by_trec == {"ndcg": 1.0, "precision@1": 1.0}
    assert by_input == {
        "ndcg": (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)),
        "precision@1": 0.0,
    }
    expected = trec_eval(run, qrels, relevance_level=2)["q"]
    assert by_trec == {"ndcg": expected["ndcg"], "precision@1": expected["P_1"]}


def long_run(seed: int, distinct_scores: int | None) -> tuple[dict, dict]:
    """300 queries of 0-150 documents, up to ~60 judged each (most of them retrieved, grades
    0-3): sums of dozens of terms, where the order of the additions shows in the last bits.
    ``distinct_scores``: how many score values a query uses (ties), None for unique scores."""
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(300):
        docs = [f"d{x}" for x in rng.sample(range(100_000), rng.randint(0, 150))]
        if distinct_scores is None:
            run[f"q{q}"] = {doc: rng.uniform(-5.0, 40.0) for doc in docs}
        else:
            run[f"q{q}"] = {doc: rng.randrange(distinct_scores) / 3 for doc in docs}
        judged = {doc: rng.choice([0, 1, 1, 2, 3]) for doc in docs if rng.random() < 0.4}
        judged.update((f"d{rng.randrange(100_000)}", rng.randint(0, 3)) for _ in range(3))
        qrels[f"q{q}"] = judged
    return run, qrels


@pytest.mark.parametrize("relevance_level", [1, 2])
@pytest.mark.parametrize(("seed", "distinct_scores"), [(1, None), (2, 12), (3, 3)])
def test_long_runs_equal_trec_eval(
    seed: int, distinct_scores: int | None, relevance_level: int
) -> None:
    run, qrels = long_run(seed, distinct_scores)
    expected = trec_eval(run, qrels, relevance_level)
    got, _ = evaluate_with_warnings(run, qrels, MEASURE_KEYS, relevance_level=relevance_level)
    assert set(got) == set(expected) == set(qrels)
    for qid, values in expected.items():
        for name in MEASURE_KEYS:
            assert got[qid][key(name)] == values[name], (qid, name)


# --------------------------------------------------------------------------------------------
# Hand-built cases for the conventions the generated data hits only by chance.


def test_ties_break_by_docid_descending_as_strings() -> None:
    # All tied: trec_eval ranks z, d9, d10, d1 (strcmp descending: "d9" > "d10" > "d1").
    run = {"q": {"d1": 1.0, "d10": 1.0, "d9": 1.0, "z": 1.0}}
    qrels = {"q": {"d9": 1, "d10": 0, "d1": 0, "z": 0}}
    expected = trec_eval(run, qrels)["q"]
    with pytest.warns(ConventionWarning, match="equal scores"):
        got = evaluate_run(run, qrels, ["recip_rank", "P_1", "P_2"])["q"]
    assert expected["recip_rank"] == 0.5  # by hand: d9 is second
    assert got == {"reciprocal_rank": 0.5, "precision@1": 0.0, "precision@2": 0.5}
    assert got["precision@2"] == expected["P_2"]


def test_queries_with_only_grade_zero_judgments() -> None:
    run = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"a": 1.0}}
    qrels = {"q1": {"a": 0, "b": 0}, "q2": {"a": 1}}
    expected = trec_eval(run, qrels)
    got, messages = evaluate_with_warnings(run, qrels, MEASURE_KEYS)
    assert messages == []
    for name in MEASURE_KEYS:
        assert got["q1"][key(name)] == expected["q1"][name] == 0.0
        assert got["q2"][key(name)] == expected["q2"][name]


def test_missing_query_scores_zero_and_warns() -> None:
    run = {"q1": {"a": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1, "b": 2}}
    assert set(trec_eval(run, qrels)) == {"q1"}  # pytrec_eval leaves q2 out
    with pytest.warns(ConventionWarning, match=r"1 query\(ies\) in the qrels .* scored 0"):
        got = evaluate_run(run, qrels, ["map", "ndcg_cut_10", "P_5"])
    assert got["q2"] == {"average_precision": 0.0, "ndcg@10": 0.0, "precision@5": 0.0}
    assert got["q1"] == {"average_precision": 1.0, "ndcg@10": 1.0, "precision@5": 0.2}


def test_empty_ranking_for_a_judged_query() -> None:
    # An empty result list is not a missing query: trec_eval reports it, with zeros.
    run = {"q1": {}, "q2": {"a": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    expected = trec_eval(run, qrels)
    got, messages = evaluate_with_warnings(run, qrels, MEASURE_KEYS)
    assert messages == []
    assert set(expected) == {"q1", "q2"}
    for name in MEASURE_KEYS:
        assert got["q1"][key(name)] == expected["q1"][name] == 0.0
        assert got["q2"][key(name)] == expected["q2"][name]


def test_ranked_lists_equal_the_scores_they_come_from() -> None:
    # {qid: [docs]} is taken as already ranked: the trec_eval order of the scored run.
    run = {"q": {"d1": 2.0, "d10": 2.0, "d9": 1.0, "a": 3.0, "b": 1.0}}
    qrels = {"q": {"d10": 2, "b": 1, "x": 3}}
    ranked = {"q": ["a", "d10", "d1", "d9", "b"]}  # by hand: ties by docid descending
    expected = trec_eval(run, qrels)["q"]
    got = evaluate_run(ranked, qrels, MEASURE_KEYS)["q"]
    assert got == {key(name): expected[name] for name in MEASURE_KEYS}
