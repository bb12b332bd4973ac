"""Threshold 0: an empty, blank or tokenless text never matches, whatever the threshold (the
documented rule), in every built-in strategy (issue 10, item 9)."""

from __future__ import annotations

import pytest

from ctxeval import (
    ExactChunkMatch,
    FuzzyChunkMatch,
    PrecisionRecallF1,
    RetrievalEvaluator,
    RougeChunkMatch,
    RougeSentenceMatch,
)

BLANKS = ["", " ", "\t\n", "...", "—"]  # the last two have no tokens (rouge) or no text (fuzzy)


@pytest.mark.parametrize(
    "strategy",
    [
        RougeChunkMatch(threshold=0),
        RougeChunkMatch(threshold=0, tokenizer="unicode"),
        RougeChunkMatch(threshold=0, scorer="py-rouge"),
        FuzzyChunkMatch(threshold=0),
        FuzzyChunkMatch("ratio", threshold=0, preprocess=False),
        ExactChunkMatch(normalize_whitespace=True),
    ],
    ids=lambda s: s.spec,
)
def test_blank_chunks_never_match(strategy: object) -> None:
    retrieved = [*BLANKS, "zebra"]
    matches = strategy.match(retrieved, ["a b", "c"])  # type: ignore[attr-defined]
    blank_rows = matches.relevant[: len(BLANKS)]
    if isinstance(strategy, FuzzyChunkMatch) and not strategy.options()["preprocess"]:
        # Without preprocessing "..." and "—" are text like any other.
        blank_rows = matches.relevant[:3]
    if "py-rouge" in strategy.spec:  # type: ignore[attr-defined]
        # Its tokens are whitespace-separated: "—" is one ("..." splits into no sentence).
        blank_rows = matches.relevant[:4]
    assert not blank_rows.any()
    # Text with content still matches everything at threshold 0 (recall 0 >= 0).
    if not isinstance(strategy, ExactChunkMatch):
        assert matches.relevant[-1].all()


@pytest.mark.parametrize("strategy", [RougeChunkMatch(threshold=0), FuzzyChunkMatch(threshold=0)])
def test_tokenless_ground_truth_never_matches(strategy: object) -> None:
    matches = strategy.match(["a b", ""], ["...", "a"])  # type: ignore[attr-defined]
    assert matches.relevant.tolist() == [[False, True], [False, False]]


def test_exact_blank_never_matches_blank() -> None:
    assert not ExactChunkMatch().match(["", " "], ["", " "]).relevant.any()


@pytest.mark.parametrize("spec", ["rouge-chunk(threshold=0)", "fuzzy-chunk(threshold=0)"])
def test_threshold_zero_scores_through_metrics_and_evaluator(spec: str) -> None:
    record = {"retrieved_context": ["", "  ", "zzz"], "ground_truth_context": ["x y"]}
    from ctxeval.matching.specs import parse_strategy

    scores = PrecisionRecallF1(parse_strategy(spec))(**record)
    assert scores["context_precision"] == pytest.approx(1 / 3)
    result = RetrievalEvaluator([record], metrics=["context_precision"], matching=spec, workers=1)
    assert result.run().aggregate["context_precision"] == pytest.approx(1 / 3)


def test_sentence_strategy_at_threshold_zero() -> None:
    strategy = RougeSentenceMatch(threshold=0)
    scores = PrecisionRecallF1(strategy)(
        retrieved_context=["", "Cats purr."], ground_truth_context=["Dogs bark."]
    )
    assert scores["context_precision"] == 1.0  # the empty chunk gives no sentence
