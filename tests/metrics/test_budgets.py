"""Context budgets: what a budget takes (hand-computed), parsing and its errors, and every
measure at a budget equal to the same measure at the per-record k the budget stands for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxeval import RetrievalEvaluator
from ctxeval.cutoffs.budgets import ContextSizes, budget_cut
from ctxeval.cutoffs.cutoff import Budget, parse_budget, sort_cutoffs
from ctxeval.foundation.errors import InvalidArgumentError, SpecError
from ctxeval.metrics.id_metrics import IDRankedRetrievalMetrics
from ctxeval.metrics.measures import MEASURES, parse_measure
from ctxeval.metrics.runs import evaluate_run
from ctxeval.metrics.text_metrics import RankedRetrievalMetrics
from ctxeval.text.sizes import SPACE_CODES, WordMemo, remember_word_counts, word_counts

# words: 3, 2, 1 | 6 | none      characters: 8, 5, 2 | 17 | none
TEXTS = [["aa bb cc", "dd ee", "ff"], ["gg hh ii jj kk ll"], []]


def _cut(budget: str, policy: str = "whole", **options: Any) -> tuple[list[int], list[int]]:
    cut = budget_cut(TEXTS, parse_budget(budget), policy=policy, **options)  # type: ignore[arg-type]
    return cut.chunks.tolist(), cut.partial_chars.tolist()


@pytest.mark.parametrize(
    ("budget", "policy", "chunks", "partial"),
    [
        ("5w", "whole", [2, 0, 0], [0, 0, 0]),  # q2's one chunk is bigger than the budget
        ("6w", "whole", [3, 1, 0], [0, 0, 0]),
        ("4w", "whole", [1, 0, 0], [0, 0, 0]),
        ("4w", "truncate", [1, 0, 0], [2, 11, 0]),  # "dd", "gg hh ii jj"
        ("5w", "truncate", [2, 0, 0], [0, 14, 0]),  # nothing crosses in q1; "gg hh ii jj kk"
        ("100w", "truncate", [3, 1, 0], [0, 0, 0]),
        ("10c", "whole", [1, 0, 0], [0, 0, 0]),
        ("10c", "truncate", [1, 0, 0], [2, 10, 0]),  # "dd", "gg hh ii j"
        ("13c", "truncate", [2, 0, 0], [0, 13, 0]),
        ("1c", "truncate", [0, 0, 0], [1, 1, 0]),
    ],
)
def test_budgets_hand_computed(budget: str, policy: str, chunks: list[int], partial: list[int]):
    assert _cut(budget, policy) == (chunks, partial)


def test_token_budgets_count_with_the_chosen_counter() -> None:
    texts = [["Ünïcode wörds, here!", "x"]]
    # rouge drops non-ASCII letters' words into pieces; unicode keeps whole words
    rouge = budget_cut(texts, Budget("t", 3), tokens="rouge")
    unicode = budget_cut(texts, Budget("t", 3), tokens="unicode")
    by_len = budget_cut(texts, Budget("t", 20), tokens=len)  # any callable str -> int
    sizes = ContextSizes(texts, "rouge").cumulative("t")[0].tolist()
    assert sizes == [5, 6]  # n, code, w, rds, here | x
    assert rouge.chunks.tolist() == [0]
    assert unicode.chunks.tolist() == [1]  # ünïcode, wörds, here | x
    assert by_len.chunks.tolist() == [1]
    truncated = budget_cut(texts, Budget("t", 2), policy="truncate", tokens="unicode")
    # the longest prefix of 2 tokens, trailing whitespace dropped
    assert texts[0][0][: truncated.partial_chars[0]] == "Ünïcode wörds,"


def test_non_ascii_characters_are_string_indices() -> None:
    texts = [["héllo wörld", "ça va"]]
    sizes = ContextSizes(texts)
    cut = sizes.cut(Budget("c", 7), "truncate")
    assert (cut.chunks.tolist(), cut.partial_chars.tolist()) == ([0], [7])
    assert sizes.partial_texts(cut) == {0: "héllo w"}
    used = sizes.used(cut)
    assert (used.chunks.tolist(), used.words.tolist(), used.characters.tolist()) == (
        [1],
        [2],
        [7],
    )


def test_context_used_hand_computed() -> None:
    sizes = ContextSizes(TEXTS)
    for cut, expected in [
        (2, ([2, 1, 0], [5, 6, 0], [13, 17, 0])),
        (None, ([3, 1, 0], [6, 6, 0], [15, 17, 0])),
        (sizes.cut(Budget("w", 4), "whole"), ([1, 0, 0], [3, 0, 0], [8, 0, 0])),
        (sizes.cut(Budget("w", 4), "truncate"), ([2, 1, 0], [4, 4, 0], [10, 11, 0])),
    ]:
        used = sizes.used(cut)  # type: ignore[arg-type]
        got = (used.chunks.tolist(), used.words.tolist(), used.characters.tolist())
        assert got == expected, cut


def test_a_budget_is_a_value_with_its_spec() -> None:
    assert str(parse_budget("300w")) == "300w"
    assert parse_budget(" 2000C ") == Budget("c", 2000)
    assert str(parse_measure("recall@300w")) == "recall@300w"
    assert parse_measure("R@512t") == parse_measure("recall@512t")
    assert sort_cutoffs([None, Budget("w", 300), 10, Budget("c", 2000), 5]) == (
        5,
        10,
        Budget("c", 2000),
        Budget("w", 300),
        None,
    )


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (lambda: parse_budget("300x"), ["'300x'", "unknown budget unit 'x'", "300w"]),
        (lambda: parse_budget("-5w"), ["'-5w'", "1 or more words"]),
        (lambda: parse_budget("0c"), ["'0c'", "1 or more characters"]),
        (lambda: parse_measure("recall@300x"), ["'recall@300x'", "300w", "got '300x'"]),
        (lambda: parse_measure("recall@0c"), ["'recall@0c'", "at least 1", "got '0c'"]),
        (
            lambda: RetrievalEvaluator([], ["recall"]).run(k="300x"),
            ["RetrievalEvaluator.run(k='300x')", "unknown budget unit"],
        ),
        (
            lambda: RetrievalEvaluator([], ["recall"]).run(k=[5, "-5w"]),
            ["RetrievalEvaluator.run(k=[5, '-5w']): k[1]: '-5w'", "1 or more words"],
        ),
        (lambda: RankedRetrievalMetrics(k="0c"), ["RankedRetrievalMetrics(k='0c')", "1 or more"]),
        (
            lambda: RetrievalEvaluator([], ["recall"], budget_policy="cut"),
            ["budget_policy", "'cut'", "'whole'", "'truncate'"],
        ),
        (
            lambda: RetrievalEvaluator([], ["recall"]).run(k="5w", budget_policy="all"),
            ["RetrievalEvaluator.run(budget_policy=...)", "'all'"],
        ),
        (
            lambda: RetrievalEvaluator([], ["recall"], token_counter="gpt"),
            ["token_counter", "'gpt'"],
        ),
        (
            lambda: RetrievalEvaluator(
                [{"retrieved_ids": ["a"], "relevant_ids": ["a"]}], ["recall"]
            ).run(k="5w"),
            ["budget 5w needs the chunks' texts"],
        ),
        (
            lambda: evaluate_run({"q": {"d": 1.0}}, {"q": {"d": 1}}, ["recall@5w"]),
            ["evaluate_run(measures=...)", "'recall@5w'", "needs the chunks' texts"],
        ),
        (
            lambda: IDRankedRetrievalMetrics(k="5w"),
            ["IDRankedRetrievalMetrics(k='5w')", "ID-mode metrics score ids"],
        ),
    ],
)
def test_budget_errors_say_what_and_where(call: Any, fragments: list[str]) -> None:
    with pytest.raises((InvalidArgumentError, SpecError)) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


# Every measure of chunks with no required option (spans are measured by offsets: their own tests)
MEASURE_NAMES = [n for n, d in MEASURES.items() if d.family != "span" and not d.required]
RECORDS = [
    {"id": "q1", "retrieved_context": TEXTS[0], "ground_truth_context": ["dd ee", "ff", "zz"]},
    {"id": "q2", "retrieved_context": TEXTS[1], "ground_truth_context": ["gg hh ii jj kk ll"]},
    {"id": "q3", "retrieved_context": TEXTS[2], "ground_truth_context": ["zz"]},
    {"id": "q4", "retrieved_context": ["dd ee", "aa", "ff"], "ground_truth_context": ["ff"]},
]


def _row(records: list[dict[str, Any]], k: Any, **options: Any) -> dict[str, Any]:
    result = RetrievalEvaluator(records, MEASURE_NAMES, workers=1, **options).run(k=k)
    (row,) = result.per_query
    return {key.partition("@")[0]: value for key, value in row.items() if key != "id"}


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_each_measure_at_a_budget_is_the_measure_at_its_per_record_k(implementation: str):
    # 5w takes, by hand: q1 "aa bb cc", "dd ee" (5 words); q2 nothing (its chunk has 6);
    # q3 nothing, and q4 "dd ee", "aa", "ff" (4 words): everything, so the whole list (None)
    per_record_k = {"q1": 2, "q2": 0, "q3": None, "q4": None}
    result = RetrievalEvaluator(
        RECORDS, MEASURE_NAMES, workers=1, implementation=implementation
    ).run(k="5w")
    for row in result.per_query:
        k = per_record_k[row["id"]]
        record = next(r for r in RECORDS if r["id"] == row["id"])
        # k == 0: the same as retrieving nothing
        equivalent = (
            _row([{**record, "retrieved_context": []}], None) if k == 0 else _row([record], k)
        )
        got = {key.partition("@")[0]: value for key, value in row.items() if key != "id"}
        assert got == equivalent, row["id"]


def test_truncate_judges_the_truncated_text() -> None:
    # exact-chunk: the whole chunk "x y" is not the ground truth "x"; its first word is
    record = {"id": "q", "retrieved_context": ["x y", "z"], "ground_truth_context": ["x"]}
    options = {"matching": "exact-chunk", "workers": 1}
    for implementation in ("core", "reference"):
        whole = RetrievalEvaluator([record], ["recall", "precision"], **options).run(k="1w")
        truncate = RetrievalEvaluator(
            [record], ["recall", "precision"], budget_policy="truncate", **options
        ).run(k="1w")
        assert whole.aggregate == {"recall@1w": 0.0, "precision@1w": 0.0}, implementation
        assert truncate.aggregate == {"recall@1w": 1.0, "precision@1w": 1.0}, implementation
        assert whole.summary["context_used"]["1w"] == {
            "chunks": 0.0,
            "words": 0.0,
            "characters": 0.0,
        }
        assert truncate.summary["context_used"]["1w"] == {
            "chunks": 1.0,
            "words": 1.0,
            "characters": 1.0,
        }
        assert truncate.summary["budget_policy"] == "truncate"


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_sentence_units_at_budgets(implementation: str) -> None:
    record = {
        "id": "q",
        "retrieved_context": ["Aa bb. Cc dd.", "Ee ff."],
        "ground_truth_context": ["Cc dd.", "Ee ff."],
    }
    measures = ["context_precision", "context_recall"]
    options = {"matching": "exact-sentence", "workers": 1, "implementation": implementation}
    whole = RetrievalEvaluator([record], measures, **options).run(k=["4w", "5w", 1])
    # 4w and 5w take the first chunk whole (4 words): its 2 sentences, one relevant
    for k in ("4w", "5w"):
        assert whole.aggregate[f"context_precision@{k}"] == 0.5
        assert whole.aggregate[f"context_recall@{k}"] == 0.5
    truncate = RetrievalEvaluator([record], measures, budget_policy="truncate", **options)
    cut = truncate.run(k="5w")
    # 5w under truncate adds "Ee": a third sentence, which matches nothing
    assert cut.aggregate["context_precision@5w"] == 1 / 3
    assert cut.aggregate["context_recall@5w"] == 0.5
    assert cut.summary["context_used"]["5w"] == {"chunks": 2.0, "words": 5.0, "characters": 15.0}


def test_metric_objects_take_budgets() -> None:
    metric = RankedRetrievalMetrics(k="5w")
    assert repr(metric) == "RankedRetrievalMetrics(RougeChunkMatch(threshold=0.7), k='5w')"
    scores = metric(retrieved_context=TEXTS[0], ground_truth_context=["dd ee", "ff"])
    at_two = RankedRetrievalMetrics(k=2)(
        retrieved_context=TEXTS[0], ground_truth_context=["dd ee", "ff"]
    )
    assert scores == at_two
    result = RetrievalEvaluator(RECORDS[:1], [metric], workers=1).run(k=2)
    assert result.aggregate["recall@5w"] == result.aggregate["recall@2"] == 1 / 3


def test_budget_cut_is_vectorised_over_records() -> None:
    texts = [["a b"] * n for n in range(50)]
    cut = budget_cut(texts, Budget("w", 7))
    assert np.array_equal(cut.chunks, np.minimum(np.arange(50), 3))


@given(
    st.lists(
        st.text(
            alphabet=st.sampled_from(
                [
                    *"ab \t\n\r\x0b\x0c\x1c\x1f\x85",
                    # beyond ASCII: spaces of two and three UTF-8 bytes, and characters that
                    # share their lead bytes (U+00C2, U+2014, U+200B) or are lone surrogates
                    *"\u00e9\u00a0\u00c2\u2003\u2014\u200b\u3000\u1680\u2028\u202f\u205f\ud800",
                ]
            ),
            max_size=20,
        ),
        max_size=8,
    )
)
def test_word_counts_of_a_batch_equal_str_split(texts: list[str]) -> None:
    assert word_counts(texts).tolist() == [len(text.split()) for text in texts]


def test_the_space_codes_are_what_str_split_splits_on() -> None:
    assert SPACE_CODES.tolist() == [c for c in range(0x110000) if chr(c).isspace()]
    assert word_counts(["a\ud800 b", "c"]).tolist() == [2, 1]  # lone surrogate: text by text


@given(st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=30), max_size=8))
def test_word_counts_of_ascii_texts_equal_str_split(texts: list[str]) -> None:
    # All of ASCII: the C path (one translate, a count per text) for every text of the batch.
    assert word_counts(texts).tolist() == [len(text.split()) for text in texts]


def test_the_word_memo_rests_between_looks_while_nothing_comes_back() -> None:
    memo = WordMemo()
    memo.store({"a b": 2})
    assert not memo.resting()  # texts came back (or none was looked for yet)
    assert not memo.admits(hits=0, texts=10)  # almost nothing came back: not kept
    # The next six batches are counted without lookups; the eighth in a row looks again, and
    # its counts are kept afresh.
    assert [memo.resting() for _ in range(7)] == [True] * 6 + [False]
    assert memo.admits(hits=0, texts=10)
    assert not memo.resting()
    assert memo.admits(hits=2, texts=10)  # at least one in eight came back: keeps looking
    assert not memo.resting()


def test_word_counts_handed_on_are_taken_for_the_same_text_objects_once() -> None:
    text = "a b c"
    equal = "".join(["a b ", "c"])
    assert equal == text
    assert equal is not text
    remember_word_counts([text], np.array([7]))  # a wrong count, to see where it is taken
    assert word_counts([equal, text]).tolist() == [3, 7]
    assert word_counts([text]).tolist() == [3]  # taken by one call: then counted afresh


def test_the_word_memo_drops_what_is_handed_on_beyond_its_size() -> None:
    memo = WordMemo(max_chars=8)
    memo.hand(["abcde"], [1])
    memo.hand(["fgh"], [1])
    memo.hand(["ij"], [1])  # 10 characters: the earlier ones are dropped
    assert [text for text, _ in memo.take_handed().values()] == ["ij"]
    assert memo.take_handed() == {}
