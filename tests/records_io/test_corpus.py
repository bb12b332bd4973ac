"""ctxeval.io.corpus: documents by name from a directory, a file, JSONL, Parquet or a mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.io.corpus import load_corpus

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_directory_names_by_relative_path_without_extension(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "setup.md").write_text("Set up.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_bytes("caf\u00e9\r\nline".encode())
    (tmp_path / "skip.csv").write_text("x", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "h.txt").write_text("no", encoding="utf-8")
    corpus = load_corpus(tmp_path)
    assert corpus == {"a": "caf\u00e9\r\nline", "guides/setup": "Set up.\n"}
    assert list(corpus) == ["a", "guides/setup"]


def test_the_fixture_corpus_loads_every_document() -> None:
    corpus = load_corpus(FIXTURES / "corpus")
    assert len(corpus) == len(list((FIXTURES / "corpus").glob("*.txt")))
    assert corpus["assert"] == (FIXTURES / "corpus" / "assert.txt").read_text(encoding="utf-8")


def test_single_file_is_one_document(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("\ufeffhello", encoding="utf-8")
    assert load_corpus(path) == {"notes": "\ufeffhello"}


def test_jsonl_records_with_beir_ids(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    rows = [{"_id": "d1", "title": "t", "text": "one"}, {"id": 7, "text": "two"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert load_corpus(path) == {"d1": "one", "7": "two"}


def test_parquet_records(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": ["x", "y"], "text": ["a b", "c"]}), path)
    assert load_corpus(path) == {"x": "a b", "y": "c"}


def test_mapping_is_checked() -> None:
    assert load_corpus({"d": "t"}) == {"d": "t"}
    with pytest.raises(InvalidArgumentTypeError, match="str name and a str text"):
        load_corpus({"d": 3})  # type: ignore[dict-item]
    with pytest.raises(InvalidArgumentError, match="no documents"):
        load_corpus({})


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            ['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'],
            r":2: duplicate .*:1",
        ),
        (['{"text": "x"}'], r":1: no id field"),
        (['{"id": "a"}'], r":1: no text field"),
        (['{"id": "a", "text": 3}'], r":1: field 'text' must be a string"),
        (["{oops"], r":1: not valid JSON"),
        (["[1, 2]"], r":1: expected a"),
    ],
)
def test_bad_jsonl_names_file_line_and_field(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"c\.jsonl" + message):
        load_corpus(path)


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no such file"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    with pytest.raises(InvalidArgumentError, match=r"unsupported file type \.pdf"):
        load_corpus(tmp_path / "x.pdf")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidArgumentError, match="no documents"):
        load_corpus(empty)
    with pytest.raises(InvalidArgumentTypeError, match="got int"):
        load_corpus(3)  # type: ignore[arg-type]


def test_name_collision_and_bad_utf8(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a.md").write_text("y", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="would both be document 'a'"):
        load_corpus(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff")
    with pytest.raises(InvalidArgumentError, match=r"bad\.txt:2: not valid UTF-8"):
        load_corpus(bad)
