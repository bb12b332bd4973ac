"""Dense retrieval: exact cosine top-k over an embedder's unit vectors, offline.

Top-k is checked against a brute-force reference (every chunk scored one by one, sorted by score
then position); each distinct text is embedded once; an embedder's mistakes are named; the
built-in WordLlama model loads from its wheel with the network disabled (``tests/conftest.py``
blocks every connection but loopback)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.chunking import compare_chunkers
from ctxeval.chunking.retrieval import as_retriever
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, SpecError
from ctxeval.retrieval.dense import DenseRetriever, top_k
from ctxeval.retrieval.embedders import EmbeddingCache, FunctionEmbedder, as_embedder

ROOT = Path(__file__).resolve().parents[2]
LETTERS = "abcdefgh"


def letters(texts: list[str]) -> np.ndarray:
    """A tiny exact embedder: how often each of a few letters occurs."""
    return np.array([[t.count(c) for c in LETTERS] for t in texts], dtype=np.float64)


def brute_force(texts: list[str], question: str, depth: int) -> list[int]:
    """Cosine of the question with each text, one by one; best first, ties by position."""
    q = letters([question])[0]

    def cosine(text: str) -> float:
        v = letters([text])[0]
        norms = math.sqrt(float(v @ v)) * math.sqrt(float(q @ q))
        return float(v @ q) / norms if norms else 0.0

    scores = [cosine(t) for t in texts]
    return sorted(range(len(texts)), key=lambda i: (-scores[i], i))[:depth]


words = st.text(alphabet="abcdefgh ", min_size=0, max_size=12)


@settings(max_examples=200)
@given(texts=st.lists(words, min_size=1, max_size=12), question=words, depth=st.integers(1, 15))
def test_top_k_is_the_brute_force_ranking(texts: list[str], question: str, depth: int) -> None:
    search = DenseRetriever(FunctionEmbedder(letters, "letters")).index(texts)
    got = search(question, depth)
    expected = brute_force(texts, question, depth)
    assert len(got) == len(expected) == min(depth, len(texts))
    # Scores are float32 cosines: equal to the reference's up to rounding, and ranked alike
    # wherever the reference's scores differ by more than that rounding.
    reference = {i: s for i, s in zip(expected, _scores(texts, question, expected), strict=True)}
    for (position, score), want in zip(got, expected, strict=True):
        assert math.isclose(score, reference[want], abs_tol=1e-6)
        if position != want:
            assert math.isclose(
                _scores(texts, question, [position])[0], reference[want], abs_tol=1e-6
            )


def _scores(texts: list[str], question: str, positions: list[int]) -> list[float]:
    q = letters([question])[0]
    out = []
    for i in positions:
        v = letters([texts[i]])[0]
        norms = math.sqrt(float(v @ v)) * math.sqrt(float(q @ q))
        out.append(float(v @ q) / norms if norms else 0.0)
    return out


def test_ties_are_broken_by_chunk_order() -> None:
    texts = ["ab", "cd", "ab", "ab"]
    search = DenseRetriever(FunctionEmbedder(letters, "letters")).index(texts)
    assert [p for p, _ in search("ab", 4)] == [0, 2, 3, 1]
    assert top_k(np.array([0.5, 0.5, 1.0, 0.5]), 3) == [(2, 1.0), (0, 0.5), (1, 0.5)]


def test_each_distinct_text_is_embedded_once() -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return letters(texts)

    retriever = DenseRetriever(embed)
    search = retriever.index(["ab", "cd", "ab"])
    search("ab", 2)
    search("ab", 2)
    retriever.index(["cd", "ef"])  # another chunking: only its new text is embedded
    assert sorted(seen) == ["ab", "cd", "ef"]


def test_vectors_are_unit_length_and_zero_stays_zero() -> None:
    cache = EmbeddingCache(FunctionEmbedder(letters, "letters"))
    vectors = cache(["aab", "", "h"])
    assert np.allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0)
    assert not vectors[1].any()


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (lambda texts: [[1.0]], "returned shape (1, 1) for 2 texts"),
        (lambda texts: "vectors", "returned nothing usable for 2 texts"),
        (
            lambda texts: [[1.0, float("nan")]] * len(texts),
            "returned a vector with NaN or infinity",
        ),
    ],
)
def test_an_embedders_mistake_is_named(returned: object, message: str) -> None:
    retriever = DenseRetriever(FunctionEmbedder(returned, "mine"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=re.escape(f"embedder mine: {message}")):
        retriever.index(["a", "b"])


def test_vectors_of_another_length_are_refused() -> None:
    widths = iter([2, 3])
    cache = EmbeddingCache(FunctionEmbedder(lambda t: np.ones((len(t), next(widths))), "drift"))
    cache(["a"])
    with pytest.raises(InvalidArgumentError, match="vectors of 3 dimensions after vectors of 2"):
        cache(["b"])


def test_specs_and_objects() -> None:
    assert as_retriever("dense").spec == "dense(embedder='wordllama')"
    assert as_retriever("dense(embedder='wordllama')").spec == "dense(embedder='wordllama')"
    with pytest.raises(SpecError, match="did you mean 'wordllama'"):
        as_embedder("wordlama")
    with pytest.raises(SpecError, match="unknown retriever 'dence'; did you mean 'dense'"):
        as_retriever("dence")
    with pytest.raises(InvalidArgumentTypeError, match="embedder: expected 'wordllama'"):
        as_embedder(3)


def test_wordllama_loads_offline_and_ranks_by_meaning() -> None:
    embed = as_embedder("wordllama")
    vectors = np.asarray(embed(["a cat sat on the mat", "stock markets fell"]))
    assert vectors.shape == (2, 256)
    assert np.isfinite(vectors).all()
    search = DenseRetriever("wordllama").index(
        ["The cat sleeps on the sofa.", "Interest rates and bond yields rose.", "Kittens play."]
    )
    assert search("Where does the cat sleep?", 1)[0][0] == 0


def test_the_harness_runs_with_the_dense_retriever() -> None:
    corpus = {
        "pets": "Cats sleep most of the day. Dogs need walks every morning. Fish swim in tanks.",
        "money": "Banks lend money at interest. Markets set the price of shares every day.",
    }
    questions = [
        {"question": "How long do cats sleep?", "excerpts": ["Cats sleep most of the day."]},
        {"question": "Who lends money?", "excerpts": ["Banks lend money at interest."]},
    ]
    result = compare_chunkers(
        corpus,
        questions,
        {"words": "fixed(words=6)", "sentences": "sentences(n=1)"},
        retriever="dense",
        k=[1, 3],
    )
    assert result.retriever == "dense(embedder='wordllama')"
    for run in result.runs.values():
        assert run.result.aggregate["context_recall@3"] > 0


def test_loading_wordllama_leaves_the_root_logger_alone() -> None:
    # wordllama calls logging.basicConfig when imported; its effect is undone, so that other
    # libraries' log lines (bm25s logs at DEBUG) do not reach the user's terminal.
    probe = (
        "import logging\nfrom ctxeval.retrieval.embedders import as_embedder\n"
        "as_embedder('wordllama')(['a cat'])\nprint(len(logging.getLogger().handlers))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "0"
    assert out.stderr == ""


def _tiny_model2vec(folder: Path) -> None:
    """A Model2Vec static model of a few words, saved as Model2Vec saves one."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = ["[UNK]", "[PAD]", "cats", "sleep", "dogs", "bark", "night", "banks", "lend"]
    tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.eye(len(words), dtype=np.float32)  # one dimension a word: cosine = overlap
    StaticModel(vectors=vectors, tokenizer=tokenizer).save_pretrained(str(folder))


def test_a_model2vec_model_from_a_local_folder(tmp_path: Path) -> None:
    _tiny_model2vec(tmp_path / "m")
    search = DenseRetriever(f"model2vec:{tmp_path / 'm'}").index(
        ["cats sleep", "dogs bark night", "banks lend"]
    )
    assert search("when do dogs bark", 1)[0][0] == 1
    assert as_embedder(f"model2vec:{tmp_path / 'm'}").name == f"model2vec:{tmp_path / 'm'}"


def test_a_model2vec_name_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no such folder; ctxeval loads models from"):
        as_embedder("model2vec:minishlab/potion-base-8M")
