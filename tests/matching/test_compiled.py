"""The compiled ROUGE-L kernel (ctxeval.matching.rouge.compiled, lcs_kernel) against the Python
path.

The Python path (tokens, then rapidfuzz) is itself tested against rouge-score bit for bit
(test_reference_rouge.py, which also runs every one of its tests on the compiled kernel); here
the two paths are compared on inputs rouge-score would take too long for (long texts, many
records, every kind of character), and the kernel's switches are checked.
"""

from __future__ import annotations

import importlib
import sys
import threading
import unicodedata
from collections.abc import Sequence
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch
from ctxeval.foundation.errors import (
    EmptyTokensWarning,
    EnvironmentVariableError,
    InvalidArgumentError,
    InvalidRecordError,
)
from ctxeval.matching.rouge import compiled
from ctxeval.matching.rouge.strategies import _recall, rouge_l_recall_matrix
from ctxeval.matching.tokens import default_cache
from ctxeval.text.sizes import SPACE_CODES, word_counts
from ctxeval.text.tokenize import RougeTokenizer, get_tokenizer

ROUGE = get_tokenizer("rouge")


mode = compiled.mode
shared_switch = importlib.import_module("ctxeval.foundation.compiled")


def both_paths(retrieved: list[str], ground_truth: list[str]) -> tuple[object, object]:
    with mode("never"):
        python = _recall(retrieved, ground_truth, ROUGE, with_tokens=True)
    with mode("always"):
        kernel = _recall(retrieved, ground_truth, ROUGE, with_tokens=True)
        assert compiled.status() == "in use"
    return python, kernel


def assert_same(python: tuple, kernel: tuple) -> None:  # type: ignore[type-arg]
    (p_recall, p_tokens, p_tokenless), (k_recall, k_tokens, k_tokenless) = python, kernel
    assert k_recall.dtype == p_recall.dtype == np.float64
    assert k_recall.shape == p_recall.shape
    assert k_recall.tobytes() == p_recall.tobytes()  # bit for bit
    assert k_tokens.tolist() == p_tokens.tolist()
    assert k_tokenless == p_tokenless


# Letters, digits, separators, the characters whose lowercase lands in ASCII, other scripts,
# combining marks, astral characters and a lone surrogate.
ALPHABET = (
    "abcXYZ019 .,-'\t\n\u0130\u212a\u0131\u00e9\u00c9\u03a3\u043c\u6771\u0307\U0001f600\ud800"
)
words = st.lists(st.sampled_from(["the", "cat", "Sat", "on", "MAT", "a", "1990", "k\u212a"]))
texts = st.one_of(
    st.text(alphabet=ALPHABET, max_size=80),
    st.text(max_size=40),  # any code point
    words.map(" ".join),
    st.lists(st.sampled_from(["w1", "w2", "W3", "w4"]), min_size=60, max_size=200).map(" ".join),
)


@settings(max_examples=300)
@given(
    retrieved=st.lists(texts, min_size=1, max_size=5), truth=st.lists(texts, min_size=1, max_size=4)
)
def test_kernel_equals_python_path(retrieved: list[str], truth: list[str]) -> None:
    assert_same(*both_paths(retrieved, truth))


def test_long_texts_take_several_words_of_bits() -> None:
    # Ground truths of 64, 65, 130 and 1,000 tokens: the bit vectors carry across 64-bit words.
    vocabulary = [f"t{i % 37}" for i in range(3000)]
    truth = [" ".join(vocabulary[s : s + n]) for s, n in ((0, 64), (5, 65), (11, 130), (7, 1000))]
    retrieved = [" ".join(vocabulary), " ".join(reversed(vocabulary)), " ".join(vocabulary[::3])]
    python, kernel = both_paths(retrieved, truth)
    assert_same(python, kernel)
    assert kernel[0][0].tolist() == [1.0, 1.0, 1.0, 1.0]  # each truth is a window of the text


RECORDS = [
    (["the cat sat", "on the mat", ""], ["the mat", "cat"]),
    (["x y z " * 40, "MAT mat"], ["mat", "y " * 70, "..."]),
    (["dog"], ["the cat sat"]),
    ([], ["nothing retrieved", "1990"]),
    (["no ground truth", "\u00e9t\u00e9"], []),
    (["\u212a \u0130x", "k i x"], ["k i x", "\u00e9t\u00e9"]),
    (["\u212a\u212a\u0130\u0130 caf\u00e9 na\u00efve", "kk i i caf na ve"], ["kki", "i i caf"]),
]


def test_one_call_for_many_records_equals_one_call_each() -> None:
    # The kernel reuses its table across records: nothing of one record may leak into the next.
    with mode("always"):
        found = compiled.rouge_recall_records(RECORDS)
    assert found is not None
    recall, counts, tokenless, blocks = found
    text = 0
    for (r, g), block, without in zip(RECORDS, blocks, tokenless, strict=True):
        n, m = len(r), len(g)
        with mode("never"):
            expected, has_tokens, _ = _recall(r, g, ROUGE, with_tokens=True)
        assert recall[block : block + n * m].reshape(n, m).tobytes() == expected.tobytes()
        assert (counts[text : text + n + m] > 0).tolist() == has_tokens.tolist()  # type: ignore[union-attr]
        assert without == (counts[text : text + n + m] == 0).sum()
        text += n + m
    # By hand: "\u0130x" lowers to "i", a combining dot (a separator) and "x"; "\u00e9t\u00e9"
    # is one token, "t"; "\u212a\u212a\u0130\u0130 caf\u00e9 na\u00efve" is "kki i caf na ve".
    assert counts.tolist() == [
        3,
        3,
        0,
        2,
        1,
        120,
        2,
        1,
        70,
        0,
        1,
        3,
        2,
        1,
        3,
        1,
        3,
        3,
        3,
        1,
        5,
        6,
        1,
        3,
    ]
    assert tokenless.tolist() == [1, 1, 0, 0, 0, 0, 0]  # texts without a token: "", "..."


def kernel_word_counts(records: list[tuple[list[str], list[str]]]) -> tuple[list[str], list[int]]:
    """The texts and word counts the kernel hands on for ``records`` (to the word memo)."""
    handed: list[tuple[list[str], list[int]]] = []
    with (
        mode("always"),
        mock.patch.object(
            compiled,
            "remember_word_counts",
            lambda texts, counts: handed.append((list(texts), counts.tolist())),
        ),
    ):
        assert compiled.rouge_recall_records(records) is not None
    assert len(handed) == 1
    return handed[0]


def test_the_kernel_hands_on_the_retrieved_texts_word_counts() -> None:
    texts, counts = kernel_word_counts(RECORDS)
    assert texts == [t for retrieved, _ in RECORDS for t in retrieved]  # not the ground truths
    assert all(a is b for a, b in zip(texts, [t for r, _ in RECORDS for t in r], strict=True))
    # By hand: "x y z " * 40 is 120 words, "" none, "kk i i caf na ve" six.
    assert counts == [3, 3, 0, 120, 2, 1, 3, 1, 2, 3, 3, 6]
    # A space beyond ASCII splits words (it is a separator "?" for the tokens, a space here);
    # other characters beyond ASCII do not, and ASCII's control separators do.
    spaced = [
        "a\u00a0b\u3000c\u2014d",
        "x\x1cy\x85z",
        "\u0130\u0130 \u212a",
        "\u00a0 ",
        "a\rb\x0bc\x0cd\x1ce\x1ff\tg\nh\x1di\x1ej k",  # ASCII only: its fast path
        "\x00a\x7fb\x08",  # control characters that are not spaces
    ]
    assert kernel_word_counts([(spaced, ["b"])]) == (spaced, [3, 3, 2, 0, 11, 1])


# Every space str.split knows, characters whose UTF-8 bytes are close to a space's (U+0084,
# U+00A1, U+1681, U+2010, U+2027, U+202A, U+2060, U+3001), and the rest of ALPHABET.
SPACES = "".join(map(chr, SPACE_CODES.tolist()))
NEAR_SPACES = "\u0084\u00a1\u1681\u2010\u2027\u202a\u2060\u3001"
spaced = st.text(alphabet=ALPHABET + SPACES + NEAR_SPACES, max_size=30)


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.lists(texts | spaced, max_size=4), st.lists(texts, max_size=3)), max_size=4
    )
)
def test_the_kernels_word_counts_are_str_split_s(
    records: list[tuple[list[str], list[str]]],
) -> None:
    shown, counts = kernel_word_counts(records)
    assert counts == [len(t.split()) for t in shown]
    # and word_counts takes them for these very texts
    with mode("always"):
        compiled.rouge_recall_records(records)
    others = [(" " + t)[1:] for t in shown]  # equal texts, other objects: counted afresh
    assert word_counts(shown).tolist() == counts == word_counts(others).tolist()


@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.7, 1.0])
def test_match_records_gives_what_match_gives(threshold: float) -> None:
    strategy = RougeChunkMatch(threshold)
    for value in ("never", "always"):
        with mode(value):
            batch = strategy.match_records(RECORDS)
        with mode("never"):
            one_by_one = [strategy.match(r, g) for r, g in RECORDS]
        for got, expected in zip(batch, one_by_one, strict=True):
            assert got.relevant.dtype == expected.relevant.dtype == np.bool_
            assert got.relevant.tolist() == expected.relevant.tolist()
            assert got.scores.tobytes() == expected.scores.tobytes()  # type: ignore[union-attr]
            assert got.tokenless == expected.tokenless


@pytest.mark.parametrize("threshold", [0.0, 0.7])
def test_flat_matches_hold_what_match_gives_also_for_records_the_kernel_declines(
    threshold: float,
) -> None:
    # A ground truth too large for the kernel's masks (scored on the Python path, into the flat
    # arrays), texts without a token (listed; at threshold 0 they match nothing) and blank texts.
    big = " ".join(f"w{i % 4000}" for i in range(70_000))
    records = [*RECORDS, (["w1 w2 w3", big[:5000], "..."], [big, "w1 w2"]), (["", " "], ["a"])]
    strategy = RougeChunkMatch(threshold)
    with mode("always"):
        flat = strategy.match_records_flat(records)
    assert flat is not None
    assert flat.relevant.dtype == np.bool_
    assert flat.scores.dtype == np.float64
    with mode("never"):
        one_by_one = [strategy.match(r, g) for r, g in records]
        assert strategy.match_records_flat(records) is None  # the kernel is not in use
    for k, ((r, g), expected) in enumerate(zip(records, one_by_one, strict=True)):
        got = flat.matches(k, len(r), len(g))
        assert got.relevant.tolist() == expected.relevant.tolist()
        assert got.scores.tobytes() == expected.scores.tobytes()  # type: ignore[union-attr]
        assert got.tokenless == expected.tokenless == flat.tokenless.get(k, ())
    assert set(flat.tokenless) == {k for k, m in enumerate(one_by_one) if m.tokenless}


def test_lower_to_ascii_lists_every_such_character() -> None:
    # The kernel reads text without lowercasing it: only these characters' lowercase holds an
    # ASCII letter or digit (the running Python's Unicode tables decide).
    found = tuple(
        chr(c)
        for c in range(0x80, 0x110000)
        if not 0xD800 <= c < 0xE000 and any(ch.isascii() and ch.isalnum() for ch in chr(c).lower())
    )
    assert found == compiled.LOWER_TO_ASCII, unicodedata.unidata_version


def test_evaluator_rows_are_the_same_on_both_paths() -> None:
    records = [
        {
            "retrieved_context": [f"Chunk {i} about the cat on the mat", "Other text", "the mat"],
            "ground_truth_context": [f"the cat {i % 3} on the mat", "Unrelated words here"],
        }
        for i in range(40)
    ]
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    results = {}
    for value in ("never", "always"):
        with mode(value):
            results[value] = RetrievalEvaluator(records, metrics, workers=1).run(k=[1, 2, None])
            assert (compiled.status() == "in use") == (value == "always")
    assert results["always"].per_query == results["never"].per_query
    assert results["always"].aggregate == results["never"].aggregate
    assert results["always"].aggregate["context_recall"] > 0  # something matched


def rejecting(retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
    """A strategy that finds record data it cannot judge: a ground truth "reject"."""
    if "reject" in ground_truth:
        raise InvalidRecordError("holds 'reject'", field="ground_truth_context")
    return np.array([[g in r for g in ground_truth] for r in retrieved], dtype=bool).reshape(
        len(retrieved), len(ground_truth)
    )


@pytest.mark.parametrize("threshold", [0.0, 0.7])
@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_evaluator_rows_with_bad_records_and_tokenless_texts_on_both_paths(
    threshold: float, implementation: str
) -> None:
    # The kernel's flat matches, with records a later pass rejects among them (skipped: the
    # others are taken from the flat arrays), texts without a token (counted per record) and
    # graded ground truth.
    records: list[dict[str, object]] = [
        {
            "id": f"q{i}",
            "retrieved_context": [f"the cat {i} sat", "...", "\u6771\u4eac", "on the mat"][
                : 1 + i % 4
            ],
            "ground_truth_context": [
                {"text": f"the cat {i % 3}", "grade": 1 + i % 2},
                "reject" if i % 5 == 3 else "the mat",
            ],
        }
        for i in range(30)
    ]
    metrics = [PrecisionRecallF1(RougeChunkMatch(threshold)), RankedRetrievalMetrics(rejecting)]
    results = {}
    for value in ("never", "always"):
        with mode(value):
            evaluator = RetrievalEvaluator(
                records, metrics, workers=1, on_error="skip", implementation=implementation
            )
            with pytest.warns(
                EmptyTokensWarning, match=r"in 11 record\(s\) \(the first: 'q2', 'q6', 'q7'\)"
            ):
                results[value] = evaluator.run(k=[1, 2, None])
    assert results["always"].per_query == results["never"].per_query
    assert results["always"].skipped == results["never"].skipped
    assert [s["id"] for s in results["always"].skipped] == [f"q{i}" for i in range(3, 30, 5)]
    # "\u6771\u4eac" has no token ("..." is no word): in the 11 records kept that retrieve it
    summaries = [results[value].summary for value in ("never", "always")]
    assert summaries[0]["records_with_tokenless_texts"] == 11
    assert summaries[1]["records_with_tokenless_texts"] == 11
    # q2, q6, q7, ... retrieve it (1 + i % 4 >= 3), q3 and q8 skipped: the first three named.
    for summary in summaries:
        assert summary["first_records_with_tokenless_texts"] == ["q2", "q6", "q7"]


@pytest.mark.parametrize("threshold", [0.0, 0.7])
def test_threshold_zero_blank_texts_on_both_paths(threshold: float) -> None:
    retrieved = ["", " ", "...", "\u6771\u4eac", "zebra"]
    matches = {}
    for value in ("never", "always"):
        with mode(value):
            matches[value] = RougeChunkMatch(threshold).match(retrieved, ["a b", "c", "\u2014"])
    assert matches["always"].relevant.tolist() == matches["never"].relevant.tolist()
    assert matches["always"].tokenless == matches["never"].tokenless == ("\u6771\u4eac",)
    expected = [[False] * 3] * 4 + [[threshold == 0, threshold == 0, False]]
    assert matches["always"].relevant.tolist() == expected


# --------------------------------------------------------------------------------------------
# When the kernel is used


@pytest.fixture
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The kernel not loaded yet and CTXEVAL_COMPILED not read yet (the switch is shared by
    every compiled kernel: ctxeval.foundation.compiled)."""
    state: dict[str, object] = {"kernel": None, "why": "not loaded yet"}
    monkeypatch.setattr(compiled, "_state", state)
    monkeypatch.setattr(shared_switch, "_state", {"mode": None})
    return state


def test_auto_loads_once_enough_text_was_tokenised_in_python(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = default_cache(ROUGE)
    monkeypatch.setattr(cache, "keyed_chars", 0)
    monkeypatch.setattr(compiled, "AUTO_AFTER_CHARACTERS", 25)
    strategy = RougeChunkMatch()
    with mode("auto"):
        strategy.match(["the cat sat", "a dog"], ["the cat"])  # 23 characters, keyed
        assert cache.keyed_chars == 23
        assert compiled.status() == (
            "not loaded yet: loads once 25 characters have been tokenised in Python (23 so far; "
            "CTXEVAL_COMPILED=always loads it at once)"
        )
        cache.clear()  # counts the process's work: never reset
        strategy.match(["one"], ["two"])
        assert cache.keyed_chars == 29
        assert compiled.rouge_recall(["a b"], ["b"]) is not None
        assert compiled.status() == "in use"
    with mode("never"):
        assert compiled.rouge_recall(["a b"], ["b"]) is None
        assert compiled.status() == (
            "not used: the mode is 'never' (CTXEVAL_COMPILED or compiled.mode)"
        )


def test_texts_kept_by_the_cache_do_not_count(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chunks of a fixed corpus come back: once kept as characters, they cost little in Python
    # and the kernel would save little on them.
    cache = default_cache(ROUGE)
    cache.clear()
    monkeypatch.setattr(cache, "keyed_chars", 0)
    record = (["the cat sat on the mat", "a dog"], ["the cat"])
    with mode("auto"):
        for _ in range(5):
            RougeChunkMatch().match(*record)
    assert len(cache) == 3  # kept as characters from the second time on
    assert cache.keyed_chars == 34  # tokenised afresh the first time only


def test_without_numba_the_python_path_is_used(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxeval.matching.rouge

    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    monkeypatch.delitem(sys.modules, "ctxeval.matching.rouge.lcs_kernel", raising=False)
    monkeypatch.delattr(ctxeval.matching.rouge, "lcs_kernel", raising=False)
    with mode("always"):
        assert compiled.rouge_recall(["a b"], ["b"]) is None
        assert compiled.status().startswith("not used: numba is not installed")
        assert compiled.status().endswith("pip install 'ctxeval[fast]'")
        scores = PrecisionRecallF1(RougeChunkMatch())(
            retrieved_context=["the cat sat"], ground_truth_context=["the cat"]
        )
    assert scores["context_recall"] == 1.0


def test_a_kernel_that_fails_its_self_check_is_not_used(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxeval.matching.rouge import lcs_kernel

    monkeypatch.setattr(lcs_kernel, "lcs_records", lambda *args: 0)  # fills nothing
    with mode("always"):
        assert compiled.rouge_recall(["a b"], ["b"]) is None
        assert compiled.status().startswith(
            "not used: the compiled kernel could not be loaded: RuntimeError: its self-check failed"
        )


def test_an_unknown_mode_is_a_clear_error(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_COMPILED", "Fast")
    with pytest.raises(EnvironmentVariableError) as error:
        compiled.rouge_recall(["a"], ["a"])  # read with the first record
    assert str(error.value) == (
        "environment variable CTXEVAL_COMPILED='Fast' (the compiled kernels): use 'auto' "
        "(the default), 'always' or 'never'"
    )
    # In a run, it is about the process, not about the first record.
    with pytest.raises(EnvironmentVariableError) as error:
        PrecisionRecallF1(RougeChunkMatch())(retrieved_context=["a"], ground_truth_context=["a"])
    assert str(error.value).startswith("environment variable CTXEVAL_COMPILED='Fast'")
    evaluator = RetrievalEvaluator(
        [{"id": "q1", "retrieved_context": ["a"], "ground_truth_context": ["a"]}], workers=1
    )
    with pytest.raises(EnvironmentVariableError) as error:
        evaluator.run()
    assert str(error.value).startswith("environment variable CTXEVAL_COMPILED='Fast'")


def test_case_and_spaces_do_not_matter(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_COMPILED", " Never ")
    assert compiled.read_environment() == "never"
    monkeypatch.setenv("CTXEVAL_COMPILED", "")
    assert compiled.read_environment() == "auto"  # empty is the default


def test_an_unknown_mode_in_python_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError) as error, mode("fast"):  # type: ignore[arg-type]
        pass
    assert str(error.value) == "compiled.mode('fast'): use 'auto', 'always' or 'never'"


def test_the_environment_is_read_once(
    fresh_state: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_COMPILED", "never")
    assert compiled.rouge_recall(["a"], ["a"]) is None
    monkeypatch.setenv("CTXEVAL_COMPILED", "always")
    assert compiled.rouge_recall(["a"], ["a"]) is None  # not read again
    assert compiled.read_environment() == "always"
    assert compiled.rouge_recall(["a"], ["a"]) is not None


def test_a_record_too_large_for_the_masks_takes_the_python_path() -> None:
    # 4,000 distinct tokens x 1,094 mask words of a 70,000-token ground truth: past the kernel's
    # 4M-word limit (MAX_MASK_WORDS), so the kernel declines and the Python path scores it.
    truth = " ".join(f"w{i % 4000}" for i in range(70_000))
    retrieved = ["w1 w2 w3", truth[:5000], "nothing here"]
    with mode("always"):
        assert compiled.rouge_recall(retrieved, [truth]) is None
        assert compiled.rouge_recall(retrieved, ["w1 w2"]) is not None  # the next record: kernel
    python, kernel = both_paths(retrieved, [truth, "w1 w2"])
    assert_same(python, kernel)


def test_a_subclass_of_the_rouge_tokenizer_takes_the_python_path() -> None:
    # Found in review: RougeTokenizer's equality admits subclasses, which may tokenise otherwise.
    class Whitespace(RougeTokenizer):
        def match_keys(self, text: str) -> list[str]:
            return text.split()

    with mode("always"):
        recall, _ = rouge_l_recall_matrix(["well known"], ["known-well"], Whitespace())
    assert recall.tolist() == [[0.0]]  # "known-well" is one token here; rouge's would be 0.5


def test_the_mode_is_per_thread() -> None:
    seen: list[str] = []

    def other() -> None:
        with mode("never"):
            seen.append(compiled.status())

    with mode("always"):
        compiled.rouge_recall(["a"], ["a"])
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert compiled.status() == "in use"  # the other thread's block did not change this one
    assert seen == ["not used: the mode is 'never' (CTXEVAL_COMPILED or compiled.mode)"]
