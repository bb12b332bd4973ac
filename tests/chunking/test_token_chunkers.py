"""Token chunkers of the field (ctxeval.chunking.tokens): ``fixed(tokens=N, tokenizer=...)`` and
``recursive(tokens=N, ...)`` equal LangChain's TokenTextSplitter and RecursiveCharacterTextSplitter
chunk for chunk, as spans of the document; a window cut inside a character by rule."""

from __future__ import annotations

import hashlib
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxeval.chunking import Chunker, FixedChunker, RecursiveChunker, parse_chunker
from ctxeval.chunking.tokens import CHROMA_SEPARATORS, token_windows
from ctxeval.foundation.errors import InvalidArgumentError, SpecError

tiktoken = pytest.importorskip("tiktoken")
llama_index_core = pytest.importorskip("llama_index.core")
splitters = pytest.importorskip("langchain_text_splitters")

ROOT = Path(__file__).resolve().parents[2]
# llama-index-core ships cl100k_base in tiktoken's cache layout (see tests/text/test_tokenizers.py)
SHIPPED = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"
CORPUS = {
    p.stem: p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures/corpus").iterdir())
}
EDGES = {
    "empty": "",
    "whitespace": " \n\n \t\n   ",
    "unicode": (
        "Ünïcödé — crème brûlée à la carte. 東京都の天気は晴れです。 Emoji: 🚀🎉 👩‍👩‍👧 🇫🇷!\n\n"
        "Ελληνικά κείμενα; русский текст? עברית! 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﷽ 🏳️‍🌈\n"
    )
    * 12,
    "cjk run": "東京都の天気は晴れです明日は雨が降るでしょう" * 60,  # no separator at all
    "emoji run": "🚀🎉👩‍👩‍👧🇫🇷𝔘" * 150,
    "long line": "a" * 3000 + " " + "bcd" * 900 + "." + "e" * 2000,
    "small pieces": "a b c. d e f? g h! " * 200 + "\n" + "x\n" * 300,
    "special": "text with <|endoftext|> inside, counted as text\n\n" * 20,
}
TEXTS = {**CORPUS, **EDGES}
# (tokens, overlap): the sizes, overlaps larger than most pieces, the smallest windows.
SIZES = [(200, 0), (200, 50), (50, 40), (16, 5), (3, 2), (1, 0)]


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHIPPED))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)


def _reference_fixed(text: str, size: int, overlap: int) -> list[str]:
    splitter = splitters.TokenTextSplitter(
        encoding_name="cl100k_base",
        chunk_size=size,
        chunk_overlap=overlap,
        disallowed_special=(),  # LangChain refuses <|endoftext|> by default; ctxeval reads it
    )
    return splitter.split_text(text)


def _reference_recursive(text: str, size: int, overlap: int, **options: object) -> list[str]:
    splitter = splitters.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base",
        chunk_size=size,
        chunk_overlap=overlap,
        disallowed_special=(),
        **options,
    )
    return splitter.split_text(text)


def _spans_hold(chunker: Chunker, text: str) -> list[str]:
    chunks = chunker.chunk(text, doc="d")
    for chunk in chunks:
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert chunk.text == text[chunk.start : chunk.end]
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    return [c.text for c in chunks]


def _whole_characters(ours: str, window: bytes) -> bool:
    """``ours`` is the shortest run of whole characters holding the bytes of ``window``."""
    encoded = ours.encode()
    at = encoded.find(window)
    return (
        at >= 0
        and at < len(ours[0].encode())
        and len(encoded) - (at + len(window)) < len(ours[-1].encode())
    )


@pytest.mark.parametrize(("size", "overlap"), SIZES)
def test_fixed_equals_langchain_chunk_for_chunk(size: int, overlap: int) -> None:
    encoding = tiktoken.get_encoding("cl100k_base")  # reads SHIPPED: no download
    chunker = parse_chunker(f"fixed(tokens={size}, overlap={overlap}, tokenizer='cl100k_base')")
    cut = 0
    for name, text in TEXTS.items():
        ours = _spans_hold(chunker, text)
        reference = _reference_fixed(text, size, overlap)
        assert len(ours) == len(reference), name
        ids = encoding.encode_ordinary(text)
        windows = token_windows(len(ids), size, overlap)
        for (start, end), mine, theirs in zip(windows, ours, reference, strict=True):
            if "\ufffd" not in theirs:
                assert mine == theirs, name
                continue
            # A window edge inside a character: the span holds the whole character, and
            # LangChain's text is the window's bytes decoded with U+FFFD for the cut character.
            window = encoding.decode_bytes(ids[start:end])
            assert theirs == window.decode("utf-8", errors="replace")
            assert _whole_characters(mine, window), (name, mine, theirs)
            cut += 1
    # Small windows cut characters of the emoji and CJK texts; 200-token ones may not.
    assert cut > 0 or size >= 50


@pytest.mark.parametrize(("size", "overlap"), SIZES)
def test_recursive_equals_langchain_and_chroma_chunk_for_chunk(size: int, overlap: int) -> None:
    chunker = parse_chunker(f"recursive(tokens={size}, overlap={overlap}, tokenizer='cl100k_base')")
    for name, text in TEXTS.items():
        if size == 1 and name in CORPUS and name > "c":
            continue  # a chunk per token: a few documents suffice, LangChain is slow there
        reference = _reference_recursive(text, size, overlap, separators=list(CHROMA_SEPARATORS))
        assert _spans_hold(chunker, text) == reference, name


@pytest.mark.parametrize(
    "separators",
    [["\n\n", "\n", " ", ""], ["\n\n", "."], ["\n"], [""], ["。", "!", " "]],
    ids=["langchain", "no-characters", "lines-only", "characters", "cjk"],
)
def test_recursive_with_other_separators_equals_langchain(separators: list[str]) -> None:
    spec = f"recursive(tokens=40, overlap=10, tokenizer='cl100k_base', separators={separators!r})"
    chunker = parse_chunker(spec)
    for name, text in TEXTS.items():
        reference = _reference_recursive(text, 40, 10, separators=separators)
        assert _spans_hold(chunker, text) == reference, name


# Text made of what the rules turn on: every separator, spaces and line breaks in runs, words,
# multi-byte characters (accents, CJK, emoji, a flag, a joined family), <|endoftext|>.
PIECES = st.sampled_from(
    ["\n\n", "\n", ".", "?", "!", " ", "  ", "\t", "word", "Wörter", "東京", "🚀", "🇫🇷", "é",
     "\U0001f469\u200d\U0001f469\u200d\U0001f467", "<|endoftext|>", "x" * 40, "1234567"]
)  # fmt: skip
TEXT = st.lists(PIECES, max_size=80).map("".join)
SIZE = st.integers(1, 24).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1)))
SEPARATORS = st.lists(st.sampled_from(["\n\n", "\n", ".", " ", "", "x", "🚀"]), min_size=1)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, size=SIZE, separators=st.none() | SEPARATORS)
def test_any_text_equals_langchain(
    text: str, size: tuple[int, int], separators: list[str] | None
) -> None:
    tokens, overlap = size
    chosen = list(CHROMA_SEPARATORS) if separators is None else separators
    spec = f"recursive(tokens={tokens}, overlap={overlap}, tokenizer='cl100k_base', "
    recursive = parse_chunker(f"{spec}separators={chosen!r})")
    assert _spans_hold(recursive, text) == _reference_recursive(
        text, tokens, overlap, separators=chosen
    )
    fixed = parse_chunker(f"fixed(tokens={tokens}, overlap={overlap}, tokenizer='cl100k_base')")
    ours, theirs = _spans_hold(fixed, text), _reference_fixed(text, tokens, overlap)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine == reference or "\ufffd" in reference
        assert reference.strip("\ufffd") in mine


def test_recursive_without_a_tokenizer_counts_rouge_tokens_as_fixed_does() -> None:
    def rouge(text: str) -> int:
        return len(re.findall(r"[A-Za-z0-9]+", text))

    chunker = parse_chunker("recursive(tokens=30, overlap=10)")
    assert chunker.spec == "recursive(tokens=30, overlap=10)"
    for name, text in TEXTS.items():
        splitter = splitters.RecursiveCharacterTextSplitter(
            chunk_size=30,
            chunk_overlap=10,
            length_function=rouge,
            separators=list(CHROMA_SEPARATORS),
        )
        assert _spans_hold(chunker, text) == splitter.split_text(text), name


def test_empty_and_whitespace_documents() -> None:
    for spec in (
        "fixed(tokens=5, tokenizer='cl100k_base')",
        "recursive(tokens=5, tokenizer='cl100k_base')",
    ):
        chunker = parse_chunker(spec)
        assert chunker.chunk("") == []
    # A whitespace-only document is tokens for the window chunker, nothing after strip for the
    # recursive one, as in LangChain.
    fixed = parse_chunker("fixed(tokens=5, tokenizer='cl100k_base')")
    assert [c.text for c in fixed.chunk(" \n\n \t")] == _reference_fixed(" \n\n \t", 5, 0)
    assert parse_chunker("recursive(tokens=5, tokenizer='cl100k_base')").chunk(" \n\n \t") == []


def test_specs_parse_and_round_trip() -> None:
    chunker = parse_chunker("fixed(tokens=256, overlap=32, tokenizer='cl100k_base')")
    assert isinstance(chunker, FixedChunker)
    assert chunker.spec == "fixed(tokens=256, overlap=32, tokenizer='cl100k_base')"
    assert chunker != parse_chunker("fixed(tokens=256, overlap=32)")  # ROUGE tokens, as before
    assert parse_chunker("fixed(tokens=256, overlap=32)").spec == "fixed(tokens=256, overlap=32)"
    recursive = parse_chunker("recursive(tokens=200, overlap=50, tokenizer='cl100k_base')")
    assert isinstance(recursive, RecursiveChunker)
    assert recursive.spec == "recursive(tokens=200, overlap=50, tokenizer='cl100k_base')"
    assert parse_chunker("recursive(tokens=200, tokenizer='cl100k_base')").spec == (
        "recursive(tokens=200, overlap=0, tokenizer='cl100k_base')"
    )
    custom = parse_chunker("recursive(tokens=9, separators=('\\n\\n', ' ', ''))")
    assert custom.spec == "recursive(tokens=9, overlap=0, separators=['\\n\\n', ' ', ''])"
    assert parse_chunker(custom.spec) == custom
    default = parse_chunker(f"recursive(tokens=9, separators={list(CHROMA_SEPARATORS)!r})")
    assert default.spec == "recursive(tokens=9, overlap=0)"
    # The chars rule is unchanged.
    assert parse_chunker("recursive()").spec == "recursive(chars=800)"
    assert parse_chunker("recursive(chars=300)").spec == "recursive(chars=300)"


def test_chunkers_pickle_by_name() -> None:
    text = EDGES["unicode"]
    for spec in (
        "fixed(tokens=20, overlap=5, tokenizer='cl100k_base')",
        "recursive(tokens=20, overlap=5, tokenizer='cl100k_base')",
    ):
        chunker = parse_chunker(spec)
        copy = pickle.loads(pickle.dumps(chunker))
        assert copy == chunker
        assert copy.spans(text) == chunker.spans(text)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "fixed(tokens=32, overlap=32, tokenizer='cl100k_base')",
            "the overlap must be smaller than the chunk size",
        ),
        (
            "recursive(tokens=32, overlap=40, tokenizer='cl100k_base')",
            r"the overlap \(40 tokens\) must be smaller than the chunk size \(32 tokens\)",
        ),
        ("recursive(tokens=0)", "give tokens as a whole number >= 1"),
        (
            "fixed(tokens=32, tokenizer='cl100k')",
            r"unknown tokenizer 'cl100k'; did you mean 'cl100k_base'\?.*'hf:PATH'",
        ),
        ("recursive(tokens=32, tokenizer='gpt2')", "unknown tokenizer 'gpt2'"),
        ("fixed(chars=800, tokenizer='cl100k_base')", "a tokenizer goes with tokens"),
        ("recursive(chars=800, overlap=10)", "recursive\\(chars=...\\) takes no overlap"),
        ("recursive(chars=800, tokens=10)", "give chars or tokens, not both"),
        ("recursive(tokens=10, separators=[])", "give separators as a list of strings"),
        ("recursive(tokens=10, separators='\\n')", "give separators as a list of strings"),
        ("fixed(tokens=10, tokenizer='hf:/no/such/tokenizer.json')", "no such file"),
    ],
)
def test_bad_options_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises((InvalidArgumentError, SpecError), match=message):
        parse_chunker(spec)


def test_a_missing_encoding_file_names_the_chunker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(InvalidArgumentError) as caught:
        parse_chunker("fixed(tokens=64, tokenizer='o200k_base')")
    message = str(caught.value)
    assert message.startswith("fixed(tokens=64, overlap=0, tokenizer='o200k_base'): tokenizer")
    assert "o200k_base.tiktoken is not on this machine, and ctxeval never downloads" in message


def test_hugging_face_tokenizers() -> None:
    wordllama = pytest.importorskip("wordllama")
    tokenizers = pytest.importorskip("tokenizers")
    path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    tokenizer = tokenizers.Tokenizer.from_file(str(path))

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    for name in ("assert", "unicode", "emoji run", "empty"):
        text = TEXTS[name]
        # Windows by the tokenizer's character offsets: as many as LangChain's token windows.
        fixed = parse_chunker(f"fixed(tokens=20, overlap=5, tokenizer='hf:{path}')")
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        assert len(_spans_hold(fixed, text)) == len(token_windows(len(ids), 20, 5))
        recursive = parse_chunker(f"recursive(tokens=20, overlap=5, tokenizer='hf:{path}')")
        splitter = splitters.RecursiveCharacterTextSplitter(
            chunk_size=20,
            chunk_overlap=5,
            length_function=count,
            separators=list(CHROMA_SEPARATORS),
        )
        assert _spans_hold(recursive, text) == splitter.split_text(text), name


def test_the_tokenizer_is_read_from_the_cache_not_the_network() -> None:
    key = hashlib.sha1(
        b"https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    ).hexdigest()
    assert (SHIPPED / key).is_file()  # what these tests read; sockets are closed (conftest)
    assert parse_chunker("fixed(tokens=4, tokenizer='cl100k_base')").spans("hello world") == [
        (0, 11)
    ]
