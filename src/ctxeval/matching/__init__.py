"""Matching strategies: which retrieved units are relevant to which ground-truth units."""

from ctxeval.matching.base import Matches, MatchingStrategy, PairwiseMatch, Unit
from ctxeval.matching.exact import ExactChunkMatch, ExactSentenceMatch
from ctxeval.matching.fuzzy import FUZZY_SCORERS, FuzzyChunkMatch
from ctxeval.matching.resolve import as_strategy
from ctxeval.matching.rouge.strategies import (
    RougeChunkMatch,
    RougeSentenceMatch,
    rouge_l_recall_matrix,
)
from ctxeval.matching.specs import STRATEGIES, parse_strategy
from ctxeval.matching.tokens import TokenCache

__all__ = [
    "FUZZY_SCORERS",
    "STRATEGIES",
    "ExactChunkMatch",
    "ExactSentenceMatch",
    "FuzzyChunkMatch",
    "Matches",
    "MatchingStrategy",
    "PairwiseMatch",
    "RougeChunkMatch",
    "RougeSentenceMatch",
    "TokenCache",
    "Unit",
    "as_strategy",
    "parse_strategy",
    "rouge_l_recall_matrix",
]
