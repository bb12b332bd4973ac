"""Issue 10 through the API: outputs never replace inputs, bad paths fail before scoring, a
failed write keeps the result, files read back what was written."""

from __future__ import annotations

import csv
import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError, InvalidRecordError
from ctxeval.io import atomic
from ctxeval.io.convert import convert_dataset, write_records
from ctxeval.io.paths import check_output, same_file
from ctxeval.io.readers import read_records
from ctxeval.io.spreadsheet import neutralise, restore
from ctxeval.io.trec import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run
from ctxeval.results import EvaluationResult

# the fixture has a record in another language; its warning is not what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::ctxeval.foundation.errors.EmptyTokensWarning")

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "fixtures" / "records.jsonl"
ID_ROWS = [
    {"id": "q1", "retrieved_ids": ["d1", "d2"], "qrels": {"d1": 1}},
    {"id": "q2", "retrieved_ids": ["d3"], "qrels": {"d3": 2}},
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    shutil.copy(RECORDS, path)
    return path


def _aliases(data: Path) -> list[Path]:
    link = data.with_name("link.jsonl")
    link.symlink_to(data)
    hard = data.with_name("hard.jsonl")
    os.link(data, hard)
    (data.parent / "sub").mkdir()
    return [data, data.parent / "sub" / ".." / data.name, link, hard]


def test_run_output_that_is_the_dataset_is_refused(data: Path) -> None:
    before = data.read_bytes()
    for output in _aliases(data):
        with pytest.raises(
            InvalidArgumentError, match=r"run\(output=\.\.\.\) .* is also the input"
        ):
            RetrievalEvaluator(data, workers=1).run(output=output)
    assert data.read_bytes() == before


def test_run_output_that_is_one_file_of_a_glob_is_refused(data: Path) -> None:
    shutil.copy(data, data.with_name("e.jsonl"))
    with pytest.raises(InvalidArgumentError, match="is also the input"):
        RetrievalEvaluator(str(data.parent / "*.jsonl"), workers=1).run(
            output=data.with_name("e.jsonl")
        )


def test_run_output_is_checked_before_scoring(data: Path) -> None:
    scored: list[int] = []
    evaluator = RetrievalEvaluator(data, workers=1, progress=scored.append)
    (data.parent / "dir.jsonl").mkdir()
    with pytest.raises(InvalidArgumentError, match="is a directory"):
        evaluator.run(output=data.parent / "dir.jsonl")
    assert scored == []


def test_save_onto_the_dataset_is_refused(data: Path) -> None:
    result = RetrievalEvaluator(data, workers=1).run()
    with pytest.raises(InvalidArgumentError, match=r"save\(path\) .* is also the input"):
        result.save(data)
    with pytest.raises(InvalidArgumentError, match=r"unknown extension '\.txt'"):
        result.save(data.with_suffix(".txt"))


def test_convert_onto_an_input_is_refused(data: Path, tmp_path: Path) -> None:
    before = data.read_bytes()
    with pytest.raises(InvalidArgumentError, match=r"TARGET .* is also the input"):
        convert_dataset(str(data), str(data))
    with pytest.raises(InvalidArgumentError, match=r"--qrels-out .* is also the input"):
        convert_dataset(str(data), str(tmp_path / "r.trec"), qrels_out=str(data))
    assert data.read_bytes() == before


def test_convert_with_on_error_raise_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    rows = [
        {"id": "a", "retrieved_context": ["x"], "ground_truth_context": ["x"]},
        {"id": "b", "retrieved_context": "x", "ground_truth_context": ["x"]},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    target = tmp_path / "out.jsonl"
    with pytest.raises(InvalidRecordError, match=r"bad.jsonl:2 \(record 'b'\).*on_error='skip'"):
        convert_dataset(str(source), str(target), on_error="raise")
    assert not target.exists()
    written, skipped = convert_dataset(str(source), str(target))  # the default: skip
    assert (written, [s.id for s in skipped]) == (1, ["b"])
    with pytest.raises(InvalidArgumentError, match="on_error"):
        convert_dataset(str(source), str(target), on_error="ignore")


def test_same_file() -> None:
    assert same_file(RECORDS, RECORDS.parent / ".." / RECORDS.parent.name / RECORDS.name)
    assert not same_file(RECORDS, RECORDS.with_name("other.jsonl"))
    assert not same_file("missing-a", "missing-b")


def test_check_output_leaves_a_missing_directory_to_the_writer(tmp_path: Path) -> None:
    assert check_output(tmp_path / "new" / "x.jsonl", flag="-o", suffixes=(".jsonl",))


def test_a_full_disk_keeps_the_result_and_names_the_file(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = data.with_name("out.jsonl")
    output.write_text("previous\n")
    real = os.fsync

    def full(fd: int) -> None:
        del fd
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError, match="No space left") as caught:
        RetrievalEvaluator(data, workers=1).run(output=output)
    monkeypatch.setattr(atomic.os, "fsync", real)
    result: Any = caught.value.result  # type: ignore[attr-defined]
    assert isinstance(result, EvaluationResult)
    assert result.summary["queries"] == 8
    assert any(str(output) in note for note in caught.value.__notes__)
    assert output.read_text() == "previous\n"
    assert sorted(p.name for p in data.parent.iterdir()) == ["d.jsonl", "out.jsonl"]


# -- formats that read back what was written ---------------------------------------------------
@pytest.mark.parametrize(
    ("run", "fragment"),
    [
        ({"q 1": {"d1": 1.0}}, "query id 'q 1' contains whitespace"),
        ({"q1": {"d\u00a01": 1.0}}, "contains whitespace"),
        ({"q1": {"": 1.0}}, "is empty"),
        ({"#q": {"d1": 1.0}}, "starts with '#'"),
        ({"q1": {"d1": float("nan")}}, "is not finite"),
    ],
)
def test_write_trec_run_refuses_what_would_read_back_different(
    tmp_path: Path, run: dict[str, dict[str, float]], fragment: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=fragment):
        write_trec_run(run, tmp_path / "r.trec")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("grade", [2.5, True, 1e-9])
def test_write_trec_qrels_refuses_grades_that_are_not_whole(tmp_path: Path, grade: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="not a whole number"):
        write_trec_qrels({"q1": {"d1": grade}}, tmp_path / "q.txt")
    assert list(tmp_path.iterdir()) == []


def test_trec_files_read_back_equal(tmp_path: Path) -> None:
    run = {"q1": {"d1": 3.0, "d2": 0.5}, "q2": {"é": -1.25}}
    qrels = {"q1": {"d1": 2, "d9": 0}, "q2": {"é": 1.0}}
    write_trec_run(run, tmp_path / "r.trec")
    write_trec_qrels(qrels, tmp_path / "q.txt")
    assert read_trec_run(tmp_path / "r.trec") == run
    assert read_trec_qrels(tmp_path / "q.txt") == qrels


def test_parquet_result_with_mixed_metadata_reads_back(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    rows = [
        {**ID_ROWS[0], "tags": ["a"], "extra": {"k": 1}},
        {**ID_ROWS[1], "tags": "plain", "extra": 3},
    ]
    result = RetrievalEvaluator(rows, ["P@1"], workers=1).run()
    result.save(tmp_path / "r.parquet")
    back = EvaluationResult.load(tmp_path / "r.parquet")
    assert [dict(r) for r in back.per_query] == [dict(r) for r in result.per_query]
    assert back.aggregate == result.aggregate
    assert "json_columns" not in back.summary


def test_write_records_parquet_rejects_mixed_types_naming_field_and_records(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyarrow")
    rows = [{"id": "a", "meta": ["x"]}, {"id": "b", "meta": "x"}]
    with pytest.raises(InvalidArgumentError, match="field 'meta' is a list of str in record 'a'"):
        write_records(rows, tmp_path / "x.parquet")
    assert list(tmp_path.iterdir()) == []


def test_neutralise() -> None:
    for text in ("=1+1", "+1", "-1", "@A1", "\tx", "\rx", "'=x", "''-x"):
        assert neutralise(text) == "'" + text
        assert restore(neutralise(text)) == text  # type: ignore[arg-type]
    for value in ("a=1", "", "'", "'a", "''", -1.5, -1, None, ["=x"]):
        assert neutralise(value) == value
    for cell in ("a=1", "", "'", "'a", "=x"):  # no quote before a formula character
        assert restore(cell) == cell


@given(st.text(alphabet="'=+-@\t\rab,\"", max_size=8))
def test_restore_undoes_neutralise(text: str) -> None:
    assert restore(neutralise(text)) == text  # type: ignore[arg-type]


HOSTILE = ["=cmd|' /C calc'!A0", "-x", "@user", "+1", "'=already quoted", "\tx"]


def _hostile_result() -> EvaluationResult:
    rows = [
        {**ID_ROWS[0], "id": "-1", "note": HOSTILE[0], "=field": HOSTILE[1], "n": -0.5},
        {**ID_ROWS[1], "id": "@q2", "note": HOSTILE[2], "=field": HOSTILE[3], "n": -2},
        {**ID_ROWS[1], "id": "q3", "note": HOSTILE[4], "=field": HOSTILE[5], "n": 3},
    ]
    return RetrievalEvaluator(rows, ["P@1"], workers=1).run()


def _csv_cells(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_csv_results_quote_formulas_by_default_and_read_back_equal(tmp_path: Path) -> None:
    result = _hostile_result()
    saved = result.save(tmp_path / "safe.csv")
    header, *rows = _csv_cells(saved)
    assert header == ["id", "note", "'=field", "n", "precision@1"]
    assert [row[:4] for row in rows] == [
        ["'-1", "'" + HOSTILE[0], "'-x", "-0.5"],  # a negative number stays a number
        ["'@q2", "'@user", "'+1", "-2"],
        ["q3", "''=already quoted", "'\tx", "3"],
    ]
    back = EvaluationResult.load(saved)
    assert list(back.per_query) == list(result.per_query)
    assert back.aggregate == result.aggregate
    assert back.summary == result.summary  # the quoting mark is not part of the result
    assert json.loads((tmp_path / "safe.summary.json").read_text())["csv_formulas"] == "quoted"


def test_csv_results_raw_on_request_read_back_equal(tmp_path: Path) -> None:
    result = _hostile_result()
    saved = result.save(tmp_path / "raw.csv", csv_safe=False)
    header, *rows = _csv_cells(saved)
    assert header[2] == "=field"
    assert [row[1] for row in rows] == HOSTILE[0::2]
    assert list(EvaluationResult.load(saved).per_query) == list(result.per_query)
    assert "csv_formulas" not in json.loads((tmp_path / "raw.summary.json").read_text())


def test_csv_datasets_quote_formulas_and_read_back_equal(tmp_path: Path) -> None:
    rows = [
        {**ID_ROWS[0], "id": "-1", "note": HOSTILE[0], "=field": HOSTILE[4]},
        {**ID_ROWS[1], "id": "@q2", "note": HOSTILE[1], "=field": "plain"},
    ]
    for safe in (True, False):
        path = tmp_path / f"records-{safe}.csv"
        write_records(rows, path, csv_safe=safe)
        header, first, _ = _csv_cells(path)
        assert (header[-1], first[0], first[-1]) == (
            ("'=field", "'-1", "''=already quoted")
            if safe
            else ("=field", "-1", "'=already quoted")
        )
        records = list(read_records(path))
        assert [r.id for r in records] == ["-1", "@q2"]  # type: ignore[union-attr]
        assert (
            [r.metadata for r in records]
            == [  # type: ignore[union-attr]
                {"note": HOSTILE[0], "=field": HOSTILE[4] if safe else HOSTILE[4][1:]},
                {"note": HOSTILE[1], "=field": "plain"},
            ]
        )


def test_every_file_ctxeval_writes_goes_through_the_atomic_writer() -> None:
    """A guard for the class, not one example: no module opens a file for writing itself,
    except the atomic writer and private files that are never a user's output."""
    import ast

    allowed = {
        ("io/atomic.py", "fdopen"),  # the atomic writer itself
        ("cli/evaluate.py", "open"),  # stdin spooled into a private temporary directory
        # The embedding cache's files: each written under a temporary name and renamed into
        # place (without the writer's fsync: a file lost in a crash is computed again, and a
        # damaged one is detected by its checksum), below the io package.
        ("retrieval/disk_cache.py", "NamedTemporaryFile"),
    }
    found = []
    for path in sorted((ROOT / "src" / "ctxeval").rglob("*.py")):
        where = path.relative_to(ROOT / "src" / "ctxeval").as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("write_text", "write_bytes", "NamedTemporaryFile", "mkstemp"):
                found.append((where, name))
            if name in ("open", "fdopen"):
                modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
                modes += [
                    k.value.value
                    for k in node.keywords
                    if k.arg == "mode" and isinstance(k.value, ast.Constant)
                ]
                if name == "open" and isinstance(func, ast.Attribute) and node.args:
                    # Path.open(mode): the mode is the first argument
                    first = node.args[0]
                    modes += [first.value] if isinstance(first, ast.Constant) else []
                if any(isinstance(m, str) and set(m) & set("wax+") for m in modes):
                    found.append((where, name))
    unexpected = [hit for hit in found if hit not in allowed and hit != ("io/atomic.py", "mkstemp")]
    assert unexpected == []


def test_from_trec_refuses_an_output_that_is_its_qrels(tmp_path: Path) -> None:
    # The qrels file is an input too (found in the issue-10 work: only the run was checked).
    run = tmp_path / "run.trec"
    qrels = tmp_path / "qrels.jsonl"  # a name run(output=...) would otherwise accept
    run.write_text("q1 Q0 d1 1 2.0 tag\n", encoding="utf-8")
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    before = qrels.read_bytes()
    evaluator = RetrievalEvaluator.from_trec(run, qrels, ["map"])
    with pytest.raises(ValueError, match="is also"):
        evaluator.run(output=qrels)
    assert qrels.read_bytes() == before


def test_convert_writes_parquet_in_row_groups_that_workers_share(tmp_path: Path) -> None:
    # Found by a trial at scale: one row group of 40,000 records was read by one worker.
    pq = pytest.importorskip("pyarrow.parquet")
    from ctxeval.io.convert import ROW_GROUP_RECORDS

    records = [
        {"id": f"q{i}", "retrieved_ids": [f"d{i % 7}"], "relevant_ids": [f"d{i % 5}"]}
        for i in range(2 * ROW_GROUP_RECORDS + 1)
    ]
    source = tmp_path / "ids.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    target = tmp_path / "ids.parquet"
    convert_dataset(source, target)
    assert pq.ParquetFile(target).num_row_groups == 3
    assert [r.id for r in read_records(target)] == [r["id"] for r in records]


def test_dict_metadata_survives_a_conversion_to_parquet(tmp_path: Path) -> None:
    # Found by a trial at scale: convert writes a dict as an Arrow map, which read back as a
    # list of (key, value) pairs, so per-query rows depended on the dataset's format.
    pytest.importorskip("pyarrow")
    records = [
        {"id": f"q{i}", "retrieved_ids": ["a", "b"], "relevant_ids": ["a"], "meta": {"i": i}}
        for i in range(5)
    ]
    source = tmp_path / "m.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    convert_dataset(source, tmp_path / "m.parquet")
    assert [r.metadata["meta"] for r in read_records(tmp_path / "m.parquet")] == [
        {"i": i} for i in range(5)
    ]
    rows = [
        RetrievalEvaluator(p, ["map"], workers=1).run().per_query
        for p in (source, tmp_path / "m.parquet")
    ]
    assert list(rows[0]) == list(rows[1])
