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
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.chunking import compare_chunkers
from ctxeval.chunking.retrieval import as_retriever
from ctxeval.foundation.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    SpecError,
)
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


def test_texts_embedded_one_call_at_a_time_read_back_as_in_one_call() -> None:
    # A run embeds questions one by one: the cache grows in pieces, joined now and then; every
    # read gives the vectors one call over all the texts gives, bit for bit.
    texts = [f"text {chr(97 + i % 26)}{i}" for i in range(150)]
    whole = EmbeddingCache(FunctionEmbedder(letters, "letters"))(texts)
    cache = EmbeddingCache(FunctionEmbedder(letters, "letters"))
    for i, text in enumerate(texts):
        assert np.array_equal(cache([text]), whole[[i]])
        if i % 37 == 0:  # a read across pieces, before and after they are joined
            picked = [texts[j] for j in range(0, i + 1, 3)][::-1]
            assert np.array_equal(cache(picked), whole[list(range(0, i + 1, 3))[::-1]])
    assert np.array_equal(cache(texts), whole)


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


# -- sentence-transformers:FOLDER (the library needs torch, which the test machines lack: a fake
# module of the same shape stands in for it, as ctxeval calls it) --------------------------------


class FakeSentenceTransformers:
    """``sentence_transformers`` as ctxeval uses it: ``SentenceTransformer(folder, **options)``
    and ``encode(texts, **options)``, recording each call; its vectors are ``letters``' times 3
    (not unit length: ctxeval normalises them)."""

    def __init__(self) -> None:
        self.loaded: list[tuple[str, dict]] = []
        self.encoded: list[tuple[list[str], dict]] = []
        fake = self

        class SentenceTransformer:
            def __init__(self, model_name_or_path: str, **options: object) -> None:
                fake.loaded.append((model_name_or_path, options))

            def encode(self, sentences: list[str], **options: object) -> np.ndarray:
                fake.encoded.append((list(sentences), options))
                return letters(sentences).astype(np.float32) * 3

        self.SentenceTransformer = SentenceTransformer


@pytest.fixture
def fake_st(monkeypatch: pytest.MonkeyPatch) -> FakeSentenceTransformers:
    fake = FakeSentenceTransformers()
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = fake.SentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return fake


def test_a_sentence_transformers_model_from_a_local_folder(
    tmp_path: Path, fake_st: FakeSentenceTransformers
) -> None:
    folder = tmp_path / "minilm"
    folder.mkdir()
    spec = f"sentence-transformers:{folder}"
    embedder = as_embedder(spec)
    assert embedder.name == spec  # what the caches are keyed by
    assert fake_st.loaded == []  # loaded when first used
    texts = ["abc", "hhh", "aab", "cab"]
    search = DenseRetriever(spec).index(texts)
    ranking = search("aac", 4)
    # By hand: "aac" is (2, 0, 1) in letters a, b, c; its cosine with "aab" (2, 1, 0) is 4/5,
    # with "abc" and "cab" (1, 1, 1) 3/sqrt(15) (a tie, kept in chunk order), with "hhh" 0. The
    # scores are cosines although the model's vectors are not of unit length.
    assert [position for position, _ in ranking] == [2, 0, 3, 1]
    assert [score for _, score in ranking] == pytest.approx([4 / 5, 3 / 15**0.5, 3 / 15**0.5, 0])
    assert fake_st.loaded == [(str(folder), {"local_files_only": True})]
    options = {"normalize_embeddings": False, "convert_to_numpy": True, "show_progress_bar": False}
    # The distinct chunks in one call (the library batches them), then the question.
    assert fake_st.encoded == [(["abc", "hhh", "aab", "cab"], options), (["aac"], options)]
    assert as_retriever(f"dense(embedder='{spec}')").spec == f"dense(embedder='{spec}')"


def test_a_sentence_transformers_name_that_is_no_folder_is_refused(
    fake_st: FakeSentenceTransformers,
) -> None:
    message = (
        r"'sentence-transformers:sentence-transformers/all-MiniLM-L6-v2': no such folder; ctxeval "
        r"loads models from local folders only, never from a hub \(to have one, save it while "
        r"online: SentenceTransformer\(name\)\.save\(folder\)\)"
    )
    with pytest.raises(InvalidArgumentError, match=message):
        as_embedder("sentence-transformers:sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(InvalidArgumentError, match="no such folder"):
        as_retriever("dense(embedder='sentence-transformers:all-MiniLM-L6-v2')")
    assert fake_st.loaded == []  # refused before the library is asked


def test_sentence_transformers_missing_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    embedder = as_embedder(f"sentence-transformers:{tmp_path}")
    message = (
        "the 'sentence-transformers:' embedder needs sentence-transformers: "
        "pip install sentence-transformers$"
    )
    with pytest.raises(MissingDependencyError, match=message):
        embedder(["a text"])
