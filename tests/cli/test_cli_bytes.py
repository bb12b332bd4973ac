"""Odd bytes, text and numbers through the real entry point: one case per class, exit codes and
one-line messages, never a traceback (issue 10, items 5, 6 and 9)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.cutoffs.cutoff import MAX_K
from ctxeval.records.checks import MAX_GRADE

GOOD = {"id": "q1", "retrieved_context": ["a b c"], "ground_truth_context": ["a b c"]}


def _user_error(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_lone_surrogate_stops_or_is_skipped_and_saves(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "d.jsonl",
        '{"id": "q\\ud800", "retrieved_context": ["x \\ud800"], "ground_truth_context": ["a"]}',
        json.dumps({**GOOD, "id": "q2"}),
    )
    _user_error(ctxeval("evaluate", data), "d.jsonl:1", "lone surrogate", "id holds")
    out = tmp_path / "out.jsonl"
    done = ctxeval("evaluate", data, "--on-error", "skip", "-o", out)
    assert done.returncode == 0, done.stderr
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["skipped"][0]["id"] == "q\\ud800"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_utf16_dataset_is_read_whole(tmp_path: Path, encoding: str) -> None:
    data = tmp_path / "d.jsonl"
    text = "".join(json.dumps({**GOOD, "id": f"q{i}"}) + "\r\n" for i in range(3))
    data.write_bytes(text.encode(encoding))
    done = ctxeval("evaluate", data, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["queries"] == 3


def test_deep_json_is_a_skippable_bad_record(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", "[" * 5000 + "]" * 5000, json.dumps(GOOD))
    _user_error(ctxeval("evaluate", data), "d.jsonl:1", "too deeply")
    done = ctxeval("evaluate", data, "--on-error", "skip", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["queries"] == 1


def test_non_utf8_trec_file(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.run", "q1 Q0 d1 1 2.0 t")
    qrels = tmp_path / "q.qrels"
    qrels.write_bytes(b"q1 0 d1 1\nq1 0 d\xe92 1\n")
    _user_error(ctxeval("evaluate", "--run", run, "--qrels", qrels), "q.qrels:2: not valid UTF-8")


def test_compare_with_a_non_utf8_dataset_and_a_truncated_result(tmp_path: Path) -> None:
    good = _write(tmp_path / "a.jsonl", json.dumps(GOOD), json.dumps({**GOOD, "id": "q2"}))
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "q\xe92"}\n')
    _user_error(ctxeval("compare", good, bad), "b.jsonl:2", "not valid UTF-8")
    saved = tmp_path / "saved.jsonl"
    assert ctxeval("evaluate", good, "-o", saved).returncode == 0
    saved.write_bytes(saved.read_bytes()[:-15])
    _user_error(ctxeval("compare", good, saved), "saved.jsonl:3: not valid JSON", "truncated")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-k", "100000000000000000000"], [f"at most {MAX_K}"]),
        (["-k", str(2**63)], [f"at most {MAX_K}"]),
        (["-m", "ndcg@99999999999999999999"], [f"at most {MAX_K}"]),
    ],
)
def test_huge_cut_offs(tmp_path: Path, args: list[str], fragments: list[str]) -> None:
    data = _write(tmp_path / "d.jsonl", json.dumps(GOOD))
    _user_error(ctxeval("evaluate", data, *args), *fragments)


@pytest.mark.parametrize("grade", ["1.5e308", "1100"])
def test_huge_grades(tmp_path: Path, grade: str) -> None:
    data = _write(
        tmp_path / "d.jsonl",
        '{"retrieved_context": ["a"], "ground_truth_context": [{"text": "a", "grade": '
        + grade
        + "}]}",
    )
    _user_error(ctxeval("evaluate", data), "d.jsonl:1", f"at most {MAX_GRADE}")
    _user_error(ctxeval("evaluate", data, "-m", "ndcg(gain='exponential')"), f"at most {MAX_GRADE}")


def test_json_array_in_jsonl_and_duplicated_csv_column(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps([GOOD], indent=2), encoding="utf-8")
    _user_error(ctxeval("evaluate", data), "d.jsonl:1", "looks like a JSON array", ".json")
    table = _write(
        tmp_path / "d.csv",
        "id,retrieved_context,ground_truth_context,ground_truth_context",
        'q1,"[""a""]","[""a""]","[""b""]"',
    )
    _user_error(ctxeval("evaluate", table), "'ground_truth_context' appears more than once")


def test_threshold_zero_never_matches_blank_chunks(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "d.jsonl",
        '{"retrieved_context": ["", "  ", "zzz"], "ground_truth_context": ["x y"]}',
    )
    done = ctxeval(
        "evaluate", data, "--match", "rouge-chunk(threshold=0)", "--metrics", "set",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["aggregate"]["context_precision"] == pytest.approx(1 / 3)


def test_json_messages_that_end_in_at_say_at_once(tmp_path: Path) -> None:
    """json's "Unterminated string starting at" and "Invalid control character at" are
    followed by the column, not by a second "at" (the catalogue's "starting at at column")."""
    data = _write(tmp_path / "d.jsonl", json.dumps(GOOD), '{"id": "q2", "retrieved_context": ["a')
    done = ctxeval("evaluate", data)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"ctxeval: error: {data}:2: malformed JSON: Unterminated string starting at column 36 "
        "(character 35); fix the line or remove it. Fix the record, or pass --on-error skip to "
        "skip bad records and count them in the results\n"
    )
    document = tmp_path / "d.json"
    document.write_text('[{"id": "a\tb"}]', encoding="utf-8")
    done = ctxeval("evaluate", document)
    assert done.stderr == (
        f"ctxeval: error: {document}: not valid JSON: Invalid control character at line 1 "
        "column 11\n"
    )


def test_a_latin1_byte_in_a_csv_is_one_skippable_row(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    row = '{},"[""a b c""]","[""a b c""]"\n'
    rows = [row.format(f"q{i}").encode() for i in range(1, 400)]  # past a decoder's first block
    rows[300] = rows[300].replace(b"a b c", b"caf\xe9", 1)
    data.write_bytes(b"id,retrieved_context,ground_truth_context\n" + b"".join(rows))
    message = (
        f"{data}:row 301 (record 'q301'): the row is not valid UTF-8 (byte 0xe9 on line 302 of "
        "the file, in column 'retrieved_context'); save the file as UTF-8"
    )
    _user_error(ctxeval("evaluate", data), f"ctxeval: error: {message}")
    done = ctxeval("evaluate", data, "--on-error", "skip", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["queries"] == 398
    assert f"ctxeval: skipped {message}\n" in done.stderr
