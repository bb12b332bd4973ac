"""Size caps of ``sentences(...)`` and ``paragraphs(...)``: hand-computed chunks, spans that hold
their text, no chunk over the cap unless it is one word, specs that round-trip, and the uncapped
chunkers unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.chunking import ParagraphChunker, SentenceChunker, parse_chunker
from ctxeval.foundation.errors import CtxevalError

_WORD = re.compile(r"\S+")
_ROUGE = re.compile(r"[A-Za-z0-9]+")

words = st.sampled_from(
    ["alpha", "Beta.", "gamma,", "délta", "日本", "x1", "(y)", "z?", "end!", "a-b-c-d-e-f"]
)
texts = st.lists(
    st.tuples(words, st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", " \n\n "])), max_size=80
).map(lambda parts: "".join(w + s for w, s in parts))


def _texts(spec: str, text: str) -> list[str]:
    return [chunk.text for chunk in parse_chunker(spec).chunk(text, "d")]


def test_sentences_capped_in_words_by_hand() -> None:
    text = "One two three. Four five. Six seven eight nine ten eleven twelve. Thirteen."
    # Uncapped: groups of two sentences, whatever their size.
    assert _texts("sentences(n=2)", text) == [
        "One two three. Four five.",
        "Six seven eight nine ten eleven twelve. Thirteen.",
    ]
    # max_words=5: the first pair fits (5 words); the 7-word sentence is cut at words into
    # 5 + 2, and "eleven twelve." then takes "Thirteen." (3 words, a group of two units).
    assert _texts("sentences(n=2, max_words=5)", text) == [
        "One two three. Four five.",
        "Six seven eight nine ten",
        "eleven twelve. Thirteen.",
    ]
    # A group stops before the sentence that would take it over the cap.
    assert _texts("sentences(n=3, max_words=4)", "One two. Three four. Five six. Seven.") == [
        "One two. Three four.",
        "Five six. Seven.",
    ]


def test_capped_overlap_never_repeats_a_group_inside_the_last() -> None:
    text = "One two. Three four. Five six seven eight. Nine."
    # n=3, overlap=1 uncapped: units [0:3), then [2:4).
    assert _texts("sentences(n=3, overlap=1)", text) == [
        "One two. Three four. Five six seven eight.",
        "Five six seven eight. Nine.",
    ]
    # max_words=4: "One two. Three four." (the third sentence would make 8 words); the next
    # group would begin with "Three four." but could hold nothing more (6 words), so it begins
    # after it; likewise "Five six seven eight." cannot take "Nine.".
    assert _texts("sentences(n=3, overlap=1, max_words=4)", text) == [
        "One two. Three four.",
        "Five six seven eight.",
        "Nine.",
    ]
    # With room, the overlap is kept: each group starts at the last sentence of the one before.
    assert _texts("sentences(n=3, overlap=1, max_words=6)", text) == [
        "One two. Three four.",
        "Three four. Five six seven eight.",
        "Five six seven eight. Nine.",
    ]


def test_sentences_capped_in_rouge_tokens_by_hand() -> None:
    # Without a tokenizer, tokens are ROUGE tokens: "a-b-c" is one word and three tokens.
    text = "a-b-c d. e f."
    assert _texts("sentences(n=2, max_tokens=4)", text) == ["a-b-c d.", "e f."]
    # A word longer than the cap is a piece of its own, never cut.
    assert _texts("sentences(n=1, max_tokens=2)", "a-b-c d e. f.") == ["a-b-c", "d e.", "f."]


def test_paragraphs_split_long_ones_by_hand() -> None:
    text = "One two three.\n\nFour five.\n\nSix seven eight. Nine ten eleven twelve thirteen."
    # The default keeps a long paragraph whole (the merge limit of earlier versions).
    assert _texts("paragraphs(max_words=5)", text) == [
        "One two three.\n\nFour five.",
        "Six seven eight. Nine ten eleven twelve thirteen.",
    ]
    # split=True: the 8-word paragraph becomes its sentences (3 + 5 words), merged as paragraphs
    # are: "Six seven eight." cannot join the 5 words before it, nor the 5 after.
    assert _texts("paragraphs(max_words=5, split=True)", text) == [
        "One two three.\n\nFour five.",
        "Six seven eight.",
        "Nine ten eleven twelve thirteen.",
    ]
    # A sentence still too long is cut at words.
    assert _texts("paragraphs(max_words=3, split=True)", "a b c d e f g.\n\nh.") == [
        "a b c",
        "d e f",
        "g.\n\nh.",
    ]


def _size(spec: str, text: str) -> int:
    if "max_tokens" in spec:
        return len(_ROUGE.findall(text))
    return len(_WORD.findall(text))


CAPPED = [
    "sentences(n=3, max_words=4)",
    "sentences(n=2, overlap=1, max_words=6)",
    "sentences(n=4, max_tokens=5)",
    "paragraphs(max_words=4, split=True)",
    "paragraphs(max_words=1, split=True)",
]


@pytest.mark.parametrize("spec", CAPPED)
@settings(max_examples=120, deadline=None)
@given(text=st.one_of(texts, st.just(""), st.just("   \n\n  ")))
def test_capped_spans_hold_their_text_and_fit(spec: str, text: str) -> None:
    cap = int(re.findall(r"max_\w+=(\d+)", spec)[0])
    chunks = parse_chunker(spec).chunk(text, "d")
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert not chunk.text[0].isspace()
        assert not chunk.text[-1].isspace()
        # No chunk over the cap unless it is a single word.
        assert _size(spec, chunk.text) <= cap or len(_WORD.findall(chunk.text)) == 1
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    # Every word of the text is in some chunk: a cap cuts, it never drops text.
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(m.start() in covered for m in _WORD.finditer(text))


@settings(max_examples=80, deadline=None)
@given(text=texts, n=st.integers(1, 4), big=st.integers(10_000, 20_000))
def test_a_cap_nothing_reaches_changes_nothing(text: str, n: int, big: int) -> None:
    assert _texts(f"sentences(n={n}, max_words={big})", text) == _texts(f"sentences(n={n})", text)
    assert _texts(f"paragraphs(max_words={big}, split=True)", text) == _texts(
        f"paragraphs(max_words={big})", text
    )


def test_specs_round_trip_and_defaults_stay() -> None:
    for spec in [
        "sentences(n=3, overlap=0, max_words=100)",
        "sentences(n=3, overlap=1, max_tokens=64)",
        "paragraphs(max_words=100, split=True)",
    ]:
        chunker = parse_chunker(spec)
        assert chunker.spec == spec
        assert parse_chunker(chunker.spec) == chunker
    # Without a cap the specs are as before (saved summaries name the same chunkers).
    assert SentenceChunker(n=3).spec == "sentences(n=3, overlap=0)"
    assert ParagraphChunker(max_words=100).spec == "paragraphs(max_words=100)"
    assert parse_chunker("paragraphs(max_words=100, split=False)").spec == (
        "paragraphs(max_words=100)"
    )


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("sentences(max_words=3, max_tokens=4)", "give one cap"),
        ("sentences(tokenizer='cl100k_base')", "a tokenizer goes with max_tokens"),
        ("sentences(max_words=0)", "max_words=0"),
        ("sentences(max_tokens=-2)", "max_tokens=-2"),
        ("paragraphs(split='yes')", "split='yes'"),
        ("sentences(n=3, max_tokens=5, tokenizer='no-such-encoding')", "no-such-encoding"),
    ],
)
def test_bad_caps_say_what_to_do(spec: str, fragment: str) -> None:
    with pytest.raises(CtxevalError, match=re.escape(fragment)):
        parse_chunker(spec)


def test_sentences_capped_in_llm_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tokenizer, a group's tokens are counted on its text as it is (token counts are not
    additive): no chunk of the fixtures' first document goes over the cap but a lone word."""
    pytest.importorskip("tiktoken")
    llama_index_core = pytest.importorskip("llama_index.core")
    shipped = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(shipped))  # read offline, never downloaded
    from ctxeval.text.tokenizers import llm_token_counter

    count = llm_token_counter("cl100k_base")
    root = Path(__file__).resolve().parents[2]
    text = (root / "fixtures" / "corpus" / "calls.txt").read_text(encoding="utf-8")
    chunker = parse_chunker("sentences(n=3, max_tokens=40, tokenizer='cl100k_base')")
    assert chunker.spec == "sentences(n=3, overlap=0, max_tokens=40, tokenizer='cl100k_base')"
    chunks = chunker.chunk(text, "calls")
    uncapped = parse_chunker("sentences(n=3)").chunk(text, "calls")
    assert max(count(c.text) for c in uncapped) > 40  # the cap has work to do here
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert count(chunk.text) <= 40 or len(_WORD.findall(chunk.text)) == 1
