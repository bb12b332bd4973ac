"""The harness at size budgets: retrieval deep enough to fill them, attribution and context
equal to the evaluation's, the comparison at the largest budget, the overlap rule."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.chunking import Chunk, compare_chunkers, retrieval_depth
from ctxeval.chunking.attribution import OverlapRule, attribute, attribution_rule
from ctxeval.chunking.chunkers import parse_chunker
from ctxeval.chunking.harness import chunk_ids, compare_columns, comparison_cutoff, run_record
from ctxeval.chunking.questions import load_questions
from ctxeval.chunking.retrieval import ChunkSizes, chunk_sizes, needed_depths
from ctxeval.cutoffs.cutoff import parse_budget
from ctxeval.evaluator import RetrievalEvaluator
from ctxeval.foundation.errors import CtxevalError
from ctxeval.matching.rouge.strategies import RougeChunkMatch

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
CHUNKERS = {"fixed": "fixed(words=100, overlap=10)", "sentences": "sentences(n=3)"}
BUDGETS = ["100w", "250w", "1500c"]


def _chunks(*words: int) -> list[Chunk]:
    return [Chunk("d", 0, 1, " ".join(["w"] * n)) for n in words]


def test_retrieval_depth_fills_the_largest_budget_with_the_smallest_chunks() -> None:
    chunks = _chunks(5, 1, 3, 2, 8)  # sorted: 1, 2, 3, 5, 8; running totals 1, 3, 6, 11, 19
    assert retrieval_depth([parse_budget("6w")], chunks) == 3 + 1  # three fit, one crosses
    assert retrieval_depth([parse_budget("5w")], chunks) == 2 + 1
    assert retrieval_depth([parse_budget("1w")], chunks) == 1 + 1
    assert retrieval_depth([2, parse_budget("1w")], chunks) == 2
    assert retrieval_depth([parse_budget("100w")], chunks) == 5  # never more than the chunks
    assert retrieval_depth([7], chunks) == 7  # a count is the count (the retriever stops)
    assert chunk_sizes(chunks, "c").tolist() == [9, 1, 5, 3, 15]


def test_each_question_keeps_the_chunks_its_cut_offs_read() -> None:
    texts = ["a b", "c d e", "f", "g h", "a b c d e f", "g", "a", "abcdef", "x"]
    sizes = ChunkSizes([Chunk("d", 0, 1, t) for t in texts])
    rankings = [[0, 1, 2, 3], [4, 5], [6]]
    # 3w: "a b" fits, "c d e" crosses -> 2; "a b c d e f" crosses at once -> 1; "a" -> 1.
    assert needed_depths([parse_budget("3w")], rankings, sizes) == [2, 1, 1]
    # 6w: "a b" + "c d e" + "f" fit, "g h" crosses -> 4; 6 words fit, "g" crosses -> 2.
    assert needed_depths([parse_budget("6w")], rankings, sizes) == [4, 2, 1]
    assert needed_depths([3, parse_budget("3w")], rankings, sizes) == [3, 2, 1]
    assert needed_depths([parse_budget("4c")], [[7, 8]], sizes) == [1]
    assert needed_depths([parse_budget("4c")], [[], [8]], sizes) == [0, 1]


@pytest.fixture(scope="module")
def budgeted():
    return compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=[3, *BUDGETS], n_resamples=200)


def test_budgets_are_evaluated_and_compared_at_the_largest(budgeted) -> None:
    # Budgets in the order of the text they fed (100 words are about 600 characters here): the
    # verdict, the tables and "reaches 95% at" read them in it (a user's trial found 512t
    # listed, and taken as the last, before a 200w that fed more).
    assert [str(k) for k in budgeted.ks] == ["3", "100w", "1500c", "250w"]
    fed = [
        sum(run.context[k]["characters"] for run in budgeted.runs.values()) for k in budgeted.ks[1:]
    ]
    assert fed == sorted(fed)
    for run in budgeted.runs.values():
        assert run.attribution.ks == budgeted.ks
    assert [s.cutoff for s in budgeted.verdict.of("")] == ["3", "100w", "1500c", "250w"]
    assert str(budgeted.top) == "250w"
    compared = list(budgeted.comparison.metrics) + [
        name for equal in budgeted.comparison.identical.values() for name in equal
    ]
    assert compared
    assert all(column.endswith("@250w") for column in compared)
    summary = budgeted.summary()
    assert summary["compared_at"] == "250w"
    assert summary["ks"] == [3, "100w", "1500c", "250w"]


def test_found_is_context_recall_and_context_is_the_evaluations(budgeted) -> None:
    for run in budgeted.runs.values():
        used = run.result.summary["context_used"]
        for k in budgeted.ks:
            assert run.attribution.found[k] == run.result.aggregate[f"context_recall@{k}"]
            assert run.context[k] == used[str(k)]
        # A words budget feeds at most its words, on average and per query.
        assert run.context[parse_budget("100w")]["words"] <= 100
        assert run.context[parse_budget("1500c")]["characters"] <= 1500


def test_the_retrieved_depth_suffices_for_every_budget(budgeted) -> None:
    """Evaluating every chunk in the retriever's order gives the same numbers at each budget
    as the harness's shorter lists: the depth never cut a budget short."""
    for name, run in budgeted.runs.items():
        for record in run.records:
            texts = record["retrieved_context"]
            for budget in (parse_budget(b) for b in BUDGETS):
                sizes = chunk_sizes([Chunk("d", 0, 1, t) for t in texts], budget.unit)
                # The list holds the crossing chunk, or every chunk BM25 scored above 0.
                assert sizes.sum() > budget.size or len(texts) < retrieval_depth(
                    [budget], run.chunks
                ), (name, record["id"], budget)


def test_a_budget_sweep_equals_separate_runs(budgeted) -> None:
    alone = compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=["250w"], n_resamples=200)
    for name, run in alone.runs.items():
        swept = budgeted.runs[name]
        for column, value in run.result.aggregate.items():
            assert swept.result.aggregate[column] == value, (name, column)
        k = parse_budget("250w")
        assert swept.attribution.found[k] == run.attribution.found[k]
        assert swept.context[k] == run.context[k]


def test_truncate_feeds_the_budget_and_found_stays_context_recall() -> None:
    outcome = compare_chunkers(
        CORPUS,
        QUESTIONS,
        CHUNKERS,
        k=["100w"],
        budget_policy="truncate",
        metrics=["context_recall", "ndcg"],
        n_resamples=50,
    )
    k = parse_budget("100w")
    for run in outcome.runs.values():
        assert run.attribution.found[k] == run.result.aggregate["context_recall@100w"]
        assert 99 <= run.context[k]["words"] <= 100  # every query's list is longer than 100 w
    assert outcome.summary()["budget_policy"] == "truncate"


# -- attribution at budgets, hand-computed ---------------------------------------------------
DOC = "alpha bravo charlie delta echo foxtrot golf hotel"
# fixed(words=4): chunk 0 "alpha bravo charlie delta" [0:25], chunk 1 "echo foxtrot golf
# hotel" [26:49].


def _setup(excerpts: list[object]):
    chunks = parse_chunker("fixed(words=4)").chunk(DOC, "a")
    questions = load_questions([{"id": "q", "question": "q", "excerpts": excerpts}], {"a": DOC})
    return chunks, questions


def test_attribution_at_word_budgets_under_both_policies() -> None:
    chunks, questions = _setup(["echo foxtrot golf"])
    order = [[0, 1]]  # the excerpt's chunk comes second
    strategy = RougeChunkMatch()
    six = parse_budget("6w")
    whole = attribute(questions, chunks, order, strategy, [six, parse_budget("8w")])
    # 6 words: chunk 0 (4 words) fits, chunk 1 (4 more) crosses: left out -> missed.
    assert whole.found[six] == 0.0
    assert whole.missed[six] == 1.0
    assert whole.found[parse_budget("8w")] == 1.0
    cut = attribute(questions, chunks, order, strategy, [six], budget_policy="truncate")
    # Truncated to 2 words, "echo foxtrot": ROUGE-L recall of the excerpt 2/3 < 0.7: missed.
    assert cut.found[six] == 0.0
    assert cut.missed[six] == 1.0
    seven = parse_budget("7w")
    cut = attribute(questions, chunks, order, strategy, [seven], budget_policy="truncate")
    # 3 words kept, "echo foxtrot golf": the excerpt itself -> found in the cut chunk.
    assert cut.found[seven] == 1.0


def test_the_overlap_rule_judges_offsets() -> None:
    # "charlie delta echo foxtrot" [12:38] straddles the boundary at 25/26: chunk 0 covers
    # [12:25] = 13 of 26 characters (0.5), chunk 1 [26:38] = 12 (0.46).
    chunks, questions = _setup(["charlie delta echo foxtrot"])
    strategy = RougeChunkMatch()
    half = attribute(questions, chunks, [[1, 0]], strategy, [1, 2], rule="overlap(min=0.5)")
    assert half.questions[0].reachable == (True,)
    assert half.questions[0].first_found == (2,)  # chunk 0, retrieved second, covers half
    assert (half.found[1], half.missed[1], half.found[2]) == (0.0, 1.0, 1.0)
    strict = attribute(questions, chunks, [[1, 0]], strategy, [2], rule=OverlapRule(0.51))
    assert strict.unreachable[2] == 1.0
    assert strict.rule == "overlap(min=0.51)"
    # A chunk elsewhere with the same words does not count under the overlap rule.
    copy = [Chunk("b", 0, 26, "charlie delta echo foxtrot")]
    moved = attribute(questions, copy, [[0]], strategy, [1], rule="overlap")
    assert moved.unreachable[1] == 1.0
    assert attribute(questions, copy, [[0]], strategy, [1]).found[1] == 1.0  # words: found


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("overlaps", "give 'match'"),
        ("overlap(min=0)", r"in \(0, 1\]"),
        ("overlap(mn=0.5)", "give 'match'"),
        ("overlap(min=", "not a valid attribution rule spec"),
        (3, "give 'match'"),
    ],
)
def test_bad_attribution_rules(rule: object, message: str) -> None:
    with pytest.raises(CtxevalError, match=message):
        attribution_rule(rule)


def test_compare_columns_are_checked_before_any_work() -> None:
    ks = [3, parse_budget("100w")]
    assert comparison_cutoff(ks) == parse_budget("100w")
    assert compare_columns(["ndcg", "hit_rate@3"], ["ndcg", "hit_rate"], ks) == [
        "ndcg@100w",
        "hit_rate@3",
    ]
    with pytest.raises(CtxevalError, match="did you mean 'ndcg'"):
        compare_columns(["ndgc"], ["ndcg"], ks)
    with pytest.raises(CtxevalError, match="unknown cut-off '200w'"):
        compare_columns(["ndcg@200w"], ["ndcg"], ks)
    with pytest.raises(CtxevalError, match="compare_metrics"):
        compare_chunkers(
            {"a": DOC}, [{"question": "q", "excerpts": ["echo"]}],
            {"a": "fixed(words=2)", "b": "fixed(words=3)"},
            k=[1], compare_metrics=["recall"],
        )  # fmt: skip


def _first_to_last(question: str, chunks: Sequence[Chunk]) -> list[int]:
    return list(range(len(chunks)))


# One generated document: a chunker may leave it whole, or both make the same chunks.
@pytest.mark.filterwarnings("ignore::ctxeval.chunking.checks.ChunkingWarning")
@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    budget=st.integers(1, 30),
    policy=st.sampled_from(["whole", "truncate"]),
)
def test_found_equals_context_recall_at_any_budget(
    sizes: list[int], budget: int, policy: str
) -> None:
    """On random chunkings of a generated document: the harness's found share is the
    evaluation's context_recall at the budget, and the depth retrieved was enough (the same
    records retrieved to the end give the same numbers)."""
    words = [f"w{i}" for i in range(sum(sizes))]
    doc = " ".join(words)
    excerpt = " ".join(words[len(words) // 3 : len(words) // 3 + 2])
    k = f"{budget}w"
    outcome = compare_chunkers(
        {"a": doc},
        [{"id": "q", "question": "q", "excerpts": [excerpt]}],
        {"x": f"fixed(words={max(sizes)})", "y": f"fixed(words={min(sizes)})"},
        retriever=_first_to_last,
        k=[k],
        budget_policy=policy,  # type: ignore[arg-type]
        metrics=["context_recall", "ndcg", "precision"],
        n_resamples=10,
    )
    for run in outcome.runs.values():
        assert run.attribution.found[parse_budget(k)] == run.result.aggregate[f"context_recall@{k}"]
        ranking = [(i, None) for i in range(len(run.chunks))]
        ids = chunk_ids(run.name, run.chunks)
        every = run_record(outcome.questions[0], run.chunks, ids, ranking)
        again = RetrievalEvaluator(
            [every], ["context_recall", "ndcg", "precision"], budget_policy=policy
        ).run(k=[k])
        assert again.aggregate == run.result.aggregate
        assert np.isfinite(list(run.result.aggregate.values())).all()


def test_the_report_shows_the_context_fed_at_the_comparison_budget(budgeted) -> None:
    from ctxeval.chunking.report import harness_report

    page = harness_report(budgeted)
    used = budgeted.runs["sentences"].context[parse_budget("250w")]
    assert f"@250w: {used['chunks']:.2f} chunks" in page  # what was compared
    assert "compared at 250w" in page  # the chunking section's note
    assert f"<td>{used['words']:.1f}</td>" in page  # words fed @250w in its table


def test_mixed_units_are_compared_at_the_budget_that_fed_the_most_text() -> None:
    outcome = compare_chunkers(
        CORPUS, QUESTIONS, CHUNKERS, k=["100w", "2000c", "512t"], n_resamples=20,
        metrics=["context_recall"],
    )  # fmt: skip
    fed = {
        str(k): sum(run.context[k]["characters"] for run in outcome.runs.values())
        for k in outcome.ks
    }
    assert max(fed, key=fed.__getitem__) == "512t"  # 512 ROUGE tokens feed ~2,950 characters
    assert str(outcome.top) == "512t"
    assert outcome.summary()["compared_at"] == "512t"
    assert list(outcome.comparison.metrics) == ["context_recall@512t"]
    # By unit alone (no data), words would come last: the order the data corrects.
    assert str(comparison_cutoff(outcome.ks)) == "100w"
    # compare() on the saved results picks the same budget.
    from ctxeval.comparison import compare

    again = compare(outcome.results, n_resamples=20)
    assert {column.split("@")[1] for column in again.metrics} == {"512t"}


def test_the_reports_queries_show_only_the_chunks_fed() -> None:
    from ctxeval.chunking.report import harness_report

    outcome = compare_chunkers(
        {"a": DOC},
        [{"id": "q", "question": "q", "excerpts": ["echo foxtrot golf"]}],
        {"w4": "fixed(words=4)", "w2": "fixed(words=2)"},
        retriever=_first_to_last,
        k=[1, "4w"],
        n_resamples=10,
    )
    page = harness_report(outcome)
    # At 4w, w4 feeds chunk 0 only: its chunk 1, which holds the excerpt, is not shown (nor
    # marked), as context_recall@4w = 0 did not count it.
    assert outcome.runs["w4"].result.aggregate["context_recall@4w"] == 0.0
    assert "alpha bravo charlie delta" in page
    assert "echo foxtrot golf hotel" not in page
    assert "show the chunks fed at 4w" in page


def test_budget_columns_get_curves_of_their_own(budgeted) -> None:
    from ctxeval.comparison.curves import metric_curves

    curves = metric_curves(budgeted.results, n_resamples=50)
    assert [p.k for p in curves["ndcg"]["fixed"]] == [3]
    assert [(p.k, p.unit) for p in curves["ndcg @ words"]["fixed"]] == [
        (100, "words"),
        (250, "words"),
    ]
    assert [(p.k, p.unit) for p in curves["ndcg @ characters"]["sentences"]] == [
        (1500, "characters")
    ]
    point = curves["context_recall @ words"]["sentences"][1]
    assert point.mean == budgeted.runs["sentences"].result.aggregate["context_recall@250w"]
    assert point.low <= point.mean <= point.high
