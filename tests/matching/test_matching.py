"""Strategies, tokenizers and the token cache, with hand-computed expectations."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from rapidfuzz import fuzz

from ctxeval import (
    ExactChunkMatch,
    ExactSentenceMatch,
    FuzzyChunkMatch,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RougeChunkMatch,
    RougeSentenceMatch,
    UnicodeTokenizer,
)
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.matching.rouge import compiled
from ctxeval.matching.tokens import TokenCache, default_cache
from ctxeval.text.tokenize import RougeTokenizer


class TestUnicodeTokenizer:
    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("Москва — столица России.", ["москва", "столица", "россии"]),
            ("Straße STRASSE", ["strasse", "strasse"]),  # case folding
            ("ﬁne ligature", ["fine", "ligature"]),  # NFKC
            ("巴黎是首都", ["巴", "黎", "是", "首", "都"]),
            ("東京タワー", ["東", "京", "タ", "ワ", "ー"]),
            ("서울은 수도", ["서울은", "수도"]),  # Hangul keeps word boundaries
            ("e.g. 3.14 snake_case", ["e", "g", "3", "14", "snake", "case"]),
            ("", []),
            ("... !!!", []),
        ],
    )
    def test_tokens(self, text: str, tokens: list[str]) -> None:
        assert UnicodeTokenizer().tokenize(text) == tokens


class TestTokenCache:
    @pytest.fixture(autouse=True)
    def python_path(self) -> Iterator[None]:
        # The token cache serves the Python path; the compiled kernel (once loaded) bypasses it.
        with compiled.mode("never"):
            yield

    def test_a_text_is_tokenized_at_most_twice(self) -> None:
        calls: list[str] = []

        class Counting:
            spec = "counting"

            def tokenize(self, text: str) -> list[str]:
                calls.append(text)
                return text.split()

        cache = TokenCache(Counting())
        cache.encode_record(["a b", "b c"], ["a b"])  # first sight: keys, "a b" made once
        assert calls == ["a b", "b c"]
        for _ in range(3):  # repeats: kept as characters at the first repeat, then reused
            cache.encode_record(["a b"], ["b c"])
        assert calls == ["a b", "b c", "a b", "b c"]
        assert len(cache) == 2

    def test_kept_texts_are_bounded_by_characters(self) -> None:
        cache = TokenCache(RougeTokenizer(), max_chars=30)
        for _ in range(5):
            (r, g), _ = cache.encode_record(["delta beta", "gamma"], ["beta gamma"])
            assert r[0][1] == g[0][0]  # beta: equal tokens, equal keys or characters
            assert r[1][0] == g[0][1]  # gamma
            assert r[0][0] not in g[0]  # delta
            assert cache._chars <= 30

    def test_texts_without_tokens_count_by_their_size(self) -> None:
        # Russian under the ASCII tokenizer: no tokens, but the kept text still costs memory.
        cache = TokenCache(RougeTokenizer(), max_chars=1_000)
        for _ in range(2):
            for i in range(200):
                cache.encode_record([f"Текст номер {i} " * 10], ["truth"])
        assert cache._chars <= 1_000
        assert len(cache) <= 1_000 // 150

    def test_the_seen_bitmap_is_bounded_and_cleared_when_a_sixteenth_full(self) -> None:
        cache = TokenCache(RougeTokenizer(), seen_bits=64)  # cleared after 4 marks
        for i in range(10):
            cache.encode_record([f"text {i}"], [f"truth {i}"])
            assert len(cache._seen) == 8
            assert cache._marked <= 4
            # texts marked since the last clearing; two of them may share a bit
            assert 1 <= sum(bin(b).count("1") for b in cache._seen) <= cache._marked
        with pytest.raises(InvalidArgumentError, match="power of two"):
            TokenCache(RougeTokenizer(), seen_bits=100)

    def test_repeated_records_are_encoded_as_characters(self) -> None:
        cache = TokenCache(RougeTokenizer())
        (r, g), _ = cache.encode_record(["alpha beta gamma", "delta"], ["beta delta"])
        assert r[0] == [b"alpha", b"beta", b"gamma"]  # first sight: token keys
        (r, g), _ = cache.encode_record(["delta", "alpha beta gamma"], ["gamma alpha", "zeta"])
        # every retrieved text is a repeat: one character per token, for the whole record
        assert [len(c) for c in r] == [1, 3]
        assert [len(c) for c in g] == [2, 1]
        assert r[1][0] == g[0][1]
        assert r[1][2] == g[0][0]
        assert len(set(r[1] + r[0] + g[1])) == 5  # alpha beta gamma delta zeta: distinct

    def test_characters_and_keys_give_the_same_rouge(self) -> None:
        default_cache(RougeTokenizer()).clear()
        strategy = RougeChunkMatch(threshold=0.0)
        chunks = ["The cat sat on the mat.", "A dog; the cat!", "nothing here"]
        truth = ["the cat on a mat", "dog cat"]
        first = strategy.match(chunks, truth).scores
        assert default_cache(RougeTokenizer()).encode_record(chunks, truth)[0][0][0] == "".join(
            default_cache(RougeTokenizer())._codes[chunks[0]]
        )  # the second call used characters
        again = strategy.match(chunks, truth).scores
        assert first is not None
        assert again is not None
        assert first.tolist() == again.tolist()
        assert first[0].tolist() == [4 / 5, 1 / 2]  # LCS "the cat on mat" / 5, "cat" / 2

    def test_vocabulary_overflow_starts_afresh(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import ctxeval.matching.tokens as base

        monkeypatch.setattr(base, "_MAX_CODES", 3)
        cache = TokenCache(RougeTokenizer())
        cache.encode_record(["a b c d"], [])
        (r, _), _ = cache.encode_record(["a b c d"], [])  # 4 codes > 3: the cache restarts
        assert r == [[b"a", b"b", b"c", b"d"]]  # and this record is encoded as keys
        assert len(cache) == 0
        assert not cache._vocab
        assert not cache._codes

    def test_converting_stops_when_it_has_not_paid(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # The same all-new texts twice (compare two retrievers over the same chunks): the
        # second pass converts texts only up to the debt bound, then keys the rest, as with
        # no cache; a third pass finds the kept ones, which pays the debt back.
        import ctxeval.matching.tokens as base

        monkeypatch.setattr(base, "_MAX_DEBT", 40)
        cache = TokenCache(RougeTokenizer())
        records = [[f"w{i} x{i} y{i}"] for i in range(50)]  # 3 tokens: 4 units of debt each
        for _ in range(2):
            for texts in records:
                cache.encode_record(texts, [])
        assert len(cache) == 10
        assert cache._debt == 40
        for texts in records[:10]:
            (r, _), _ = cache.encode_record(texts, [])
            assert isinstance(r[0], str)
        assert cache._debt == 0
        (r, _), _ = cache.encode_record(records[20], [])
        assert isinstance(r[0], str)  # paid back: converting again
        assert len(cache) == 11

    def test_a_full_cache_that_has_not_paid_stops_keeping(self) -> None:
        # Texts may use 7/8 of 240 characters: the vocabulary (4 x 16) and 13 texts of 11
        # (7 characters and 4 codes).
        cache = TokenCache(RougeTokenizer(), max_chars=240)
        records = [[" ".join(words)] for words in itertools.permutations("wxyz")]
        for _ in range(2):
            for texts in records:
                cache.encode_record(texts, [])
        assert len(cache) == 13  # full at the 14th, none found again: stop keeping
        assert not cache._admitting
        (r, _), _ = cache.encode_record(records[0], [])
        assert isinstance(r[0], str)  # the kept texts are still served
        (r, _), _ = cache.encode_record(records[20], [])
        assert r[0] == records[20][0].encode().split()  # seen before, no longer converted
        assert len(cache) == 13

    def test_a_full_cache_that_has_paid_starts_afresh(self) -> None:
        cache = TokenCache(RougeTokenizer(), max_chars=240)
        records = [[" ".join(words)] for words in itertools.permutations("wxyz")]
        for _ in range(5):  # 13 texts kept and found again three times: they paid
            for texts in records[:13]:
                cache.encode_record(texts, [])
        assert len(cache) == 13
        assert cache._debt < 0
        cache.encode_record(records[13], [])
        (r, _), _ = cache.encode_record(records[13], [])  # no room: start afresh
        assert r[0] == records[13][0].encode().split()  # this record falls back to keys
        assert len(cache) == 0
        assert cache._admitting

    def test_rouge_match_keys_are_the_tokens(self) -> None:
        tokenizer = RougeTokenizer()
        text = "Héllo, İstanbul! K-café 3.14 ÆON"
        keys = tokenizer.match_keys(text)
        assert [k.decode() for k in keys] == tokenizer.tokenize(text)  # type: ignore[union-attr]

    def test_threads_get_their_own_cache(self) -> None:
        tokenizer = RougeTokenizer()
        seen: list[TokenCache] = []
        thread = threading.Thread(target=lambda: seen.append(default_cache(tokenizer)))
        thread.start()
        thread.join()
        assert seen[0] is not default_cache(tokenizer)
        assert default_cache(tokenizer) is default_cache(tokenizer)


class TestExactMatch:
    def test_matrix(self) -> None:
        m = ExactChunkMatch().match(["a", "b", "a"], ["a", "c"]).relevant
        assert m.tolist() == [[True, False], [False, False], [True, False]]

    def test_normalisation_options(self) -> None:
        retrieved, gt = ["Paris  is\nthe capital."], ["paris is the capital."]
        assert not ExactChunkMatch().match(retrieved, gt).relevant.any()
        assert not ExactChunkMatch(ignore_case=True).match(retrieved, gt).relevant.any()
        both = ExactChunkMatch(ignore_case=True, normalize_whitespace=True)
        assert both.match(retrieved, gt).relevant.all()

    def test_exact_sentence_units(self) -> None:
        metric = PrecisionRecallF1(ExactSentenceMatch())
        scores = metric(
            retrieved_context=["Paris is the capital. It is large.", "Lyon is a city."],
            ground_truth_context=["It is large. Rome is old."],
        )
        # retrieved sentences: 3, one relevant; ground-truth sentences: 2, one matched
        assert scores["context_precision"] == 1 / 3
        assert scores["context_recall"] == 1 / 2


class TestRougeMatch:
    def test_threshold_is_inclusive(self) -> None:
        # LCS("the cat sat", "the cat ran away") = 2 of 4 ground-truth tokens: recall 0.5
        matches = RougeChunkMatch(0.5).match(["the cat sat"], ["the cat ran away"])
        assert matches.scores is not None
        assert matches.scores[0, 0] == 0.5
        assert matches.relevant[0, 0]
        assert not RougeChunkMatch(0.51).match(["the cat sat"], ["the cat ran away"]).relevant[0, 0]

    def test_long_chunk_is_scored(self) -> None:
        filler = " ".join(f"word{i}" for i in range(5000))
        gt = "the answer is forty two"
        chunk = f"{filler} {gt} {filler}"
        metric = PrecisionRecallF1(RougeChunkMatch())
        assert metric(retrieved_context=[chunk], ground_truth_context=[gt])["context_recall"] == 1
        assert metric(retrieved_context=[chunk], ground_truth_context=[chunk]) == {
            "context_precision": 1.0,
            "context_recall": 1.0,
            "context_f1": 1.0,
        }

    def test_stemming_tokenizer(self) -> None:
        retrieved, gt = ["cats running"], ["cat runs"]
        assert not RougeChunkMatch(1.0).match(retrieved, gt).relevant[0, 0]
        assert RougeChunkMatch(1.0, tokenizer="rouge-stem").match(retrieved, gt).relevant[0, 0]

    def test_sentence_k_counts_chunks(self) -> None:
        metric = PrecisionRecallF1(RougeSentenceMatch(), k=1)
        scores = metric(
            retrieved_context=["Alpha beta gamma. Delta epsilon.", "Zeta eta theta."],
            ground_truth_context=["Zeta eta theta."],
        )
        # Only the first chunk's two sentences are kept; neither matches.
        assert scores == {"context_precision": 0.0, "context_recall": 0.0, "context_f1": 0.0}

    def test_rank_metrics_reject_sentence_units(self) -> None:
        with pytest.raises(ValueError, match="chunk-level matching"):
            RankedRetrievalMetrics(RougeSentenceMatch())


class TestFuzzyMatch:
    def test_scores_are_rapidfuzz_over_100(self) -> None:
        retrieved = ["The quick brown fox jumps over the lazy dog", "something else"]
        gt = ["quick brown fox"]
        matches = FuzzyChunkMatch("partial_ratio", 0.9).match(retrieved, gt)
        assert matches.scores is not None
        expected = [fuzz.partial_ratio(r.lower(), g.lower()) / 100 for r in retrieved for g in gt]
        np.testing.assert_array_equal(matches.scores.ravel(), expected)
        assert matches.relevant[:, 0].tolist() == [True, False]

    def test_threshold_boundary_is_exact(self) -> None:
        # ratio("abcdefghij", "abcdefghiX") = 90.0 exactly: 0.9 must match, 0.91 must not.
        assert fuzz.ratio("abcdefghij", "abcdefghix") == 90.0
        r, g = ["abcdefghij"], ["abcdefghiX"]
        assert FuzzyChunkMatch("ratio", 0.9).match(r, g).relevant[0, 0]
        assert not FuzzyChunkMatch("ratio", 0.91).match(r, g).relevant[0, 0]


def test_vocabulary_counts_against_the_character_budget() -> None:
    # Found in review: ground truth of repeated records added vocabulary entries without bound.
    cache = TokenCache(RougeTokenizer(), max_chars=2_000)
    for i in range(300):
        (r, g), _ = cache.encode_record(["alpha beta gamma"], [f"alpha w{i} x{i} y{i}"])
        assert r[0][0] == g[0][0]  # alpha
        assert cache._chars <= 2_000
    assert len(cache._vocab) * 16 <= 2_000
