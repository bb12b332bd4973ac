"""Semantic chunkers (ctxeval.chunking.semantic): ``semantic(...)`` breaks where LangChain's
``SemanticChunker`` breaks, ``cluster(...)`` groups pieces as chroma's
``ClusterSemanticChunker``'s dynamic program does, both as spans of the document.

Neither reference is installed (langchain_experimental needs langchain-community; chroma's
package needs chromadb and an OpenAI key), so each is written out here, readably, from its
source, and ctxeval's chunkers are checked against it given the same embedder: a fixed function
of the text (topic words, or a vector seeded by the text), so every break can be checked by hand.
"""

from __future__ import annotations

import itertools
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctxeval.chunking import ClusterChunker, SemanticChunker, parse_chunker
from ctxeval.chunking import semantic as module
from ctxeval.chunking.semantic import breakpoints, cluster_segments, vector_segments
from ctxeval.foundation.errors import CtxevalError, InvalidArgumentError, SpecError
from ctxeval.retrieval.embedders import EmbeddingCache, FunctionEmbedder

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ("cat", "dog", "car")


def topics(texts: list[str]) -> np.ndarray:
    """How often each topic word occurs in the text (lowercased): a hand-checkable embedder."""
    return np.array([[t.lower().count(w) for w in TOPICS] for t in texts], dtype=np.float64)


def seeded(texts: list[str]) -> np.ndarray:
    """A vector of 16 normal deviates seeded by the text: generic, well-separated distances."""
    return np.array([np.random.default_rng(zlib.crc32(t.encode())).normal(size=16) for t in texts])


class Recording:
    """An embedder that remembers every text it was asked for."""

    def __init__(self, embed: object) -> None:
        self.embed, self.seen, self.name = embed, [], "recording"

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.embed(texts)  # type: ignore[operator]


# --- LangChain's SemanticChunker, written out (langchain_experimental.text_splitter) ------------


def langchain_threshold(distances: list[float], rule: str, amount: float) -> tuple[float, list]:
    """``_calculate_breakpoint_threshold`` and ``_threshold_from_clusters``."""
    if rule == "percentile":
        return float(np.percentile(distances, amount)), distances
    if rule == "standard_deviation":
        return float(np.mean(distances) + amount * np.std(distances)), distances
    if rule == "interquartile":
        q1, q3 = np.percentile(distances, [25, 75])
        return float(np.mean(distances) + amount * (q3 - q1)), distances
    if rule == "gradient":
        gradient = np.gradient(distances, range(0, len(distances)))
        return float(np.percentile(gradient, amount)), list(gradient)
    x1, y1, x2, y2 = len(distances), 0.0, 1.0, 100.0  # rule == "chunks"
    x = max(min(amount, x1), x2)
    y = y2 if x2 == x1 else y1 + ((y2 - y1) / (x2 - x1)) * (x - x1)
    return float(np.percentile(distances, min(max(y, 0), 100))), distances


def langchain_distances(sentences: list[str], buffer: int, embed: object) -> list[float]:
    """``combine_sentences`` and ``calculate_cosine_distances`` (its numpy cosine)."""
    combined = []
    for i in range(len(sentences)):
        text = ""
        for j in range(i - buffer, i):
            if j >= 0:
                text += sentences[j] + " "
        text += sentences[i]
        for j in range(i + 1, i + 1 + buffer):
            if j < len(sentences):
                text += " " + sentences[j]
        combined.append(text)
    vectors = np.asarray(embed(combined), dtype=np.float64)  # type: ignore[operator]
    out = []
    for a, b in itertools.pairwise(vectors):
        norms = np.linalg.norm(a) * np.linalg.norm(b)
        out.append(1 - (float(a @ b / norms) if norms else 0.0))
    return out


def langchain_split(
    text: str, embed: object, rule: str, amount: float, buffer: int, min_chunk_size: int | None
) -> list[str]:
    """``SemanticChunker.split_text``."""
    sentences = re.split(r"(?<=[.?!])\s+", text)
    if len(sentences) == 1 or (rule == "gradient" and len(sentences) == 2):
        return sentences
    distances = langchain_distances(sentences, buffer, embed)
    threshold, compared = langchain_threshold(distances, rule, amount)
    chunks, start = [], 0
    for index in [i for i, x in enumerate(compared) if x > threshold]:
        combined = " ".join(sentences[start : index + 1])
        if min_chunk_size is not None and len(combined) < min_chunk_size:
            continue
        chunks.append(combined)
        start = index + 1
    if start < len(sentences):
        chunks.append(" ".join(sentences[start:]))
    return chunks


def squeezed(text: str) -> str:
    return " ".join(text.split())


# --- semantic(...) by hand ---------------------------------------------------------------------

STORY = "Cats purr. Cats nap!  Cats hunt.\nDogs bark? Dogs fetch.\n\nCars drive. Cars honk.\n"


def test_breaks_where_the_topic_changes_by_hand() -> None:
    # buffer=0: each sentence alone. Topic vectors: cat, cat, cat, dog, dog, car, car, and ""
    # (the text ends with whitespace after '.', so LangChain's split leaves an empty last
    # sentence: a zero vector, distance 1). Distances: 0, 0, 1, 0, 1, 0, 1; their median is 0,
    # so breaks fall after sentences 2, 4 and 6.
    chunker = SemanticChunker(percentile=50, buffer=0, embedder=topics)
    chunks = chunker.chunk(STORY, doc="d")
    assert [c.text for c in chunks] == [
        "Cats purr. Cats nap!  Cats hunt.",
        "Dogs bark? Dogs fetch.",
        "Cars drive. Cars honk.",
    ]
    assert [(c.start, c.end) for c in chunks] == [(0, 32), (33, 55), (57, 79)]
    assert all(STORY[c.start : c.end] == c.text and c.doc == "d" for c in chunks)
    # The 95th percentile of those distances is 1: no distance is above it, one chunk.
    assert [c.text for c in SemanticChunker(buffer=0, embedder=topics).chunk(STORY)] == [
        STORY.strip()
    ]
    # standard_deviation=0: above the mean (3/7), the same three chunks.
    rule = SemanticChunker(standard_deviation=0, buffer=0, embedder=topics)
    assert [c.text for c in rule.chunk(STORY)] == [c.text for c in chunks]


def test_the_buffer_joins_neighbours_as_langchain_does() -> None:
    embed = Recording(topics)
    SemanticChunker(percentile=50, buffer=1, embedder=embed).chunk("A cat. A dog. A car.")
    assert embed.seen == ["A cat. A dog.", "A cat. A dog. A car.", "A dog. A car."]


def test_max_tokens_splits_at_the_largest_distance() -> None:
    # One chunk at the 95th percentile (above); with max_tokens=7 (ROUGE tokens), the story
    # (14 tokens) is cut at its first largest distance (after "Cats hunt."), leaving 6 tokens
    # of cats and 8 of dogs and cars, cut again at their first largest distance, between dogs
    # and cars (the last distance, to the empty sentence, is as large but comes later).
    capped = SemanticChunker(buffer=0, embedder=topics, max_tokens=7)
    assert [c.text for c in capped.chunk(STORY)] == [
        "Cats purr. Cats nap!  Cats hunt.",
        "Dogs bark? Dogs fetch.",
        "Cars drive. Cars honk.",
    ]
    # A single sentence over the cap stays whole.
    assert [c.text for c in capped.chunk("Cats purr and purr and purr and purr loudly.")] == [
        "Cats purr and purr and purr and purr loudly."
    ]


def test_min_chars_runs_a_short_chunk_on_to_the_next_break() -> None:
    # Distances 1, 0, 1; above their minimum (percentile 0), breaks after "A cat." (6
    # characters) and the second "A dog."; min_chars=7 keeps "A cat." from being a chunk, so it
    # runs on to the next break (LangChain's rule).
    text = "A cat. A dog. A dog. A car."
    plain = SemanticChunker(percentile=0, buffer=0, embedder=topics)
    assert [c.text for c in plain.chunk(text)] == ["A cat.", "A dog. A dog.", "A car."]
    merged = SemanticChunker(percentile=0, buffer=0, embedder=topics, min_chars=7)
    assert [c.text for c in merged.chunk(text)] == ["A cat. A dog. A dog.", "A car."]


def test_one_sentence_and_empty_texts() -> None:
    chunker = SemanticChunker(embedder=topics)
    assert chunker.chunk("") == []
    assert chunker.chunk("   \n ") == []
    assert [c.text for c in chunker.chunk("  One cat sentence, no break  ")] == [
        "One cat sentence, no break"
    ]
    # gradient needs three sentences, as in LangChain: two are two chunks.
    assert [c.text for c in SemanticChunker(gradient=95, embedder=topics).chunk("A. B.")] == [
        "A.",
        "B.",
    ]


def test_another_sentence_splitter() -> None:
    text = "cat one\ncat two\ndog three\ndog four"
    chunker = SemanticChunker(percentile=50, buffer=0, embedder=topics, splitter="newline")
    assert [c.text for c in chunker.chunk(text)] == ["cat one\ncat two", "dog three\ndog four"]
    assert chunker.spec == (
        "semantic(percentile=50, buffer=0, embedder='topics', splitter='newline')"
    )


# --- semantic(...) against LangChain's rule -----------------------------------------------------

distance_lists = st.lists(
    st.floats(0, 2, allow_nan=False, width=32) | st.sampled_from([0.0, 0.5, 1.0]),
    min_size=2,
    max_size=30,
)
RULES = [("percentile", 95), ("percentile", 50), ("percentile", 0), ("percentile", 100)]
RULES += [("standard_deviation", 3), ("standard_deviation", 0.5), ("interquartile", 1.5)]
RULES += [("interquartile", 0), ("gradient", 95), ("gradient", 10), ("chunks", 1), ("chunks", 4)]
rules = st.sampled_from(RULES)


@settings(max_examples=300)
@given(distances=distance_lists, rule=rules)
def test_breakpoints_are_langchains(distances: list[float], rule: tuple[str, float]) -> None:
    threshold, compared = langchain_threshold(distances, *rule)
    expected = [i for i, x in enumerate(compared) if x > threshold]
    assert breakpoints(distances, *rule) == expected


def test_breakpoints_at_the_95th_percentile_by_hand() -> None:
    # numpy's linear percentile of 21 values 0, 0.05, ..., 1.0 at 95 is 0.95: only 1.0 is above.
    distances = [i / 20 for i in range(21)]
    assert breakpoints(distances, "percentile", 95) == [20]
    assert breakpoints([0.1, 0.9, 0.1, 0.8], "percentile", 50) == [1, 3]


sentence = st.tuples(
    st.lists(st.sampled_from(["cat", "dog", "car", "sun", "Cats", "dogs", "x"]), min_size=1,
             max_size=4),
    st.sampled_from([".", "?", "!", "", "..."]),
)  # fmt: skip
gap = st.sampled_from([" ", "  ", "\n", "\n\n", " \n "])
documents = st.lists(st.tuples(sentence, gap), min_size=0, max_size=14).map(
    lambda parts: "".join(" ".join(words) + end + space for (words, end), space in parts)
)


@settings(max_examples=250)
@given(
    text=documents | st.sampled_from([STORY, "", "  A cat. ", "x"]),
    rule=rules,
    buffer=st.integers(0, 3),
    min_chars=st.none() | st.integers(1, 40),
)
def test_chunks_are_langchains(
    text: str, rule: tuple[str, float], buffer: int, min_chars: int | None
) -> None:
    sentences = re.split(r"(?<=[.?!])\s+", text)
    if len(sentences) > 2:
        # Breaks are decided by comparing floats: keep to texts whose distances (or gradient)
        # are apart from each other and from the threshold by more than the rounding of the
        # two computations (ctxeval: unit float32 vectors, LangChain: float64 cosines).
        distances = langchain_distances(sentences, buffer, seeded)
        threshold, compared = langchain_threshold(distances, *rule)
        values = sorted({*compared, threshold})
        assume(all(b - a > 1e-6 for a, b in itertools.pairwise(values)))
    expected = [squeezed(c) for c in langchain_split(text, seeded, *rule, buffer, min_chars)]
    embed = Recording(seeded)
    options = {rule[0]: rule[1], "buffer": buffer, "min_chars": min_chars, "embedder": embed}
    chunks = SemanticChunker(**options).chunk(text)  # type: ignore[arg-type]
    assert [squeezed(c.text) for c in chunks] == [c for c in expected if c]
    assert all(text[c.start : c.end] == c.text == c.text.strip() != "" for c in chunks)
    if len(sentences) > 2:  # the texts embedded are LangChain's joined sentences
        combined = [" ".join(sentences[max(0, i - buffer) : i + buffer + 1]) for i in
                    range(len(sentences))]  # fmt: skip
        assert sorted(embed.seen) == sorted(set(combined))


# --- cluster(...): chroma's dynamic program, written out ----------------------------------------


def chroma_segmentation(similarity: np.ndarray, max_cluster_size: int) -> list[tuple[int, int]]:
    """``ClusterSemanticChunker._optimal_segmentation``, one step at a time."""
    n = similarity.shape[0]
    mean_value = np.mean(similarity[np.triu_indices(n, k=1)])
    matrix = similarity - mean_value
    np.fill_diagonal(matrix, 0)
    dp = np.zeros(n)
    segmentation = np.zeros(n, dtype=int)
    for i in range(n):
        for size in range(1, max_cluster_size + 1):
            if i - size + 1 >= 0:
                reward = np.sum(matrix[i - size + 1 : i + 1, i - size + 1 : i + 1])
                if i - size >= 0:
                    reward += dp[i - size]
                if reward > dp[i]:
                    dp[i] = reward
                    segmentation[i] = i - size + 1
    clusters = []
    i = n - 1
    while i >= 0:
        start = int(segmentation[i])
        clusters.append((start, i))
        i = start - 1
    clusters.reverse()
    return clusters


def test_the_program_by_hand() -> None:
    # Two topics of two pieces each. Above the diagonal the mean is 2.2 / 6; a run of the two
    # similar pieces scores 2 * (0.9 - 0.367) = 1.067, a run across topics less than nothing.
    similarity = np.array(
        [[1, 0.9, 0.1, 0.1], [0.9, 1, 0.1, 0.1], [0.1, 0.1, 1, 0.9], [0.1, 0.1, 0.9, 1]]
    )
    assert cluster_segments(similarity, 2) == [(0, 1), (2, 3)]
    assert cluster_segments(similarity, 4) == [(0, 1), (2, 3)]
    assert cluster_segments(similarity, 1) == [(0, 3)]  # chroma's quirk: see below
    # Where no run ending at a piece scores above zero, chroma's run starts at piece 0: with
    # every similarity equal, every score is 0, and the whole document is one run, whatever
    # the largest size.
    assert cluster_segments(np.full((5, 5), 0.5), 2) == [(0, 4)]
    assert cluster_segments(np.ones((1, 1)), 3) == [(0, 0)]
    assert cluster_segments(np.ones((0, 0)), 3) == []


@st.composite
def similarities(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(2, 12))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    if draw(st.booleans()):  # cosines of vectors, as the chunker computes them
        seed = draw(st.integers(0, 2**32 - 1))
        vectors = np.random.default_rng(seed).normal(size=(n, draw(st.integers(1, 6))))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors @ vectors.T).astype(dtype)
    values = draw(st.lists(st.floats(-1, 1, width=32), min_size=n * n, max_size=n * n))
    matrix = np.array(values, dtype=dtype).reshape(n, n)
    return (matrix + matrix.T) / 2 if draw(st.booleans()) else matrix


@settings(max_examples=400)
@given(similarity=similarities(), max_size=st.integers(1, 6))
def test_the_program_is_chromas(similarity: np.ndarray, max_size: int) -> None:
    assert cluster_segments(similarity, max_size) == chroma_segmentation(similarity, max_size)


@pytest.mark.parametrize("seed", range(6))
def test_without_the_matrix_the_runs_are_the_same(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Large documents never build the matrix; on generic vectors the runs are the same.
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(60, 8)) + np.repeat(rng.normal(size=(6, 8)) * 2, 10, axis=0)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    exact = chroma_segmentation(vectors @ vectors.T, 4)
    assert vector_segments(vectors, 4) == exact
    monkeypatch.setattr(module, "EXACT_PIECES", 10)
    assert vector_segments(vectors, 4) == exact
    assert len(exact) > 10  # not one run: the program decided something


# Lines of 3 ROUGE tokens: recursive(tokens=4) makes each line a piece (two would be 6).
CLUSTERED = "cat purr nap\ncat hunt sun\ndog bark run\ndog fetch toy\ncar drive road\ncar honk\n"


def test_cluster_groups_the_pieces_of_the_recursive_chunker() -> None:
    embed = Recording(topics)
    chunker = ClusterChunker(max_tokens=12, piece_tokens=4, embedder=embed)
    pieces = parse_chunker("recursive(tokens=4, overlap=0)").chunk(CLUSTERED)
    chunks = chunker.chunk(CLUSTERED, doc="d")
    assert embed.seen == list(dict.fromkeys(p.text for p in pieces))  # each distinct one once
    vectors = EmbeddingCache(FunctionEmbedder(topics))([p.text for p in pieces])  # the same
    runs = chroma_segmentation(vectors @ vectors.T, 12 // 4)
    assert [(c.start, c.end) for c in chunks] == [(pieces[a].start, pieces[b].end) for a, b in runs]
    # chroma's chunks are the pieces joined by " "; ctxeval's are the document between them.
    assert [squeezed(c.text) for c in chunks] == [
        squeezed(" ".join(p.text for p in pieces[a : b + 1])) for a, b in runs
    ]
    assert all(CLUSTERED[c.start : c.end] == c.text for c in chunks)
    # By hand: one topic a piece, so the similarities are 1 within a topic, 0 across; their
    # mean above the diagonal is 3 / 15, so a pair of one topic scores 2 * 0.8, a run of three
    # pieces across two topics 2 * (0.8 - 0.2 - 0.2): the runs are the topics' pairs.
    assert [c.text for c in chunks] == [
        "cat purr nap\ncat hunt sun",
        "dog bark run\ndog fetch toy",
        "car drive road\ncar honk",
    ]
    assert runs == [(0, 1), (2, 3), (4, 5)]
    assert chunker.chunk("") == []


def test_cluster_pieces_in_llm_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    llama_index_core = pytest.importorskip("llama_index.core")
    shipped = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(shipped))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    embed = Recording(topics)
    chunker = ClusterChunker(max_tokens=10, piece_tokens=5, embedder=embed, tokenizer="cl100k_base")
    chunks = chunker.chunk(CLUSTERED)
    pieces = parse_chunker("recursive(tokens=5, overlap=0, tokenizer='cl100k_base')").chunk(
        CLUSTERED
    )
    assert embed.seen == list(dict.fromkeys(p.text for p in pieces))
    starts, ends = {p.start for p in pieces}, {p.end for p in pieces}
    assert all(c.start in starts and c.end in ends for c in chunks)
    assert chunker.spec == (
        "cluster(max_tokens=10, piece_tokens=5, embedder='recording', tokenizer='cl100k_base')"
    )


# --- specs, errors, the built-in embedder --------------------------------------------------------

WL = "embedder='wordllama'"
SPECS = [
    ("semantic()", f"semantic(percentile=95, buffer=1, {WL})"),
    ("semantic(percentile=90.5, buffer=2)", f"semantic(percentile=90.5, buffer=2, {WL})"),
    ("semantic(standard_deviation=3)", f"semantic(standard_deviation=3, buffer=1, {WL})"),
    (
        "semantic(interquartile=1.5, min_chars=100)",
        f"semantic(interquartile=1.5, buffer=1, {WL}, min_chars=100)",
    ),
    ("semantic(gradient=95, buffer=0)", f"semantic(gradient=95, buffer=0, {WL})"),
    ("semantic(chunks=10)", f"semantic(chunks=10, buffer=1, {WL})"),
    (
        "semantic(max_tokens=300, splitter='newline')",
        f"semantic(percentile=95, buffer=1, {WL}, splitter='newline', max_tokens=300)",
    ),
    ("cluster()", f"cluster(max_tokens=400, piece_tokens=50, {WL})"),
    ("cluster(max_tokens=200)", f"cluster(max_tokens=200, piece_tokens=50, {WL})"),
]


@pytest.mark.parametrize(("spec", "canonical"), SPECS)
def test_specs_round_trip(spec: str, canonical: str) -> None:
    chunker = parse_chunker(spec)
    assert chunker.spec == canonical
    assert parse_chunker(chunker.spec) == chunker
    assert isinstance(chunker, SemanticChunker | ClusterChunker)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("semantic(percentile=95, gradient=90)", "one threshold rule, not percentile and gradient"),
        ("semantic(percentile=120)", r"semantic\(percentile=120\): give a percentile in \[0, 1"),
        ("semantic(standard_deviation='3')", "give a finite number"),
        ("semantic(chunks=0)", "give chunks as a whole number >= 1"),
        ("semantic(buffer=-1)", "give buffer as a whole number >= 0"),
        ("semantic(tokenizer='cl100k_base')", "a tokenizer goes with max_tokens"),
        ("semantic(max_tokens=0)", "give max_tokens as a whole number >= 1"),
        ("semantic(embedder='wordlama')", "did you mean 'wordllama'"),
        ("semantic(percentil=95)", "did you mean 'percentile'"),
        ("semantic(splitter='nope')", "unknown sentence splitter 'nope'"),
        ("semantic(splitter='nope')", r"^semantic\(splitter='nope'\): .*'langchain'"),
        ("semantic(splitter='langchian')", "did you mean 'langchain'"),
        ("cluster(max_tokens=40)", "give max_tokens as a whole number >= 50"),
        ("cluster(piece_tokens=0)", "give piece_tokens as a whole number >= 1"),
        ("cluster(max_tokens=400, tokenizer='cl100k')", "unknown tokenizer 'cl100k'"),
        ("cluster(max_token=400)", "did you mean 'max_tokens'"),
        ("semantics(percentile=95)", "did you mean 'semantic'"),
    ],
)  # fmt: skip
def test_mistakes_are_named(spec: str, message: str) -> None:
    with pytest.raises(CtxevalError, match=message) as raised:
        parse_chunker(spec)
    assert isinstance(raised.value, InvalidArgumentError | SpecError)


def test_wordllama_chunks_the_fixtures_offline_and_deterministically() -> None:
    pytest.importorskip("wordllama")
    corpus = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "fixtures/corpus").iterdir()}
    names = sorted(corpus)[:8]
    for spec in ("semantic(percentile=90)", "cluster(max_tokens=200)"):
        first = [c for n in names for c in parse_chunker(spec).chunk(corpus[n], n)]
        again = [c for n in names for c in parse_chunker(spec).chunk(corpus[n], n)]
        assert first == again
        assert len(first) > len(names)
        for chunk in first:
            assert corpus[chunk.doc][chunk.start : chunk.end] == chunk.text == chunk.text.strip()
        for name in names:  # in document order, without overlap
            spans = [(c.start, c.end) for c in first if c.doc == name]
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


# --- the vectors kept on disk between runs (cache_dir, --cache-dir) ------------------------------


def test_the_vectors_are_kept_between_runs_as_the_retrievers_keep_theirs(tmp_path: Path) -> None:
    from ctxeval.chunking.chunkers import with_cache_dir
    from ctxeval.retrieval.disk_cache import DiskCache

    for make in (
        lambda embed: SemanticChunker(percentile=50, buffer=0, embedder=embed),
        lambda embed: ClusterChunker(max_tokens=12, piece_tokens=4, embedder=embed),
    ):
        plain = make(topics)
        text = STORY if isinstance(plain, SemanticChunker) else CLUSTERED
        folder = tmp_path / plain.name
        first, second = Recording(topics), Recording(topics)
        fresh = with_cache_dir(make(first), folder)
        again = with_cache_dir(make(second), folder)
        assert fresh.spec == plain.spec.replace("topics", "recording")  # not part of the spec
        chunks = fresh.chunk(text, "d")
        assert first.seen  # embedded once, and stored: one checked file a distinct text
        assert len(list(folder.rglob("*.vec"))) == len(set(first.seen))
        assert all(DiskCache(folder, "recording").get(t) is not None for t in first.seen)
        assert again.chunk(text, "d") == chunks  # read back: the same chunks
        assert second.seen == []  # nothing embedded
        assert plain.chunk(text, "d") == chunks  # with the cache or without, the same chunks
        # A damaged file is embedded again and rewritten, never read as a wrong vector.
        damaged = sorted(folder.rglob("*.vec"))[0]
        damaged.write_bytes(damaged.read_bytes()[:-3])
        third = Recording(topics)
        assert with_cache_dir(make(third), folder).chunk(text, "d") == chunks
        assert len(third.seen) == 1
    # A chunker that embeds nothing is returned as it is; a spec takes cache_dir too.
    fixed = parse_chunker("fixed(words=5)")
    assert with_cache_dir(fixed, tmp_path) is fixed
    spec = f"cluster(max_tokens=200, cache_dir={str(tmp_path)!r})"
    assert parse_chunker(spec).spec == f"cluster(max_tokens=200, piece_tokens=50, {WL})"
