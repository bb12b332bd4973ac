"""rouge tokens by every path: ``tokenize``, the cheaper ``match_keys`` and the token cache's
characters all equal rouge-score's tokenizer, on arbitrary Unicode text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import tokenize as rouge_tokenize

from ctxeval.matching.tokens import TokenCache
from ctxeval.text.tokenize import RougeTokenizer

# Case mappings that change length or land in ASCII ('İ'.lower() == 'i\u0307', KELVIN SIGN
# lowers to 'k'), 'ß'/'ẞ', digits of other scripts (not [0-9]), marks, odd spaces, punctuation.
CORNERS = "İıKÅſßẞﬁǅΣς٣۵१１²½\u0307\u200b\u00a0\u3000\t\n-_.,'aZ09 "
texts = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=80),
    st.text(alphabet=st.sampled_from(CORNERS), max_size=40),
    st.sampled_from(["", "   ", "...", "Москва 東京", "٣ ١٢", "İstanbul", "STRASSE Straße"]),
)


def reference(text: str) -> list[str]:
    return rouge_tokenize.tokenize(text, None)


@settings(max_examples=400)
@given(text=texts)
def test_match_keys_are_rouge_scores_tokens(text: str) -> None:
    tokenizer = RougeTokenizer()
    expected = reference(text)
    assert tokenizer.tokenize(text) == expected
    keys = tokenizer.match_keys(text)
    assert [k.decode() if isinstance(k, bytes) else k for k in keys] == expected


@settings(max_examples=100)
@given(batch=st.lists(texts, min_size=1, max_size=6))
def test_keys_and_characters_have_rouge_scores_token_identities(batch: list[str]) -> None:
    # Two texts' encodings are equal exactly where rouge-score's tokens are, whichever form
    # (keys on first sight, characters once every retrieved text is a repeat) the cache used.
    cache = TokenCache(RougeTokenizer())
    tokens = [reference(t) for t in batch]
    for _ in range(3):
        (encoded,), _ = cache.encode_record(batch)
        assert [len(e) for e in encoded] == [len(t) for t in tokens]
        pairs = [(a, b) for a in range(len(batch)) for b in range(len(batch))]
        for a, b in pairs:
            for i, x in enumerate(tokens[a]):
                for j, y in enumerate(tokens[b]):
                    assert (encoded[a][i] == encoded[b][j]) == (x == y)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("İstanbul", ["i", "stanbul"]),
        ("Straße", ["stra", "e"]),
        ("300\u212a", ["300k"]),
        ("٣ ١٢ 42", ["42"]),
        ("¡¿…", []),
        ("", []),
    ],
)
def test_corner_cases_by_hand(text: str, expected: list[str]) -> None:
    assert reference(text) == expected
    tokenizer = RougeTokenizer()
    assert tokenizer.tokenize(text) == expected
    assert [k.decode() for k in tokenizer.match_keys(text)] == expected  # type: ignore[union-attr]
