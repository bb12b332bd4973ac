"""When the evaluator starts worker processes, and that the answer never changes the results."""

from __future__ import annotations

from typing import Any

import pytest

import ctxeval.parallel.executors as executors_module
import ctxeval.parallel.workers as workers_module
from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch

METRICS = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]


def records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "retrieved_context": [f"chunk {i} about topic {i % 7}", f"the answer is {i}"],
            "ground_truth_context": [f"the answer is {i}"],
        }
        for i in range(n)
    ]


class Pools:
    """Counts the process pools the evaluator starts (and still starts them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[int] = []
        real = workers_module.ProcessPoolExecutor

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.started.append(kwargs["max_workers"])
            return real(*args, **kwargs)

        monkeypatch.setattr(workers_module, "ProcessPoolExecutor", counting)
        monkeypatch.setattr(executors_module, "cores", lambda: 2)


def test_default_workers_stay_in_process_when_records_are_cheap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pools = Pools(monkeypatch)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", float("inf"))
    auto = RetrievalEvaluator(records(60), METRICS, batch_size=10, progress=False).run()
    assert pools.started == []
    one = RetrievalEvaluator(records(60), METRICS, workers=1, batch_size=10).run()
    assert auto.per_query == one.per_query
    assert auto.aggregate == one.aggregate


def test_default_workers_start_processes_when_records_are_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pools = Pools(monkeypatch)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", 0.0)
    auto = RetrievalEvaluator(records(60), METRICS, batch_size=10, progress=False).run(k=[1, 2])
    assert pools.started == [2]
    one = RetrievalEvaluator(records(60), METRICS, workers=1, batch_size=10).run(k=[1, 2])
    assert auto.per_query == one.per_query  # the first batch scored here, the rest in workers
    assert auto.aggregate == one.aggregate
    assert auto.summary == one.summary


def test_explicit_workers_are_obeyed_however_cheap_the_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pools = Pools(monkeypatch)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", float("inf"))
    RetrievalEvaluator(records(30), METRICS, workers=2, batch_size=10).run()
    assert pools.started == [2]


def test_one_batch_never_starts_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    pools = Pools(monkeypatch)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", 0.0)
    result = RetrievalEvaluator(records(5), METRICS, batch_size=10).run()
    assert pools.started == []
    assert result.summary["queries"] == 5


def test_the_first_records_with_tokenless_texts_are_named_alike_in_worker_processes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # The summary's first_records_with_tokenless_texts is merged from the workers' shares by
    # input position: the same ids, in input order, as in one process.
    import json

    from ctxeval import EmptyTokensWarning

    pools = Pools(monkeypatch)
    data = records(40)
    for i in (7, 23, 31, 38):  # texts in Cyrillic: no ROUGE tokens
        data[i]["retrieved_context"].append("ответ на вопрос")
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    with pytest.warns(EmptyTokensWarning, match=r"\(the first: 'q7', 'q23', 'q31'\)"):
        spread = RetrievalEvaluator(path, METRICS, workers=2, batch_size=4).run()
    assert pools.started == [2]
    with pytest.warns(EmptyTokensWarning):
        one = RetrievalEvaluator(path, METRICS, workers=1, batch_size=4).run()
    assert spread.summary["first_records_with_tokenless_texts"] == ["q7", "q23", "q31"]
    assert spread.summary == one.summary
