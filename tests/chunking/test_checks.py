"""The harness's warnings (:mod:`ctxeval.chunking.checks`): each one on a small hand-built corpus
that calls for it, none on a corpus that does not, in summary.json, and on the command line as
one line on stderr with exit code 0 (tests/cli/test_chunking_warnings_cli.py)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ctxeval.chunking import Chunk, ChunkingWarning, compare_chunkers
from ctxeval.chunking.checks import (
    APPROXIMATE_EXCERPT_SHARE,
    MEDIAN_OVERSIZE_FACTOR,
    OVERSIZE_FACTOR,
    SHORT_DOCUMENT_SHARE,
    STARVED_SHARE,
)

ROOT = Path(__file__).resolve().parents[2]


def _in_order(question: str, chunks: Sequence[Chunk]) -> list[int]:
    return list(range(len(chunks)))


def _sentence(i: int, words: int = 6) -> str:
    return " ".join(f"w{i}x{j}" for j in range(words)) + "."


def _document(first: int, sentences: int, words: int = 6) -> str:
    return " ".join(_sentence(first + i, words) for i in range(sentences))


# Ten documents of eight 6-word sentences (48 words): long enough for every chunker below.
NORMAL = {f"d{i}": _document(100 * i, 8) for i in range(10)}


def _run(
    corpus: dict[str, str],
    chunkers: dict[str, object],
    excerpts: Sequence[object] | None = None,
    **options: object,
) -> tuple[list[str], list[str]]:
    """The harness's warnings on ``corpus``: as raised, and as kept in the outcome."""
    first_doc = next(iter(corpus))
    given = excerpts or [{"doc": first_doc, "start": 0, "end": 10}]
    questions = [{"id": "q", "question": "w0x1", "excerpts": list(given)}]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = compare_chunkers(
            corpus,
            questions,
            chunkers,
            retriever=_in_order,
            n_resamples=10,
            **({"k": [1]} | options),
        )
    raised = [str(w.message) for w in caught if issubclass(w.category, ChunkingWarning)]
    assert raised == outcome.warnings
    assert outcome.summary()["warnings"] == outcome.warnings
    return raised, outcome.warnings


def test_a_normal_corpus_warns_of_nothing() -> None:
    raised, _ = _run(
        NORMAL,
        {
            "w10": "fixed(words=10, overlap=2)",
            "s2": "sentences(n=2)",
            "p": "paragraphs(max_words=20, split=True)",
            "r": "recursive(chars=100)",
        },
    )
    assert raised == []


def test_documents_shorter_than_the_target() -> None:
    # Three of four documents have 12 words: fixed(words=40) leaves them whole, fixed(words=5)
    # does not; the fourth has 48.
    corpus = {"a": _document(0, 2), "b": _document(10, 2), "c": _document(20, 2)}
    corpus["d"] = _document(30, 8)
    raised, _ = _run(corpus, {"small": "fixed(words=5)", "big": "fixed(words=40)"})
    assert len(raised) == 1
    assert raised[0].startswith(
        "chunker big (fixed(words=40, overlap=0)): 3 of 4 documents (75%) are no longer than its "
        "target size, each one chunk, the whole document;"
    )
    assert "the median document has 12 words" in raised[0]


def test_half_the_documents_whole_is_not_most() -> None:
    corpus = {"a": _document(0, 2), "b": _document(10, 2)}
    corpus |= {"c": _document(20, 8), "d": _document(30, 8)}
    assert SHORT_DOCUMENT_SHARE == 0.5  # 2 of 4 is not more than half
    raised, _ = _run(corpus, {"small": "fixed(words=5)", "big": "fixed(words=20)"})
    assert raised == []


def test_a_long_paragraph_alone_is_not_short() -> None:
    # Every NORMAL document is one paragraph of 48 words: paragraphs(max_words=20) leaves each
    # whole, but over its size, not under it (the oversize check's business, at 4 times).
    raised, _ = _run(NORMAL, {"p": "paragraphs(max_words=20)", "w": "fixed(words=10)"})
    assert raised == []


def test_a_function_chunker_has_no_target_to_be_shorter_than() -> None:
    raised, _ = _run(NORMAL, {"whole": lambda text: [(0, len(text))], "w": "fixed(words=10)"})
    assert raised == []


def test_two_chunkers_with_the_same_chunks_are_named() -> None:
    # Every sentence has 6 words, so 6-word windows are the sentences.
    raised, _ = _run(
        NORMAL, {"s1": "sentences(n=1)", "w6": "fixed(words=6)", "w7": "fixed(words=7)"}
    )
    assert raised == [
        "chunkers s1 and w6 make the same chunks (the same spans in every document: s1: "
        "sentences(n=1, overlap=0); w6: fixed(words=6, overlap=0)); they are one chunking under "
        "2 names, and comparing them says nothing (drop all but one, or change their sizes)"
    ]


def test_three_names_of_one_chunking() -> None:
    raised, _ = _run(
        NORMAL, {"a": "fixed(words=6)", "b": "sentences(n=1)", "c": "fixed(words=6, overlap=0)"}
    )
    assert len(raised) == 1
    assert raised[0].startswith("chunkers a, b and c make the same chunks")
    assert "under 3 names" in raised[0]


def test_chunks_many_times_a_stated_size() -> None:
    # One paragraph of 48 words: paragraphs(max_words=10) keeps it whole, 4.8 times its size.
    corpus = dict(NORMAL)
    corpus["long"] = _document(5000, 8) + "\n\n" + _sentence(6000)
    assert OVERSIZE_FACTOR * 10 < 48
    raised, _ = _run(corpus, {"p": "paragraphs(max_words=10)", "w": "fixed(words=10)"})
    oversize = [m for m in raised if "times" in m]
    assert oversize == [
        "chunker p (paragraphs(max_words=10)): 11 chunks over 4 times the 10 words it states, "
        "the largest 48 words; a budget smaller than a chunk never feeds it, and it dilutes "
        "whatever it holds (cut long paragraphs: paragraphs(max_words=10, split=True))"
    ]
    # The cap the message names makes it go.
    raised, _ = _run(corpus, {"p": "paragraphs(max_words=10, split=True)", "w": "fixed(words=9)"})
    assert [m for m in raised if "times" in m] == []


def test_chunks_many_times_the_median_when_no_size_is_stated() -> None:
    # sentences(n=1): 6-word chunks, and one sentence of 70 words (over 10 times the median 6).
    corpus = dict(NORMAL)
    corpus["run-on"] = _document(7000, 3) + " " + _sentence(8000, words=70)
    assert MEDIAN_OVERSIZE_FACTOR * 6 < 70
    raised, _ = _run(corpus, {"s": "sentences(n=1)", "w": "fixed(words=9)"})
    assert raised == [
        "chunker s (sentences(n=1, overlap=0)): 1 chunk over 10 times its median chunk (6 words), "
        "the largest 70 words; a budget smaller than a chunk never feeds it, and it dilutes "
        "whatever it holds (cap it: sentences(..., max_words=N), or max_tokens=N)"
    ]
    raised, _ = _run(corpus, {"s": "sentences(n=1, max_words=12)", "w": "fixed(words=9)"})
    assert raised == []


def test_a_high_share_of_excerpts_not_found_as_written() -> None:
    doc = NORMAL["d0"]
    exact = doc[7:30]
    shouted = doc[40:70].upper()  # found after normalising case
    spans = [{"doc": "d1", "start": 0, "end": 12}] * 7
    assert APPROXIMATE_EXCERPT_SHARE == 0.1
    raised, _ = _run(NORMAL, {"a": "fixed(words=10)", "b": "fixed(words=12)"}, [*spans, exact])
    assert raised == []  # every excerpt as written
    # 1 of 10 (10%): at the line.
    raised, _ = _run(
        NORMAL, {"a": "fixed(words=10)", "b": "fixed(words=12)"}, [*spans, exact, shouted, exact]
    )
    assert raised == [
        "1 of 10 excerpts (10%) are not in the corpus as written (1 found after normalising "
        "whitespace and case, 0 fuzzily), and each takes the document's text at its span: were "
        "the questions written for another version of the corpus? (give spans, or copy the "
        "excerpts from the documents)"
    ]
    # Below the line: 1 of 11.
    raised, _ = _run(
        NORMAL,
        {"a": "fixed(words=10)", "b": "fixed(words=12)"},
        [*spans, exact, shouted, exact, exact],
    )
    assert raised == []


def test_a_run_whose_first_chunks_are_over_a_budget() -> None:
    # Found by a user's trial: a semantic chunking fed nothing to half the questions at 300w and
    # lost the verdict for it, unwarned. One question, its first chunk 40 words.
    assert STARVED_SHARE == 0.2
    chunkers = {"big": "fixed(words=40)", "small": "fixed(words=5)"}
    raised, _ = _run(NORMAL, chunkers, k=["10w", "50w"])
    assert raised == [
        "big feeds no chunk at all to 100% of the questions at 10w: their first retrieved chunk "
        "is larger than the budget, so the run loses there for its chunks' size, not its ranking "
        "(compare at larger budgets, make the chunks smaller, or cut the chunk that crosses the "
        "budget to fit: the 'truncate' budget policy)"
    ]
    raised, _ = _run(NORMAL, chunkers, k=["10w", "50w"], budget_policy="truncate")
    assert raised == []  # the first chunk is cut to fit: every question is fed some text
    raised, _ = _run(NORMAL, chunkers, k=[1, "50w"])
    assert raised == []


def test_the_fixtures_with_the_readmes_chunkers_warn_of_nothing() -> None:
    raised, kept = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = compare_chunkers(
            ROOT / "fixtures" / "corpus",
            ROOT / "fixtures" / "questions.jsonl",
            {
                "fixed": "fixed(words=100, overlap=10)",
                "sentences": "sentences(n=3)",
                "paragraphs": "paragraphs(max_words=100)",
            },
            k=[5],
            n_resamples=10,
        )
    raised = [str(w.message) for w in caught if issubclass(w.category, ChunkingWarning)]
    kept = outcome.warnings
    assert raised == kept == []


def test_without_retrieval_the_chunkers_are_checked_too() -> None:
    # --retriever none (chunker sweeps): the checks read the ceilings' chunks.
    questions = [
        {"id": "q", "question": "w0x1", "excerpts": [{"doc": "d0", "start": 0, "end": 10}]}
    ]
    chunkers = {"s1": "sentences(n=1)", "w6": "fixed(words=6)", "p": "paragraphs(max_words=10)"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = compare_chunkers(NORMAL, questions, chunkers, retriever=None)
    raised = [str(w.message) for w in caught if issubclass(w.category, ChunkingWarning)]
    assert outcome.runs == {}
    assert raised == outcome.warnings
    assert outcome.summary()["warnings"] == outcome.warnings
    assert raised[0].startswith("chunker p (paragraphs(max_words=10)): 10 chunks over 4 times")
    assert raised[1].startswith("chunkers s1 and w6 make the same chunks")
    assert len(raised) == 2


def test_an_oversized_semantic_chunk_is_told_its_cap() -> None:
    # One vector for every sentence: no distance passes the threshold, so each document is one
    # chunk, 48 words, over 10 times the median of a corpus of short documents.
    from ctxeval.chunking import SemanticChunker

    def same(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 3))

    corpus = {f"s{i}": _sentence(i, 3) for i in range(12)} | {"long": _document(500, 8)}
    raised, _ = _run(corpus, {"sem": SemanticChunker(embedder=same), "w": "fixed(words=3)"})
    oversized = [message for message in raised if message.startswith("chunker sem")]
    assert len(oversized) == 1
    assert oversized[0].endswith("(cap it: semantic(..., max_tokens=N))")


def test_an_oversized_chunk_of_a_capped_semantic_chunker_is_not_told_to_cap_it() -> None:
    # semantic(max_tokens=5) cuts between sentences only: a 48-word sentence stays whole, over
    # 10 times the median (3 words). Telling it to "cap it" would name the cap it already has.
    from ctxeval.chunking import SemanticChunker

    def same(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 3))

    corpus = {f"s{i}": _sentence(i, 3) for i in range(12)} | {"long": _sentence(500, 48)}
    capped = SemanticChunker(embedder=same, max_tokens=5)
    raised, _ = _run(corpus, {"sem": capped, "w": "fixed(words=3)"})
    oversized = [message for message in raised if message.startswith("chunker sem")]
    assert len(oversized) == 1
    assert "cap it" not in oversized[0]
    assert oversized[0].endswith(
        "(semantic(max_tokens=5) cuts only between sentences: a longer sentence stays whole; "
        "lower max_tokens, or give a splitter that finds more sentences, e.g. "
        "splitter='newline')"
    )


def test_an_oversized_chunk_of_a_capped_sentence_chunker_is_told_to_lower_the_cap() -> None:
    # sentences(n=1, max_tokens=70): the 70-word sentence fits the cap, 11.7 times the median.
    corpus = dict(NORMAL)
    corpus["run-on"] = _document(7000, 3) + " " + _sentence(8000, words=70)
    raised, _ = _run(corpus, {"s": "sentences(n=1, max_tokens=70)", "w": "fixed(words=9)"})
    assert len(raised) == 1
    assert raised[0].endswith(
        "(lower its size: sentences(..., max_tokens=70) makes chunks of up to 70 tokens)"
    )


def test_a_token_chunker_is_told_its_size_not_to_choose_one_that_caps_it() -> None:
    # recursive(tokens=80): the short documents are one chunk each (median 6 words) and the
    # 70-word document is one chunk too, within its 80 tokens: a chunker that caps its size,
    # whose size is high for this corpus.
    corpus = {f"s{i}": _sentence(i) for i in range(12)} | {"long": _sentence(900, words=70)}
    chunkers = {"r": "recursive(tokens=80)", "f": "fixed(tokens=80)"}
    raised, _ = _run(corpus, chunkers)
    oversize = [m for m in raised if "times" in m]
    assert [m.partition(":")[0] for m in oversize] == [
        "chunker r (recursive(tokens=80, overlap=0))",
        "chunker f (fixed(tokens=80, overlap=0))",
    ]
    assert oversize[0].endswith(
        "(lower its size: recursive(..., tokens=80) makes chunks of up to 80 tokens)"
    )
    assert oversize[1].endswith(
        "(lower its size: fixed(..., tokens=80) makes chunks of up to 80 tokens)"
    )
    assert not any("choose a chunker that caps its size" in m for m in raised)


def test_a_cluster_chunker_is_told_to_lower_max_tokens() -> None:
    from ctxeval.chunking import ClusterChunker

    def same(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 3))

    corpus = {f"s{i}": _sentence(i) for i in range(12)} | {"long": _sentence(900, words=70)}
    cluster = ClusterChunker(max_tokens=80, piece_tokens=10, embedder=same)
    raised, _ = _run(corpus, {"c": cluster, "w": "fixed(words=5)"})
    oversize = [m for m in raised if m.startswith("chunker c ") and "times" in m]
    assert len(oversize) == 1
    # Every document is one chunk and has at most 70 ROUGE tokens, within max_tokens=80.
    assert any(m.startswith("chunker c ") and "13 of 13 documents (100%)" in m for m in raised)
    assert oversize[0].endswith(
        "(lower max_tokens: cluster(..., max_tokens=80) makes chunks of up to that many tokens "
        "(longer only where no run of pieces scores above zero))"
    )


# ---- documents shorter than a size in tokens: counted with the chunker's tokenizer ----------


def _same(texts: list[str]) -> np.ndarray:
    """Every text the same vector: chroma's program then keeps each document one chunk."""
    return np.ones((len(texts), 3))


def _short_of(raised: list[str], name: str) -> list[str]:
    return [m for m in raised if m.startswith(f"chunker {name} ") and "no longer than" in m]


def test_a_cluster_chunker_is_checked_against_max_tokens() -> None:
    from ctxeval.chunking import ClusterChunker

    # Under _same every document is one chunk, whatever its length (no run scores above zero).
    # a, b, c have 12 ROUGE tokens, within max_tokens=20: 3 of 4 documents are short.
    cluster = ClusterChunker(max_tokens=20, piece_tokens=10, embedder=_same)
    corpus = {"a": _document(0, 2), "b": _document(10, 2), "c": _document(20, 2)}
    raised, _ = _run(corpus | {"d": _document(30, 8)}, {"c": cluster, "w": "fixed(words=5)"})
    [short] = _short_of(raised, "c")
    assert "3 of 4 documents (75%)" in short
    # One chunk each, but three of them have 48 tokens, over 20: one of four is short, not most.
    corpus = {"a": _document(0, 2)} | {d: _document(i * 10, 8) for i, d in enumerate("bcd", 1)}
    raised, _ = _run(corpus, {"c": cluster, "w": "fixed(words=5)"})
    assert _short_of(raised, "c") == []


def test_a_token_chunker_is_checked_against_its_tokens() -> None:
    # recursive(tokens=10, separators=['\n\n']) keeps a document without a blank line whole:
    # the 12-token documents are one chunk but over 10 tokens, the 6-token ones within.
    chunkers = {"r": "recursive(tokens=10, separators=['\\n\\n'])", "w": "fixed(words=3)"}
    over = {d: _document(i * 10, 2) for i, d in enumerate("abc")}
    raised, _ = _run(over | {"d": _sentence(90)}, chunkers)
    assert _short_of(raised, "r") == []
    within = {d: _sentence(i) for i, d in enumerate("abc")}
    raised, _ = _run(within | {"d": _document(90, 2)}, chunkers)
    [short] = _short_of(raised, "r")
    assert "3 of 4 documents (75%)" in short
    # fixed(tokens=N) and sentences(max_tokens=N) are checked the same way.
    raised, _ = _run(within | {"d": _document(90, 8)}, {"f": "fixed(tokens=10)", **chunkers})
    assert len(_short_of(raised, "f")) == 1
    capped = {"s": "sentences(n=3, max_tokens=8)", "w": "fixed(words=3)"}
    assert len(_short_of(_run(within | {"d": _document(90, 2)}, capped)[0], "s")) == 1


def test_a_document_is_counted_in_the_chunkers_llm_tokens(monkeypatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    core = pytest.importorskip("llama_index.core")
    shipped = Path(core.__file__).parent / "_static" / "tiktoken_cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(shipped))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    # Three ROUGE tokens, more cl100k_base tokens than 5: not within tokens=5 of cl100k_base.
    text = "xqzvw jkwqp pfmzt"
    assert len(tiktoken.get_encoding("cl100k_base").encode_ordinary(text)) > 5
    corpus = {d: text.replace("x", d) for d in "abc"} | {"d": _document(90, 8)}
    spec = "recursive(tokens=5, tokenizer='cl100k_base', separators=['\\n\\n'])"
    raised, _ = _run(corpus, {"r": spec, "w": "fixed(words=3)"})
    assert _short_of(raised, "r") == []
    rouge = "recursive(tokens=5, separators=['\\n\\n'])"  # the same in ROUGE tokens: 3 <= 5
    raised, _ = _run(corpus, {"r": rouge, "w": "fixed(words=3)"})
    assert len(_short_of(raised, "r")) == 1
