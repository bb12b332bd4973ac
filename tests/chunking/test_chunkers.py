"""Built-in chunkers: each span holds exactly its chunk's text and covers the document as
documented (tests hand-computed on small texts, properties on generated ones)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.chunking import Chunk, FixedChunker, parse_chunker
from ctxeval.foundation.errors import CtxevalError

SPECS = [
    "fixed(chars=7, overlap=2)",
    "fixed(chars=50)",
    "fixed(words=3, overlap=1)",
    "fixed(words=10)",
    "fixed(tokens=4, overlap=1)",
    "sentences(n=2)",
    "sentences(n=3, overlap=1)",
    "paragraphs(max_words=6)",
    "recursive(chars=30)",
]

words = st.sampled_from(["alpha", "Beta.", "gamma,", "délta", "日本", "x1", "(y)", "z?"])
texts = st.lists(
    st.tuples(words, st.sampled_from([" ", " ", "  ", "\n", "\n\n", " \n\n "])), max_size=40
).map(lambda parts: "".join(w + s for w, s in parts))


@pytest.mark.parametrize("spec", SPECS)
@settings(max_examples=80, deadline=None)
@given(text=st.one_of(texts, st.just(""), st.just("   \n\n  ")))
def test_spans_hold_exactly_their_text(spec: str, text: str) -> None:
    chunks = parse_chunker(spec).chunk(text, doc="d")
    for chunk in chunks:
        assert isinstance(chunk, Chunk)
        assert chunk.doc == "d"
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert text[chunk.start : chunk.end] == chunk.text
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)  # document order
    if spec.startswith(("recursive", "fixed(chars")):
        limit = int(re.findall(r"\d+", spec)[0])
        assert all(len(c.text) <= limit for c in chunks)
    if not spec.startswith("fixed(chars"):
        for chunk in chunks:  # text-aligned chunkers never begin or end on whitespace
            assert not chunk.text[0].isspace()
            assert not chunk.text[-1].isspace()


@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_coverage_as_documented(text: str) -> None:
    # Character windows cover every character; word and token windows every word and token;
    # every non-space character is in some chunk of the text-aligned chunkers.
    covered = set()
    for chunk in parse_chunker("fixed(chars=7, overlap=2)").chunk(text):
        covered.update(range(chunk.start, chunk.end))
    assert covered == set(range(len(text)))
    for spec, pattern in (("fixed(words=3)", r"\S+"), ("fixed(tokens=4)", r"[A-Za-z0-9]+")):
        spans = [(c.start, c.end) for c in parse_chunker(spec).chunk(text)]
        for unit in re.finditer(pattern, text):
            assert any(s <= unit.start() and unit.end() <= e for s, e in spans), (spec, unit)
    for spec in ("paragraphs(max_words=6)", "recursive(chars=30)", "sentences(n=2)"):
        inside = set()
        for chunk in parse_chunker(spec).chunk(text):
            inside.update(range(chunk.start, chunk.end))
        assert {i for i, ch in enumerate(text) if not ch.isspace()} <= inside, spec


def test_fixed_windows_by_hand() -> None:
    text = "abcdefghij"
    assert [c.text for c in FixedChunker(chars=4, overlap=1).chunk(text)] == [
        "abcd",
        "defg",
        "ghij",
    ]
    words = "one two  three four\nfive"
    assert [c.text for c in parse_chunker("fixed(words=2, overlap=1)").chunk(words)] == [
        "one two",
        "two  three",
        "three four",
        "four\nfive",
    ]
    # Tokens are rouge-score's ([A-Za-z0-9]+): punctuation between them stays inside a chunk.
    assert [c.text for c in parse_chunker("fixed(tokens=2)").chunk("a, b. c-d")] == [
        "a, b",
        "c-d",
    ]


def test_offsets_are_string_indices_after_non_ascii_text() -> None:
    text = "日本語の文。 Second sentence here."
    chunks = parse_chunker("fixed(words=2)").chunk(text)
    assert [(c.start, c.text) for c in chunks] == [
        (0, "日本語の文。 Second"),
        (14, "sentence here."),
    ]


def test_paragraphs_and_recursive_by_hand() -> None:
    text = "One two three.\n\nFour five.\n\nSix seven eight nine ten eleven."
    assert [c.text for c in parse_chunker("paragraphs(max_words=5)").chunk(text)] == [
        "One two three.\n\nFour five.",
        "Six seven eight nine ten eleven.",  # longer than max_words: a chunk of its own
    ]
    # 32 characters: over the limit, so split on spaces and merged back up to 30.
    chunks = parse_chunker("recursive(chars=30)").chunk(text)
    assert [c.text for c in chunks] == [
        "One two three.\n\nFour five.",
        "Six seven eight nine ten",
        "eleven.",
    ]
    assert all(len(c.text) <= 30 for c in chunks)


def test_sentence_groups_by_hand() -> None:
    text = "First one. Second one! Third one? Fourth."
    assert [c.text for c in parse_chunker("sentences(n=2)").chunk(text)] == [
        "First one. Second one!",
        "Third one? Fourth.",
    ]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("fixd(chars=10)", "did you mean 'fixed'"),
        ("fixed(chars=10, overlap=10)", "overlap must be smaller"),
        ("fixed(chars=10, words=3)", "exactly one size"),
        ("fixed()", "exactly one size"),
        ("fixed(chars=0)", "chars=0"),
        ("sentences(nn=3)", "did you mean 'n'"),
        ("paragraphs(max_words=-1)", "max_words=-1"),
        ("recursive(800)", "name the chunker's options"),
    ],
)
def test_bad_specs_say_what_to_do(spec: str, fragment: str) -> None:
    with pytest.raises(CtxevalError, match=re.escape(fragment)):
        parse_chunker(spec)


def test_chunkers_are_values_with_canonical_specs() -> None:
    assert parse_chunker("fixed(chars=800, overlap=400)") == FixedChunker(chars=800, overlap=400)
    assert parse_chunker("fixed( chars = 800 )").spec == "fixed(chars=800, overlap=0)"
    assert len({parse_chunker("sentences(n=5)"), parse_chunker("sentences(n=5, overlap=0)")}) == 1
