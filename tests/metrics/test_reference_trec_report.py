"""trec_eval's default report, measure by measure, against trec_eval itself (pytrec_eval), per
query and with exact equality: num_ret, num_rel, num_rel_ret, map, gm_map, Rprec, bpref,
recip_rank, iprec_at_recall_0.00 ... 1.00 and P_5 ... P_1000.

Generated runs have ties (few distinct scores), documents that the qrels do not judge, judged
non-relevant documents (grade 0) and documents "in the pool but unjudged" (grade -1, which
trec_eval's bpref skips), queries whose qrels hold no relevant document, and relevance levels 1
and 2 (``-l``). The whole-report file comparison (summary lines, -q, -M) is in
tests/cli/test_trec_eval_report.py.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import evaluate_run
from ctxeval.cli.trec_eval import DEFAULT_MEASURES
from ctxeval.io.trec import read_trec_qrels, read_trec_run

pytrec_eval = pytest.importorskip("pytrec_eval")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trec_eval"
TREC_NAMES = {"num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"}
TREC_NAMES |= {"recip_rank", "iprec_at_recall", "P"}
# trec_eval name -> ctxeval column, for every per-query line of the default report.
COLUMNS = {name: column for name, column in DEFAULT_MEASURES if name != "num_q"}

DOC_IDS = ["d1", "d2", "d9", "d10", "d100", "D3", "a", "b", "B", "9", "10", "é", "z", "zz"]
scores = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.25])
rankings = st.dictionaries(st.sampled_from(DOC_IDS), scores, min_size=1, max_size=12)
grades = st.dictionaries(st.sampled_from(DOC_IDS), st.integers(-1, 3), min_size=1, max_size=10)


def trec_eval(run: dict, qrels: dict, level: int) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_NAMES, relevance_level=level)
    return evaluator.evaluate(run)


def ctxeval(run: dict, qrels: dict, level: float) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ties, missing and unjudged queries are noted
        return evaluate_run(run, qrels, list(COLUMNS.values()), relevance_level=level)


def as_trec_eval(name: str, value: float) -> float:
    # pytrec_eval reports gm_map per query as log(max(AP, 1e-5)), the term of its geometric
    # mean; ctxeval's per-query gm_map is the AP itself.
    return math.log(max(value, 1e-5)) if name == "gm_map" else value


def assert_equal(run: dict, qrels: dict, level: int) -> None:
    expected = trec_eval(run, qrels, level)
    got = ctxeval(run, qrels, level)
    assert expected, "pytrec_eval evaluated no query: the comparison would be empty"
    for qid, values in expected.items():
        for name, column in COLUMNS.items():
            assert as_trec_eval(name, got[qid][column]) == values[name], (qid, name)


@settings(max_examples=150, deadline=None)
@given(
    run=st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), rankings, min_size=1),
    qrels=st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), grades, min_size=1),
    level=st.sampled_from([1, 2]),
)
def test_default_report_equals_trec_eval(run: dict, qrels: dict, level: int) -> None:
    if not set(run) & set(qrels):
        run = {next(iter(qrels)): next(iter(run.values()))}
    assert_equal(run, qrels, level)


@pytest.mark.parametrize(
    ("qrels_file", "level"), [("qrels.test", 1), ("qrels.rel_level", 1), ("qrels.rel_level", 2)]
)
def test_trec_eval_test_files(qrels_file: str, level: int) -> None:
    # trec_eval's own test data: 3 queries of 500 documents, ~3,000 judgments.
    run = read_trec_run(FIXTURES / "results.test")
    qrels = read_trec_qrels(FIXTURES / qrels_file)
    assert_equal(run, qrels, level)


def test_a_query_without_relevant_documents() -> None:
    # Every measure is 0 (gm_map: its floor), as trec_eval's, for a query with judged but no
    # relevant documents.
    run = {"q": {"a": 2.0, "b": 1.0}}
    qrels = {"q": {"a": 0, "c": 0}}
    assert_equal(run, qrels, 1)
    got = ctxeval(run, qrels, 1)["q"]
    assert got["num_rel"] == got["bpref"] == got["r_precision"] == 0.0
    assert got["num_ret"] == 2.0
