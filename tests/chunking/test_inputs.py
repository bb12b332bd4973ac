"""Questions in every accepted shape, and third-party splitters (LangChain, chonkie) located back
in their documents."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest

from ctxeval.chunking import Excerpt, as_chunker, load_questions
from ctxeval.foundation.errors import CtxevalError

CORPUS = {
    "guide": "Install it first.\n\nThen run the tool. It prints a table.",
    "notes/faq": "Why offline? Because downloads fail.",
}


def test_texts_spans_and_both() -> None:
    rows = [
        {"id": "a", "question": "q", "excerpts": ["Then run the tool."]},
        {"id": "b", "question": "q", "excerpts": [{"doc": "notes/faq", "start": 0, "end": 12}]},
        {
            "question": "q",
            "excerpts": [{"text": "Install it", "doc": "guide", "start": 0, "end": 10}],
        },
    ]
    questions = load_questions(rows, CORPUS)
    assert [q.id for q in questions] == ["a", "b", "3"]
    assert questions[0].excerpts == (Excerpt("guide", 19, 37, "Then run the tool."),)
    assert questions[1].excerpts[0].text == "Why offline?"
    assert questions[2].excerpts[0] == Excerpt("guide", 0, 10, "Install it")


def test_the_fixtures_shape() -> None:
    row = {
        "id": "f",
        "question": "q",
        "ground_truth_context": ["It prints a table."],
        "doc": "guide",
        "char_start": 38,
        "char_end": 56,
    }
    assert load_questions([row], CORPUS)[0].excerpts == (
        Excerpt("guide", 38, 56, "It prints a table."),
    )


def test_chromas_questions_csv_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "questions_df.csv"
    references = [
        {"content": "Because downloads fail.", "start_index": 13, "end_index": 36},
        {"content": "Why offline?", "start_index": 0, "end_index": 12},
    ]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "references", "corpus_id"])
        # chroma writes corpus ids as file paths or names; both are found.
        writer.writerow(["Why offline?", json.dumps(references), "corpora/notes/faq.md"])
        writer.writerow(["What first?", json.dumps([references[1]]), "notes/faq"])
    questions = load_questions(path, CORPUS)
    assert [q.id for q in questions] == ["1", "2"]
    assert [e.text for e in questions[0].excerpts] == ["Because downloads fail.", "Why offline?"]
    assert questions[0].excerpts[0].doc == "notes/faq"


def test_a_questions_csv_with_a_byte_not_utf8_is_one_error_naming_its_line(
    tmp_path: Path,
) -> None:
    # A quoted field may span lines: the rows still parse; a bad byte is the file's line, not a
    # crash (it was an internal error, exit code 3, on the command line).
    path = tmp_path / "questions_df.csv"
    reference = json.dumps([{"content": "Why offline?", "start_index": 0, "end_index": 12}])
    good = f'"Why\noffline?","{reference.replace(chr(34), chr(34) * 2)}",notes/faq\n'
    path.write_bytes(
        b"question,references,corpus_id\n" + good.encode() + b'"Bad \xff","[]",notes/faq\n'
    )
    with pytest.raises(CtxevalError, match=r"questions_df\.csv:4: not valid UTF-8 \(byte 0xff"):
        load_questions(path, CORPUS)
    path.write_bytes(b"question,references,corpus_id\n" + good.encode())
    assert load_questions(path, CORPUS)[0].question == "Why\noffline?"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q", "excerpts": [{"doc": "gide", "start": 0, "end": 3}]}, "did you mean"),
        ({"question": "q", "excerpts": ["not in the corpus"]}, "is not in any document"),
        ({"question": "q", "excerpts": [{"doc": "guide", "start": 5, "end": 999}]}, "not inside"),
        (
            {
                "question": "q",
                "excerpts": [{"text": "Install", "doc": "guide", "start": 1, "end": 8}],
            },
            "disagrees with the corpus at 'guide'[1:8]",
        ),
        ({"question": "", "excerpts": ["Install"]}, "field 'question'"),
        ({"question": "q"}, "no ground truth"),
        ({"question": "q", "excerpts": []}, "field 'excerpts'"),
        ({"question": "q", "excerpts": [{"doc": "guide", "start": -1, "end": 3}]}, "field 'start'"),
    ],
)
def test_bad_questions_name_where_and_the_fix(row: dict, message: str) -> None:
    with pytest.raises(CtxevalError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_questions([row], CORPUS)


def test_bad_jsonl_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "q", "excerpts": ["Install it"]}\n{"id": "a"\n')
    with pytest.raises(CtxevalError, match=r"q\.jsonl:2: not valid JSON"):
        load_questions(path, CORPUS)
    path.write_text('{"id": "a", "question": "q", "excerpts": ["Install it"]}\n' * 2)
    with pytest.raises(
        CtxevalError, match=r"q\.jsonl:2: duplicate question id 'a' \(first at .*q\.jsonl:1\)"
    ):
        load_questions(path, CORPUS)
    # A misspelt field says which it may be.
    path.write_text('{"id": "a", "question": "q", "excerpt": ["Install it"]}\n')
    with pytest.raises(CtxevalError, match="is 'excerpt' meant to be 'excerpts'"):
        load_questions(path, CORPUS)
    path.write_text(
        '{"id": "a", "question": "q", "excerpts": [{"text": "Install", "dok": "guide"}]}\n'
    )
    with pytest.raises(CtxevalError, match="unknown field 'dok'; did you mean 'doc'"):
        load_questions(path, CORPUS)


TEXT = (Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "assert.txt").read_text(
    encoding="utf-8"
)


def _check(chunker: object) -> list:
    chunks = as_chunker(chunker).chunk(TEXT, "assert")
    assert chunks
    for chunk in chunks:
        assert TEXT[chunk.start : chunk.end] == chunk.text
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    return chunks


def test_langchain_splitters_with_overlap() -> None:
    from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter

    for splitter in (
        RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=60),
        CharacterTextSplitter(separator=" ", chunk_size=200, chunk_overlap=50),
    ):
        chunks = _check(splitter)
        assert [c.text for c in chunks] == [t for t in splitter.split_text(TEXT) if t.strip()]
        assert any(b.start < a.end for a, b in itertools.pairwise(chunks))


def test_chonkie_chunkers_offsets_are_used() -> None:
    from chonkie import RecursiveChunker, SentenceChunker, TokenChunker

    for chunker in (
        TokenChunker(tokenizer="character", chunk_size=300, chunk_overlap=50),
        SentenceChunker(tokenizer="character", chunk_size=300, chunk_overlap=0),
        RecursiveChunker(tokenizer="character", chunk_size=300),
    ):
        chunks = _check(chunker)
        assert [(c.start, c.end) for c in chunks] == [
            (c.start_index, c.end_index) for c in chunker.chunk(TEXT)
        ]


def test_functions_returning_texts_or_spans() -> None:
    def collapsed(text: str) -> list[str]:
        # A splitter that normalises whitespace: located as the same words.
        return [" ".join(p.split()) for p in text.split("\n\n")]

    chunks = _check(collapsed)
    assert len(chunks) == len([p for p in TEXT.split("\n\n") if p.strip()])
    spans = _check(lambda text: [(0, 10), (10, len(text))])
    assert [(c.start, c.end) for c in spans] == [(0, 10), (10, len(TEXT))]


def test_a_splitter_that_rewrites_text_is_an_error() -> None:
    # Case and whitespace are forgiven (located normalised); other text is not.
    assert as_chunker(lambda text: [text[:40].upper()]).chunk(TEXT, "assert")[0].start == 0
    with pytest.raises(CtxevalError, match=r"document 'assert': chunk 0 \('Nothing like this"):
        as_chunker(lambda text: ["Nothing like this is in the text"]).chunk(TEXT, "assert")
    with pytest.raises(CtxevalError, match="expected a spec"):
        as_chunker(42)


def test_excerpts_are_located_normalised_then_fuzzily_and_counted() -> None:
    from ctxeval.chunking.questions import ExcerptWarning

    rows = [
        {"id": "space", "question": "q", "excerpts": ["then  run the\ntool."]},
        # One letter differs ("prints" -> "print"): found fuzzily, at the document's text.
        {"id": "typo", "question": "q", "excerpts": ["It print a table."]},
        {"id": "exact", "question": "q", "excerpts": ["Install it first."]},
    ]
    with pytest.warns(ExcerptWarning, match=r"1 excerpt text\(s\) located after normalising"):
        questions = load_questions(rows, CORPUS)
    assert questions[0].excerpts == (Excerpt("guide", 19, 37, "Then run the tool."),)
    typo = questions[1].excerpts[0]
    assert typo.doc == "guide"
    assert CORPUS["guide"][typo.start : typo.end] == typo.text
    assert "print" in typo.text
    assert questions[2].excerpts == (Excerpt("guide", 0, 17, "Install it first."),)
    # A text in another document than its doc is not taken from there.
    with pytest.raises(CtxevalError, match="not fuzzily"):
        load_questions(
            [{"question": "q", "excerpts": [{"text": "Why offline?", "doc": "guide"}]}], CORPUS
        )
