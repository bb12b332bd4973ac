"""The reader's duplicate-id check keeps a 128-bit hash of each id and where it was first claimed,
not the ids (ctxeval.io.seen_ids).

The messages must be exactly those of an exact check (a dict of every id, kept here as the
reference): these tests compare every record and message on every kind of source, also with a
hash that sends every id to the same slot of the table. Two different ids with equal 128-bit
hashes are taken for one id, by design (the chance is negligible, see docs/decisions.md); a test
shows what the message is then. The source is never read twice, so a file replaced during the
run cannot hide a duplicate.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import InvalidRecordError, PrecisionRecallF1, RetrievalEvaluator, RougeChunkMatch
from ctxeval.io.fields import as_field_map
from ctxeval.io.readers import read_records
from ctxeval.io.seen_ids import SeenIds, hash_id, split_hash
from ctxeval.io.sources import source_segments
from ctxeval.io.stream import RecordStream
from ctxeval.records.model import RecordError

TEXT = {"retrieved_context": ["a b"], "ground_truth_context": ["a b"]}
DUPLICATE = "; ids must be unique within a dataset: rename or remove one of the records"


class ExactSeenIds:
    """The obvious check: every id with where it was first claimed, in a dict."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}

    def claim(self, record_id: str, where: int, *, record: bool) -> int | None:
        first = self.first.setdefault(record_id, where)
        return first if record and first != where else None


def one_slot(record_id: str) -> int:
    """A hash that sends every id to the same slot, the last of the table (so probes wrap
    around), while keeping the ids apart."""
    return hash_id(record_id) | (2**64 - 1)


def _outcome(source: Any, seen: Any = None, **options: Any) -> list[tuple[Any, ...]]:
    """Every item the reader yields, as plain values (records and errors alike); ``seen``
    replaces the reader's table."""
    if seen is None:
        items = read_records(source, **options)
    else:
        segments = source_segments(source, options.get("format"))
        items = RecordStream(as_field_map(None), segments, seen=seen).records()
    out: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, RecordError):
            out.append(("error", item.index, item.id, item.location, item.field, item.message))
        else:
            out.append(("record", item.index, item.id, item.location))
    return out


def _messy_lines(count: int, seed: int) -> list[str]:
    """JSONL lines with duplicate ids (str and int), bad records that claim their id, lines
    that claim none (malformed JSON, missing fields, not an object) and blank lines."""
    rng = random.Random(seed)
    pool = [f"q{i}" for i in range(count // 3)] + [7, "7", 12, "x y"]
    lines = []
    for _ in range(count):
        roll = rng.random()
        record_id = rng.choice(pool)
        if roll < 0.6:
            lines.append(json.dumps({"id": record_id, **TEXT, "n": rng.random()}))
        elif roll < 0.7:  # a bad record: still claims its id
            lines.append(json.dumps({"id": record_id, "retrieved_context": "x", **_gt()}))
        elif roll < 0.75:  # missing a field: claims nothing
            lines.append(json.dumps({"id": record_id, "retrieved_context": ["a"]}))
        elif roll < 0.8:
            lines.append("{oops")
        elif roll < 0.85:
            lines.append("[1, 2]")
        elif roll < 0.9:
            lines.append("")
        elif roll < 0.95:  # an id that is not valid: claims nothing
            lines.append(json.dumps({"id": 1.5, **TEXT}))
        else:
            lines.append(json.dumps({"id": rng.choice(pool[:3]), **TEXT}))
    lines.insert(0, json.dumps({"id": "first", **TEXT}))
    return lines


def _gt() -> dict[str, Any]:
    return {"ground_truth_context": ["a"]}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _jsonl(path: Path, ids: list[Any]) -> Path:
    return _write(path, [json.dumps({"id": i, **TEXT}) for i in ids])


# -- hand-made cases --------------------------------------------------------------------------


def test_a_duplicate_names_its_first_occurrence(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "runs.jsonl", ["a", "b", "a", "c", "b", "a"])
    items = list(read_records(path))
    assert [type(item).__name__ for item in items] == [
        "Record",
        "Record",
        "RecordError",
        "Record",
        "RecordError",
        "RecordError",
    ]
    errors = [item for item in items if isinstance(item, RecordError)]
    assert [(e.location, e.id, e.field) for e in errors] == [
        (f"{path}:3", "a", "id"),
        (f"{path}:5", "b", "id"),
        (f"{path}:6", "a", "id"),
    ]
    assert [e.message for e in errors] == [
        f"duplicate id 'a', first seen at {path}:1{DUPLICATE}",
        f"duplicate id 'b', first seen at {path}:2{DUPLICATE}",
        f"duplicate id 'a', first seen at {path}:1{DUPLICATE}",
    ]


def test_the_first_occurrence_may_be_a_bad_record(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "q0", **TEXT}),
        json.dumps({"id": "q1", "retrieved_context": "x", **_gt()}),
        json.dumps({"id": "q1", **TEXT}),
    ]
    path = _write(tmp_path / "runs.jsonl", lines)
    bad, duplicate = (item for item in read_records(path) if isinstance(item, RecordError))
    assert bad.field == "retrieved_context"
    assert duplicate.message == f"duplicate id 'q1', first seen at {path}:2{DUPLICATE}"


def test_duplicates_across_the_files_of_a_glob(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a.jsonl", ["q1", "q7"])
    _jsonl(tmp_path / "b.jsonl", ["q3", "q7"])
    (error,) = [i for i in read_records(str(tmp_path / "*.jsonl")) if isinstance(i, RecordError)]
    assert error.index == 3
    assert error.location == f"{tmp_path}/b.jsonl:2"
    assert error.message.startswith(f"duplicate id 'q7', first seen at {tmp_path}/a.jsonl:2;")


def test_the_evaluator_stops_with_the_same_message(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "runs.jsonl", ["q1", "q2", "q3", "q2"])
    evaluator = RetrievalEvaluator(path, [PrecisionRecallF1(RougeChunkMatch())], workers=1)
    with pytest.raises(InvalidRecordError) as caught:
        evaluator.run()
    assert str(caught.value).startswith(
        f"{path}:4 (record 'q2'): duplicate id 'q2', first seen at {path}:2;"
    )
    skipped = RetrievalEvaluator(path, workers=1, on_error="skip").run().skipped
    assert [(s["index"], s["location"]) for s in skipped] == [(3, f"{path}:4")]


def test_a_file_replaced_during_the_run_cannot_hide_a_duplicate(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "runs.jsonl", ["a", "b", "c", "a"])
    items = read_records(path)
    assert [next(items).id for _ in range(3)] == ["a", "b", "c"]
    # The file is rewritten (atomically, as editors and ctxeval do) while it is being read: a
    # check that read the source again would not find the first "a" any more.
    replacement = _jsonl(tmp_path / "new.jsonl", ["x", "y", "z", "w"])
    os.replace(replacement, path)
    (last,) = list(items)
    assert isinstance(last, RecordError)
    assert last.message == f"duplicate id 'a', first seen at {path}:1{DUPLICATE}"


def test_a_source_read_once_gets_the_same_messages(tmp_path: Path) -> None:
    lines = _messy_lines(120, seed=9)
    path = _write(tmp_path / "messy.jsonl", lines)
    expected = _outcome(path)
    assert sum(1 for item in expected if "duplicate id" in str(item[-1])) >= 5
    objects = [json.loads(line) for line in lines if line.strip().startswith('{"')]
    expected_objects = _outcome(objects)

    def generator() -> Iterator[Any]:
        yield from objects

    with open(path, "rb") as handle:
        assert _outcome(handle, format="jsonl") == expected
    stream = [
        tuple(v.replace(str(path), "<stream>") if isinstance(v, str) else v for v in item)
        for item in expected
    ]
    assert _outcome(io.BytesIO(path.read_bytes()), format="jsonl") == stream
    assert _outcome(generator()) == expected_objects
    assert _outcome(iter(objects)) == expected_objects


# -- equal hashes -----------------------------------------------------------------------------


def test_two_ids_with_equal_hashes_are_taken_for_one(tmp_path: Path) -> None:
    """What a 128-bit collision would do (a chance below 10^-20 for a billion ids): the later
    id is reported as a duplicate of the earlier one, naming where that one is."""
    path = _jsonl(tmp_path / "runs.jsonl", ["a", "c", "b", "b"])
    collide = SeenIds(lambda record_id: 7 if record_id in ("a", "b") else hash_id(record_id))
    assert _outcome(path, seen=collide) == [
        ("record", 0, "a", f"{path}:1"),
        ("record", 1, "c", f"{path}:2"),
        (
            "error",
            2,
            "b",
            f"{path}:3",
            "id",
            f"duplicate id 'b', first seen at {path}:1{DUPLICATE}",
        ),
        (
            "error",
            3,
            "b",
            f"{path}:4",
            "id",
            f"duplicate id 'b', first seen at {path}:1{DUPLICATE}",
        ),
    ]
    assert _outcome(path) == _outcome(path, seen=ExactSeenIds())  # the real hash tells them apart


# -- every source, every mode: the same stream as the exact check -----------------------------


def _sources(tmp_path: Path, lines: list[str]) -> dict[str, Callable[[], Any]]:
    """The same records in every form (bad lines left out where a format cannot hold them)."""
    path = _write(tmp_path / "messy.jsonl", lines)
    objects = [json.loads(line) for line in lines if line.strip().startswith('{"')]
    records = [o for o in objects if isinstance(o.get("retrieved_context"), list)]
    frame = pd.DataFrame(
        [
            {
                "id": str(r["id"]),
                "retrieved_context": r["retrieved_context"],
                "ground_truth_context": r.get("ground_truth_context", ["a"]),
            }
            for r in records
        ]
    )
    csv_path = tmp_path / "messy.csv"
    frame.assign(
        retrieved_context=frame["retrieved_context"].map(json.dumps),
        ground_truth_context=frame["ground_truth_context"].map(json.dumps),
    ).to_csv(csv_path, index=False)
    parquet_path = tmp_path / "messy.parquet"
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False), parquet_path, row_group_size=7
    )
    half = len(lines) // 2
    _write(tmp_path / "glob-1.jsonl", lines[:half])
    _write(tmp_path / "glob-2.jsonl", lines[half:])
    return {
        "jsonl": lambda: path,
        "list": lambda: objects,
        "iterator": lambda: iter(objects),
        "frame": lambda: frame,
        "csv": lambda: csv_path,
        "parquet": lambda: parquet_path,
        "glob": lambda: str(tmp_path / "glob-*.jsonl"),
    }


@pytest.mark.parametrize("source", ["jsonl", "list", "iterator", "frame", "csv", "parquet", "glob"])
def test_every_source_gets_the_exact_checks_messages(tmp_path: Path, source: str) -> None:
    make = _sources(tmp_path, _messy_lines(150, seed=5))[source]
    expected = _outcome(make(), seen=ExactSeenIds())
    assert sum(1 for item in expected if "duplicate id" in str(item[-1])) >= 10
    assert _outcome(make()) == expected
    assert _outcome(make(), seen=SeenIds(one_slot)) == expected


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.sampled_from(["a", "b", "c", "d", "7", 7, "x"]), min_size=1, max_size=30),
    bad=st.sets(st.integers(min_value=0, max_value=29)),
)
def test_any_ids_with_any_bad_records(ids: list[Any], bad: set[int]) -> None:
    records = [
        {"id": record_id, **TEXT}
        if n not in bad
        else {"id": record_id, **TEXT, "ground_truth_context": 1}
        for n, record_id in enumerate(ids)
    ]
    exact = _outcome(records, seen=ExactSeenIds())
    assert _outcome(records) == exact
    assert _outcome(iter(records)) == exact
    assert _outcome(records, seen=SeenIds(one_slot)) == exact


# -- the table --------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    claims=st.lists(
        st.tuples(st.integers(min_value=0, max_value=400), st.booleans()), max_size=3000
    ),
    crowded=st.booleans(),
)
def test_the_table_answers_as_a_dict(claims: list[tuple[int, bool]], crowded: bool) -> None:
    seen = SeenIds(one_slot if crowded else hash_id)
    exact = ExactSeenIds()
    for where, (n, record) in enumerate(claims):
        record_id = f"id-{n}"
        assert seen.claim(record_id, where, record=record) == exact.claim(
            record_id, where, record=record
        )
    assert len(seen) == len(exact.first)


@settings(max_examples=50, deadline=None)
@given(
    claims=st.lists(
        st.tuples(st.integers(min_value=0, max_value=1200), st.booleans()), max_size=3000
    ),
    crowded=st.booleans(),
    split=st.integers(min_value=0, max_value=3000),
)
def test_claims_of_hashed_ids_answer_as_one_at_a_time(
    claims: list[tuple[int, bool]], crowded: bool, split: int
) -> None:
    # claim_many (a local partitioned run's parent, ids hashed by the workers) against claim,
    # in two calls (two partitions), through resizes and (crowded) long wrapped probes.
    hashing = one_slot if crowded else hash_id
    one, many = SeenIds(hashing), SeenIds()
    expected = []
    hashed = []
    for where, (n, record) in enumerate(claims):
        record_id = f"id-{n}"
        first = one.claim(record_id, where, record=record)
        if first is not None:
            expected.append((where, first))
        hashed.append((*split_hash(hashing(record_id)), where, record))
    found = many.claim_many(hashed[:split]) + many.claim_many(hashed[split:])
    assert found == expected
    assert len(many) == len(one)
    assert many.nbytes == one.nbytes  # the same resizes (more than 716 ids: at least one)


def test_ids_cost_a_few_tens_of_bytes() -> None:
    seen = SeenIds()
    count = 100_000
    for n in range(count):
        assert seen.claim(f"id-{n}", n, record=True) is None
    assert len(seen) == count
    assert seen.nbytes / len(seen) <= 52  # 24 bytes a slot, at least 47% of the slots full
    for n in range(0, count, 101):  # every id kept its first location through the resizes
        assert seen.claim(f"id-{n}", count + n, record=True) == n
    assert seen.claim("id-17", 200_001, record=False) is None  # a bad record reports nothing
    assert seen.claim(f"id-{count}", 200_002, record=True) is None
    assert len(seen) == count + 1


def test_resizes_keep_crowded_slots_and_wrapped_probes() -> None:
    # Every id's home is one of four slots, the last of the table among them: long runs of
    # probes, some wrapping around the end, through three resizes.
    def crowded(record_id: str) -> int:
        return hash_id(record_id) >> 64 << 64 | (2**64 - 1 - (len(record_id) % 4 << 60))

    seen = SeenIds(crowded)
    exact = ExactSeenIds()
    ids = [f"{'x' * (n % 4)}{n}" for n in range(2500)]
    for where, record_id in enumerate(ids + ids[::7]):
        assert seen.claim(record_id, where, record=True) == exact.claim(
            record_id, where, record=True
        )
    assert len(seen) == len(ids)


def test_hashed_claims_through_resizes_and_wrapped_probes() -> None:
    def crowded(record_id: str) -> int:
        return hash_id(record_id) >> 64 << 64 | (2**64 - 1 - (len(record_id) % 4 << 60))

    one, many = SeenIds(crowded), SeenIds()
    ids = [f"{'x' * (n % 4)}{n}" for n in range(2500)]
    claims = [(*split_hash(crowded(i)), where, True) for where, i in enumerate(ids + ids[::7])]
    expected = [
        (where, first)
        for where, (_, _, _, record) in enumerate(claims)
        if (first := one.claim((ids + ids[::7])[where], where, record=record)) is not None
    ]
    found = [
        pair
        for start in range(0, len(claims), 700)
        for pair in many.claim_many(claims[start : start + 700])
    ]
    assert found == expected
    assert len(expected) == len(ids[::7])
    assert len(many) == len(ids)


def test_the_hash_is_the_same_in_every_process() -> None:
    # BLAKE2b, not Python's hash(), which is seeded per process.
    code = "from ctxeval.io.seen_ids import hash_id; print(hash_id('q1'), hash_id('\\ud800'))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {f"{hash_id('q1')} {hash_id(chr(0xD800))}\n"}
    assert hash_id("q1") == int.from_bytes(blake2b(b"q1", digest_size=16).digest(), "little")


def test_a_list_of_records_sizes_the_table_once() -> None:
    records = [{"id": f"q{i}", "retrieved_ids": ["a"], "relevant_ids": ["a"]} for i in range(3000)]
    stream = RecordStream(as_field_map(None), source_segments(records, None))
    assert all(not isinstance(item, RecordError) for item in stream.records())
    assert stream.seen is not None
    assert len(stream.seen) == 3000
    assert stream.seen.nbytes == SeenIds(capacity=3000).nbytes  # no resize on the way
    # Records not counted beforehand (a generator, a file): the table grows as ids come.
    grown = RecordStream(as_field_map(None), source_segments(iter(records), None))
    assert sum(not isinstance(item, RecordError) for item in grown.records()) == 3000
    assert grown.seen is not None
    assert grown.seen.nbytes != stream.seen.nbytes
