"""The measures users know from trec_eval, ranx and llama-index (issue 12): values computed by
hand from their definitions, hypothesis properties (bounds, ideal rankings), the spec names
each tool uses, and the aggregates that are not means (trec_eval's counts, gm_map)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator, evaluate_run, parse_measure
from ctxeval.foundation.errors import SpecError
from ctxeval.judging.judgments import judge_ids, judge_matrix
from ctxeval.metrics.measures import MEASURES, RECALL_LEVELS, make_measure
from ctxeval.metrics.reference import power_by_squaring, recall_cutoff


def value(spec: str, retrieved: list[str], qrels: dict[str, int], level: float = 1) -> float:
    return parse_measure(spec)(judge_ids(retrieved, qrels, relevance_level=level))


# One ranking for the hand computations: relevant a (grade 2), b, c (grade 1), d not retrieved;
# x judged non-relevant (0), y and z unjudged, w "in the pool, unjudged" (-1).
RANKING = ["x", "a", "y", "b", "w", "z", "c"]
QRELS = {"a": 2, "b": 1, "c": 1, "d": 1, "x": 0, "e": 0, "w": -1}


def test_r_precision_by_hand() -> None:
    # R = 4: the top 4 hold a and b.
    assert value("Rprec", RANKING, QRELS) == 2 / 4
    assert value("r_precision@2", RANKING, QRELS) == 1 / 4  # the list cut at 2 first
    assert value("r-precision", ["a"], {"a": 1, "b": 1}) == 1 / 2
    assert value("Rprec", RANKING, QRELS, level=2) == 0.0  # R = 1 (a), ranked second


def test_bpref_by_hand() -> None:
    # R = 4, judged non-relevant: x and e, so min(2, R) = 2. x is above a, b and c; w (-1) and
    # the unjudged documents are skipped: a, b, c each lose 1/2; d is not retrieved.
    assert value("bpref", RANKING, QRELS) == (0.5 + 0.5 + 0.5) / 4
    assert value("bpref", ["a", "x", "b"], QRELS) == (1.0 + 0.5) / 4
    # Level 2: only a is relevant (R = 1); b, c, d, x, e are non-relevant (min(5, 1) = 1).
    assert value("bpref", RANKING, QRELS, level=2) == 0.0
    assert value("bpref", ["a", "x"], QRELS, level=2) == 1.0


def test_bpref_in_text_mode_judges_every_unmatched_unit() -> None:
    # No qrels: every unit matching nothing is non-relevant, and there are at least R of them.
    matrix = judge_matrix(np.array([[False, False], [True, False], [False, True]], dtype=bool))
    assert make_measure("bpref")(matrix) == ((1 - 1 / 2) + (1 - 1 / 2)) / 2


def test_iprec_at_recall_by_hand() -> None:
    # Hits at ranks 2, 4, 7 of R = 4: precision there 1/2, 2/4, 3/7.
    ranks = {0.0: 1 / 2, 0.1: 1 / 2, 0.3: 1 / 2, 0.5: 1 / 2, 0.6: 3 / 7, 0.8: 0.0, 1.0: 0.0}
    for level, expected in ranks.items():
        assert value(f"iprec_at_recall_{level:.2f}", RANKING, QRELS) == expected, level
    # trec_eval 9 and pytrec_eval: 0.4 * 3 + 0.9 -> 2 hits; trec_eval 10: lround(1.2) -> 1.
    assert recall_cutoff(0.4, 3) == 2
    assert recall_cutoff(0.4, 3, "trec_eval10") == 1
    assert recall_cutoff(0.5, 3, "trec_eval10") == 2  # halves round up, as lround
    late = ["x", "a", "y", "b", "c"]  # hits at 2, 4, 5 of R = 3
    assert value("iprec_at_recall(recall=0.4)", late, {"a": 1, "b": 1, "c": 1}) == 3 / 5
    spec = "iprec_at_recall(recall=0.4, recall_rounding='trec_eval10')"
    assert value(spec, late, {"a": 1, "b": 1, "c": 1}) == 3 / 5  # max over ranks 2..5
    assert value(spec, ["a", "x", "x2", "b"], {"a": 1, "b": 1, "c": 1}) == 1.0


def test_dcg_by_hand() -> None:
    # Gains 2 (rank 2), 1 (rank 4), 1 (rank 7).
    linear = 2 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(8)
    assert value("dcg", RANKING, QRELS) == linear
    assert value("dcg@3", RANKING, QRELS) == 2 / math.log2(3)
    burges = 3 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(8)
    assert value("dcg_burges", RANKING, QRELS) == burges


def test_rbp_by_hand() -> None:
    # (1 - p) * sum of grade * p^(rank - 1): grades 2, 1, 1 at ranks 2, 4, 7.
    p = 0.8
    expected = (1 - p) * (2 * p + 1 * (p * p * p) + 1 * ((p * p) * (p * p) * (p * p)))
    assert math.isclose(value("rbp.8", RANKING, QRELS), expected, rel_tol=1e-15)
    assert value("rbp(persistence=0.5)", ["a"], {"a": 1}) == 0.5
    assert power_by_squaring(0.8, 4) == (0.8 * 0.8) * (0.8 * 0.8) != 0.8**4


# llama-index's MRR(use_granular_mrr=True) (llama-index-core, evaluation/retrieval/metrics.py):
# the sum of 1 / (index + 1) over the retrieved ids in the expected set, divided by their
# number. The first three cases are its own tests' (tests/evaluation/test_metrics.py).
LLAMA_GRANULAR_MRR = [
    (["id1", "id2", "id3"], ["id3", "id1", "id2", "id4"], (1 / 1 + 1 / 2 + 1 / 3) / 3),
    (["id1", "id2", "id3", "id4"], ["id1", "id2", "id5"], (1 / 1 + 1 / 2) / 2),
    (["id1", "id2"], ["id1", "id7", "id15", "id2"], (1 / 1 + 1 / 4) / 2),
    (["id1", "id2"], ["id3", "id4"], 0.0),
    # A repeated id counts again there: ranks 2 and 3 both count.
    (["id1"], ["id9", "id1", "id1"], (1 / 2 + 1 / 3) / 2),
]


@pytest.mark.parametrize(("expected_ids", "retrieved_ids", "score"), LLAMA_GRANULAR_MRR)
def test_granular_mrr_reproduces_llama_index(
    expected_ids: list[str], retrieved_ids: list[str], score: float
) -> None:
    qrels = dict.fromkeys(expected_ids, 1)
    assert value("granular_mrr", retrieved_ids, qrels) == score
    assert value("reciprocal_rank(granular=True)", retrieved_ids, qrels) == score


def test_counts_by_hand() -> None:
    assert value("num_ret", RANKING, QRELS) == 7.0
    assert value("num_ret@3", RANKING, QRELS) == 3.0
    assert value("num_rel", RANKING, QRELS) == 4.0
    assert value("num_rel_ret", RANKING, QRELS) == 3.0
    assert value("num_q", RANKING, QRELS) == 1.0
    assert value("gm_map", RANKING, QRELS) == value("map", RANKING, QRELS)


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("Rprec", "r_precision"),
        ("r-precision", "r_precision"),
        ("iprec_at_recall_0.50", "iprec_at_recall(recall=0.5)"),
        ("iprec_at_recall_1.00@10", "iprec_at_recall(recall=1.0)@10"),
        ("rbp.95", "rbp(persistence=0.95)"),
        ("dcg_burges@10", "dcg(gain='exponential')@10"),
        ("granular_mrr", "reciprocal_rank(granular=True)"),
        ("recip_rank", "reciprocal_rank"),
        ("P_1000", "precision@1000"),
    ],
)
def test_tool_names(spec: str, canonical: str) -> None:
    assert str(parse_measure(spec)) == canonical


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("iprec_at_recall", "iprec_at_recall needs recall=..."),
        ("rbp", "rbp needs persistence=..."),
        ("rbp.7", "persistence=0.7 is not valid"),
        ("iprec_at_recall(recall=0.25)", "recall=0.25 is not valid"),
        ("reciprocal_rank(granular='yes')", "granular='yes' is not valid"),
    ],
)
def test_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_measure(spec)


UNIT_INTERVAL = [
    "r_precision",
    "bpref",
    *(f"iprec_at_recall(recall={level!r})" for level in RECALL_LEVELS),
    "rbp(persistence=0.9)",
    "reciprocal_rank(granular=True)",
    "gm_map",
]
docs = st.sampled_from(list("abcdefghij"))
binary_qrels = st.dictionaries(docs, st.sampled_from([-1, 0, 1]), max_size=8)


@settings(max_examples=200, deadline=None)
@given(retrieved=st.lists(docs, max_size=10), qrels=binary_qrels, k=st.sampled_from([None, 3]))
def test_bounds(retrieved: list[str], qrels: dict[str, int], k: int | None) -> None:
    judged = judge_ids(retrieved, qrels)
    for spec in UNIT_INTERVAL:
        assert 0.0 <= parse_measure(spec).at(k)(judged) <= 1.0, spec
    assert parse_measure("dcg").at(k)(judged) >= 0.0


@settings(max_examples=100, deadline=None)
@given(qrels=binary_qrels, unjudged=st.lists(st.sampled_from(["u1", "u2"]), unique=True))
def test_ideal_rankings_score_one(qrels: dict[str, int], unjudged: list[str]) -> None:
    relevant = [doc for doc, grade in qrels.items() if grade >= 1]
    others = [doc for doc, grade in qrels.items() if grade < 1]
    judged = judge_ids(relevant + others + unjudged, qrels)
    expected = 1.0 if relevant else 0.0
    for spec in ["r_precision", "bpref", *(s for s in UNIT_INTERVAL if "iprec" in s)]:
        assert parse_measure(spec)(judged) == expected, spec
    # RBP of an ideal binary ranking: 1 - p^R, its largest possible value.
    rbp = parse_measure("rbp(persistence=0.5)")(judged)
    assert math.isclose(rbp, 1 - 0.5 ** len(relevant), rel_tol=1e-12)


def test_every_new_measure_is_registered_with_both_definitions() -> None:
    for name in ("r_precision", "bpref", "iprec_at_recall", "dcg", "rbp", "gm_map"):
        assert name in MEASURES
    assert MEASURES["gm_map"].aggregate == "geometric"
    assert {MEASURES[n].aggregate for n in ("num_q", "num_ret", "num_rel", "num_rel_ret")} == {
        "sum"
    }


def run_aggregate(run: dict, qrels: dict, folder: Path, measures: list[str]) -> dict:
    run_path, qrels_path = folder / "run.trec", folder / "qrels.txt"
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s} t\n" for q, docs in run.items() for i, (d, s) in enumerate(docs)
        )
    )
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, grades in qrels.items() for d, g in grades.items())
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = RetrievalEvaluator.from_trec(run_path, qrels_path, measures, workers=1).run()
    return dict(result.aggregate)


def test_counts_are_summed_and_gm_map_is_geometric(tmp_path: Path) -> None:
    run = {"q1": [("a", 2.0), ("x", 1.0)], "q2": [("x", 1.0), ("b", 0.5)]}
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}, "q3": {"d": 1}}
    got = run_aggregate(run, qrels, tmp_path, ["num_q", "num_ret", "num_rel", "gm_map", "map"])
    # q3 is judged but not in the run: it counts, with nothing retrieved (trec_eval -c).
    assert got["num_q"] == 3.0
    assert got["num_ret"] == 4.0
    assert got["num_rel"] == 4.0
    aps = [1.0, (1 / 2) / 2, 0.0]
    assert got["average_precision"] == sum(aps) / 3
    logs = [math.log(max(ap, 1e-5)) for ap in aps]
    assert math.isclose(got["gm_map"], math.exp(sum(logs) / 3), rel_tol=1e-15)


def test_max_retrieved_keeps_the_first_documents(tmp_path: Path) -> None:
    folder = tmp_path
    (folder / "run.trec").write_text("q Q0 x 1 3 t\nq Q0 a 2 2 t\nq Q0 b 3 1 t\n")
    (folder / "qrels.txt").write_text("q 0 a 1\nq 0 b 1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = RetrievalEvaluator.from_trec(
            folder / "run.trec", folder / "qrels.txt", ["num_ret", "recall"], max_retrieved=2
        )
        got = evaluator.run().aggregate
    assert got == {"num_ret": 2.0, "recall": 0.5}
    evaluated = evaluate_run({"q": {"x": 3.0, "a": 2.0}}, {"q": {"a": 1, "b": 1}}, ["recall"])
    assert evaluated["q"]["recall"] == 0.5


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.dictionaries(docs, st.sampled_from([0.0, 0.5, 1.0, 2.0]), max_size=8),
            st.dictionaries(docs, st.sampled_from([0, 1, 2, 0.5, 3]), max_size=6),
            st.booleans(),  # with or without scores
        ),
        min_size=1,
        max_size=5,
    ),
    k=st.sampled_from([None, 1, 2, 3, 5]),
    gain=st.sampled_from(["linear", "exponential"]),
    ideal=st.sampled_from(["ground_truth", "retrieved"]),
)
def test_tie_averaging_reference_equals_core(
    records: list[tuple[dict[str, float], dict[str, float], bool]],
    k: int | None,
    gain: str,
    ideal: str,
) -> None:
    from ctxeval.judging.batch import stack_judgments
    from ctxeval.metrics.runs import rank_documents, tie_ends

    judged = []
    for scores, grades, scored in records:
        ranked = rank_documents(scores)
        groups = tie_ends(scores, ranked) if scored else None
        judged.append(judge_ids(ranked, grades, tie_ends=groups))
    measure = make_measure("ndcg", k, gain=gain, ideal=ideal, ties="average")
    assert measure.values(stack_judgments(judged)).tolist() == [measure(j) for j in judged]
