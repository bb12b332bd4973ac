"""Span measures through the evaluator: one pass with the chunk metrics, every path (reference,
workers, spans given in any file format) giving the same numbers, sweeps equal to separate runs,
and locating reported in the result. The CLI: tests/cli/test_cli_spans.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxeval import RetrievalEvaluator, SpanMetrics
from ctxeval.io.convert import write_records
from ctxeval.results import EvaluationResult
from ctxeval.text.locate import DEFAULT_FUZZY_THRESHOLD, Locator

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
RUN = ROOT / "fixtures" / "runs" / "fixed-100.jsonl"
MEASURES = [
    "span_iou@5",
    "span_recall",
    "span_precision@3",
    "span_f1(convention='chroma')@5",
    "context_recall@5",
    "ndcg@5",
]


def records(count: int = 40) -> list[dict[str, Any]]:
    lines = RUN.read_text(encoding="utf-8").splitlines()[:count]
    return [json.loads(line) for line in lines]


def with_spans(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with every span given (as a chunking harness writes them)."""
    from ctxeval.io.corpus import load_corpus

    locator = Locator(load_corpus(CORPUS))
    out = []
    for item in items:
        spans = {}
        for field, texts in (
            ("retrieved_spans", item["retrieved_context"]),
            ("ground_truth_spans", item["ground_truth_context"]),
        ):
            found = [locator.locate(text, item.get("doc")).span for text in texts]
            spans[field] = [None if s is None else s.as_dict() for s in found]
        out.append({**item, **spans})
    return out


@pytest.fixture(scope="module")
def located() -> EvaluationResult:
    return RetrievalEvaluator(records(), MEASURES, corpus=CORPUS, workers=1).run(k=[1, 5])


def test_span_and_chunk_metrics_in_one_run(located: EvaluationResult) -> None:
    aggregate = located.aggregate
    assert {"span_iou@5", "span_recall@1", "span_recall@5", "ndcg@5", "context_recall@5"} <= set(
        aggregate
    )
    assert "micro_span_iou@5" in aggregate
    assert "micro_span_f1(convention='chroma')@5" in aggregate
    assert all(0.0 <= v <= 1.0 for v in aggregate.values() if v is not None)
    assert located.located is not None
    assert located.located["exact"] == sum(
        len(r["retrieved_context"]) + len(r["ground_truth_context"]) for r in records()
    )
    assert located.located["unlocated"] == 0


def test_the_reference_and_worker_processes_give_the_same_numbers(
    located: EvaluationResult,
) -> None:
    for options in ({"implementation": "reference", "workers": 1}, {"workers": 2}):
        other = RetrievalEvaluator(records(), MEASURES, corpus=CORPUS, batch_size=7, **options).run(
            k=[1, 5]
        )
        assert other.aggregate == located.aggregate
        assert other.per_query == located.per_query
        assert other.located == located.located


def test_given_spans_in_every_format_equal_located_ones(
    located: EvaluationResult, tmp_path: Path
) -> None:
    given = with_spans(records())
    inputs: list[Any] = [given]
    for suffix in (".jsonl", ".csv", ".parquet"):
        if suffix == ".parquet":
            pytest.importorskip("pyarrow")
        path = tmp_path / f"spans{suffix}"
        write_records(given, path)
        inputs.append(path)
    pandas = pytest.importorskip("pandas")
    inputs.append(pandas.DataFrame(given))
    for dataset in inputs:
        result = RetrievalEvaluator(dataset, MEASURES, workers=1).run(k=[1, 5])
        assert result.aggregate == located.aggregate, dataset
        assert result.located is not None
        assert result.located["given"] == located.located["exact"]  # type: ignore[index]
    # With the corpus too, given spans are checked against it and used.
    checked = RetrievalEvaluator(given, MEASURES, corpus=CORPUS, workers=1).run(k=[1, 5])
    assert checked.aggregate == located.aggregate


def test_a_sweep_equals_separate_runs(located: EvaluationResult) -> None:
    for k in (1, 5):
        alone = RetrievalEvaluator(
            records(), ["span_recall", "span_iou"], corpus=CORPUS, workers=1
        ).run(k=k)
        for name in ("span_recall", "span_iou"):
            column = f"{name}@{k}"
            if column in located.aggregate:
                assert alone.aggregate[column] == located.aggregate[column]
        assert alone.aggregate[f"span_recall@{k}"] == located.aggregate[f"span_recall@{k}"]


def test_texts_not_located_are_counted_and_shown() -> None:
    items = records(3)
    items[1] = {**items[1], "ground_truth_context": ["zzzz nothing like the corpus qqqq"]}
    result = RetrievalEvaluator(items, ["span_recall@5"], corpus=CORPUS, workers=1).run()
    assert result.located is not None
    assert result.located["unlocated"] == 1
    assert result.located["first_unlocated"] == [
        {
            "record": items[1]["id"],
            "field": "ground_truth_spans[0]",
            "text": "zzzz nothing like the corpus qqqq",
        }
    ]
    # A missed excerpt scores 0, it does not vanish.
    assert result.per_query[1]["span_recall@5"] == 0.0
    assert "1 not located" in str(result)


def test_empty_ground_truth_follows_the_policy() -> None:
    items = with_spans(records(3))
    items[0] = {**items[0], "ground_truth_context": [], "ground_truth_spans": []}
    zero = RetrievalEvaluator(items, [SpanMetrics(k=5)], workers=1).run()
    assert zero.per_query[0]["span_recall@5"] == 0.0
    skip = RetrievalEvaluator(items, [SpanMetrics(k=5, empty_ground_truth="skip")], workers=1).run()
    assert skip.per_query[0]["span_recall@5"] is None
    assert skip.summary["excluded_from_aggregates"] == 1
    with pytest.raises(ValueError, match="no relevant ground truth"):
        RetrievalEvaluator(items, [SpanMetrics(empty_ground_truth="error")], workers=1).run()


def test_errors_name_the_fix() -> None:
    with pytest.raises(ValueError, match=r"record 'q001'.*no retrieved_spans.*corpus="):
        RetrievalEvaluator(records(2), ["span_iou@5"], workers=1).run()
    with pytest.raises(ValueError, match=r"unit 'rouge'.*give the corpus"):
        RetrievalEvaluator(records(2), ["span_iou(unit='rouge')@5"])
    with pytest.raises(ValueError, match="chunk ids"):
        RetrievalEvaluator(
            [{"retrieved_ids": ["a"], "relevant_ids": ["a"]}], ["span_iou@5"], workers=1
        ).run()


def test_the_cli_default_threshold_is_the_library_default() -> None:
    from ctxeval.cli.common import FUZZY_THRESHOLD

    assert FUZZY_THRESHOLD == DEFAULT_FUZZY_THRESHOLD
