"""Local worker processes that read their own partitions (issue 13, item 1): the same blocks as a
Dask run, and results identical to ``workers=1``: rows, aggregate, summary, bad records with
``file:line``, duplicate ids across partitions, streamed output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxeval.parallel.executors as executors_module
import ctxeval.parallel.workers as workers_module
from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidRecordError
from ctxeval.parallel.blocks import block_extent, owned_lines, plan_blocks, read_block
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
    real = executors_module.LocalProcesses._partitions

    def spy(self: Any, *args: Any) -> Any:
        calls.append(self.workers)
        return real(self, *args)

    monkeypatch.setattr(executors_module.LocalProcesses, "_partitions", spy)
    monkeypatch.setattr(executors_module, "PARTITION_MIN_BYTES", 10_000)
    path = _dataset(tmp_path / "d.jsonl", 400)  # ~50 kB: over 2 x 10 kB
    RetrievalEvaluator(path, MEASURES, workers=2).run()
    assert calls == [2]
    monkeypatch.setattr(executors_module, "PARTITION_MIN_BYTES", 1 << 20)
    RetrievalEvaluator(path, MEASURES, workers=2).run()  # small: batches from this process
    assert calls == [2]


# --- one pass per block: extents, ids checked in this process, blocks scored again ----------


def _lines_dataset(path: Path, lines: list[str], newline: str = "\n", end: str = "\n") -> Path:
    path.write_bytes((newline.join(lines) + end).encode("utf-8"))
    return path


def _record(i: int, record_id: str | None = None) -> str:
    record: dict[str, Any] = {
        "retrieved_context": [f"chunk {i} about topic {i % 7}", f"the answer is {i}"],
        "ground_truth_context": [f"the answer is {i}"],
    }
    if record_id is not None:
        record = {"id": record_id, **record}
    return json.dumps(record)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("end", ["\n", ""])
def test_block_extent_equals_what_the_reader_reads(tmp_path: Path, newline: str, end: str) -> None:
    lines = [_record(i, f"q{i}") for i in range(60)]
    for at in (0, 7, 8, 30, 59):  # blank and whitespace-only lines, first and last included
        lines.insert(at, " \t" if at % 2 else "")
    path = _lines_dataset(tmp_path / "d.jsonl", lines, newline, end)
    for block_bytes in (97, 500, 4096, 1 << 20):
        blocks = plan_blocks(str(path), block_bytes=block_bytes)[0]
        extents = [block_extent(block) for block in blocks]
        for block, (positions, records) in zip(blocks, extents, strict=True):
            with open(path, "rb") as handle:
                assert positions == sum(1 for _ in owned_lines(handle, block.start, block.end))
            assert records == sum(1 for _ in read_block(block, None))
        assert sum(p for p, _ in extents) == len(lines) + (end == "" and lines[-1] == "")


def test_parquet_block_extent(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [json.loads(_record(i, f"q{i}")) for i in range(50)]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=7)
    blocks = plan_blocks(str(path), block_records=10)[0]
    assert len(blocks) > 2
    for block in blocks:
        records = sum(1 for _ in read_block(block, None))
        assert block_extent(block) == (records, records)


def test_duplicates_within_and_across_blocks_and_claimed_by_bad_records(tmp_path: Path) -> None:
    lines = [_record(i, f"q{i}") for i in range(300)]
    lines[1] = _record(1, "q0")  # the same block as its first occurrence
    lines[40] = '{"id": "bad", "retrieved_context": "oops", "ground_truth_context": ["x"]}'
    lines[250] = _record(250, "bad")  # first claimed by a bad record
    lines[251] = _record(251, "q1")  # line 2 holds q0 instead: q1 is claimed here only
    lines[299] = _record(299, "q250")  # line 251 holds "bad": q250 is claimed here only
    lines[120] = ""
    lines[121] = "{not json"
    path = _lines_dataset(tmp_path / "d.jsonl", lines)
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run(k=[1, 3])
    for partition_bytes in (1_000, 7_000, 1 << 20):
        many = RetrievalEvaluator(
            path, MEASURES, workers=2, partition_bytes=partition_bytes, on_error="skip"
        ).run(k=[1, 3])
        _same(many, one)
    assert [s["location"] for s in one.skipped] == [f"{path}:{n}" for n in (2, 41, 122, 251)]
    assert "first seen at" in one.skipped[0]["message"]
    with pytest.raises(InvalidRecordError) as local:
        RetrievalEvaluator(path, MEASURES, workers=1).run()
    for partition_bytes in (1_000, 7_000):
        with pytest.raises(InvalidRecordError) as split:
            RetrievalEvaluator(path, MEASURES, workers=2, partition_bytes=partition_bytes).run()
        assert str(split.value) == str(local.value)


def test_a_block_stopped_at_a_bad_record_still_reports_an_earlier_duplicate(
    tmp_path: Path,
) -> None:
    lines = [_record(i, f"q{i}") for i in range(200)]
    lines[150] = _record(150, "q3")  # a duplicate, then a bad record in the same block
    lines[152] = "{not json"
    path = _lines_dataset(tmp_path / "d.jsonl", lines)
    with pytest.raises(InvalidRecordError) as local:
        RetrievalEvaluator(path, MEASURES, workers=1).run()
    assert "duplicate id 'q3'" in str(local.value)
    with pytest.raises(InvalidRecordError) as split:
        RetrievalEvaluator(path, MEASURES, workers=2, partition_bytes=4_000).run()
    assert str(split.value) == str(local.value)


def test_records_without_ids_and_blank_lines_keep_their_indices(tmp_path: Path) -> None:
    lines = [_record(i) for i in range(200)]
    for at in (3, 50, 51, 120):
        lines[at] = "   "
    lines[160] = "[1, 2]"  # not an object
    path = _lines_dataset(tmp_path / "d.jsonl", lines)
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run()
    many = RetrievalEvaluator(
        path, MEASURES, workers=2, partition_bytes=1_500, on_error="skip"
    ).run()
    _same(many, one)
    assert [row["id"] for row in many.per_query][-1] == "#195"


def test_a_json_array_hint_only_for_a_files_first_line(tmp_path: Path) -> None:
    lines = [_record(i, f"q{i}") for i in range(100)]
    lines[0] = "["
    lines[40] = "["
    path = _lines_dataset(tmp_path / "d.jsonl", lines)
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run()
    assert "JSON array" in one.skipped[0]["message"]
    assert "JSON array" not in one.skipped[1]["message"]
    # every line a block's first in turn: only line 1 gets the hint
    for partition_bytes in (150, 2_000):
        many = RetrievalEvaluator(
            path, MEASURES, workers=2, partition_bytes=partition_bytes, on_error="skip"
        ).run()
        _same(many, one)


def test_parquet_partitions_with_duplicates_equal_one_process(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [json.loads(_record(i, f"q{i}")) for i in range(120)]
    rows[90]["id"] = "q5"
    rows[91]["id"] = "q90x"
    rows[100]["id"] = "q90x"
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10)
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run()
    many = RetrievalEvaluator(
        path, MEASURES, workers=2, partition_records=20, on_error="skip"
    ).run()
    _same(many, one)
    assert [s["location"] for s in one.skipped] == [f"{path}:row {n}" for n in (91, 101)]


def test_a_glob_with_an_empty_file_and_duplicates_across_files(tmp_path: Path) -> None:
    _lines_dataset(tmp_path / "a.jsonl", [_record(i, f"q{i}") for i in range(80)])
    (tmp_path / "b.jsonl").write_bytes(b"")
    # c.jsonl:n holds a.jsonl:n+1's id (numbering that skipped the empty file would not see it)
    later = [*range(1, 6), *range(100, 180)]
    _lines_dataset(tmp_path / "c.jsonl", [_record(i, f"q{i}") for i in later])
    pattern = str(tmp_path / "*.jsonl")
    one = RetrievalEvaluator(pattern, MEASURES, workers=1, on_error="skip").run()
    many = RetrievalEvaluator(
        pattern, MEASURES, workers=2, partition_bytes=2_000, on_error="skip"
    ).run()
    _same(many, one)
    assert [s["location"] for s in many.skipped] == [
        f"{tmp_path / 'c.jsonl'}:{n}" for n in range(1, 6)
    ]
    assert many.skipped[0]["message"].startswith(
        f"duplicate id 'q1', first seen at {tmp_path / 'a.jsonl'}:2"
    )


def test_every_later_block_a_duplicate_stops_and_skips_as_one_process(tmp_path: Path) -> None:
    # Two copies of a file: every block of the second copy is scored again, its duplicates
    # known, while the next blocks are checked; rows still come in input order.
    lines = [_record(i, f"q{i}") for i in range(150)]
    path = _lines_dataset(tmp_path / "d.jsonl", lines + lines)
    one = RetrievalEvaluator(path, MEASURES, workers=1, on_error="skip").run()
    many = RetrievalEvaluator(
        path, MEASURES, workers=2, partition_bytes=1_500, on_error="skip"
    ).run()
    _same(many, one)
    assert len(many.skipped) == 150
    with pytest.raises(InvalidRecordError) as local:
        RetrievalEvaluator(path, MEASURES, workers=1).run()
    with pytest.raises(InvalidRecordError) as split:
        RetrievalEvaluator(path, MEASURES, workers=2, partition_bytes=1_500).run()
    assert str(split.value) == str(local.value)
    assert f"first seen at {path}:1;" in str(split.value)


def test_a_partition_of_a_list_is_read_as_the_whole_list_is() -> None:
    # Found while reviewing the batch reader: the partitions of a Python list (what Dask workers
    # read) skipped the list reader's checks and conversions, so a record with a lone surrogate
    # was scored on Dask and skipped locally, and a pydantic record (ragas' samples) was "not a
    # mapping" on Dask only.
    from pydantic import BaseModel

    from ctxeval.io.readers import read_records

    class Sample(BaseModel):
        retrieved_context: list[str]
        ground_truth_context: list[str]
        note: str | None = None

    data: list[Any] = [
        {"retrieved_context": ["x y"], "ground_truth_context": ["x y"]},
        {"retrieved_context": ["x \ud800"], "ground_truth_context": ["x y"]},
        Sample(retrieved_context=["z"], ground_truth_context=["x y"]),
        {"retrieved_context": ["x y"], "ground_truth_context": ["x"]},
    ]
    whole = list(map(repr, read_records(data)))
    (blocks,) = plan_blocks(data, block_records=2)
    parts = [
        repr(item)
        for block in blocks
        for item in read_block(block, None, first_index=block.first_pos)
    ]
    assert parts == whole
    assert "lone surrogate" in whole[1]
    assert whole[2].startswith("Record(index=2")
