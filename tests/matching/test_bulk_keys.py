"""The Python path's bulk keys: a batch's fresh texts tokenised in one vectorised pass
(TokenCache.keyed_records, text.token_codes.rouge_codes) give rouge-score's scores bit for bit,
as the record-by-record keys do.

The bulk pass is taken only for groups of at least a few thousand characters; most tests here
lower that to every record and cut the groups small, so that one batch's records are keyed in
several calls (whose characters never meet within a record).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from ctxeval import RougeChunkMatch
from ctxeval.matching import tokens
from ctxeval.matching.rouge import compiled
from ctxeval.matching.tokens import TokenCache, default_cache
from ctxeval.text.tokenize import RougeTokenizer, get_tokenizer

ROUGE = get_tokenizer("rouge")
SCORER = rouge_scorer.RougeScorer(["rougeL"])


def reference(retrieved: list[str], truth: list[str]) -> list[list[float]]:
    score = SCORER.score
    return [[score(target=g, prediction=r)["rougeL"].recall for g in truth] for r in retrieved]


@pytest.fixture
def small_groups(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", 0)
    monkeypatch.setattr(tokens, "_BULK_CHARS", 40)
    default_cache(ROUGE).clear()
    with compiled.mode("never"):
        yield
    default_cache(ROUGE).clear()


RECORDS = [
    (["the cat sat", "on the mat", ""], ["the mat", "cat"]),
    (["x y z " * 40, "MAT mat"], ["mat", "y " * 70, "..."]),
    (["dog"], ["the cat sat"]),
    ([], ["nothing retrieved", "1990"]),
    (["no ground truth", "\u00e9t\u00e9"], []),
    (["\u212a \u0130x", "k i x"], ["k i x", "\u00e9t\u00e9"]),
    (["internationalisation internationalization", "the cat sat"], ["internationalisation"]),
    (["abcdefghijk abcdefghijl abcdefghij", "on the mat"], ["abcdefghijl abcdefghij", "cat"]),
]


@pytest.mark.usefixtures("small_groups")
@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.7, 1.0])
def test_match_records_gives_rouge_score_and_what_match_gives(threshold: float) -> None:
    strategy = RougeChunkMatch(threshold)
    batch = strategy.match_records(RECORDS)
    default_cache(ROUGE).clear()
    one_by_one = [strategy.match(r, g) for r, g in RECORDS]
    for (retrieved, truth), got, expected in zip(RECORDS, batch, one_by_one, strict=True):
        assert got.scores is not None
        assert got.scores.tolist() == reference(retrieved, truth) or not (retrieved and truth)
        assert got.scores.tobytes() == expected.scores.tobytes()  # type: ignore[union-attr]
        assert got.relevant.tolist() == expected.relevant.tolist()
        assert got.tokenless == expected.tokenless


@pytest.mark.usefixtures("small_groups")
def test_the_bulk_keys_are_used() -> None:
    cache = default_cache(ROUGE)
    keyed = cache.keyed_records(RECORDS)
    # Records are made in groups of about 40 characters: several calls for this batch.
    assert all(k is not None for k in keyed)
    assert [len(k) for k in keyed if k is not None] == [2] * len(RECORDS)
    assert keyed[0] == [[keyed[0][0][0], keyed[0][0][1], ""], [keyed[0][1][0], keyed[0][1][1]]]
    t_cat_sat, _, _ = keyed[0][0]
    assert len(t_cat_sat) == 3
    assert keyed[0][1][1] == t_cat_sat[1]  # "cat" in the same record: the same character


def test_records_bound_for_the_code_path_are_not_keyed_in_bulk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", 0)
    cache = TokenCache(ROUGE)
    retrieved = ["the cat sat on the mat", "a dog"]
    cache.encode_record(retrieved, ["cat"])  # seen once
    cache.encode_record(retrieved, ["mat"])  # seen again: kept
    assert len(cache) == 2
    keyed = cache.keyed_records([(retrieved, ["new truth"]), (["new chunk"], ["cat"])])
    assert keyed[0] is None
    assert keyed[1] is not None


def test_only_rouge_scores_own_tokenizer_is_keyed_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", 0)

    class Mine(RougeTokenizer):
        pass

    for tokenizer in (RougeTokenizer(stem=True), Mine(), get_tokenizer("unicode")):
        assert TokenCache(tokenizer).keyed_records([(["the cat"], ["cat"])]) == [None]
    assert TokenCache(ROUGE).keyed_records([(["the cat"], ["cat"])]) != [None]


def test_small_batches_keep_the_text_by_text_path() -> None:
    cache = TokenCache(ROUGE)
    assert cache.keyed_records([(["the cat sat"], ["cat"])] * 10) == [None] * 10
    long = [(["the cat sat on the mat " * 30] * 10, ["cat sat"])]
    assert cache.keyed_records(long) != [None]


WORDS = ["the", "cat", "Sat", "on", "MAT", "a", "1990", "k\u212a", "caf\u00e9", "\u0130x"]
LONG = ["internationalisation", "internationalization", "abcdefghij", "abcdefghijk", "..."]
words = st.sampled_from([*WORDS, *LONG])
texts = st.one_of(
    st.lists(words, max_size=25).map(" ".join),
    st.text(alphabet="ab cD-\u00e91", max_size=30),
    st.just(""),
)
records = st.lists(
    st.tuples(st.lists(texts, max_size=4), st.lists(texts, max_size=3)), min_size=1, max_size=6
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=records, threshold=st.sampled_from([0.0, 0.7]))
def test_batches_equal_rouge_score(
    small_groups: None, batch: list[tuple[list[str], list[str]]], threshold: float
) -> None:
    default_cache(ROUGE).clear()
    got = RougeChunkMatch(threshold).match_records(batch)
    for (retrieved, truth), matches in zip(batch, got, strict=True):
        assert matches.scores is not None
        assert matches.scores.shape == (len(retrieved), len(truth))
        assert matches.scores.dtype == np.float64
        assert matches.scores.tolist() == reference(retrieved, truth)
    # The same texts again (now seen: some records take the code path) give the same.
    again = RougeChunkMatch(threshold).match_records(batch)
    for first, second in zip(got, again, strict=True):
        assert first.scores.tobytes() == second.scores.tobytes()  # type: ignore[union-attr]
        assert first.relevant.tolist() == second.relevant.tolist()
        assert first.tokenless == second.tokenless


def test_evaluator_rows_are_the_same_with_and_without_bulk_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator

    chunk = "the cat sat on the mat while internationalisation of {} went on"
    records = [
        {
            "id": str(i),
            "retrieved_context": [chunk.format(f"w{i * 7 + j}") for j in range(5)],
            "ground_truth_context": [f"cat sat on the mat w{i * 7 + 2}", "nothing like it"],
        }
        for i in range(40)
    ]
    rows = []
    for smallest in (0, 10**9):  # bulk keys for every group, then for none
        monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", smallest)
        default_cache(ROUGE).clear()
        with compiled.mode("never"):
            result = RetrievalEvaluator(
                records,
                [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())],
                workers=1,
                progress=False,
            ).run(k=[1, 3, None])
        rows.append([dict(row) for row in result.per_query])
    assert rows[0] == rows[1]
    assert any(row["precision@1"] > 0 for row in rows[0])


def _batch(tag: str, n: int = 8) -> list[tuple[list[str], list[str]]]:
    """``n`` records of texts no other batch has (the tag is in every text)."""
    return [
        ([f"{tag} chunk {i} the cat", f"{tag} other {i} mat"], [f"{tag} cat {i}"]) for i in range(n)
    ]


def test_after_batches_of_new_texts_the_bitmap_rests(monkeypatch: pytest.MonkeyPatch) -> None:
    # All-new texts: two batches in a row where nothing came back, then seven batches that
    # neither mark nor look up their texts, then one with the bitmap again.
    monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", 0)
    cache = TokenCache(ROUGE)
    strategy = RougeChunkMatch()
    marked = []
    with compiled.mode("never"):
        for n in range(11):
            records = _batch(f"b{n}")
            keyed = cache.keyed_records(records)
            for (retrieved, truth), keys in zip(records, keyed, strict=True):
                cache.encode_record(retrieved, truth, keyed=keys)
            marked.append(cache._marked)
    per_batch = 8 * 3  # texts marked by a batch that uses the bitmap
    assert marked[:3] == [per_batch, 2 * per_batch, 2 * per_batch]  # rests from the third
    assert marked[8] == 2 * per_batch  # ... to the ninth
    assert marked[9] == 3 * per_batch  # the tenth uses it, and rests again after
    assert marked[10] == 3 * per_batch
    # Resting changes no score: the batches' matches are those of a fresh cache.
    default_cache(ROUGE).clear()
    for n in (0, 5, 9):
        records = _batch(f"b{n}")
        got = strategy.match_records(records)
        for (retrieved, truth), matches in zip(records, got, strict=True):
            assert matches.scores is not None
            assert matches.scores.tolist() == reference(retrieved, truth)


def test_texts_that_come_back_keep_the_bitmap(monkeypatch: pytest.MonkeyPatch) -> None:
    # A corpus: each batch holds texts of the one before. The bitmap never rests, and the
    # texts that come back are kept.
    monkeypatch.setattr(tokens, "_BULK_MIN_CHARS", 0)
    cache = TokenCache(ROUGE)
    with compiled.mode("never"):
        for n in range(6):
            records = _batch(f"b{n}") + _batch(f"b{n - 1}", 2)
            keyed = cache.keyed_records(records)
            for (retrieved, truth), keys in zip(records, keyed, strict=True):
                cache.encode_record(retrieved, truth, keyed=keys)
            assert cache._rest == 0
    assert len(cache) > 0
