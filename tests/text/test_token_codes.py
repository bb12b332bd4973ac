"""rouge_codes: rouge-score's tokens of many texts at once, one character per token.

What must hold, against rouge-score's own tokenizer (no stemming): each text has one character
per token, and across all the texts of one call two characters are equal exactly where the two
tokens are (the same partition of the tokens into equal classes, in the same order).
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import tokenize as rouge_tokenize

from ctxeval.matching.rouge import compiled
from ctxeval.text.sizes import SPACE_CODES, word_counts
from ctxeval.text.token_codes import LOWER_TO_ASCII, MAX_CHARACTERS, rouge_codes


def reference(text: str) -> list[str]:
    return list(rouge_tokenize.tokenize(text, None))


def assert_same_partition(texts: list[str]) -> None:
    codes = rouge_codes(texts)
    assert len(codes) == len(texts)
    tokens = [reference(t) for t in texts]
    assert [len(c) for c in codes] == [len(t) for t in tokens]
    by_token: dict[str, str] = {}
    by_code: dict[str, str] = {}
    for text_tokens, text_codes in zip(tokens, codes, strict=True):
        for token, code in zip(text_tokens, text_codes, strict=True):
            assert by_token.setdefault(token, code) == code, token  # equal tokens, equal codes
            assert by_code.setdefault(code, token) == token, code  # different, different
    # Characters, not surrogates: every code is a character a str may hold and encode.
    "".join(codes).encode("utf-8")


def test_by_hand() -> None:
    codes = rouge_codes(["Paris is the capital of PARIS.", "", "...", "the capital"])
    assert [len(c) for c in codes] == [6, 0, 0, 2]
    paris, is_, the, capital, of, paris_again = codes[0]
    assert paris == paris_again
    assert len({paris, is_, the, capital, of}) == 5
    assert codes[3] == the + capital


# Tokens that agree on their first 8, 9 or 10 characters and differ after: the packed integer
# holds 10 characters, the rest is told apart by the dictionary of long tokens.
EDGES = [
    "abcdefgh",
    "abcdefghi",
    "abcdefghij",  # 10: the longest packed token
    "abcdefghik",
    "abcdefghijk",  # 11: the shortest long token
    "abcdefghijl",
    "abcdefghijkl",
    "ABCDEFGHIJK",  # the same token as "abcdefghijk"
    "0123456789",
    "01234567890",
    "a",
    "aa",
    "0",
    "z9",
    "9z",
    "zzzzzzzzzz",
    "zzzzzzzzzzz",
]


def test_tokens_of_8_to_12_characters() -> None:
    assert_same_partition([" ".join(EDGES), " ".join(reversed(EDGES)), EDGES[4], EDGES[7]])
    codes = rouge_codes([" ".join(EDGES)])[0]
    assert len(set(codes)) == len(EDGES) - 1  # only ABCDEFGHIJK repeats a token


def test_texts_outside_ascii_lower_first() -> None:
    # "\u0130" lowers to "i" and a combining dot, the Kelvin sign to "k", the rest separates.
    texts = ["\u212a \u0130x caf\u00e9", "k i x caf", "na\u00efve \u6771\u4eac", "na ve"]
    assert_same_partition(texts)
    codes = rouge_codes(texts)
    assert codes[0] == codes[1]
    assert codes[2] == codes[3]


def test_characters_of_two_to_four_bytes_and_lone_surrogates_separate() -> None:
    # Each text is encoded to UTF-8 (surrogates passed through): a character beyond ASCII is 2
    # to 4 separator bytes, and the texts after it still start where their tokens do.
    texts = [
        "a\U0001f600b caf\u00e9s \u6771x",
        "\ud800lone\udfff surrogates\ud83d",
        "a b cafs x",
        "lone surrogates",
        "\U0001f600" * 5,
        "abcdefghijk\u00e9abcdefghijk abcdefghijkl",
    ]
    assert_same_partition(texts)
    codes = rouge_codes(texts)
    assert codes[0][:2] == codes[2][:2]
    assert codes[1] == codes[3]
    assert codes[4] == ""
    assert codes[5][0] == codes[5][1] != codes[5][2]


def test_the_characters_lowercased_first_are_the_kernels() -> None:
    # tests/matching/test_compiled.py recomputes the kernel's list from the Unicode tables.
    assert LOWER_TO_ASCII == compiled.LOWER_TO_ASCII
    # Without them, one encode of the joined texts; with them, text by text.
    assert_same_partition(["caf\u00e9 na\u00efve K", "k", "\u6771 x"])
    assert_same_partition(["caf\u00e9 \u212a", "k", "\u0130stanbul i stanbul", "x"])


def test_enough_distinct_tokens_to_pass_the_surrogates() -> None:
    # 60,000 distinct tokens: a table of 2**17 slots, past 0xD800 (the slots there shift).
    texts = [" ".join(f"w{i}" for i in range(start, 60_000, 7)) for start in range(7)]
    texts.append(" ".join(f"W{i}" for i in range(0, 60_000, 5)))
    assert_same_partition(texts)
    assert max(map(ord, "".join(rouge_codes(texts)))) > 0xE000


def test_empty_and_too_long() -> None:
    assert rouge_codes([]) == []
    assert rouge_codes(["", " ", "!?"]) == ["", "", ""]
    assert len(rouge_codes(["a " * (MAX_CHARACTERS // 2)])[0]) == MAX_CHARACTERS // 2
    with pytest.raises(ValueError, match="at most"):
        rouge_codes(["a" * (MAX_CHARACTERS + 1)])


_LETTERS = "abcxyzABCXYZ0189"
token = st.one_of(
    st.text(alphabet=_LETTERS, min_size=1, max_size=4),
    st.text(alphabet=_LETTERS, min_size=8, max_size=12),
    st.text(alphabet="ab", min_size=9, max_size=24),  # long tokens sharing prefixes
    st.sampled_from(EDGES),
)
separator = st.sampled_from([" ", "  ", ", ", ".", "-", "\n", "'", "\u00e9", "\u0130", "\u212a"])
words = st.lists(st.tuples(token, separator), max_size=30).map(
    lambda pairs: "".join(t + s for t, s in pairs)
)
texts = st.one_of(
    words,
    st.text(max_size=40),  # any code point
    st.text(alphabet=" .,;!?-'\"()", max_size=10),  # punctuation only
    st.just(""),
)


@settings(max_examples=300)
@given(st.lists(texts, max_size=12))
def test_same_partition_as_rouge_score(batch: list[str]) -> None:
    assert_same_partition(batch)


def handed_word_counts(batch: list[str]) -> list[int]:
    """The word counts ``rouge_codes`` hands on for ``batch`` (to the word memo)."""
    handed: list[tuple[list[str], list[int]]] = []
    with mock.patch(
        "ctxeval.text.token_codes.remember_word_counts",
        lambda texts, counts: handed.append((list(texts), counts.tolist())),
    ):
        rouge_codes(batch)
    assert len(handed) == 1
    assert handed[0][0] == batch
    return handed[0][1]


def test_word_counts_by_hand() -> None:
    batch = [
        "Paris is\tthe capital.",
        "",
        "  ",
        "a\u00a0b\u3000c\u2014d",
        "\u212a \u0130x",
        "a\ud800 b",
    ]
    assert handed_word_counts(batch) == [4, 0, 0, 3, 2, 2]


# Every space str.split splits on (ASCII and beyond: two and three bytes), characters that share
# their lead bytes, the two lowercased first, a lone surrogate and a character of four bytes.
_SPACED = st.text(
    alphabet=st.sampled_from(
        [
            *"ab1 .",
            *map(chr, SPACE_CODES.tolist()),
            *"\u00c2\u2014\u200b\ud800\U0001f600",
            *LOWER_TO_ASCII,
        ]
    ),
    max_size=20,
)


@given(st.lists(st.one_of(texts, _SPACED), min_size=1, max_size=12))
def test_word_counts_handed_on_equal_str_split(batch: list[str]) -> None:
    expected = [len(text.split()) for text in batch]
    assert handed_word_counts(batch) == expected
    rouge_codes(batch)  # (its counts kept for word_counts)
    assert word_counts(batch).tolist() == expected


def test_lowercasing_first_changes_no_word_count() -> None:
    # Texts holding LOWER_TO_ASCII are lowercased whole before their words are counted: no
    # character's lowercase is empty, nor holds a space unless the character is one.
    for c in map(chr, range(0x110000)):
        lower = c.lower()
        assert lower
        assert all(x.isspace() == c.isspace() for x in lower), hex(ord(c))
