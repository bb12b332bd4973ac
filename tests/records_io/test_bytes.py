"""Odd bytes and text: lone surrogates, UTF-16/32 files, non-UTF-8 bytes, over-deep JSON, a JSON
array in a .jsonl file, a duplicated CSV column, damaged result files (issue 10, items 5, 9)."""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError, InvalidRecordError
from ctxeval.io.formats import unwritable
from ctxeval.io.readers import read_records
from ctxeval.io.trec import read_trec_qrels, read_trec_run
from ctxeval.records.checks import MAX_DEPTH, find_unwritable, plainly_writable
from ctxeval.records.model import Record, RecordError
from ctxeval.results import EvaluationResult

GOOD = {"id": "q1", "retrieved_context": ["a b c"], "ground_truth_context": ["a b c"]}


def _lines(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _only_error(source: object, **kwargs: object) -> RecordError:
    items = list(read_records(source, **kwargs))  # type: ignore[arg-type]
    errors = [i for i in items if isinstance(i, RecordError)]
    assert len(errors) == 1, items
    return errors[0]


# -- lone surrogates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "field", "where"),
    [
        (
            '{"id": "q1", "retrieved_context": ["ok", "x \\ud800 y"], '
            '"ground_truth_context": ["a"]}',
            "retrieved_context",
            "retrieved_context[1] holds a lone surrogate \\ud800 at character 2",
        ),
        (
            '{"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["\\udfff"]}',
            "ground_truth_context",
            "ground_truth_context[0] holds a lone surrogate \\udfff at character 0",
        ),
        (
            '{"id": "q1", "retrieved_context": ["a"], "ground_truth_context": '
            '[{"text": "a\\udc00", "grade": 2}]}',
            "ground_truth_context",
            "ground_truth_context[0]['text']",
        ),
        (
            '{"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"], '
            '"meta": {"tags": ["x", "\\ud83d"]}}',
            "meta",
            "meta['tags'][1] holds a lone surrogate \\ud83d",
        ),
        (
            '{"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"], '
            '"question": "why\\ud800"}',
            "question",
            "question holds a lone surrogate",
        ),
    ],
)
def test_lone_surrogates_in_jsonl_are_bad_records(
    tmp_path: Path, line: str, field: str, where: str
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(line + "\n" + json.dumps({**GOOD, "id": "q2"}) + "\n", encoding="utf-8")
    error = _only_error(path)
    assert error.field == field
    assert error.id == "q1"
    assert error.location == f"{path}:1"
    assert where in error.message
    assert "fix or remove the character" in error.message


def test_a_surrogate_in_an_id_is_claimed_escaped_and_saves(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "q\\ud800", "retrieved_context": ["a"], "ground_truth_context": ["a"]}\n'
        + json.dumps(GOOD)
        + "\n",
        encoding="utf-8",
    )
    error = _only_error(path)
    assert error.id == "q\\ud800"  # escaped: printable and writable
    result = RetrievalEvaluator(path, workers=1, on_error="skip").run()
    for suffix in (".jsonl", ".json", ".csv"):
        saved = result.save(tmp_path / f"out{suffix}")
        assert EvaluationResult.load(saved).skipped == result.skipped


def test_utf8_encoded_surrogate_bytes_are_caught(tmp_path: Path) -> None:
    # json.loads decodes bytes with "surrogatepass": ED A0 80 becomes "\ud800".
    path = tmp_path / "d.jsonl"
    path.write_bytes(
        b'{"id": "q1", "retrieved_context": ["x\xed\xa0\x80"], "ground_truth_context": ["a"]}\n'
    )
    assert "lone surrogate \\ud800" in _only_error(path).message


def test_surrogate_pairs_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "q1", "retrieved_context": ["smile \\ud83d\\ude00"], '
        '"ground_truth_context": ["smile"]}\n',
        encoding="utf-8",
    )
    (record,) = read_records(path)
    assert isinstance(record, Record)
    assert record.retrieved == ["smile \U0001f600"]


@pytest.mark.parametrize(
    "record",
    [
        {"id": "q1", "retrieved_context": ["a\ud800"], "ground_truth_context": ["a"]},
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"], "k\udc80": 1},
        {"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"], "m": ("\ud800",)},
    ],
)
def test_surrogates_from_python_objects(record: dict[str, object]) -> None:
    error = _only_error([record, {**GOOD, "id": "q2"}])
    assert "lone surrogate" in error.message
    assert error.id == "q1"


def test_surrogates_in_a_json_file_and_a_csv_cell(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('[{"retrieved_context": ["\\ud800"], "ground_truth_context": ["a"]}]')
    assert "retrieved_context[0] holds a lone surrogate" in _only_error(path).message
    csv_path = tmp_path / "d.csv"
    csv_path.write_text(
        'id,retrieved_context,ground_truth_context\nq1,"[""\\ud800""]","[""a""]"\n',
        encoding="utf-8",
    )
    error = _only_error(csv_path)
    assert "lone surrogate" in error.message
    assert error.id == "q1"


def test_surrogate_run_is_an_error_or_skipped(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "q1", "retrieved_context": ["\\ud800"], "ground_truth_context": ["a"]}\n'
        + json.dumps({**GOOD, "id": "q2"})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidRecordError, match="lone surrogate"):
        RetrievalEvaluator(path, workers=1).run()
    result = RetrievalEvaluator(path, workers=1, on_error="skip").run()
    assert result.summary["queries"] == 1
    result.save(tmp_path / "out.jsonl")


def test_find_unwritable_is_quiet_on_good_values() -> None:
    assert find_unwritable({"a": ["é", "\U0001f600", 1, None, [2.5]]}, "m") is None
    assert find_unwritable("plain", "m") is None


_TEXTS = st.text(alphabet=st.sampled_from(["a", " ", "\u00e9", "\U0001f600", "\ud800", "\udc00"]))
_VALUES = st.one_of(
    _TEXTS,
    st.lists(_TEXTS, max_size=4),
    st.none(),
    st.integers(),
    st.lists(st.lists(_TEXTS, max_size=2), max_size=2),
    st.dictionaries(_TEXTS, st.one_of(st.integers(), st.floats(), st.booleans()), max_size=3),
    st.dictionaries(_TEXTS, st.one_of(_TEXTS, st.lists(st.integers(), max_size=2)), max_size=2),
)


def _plain(value: object) -> bool:
    """A value plainly_writable takes as it is: not a list or dict, a list of strings, or a
    dict of numbers (its keys are strings here)."""
    if type(value) is list:
        return all(type(i) is str for i in value)
    if type(value) is dict:
        return all(type(v) in (int, float, bool) for v in value.values())
    return True


@given(st.dictionaries(_TEXTS, _VALUES, max_size=4))
def test_the_plain_record_fast_path_agrees_with_the_full_check(record: dict[str, object]) -> None:
    """``plainly_writable`` (one pass over the record's strings) never passes a record that
    ``find_unwritable`` would reject, and passes every plain record it accepts."""
    found = [
        find_unwritable(key, "k") or find_unwritable(value, "v") for key, value in record.items()
    ]
    clean = not any(found)
    plain = all(map(_plain, record.values()))
    assert plainly_writable(record) == (clean and plain)
    assert (unwritable(record) is None) == clean


# -- nesting -----------------------------------------------------------------------------------


def test_5000_deep_json_line_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("[" * 5000 + "]" * 5000 + "\n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    error = _only_error(path)
    assert error.location == f"{path}:1"
    assert "too deeply" in error.message
    result = RetrievalEvaluator(path, workers=1, on_error="skip").run()
    assert result.summary["queries"] == 1


def test_deep_metadata_is_a_bad_record(tmp_path: Path) -> None:
    deep: object = "x"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    error = _only_error([{**GOOD, "meta": deep}, {**GOOD, "id": "q2"}])
    assert error.field == "meta"
    assert f"more than {MAX_DEPTH} levels" in error.message
    path = _lines(tmp_path / "d.jsonl", {**GOOD, "meta": deep}, {**GOOD, "id": "q2"})
    assert f"more than {MAX_DEPTH} levels" in _only_error(path).message
    # Python's own limit: a 5,000-deep object from an iterable does not overflow the stack.
    for _ in range(5000):
        deep = [deep]
    assert "levels deep" in _only_error([{**GOOD, "retrieved_context": deep}]).message


def test_deep_json_document_and_csv_cell(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(InvalidArgumentError, match="too deeply"):
        list(read_records(path))
    csv_path = tmp_path / "d.csv"
    csv_path.write_text(
        "id,retrieved_context,ground_truth_context\nq1," + "[" * 5000 + "]" * 5000 + ',"[""a""]"\n'
    )
    error = _only_error(csv_path)
    assert error.field == "retrieved_context"
    assert "too deeply" in error.message


# -- encodings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"])
def test_utf16_and_utf32_jsonl_with_a_bom_are_read(tmp_path: Path, encoding: str) -> None:
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }.get(encoding, b"")
    text = "".join(json.dumps({**GOOD, "id": f"q{i}", "é": "ü"}) + "\r\n" for i in range(3))
    path = tmp_path / "d.jsonl"
    path.write_bytes(bom + text.encode(encoding))
    items = list(read_records(path))
    assert [i.id for i in items] == ["q0", "q1", "q2"]
    assert all(isinstance(i, Record) for i in items)
    assert items[2].location == f"{path}:3"


def test_utf16_csv_json_and_trec_files_are_read(tmp_path: Path) -> None:
    csv_path = tmp_path / "d.csv"
    csv_path.write_bytes(
        'id,retrieved_context,ground_truth_context\nq1,"[""a""]","[""a""]"\n'.encode("utf-16")
    )
    assert [r.id for r in read_records(csv_path)] == ["q1"]
    json_path = tmp_path / "d.json"
    json_path.write_bytes(json.dumps([GOOD]).encode("utf-16"))
    assert [r.id for r in read_records(json_path)] == ["q1"]
    run, qrels = tmp_path / "r.run", tmp_path / "q.qrels"
    run.write_bytes("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n".encode("utf-16"))
    qrels.write_bytes("q1 0 d1 1\n".encode("utf-32"))
    assert read_trec_run(run) == {"q1": {"d1": 2.0, "d2": 1.0}}
    assert read_trec_qrels(qrels) == {"q1": {"d1": 1}}


def test_utf16_without_bom_says_so(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes((json.dumps(GOOD) + "\n").encode("utf-16-le"))
    assert "UTF-16 without a byte-order mark" in _only_error(path).message


def test_non_utf8_trec_files_name_file_and_line(tmp_path: Path) -> None:
    run = tmp_path / "r.run"
    run.write_bytes(b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\xe92 2 1.0 t\n")
    with pytest.raises(InvalidArgumentError, match=r"r\.run:2: not valid UTF-8 \(byte 0xe9"):
        read_trec_run(run)
    qrels = tmp_path / "q.qrels"
    qrels.write_bytes(b"q1 0 d\xff 1\n")
    with pytest.raises(InvalidArgumentError, match=r"q\.qrels:1: .*save the file as UTF-8"):
        read_trec_qrels(qrels)


def test_non_utf8_json_and_csv_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_bytes(b'[\n{"retrieved_context": ["\xe9"], "ground_truth_context": ["a"]}]')
    with pytest.raises(InvalidArgumentError, match=r"d\.json:2: not valid UTF-8"):
        list(read_records(path))


CSV_HEADER = b"id,retrieved_context,ground_truth_context\n"
CSV_ROW = b'%s,"[""a""]","[""a""]"\n'


def test_a_latin1_byte_in_a_csv_spoils_its_row_only(tmp_path: Path) -> None:
    """The byte's own row is a bad record naming its row and the file's line, also when it
    lies past the first block a strict decoder would read (the catalogue's "row 1")."""
    path = tmp_path / "d.csv"
    good = b"".join(CSV_ROW % b"q%d" % i for i in range(1, 500))  # well over 8 KiB
    # row 500 spans two lines (a quoted line break), the bad byte on the second
    bad = b'q500,"[""caf\xe9""]","[""line one\nline tw\xe9""]"\n'
    path.write_bytes(CSV_HEADER + good + bad + CSV_ROW % b"q501")
    items = list(read_records(path))
    errors = [item for item in items if isinstance(item, RecordError)]
    assert len(items) == 501
    assert [str(e) for e in errors] == [
        f"{path}:row 500 (record 'q500'): the row is not valid UTF-8 (byte 0xe9 on line 501 of "
        "the file, in column 'retrieved_context'); save the file as UTF-8"
    ]
    assert errors[0].field == "retrieved_context"
    quoted_line = CSV_HEADER + CSV_ROW % b"q1" + b'q2,"[""a""]","[""x\ny\n\xe9""]"\n'
    path.write_bytes(quoted_line)
    (error,) = [item for item in read_records(path) if isinstance(item, RecordError)]
    assert "byte 0xe9 on line 5 of the file, in column 'ground_truth_context'" in str(error)


def test_a_latin1_byte_in_a_csv_stream_and_header(tmp_path: Path) -> None:
    stream = io.BytesIO(CSV_HEADER + CSV_ROW % b"q\xe91" + CSV_ROW % b"q2")
    items = list(read_records(stream, format="csv"))
    assert isinstance(items[0], RecordError)
    assert isinstance(items[1], Record)
    assert "not valid UTF-8 (byte 0xe9 on line 2 of the file, in column 'id')" in str(items[0])
    assert items[0].id == "q\\udce91"  # claimed, escaped as a lone surrogate's is
    path = tmp_path / "h.csv"
    path.write_bytes(b"id,retrieved_context,ground_truth_context,not\xe9\n" + CSV_ROW % b"q1")
    with pytest.raises(InvalidArgumentError) as info:
        list(read_records(path))
    assert str(info.value) == (
        f"{path}: header: the row is not valid UTF-8 (byte 0xe9 on line 1 of the file, in "
        "column 'not\\udce9'); save the file as UTF-8"
    )


# -- shapes of files ---------------------------------------------------------------------------


def test_pretty_printed_json_array_in_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps([GOOD], indent=2), encoding="utf-8")
    first = next(iter(read_records(path)))
    assert isinstance(first, RecordError)
    assert first.location == f"{path}:1"
    assert "this looks like a JSON array" in first.message
    assert "name the file .json" in first.message


def test_duplicated_csv_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text(
        'id,retrieved_context,ground_truth_context,retrieved_context\nq1,"[""a""]","[""a""]",'
        '"[""b""]"\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidArgumentError) as info:
        list(read_records(path))
    assert "'retrieved_context' appears more than once" in str(info.value)
    assert str(info.value).startswith(f"{path}: header")


# -- result files given to compare -------------------------------------------------------------


def _saved(tmp_path: Path, suffix: str) -> Path:
    result = RetrievalEvaluator([GOOD, {**GOOD, "id": "q2"}], workers=1).run()
    return result.save(tmp_path / f"r{suffix}")


def test_truncated_jsonl_result_names_file_and_line(tmp_path: Path) -> None:
    path = _saved(tmp_path, ".jsonl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])
    with pytest.raises(InvalidArgumentError, match=r"r\.jsonl:3: not valid JSON .*truncated"):
        EvaluationResult.load(path)


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_truncated_json_results_name_the_file(tmp_path: Path, suffix: str) -> None:
    path = _saved(tmp_path, suffix)
    target = path if suffix == ".json" else path.with_name("r.summary.json")
    target.write_bytes(target.read_bytes()[:-30])
    with pytest.raises(InvalidArgumentError, match=r"\.json:\d+: not valid JSON"):
        EvaluationResult.load(path)


def test_non_utf8_result_names_file_and_line(tmp_path: Path) -> None:
    path = _saved(tmp_path, ".jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"q2"', b'"q\xe92"')
    path.write_bytes(b"".join(lines))
    with pytest.raises(InvalidArgumentError, match=r"r\.jsonl:3: not valid UTF-8"):
        EvaluationResult.load(path)


def test_utf16_result_reads(tmp_path: Path) -> None:
    path = _saved(tmp_path, ".jsonl")
    original = EvaluationResult.load(path)
    path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    assert EvaluationResult.load(path).aggregate == original.aggregate


def test_result_cut_inside_a_string_says_at_once(tmp_path: Path) -> None:
    path = _saved(tmp_path, ".jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines[2].index('"q2"')  # the line ends inside the id: '... "id": "q'
    path.write_text("".join(lines[:2]) + lines[2][: start + 2], encoding="utf-8")
    with pytest.raises(InvalidArgumentError) as info:
        EvaluationResult.load(path)
    assert str(info.value) == (
        f"{path}:3: not valid JSON (Unterminated string starting at column {start + 1}); the "
        "result file is truncated or damaged: save or evaluate it again"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h.update(summary="x"), "is damaged: its 'summary' is str, not an object"),
        (lambda h: h.update(aggregate=None), "is damaged: its 'aggregate' is NoneType"),
        (lambda h: h.update(skipped={}), "is damaged: its 'skipped' is dict, not a list"),
        (lambda h: h["summary"].update(context_used=5), "summary's 'context_used' is not"),
        (lambda h: h["summary"].update(context_used={"5": "x"}), "'context_used' is not"),
        (lambda h: h.update(ctxeval_result=99), "result format 99, and this ctxeval reads"),
    ],
)
def test_a_damaged_result_header_is_named(tmp_path: Path, change: object, message: str) -> None:
    # Found by a user's trial: these were internal errors (exit 3) in ctxeval compare.
    path = _saved(tmp_path, ".jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    change(header)  # type: ignore[operator]
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=message) as info:
        EvaluationResult.load(path)
    assert str(info.value).startswith(str(path))


def test_a_damaged_result_row_is_named(tmp_path: Path) -> None:
    path = _saved(tmp_path, ".jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([lines[0], "5\n", *lines[2:]]), encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"r\.jsonl: per-query row 1 is int"):
        EvaluationResult.load(path)
    path.write_text("".join([lines[0], '{"x": 1}\n', *lines[2:]]), encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"per-query row 1 has no id"):
        EvaluationResult.load(path)
