"""Every worked example and practice problem of the seed documents, computed by hand.

The seeds are in /work/shared/seeds/:

- 001: an IR-metrics practice notebook (problems 3.1, 3.2, 4.1, 4.2 and the Q5-Q8 toy set);
- 002: continuous-eval's "Context Precision & Recall" page (one worked example);
- 003: an article on evaluating a chunking strategy (TP/FP/FN per query, macro vs micro);
- 004: "Information Retrieval Metrics 102: Order-Aware Metrics" (MRR, MAP, graded NDCG).

Each expected value is written from the definition as an arithmetic expression, next to the
seed and problem it comes from. Where the seeds disagree with each other or with design.md (the
AP denominator, the NDCG gain and ideal, ``>`` vs ``>=`` for thresholds), design.md gives the
default and each seed's own convention is tested through the option that names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean

import pytest

from ctxeval import (
    ExactChunkMatch,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RougeChunkMatch,
    RougeSentenceMatch,
    evaluate_run,
    parse_measure,
)
from ctxeval.judging.judgments import judge_ids
from ctxeval.metrics.reference import set_counts

# ---------------------------------------------------------------------------------------------
# Seed 001: the practice notebook. Its helpers define
#   P@K  = hits in top K / K           (divides by K even when fewer than K docs are ranked)
#   R@K  = hits in top K / |relevant|
#   AP   = mean of P@i over the ranks i of the relevant docs retrieved (whole list)
#          -> the "hits" denominator; design.md's default divides by |relevant| instead
#   RR   = 1 / rank of the first relevant doc, 0 if none
# The AP of both conventions is written out for every query.


@dataclass(frozen=True)
class NotebookQuery:
    ranked: list[int]
    relevant: list[int]
    p5: float
    p10: float
    r5: float
    r10: float
    ap_hits: float  # the notebook's average_precision (mean over the hits retrieved)
    ap_relevant: float  # trec_eval's AP (divided by the number of relevant docs)
    rr: float


NOTEBOOK: dict[str, NotebookQuery] = {
    # 001, Problem 3.1: relevant 2, 5, 8 at ranks 5, 6, 9; 14 is never retrieved.
    "Q1": NotebookQuery(
        ranked=[3, 9, 12, 7, 2, 5, 10, 4, 8, 1, 6, 11],
        relevant=[2, 5, 8, 14],
        p5=1 / 5,
        p10=3 / 10,
        r5=1 / 4,
        r10=3 / 4,
        ap_hits=(1 / 5 + 2 / 6 + 3 / 9) / 3,
        ap_relevant=(1 / 5 + 2 / 6 + 3 / 9) / 4,
        rr=1 / 5,
    ),
    # 001, Problem 3.2: relevant 6, 4, 9 at ranks 3, 4, 11 (all retrieved: both APs agree).
    "Q2": NotebookQuery(
        ranked=[1, 13, 6, 4, 8, 3, 10, 2, 5, 12, 9, 7],
        relevant=[4, 6, 9],
        p5=2 / 5,
        p10=2 / 10,
        r5=2 / 3,
        r10=2 / 3,
        ap_hits=(1 / 3 + 2 / 4 + 3 / 11) / 3,
        ap_relevant=(1 / 3 + 2 / 4 + 3 / 11) / 3,
        rr=1 / 3,
    ),
    # 001, Problem 4.1: relevant 11, 3, 8, 1 at ranks 6, 7, 9, 11.
    "Q3": NotebookQuery(
        ranked=[20, 2, 5, 17, 9, 11, 3, 7, 8, 6, 1, 4],
        relevant=[1, 3, 8, 11],
        p5=0 / 5,
        p10=3 / 10,
        r5=0 / 4,
        r10=3 / 4,
        ap_hits=(1 / 6 + 2 / 7 + 3 / 9 + 4 / 11) / 4,
        ap_relevant=(1 / 6 + 2 / 7 + 3 / 9 + 4 / 11) / 4,
        rr=1 / 6,
    ),
    # 001, Problem 4.2: the single relevant doc 2 at rank 3; only 9 docs ranked, P@10 still /10.
    "Q4": NotebookQuery(
        ranked=[9, 5, 2, 4, 1, 3, 6, 7, 8],
        relevant=[2],
        p5=1 / 5,
        p10=1 / 10,
        r5=1 / 1,
        r10=1 / 1,
        ap_hits=(1 / 3) / 1,
        ap_relevant=(1 / 3) / 1,
        rr=1 / 3,
    ),
    # 001, section 5 toy set, Q5: relevant 1, 2, 5 at ranks 2, 5, 6.
    "Q5": NotebookQuery(
        ranked=[3, 1, 6, 8, 2, 5, 9, 4, 7, 10],
        relevant=[1, 2, 5],
        p5=2 / 5,
        p10=3 / 10,
        r5=2 / 3,
        r10=3 / 3,
        ap_hits=(1 / 2 + 2 / 5 + 3 / 6) / 3,
        ap_relevant=(1 / 2 + 2 / 5 + 3 / 6) / 3,
        rr=1 / 2,
    ),
    # 001, section 5 toy set, Q6: relevant 11, 2 at ranks 1, 4.
    "Q6": NotebookQuery(
        ranked=[11, 4, 9, 2, 1, 7, 3, 6, 5, 8],
        relevant=[2, 11],
        p5=2 / 5,
        p10=2 / 10,
        r5=2 / 2,
        r10=2 / 2,
        ap_hits=(1 / 1 + 2 / 4) / 2,
        ap_relevant=(1 / 1 + 2 / 4) / 2,
        rr=1 / 1,
    ),
    # 001, section 5 toy set, Q7: relevant 14, 5, 6, 9 at ranks 1, 5, 8, 10.
    "Q7": NotebookQuery(
        ranked=[14, 12, 15, 1, 5, 2, 3, 6, 8, 9],
        relevant=[5, 6, 9, 14],
        p5=2 / 5,
        p10=4 / 10,
        r5=2 / 4,
        r10=4 / 4,
        ap_hits=(1 / 1 + 2 / 5 + 3 / 8 + 4 / 10) / 4,
        ap_relevant=(1 / 1 + 2 / 5 + 3 / 8 + 4 / 10) / 4,
        rr=1 / 1,
    ),
    # 001, section 5 toy set, Q8: "intentionally missing (no relevant retrieved)".
    "Q8": NotebookQuery(
        ranked=[21, 19, 17, 16, 18, 20, 22, 23, 24, 25],
        relevant=[30],
        p5=0 / 5,
        p10=0 / 10,
        r5=0 / 1,
        r10=0 / 1,
        ap_hits=0.0,  # the notebook returns 0 when no relevant doc is retrieved
        ap_relevant=0 / 1,
        rr=0.0,
    ),
}
TOY_SET = ("Q5", "Q6", "Q7", "Q8")  # 001, section 5


@pytest.mark.parametrize("qid", list(NOTEBOOK))
def test_notebook_precision_and_recall_at_5_and_10(qid: str) -> None:
    q = NOTEBOOK[qid]
    at5 = IDRankedRetrievalMetrics(k=5)(retrieved_ids=q.ranked, relevant_ids=q.relevant)
    at10 = IDRankedRetrievalMetrics(k=10)(retrieved_ids=q.ranked, relevant_ids=q.relevant)
    assert at5["precision"] == pytest.approx(q.p5, abs=1e-15)
    assert at5["recall"] == pytest.approx(q.r5, abs=1e-15)
    assert at10["precision"] == pytest.approx(q.p10, abs=1e-15)
    assert at10["recall"] == pytest.approx(q.r10, abs=1e-15)


@pytest.mark.parametrize("qid", list(NOTEBOOK))
def test_notebook_average_precision_and_reciprocal_rank(qid: str) -> None:
    q = NOTEBOOK[qid]
    notebook = IDRankedRetrievalMetrics(ap_denominator="hits")(
        retrieved_ids=q.ranked, relevant_ids=q.relevant
    )
    trec = IDRankedRetrievalMetrics()(retrieved_ids=q.ranked, relevant_ids=q.relevant)
    assert notebook["average_precision"] == pytest.approx(q.ap_hits, abs=1e-15)
    assert trec["average_precision"] == pytest.approx(q.ap_relevant, abs=1e-15)
    assert notebook["reciprocal_rank"] == trec["reciprocal_rank"] == pytest.approx(q.rr)


@pytest.mark.parametrize("qid", list(NOTEBOOK))
def test_notebook_in_text_mode_with_exact_match(qid: str) -> None:
    # The same problems with each doc id standing for a chunk of text, matched exactly.
    q = NOTEBOOK[qid]
    retrieved = [f"document {d}" for d in q.ranked]
    truth = [f"document {d}" for d in q.relevant]
    at5 = RankedRetrievalMetrics(ExactChunkMatch(), k=5, ap_denominator="hits")(
        retrieved_context=retrieved, ground_truth_context=truth
    )
    whole = RankedRetrievalMetrics(ExactChunkMatch(), ap_denominator="hits")(
        retrieved_context=retrieved, ground_truth_context=truth
    )
    assert at5["precision"] == pytest.approx(q.p5, abs=1e-15)
    assert at5["recall"] == pytest.approx(q.r5, abs=1e-15)
    assert whole["average_precision"] == pytest.approx(q.ap_hits, abs=1e-15)
    assert whole["reciprocal_rank"] == pytest.approx(q.rr, abs=1e-15)


def test_notebook_ap_is_the_continuous_eval_convention() -> None:
    # 001, Problem 3.1 (Q1) is the one notebook query where the conventions differ (14 missed):
    # the notebook's mean over the hits is what convention="continuous_eval" names.
    q = NOTEBOOK["Q1"]
    scores = IDRankedRetrievalMetrics(convention="continuous_eval")(
        retrieved_ids=q.ranked, relevant_ids=q.relevant
    )
    assert scores["average_precision"] == pytest.approx((1 / 5 + 2 / 6 + 3 / 9) / 3)
    assert q.ap_hits != pytest.approx(q.ap_relevant)


def test_notebook_p_at_10_divides_by_k_even_for_a_short_list() -> None:
    # 001, Problem 4.2 (Q4): 9 docs ranked; the notebook's precision_at_k divides by K = 10
    # (trec_eval P_10 too); precision_denominator="retrieved" divides by the 9 docs instead.
    q = NOTEBOOK["Q4"]
    by_k = IDRankedRetrievalMetrics(k=10)(retrieved_ids=q.ranked, relevant_ids=q.relevant)
    by_n = IDRankedRetrievalMetrics(k=10, precision_denominator="retrieved")(
        retrieved_ids=q.ranked, relevant_ids=q.relevant
    )
    assert by_k["precision"] == pytest.approx(1 / 10)
    assert by_n["precision"] == pytest.approx(1 / 9)


def key(spec: str) -> str:
    """evaluate_run's result key for a spec: its canonical form (P@5 -> precision@5)."""
    return str(parse_measure(spec))


def _notebook_run(qids: tuple[str, ...]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    run = {qid: NOTEBOOK[qid].ranked for qid in qids}
    qrels = {qid: NOTEBOOK[qid].relevant for qid in qids}
    return run, qrels


def test_notebook_every_query_through_evaluate_run() -> None:
    run, qrels = _notebook_run(tuple(NOTEBOOK))
    measures = ["P@5", "P@10", "recall@5", "recall@10", "map", "map(ap_denominator='hits')", "mrr"]
    results = evaluate_run(run, qrels, measures)
    assert set(results) == set(NOTEBOOK)
    for qid, q in NOTEBOOK.items():
        expected = [q.p5, q.p10, q.r5, q.r10, q.ap_relevant, q.ap_hits, q.rr]
        got = [results[qid][key(m)] for m in measures]
        assert got == pytest.approx(expected, abs=1e-15), qid


def test_notebook_toy_set_map_and_mrr() -> None:
    # 001, section 5: MAP = mean AP and MRR = mean RR over Q5-Q8, plus the summary's means.
    run, qrels = _notebook_run(TOY_SET)
    measures = ["map(ap_denominator='hits')", "map", "mrr", "P@5", "P@10", "recall@5", "recall@10"]
    results = evaluate_run(run, qrels, measures)
    per_query = {m: [results[qid][key(m)] for qid in TOY_SET] for m in measures}

    # The notebook's MAP (AP over the hits):
    notebook_map = (
        (1 / 2 + 2 / 5 + 3 / 6) / 3  # Q5
        + (1 / 1 + 2 / 4) / 2  # Q6
        + (1 / 1 + 2 / 5 + 3 / 8 + 4 / 10) / 4  # Q7
        + 0.0  # Q8
    ) / 4
    assert mean(per_query["map(ap_denominator='hits')"]) == pytest.approx(notebook_map)
    # Every relevant doc of Q5-Q7 is retrieved and Q8's AP is 0 either way, so trec_eval's
    # MAP agrees on this set.
    assert mean(per_query["map"]) == pytest.approx(notebook_map)
    assert mean(per_query["mrr"]) == pytest.approx((1 / 2 + 1 / 1 + 1 / 1 + 0) / 4)
    assert mean(per_query["P@5"]) == pytest.approx((2 / 5 + 2 / 5 + 2 / 5 + 0 / 5) / 4)
    assert mean(per_query["P@10"]) == pytest.approx((3 / 10 + 2 / 10 + 4 / 10 + 0 / 10) / 4)
    assert mean(per_query["recall@5"]) == pytest.approx((2 / 3 + 2 / 2 + 2 / 4 + 0 / 1) / 4)
    assert mean(per_query["recall@10"]) == pytest.approx((3 / 3 + 2 / 2 + 4 / 4 + 0 / 1) / 4)


def test_notebook_first_relevant_rank_plot() -> None:
    # 001, section 7 plots the rank of the first relevant doc of Q5-Q7 (Q8 has none): 2, 1, 1,
    # which is 1 / RR.
    ranks = []
    for qid in TOY_SET:
        q = NOTEBOOK[qid]
        rr = IDRankedRetrievalMetrics()(retrieved_ids=q.ranked, relevant_ids=q.relevant)[
            "reciprocal_rank"
        ]
        if rr > 0:
            ranks.append(round(1 / rr))
    assert ranks == [2, 1, 1]


# ---------------------------------------------------------------------------------------------
# Seed 002: continuous-eval's "Context Precision & Recall" page.

SEED_002_DATUM = {
    "retrieved_context": [
        "Paris is the capital of France and also the largest city in the country.",
        "Lyon is a major city in France.",
    ],
    "ground_truth_context": ["Paris is the capital of France."],
}


def test_continuous_eval_doc_example() -> None:
    # 002, "Example Usage": PrecisionRecallF1(RougeChunkMatch()) on the datum, documented output
    # {'context_precision': 0.5, 'context_recall': 1.0, 'context_f1': 0.6666666666666666}.
    # Ground truth tokens: paris is the capital of france (6).
    # Chunk 1 contains all six in order: ROUGE-L recall 6/6 >= 0.7, relevant.
    # Chunk 2 "lyon is a major city in france": LCS "is france", 2/6 < 0.7, not relevant.
    strategy = RougeChunkMatch()
    matches = strategy.match(
        SEED_002_DATUM["retrieved_context"], SEED_002_DATUM["ground_truth_context"]
    )
    assert matches.scores is not None
    assert matches.scores[:, 0].tolist() == [6 / 6, 2 / 6]
    precision, recall = 1 / 2, 1 / 1
    assert PrecisionRecallF1(strategy)(**SEED_002_DATUM) == {
        "context_precision": precision,
        "context_recall": recall,
        "context_f1": 2 * (precision * recall) / (precision + recall),
    }


def test_continuous_eval_doc_example_at_top_k() -> None:
    # 002, note "Precision / Recall / F1 @ top K": at K = 1 only the first (relevant) chunk
    # counts.
    scores = PrecisionRecallF1(RougeChunkMatch(), k=1)(**SEED_002_DATUM)
    assert scores == {"context_precision": 1 / 1, "context_recall": 1 / 1, "context_f1": 1.0}


def test_continuous_eval_default_thresholds() -> None:
    # 002, matching-strategy table: chunk threshold 0.7, sentence threshold 0.8 by default.
    assert RougeChunkMatch().threshold == 0.7
    assert RougeSentenceMatch().threshold == 0.8


THRESHOLD_GT = "one two three four five six seven eight nine ten"  # 10 tokens
THRESHOLD_CHUNK = "one two three four five six seven"  # LCS 7 -> recall 7 / 10, exactly 0.7


def test_threshold_is_inclusive_as_in_design() -> None:
    # 002's table says "ROUGE-L Recall > threshold"; design.md (and continuous-eval's own code,
    # `recall >= self.threshold`) say ">=". A recall of exactly 7/10 == 0.7 is a match.
    assert 7 / 10 == 0.7
    scores = PrecisionRecallF1(RougeChunkMatch(0.7))(
        retrieved_context=[THRESHOLD_CHUNK], ground_truth_context=[THRESHOLD_GT]
    )
    assert scores["context_recall"] == 1 / 1


def test_strict_threshold_of_the_doc_text_through_the_next_float() -> None:
    # No option spells the doc's strict ">", but for floats r > t is exactly r >= nextafter(t, 1)
    # so that threshold reproduces it: recall 0.7 is then not a match.
    strict = RougeChunkMatch(math.nextafter(0.7, 1.0))
    scores = PrecisionRecallF1(strict)(
        retrieved_context=[THRESHOLD_CHUNK], ground_truth_context=[THRESHOLD_GT]
    )
    assert scores["context_recall"] == 0 / 1


# ---------------------------------------------------------------------------------------------
# Seed 003: evaluating a chunking strategy. Gold and retrieved chunk ids per query
# ("Example Walkthrough"); the retrieved sets are taken in the order the article lists them.

SEED_003 = {
    "q1": {"gold": ["A", "B"], "retrieved": ["A", "C"]},
    "q2": {"gold": ["D"], "retrieved": ["D"]},
    "q3": {"gold": ["E", "F", "G"], "retrieved": ["F", "H", "I"]},
}
# 003, step 1: TP, FP, FN per query.
SEED_003_COUNTS = {"q1": (1, 1, 1), "q2": (1, 0, 0), "q3": (1, 2, 2)}
# 003, step 2: precision and recall per query, TP / (TP + FP) and TP / (TP + FN).
SEED_003_PR = {
    "q1": (1 / (1 + 1), 1 / (1 + 1)),
    "q2": (1 / (1 + 0), 1 / (1 + 0)),
    "q3": (1 / (1 + 2), 1 / (1 + 2)),
}


def _tp_fp_fn(retrieved: list[str], gold: list[str]) -> tuple[int, int, int]:
    c = set_counts(judge_ids(retrieved, dict.fromkeys(gold, 1)))
    return (
        c.relevant_retrieved,
        c.retrieved - c.relevant_retrieved,
        c.ground_truth - c.matched_ground_truth,
    )


@pytest.mark.parametrize("qid", list(SEED_003))
def test_chunking_counts_per_query(qid: str) -> None:
    q = SEED_003[qid]
    assert _tp_fp_fn(q["retrieved"], q["gold"]) == SEED_003_COUNTS[qid]


@pytest.mark.parametrize("qid", list(SEED_003))
def test_chunking_precision_recall_per_query(qid: str) -> None:
    q = SEED_003[qid]
    precision, recall = SEED_003_PR[qid]
    scores = IDPrecisionRecallF1()(retrieved_ids=q["retrieved"], relevant_ids=q["gold"])
    assert scores["context_precision"] == pytest.approx(precision)
    assert scores["context_recall"] == pytest.approx(recall)
    # 003, pitfall 5: F1 per query is the harmonic mean.
    assert scores["context_f1"] == pytest.approx(2 * precision * recall / (precision + recall))


@pytest.mark.parametrize("qid", list(SEED_003))
def test_chunking_text_mode_with_exact_match_equals_id_mode(qid: str) -> None:
    # The same chunks given as texts and matched exactly give the ID-mode numbers.
    q = SEED_003[qid]
    text = PrecisionRecallF1(ExactChunkMatch())(
        retrieved_context=[f"chunk {c}" for c in q["retrieved"]],
        ground_truth_context=[f"chunk {c}" for c in q["gold"]],
    )
    assert text == IDPrecisionRecallF1()(retrieved_ids=q["retrieved"], relevant_ids=q["gold"])


def test_chunking_macro_average() -> None:
    # 003, step 3: Precision_macro = (0.5 + 1.0 + 0.333...) / 3 ~= 0.611, Recall_macro the same.
    metric = IDPrecisionRecallF1()
    per_query = [
        metric(retrieved_ids=q["retrieved"], relevant_ids=q["gold"]) for q in SEED_003.values()
    ]
    macro_p = mean(s["context_precision"] for s in per_query)
    macro_r = mean(s["context_recall"] for s in per_query)
    macro_f1 = mean(s["context_f1"] for s in per_query)
    assert macro_p == pytest.approx((1 / 2 + 1 / 1 + 1 / 3) / 3)
    assert macro_r == pytest.approx((1 / 2 + 1 / 1 + 1 / 3) / 3)
    assert round(macro_p, 3) == round(macro_r, 3) == 0.611  # the article's rounded figure
    # Per-query F1 equals per-query P = R here, so macro F1 is the same 0.611.
    assert macro_f1 == pytest.approx((1 / 2 + 1 / 1 + 1 / 3) / 3)


def test_chunking_micro_average_from_summed_counts() -> None:
    # 003, step 4: TP_total = 1 + 1 + 1, FP_total = 1 + 0 + 2, FN_total = 1 + 0 + 2;
    # Precision_micro = 3 / (3 + 3) = 0.5, Recall_micro = 3 / (3 + 3) = 0.5.
    counts = [
        set_counts(judge_ids(q["retrieved"], dict.fromkeys(q["gold"], 1)))
        for q in SEED_003.values()
    ]
    tp = sum(c.relevant_retrieved for c in counts)
    retrieved = sum(c.retrieved for c in counts)
    matched = sum(c.matched_ground_truth for c in counts)
    gold = sum(c.ground_truth for c in counts)
    assert (tp, retrieved - tp, gold - matched) == (1 + 1 + 1, 1 + 0 + 2, 1 + 0 + 2)
    micro_p = tp / retrieved
    micro_r = matched / gold
    assert micro_p == 3 / (3 + 3) == 0.5
    assert micro_r == 3 / (3 + 3) == 0.5
    # "micro-averaging gives 0.5 ... macro ~0.611": the two aggregates differ on this data.
    assert micro_p < (1 / 2 + 1 / 1 + 1 / 3) / 3


def test_chunking_division_by_zero_rules() -> None:
    # 003, step 3 and pitfall 2: no chunk retrieved -> precision 0; no gold chunk -> recall 0
    # (empty_ground_truth="zero", the default) or skip the query (empty_ground_truth="skip").
    nothing_retrieved = IDPrecisionRecallF1()(retrieved_ids=[], relevant_ids=["A"])
    assert nothing_retrieved["context_precision"] == 0.0
    assert nothing_retrieved["context_recall"] == 0 / 1
    no_gold = IDPrecisionRecallF1()(retrieved_ids=["A"], relevant_ids=[])
    assert no_gold["context_recall"] == 0.0
    skipped = IDPrecisionRecallF1(empty_ground_truth="skip")(retrieved_ids=["A"], relevant_ids=[])
    assert skipped == {"context_precision": None, "context_recall": None, "context_f1": None}


def test_chunking_answer_spanning_two_chunks() -> None:
    # 003, pitfall 3: gold {chunk_4, chunk_5}. Retrieving only chunk_4 is one FN; retrieving
    # an extra chunk is one FP. (The article gives the counting rule, not numbers; these are
    # the counts that rule gives.)
    gold = ["chunk_4", "chunk_5"]
    assert _tp_fp_fn(["chunk_4"], gold) == (1, 0, 1)
    assert _tp_fp_fn(["chunk_4", "chunk_5", "chunk_9"], gold) == (2, 1, 0)
    scores = IDPrecisionRecallF1()(retrieved_ids=["chunk_4"], relevant_ids=gold)
    assert scores["context_precision"] == 1 / (1 + 0)
    assert scores["context_recall"] == 1 / (1 + 1)


def test_chunking_precision_and_recall_at_k() -> None:
    # 003, pitfall 4: restrict to the top K before counting. The article names P@1/R@1 but
    # gives no ranked data; on q3 in listed order the top 1 is F (gold), so P@1 = 1/1 and
    # R@1 = 1/3 (E and G missed).
    q = SEED_003["q3"]
    scores = IDPrecisionRecallF1(k=1)(retrieved_ids=q["retrieved"], relevant_ids=q["gold"])
    assert scores["context_precision"] == 1 / 1
    assert scores["context_recall"] == pytest.approx(1 / 3)


# 003, "Report with context": "Precision_macro = 0.67; Recall_macro = 0.54" is an illustration of
# a report line with no data behind it, so it cannot be reconstructed or tested.


# ---------------------------------------------------------------------------------------------
# Seed 004: order-aware metrics. Its figures (the retrievers A and B, the formulas, the DCG
# values) were images lost in the text extraction. Its code is complete:
#   reciprocal_rank: the first doc with grade > 0;
#   average_precision: sum of P@i at the retrieved docs of the ground truth / len(ground_truth)
#     (the article's prose divides by the relevant docs *retrieved* instead);
#   ndcg_at_k: exponential gain (2^g - 1) / log2(i + 1), ideal = the retrieved list re-sorted by
#     grade, cut at k.

# 004's graded example: "Document A - 1", "Document B - 3", "Document C - 2".
BETTER_AUTH = {"A": 1, "B": 3, "C": 2}


def test_order_aware_rr_ignores_grade_zero() -> None:
    # 004, mrr.py: `ground_truth.get(doc, 0) > 0` -- a doc judged 0 is not relevant.
    scores = IDRankedRetrievalMetrics()(retrieved_ids=["x", "A"], qrels={"x": 0, "A": 1})
    assert scores["reciprocal_rank"] == 1 / 2


def test_order_aware_retrievers_a_and_b() -> None:
    # 004, opening example: "Retriever A places the relevant documents in the middle of the
    # retrieved set, while retriever B places them at the start"; both score the same P and R.
    # The lists and the RR/AP values were images and are lost; this is an illustrative
    # reconstruction with 5 retrieved docs and 2 relevant ones, not the article's numbers.
    relevant = ["r1", "r2"]
    a = ["n1", "n2", "r1", "r2", "n3"]
    b = ["r1", "r2", "n1", "n2", "n3"]
    metric = IDRankedRetrievalMetrics(ap_denominator="hits")  # the article's AP definition
    sa = metric(retrieved_ids=a, relevant_ids=relevant)
    sb = metric(retrieved_ids=b, relevant_ids=relevant)
    assert sa["precision"] == sb["precision"] == 2 / 5
    assert sa["recall"] == sb["recall"] == 2 / 2
    assert sa["reciprocal_rank"] == 1 / 3
    assert sb["reciprocal_rank"] == 1 / 1
    assert sa["average_precision"] == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert sb["average_precision"] == pytest.approx((1 / 1 + 2 / 2) / 2)
    # mrr.py / map.py: the means over these two queries.
    results = evaluate_run(
        {"A": a, "B": b}, {"A": relevant, "B": relevant}, ["mrr", "map(ap_denominator='hits')"]
    )
    assert mean(results[q]["reciprocal_rank"] for q in "AB") == pytest.approx((1 / 3 + 1 / 1) / 2)
    assert mean(
        results[q]["average_precision(ap_denominator='hits')"] for q in "AB"
    ) == pytest.approx(((1 / 3 + 2 / 4) / 2 + (1 / 1 + 2 / 2) / 2) / 2)


# The Better Auth query with C missed: hits A at rank 1 and B at rank 3.
MISSED_C = ["A", "x", "B"]


def test_order_aware_ap_under_both_denominators() -> None:
    # 004, "What is MAP": the prose divides by "the total number of relevant documents in the
    # retrieved set" (2 here): ap_denominator="hits". map.py divides by len(ground_truth) (3),
    # which is design.md's default (trec_eval): ap_denominator="relevant".
    prose = IDRankedRetrievalMetrics(ap_denominator="hits")(
        retrieved_ids=MISSED_C, qrels=BETTER_AUTH
    )
    code = IDRankedRetrievalMetrics(ap_denominator="relevant")(
        retrieved_ids=MISSED_C, qrels=BETTER_AUTH
    )
    assert prose["average_precision"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert code["average_precision"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    default = IDRankedRetrievalMetrics()(retrieved_ids=MISSED_C, qrels=BETTER_AUTH)
    assert default["average_precision"] == code["average_precision"]


def test_order_aware_ndcg_71_percent_example() -> None:
    # 004, "What is NDCG": "our retriever is currently performing at 71% of the ideal". The
    # retrieved list, DCG and IDCG were images. The prose defines DCG with the grade itself as
    # gain ("take a document's graded relevance and divide it by the ... log of that
    # document's position + 1"). Reconstruction: with A, B, C in the order the article lists
    # them and one non-relevant doc x at rank 2, linear NDCG is 0.706 ~= 71%; no order of the
    # three documents alone gives 71% (linear: 0.79 to 1.0; exponential: 0.68, then 0.74 to 1.0).
    retrieved = ["A", "x", "B", "C"]
    dcg = 1 / math.log2(2) + 0 / math.log2(3) + 3 / math.log2(4) + 2 / math.log2(5)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    # Every graded doc is retrieved, so both ideals (ground truth, retrieved) coincide.
    for ideal in ("ground_truth", "retrieved"):
        scores = IDRankedRetrievalMetrics(ideal=ideal)(retrieved_ids=retrieved, qrels=BETTER_AUTH)
        assert scores["ndcg"] == pytest.approx(dcg / idcg)
        assert scores["ndcg"] == pytest.approx(0.71, abs=0.005)
    # The prose says "natural log"; the base cancels in DCG / IDCG.
    dcg_ln = 1 / math.log(2) + 3 / math.log(4) + 2 / math.log(5)
    idcg_ln = 3 / math.log(2) + 2 / math.log(3) + 1 / math.log(4)
    assert dcg_ln / idcg_ln == pytest.approx(dcg / idcg)


def test_order_aware_ndcg_71_percent_example_in_text_mode() -> None:
    # The same reconstruction with the documents as texts and graded ground truth.
    docs = {
        "A": "Better Auth is an authentication library for TypeScript.",
        "B": "To integrate Better Auth with Next.js, mount the handler in a route.",
        "C": "A bug when integrating Better Auth with Next.js and how to resolve it.",
        "x": "Next.js is a React framework.",
    }
    truth = [{"text": docs[d], "grade": g} for d, g in BETTER_AUTH.items()]
    scores = RankedRetrievalMetrics(ExactChunkMatch())(
        retrieved_context=[docs[d] for d in ["A", "x", "B", "C"]], ground_truth_context=truth
    )
    dcg = 1 / math.log2(2) + 0 / math.log2(3) + 3 / math.log2(4) + 2 / math.log2(5)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg"] == pytest.approx(dcg / idcg)


def test_order_aware_ndcg_71_percent_with_the_code_gain() -> None:
    # 004, the same "71%", reconstructed with ndcg.py's exponential gain instead: A, B, x, C
    # gives 0.714. The lost figure cannot tell the two reconstructions apart.
    retrieved = ["A", "B", "x", "C"]
    dcg = (2**1 - 1) / math.log2(2) + (2**3 - 1) / math.log2(3) + (2**2 - 1) / math.log2(5)
    idcg = (2**3 - 1) / math.log2(2) + (2**2 - 1) / math.log2(3) + (2**1 - 1) / math.log2(4)
    scores = IDRankedRetrievalMetrics(gain="exponential", ideal="retrieved")(
        retrieved_ids=retrieved, qrels=BETTER_AUTH
    )
    assert scores["ndcg"] == pytest.approx(dcg / idcg)
    assert scores["ndcg"] == pytest.approx(0.71, abs=0.005)


# 004, ndcg.py on the Better Auth query with C missed (retrieved A, x, B), at k = 3 and k = 2,
# under both gains and both ideals. ndcg.py itself is gain="exponential", ideal="retrieved";
# trec_eval is gain="linear", ideal="ground_truth" (design.md's default).
L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)
NDCG_CASES = [
    pytest.param(
        3,
        "exponential",
        "retrieved",
        ((2**1 - 1) / L2 + (2**3 - 1) / L4) / ((2**3 - 1) / L2 + (2**1 - 1) / L3),
        id="ndcg.py@3",
    ),
    pytest.param(
        2,
        "exponential",
        "retrieved",
        ((2**1 - 1) / L2) / ((2**3 - 1) / L2 + (2**1 - 1) / L3),
        id="ndcg.py@2",
    ),
    pytest.param(
        3,
        "linear",
        "ground_truth",
        (1 / L2 + 3 / L4) / (3 / L2 + 2 / L3 + 1 / L4),
        id="trec_eval@3",
    ),
    pytest.param(2, "linear", "ground_truth", (1 / L2) / (3 / L2 + 2 / L3), id="trec_eval@2"),
    pytest.param(
        3,
        "exponential",
        "ground_truth",
        ((2**1 - 1) / L2 + (2**3 - 1) / L4) / ((2**3 - 1) / L2 + (2**2 - 1) / L3 + 1 / L4),
        id="ranx-burges@3",
    ),
    pytest.param(
        3,
        "linear",
        "retrieved",
        (1 / L2 + 3 / L4) / (3 / L2 + 1 / L3),
        id="linear-retrieved@3",
    ),
]


@pytest.mark.parametrize(("k", "gain", "ideal", "expected"), NDCG_CASES)
def test_order_aware_ndcg_conventions(k: int, gain: str, ideal: str, expected: float) -> None:
    metric = IDRankedRetrievalMetrics(k=k, gain=gain, ideal=ideal)  # type: ignore[arg-type]
    assert metric(retrieved_ids=MISSED_C, qrels=BETTER_AUTH)["ndcg"] == pytest.approx(expected)
    spec = f"ndcg(gain={gain!r}, ideal={ideal!r})@{k}"
    run_value = evaluate_run({"q": MISSED_C}, {"q": BETTER_AUTH}, [spec])["q"][key(spec)]
    assert run_value == pytest.approx(expected)


def test_order_aware_ndcg_conventions_differ_when_a_graded_doc_is_missed() -> None:
    # The two ideals disagree exactly because C (grade 2) is not retrieved.
    code = IDRankedRetrievalMetrics(gain="exponential", ideal="retrieved")
    trec = IDRankedRetrievalMetrics()
    assert code(retrieved_ids=MISSED_C, qrels=BETTER_AUTH)["ndcg"] != pytest.approx(
        trec(retrieved_ids=MISSED_C, qrels=BETTER_AUTH)["ndcg"]
    )


def test_order_aware_named_measures_for_the_seed_code() -> None:
    # 004's three code listings as evaluate_run measures on the same query.
    measures = ["mrr", "map", "map(ap_denominator='hits')", "ndcg_cut_3", "ndcg_burges@3"]
    got = evaluate_run({"q": MISSED_C}, {"q": BETTER_AUTH}, measures)["q"]
    # Keyed by canonical spec: mrr, map, map(...), ndcg_cut_3, ndcg_burges@3 in that order.
    assert list(got) == [
        "reciprocal_rank",
        "average_precision",
        "average_precision(ap_denominator='hits')",
        "ndcg@3",
        "ndcg(gain='exponential')@3",
    ]
    assert got["reciprocal_rank"] == 1 / 1
    assert got["average_precision"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert got["average_precision(ap_denominator='hits')"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert got["ndcg@3"] == pytest.approx((1 / L2 + 3 / L4) / (3 / L2 + 2 / L3 + 1 / L4))
    assert got["ndcg(gain='exponential')@3"] == pytest.approx(
        ((2**1 - 1) / L2 + (2**3 - 1) / L4) / ((2**3 - 1) / L2 + (2**2 - 1) / L3 + 1 / L4)
    )
