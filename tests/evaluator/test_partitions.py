"""Local worker processes that read their own partitions (issue 13, item 1): the same blocks as a
Dask run, and results identical to ``workers=1``: rows, aggregate, summary, bad records with
``file:line``, duplicate ids across partitions, streamed output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxeval.evaluator as evaluator_module
import ctxeval.workers as workers_module
from ctxeval import RetrievalEvaluator
from ctxeval.errors import InvalidRecordError
from ctxeval.results import EvaluationResult

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
MEASURES = ["recall@1", "ndcg@5", "context_precision@3", "average_precision"]


def _dataset(path: Path, n: int, bad: dict[int, str] | None = None) -> Path:
    lines = []
    for i in range(n):
        record = {
            "id": f"q{i}",
            "question": f"what about {i}?",
            "retrieved_context": [f"chunk {i} about topic {i % 7}", f"the answer is {i}"],
            "ground_truth_context": [f"the answer is {i}"],
        }
        lines.append(json.dumps(record))
    for line, text in (bad or {}).items():
        lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Pools:
    """Counts the process pools started: partitions go through ``LocalPool``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = 0
        real = workers_module.ProcessPoolExecutor

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.started += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(workers_module, "ProcessPoolExecutor", counting)


def _same(a: EvaluationResult, b: EvaluationResult) -> None:
    assert a.aggregate == b.aggregate
    assert a.summary == b.summary
    assert a.skipped == b.skipped
    assert list(a.per_query) == list(b.per_query)


@pytest.mark.parametrize("partition_bytes", [2_000, 50_000])
def test_partitions_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partition_bytes: int
) -> None:
    pools = Pools(monkeypatch)
    path = _dataset(tmp_path / "d.jsonl", 400)
    many = RetrievalEvaluator(
        path, MEASURES, workers=2, partition_bytes=partition_bytes, progress=False
    ).run(k=[1, 3])
    assert pools.started == 1
    one = RetrievalEvaluator(path, MEASURES, workers=1).run(k=[1, 3])
    _same(many, one)


def test_bad_records_and_duplicates_across_partitions(tmp_path: Path) -> None:
    bad = {
        8: '{"id": "q6", "retrieved_context": [], "ground_truth_context": ["x"]}',  # q6 again
        150: '{"id": "b", "retrieved_context": "oops", "ground_truth_context": ["x"]}',
        390: '{"id": "q3", "retrieved_context": [], "ground_truth_context": ["x"]}',  # far away
        391: "{not json",
    }
    path = _dataset(tmp_path / "d.jsonl", 400, bad)
    many = RetrievalEvaluator(
        path, MEASURES, workers=2, partition_bytes=3_000, on_error="skip"
    ).run()
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run()
    _same(many, one)
    assert [s["location"] for s in many.skipped] == [f"{path}:{n}" for n in (8, 150, 390, 391)]
    with pytest.raises(InvalidRecordError) as local:
        RetrievalEvaluator(path, MEASURES, workers=1).run()
    with pytest.raises(InvalidRecordError) as split:
        RetrievalEvaluator(path, MEASURES, workers=2, partition_bytes=3_000).run()
    assert str(split.value) == str(local.value)


def test_glob_of_files_and_streamed_output(tmp_path: Path) -> None:
    for name in ("fixed-100", "sentence-3"):
        (tmp_path / f"{name}.jsonl").write_bytes((FIXTURES / f"{name}.jsonl").read_bytes())
    # the two files share ids: every record of the second file is a duplicate
    pattern = str(tmp_path / "*.jsonl")
    (tmp_path / "out").mkdir()
    out_many, out_one = tmp_path / "out" / "many.jsonl", tmp_path / "out" / "one.jsonl"
    many = RetrievalEvaluator(
        pattern, workers=2, partition_bytes=100_000, on_error="skip", keep_per_query=False
    ).run(k=[5], output=out_many)
    one = RetrievalEvaluator(pattern, workers=1, on_error="skip", keep_per_query=False).run(
        k=[5], output=out_one
    )
    assert many.aggregate == one.aggregate
    assert many.skipped == one.skipped
    assert len(many.skipped) == 99
    assert EvaluationResult.load(out_many).per_query == EvaluationResult.load(out_one).per_query


def test_large_files_are_read_by_the_workers_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = evaluator_module.RetrievalEvaluator._run_in_processes

    def spy(self: Any, *args: Any) -> Any:
        calls.append(self.workers)
        return real(self, *args)

    monkeypatch.setattr(evaluator_module.RetrievalEvaluator, "_run_in_processes", spy)
    monkeypatch.setattr(evaluator_module, "PARTITION_MIN_BYTES", 10_000)
    path = _dataset(tmp_path / "d.jsonl", 400)  # ~50 kB: over 2 x 10 kB
    RetrievalEvaluator(path, MEASURES, workers=2).run()
    assert calls == [2]
    monkeypatch.setattr(evaluator_module, "PARTITION_MIN_BYTES", 1 << 20)
    RetrievalEvaluator(path, MEASURES, workers=2).run()  # small: batches from this process
    assert calls == [2]
