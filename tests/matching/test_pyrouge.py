"""py_rouge_l_recall against the ``rouge`` package (pltrdy/rouge), which continuous-eval calls.

Expected values come from the package itself, from a non-recursive reading of it (the package's
own code with only its recursive LCS reconstruction swapped for a loop), or from hand computation
under the package's definition (see the docstring of ``ctxeval.matching.rouge.pyrouge``).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.matching.rouge import pyrouge
from ctxeval.matching.rouge.pyrouge import py_rouge_l_recall, py_rouge_l_recall_matrix

rouge = pytest.importorskip("rouge")
rouge_score = pytest.importorskip("rouge.rouge_score")


def package_recall(retrieved: str, ground_truth: str) -> float | None:
    """What continuous-eval computes, with the package's ValueErrors as None."""
    try:
        scores = rouge.Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)
    except ValueError:
        return None
    recall = scores[0]["rouge-l"]["r"]
    assert isinstance(recall, float)
    return recall


def _iterative_recon_lcs(x: Sequence[str], y: Sequence[str], exclusive: bool = True) -> Any:
    """rouge_score._recon_lcs with its recursive ``_recon`` unrolled into a loop, nothing else."""
    table = rouge_score._lcs(x, y)
    i, j = len(x), len(y)
    recon: list[str] = []
    while i != 0 and j != 0:
        if x[i - 1] == y[j - 1]:
            recon.append(x[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1, j] > table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    recon.reverse()
    return rouge_score.Ngrams(recon, exclusive=exclusive)


def iterative_package_recall(retrieved: str, ground_truth: str) -> float | None:
    with mock.patch.object(rouge_score, "_recon_lcs", _iterative_recon_lcs):
        return package_recall(retrieved, ground_truth)


@contextmanager
def checkpointed_rows() -> Iterator[None]:
    """Force the low-memory path (checkpoint rows, recompute blocks) for every sentence pair."""
    with mock.patch.object(pyrouge, "_FULL_TABLE_BITS", 0):
        yield


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def assert_same(retrieved: str, ground_truth: str, expected: float | None) -> None:
    got = py_rouge_l_recall(retrieved, ground_truth)
    if expected is None:
        assert got is None, (retrieved, ground_truth, got)
    else:
        assert type(got) is float
        assert got == expected, (retrieved, ground_truth, got, expected)


# ---------------------------------------------------------------------------------------------
# Generated texts: small vocabulary so that words repeat, LCSs tie and sentences are empty.

_WORDS = ["a", "b", "c", "A", "B", "a,", ",", "the", "The", "x.y"]
_GLUE = [" ", "  ", "\n", "\t", "\xa0", ".", ". ", "..", " . ", ".\n", " .", "...", " \n "]
texts = st.one_of(
    st.lists(st.sampled_from(_WORDS + _GLUE), max_size=40).map("".join),
    st.lists(st.sampled_from(_WORDS), max_size=25).map(" ".join),
    st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), max_size=5).map(
        ". ".join
    ),
    st.sampled_from(["", " ", "\n", ".", "..", " . ", ". .", "a.", ".a", "a. ", " a"]),
)


@settings(max_examples=1000, deadline=None)
@given(retrieved=texts, ground_truth=texts)
def test_equals_package_on_generated_texts(retrieved: str, ground_truth: str) -> None:
    assert_same(retrieved, ground_truth, package_recall(retrieved, ground_truth))


@settings(max_examples=300, deadline=None)
@given(retrieved=texts, ground_truth=texts)
def test_checkpointed_rows_equal_package(retrieved: str, ground_truth: str) -> None:
    expected = package_recall(retrieved, ground_truth)
    with checkpointed_rows():
        assert_same(retrieved, ground_truth, expected)


# ---------------------------------------------------------------------------------------------
# Hand-computed cases: recall = |union of per-sentence-pair LCS words| / #distinct reference words.

HAND_COMPUTED = [
    # identical one-sentence texts
    ("a b c", "a b c", 1.0),
    # case-sensitive, punctuation stays on the word: only "b" is shared
    ("A b c,", "a b c", 1 / 3),
    # "b a" vs "a b": one LCS of length 1 is reconstructed, and it is ["b"]
    ("b a", "a b", 1 / 2),
    # ...so a second sentence "b" cannot bring "a" in, although "a" is in an LCS of the first
    ("b a. b", "a b", 1 / 2),
    # per-sentence LCS: order across sentences does not matter
    ("b. a", "a b", 1.0),
    # repeated reference words count once: denominator is |{a, b}|
    ("a", "a b a", 1 / 2),
    # the trailing " " after the last dot is a sentence whose one word is ""
    ("The end.", "The end. ", 2 / 3),
    ("The end. ", "The end. ", 1.0),
    ("The end. ", "The end.", 1.0),
    # whitespace-only texts hold the word "" and recall each other fully
    (" ", " ", 1.0),
    ("\n", "  ", 1.0),
    ("x", " ", 0.0),
    (" ", "x", 0.0),
    # empty pieces ("..", leading and trailing dots) are dropped; "a . . b" has a "" sentence
    ("..a..b..", "a b", 1.0),
    ("a . . b", "a b", 1.0),
    ("a b", "a . . b", 2 / 3),
    # any Unicode whitespace separates words
    ("a\xa0b\x1cc", "a b c", 1.0),
    # "3.14" is split at its dot
    ("pi is 3", "pi is 3.14", 3 / 4),
]


@pytest.mark.parametrize(("retrieved", "ground_truth", "expected"), HAND_COMPUTED)
def test_hand_computed(retrieved: str, ground_truth: str, expected: float) -> None:
    assert package_recall(retrieved, ground_truth) == expected  # the definition is the package's
    assert_same(retrieved, ground_truth, expected)


NONE_CASES = [
    ("", "a"),  # ignore_empty drops the pair, then zip(*[]) cannot unpack
    ("a", ""),
    ("", ""),
    ("", " "),
    (".", "a"),  # "Hypothesis is empty."
    ("...", "a b"),
    ("a", "."),  # "Reference is empty."
    (" a b", "...."),
    ("..", ".."),
]


@pytest.mark.parametrize(("retrieved", "ground_truth"), NONE_CASES)
def test_none_exactly_where_package_raises_value_error(retrieved: str, ground_truth: str) -> None:
    with pytest.raises(ValueError, match=r"unpack|is empty"):
        rouge.Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)
    assert py_rouge_l_recall(retrieved, ground_truth) is None


@pytest.mark.parametrize(("retrieved", "ground_truth"), [(" ", "a"), ("a", " "), (". .", "a")])
def test_whitespace_only_is_a_score_not_none(retrieved: str, ground_truth: str) -> None:
    assert_same(retrieved, ground_truth, 0.0)


# ---------------------------------------------------------------------------------------------
# Realistic chunks: prose cut by a sliding word window, so chunks start and end mid-sentence.

PROSE = """\
Retrieval-augmented generation (RAG) pairs a retriever with a language model. The retriever
returns a ranked list of chunks, e.g. passages of 100 to 300 words, and the model answers from
them. If the right chunk is missing, the answer is wrong no matter how good the model is.
Evaluating the retriever therefore matters. A common approach compares each retrieved chunk with
the ground-truth context using ROUGE-L recall, i.e. the share of ground-truth words that appear,
in order, in the chunk. A threshold of 0.7 is typical. Version 3.14 of one tool, for instance,
splits sentences at every dot, so "3.14" becomes two sentences. The Eiffel Tower is 330 metres
tall. It was completed in 1889 for the World's Fair. Gustave Eiffel's company designed and built
it. At first, many artists criticised the tower. Today it is the most visited paid monument in
the world. Paris is the capital of France. Lyon is a major city in France. The Rhône flows
through Lyon. Marseille is the oldest city in France; it was founded by Greek settlers around
600 BC.

Chunking strategies differ: fixed-size windows, sentence-aware splits, and semantic splits.
Each one changes which ground-truth sentences a chunk covers. the the the. The The. THE end."""


def _chunks(text: str, size: int, stride: int) -> list[str]:
    words = text.split(" ")
    return [" ".join(words[s : s + size]) for s in range(0, max(1, len(words) - size + 1), stride)]


REALISTIC_RETRIEVED = [*_chunks(PROSE, 120, 37), *_chunks(PROSE, 40, 23), PROSE]
REALISTIC_GROUND_TRUTH = [
    "Paris is the capital of France.",
    "paris is the capital of france",
    "The Eiffel Tower is 330 metres tall. It was completed in 1889 for the World's Fair.",
    "It was completed in 1889, for the World's Fair. The tower is 330 metres tall.",
    "A threshold of 0.7 is typical.",
    "Evaluating the retriever matters. The retriever returns a ranked list of chunks.",
    "Marseille, the oldest city in France, was founded by Greek settlers around 600 BC.",
    "Lyon is a major city in France. The Rhône flows through Lyon. ",
    "The the the. end.",
    "Retrieval-augmented generation pairs a retriever with a language model",
]


@pytest.mark.parametrize("ground_truth", REALISTIC_GROUND_TRUTH)
def test_equals_package_on_realistic_chunks(ground_truth: str) -> None:
    for retrieved in REALISTIC_RETRIEVED + REALISTIC_GROUND_TRUTH:
        assert_same(retrieved, ground_truth, package_recall(retrieved, ground_truth))
        # chunks as ground truth too: long, multi-sentence references
        assert_same(ground_truth, retrieved, package_recall(ground_truth, retrieved))


def test_realistic_scores_are_not_all_trivial() -> None:
    # Guards the test above against a corpus that only ever scores 0 or 1.
    values = {package_recall(r, g) for r in REALISTIC_RETRIEVED for g in REALISTIC_GROUND_TRUTH}
    assert len({v for v in values if v is not None and 0 < v < 1}) >= 10


def test_checkpointed_rows_on_realistic_chunks() -> None:
    with checkpointed_rows():
        for retrieved in REALISTIC_RETRIEVED:
            for ground_truth in REALISTIC_GROUND_TRUTH:
                assert_same(retrieved, ground_truth, package_recall(retrieved, ground_truth))


# ---------------------------------------------------------------------------------------------
# Long sentences: the package's recursive reconstruction runs out of stack.


def _long_pair(n_words: int, seed: int, keep: float = 0.8) -> tuple[str, str]:
    """A long dot-free reference and a retrieved text derived from it: words dropped (a share
    ``1 - keep``), inserted, case-changed and locally swapped, so that the LCS has ties and the
    recall is strictly between 0 and 1."""
    rng = random.Random(seed)
    vocabulary = [f"w{k}" for k in range(n_words // 3)]
    reference = [rng.choice(vocabulary) for _ in range(n_words)]
    retrieved: list[str] = []
    for k, word in enumerate(reference):
        roll = rng.random()
        if roll >= keep:
            continue
        retrieved.append(word.upper() if roll < 0.05 else word)
        if roll < 0.1:
            retrieved.append(rng.choice(vocabulary))
        if k % 7 == 0 and len(retrieved) >= 2:
            retrieved[-1], retrieved[-2] = retrieved[-2], retrieved[-1]
    return " ".join(retrieved), " ".join(reference)


def test_iterative_reference_equals_package_with_a_raised_recursion_limit() -> None:
    retrieved, ground_truth = _long_pair(1_200, seed=1)
    # Every backtrack step leaves a row or a column of the table, so the recursion is at least
    # as deep as the shorter sentence is long: the default limit of 1,000 does not suffice...
    assert min(len(retrieved.split()), len(ground_truth.split())) > 1_000
    with pytest.raises(RecursionError), recursion_limit(1_000):
        rouge.Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)
    # ...a higher one does.
    with recursion_limit(10_000):
        expected = package_recall(retrieved, ground_truth)
    assert expected is not None
    assert 0.5 < expected < 1.0
    assert iterative_package_recall(retrieved, ground_truth) == expected
    assert_same(retrieved, ground_truth, expected)
    with checkpointed_rows():
        assert_same(retrieved, ground_truth, expected)


def test_long_texts_where_the_package_raises_recursion_error() -> None:
    # A 2,000-word one-sentence reference; a retrieved text of ~1,100 words derived from it, in
    # one sentence, between short sentences that bring it past 2,000 words.
    core, ground_truth = _long_pair(2_000, seed=2, keep=0.5)
    filler = ". ".join(f"Filler sentence number {k}, with w{k} in it" for k in range(100))
    retrieved = f"{filler}. {core}. {filler}."
    assert len(retrieved.split()) >= 2_000
    assert len(ground_truth.split()) == 2_000
    assert min(len(core.split()), len(ground_truth.split())) > 1_000
    with pytest.raises(RecursionError), recursion_limit(1_000):
        rouge.Rouge().get_scores(retrieved, ground_truth, ignore_empty=True)
    expected = iterative_package_recall(retrieved, ground_truth)
    assert expected is not None
    assert 0.5 < expected < 1.0
    assert_same(retrieved, ground_truth, expected)
    with checkpointed_rows():
        assert_same(retrieved, ground_truth, expected)


def test_long_text_with_short_sentences_needs_no_deep_recursion() -> None:
    # Depth depends on the longest sentence pair, not on the length of the text.
    rng = random.Random(3)
    words = [f"v{rng.randrange(2_000)}" for _ in range(1_500)]
    ground_truth = ". ".join(" ".join(words[s : s + 12]) for s in range(0, 1_500, 12))
    retrieved = ". ".join(" ".join(words[s : s + 15]) for s in range(0, 900, 15))
    with recursion_limit(1_000):
        expected = package_recall(retrieved, ground_truth)
    assert expected is not None
    assert 0.5 < expected < 1.0
    assert_same(retrieved, ground_truth, expected)


# ---------------------------------------------------------------------------------------------
# The matrix form.


@settings(max_examples=200, deadline=None)
@given(retrieved=st.lists(texts, max_size=5), ground_truth=st.lists(texts, max_size=5))
def test_matrix_equals_pairwise_function(retrieved: list[str], ground_truth: list[str]) -> None:
    matrix = py_rouge_l_recall_matrix(retrieved, ground_truth)
    flagged = py_rouge_l_recall_matrix(retrieved, ground_truth, unscorable=-1.0)
    assert matrix.shape == (len(retrieved), len(ground_truth))
    assert matrix.dtype == np.float64
    for a, r in enumerate(retrieved):
        for b, g in enumerate(ground_truth):
            expected = package_recall(r, g)
            assert matrix[a, b] == (0.0 if expected is None else expected)
            assert flagged[a, b] == (-1.0 if expected is None else expected)


def test_matrix_on_realistic_chunks_with_duplicates() -> None:
    retrieved = [*REALISTIC_RETRIEVED[:6], REALISTIC_RETRIEVED[2], "", "...", " "]
    ground_truth = [*REALISTIC_GROUND_TRUTH, REALISTIC_GROUND_TRUTH[0], ""]
    matrix = py_rouge_l_recall_matrix(retrieved, ground_truth)
    expected = np.array(
        [[package_recall(r, g) or 0.0 for g in ground_truth] for r in retrieved], dtype=np.float64
    )
    np.testing.assert_array_equal(matrix, expected)


@pytest.mark.parametrize(("n", "m"), [(0, 0), (0, 3), (2, 0)])
def test_matrix_with_no_pairs(n: int, m: int) -> None:
    matrix = py_rouge_l_recall_matrix(["a b"] * n, ["a"] * m)
    assert matrix.shape == (n, m)
    assert matrix.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# continuous-eval's decision.


@pytest.fixture(scope="module")
def continuous_eval_retrieval() -> ModuleType:
    import nltk

    # continuous_eval.metrics.retrieval downloads nltk data at import; make that a no-op.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nltk, "download", lambda *args, **kwargs: False)
        return pytest.importorskip("continuous_eval.metrics.retrieval")


@settings(max_examples=300, deadline=None)
@given(
    retrieved=texts,
    ground_truth=texts,
    threshold=st.sampled_from([0.01, 0.25, 1 / 3, 0.5, 2 / 3, 0.7, 0.75, 0.8, 1.0]),
)
def test_continuous_eval_rouge_chunk_match_decision(
    continuous_eval_retrieval: ModuleType, retrieved: str, ground_truth: str, threshold: float
) -> None:
    strategy = continuous_eval_retrieval.RougeChunkMatch(threshold)
    decision = (py_rouge_l_recall(retrieved, ground_truth) or 0.0) >= threshold
    assert strategy.is_relevant(retrieved, ground_truth) == decision


def test_continuous_eval_scores_realistic_chunks_the_same(
    continuous_eval_retrieval: ModuleType,
) -> None:
    strategy = continuous_eval_retrieval.RougeChunkMatch(0.7)
    decisions = []
    for retrieved in REALISTIC_RETRIEVED:
        for ground_truth in REALISTIC_GROUND_TRUTH:
            decision = (py_rouge_l_recall(retrieved, ground_truth) or 0.0) >= 0.7
            assert strategy.is_relevant(retrieved, ground_truth) == decision
            decisions.append(decision)
    assert any(decisions)
    assert not all(decisions)


def test_continuous_eval_silently_rejects_a_long_identical_chunk(
    continuous_eval_retrieval: ModuleType,
) -> None:
    # The bug ctxeval fixes: the package's RecursionError becomes "not relevant".
    _, text = _long_pair(1_100, seed=4)
    with recursion_limit(1_000):
        assert not continuous_eval_retrieval.RougeChunkMatch(0.7).is_relevant(text, text)
    assert py_rouge_l_recall(text, text) == 1.0


@pytest.mark.parametrize(("retrieved", "ground_truth"), NONE_CASES)
def test_continuous_eval_rejects_none_cases_even_at_threshold_zero(
    continuous_eval_retrieval: ModuleType, retrieved: str, ground_truth: str
) -> None:
    assert not continuous_eval_retrieval.RougeChunkMatch(0.0).is_relevant(retrieved, ground_truth)
    # so a 0.0 stand-in for None would disagree at threshold 0; a negative one does not
    assert py_rouge_l_recall_matrix([retrieved], [ground_truth])[0, 0] >= 0.0
    assert not py_rouge_l_recall_matrix([retrieved], [ground_truth], unscorable=-1.0)[0, 0] >= 0.0
