"""Third-party splitters located back in their documents on the fixtures corpus: real LangChain
and chonkie splitters, each span checked against its chunk, and the counts of each step."""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rapidfuzz import fuzz

from ctxeval.chunking import ExternalChunker, as_chunker
from ctxeval.chunking.splitters import SplitterWarning
from ctxeval.foundation.errors import CtxevalError
from ctxeval.text.locate import DEFAULT_FUZZY_THRESHOLD, compact, normalise

langchain = pytest.importorskip("langchain_text_splitters")
chonkie = pytest.importorskip("chonkie")

CORPUS = {
    path.stem: path.read_text(encoding="utf-8")
    for path in sorted((Path(__file__).resolve().parents[2] / "fixtures" / "corpus").glob("*.txt"))
}


def chunk_all(chunker: ExternalChunker) -> tuple[list, list[warnings.WarningMessage]]:
    """Every document's chunks (with the splitter's own texts alongside), and the warnings."""
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, text in CORPUS.items():
            out.extend(chunker.chunk(text, name))
    return out, [w for w in caught if issubclass(w.category, SplitterWarning)]


def split_texts(splitter: Any, text: str) -> list[str]:
    """The splitter's own chunk texts (without empty ones, which are dropped)."""
    if hasattr(splitter, "split_text"):
        texts = splitter.split_text(text)
    else:
        texts = [chunk.text for chunk in splitter.chunk(text)]
    return [t for t in texts if t.strip()]


def check_in_order(chunks: Sequence) -> None:
    for chunk in chunks:
        assert CORPUS[chunk.doc][chunk.start : chunk.end] == chunk.text
        assert chunk.text.strip()
    for a, b in itertools.pairwise(chunks):
        if a.doc == b.doc:
            assert a.start < b.start


def counts(chunker: object) -> dict[str, int]:
    return {k: v for k, v in chunker.locating.items() if v}  # type: ignore[attr-defined]


# -- LangChain ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "splitter",
    [
        langchain.RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=100),
        langchain.RecursiveCharacterTextSplitter(
            chunk_size=400, chunk_overlap=80, keep_separator="end"
        ),
        langchain.RecursiveCharacterTextSplitter(
            chunk_size=400, chunk_overlap=0, keep_separator=False
        ),
        langchain.CharacterTextSplitter(separator=" ", chunk_size=300, chunk_overlap=60),
        langchain.MarkdownTextSplitter(chunk_size=500, chunk_overlap=50),
    ],
    ids=["recursive", "recursive-keep-end", "recursive-no-separator", "character", "markdown"],
)
def test_langchain_splitters_that_keep_the_text_are_exact(splitter: object) -> None:
    chunker = as_chunker(splitter)
    chunks, caught = chunk_all(chunker)
    check_in_order(chunks)
    expected = [t for text in CORPUS.values() for t in split_texts(splitter, text)]
    assert [c.text for c in chunks] == expected  # located exactly: the splitter's own texts
    assert counts(chunker) == {"exact": len(expected)}
    assert not caught


def test_a_separator_joined_as_written_is_located_up_to_whitespace() -> None:
    # A line separator: pieces stripped and re-joined with "\n" where the text had blank lines.
    splitter = langchain.CharacterTextSplitter(separator="\n", chunk_size=500, chunk_overlap=100)
    chunker = as_chunker(splitter)
    chunks, caught = chunk_all(chunker)
    check_in_order(chunks)
    texts = [t for text in CORPUS.values() for t in split_texts(splitter, text)]
    assert [normalise(c.text)[0] for c in chunks] == [normalise(t)[0].strip() for t in texts]
    found = counts(chunker)
    assert set(found) == {"exact", "normalised"}
    assert found["normalised"] > 300
    assert sum(found.values()) == len(texts) == len(chunks)
    assert not caught  # the spans hold the same words: no warning


def test_a_regex_separator_written_into_the_chunks_is_located_fuzzily() -> None:
    # LangChain re-joins the pieces with the pattern itself: "a\n+b" where the text had "a\nb".
    splitter = langchain.CharacterTextSplitter(
        separator=r"\n+", is_separator_regex=True, chunk_size=500, chunk_overlap=100
    )
    chunker = as_chunker(splitter)
    chunks, caught = chunk_all(chunker)
    check_in_order(chunks)
    texts = [t for text in CORPUS.values() for t in split_texts(splitter, text)]
    assert len(chunks) == len(texts)
    fuzzy = 0
    for chunk, text in zip(chunks, texts, strict=True):
        if chunk.text == text:
            continue
        fuzzy += 1
        assert "\\n+" in text
        score = fuzz.ratio(compact(text), compact(chunk.text))
        assert score >= DEFAULT_FUZZY_THRESHOLD
        # The span is exactly the text the chunk came from: the same, without the pattern.
        assert compact(chunk.text) == compact(text.replace("\\n+", ""))
    assert counts(chunker) == {"exact": len(texts) - fuzzy, "fuzzy": fuzzy}
    assert fuzzy > 300
    # One warning per document with fuzzy chunks, naming the chunker and the document.
    assert len(caught) == len({c.doc for c, t in zip(chunks, texts, strict=True) if c.text != t})
    assert re.match(
        r"chunker CharacterTextSplitter\.split_text, document '[\w-]+': chunks located "
        r"\d+ exact, \d+ fuzzy \(lowest fuzzy score \d+\.\d",
        str(caught[0].message),
    )


def test_chunks_too_rewritten_stop_the_run_or_are_left_out_and_named() -> None:
    # "\s+" re-joined as written: every space becomes three more characters.
    splitter = langchain.CharacterTextSplitter(
        separator=r"\s+", is_separator_regex=True, chunk_size=300, chunk_overlap=0
    )
    first = split_texts(splitter, CORPUS["assert"])[0]
    with pytest.raises(CtxevalError) as raised:
        as_chunker(splitter).chunk(CORPUS["assert"], "assert")
    message = str(raised.value)
    assert message.startswith(
        "chunker CharacterTextSplitter.split_text, document 'assert': chunk 0 ('Assert\\\\s+"
    )
    assert first.startswith("Assert\\s+statements")
    assert "best score" in message
    assert "unlocated='skip'" in message

    chunker = as_chunker(splitter, unlocated="skip")
    with pytest.warns(SplitterWarning, match=r"document 'assert': chunks located \d+ unlocated; "):
        assert chunker.chunk(CORPUS["assert"], "assert") == []
    assert counts(chunker) == {"unlocated": len(split_texts(splitter, CORPUS["assert"]))}

    # A lower threshold accepts them, each span holding its chunk's words.
    chunker = as_chunker(splitter, fuzzy_threshold=70)
    with pytest.warns(SplitterWarning):
        chunks = chunker.chunk(CORPUS["assert"], "assert")
    texts = split_texts(splitter, CORPUS["assert"])
    assert counts(chunker) == {"fuzzy": len(texts)}
    for chunk, text in zip(chunks, texts, strict=True):
        assert CORPUS["assert"][chunk.start : chunk.end] == chunk.text
        assert fuzz.ratio(compact(text), compact(chunk.text)) >= 70
        assert compact(chunk.text) == compact(text.replace("\\s+", ""))


# -- chonkie ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunker",
    [
        chonkie.TokenChunker(tokenizer="character", chunk_size=300, chunk_overlap=30),
        chonkie.TokenChunker(tokenizer="word", chunk_size=100, chunk_overlap=10),
        chonkie.SentenceChunker(tokenizer="word", chunk_size=120, chunk_overlap=20),
        chonkie.RecursiveChunker(tokenizer="character", chunk_size=400),
    ],
    ids=["token-character", "token-word", "sentence", "recursive"],
)
def test_chonkie_offsets_that_hold_the_text_are_used(chunker: object) -> None:
    wrapped = as_chunker(chunker)
    chunks, caught = chunk_all(wrapped)
    check_in_order(chunks)
    reported = [
        (name, c.start_index, c.end_index)
        for name, text in CORPUS.items()
        for c in chunker.chunk(text)  # type: ignore[attr-defined]
        if c.text.strip()
    ]
    assert [(c.doc, c.start, c.end) for c in chunks] == reported
    assert counts(wrapped) == {"given": len(reported)}
    assert not caught


class Uncased(chonkie.tokenizer.Tokenizer):  # type: ignore[misc]
    """A BERT-uncased-like tokenizer: lowercased words and punctuation, decoded joined by
    spaces (so chonkie's offsets, from the decoded lengths, drift from the text)."""

    def __repr__(self) -> str:
        return "Uncased()"

    def tokenize(self, text: str) -> list[str]:
        return re.findall(r"\w+|[^\w\s]", text.lower())

    def encode(self, text: str) -> list[int]:
        ids = []
        for token in self.tokenize(text):
            if token not in self.token2id:
                self.token2id[token] = len(self.vocab)
                self.vocab.append(token)
            ids.append(self.token2id[token])
        return ids

    def decode(self, tokens: Sequence[int]) -> str:
        return " ".join(self.vocab[t] for t in tokens)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))


def test_chonkie_token_chunks_decoded_differently_are_located_up_to_whitespace_and_case() -> None:
    splitter = chonkie.TokenChunker(tokenizer=Uncased(), chunk_size=100, chunk_overlap=10)
    chunker = as_chunker(splitter)
    chunks, caught = chunk_all(chunker)
    check_in_order(chunks)
    texts = [t for text in CORPUS.values() for t in split_texts(splitter, text)]
    assert [compact(c.text) for c in chunks] == [compact(t) for t in texts]
    assert counts(chunker) == {"normalised": len(texts)}
    assert not caught
    # Overlapping windows are found where they are (10 tokens back), not after the previous.
    assert any(a.end > b.start for a, b in itertools.pairwise(chunks) if a.doc == b.doc)


# -- functions ----------------------------------------------------------------------------------


def test_a_function_that_drops_characters_gets_the_spans_they_came_from() -> None:
    def no_commas(text: str) -> list[str]:
        return [p.replace(",", "").replace("(", "") for p in text.split("\n\n") if p.strip()]

    chunker = as_chunker(no_commas)
    chunks, _ = chunk_all(chunker)
    check_in_order(chunks)
    paragraphs = [p for text in CORPUS.values() for p in text.split("\n\n") if p.strip()]
    assert len(chunks) == len(paragraphs)
    found = counts(chunker)
    assert found["fuzzy"] > 100
    assert "unlocated" not in found
    for chunk, paragraph in zip(chunks, paragraphs, strict=True):
        # Each span is the paragraph the chunk came from, to the character (a character the
        # chunk dropped at an edge is not in its span).
        assert chunk.text.strip() == paragraph.strip().strip("(,")
        assert (
            fuzz.ratio(compact(no_commas(paragraph)[0]), compact(chunk.text))
            >= DEFAULT_FUZZY_THRESHOLD
        )


def test_a_repeated_phrase_is_found_after_the_previous_chunk_not_inside_it() -> None:
    text = "Note: see below. Some text here.\nNote: see below. More text follows."
    pieces = ["Note: see below. Some text here.", "Note: see below.", "More text follows."]
    chunker = as_chunker(lambda _: pieces)
    spans = [(c.start, c.end) for c in chunker.chunk(text, "doc")]
    assert spans == [(0, 32), (33, 49), (50, 68)]
    # Overlapping chunks are found inside the previous one when they go beyond it.
    chunker = as_chunker(lambda t: ["Some text here.\nNote", "here.\nNote: see below. More"])
    assert [(c.start, c.end) for c in chunker.chunk(text, "doc")] == [(17, 37), (27, 54)]


def test_locating_a_large_corpus_in_order() -> None:
    # About 1.5 MB: the fixtures six times over, in long documents. (How fast is measured in
    # benchmarks/, not here: tests never assert on time.)
    documents = {name: text * 6 for name, text in CORPUS.items()}
    assert sum(map(len, documents.values())) > 1_400_000
    splitter = langchain.RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=200)
    pieces = {name: splitter.split_text(text) for name, text in documents.items()}
    current: list[str] = []
    chunker = as_chunker(lambda _: current)
    total = 0
    for name, text in documents.items():
        current = pieces[name]
        total += len(chunker.chunk(text, name))
    assert total > 2_000
    assert counts(chunker) == {"exact": total}


def test_options_are_checked_and_only_for_located_chunks() -> None:
    splitter = langchain.RecursiveCharacterTextSplitter(chunk_size=300)
    for bad in (0, 101, "90", True):
        with pytest.raises(CtxevalError, match="fuzzy_threshold="):
            as_chunker(splitter, fuzzy_threshold=bad)  # type: ignore[arg-type]
    with pytest.raises(CtxevalError, match="unlocated='drop': give 'error'"):
        as_chunker(splitter, unlocated="drop")  # type: ignore[arg-type]
    with pytest.raises(CtxevalError, match="fuzzy_threshold and unlocated apply to splitters"):
        as_chunker("fixed(words=100)", unlocated="skip")
    chunker = as_chunker(splitter, fuzzy_threshold=80, unlocated="skip")
    assert chunker.spec == "RecursiveCharacterTextSplitter.split_text"
    assert chunker.options() == {"fuzzy_threshold": 80.0, "unlocated": "skip"}
    assert as_chunker(chunker) is chunker


def test_the_harness_takes_a_rewriting_splitter_with_its_located_spans() -> None:
    from ctxeval.chunking import compare_chunkers

    root = Path(__file__).resolve().parents[2] / "fixtures"
    splitter = langchain.CharacterTextSplitter(
        separator=r"\n+", is_separator_regex=True, chunk_size=600, chunk_overlap=0
    )
    chunker = as_chunker(splitter)
    with pytest.warns(SplitterWarning, match=r"chunker CharacterTextSplitter\.split_text, doc"):
        outcome = compare_chunkers(
            root / "corpus",
            root / "questions.jsonl",
            {"langchain": chunker, "fixed": "fixed(words=100)"},
            k=[5],
            n_resamples=50,
        )
    run = outcome.runs["langchain"]
    for chunk in run.chunks:
        assert CORPUS[chunk.doc][chunk.start : chunk.end] == chunk.text
    assert sum(chunker.locating.values()) == len(run.chunks)  # type: ignore[attr-defined]
    assert chunker.locating["fuzzy"] > 0  # type: ignore[attr-defined]
    assert chunker.locating["unlocated"] == 0  # type: ignore[attr-defined]
    # The run's statistics say how its chunks were placed (this run's counts only).
    assert run.statistics["located"] == chunker.locating  # type: ignore[attr-defined]
    assert "located" not in outcome.runs["fixed"].statistics  # built-in: spans by construction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SplitterWarning)  # the counts are the point here
        again = compare_chunkers(
            {"a": CORPUS[next(iter(CORPUS))]},
            [{"question": "q", "excerpts": [CORPUS[next(iter(CORPUS))][:40]]}],
            {"langchain": chunker, "fixed": "fixed(words=100)"},
            k=[5],
            n_resamples=10,
        )
    assert sum(again.runs["langchain"].statistics["located"].values()) == len(
        again.runs["langchain"].chunks
    )
