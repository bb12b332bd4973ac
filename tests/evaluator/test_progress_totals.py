"""A run's progress: the records scored, out of a total counted cheaply where it can be (in-memory
data, JSONL lines, Parquet rows), in every local executor; a function gets increasing counts
ending at the total."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxeval import RetrievalEvaluator
from ctxeval.parallel.partitions import record_total

MEASURES = ["recall@1", "context_precision@3"]


def _record(i: int) -> dict[str, object]:
    return {
        "id": f"q{i}",
        "retrieved_context": [f"chunk {i} about topic {i % 7}", f"the answer is {i}"],
        "ground_truth_context": [f"the answer is {i}"],
    }


def _jsonl(path: Path, n: int, blank_every: int = 0) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps(_record(i)) + "\n")
            if blank_every and not i % blank_every:
                out.write("  \n")  # blank lines are no records
    return path


def test_record_totals(tmp_path: Path) -> None:
    records = [_record(i) for i in range(12)]
    assert record_total(records) == 12
    assert record_total(_jsonl(tmp_path / "a.jsonl", 30, blank_every=4)) == 30
    _jsonl(tmp_path / "b.jsonl", 5)
    assert record_total(str(tmp_path / "*.jsonl")) == 35
    assert record_total(_jsonl(tmp_path / "c.data", 3), format="jsonl") == 3

    def generated() -> Iterator[dict[str, object]]:
        yield from records

    assert record_total(generated()) is None  # would have to be read
    (tmp_path / "d.csv").write_text("id\nq1\n")
    assert record_total(tmp_path / "d.csv") is None
    assert record_total("-") is None
    assert record_total(tmp_path / "missing.jsonl") is None


def test_record_total_of_parquet(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    rows = [_record(i) for i in range(9)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r.parquet", row_group_size=4)
    assert record_total(tmp_path / "r.parquet") == 9


@pytest.mark.parametrize(
    "options", [{"workers": 1}, {"workers": 2, "partition_bytes": 2_000}], ids=["one", "parts"]
)
def test_a_function_gets_increasing_counts_ending_at_the_total(
    tmp_path: Path, options: dict[str, int]
) -> None:
    path = _jsonl(tmp_path / "d.jsonl", 300, blank_every=7)
    seen: list[int] = []
    RetrievalEvaluator(path, MEASURES, batch_size=32, progress=seen.append, **options).run()
    assert len(seen) > 1
    assert seen == sorted(seen)
    assert seen[-1] == 300


def test_the_drawn_bar_has_the_datasets_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    path = _jsonl(tmp_path / "d.jsonl", 40, blank_every=3)
    RetrievalEvaluator(path, MEASURES, workers=1, batch_size=8, progress=True).run()
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("ctxeval: scoring d.jsonl [####################] 100%  40/40 records")
