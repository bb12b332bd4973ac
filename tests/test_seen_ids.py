"""The reader's duplicate-id check keeps 64-bit hashes of the ids, not the ids.

A hash seen before sends the reader back over the source (a replay) to find whether the id is
really a duplicate and where it was first seen. The messages must be exactly those of an exact
check (a dict of every id, which is what a source that cannot be read twice still uses), so
these tests force hash collisions with a tiny hash and compare every record and message.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import InvalidRecordError, PrecisionRecallF1, RetrievalEvaluator, RougeChunkMatch
from ctxeval.io import readers
from ctxeval.io.fields import as_field_map
from ctxeval.io.readers import _HashSet, _Reader, _SeenIds, read_records
from ctxeval.io.records import Record, RecordError

TEXT = {"retrieved_context": ["a b"], "ground_truth_context": ["a b"]}


def _outcome(source: Any, **options: Any) -> list[tuple[Any, ...]]:
    """Every item the reader yields, as plain values (records and errors alike)."""
    out: list[tuple[Any, ...]] = []
    for item in read_records(source, **options):
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


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the replays (second reads of the source) readers make."""
    calls: list[int] = []
    replay = _Reader._replay

    def counting(self: _Reader, stop: int, visit: Callable[[str, int], None]) -> None:
        calls.append(stop)
        replay(self, stop, visit)

    monkeypatch.setattr(_Reader, "_replay", counting)
    return calls


def _collide(monkeypatch: pytest.MonkeyPatch, hash_: Callable[[str], int], replays: int) -> None:
    monkeypatch.setattr(readers, "_id_hash", hash_)
    monkeypatch.setattr(readers, "_MAX_REPLAYS", replays)


# -- hand-made cases --------------------------------------------------------------------------


def test_a_duplicate_names_its_first_occurrence_after_a_collision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replays: list[int]
) -> None:
    _collide(monkeypatch, lambda record_id: 7, replays=100)  # every id has the same hash
    ids = ["a", "b", "a", "c", "b", "a"]
    path = _write(tmp_path / "runs.jsonl", [json.dumps({"id": i, **TEXT}) for i in ids])
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
        f"duplicate id 'a', first seen at {path}:1; ids must be unique within a dataset: "
        "rename or remove one of the records",
        f"duplicate id 'b', first seen at {path}:2; ids must be unique within a dataset: "
        "rename or remove one of the records",
        f"duplicate id 'a', first seen at {path}:1; ids must be unique within a dataset: "
        "rename or remove one of the records",
    ]
    # "b", the second "a" and "c" met a hash seen before: one replay each (reading the records
    # before them); the later "b" and "a" were then known exactly.
    assert replays == [1, 2, 3]


def test_distinct_ids_with_equal_hashes_are_not_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replays: list[int]
) -> None:
    _collide(monkeypatch, lambda record_id: 7 if record_id in ("a", "b") else hash(record_id), 4)
    path = _write(
        tmp_path / "runs.jsonl", [json.dumps({"id": i, **TEXT}) for i in ["a", "c", "b", "b"]]
    )
    items = list(read_records(path))
    assert [isinstance(item, Record) for item in items] == [True, True, True, False]
    assert items[3].message.startswith(  # type: ignore[union-attr]
        f"duplicate id 'b', first seen at {path}:3;"
    )
    assert replays == [2]  # only "b" met a's hash; its second occurrence was known exactly


def test_the_first_occurrence_may_be_a_bad_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _collide(monkeypatch, lambda record_id: 1, 4)
    lines = [
        json.dumps({"id": "q0", **TEXT}),
        json.dumps({"id": "q1", "retrieved_context": "x", **_gt()}),
        json.dumps({"id": "q1", **TEXT}),
    ]
    path = _write(tmp_path / "runs.jsonl", lines)
    bad, duplicate = (item for item in read_records(path) if isinstance(item, RecordError))
    assert bad.field == "retrieved_context"
    assert duplicate.message.startswith(f"duplicate id 'q1', first seen at {path}:2;")


def test_collisions_across_the_files_of_a_glob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _collide(monkeypatch, lambda record_id: 3, 4)
    _write(tmp_path / "a.jsonl", [json.dumps({"id": i, **TEXT}) for i in ["q1", "q7"]])
    _write(tmp_path / "b.jsonl", [json.dumps({"id": i, **TEXT}) for i in ["q3", "q7"]])
    (error,) = [i for i in read_records(str(tmp_path / "*.jsonl")) if isinstance(i, RecordError)]
    assert error.index == 3
    assert error.location == f"{tmp_path}/b.jsonl:2"
    assert error.message.startswith(f"duplicate id 'q7', first seen at {tmp_path}/a.jsonl:2;")


def test_the_evaluator_stops_with_the_same_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _collide(monkeypatch, lambda record_id: 5, 4)
    ids = ["q1", "q2", "q3", "q2"]
    path = _write(tmp_path / "runs.jsonl", [json.dumps({"id": i, **TEXT}) for i in ids])
    evaluator = RetrievalEvaluator(path, [PrecisionRecallF1(RougeChunkMatch())], workers=1)
    with pytest.raises(InvalidRecordError) as caught:
        evaluator.run()
    assert str(caught.value).startswith(
        f"{path}:4 (record 'q2'): duplicate id 'q2', first seen at {path}:2;"
    )
    skipped = RetrievalEvaluator(path, workers=1, on_error="skip").run().skipped
    assert [(s["index"], s["location"]) for s in skipped] == [(3, f"{path}:4")]


# -- every source, every mode: the same stream as the exact check -----------------------------


def _sources(tmp_path: Path, lines: list[str]) -> dict[str, Callable[[], Any]]:
    """The same records in every replayable form (bad lines left out where a format cannot
    hold them)."""
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
        "frame": lambda: frame,
        "csv": lambda: csv_path,
        "parquet": lambda: parquet_path,
        "glob": lambda: str(tmp_path / "glob-*.jsonl"),
    }


def _exact_outcome(monkeypatch: pytest.MonkeyPatch, make: Callable[[], Any]) -> list[Any]:
    """What the reader yields when it keeps every id exactly (as it does for a source that
    cannot be read twice; the check as it was before the hashes)."""
    with monkeypatch.context() as patch:
        patch.setattr(readers, "_replayable", lambda segment: False)
        return _outcome(make())


@pytest.mark.parametrize("source", ["jsonl", "list", "frame", "csv", "parquet", "glob"])
@pytest.mark.parametrize(
    ("name", "hash_", "max_replays"),
    [
        ("every id collides, resolved by replays", lambda s: 7, 10**9),
        ("every id collides, then exact", lambda s: 7, 4),
        ("some ids collide", lambda s: len(s), 10**9),
        ("no replay allowed: exact at the first hit", lambda s: 7, 0),
    ],
)
def test_collisions_change_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    replays: list[int],
    source: str,
    name: str,
    hash_: Callable[[str], int],
    max_replays: int,
) -> None:
    del name
    make = _sources(tmp_path, _messy_lines(150, seed=5))[source]
    expected = _exact_outcome(monkeypatch, make)
    assert sum(1 for item in expected if "duplicate id" in str(item[-1])) >= 10
    assert _outcome(make()) == expected  # the real hash
    replays.clear()
    _collide(monkeypatch, hash_, max_replays)
    assert _outcome(make()) == expected
    assert replays  # the colliding hashes did send the reader back
    if max_replays < 10**9:
        assert len(replays) == max_replays + 1  # then every id was kept exactly


def test_sources_that_cannot_be_read_twice_keep_ids_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replays: list[int]
) -> None:
    lines = _messy_lines(120, seed=9)
    path = _write(tmp_path / "messy.jsonl", lines)
    expected = _outcome(path)
    objects = [json.loads(line) for line in lines if line.strip().startswith('{"')]
    expected_objects = _outcome(objects)
    replays.clear()
    _collide(monkeypatch, lambda s: 7, 10**9)

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
    assert replays == []


@settings(max_examples=40, deadline=None)
@given(
    ids=st.lists(st.sampled_from(["a", "b", "c", "d", "7", 7, "x"]), min_size=1, max_size=30),
    bad=st.sets(st.integers(min_value=0, max_value=29)),
    modulus=st.integers(min_value=1, max_value=3),
)
def test_any_ids_with_any_collisions(ids: list[Any], bad: set[int], modulus: int) -> None:
    records = [
        {"id": record_id, **TEXT}
        if n not in bad
        else {"id": record_id, **TEXT, "ground_truth_context": 1}
        for n, record_id in enumerate(ids)
    ]
    exact = _outcome(iter(records))  # an iterator: the exact check
    assert _outcome(records) == exact  # the real hash
    original = readers._id_hash, readers._MAX_REPLAYS
    try:
        readers._id_hash = lambda s: len(s) % modulus  # type: ignore[assignment]
        readers._MAX_REPLAYS = 2
        assert _outcome(records) == exact
    finally:
        readers._id_hash, readers._MAX_REPLAYS = original


# -- the replay and the hash set --------------------------------------------------------------


def test_a_replay_visits_exactly_the_claims_of_the_first_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "messy.jsonl", _messy_lines(200, seed=2))
    segments = readers._segments(path, None)
    claiming = _Reader(as_field_map(None), segments)
    claiming.claims = []
    items = list(claiming.records())
    visited: list[tuple[str, int]] = []
    _Reader(as_field_map(None), segments)._replay(
        len(items), lambda i, key: visited.append((i, key))
    )
    assert visited == [(record_id, pos) for pos, record_id, _ in claiming.claims]
    assert len(visited) > 100
    # and stops before the record it was asked about
    head: list[tuple[str, int]] = []
    _Reader(as_field_map(None), segments)._replay(50, lambda i, key: head.append((i, key)))
    indices = {item.location: item.index for item in items}
    assert head == [v for v in visited if indices[f"{path}:{v[1]}"] < 50]


def test_ids_are_kept_as_hashes_only() -> None:
    seen = _SeenIds(replay=lambda stop, visit: None)
    for n in range(50_000):
        assert seen.claim(f"id-{n}", n, n, record=True) is None
    assert len(seen._hashes) == 50_000
    assert seen._exact is None
    assert seen._resolved == {}
    assert seen.replays == 0
    assert seen.claim("id-17", 60_000, 60_000, record=True) is None  # the replay found nothing


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=3000))
def test_hash_set_membership(values: list[int]) -> None:
    members = _HashSet()
    seen: set[int] = set()
    for value in values:
        key = (value & (2**64 - 1)) or 1
        assert members.add(value) is (key not in seen)
        seen.add(key)
    assert len(members) == len(seen)
    assert all(not members.add(value) for value in values)
