"""What a comparison tests and states: identical columns compared once, the correction's
family, the best run only when the tests order it, and each run's settings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ctxeval import (
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.comparison import PairedComparison, compare
from ctxeval.comparison.settings import UnlikeRunsWarning, run_settings
from ctxeval.comparison.stats import leader
from ctxeval.results import EvaluationResult

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def result(
    columns: dict[str, list[float]], summary: dict[str, Any] | None = None
) -> EvaluationResult:
    n = len(next(iter(columns.values())))
    rows = [{"id": f"q{i}", **{c: v[i] for c, v in columns.items()}} for i in range(n)]
    aggregate: dict[str, float | None] = {c: math.fsum(v) / n for c, v in columns.items()}
    return EvaluationResult(per_query=rows, aggregate=aggregate, summary=summary or {})


@pytest.fixture(scope="module")
def example() -> dict[str, EvaluationResult]:
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    return {
        name: RetrievalEvaluator(RUNS / f"{name}.jsonl", metrics, workers=1).run(k=[10])
        for name in ("fixed-100", "paragraph")
    }


def test_identical_columns_of_the_example_data_are_compared_once(
    example: dict[str, EvaluationResult],
) -> None:
    report = compare(example, metrics="all", n_resamples=200)
    # One relevant item per query: AP = RR, and hit rate = recall = context recall.
    assert report.identical == {
        "context_recall@10": ("hit_rate@10", "recall@10"),
        "average_precision@10": ("reciprocal_rank@10",),
    }
    assert "reciprocal_rank@10" not in report.metrics
    assert report.tested() == len(report.metrics) == 6
    assert report.comparison("paragraph", "reciprocal_rank@10").metric == "average_precision@10"
    assert report.row("hit_rate@10") is report.row("context_recall@10")
    assert "average_precision@10 = reciprocal_rank@10" in str(report.identical_note())
    # The family is smaller by the copies: Holm multiplies by 6, not 9.
    full = compare(example, metrics="all", n_resamples=200, collapse=False)
    assert full.identical == {}
    assert full.tested() == 9
    smallest = min(c.p_value for c in report.comparisons if c.p_value is not None)
    assert min(c.p_adjusted for c in report.comparisons if c.p_adjusted) == 6 * smallest


def test_the_default_family_is_the_clis(example: dict[str, EvaluationResult]) -> None:
    # One place decides it: recall and NDCG at the deepest cut-off, in Python and on the CLI.
    from ctxeval.cli.compare import chosen_metrics

    report = compare(example, n_resamples=50)
    assert report.metrics == ("context_recall@10", "ndcg@10")
    columns = {name: list(result.aggregate) for name, result in example.items()}
    assert chosen_metrics([], [], columns) == (list(report.metrics), [])
    deeper = {
        name: RetrievalEvaluator(RUNS / f"{name}.jsonl", ["recall", "ndcg", "map"], workers=1).run(
            k=[1, 5, 10]
        )
        for name in ("fixed-100", "paragraph")
    }
    assert compare(deeper, n_resamples=50).metrics == ("recall@10", "ndcg@10")
    assert compare(deeper, metrics="all", n_resamples=50, collapse=False).metrics == (
        "recall@10",
        "ndcg@10",
        "average_precision@10",
    )
    # Named columns are compared as given, at any cut-off.
    named = compare(deeper, metrics=["ndcg@1", "average_precision@5"], n_resamples=50)
    assert named.metrics == ("ndcg@1", "average_precision@5")


def test_without_recall_or_ndcg_every_metric_is_compared_at_its_deepest_cut_off() -> None:
    a = result({"p@1": [0.0, 1.0], "p@5": [0.2, 0.4], "rr": [0.5, 1.0]})
    b = result({"p@1": [1.0, 1.0], "p@5": [0.4, 0.4], "rr": [1.0, 1.0]})
    assert compare({"a": a, "b": b}, n_resamples=10).metrics == ("p@5", "rr")


def test_values_that_differ_in_one_query_are_not_identical() -> None:
    a = result({"x": [0.1, 0.5, 1.0], "y": [0.1, 0.5, 1.0], "z": [0.1, 0.5, 0.9]})
    b = result({"x": [0.2, 0.5, 1.0], "y": [0.2, 0.5, 1.0], "z": [0.2, 0.5, 1.0]})
    report = compare({"a": a, "b": b}, n_resamples=100)
    assert report.identical == {"x": ("y",)}
    assert report.metrics == ("x", "z")


def _item(run: str, diff: float, significant: bool, wins: int = 5, losses: int = 5) -> Any:
    return PairedComparison(
        metric="m",
        run=run,
        baseline="base",
        queries=10,
        excluded=0,
        baseline_mean=0.5,
        run_mean=0.5 + diff,
        diff=diff,
        ci_low=None,
        ci_high=None,
        p_value=0.01,
        p_adjusted=0.01,
        significant=significant,
        wins=wins,
        ties=10 - wins - losses,
        losses=losses,
    )


@pytest.mark.parametrize(
    ("best", "items", "expected"),
    [
        (("a",), [_item("a", 0.2, True)], "a"),
        (("a",), [_item("a", 0.2, False)], None),
        (("base",), [_item("a", -0.2, True), _item("b", -0.1, True)], "base"),
        (("base",), [_item("a", -0.2, True), _item("b", -0.1, False)], None),
        # a above the baseline, b below it: a leads; b not significantly below: no leader.
        (("a",), [_item("a", 0.2, True), _item("b", -0.1, True)], "a"),
        (("a",), [_item("a", 0.2, True), _item("b", 0.1, False)], None),
        # b equals the baseline on every query: a's lead over b is a's lead over the baseline.
        (("a",), [_item("a", 0.2, True), _item("b", 0.0, False, wins=0, losses=0)], "a"),
        (("a", "b"), [_item("a", 0.2, True), _item("b", 0.2, True)], None),
    ],
)
def test_a_best_run_is_named_only_when_the_tests_order_it(
    best: tuple[str, ...], items: list[Any], expected: str | None
) -> None:
    assert leader(best, "base", items) == expected


def test_settings_come_from_the_summaries(example: dict[str, EvaluationResult]) -> None:
    settings = run_settings(example["paragraph"].summary)
    assert settings.strategy == "rouge-chunk(threshold=0.7)"
    assert settings.threshold == 0.7
    assert settings.convention == "trec_eval"
    assert settings.ks == ("10",)
    ce = run_settings({"metrics": [repr(IDRankedRetrievalMetrics(convention="continuous_eval"))]})
    assert ce.convention == "continuous_eval"
    assert ce.strategy is None
    assert ce.threshold is None
    custom = run_settings({"metrics": [repr(IDRankedRetrievalMetrics(gain="exponential"))]})
    assert custom.convention == "custom (gain='exponential')"
    unlike = {
        "a": result({"x": [0.1, 0.2]}, {"strategy": "exact-chunk", "ks": [5]}),
        "b": result({"x": [0.1, 0.3]}, {"strategy": "rouge-chunk(threshold=0.8)", "ks": [5]}),
    }
    said = r"not judged alike \(matching a: exact-chunk; b: rouge-chunk\(threshold=0.8\)\)"
    with pytest.warns(UnlikeRunsWarning, match=said):
        report = compare(unlike, n_resamples=10)
    assert report.setting("ks") == "5"
    assert report.setting("strategy") == "a: exact-chunk; b: rouge-chunk(threshold=0.8)"


def test_settings_say_where_spans_came_from_and_the_convention_of_measure_specs() -> None:
    located = {"given": 0, "exact": 5, "normalised": 1, "fuzzy": 0, "unlocated": 0}
    spans = run_settings({"located": located, "strategy": None})
    assert spans.spans == "located in the corpus"
    assert spans.judging() == "spans located in the corpus"
    given = run_settings({"located": {**located, "given": 3, "exact": 0, "normalised": 0}})
    assert given.spans == "given"
    both = run_settings({"located": {**located, "given": 3, "unlocated": 2}})
    assert both.spans == "given or located in the corpus (2 not located)"
    assert run_settings({}).spans is None
    assert run_settings({}).judging() == "by id"
    text = run_settings({"strategy": "exact-chunk", "located": located})
    assert text.judging() == "exact-chunk; spans located in the corpus"
    assert text.judging(spans=False) == "exact-chunk"
    assert text.judging(matches=False) == "spans located in the corpus"
    # -m measure specs: the convention their options reproduce; none without rank measures.
    specs = "TextMeasures(('context_recall@10', 'ndcg@10'), RougeChunkMatch(threshold=0.7))"
    assert run_settings({"metrics": [specs]}).convention == "trec_eval"
    ids = "IDMeasures(('recall@5', \"ndcg(gain='exponential')@5\"))"
    assert run_settings({"metrics": [ids]}).convention == "custom (gain='exponential')"
    ce = (
        "IDMeasures((\"average_precision(ap_credit='any', ap_denominator='hits', "
        "credit='first_come')\", \"precision(credit='first_come', "
        "precision_denominator='retrieved')@5\"))"
    )
    assert run_settings({"metrics": [ce]}).convention == "continuous_eval"
    set_only = "TextMeasures(('context_recall@10',), RougeChunkMatch(threshold=0.7))"
    assert run_settings({"metrics": [set_only]}).convention is None


def test_the_settings_line_describes_the_metrics_compared() -> None:
    located = {"given": 0, "exact": 2, "normalised": 0, "fuzzy": 0, "unlocated": 0}
    summary = {
        "strategy": "rouge-chunk(threshold=0.7)",
        "ks": [5],
        "located": located,
        "metrics": ["TextMeasures(('ndcg@5',), RougeChunkMatch(threshold=0.7))"],
    }
    columns = {"span_iou@5": [0.1, 0.2, 0.4], "ndcg@5": [0.5, 0.25, 1.0]}
    runs = {
        "a": result(columns, summary),
        "b": result({**columns, "ndcg@5": [0.5, 0.5, 0.0]}, summary),
    }
    spans = compare(runs, metrics=["span_iou@5"], n_resamples=10)
    assert spans.settings_line() == "spans located in the corpus; cut-offs 5"
    ranked = compare(runs, metrics=["ndcg@5"], n_resamples=10)
    assert ranked.settings_line() == (
        "matching rouge-chunk(threshold=0.7); rank convention trec_eval; cut-offs 5"
    )
    every = compare(runs, metrics=["span_iou@5", "ndcg@5"], n_resamples=10)
    assert every.settings_line() == (
        "matching rouge-chunk(threshold=0.7); spans located in the corpus; rank convention "
        "trec_eval; cut-offs 5"
    )
