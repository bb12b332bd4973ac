"""``ndcg(ties='average')`` on the record path (issue 12, item 3): records' ``retrieved_scores``
through ``RetrievalEvaluator`` (ID and text mode, both implementations, worker processes),
``from_trec`` on a run file with ties, the bad records of a list not ranked by its scores, and
records without scores."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxeval.parallel.workers as workers_module
from ctxeval import RetrievalEvaluator, evaluate_run
from ctxeval.foundation.errors import InvalidRecordError
from ctxeval.io.trec import read_qrels, read_trec_run

sklearn_metrics = pytest.importorskip("sklearn.metrics")

AVERAGE = "ndcg(ties='average')"
SPECS = [AVERAGE, f"{AVERAGE}@3", "ndcg(ideal='retrieved', ties='average')@5", "ndcg@3"]


def _values(result: Any, spec: str) -> dict[str, float]:
    return {row["id"]: row[spec] for row in result.per_query}


def test_hand_computed_values_in_both_modes() -> None:
    # a (grade 1) and b (0) tie first, c (2) and d (0) tie third: gains 1/2, 1/2, 1, 1.
    dcg = 0.5 / math.log2(2) + 0.5 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    scores = [1.0, 1.0, 0.5, 0.5]
    by_ids = {"id": "q", "retrieved_ids": list("abcd"), "retrieved_scores": scores}
    by_texts = {"id": "q", "retrieved_context": list("abcd"), "retrieved_scores": scores}
    ids = RetrievalEvaluator([{**by_ids, "qrels": {"a": 1, "c": 2}}], [AVERAGE]).run()
    texts = RetrievalEvaluator(
        [{**by_texts, "ground_truth_context": [{"text": "a"}, {"text": "c", "grade": 2}]}],
        [AVERAGE],
        matching="exact-chunk",
    ).run()
    assert math.isclose(ids.aggregate[AVERAGE], dcg / ideal, rel_tol=1e-15)
    assert texts.aggregate[AVERAGE] == ids.aggregate[AVERAGE]
    # The same list without its scores: every rank its own group (ties='ordered').
    plain = RetrievalEvaluator([{**by_ids, "retrieved_scores": None, "qrels": {"a": 1, "c": 2}}])
    ordered = (1 / math.log2(2) + 2 / math.log2(4)) / ideal
    assert plain.run(k=None).aggregate["ndcg"] == pytest.approx(ordered, rel=1e-15)
    unscored = RetrievalEvaluator(
        [{**by_ids, "retrieved_scores": None, "qrels": {"a": 1, "c": 2}}], [AVERAGE]
    ).run()
    assert unscored.aggregate[AVERAGE] == plain.run().aggregate["ndcg"]


def _trec_run_with_ties(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "run.trec"
    rng = np.random.default_rng(7)
    lines = []
    for q in range(30):
        for d in range(12):
            score = float(rng.integers(0, 4)) / 2  # many ties
            lines.append(f"q{q} Q0 d{d} 0 {score} t")
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(
            f"q{q} 0 d{d} {int(rng.integers(0, 3))}\n" for q in range(31) for d in range(0, 14, 2)
        ),
        encoding="utf-8",
    )
    return run, qrels


def test_from_trec_equals_evaluate_run_and_scikit_learn(tmp_path: Path) -> None:
    run_path, qrels_path = _trec_run_with_ties(tmp_path)
    run, qrels = read_trec_run(run_path), read_qrels(qrels_path)
    specs = [*SPECS, "ndcg(ideal='retrieved', ties='average')@10"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = evaluate_run(run, qrels, specs)
        results = {
            (impl, workers): RetrievalEvaluator.from_trec(
                run_path, qrels_path, specs, implementation=impl, workers=workers
            ).run()
            for impl, workers in (("core", 1), ("reference", 1), ("core", 2))
        }
    for result in results.values():
        for spec in specs:
            assert _values(result, spec) == {q: v[spec] for q, v in expected.items()}
    # scikit-learn scores the documents it is given: compare where the ideal is the run's own.
    spec = "ndcg(ideal='retrieved', ties='average')@10"
    got = _values(results["core", 1], spec)
    for q, scored in run.items():
        docs = list(scored)
        y_true = np.array([[max(qrels[q].get(d, 0), 0) for d in docs]], dtype=np.float64)
        y_score = np.array([[scored[d] for d in docs]], dtype=np.float64)
        want = float(sklearn_metrics.ndcg_score(y_true, y_score, k=10))
        assert got[q] == pytest.approx(want, rel=1e-14, abs=1e-15)
    # The ties matter here: averaging changes most queries' values.
    ordered = _values(results["core", 1], "ndcg@3")
    averaged = _values(results["core", 1], f"{AVERAGE}@3")
    assert sum(ordered[q] != averaged[q] for q in ordered) > 10


def _scored_dataset(path: Path, n: int) -> Path:
    rng = np.random.default_rng(3)
    lines = []
    for i in range(n):
        size = int(rng.integers(0, 9))
        scores = sorted((float(rng.integers(0, 4)) for _ in range(size)), reverse=True)
        lines.append(
            json.dumps(
                {
                    "id": f"q{i}",
                    "retrieved_ids": [f"d{j}" for j in rng.permutation(10)[:size].tolist()],
                    "retrieved_scores": scores,
                    "qrels": {f"d{j}": int(rng.integers(0, 3)) for j in range(0, 10, 3)},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_worker_processes_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    real = workers_module.ProcessPoolExecutor

    def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(workers_module, "ProcessPoolExecutor", counting)
    path = _scored_dataset(tmp_path / "d.jsonl", 600)
    one = RetrievalEvaluator(path, SPECS, workers=1).run()
    many = RetrievalEvaluator(path, SPECS, workers=2, partition_bytes=8_000).run()
    # records read here, sent to the workers in batches (pickled), and blocks read by them
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    batches = RetrievalEvaluator(rows, SPECS, workers=2, batch_size=64)
    for other in (many, batches.run()):
        assert other.aggregate == one.aggregate
        assert [dict(r) for r in other.per_query] == [dict(r) for r in one.per_query]
    assert len(started) == 2  # both runs used worker processes


def test_a_list_not_ranked_by_its_scores_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "a", "retrieved_ids": ["x", "y"], "retrieved_scores": [2, 1], "qrels": ["y"]},
        {"id": "b", "retrieved_ids": ["x", "y"], "retrieved_scores": [0.1, 0.7], "qrels": ["y"]},
    ]
    path.write_text("\n".join(map(json.dumps, rows)) + "\n", encoding="utf-8")
    for impl in ("core", "reference"):
        with pytest.raises(InvalidRecordError) as error:
            RetrievalEvaluator(path, [AVERAGE], implementation=impl).run()
        assert str(error.value).startswith(f"{path}:2 (record 'b'): retrieved_scores[1] = 0.7")
        assert "list the retrieved items best first" in str(error.value)
        assert "for distances, where lower is closer, negate them" in str(error.value)
        skipped = RetrievalEvaluator(path, [AVERAGE], on_error="skip", implementation=impl).run()
        assert [s["location"] for s in skipped.skipped] == [f"{path}:2"]
    # Without a measure that averages over ties, the order of the scores does not matter.
    assert len(RetrievalEvaluator(path, ["ndcg@2"]).run().per_query) == 2


def test_ties_with_budgets_agree_across_implementations() -> None:
    rows = [
        {
            "id": f"q{i}",
            "retrieved_context": ["alpha beta", "gamma delta", "alpha gamma", "beta"],
            "retrieved_scores": [1.0, 1.0, 1.0, 0.5][i:] + [0.5] * i,
            "ground_truth_context": [["gamma delta", "beta"][i % 2]],
        }
        for i in range(3)
    ]
    for policy in ("whole", "truncate"):
        core = RetrievalEvaluator(
            rows, [AVERAGE], matching="exact-chunk", budget_policy=policy
        ).run(k=[1, "3w", "5c"])
        reference = RetrievalEvaluator(
            rows,
            [AVERAGE],
            matching="exact-chunk",
            budget_policy=policy,
            implementation="reference",
        ).run(k=[1, "3w", "5c"])
        assert core.per_query == reference.per_query


ITEMS = st.lists(st.integers(0, 2), min_size=0, max_size=8)


@settings(max_examples=40, deadline=None)
@given(grades=st.lists(ITEMS, min_size=1, max_size=6), k=st.sampled_from([None, 1, 2, 5]))
def test_distinct_scores_average_equals_ordered(grades: list[list[int]], k: int | None) -> None:
    # With every score distinct each group is one document: ties='average' is ties='ordered'.
    records = [
        {
            "id": f"q{i}",
            "retrieved_ids": [f"d{j}" for j in range(len(row))],
            "retrieved_scores": [float(len(row) - j) for j in range(len(row))],
            "qrels": {f"d{j}": g for j, g in enumerate(row) if g},
        }
        for i, row in enumerate(grades)
    ]
    suffix = "" if k is None else f"@{k}"
    average, ordered = f"{AVERAGE}{suffix}", f"ndcg{suffix}"
    result = RetrievalEvaluator(records, [average, ordered]).run()
    for row in result.per_query:
        assert row[average] == row[ordered]
