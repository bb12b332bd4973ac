"""EvaluationResult.to_markdown(): the aggregate as a compact table for pull-request comments."""

from __future__ import annotations

from ctxeval.results import EvaluationResult


def test_markdown_pivots_measures_by_cut_off() -> None:
    result = EvaluationResult(
        per_query=[],
        aggregate={
            "context_recall@1": 0.5,
            "context_recall@10": 0.875,
            "ndcg@10": 2 / 3,
            "ndcg(gain='exponential')@10": None,
            "map": 0.25,
            "micro_context_recall@10": 0.8,
        },
        summary={
            "queries": 8,
            "source": "runs/a.jsonl",
            "skipped_records": 1,
            "empty_ground_truth": 0,
            "strategy": "exact-chunk",
        },
    )
    assert result.to_markdown(digits=3).splitlines() == [
        "**8 queries** from `runs/a.jsonl` (1 skipped, 0 with empty ground truth), matching "
        "`exact-chunk`",
        "",
        "| metric | @1 | @10 | value |",
        "| --- | ---: | ---: | ---: |",
        "| context_recall | 0.500 | 0.875 |  |",
        "| ndcg |  | 0.667 |  |",
        "| ndcg(gain='exponential') |  | n/a |  |",
        "| map |  |  | 0.250 |",
        "| micro_context_recall |  | 0.800 |  |",
    ]


def test_one_query_is_one_query() -> None:
    summary = {"queries": 1, "source": "a.jsonl", "skipped_records": 0, "empty_ground_truth": 0}
    result = EvaluationResult(per_query=[], aggregate={"map": 0.5}, summary=summary)
    assert str(result).startswith("1 query from a.jsonl (0 skipped")
    assert result.to_markdown().startswith("**1 query** from `a.jsonl`")
    many = EvaluationResult(per_query=[], aggregate={}, summary={**summary, "queries": 2})
    assert str(many).startswith("2 queries from a.jsonl")


def test_markdown_ends_with_the_context_used() -> None:
    summary = {
        "queries": 2,
        "source": "a.jsonl",
        "skipped_records": 0,
        "empty_ground_truth": 0,
        "context_used": {
            "1": {"chunks": 1.0, "words": 12.5, "characters": 70.0},
            "300w": {"chunks": 2.5, "words": 281.25, "characters": 1500.0},
        },
    }
    result = EvaluationResult(per_query=[], aggregate={"recall@1": 0.5}, summary=summary)
    assert result.to_markdown().splitlines()[-4:] == [
        "| context used (mean per query) | chunks | words | characters |",
        "| --- | ---: | ---: | ---: |",
        "| 1 | 1.0 | 12.5 | 70.0 |",
        "| 300w | 2.5 | 281.2 | 1500.0 |",
    ]
