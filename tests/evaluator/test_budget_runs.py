"""Budgets through whole runs: sweeps equal separate runs, the context used, result files and
worker processes (the command line: tests/cli/test_cli_budgets.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator
from ctxeval.results import EvaluationResult

MEASURES = ["context_recall", "context_precision", "recall", "precision", "ndcg", "hits"]
WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta"]

chunks = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
records = st.lists(
    st.tuples(
        st.lists(chunks, max_size=5),
        st.lists(chunks.filter(str.strip), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=5,
).map(
    lambda items: [
        {"id": f"q{i}", "retrieved_context": r, "ground_truth_context": g}
        for i, (r, g) in enumerate(items)
    ]
)
cutoffs = st.lists(
    st.sampled_from([1, 2, 4, "1w", "3w", "7w", "5c", "20c", "2t", "6t"]),
    min_size=1,
    max_size=4,
    unique=True,
)


def _run(data: list[dict[str, Any]], k: Any, **options: Any) -> EvaluationResult:
    return RetrievalEvaluator(data, MEASURES, workers=1, **options).run(k=k)


@settings(max_examples=25, deadline=None)
@given(data=records, ks=cutoffs, policy=st.sampled_from(["whole", "truncate"]))
def test_a_sweep_equals_separate_runs(data: list[dict[str, Any]], ks: list[Any], policy: str):
    sweep = _run(data, ks, budget_policy=policy)
    for k in ks:
        alone = _run(data, k, budget_policy=policy)
        for column, value in alone.aggregate.items():
            assert sweep.aggregate[column] == value, column
        for swept, row in zip(sweep.per_query, alone.per_query, strict=True):
            assert {c: swept[c] for c in row} == row
        label = str(k)
        assert sweep.summary["context_used"][label] == alone.summary["context_used"][label]


@settings(max_examples=25, deadline=None)
@given(data=records, unit=st.sampled_from("wct"), policy=st.sampled_from(["whole", "truncate"]))
def test_a_budget_beyond_every_record_equals_the_whole_list(
    data: list[dict[str, Any]], unit: str, policy: str
) -> None:
    budget = f"100000{unit}"
    at_budget = _run(data, budget, budget_policy=policy)
    whole = _run(data, None)
    for row, full in zip(at_budget.per_query, whole.per_query, strict=True):
        assert {c.replace(f"@{budget}", ""): v for c, v in row.items()} == full
    assert at_budget.summary["context_used"][budget] == whole.summary["context_used"]["all"]


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_reference_equals_core_at_budgets(implementation: str) -> None:
    data = [
        {
            "id": f"q{i}",
            "retrieved_context": [" ".join(WORDS[j % 6 : j % 6 + 1 + i % 3]) for j in range(i + 2)],
            "ground_truth_context": [WORDS[i % 6], " ".join(WORDS[1:3])],
        }
        for i in range(8)
    ]
    for policy in ("whole", "truncate"):
        ks = [2, "3w", "12c", "4t", None]
        core = _run(data, ks, budget_policy=policy)
        other = _run(data, ks, budget_policy=policy, implementation=implementation)
        assert list(other.per_query) == list(core.per_query)
        assert other.aggregate == core.aggregate
        assert other.summary == core.summary


DATA = [
    {"id": "q1", "retrieved_context": ["aa bb cc", "dd ee", "ff"], "ground_truth_context": ["ff"]},
    {"id": "q2", "retrieved_context": ["gg hh ii jj kk ll"], "ground_truth_context": ["gg"]},
    {"id": "q3", "retrieved_context": [], "ground_truth_context": ["zz"]},
]


def test_context_used_at_counts_and_budgets_hand_computed() -> None:
    result = _run(DATA, [2, "5w"])
    # 2: q1 "aa bb cc", "dd ee" (5 words, 13 characters); q2 its chunk (6, 17); q3 nothing
    assert result.summary["context_used"] == {
        "2": {"chunks": 3 / 3, "words": 11 / 3, "characters": 30 / 3},
        "5w": {"chunks": 2 / 3, "words": 5 / 3, "characters": 13 / 3},
    }
    assert result.summary["mean_k_used"] == {"2": 3 / 3, "5w": 2 / 3}
    assert result.summary["budget_policy"] == "whole"
    truncated = _run(DATA, ["5w"], budget_policy="truncate")
    # q2 gets "gg hh ii jj kk" (5 words, 14 characters)
    assert truncated.summary["context_used"]["5w"] == {
        "chunks": 1.0,
        "words": 10 / 3,
        "characters": 27 / 3,
    }


def test_id_mode_reports_chunks_used() -> None:
    data = [{"id": "q", "retrieved_ids": ["a", "b", "c"], "relevant_ids": ["b"]}]
    result = RetrievalEvaluator(data, ["recall"], workers=1).run(k=[2, 5])
    assert result.summary["context_used"] == {"2": {"chunks": 2.0}, "5": {"chunks": 3.0}}


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".parquet"])
def test_results_round_trip_with_budgets(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    result = _run(DATA, [2, "5w", "20c"], budget_policy="truncate")
    path = result.save(tmp_path / f"result{suffix}")
    loaded = EvaluationResult.load(path)
    assert loaded.aggregate == result.aggregate
    assert loaded.summary["context_used"] == result.summary["context_used"]
    assert loaded.summary["budget_policy"] == "truncate"
    assert [row["recall@5w"] for row in loaded.per_query] == [
        row["recall@5w"] for row in result.per_query
    ]


def test_worker_processes_give_the_same_numbers() -> None:
    data = [{**record, "id": f"{record['id']}-{i}"} for i in range(20) for record in DATA]
    ks = [1, "5w", "20c", "3t"]
    local = RetrievalEvaluator(data, MEASURES, workers=1).run(k=ks)
    workers = RetrievalEvaluator(data, MEASURES, workers=2, batch_size=7).run(k=ks)
    assert workers.aggregate == local.aggregate
    assert workers.summary == local.summary
    assert list(workers.per_query) == list(local.per_query)
