"""Strategies, metrics and measures are values: they compare, hash, print, parse and pickle.

Also: the spellings of a measure that name the same thing, and custom strategies (a function,
a class following the protocol, PairwiseMatch) giving the same numbers as the built-in they
imitate.
"""

from __future__ import annotations

import math
import operator
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from rouge_score import rouge_scorer

import ctxeval
from ctxeval import (
    ExactChunkMatch,
    ExactSentenceMatch,
    FuzzyChunkMatch,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    Matches,
    MatchingStrategy,
    Measure,
    PairwiseMatch,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RougeChunkMatch,
    RougeSentenceMatch,
    RougeTokenizer,
    UnicodeTokenizer,
    evaluate_run,
    parse_measure,
    parse_strategy,
)

# ---------------------------------------------------------------------------------------------
# Strategies

BUILTIN_STRATEGIES = [
    pytest.param(ExactChunkMatch(), id="exact-chunk"),
    pytest.param(ExactChunkMatch(ignore_case=True), id="exact-chunk-ignore-case"),
    pytest.param(
        ExactChunkMatch(ignore_case=True, normalize_whitespace=True), id="exact-chunk-both"
    ),
    pytest.param(ExactSentenceMatch(), id="exact-sentence"),
    pytest.param(ExactSentenceMatch(splitter="newline"), id="exact-sentence-newline"),
    pytest.param(ExactSentenceMatch(splitter="nupunkt"), id="exact-sentence-nupunkt"),
    pytest.param(
        ExactSentenceMatch(splitter="sentencex(language='de')", normalize_whitespace=True),
        id="exact-sentence-sentencex-de",
    ),
    pytest.param(RougeChunkMatch(), id="rouge-chunk"),
    pytest.param(RougeChunkMatch(0.5), id="rouge-chunk-0.5"),
    pytest.param(RougeChunkMatch(1), id="rouge-chunk-int-1"),
    pytest.param(RougeChunkMatch(0.0), id="rouge-chunk-0"),
    pytest.param(RougeChunkMatch(0.7, tokenizer="unicode"), id="rouge-chunk-unicode"),
    pytest.param(RougeChunkMatch(tokenizer="rouge-stem"), id="rouge-chunk-stem"),
    pytest.param(RougeSentenceMatch(), id="rouge-sentence"),
    pytest.param(
        RougeSentenceMatch(0.9, tokenizer="unicode", splitter="newline"),
        id="rouge-sentence-unicode-newline",
    ),
    pytest.param(RougeSentenceMatch(tokenizer="rouge-stem"), id="rouge-sentence-stem"),
    pytest.param(FuzzyChunkMatch(), id="fuzzy-chunk"),
    pytest.param(FuzzyChunkMatch("token_set_ratio", 0.85), id="fuzzy-token-set"),
    pytest.param(FuzzyChunkMatch("WRatio", 0.5, preprocess=False), id="fuzzy-wratio-raw"),
]

PARSEABLE_STRATEGIES = BUILTIN_STRATEGIES
PUBLIC_NAMES = {name: getattr(ctxeval, name) for name in ctxeval.__all__}


@pytest.mark.parametrize("strategy", PARSEABLE_STRATEGIES)
def test_strategy_spec_round_trip(strategy: Any) -> None:
    parsed = parse_strategy(strategy.spec)
    assert parsed == strategy
    assert hash(parsed) == hash(strategy)
    assert parsed.spec == strategy.spec


@pytest.mark.parametrize("strategy", PARSEABLE_STRATEGIES)
def test_strategy_repr_round_trip(strategy: Any) -> None:
    assert eval(repr(strategy), PUBLIC_NAMES) == strategy


@pytest.mark.parametrize("strategy", BUILTIN_STRATEGIES)
def test_strategy_pickle_round_trip(strategy: Any) -> None:
    copy = pickle.loads(pickle.dumps(strategy))
    assert copy == strategy
    assert hash(copy) == hash(strategy)
    assert copy.spec == strategy.spec


def test_canonical_spec_strings() -> None:
    # The examples of design.md and style.md.
    assert RougeChunkMatch().spec == "rouge-chunk(threshold=0.7)"
    # Non-canonical spellings parse to the canonical value.
    parsed = parse_strategy("Rouge_Chunk( tokenizer='unicode' , threshold=0.50 )")
    assert parsed == RougeChunkMatch(0.5, tokenizer="unicode")
    assert parsed.spec == RougeChunkMatch(0.5, tokenizer="unicode").spec


EQUAL_STRATEGIES = [
    pytest.param(
        [
            RougeChunkMatch(),
            RougeChunkMatch(0.7),
            RougeChunkMatch(threshold=0.7, tokenizer="rouge"),
            RougeChunkMatch(tokenizer=RougeTokenizer()),
            parse_strategy("rouge-chunk"),
            parse_strategy("rouge-chunk(threshold=0.7)"),
        ],
        id="rouge-chunk-defaults",
    ),
    pytest.param(
        [
            RougeChunkMatch(tokenizer="rouge-stem"),
            RougeChunkMatch(tokenizer=RougeTokenizer(stem=True)),
        ],
        id="rouge-stem",
    ),
    pytest.param(
        [RougeChunkMatch(tokenizer="unicode"), RougeChunkMatch(tokenizer=UnicodeTokenizer())],
        id="unicode-tokenizer",
    ),
    pytest.param([RougeChunkMatch(1), RougeChunkMatch(1.0)], id="int-and-float-threshold"),
    pytest.param(
        [
            RougeSentenceMatch(),
            RougeSentenceMatch(0.8, splitter="default"),
            RougeSentenceMatch(splitter="sentencex"),
            RougeSentenceMatch(splitter="sentencex(language='en')"),
            parse_strategy("rouge-sentence"),
        ],
        id="rouge-sentence-default-splitter",
    ),
    pytest.param(
        [ExactChunkMatch(), ExactChunkMatch(ignore_case=False), parse_strategy("exact_chunk")],
        id="exact-chunk",
    ),
    pytest.param(
        [FuzzyChunkMatch(), FuzzyChunkMatch("partial_ratio", 0.9, preprocess=True)],
        id="fuzzy-defaults",
    ),
    pytest.param(
        [PairwiseMatch(operator.eq), PairwiseMatch(operator.eq)], id="pairwise-same-function"
    ),
]


@pytest.mark.parametrize("values", EQUAL_STRATEGIES)
def test_equal_strategies(values: list[Any]) -> None:
    first = values[0]
    for other in values[1:]:
        assert other == first
        assert hash(other) == hash(first)
    assert len(set(values)) == 1
    assert {first: "value"}[values[-1]] == "value"


DIFFERENT_STRATEGIES = [
    pytest.param(RougeChunkMatch(0.7), RougeChunkMatch(0.8), id="threshold"),
    pytest.param(RougeChunkMatch(0.7), RougeSentenceMatch(0.7), id="chunk-vs-sentence"),
    pytest.param(RougeChunkMatch(), RougeChunkMatch(tokenizer="unicode"), id="tokenizer"),
    pytest.param(RougeChunkMatch(), RougeChunkMatch(tokenizer="rouge-stem"), id="stemming"),
    pytest.param(ExactChunkMatch(), ExactChunkMatch(ignore_case=True), id="ignore-case"),
    pytest.param(
        ExactChunkMatch(), ExactChunkMatch(normalize_whitespace=True), id="normalize-whitespace"
    ),
    pytest.param(ExactChunkMatch(), ExactSentenceMatch(), id="exact-chunk-vs-sentence"),
    pytest.param(ExactSentenceMatch(), ExactSentenceMatch(splitter="newline"), id="splitter"),
    pytest.param(
        ExactSentenceMatch(),
        ExactSentenceMatch(splitter="sentencex(language='de')"),
        id="splitter-language",
    ),
    pytest.param(FuzzyChunkMatch(), FuzzyChunkMatch("ratio"), id="fuzzy-scorer"),
    pytest.param(FuzzyChunkMatch(), FuzzyChunkMatch(threshold=0.8), id="fuzzy-threshold"),
    pytest.param(FuzzyChunkMatch(), FuzzyChunkMatch(preprocess=False), id="fuzzy-preprocess"),
    pytest.param(PairwiseMatch(operator.eq), PairwiseMatch(operator.ne), id="pairwise-function"),
    pytest.param(ExactChunkMatch(), PairwiseMatch(operator.eq), id="builtin-vs-pairwise"),
]


@pytest.mark.parametrize(("a", "b"), DIFFERENT_STRATEGIES)
def test_different_strategies(a: Any, b: Any) -> None:
    assert a != b
    assert b != a
    assert len({a, b}) == 2
    if hasattr(a, "spec") and hasattr(b, "spec"):
        assert a.spec != b.spec


# ---------------------------------------------------------------------------------------------
# Metrics

METRICS = [
    pytest.param(PrecisionRecallF1(RougeChunkMatch()), id="prf-rouge"),
    pytest.param(
        PrecisionRecallF1(RougeSentenceMatch(0.9), k=3, empty_ground_truth="skip"), id="prf-options"
    ),
    pytest.param(PrecisionRecallF1("fuzzy-chunk(scorer='ratio', threshold=0.85)"), id="prf-spec"),
    pytest.param(RankedRetrievalMetrics(ExactChunkMatch(), k=5), id="ranked-exact"),
    pytest.param(
        RankedRetrievalMetrics(RougeChunkMatch(0.5), k=10, gain="exponential", ideal="retrieved"),
        id="ranked-options",
    ),
    pytest.param(
        RankedRetrievalMetrics(RougeChunkMatch(), convention="continuous_eval"),
        id="ranked-convention",
    ),
    pytest.param(IDPrecisionRecallF1(), id="id-prf"),
    pytest.param(IDPrecisionRecallF1(k=2, relevance_level=2), id="id-prf-options"),
    pytest.param(IDRankedRetrievalMetrics(k=10), id="id-ranked"),
    pytest.param(
        IDRankedRetrievalMetrics(
            k=3,
            ap_denominator="hits",
            gain="exponential",
            ideal="retrieved",
            precision_denominator="retrieved",
            relevance_level=2,
            empty_ground_truth="error",
        ),
        id="id-ranked-every-option",
    ),
    pytest.param(PrecisionRecallF1(PairwiseMatch(operator.eq)), id="prf-pairwise"),
]


@pytest.mark.parametrize("metric", METRICS)
def test_metric_pickle_round_trip(metric: Any) -> None:
    copy = pickle.loads(pickle.dumps(metric))
    assert copy == metric
    assert hash(copy) == hash(metric)
    assert repr(copy) == repr(metric)


# A PairwiseMatch repr names its function, which eval cannot rebuild.
@pytest.mark.parametrize("metric", [p for p in METRICS if p.id != "prf-pairwise"])
def test_metric_repr_round_trip(metric: Any) -> None:
    assert eval(repr(metric), PUBLIC_NAMES) == metric


EQUAL_METRICS = [
    pytest.param(
        [
            PrecisionRecallF1(RougeChunkMatch(), k=5),
            PrecisionRecallF1("rouge-chunk(threshold=0.7)", k=5),
            PrecisionRecallF1(None, k=5),
            PrecisionRecallF1(k=5, empty_ground_truth="zero"),
        ],
        id="prf",
    ),
    pytest.param(
        [
            IDRankedRetrievalMetrics(),
            IDRankedRetrievalMetrics(convention="trec_eval"),
            IDRankedRetrievalMetrics(convention="ranx"),
            IDRankedRetrievalMetrics(gain="linear", ideal="ground_truth"),
        ],
        id="id-ranked-defaults",
    ),
    pytest.param(
        [
            IDRankedRetrievalMetrics(convention="continuous_eval"),
            IDRankedRetrievalMetrics(
                ap_denominator="hits", ap_credit="any", precision_denominator="retrieved"
            ),
        ],
        id="continuous-eval-convention",
    ),
    pytest.param(
        [IDPrecisionRecallF1(relevance_level=2), IDPrecisionRecallF1(relevance_level=2.0)],
        id="relevance-level",
    ),
]


@pytest.mark.parametrize("values", EQUAL_METRICS)
def test_equal_metrics(values: list[Any]) -> None:
    first = values[0]
    for other in values[1:]:
        assert other == first
        assert hash(other) == hash(first)
    assert {first: "value"}[values[-1]] == "value"


DIFFERENT_METRICS = [
    pytest.param(
        PrecisionRecallF1(RougeChunkMatch(), k=5), PrecisionRecallF1(RougeChunkMatch(), k=3), id="k"
    ),
    pytest.param(
        PrecisionRecallF1(RougeChunkMatch()), PrecisionRecallF1(RougeChunkMatch(0.8)), id="strategy"
    ),
    pytest.param(
        PrecisionRecallF1(RougeChunkMatch()),
        PrecisionRecallF1(RougeChunkMatch(), empty_ground_truth="skip"),
        id="policy",
    ),
    pytest.param(
        PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch()), id="kind"
    ),
    pytest.param(PrecisionRecallF1(ExactChunkMatch()), IDPrecisionRecallF1(), id="text-vs-id-mode"),
    pytest.param(
        IDRankedRetrievalMetrics(), IDRankedRetrievalMetrics(gain="exponential"), id="gain"
    ),
    pytest.param(
        IDRankedRetrievalMetrics(), IDRankedRetrievalMetrics(ideal="retrieved"), id="ideal"
    ),
    pytest.param(
        IDRankedRetrievalMetrics(), IDRankedRetrievalMetrics(ap_denominator="hits"), id="ap"
    ),
    pytest.param(
        IDRankedRetrievalMetrics(),
        IDRankedRetrievalMetrics(convention="continuous_eval"),
        id="convention",
    ),
    pytest.param(
        IDPrecisionRecallF1(), IDPrecisionRecallF1(relevance_level=2), id="relevance-level"
    ),
]


@pytest.mark.parametrize(("a", "b"), DIFFERENT_METRICS)
def test_different_metrics(a: Any, b: Any) -> None:
    assert a != b
    assert b != a
    assert len({a, b}) == 2
    assert repr(a) != repr(b)


# ---------------------------------------------------------------------------------------------
# Measures

MEASURE_ALIASES = [
    pytest.param(
        ["P_5", "P@5", "precision@5", "p@5", "precision(precision_denominator='k')@5"], id="P@5"
    ),
    pytest.param(
        [
            "ndcg_cut_10",
            "ndcg@10",
            "NDCG@10",
            "ndcg(gain='linear')@10",
            "ndcg(ideal='ground_truth')@10",
        ],
        id="ndcg@10",
    ),
    pytest.param(["ndcg_burges@10", "ndcg(gain='exponential')@10"], id="ndcg-burges@10"),
    pytest.param(["recip_rank", "mrr", "rr", "reciprocal_rank"], id="mrr"),
    pytest.param(["map", "ap", "average_precision", "map(ap_denominator='relevant')"], id="map"),
    pytest.param(["success_1", "hit_rate@1", "success@1"], id="success"),
    pytest.param(["map_cut_10", "map@10"], id="map@10"),
    pytest.param(["recall_5", "recall@5", "R@5"], id="recall@5"),
]


@pytest.mark.parametrize("specs", MEASURE_ALIASES)
def test_measure_aliases_are_one_value(specs: list[str]) -> None:
    measures = [parse_measure(s) for s in specs]
    for spec, measure in zip(specs, measures, strict=True):
        assert measure == measures[0], spec
        assert hash(measure) == hash(measures[0]), spec
        assert str(measure) == str(measures[0]), spec
    assert {measures[0]: "value"}[measures[-1]] == "value"


def test_measure_groups_differ_from_each_other() -> None:
    canonical = [parse_measure(param.values[0][0]) for param in MEASURE_ALIASES]
    extra = [
        parse_measure("ndcg@5"),
        parse_measure("map(ap_denominator='hits')"),
        parse_measure("ndcg(ideal='retrieved')@10"),
        parse_measure("precision(precision_denominator='retrieved')@5"),
        parse_measure("P@10"),
    ]
    values = canonical + extra
    assert len(set(values)) == len(values)
    assert len({str(v) for v in values}) == len(values)


ALL_MEASURE_SPECS = [s for param in MEASURE_ALIASES for s in param.values[0]] + [
    "ndcg(gain='exponential', ideal='retrieved')@3",
    "map(ap_denominator='hits')@5",
    "precision(precision_denominator='retrieved')@5",
    "context_f1@3",
    "hit_rate",
]


@pytest.mark.parametrize("spec", ALL_MEASURE_SPECS)
def test_measure_str_and_pickle_round_trip(spec: str) -> None:
    measure = parse_measure(spec)
    assert parse_measure(str(measure)) == measure
    assert parse_measure(measure) is measure
    assert pickle.loads(pickle.dumps(measure)) == measure
    assert isinstance(measure, Measure)


def test_measure_at_changes_only_the_cut_off() -> None:
    measure = parse_measure("ndcg(gain='exponential')@10")
    assert measure.at(5) == parse_measure("ndcg_burges@5")
    assert measure.at(None) == parse_measure("ndcg_burges")


def test_aliases_give_one_key_and_the_same_number_in_evaluate_run() -> None:
    # One query: d2 (grade 2) at rank 2, d5 (grade 1) at rank 5, d9 (grade 1) not retrieved.
    run = {"q": ["d1", "d2", "d3", "d4", "d5", "d6"]}
    qrels = {"q": {"d2": 2, "d5": 1, "d9": 1, "d1": 0}}
    aliases = {
        "P": ["P_5", "P@5", "precision@5"],
        "ndcg": ["ndcg_cut_10", "ndcg@10"],
        "burges": ["ndcg_burges@10", "ndcg(gain='exponential')@10"],
        "rr": ["recip_rank", "mrr"],
    }
    expected = {
        "P": 2 / 5,
        "ndcg": (2 / math.log2(3) + 1 / math.log2(6))
        / (2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)),
        "burges": ((2**2 - 1) / math.log2(3) + (2**1 - 1) / math.log2(6))
        / ((2**2 - 1) / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)),
        "rr": 1 / 2,
    }
    canonical = {
        "P": "precision@5",
        "ndcg": "ndcg@10",
        "burges": "ndcg(gain='exponential')@10",
        "rr": "reciprocal_rank",
    }
    specs = [s for group in aliases.values() for s in group]
    results = evaluate_run(run, qrels, specs)["q"]
    # Aliases collapse to one key, the canonical spec, in the order first given.
    assert list(results) == list(canonical.values())
    for group, name in canonical.items():
        assert results[name] == pytest.approx(expected[group]), name
        assert all(str(parse_measure(spec)) == name for spec in aliases[group]), group
    # Each alias on its own gives that one key and exactly the same number.
    for group, names in aliases.items():
        for spec in names:
            alone = evaluate_run(run, qrels, [spec])["q"]
            assert alone == {canonical[group]: results[canonical[group]]}, spec


# ---------------------------------------------------------------------------------------------
# Custom strategies


def exact_matrix(retrieved: Sequence[str], ground_truth: Sequence[str]) -> np.ndarray:
    """A plain function returning the relevance matrix."""
    return np.array([[r == g for g in ground_truth] for r in retrieved], dtype=bool).reshape(
        len(retrieved), len(ground_truth)
    )


class ExactByProtocol:
    """A class following the MatchingStrategy protocol without subclassing anything."""

    unit = "chunk"
    spec = "test-exact"

    def units(self, texts: Sequence[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        return Matches(relevant=exact_matrix(retrieved, ground_truth))


class ExactLinesByProtocol(ExactByProtocol):
    """A sentence-unit strategy: one unit per non-blank line."""

    unit = "sentence"
    spec = "test-exact-lines"

    def units(self, texts: Sequence[str]) -> list[str]:
        return [line.strip() for text in texts for line in text.splitlines() if line.strip()]


RECORDS = [
    (
        ["Paris is the capital.", "Lyon is a city.", "Paris is the capital.", "Nice."],
        ["Paris is the capital.", "Nice.", "Brest is a port."],
    ),
    (["x", "y", "z"], ["z", "x"]),
    (["a", "b"], ["c"]),
    ([], ["a"]),
    (["a"], ["a"]),
]


@pytest.mark.parametrize(
    "custom",
    [
        pytest.param(exact_matrix, id="function"),
        pytest.param(ExactByProtocol(), id="protocol-class"),
        pytest.param(PairwiseMatch(operator.eq), id="pairwise"),
    ],
)
@pytest.mark.parametrize("record", RECORDS)
def test_custom_strategy_equals_exact_chunk_match(
    custom: Any, record: tuple[list[str], list[str]]
) -> None:
    retrieved, truth = record
    for k in (None, 1, 2):
        for kind in (PrecisionRecallF1, RankedRetrievalMetrics):
            got = kind(custom, k=k)(retrieved_context=retrieved, ground_truth_context=truth)
            want = kind(ExactChunkMatch(), k=k)(
                retrieved_context=retrieved, ground_truth_context=truth
            )
            assert got == want, (kind.__name__, k)


def test_custom_strategy_anchor_values() -> None:
    # RECORDS[0] by hand: retrieved units 1, 3 and 4 match; ground truth 1 and 2 are found.
    retrieved, truth = RECORDS[0]
    scores = PrecisionRecallF1(exact_matrix)(
        retrieved_context=retrieved, ground_truth_context=truth
    )
    assert scores["context_precision"] == 3 / 4
    assert scores["context_recall"] == 2 / 3
    ranked = RankedRetrievalMetrics(ExactByProtocol())(
        retrieved_context=retrieved, ground_truth_context=truth
    )
    # hits at ranks 1 and 4 (rank 3 repeats rank 1)
    assert ranked["average_precision"] == pytest.approx((1 / 1 + 2 / 4) / 3)


def test_protocol_class_is_a_strategy() -> None:
    assert isinstance(ExactByProtocol(), MatchingStrategy)
    assert isinstance(RougeChunkMatch(), MatchingStrategy)


def test_custom_sentence_strategy_equals_exact_sentence_match() -> None:
    retrieved = ["Paris is big.\nLyon is small.", "Nice is sunny.\nParis is big."]
    truth = ["Paris is big.\nBrest is wet.", "Nice is sunny."]
    for k in (None, 1):
        got = PrecisionRecallF1(ExactLinesByProtocol(), k=k)(
            retrieved_context=retrieved, ground_truth_context=truth
        )
        want = PrecisionRecallF1(ExactSentenceMatch(splitter="newline"), k=k)(
            retrieved_context=retrieved, ground_truth_context=truth
        )
        assert got == want
    # By hand, whole list: retrieved lines 1, 3, 4 of 4 match; truth lines 1 and 3 of 3 found.
    full = PrecisionRecallF1(ExactLinesByProtocol())(
        retrieved_context=retrieved, ground_truth_context=truth
    )
    assert full["context_precision"] == 3 / 4
    assert full["context_recall"] == 2 / 3


ROUGE_RECORDS = [
    (
        [
            "Paris is the capital of France and also the largest city in the country.",
            "Lyon is a major city in France.",
        ],
        ["Paris is the capital of France."],
    ),
    (
        [
            "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
            "Construction of the tower took two years, two months and five days.",
            "The tower is 330 metres tall.",
        ],
        [
            "The Eiffel Tower was completed in 1889.",
            "The tower took two years to build.",
            "It is 330 metres tall and the tallest structure in Paris.",
        ],
    ),
]


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.9])
@pytest.mark.parametrize("record", ROUGE_RECORDS)
def test_pairwise_rouge_score_equals_rouge_chunk_match(
    threshold: float, record: tuple[list[str], list[str]]
) -> None:
    scorer = rouge_scorer.RougeScorer(["rougeL"])

    def rouge_recall_at_least(retrieved: str, ground_truth: str) -> bool:
        recall = scorer.score(target=ground_truth, prediction=retrieved)["rougeL"].recall
        return bool(recall >= threshold)

    retrieved, truth = record
    reference = PairwiseMatch(rouge_recall_at_least)
    for kind in (PrecisionRecallF1, RankedRetrievalMetrics):
        got = kind(RougeChunkMatch(threshold))(
            retrieved_context=retrieved, ground_truth_context=truth
        )
        want = kind(reference)(retrieved_context=retrieved, ground_truth_context=truth)
        assert got == want, kind.__name__


BAD_SHAPES = [
    pytest.param(lambda r, g: np.zeros((len(g), len(r)), dtype=bool), "(1, 2)", id="transposed"),
    pytest.param(lambda r, g: [True] * len(r), "(2,)", id="one-dimensional"),
    pytest.param(
        lambda r, g: np.zeros((len(r), len(g) + 1), dtype=bool), "(2, 2)", id="extra-column"
    ),
    pytest.param(
        lambda r, g: Matches(relevant=np.zeros((1, 1), dtype=bool)),
        "(1, 1)",
        id="matches-too-small",
    ),
]


@pytest.mark.parametrize(("fn", "shape"), BAD_SHAPES)
def test_custom_strategy_wrong_shape(fn: Any, shape: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        PrecisionRecallF1(fn)(retrieved_context=["a", "b"], ground_truth_context=["a"])
    message = str(info.value)
    assert "custom(" in message  # names the strategy
    assert f"shape {shape}" in message
    assert "(len(retrieved), len(ground_truth)) = (2, 1)" in message


def test_custom_class_wrong_shape_names_its_spec() -> None:
    class WrongShape(ExactByProtocol):
        spec = "test-wrong-shape"

        def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
            return Matches(relevant=np.ones((len(ground_truth), 3), dtype=bool))

    with pytest.raises(InvalidArgumentError, match=r"test-wrong-shape.*\(1, 3\).*= \(2, 1\)"):
        RankedRetrievalMetrics(WrongShape())(
            retrieved_context=["a", "b"], ground_truth_context=["a"]
        )


def test_custom_strategy_returning_nothing_is_an_error() -> None:
    # A function that forgets to return its matrix must not score silently.
    with pytest.raises((InvalidArgumentError, InvalidArgumentTypeError), match=r"\(2, 1\)"):
        PrecisionRecallF1(lambda r, g: None)(
            retrieved_context=["a", "b"], ground_truth_context=["a"]
        )


def test_custom_strategy_ragged_result_is_a_type_error() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="not a boolean matrix"):
        PrecisionRecallF1(lambda r, g: [[True], [False, True]])(
            retrieved_context=["a", "b"], ground_truth_context=["a"]
        )
