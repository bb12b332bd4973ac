"""ctxeval: deterministic, offline evaluation of the context a RAG retriever returns.

>>> from ctxeval import PrecisionRecallF1, RougeChunkMatch
>>> datum = {
...     "retrieved_context": [
...         "Paris is the capital of France and also the largest city in the country.",
...         "Lyon is a major city in France.",
...     ],
...     "ground_truth_context": ["Paris is the capital of France."],
... }
>>> PrecisionRecallF1(RougeChunkMatch())(**datum)
{'context_precision': 0.5, 'context_recall': 1.0, 'context_f1': 0.6666666666666666}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ctxeval.foundation.errors import (
    ConventionWarning,
    CtxevalError,
    CtxevalWarning,
    EmptyTokensWarning,
    EnvironmentVariableError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
    MissingDependencyError,
    NothingScoredWarning,
    SpecError,
    WorkerProcessError,
)

__version__ = "0.1.0"

# The public API, imported on first use (PEP 562): ``import ctxeval`` and ``ctxeval --help``
# stay fast, and a script pays only for the stages it uses.
_LAZY = {
    "BudgetCut": "ctxeval.cutoffs.budgets",
    "budget_cut": "ctxeval.cutoffs.budgets",
    "Budget": "ctxeval.cutoffs.cutoff",
    "parse_budget": "ctxeval.cutoffs.cutoff",
    "ComparisonReport": "ctxeval.comparison",
    "PairedComparison": "ctxeval.comparison",
    "compare": "ctxeval.comparison",
    "RetrievalEvaluator": "ctxeval.evaluator",
    "evaluate": "ctxeval.evaluator",
    "FieldMap": "ctxeval.io",
    "Record": "ctxeval.io",
    "RecordError": "ctxeval.io",
    "read_records": "ctxeval.io",
    "ExactChunkMatch": "ctxeval.matching",
    "ExactSentenceMatch": "ctxeval.matching",
    "FuzzyChunkMatch": "ctxeval.matching",
    "Matches": "ctxeval.matching",
    "MatchingStrategy": "ctxeval.matching",
    "PairwiseMatch": "ctxeval.matching",
    "RougeChunkMatch": "ctxeval.matching",
    "RougeSentenceMatch": "ctxeval.matching",
    "parse_strategy": "ctxeval.matching",
    "CONVENTIONS": "ctxeval.metrics",
    "IDMeasures": "ctxeval.metrics",
    "IDPrecisionRecallF1": "ctxeval.metrics",
    "IDRankedRetrievalMetrics": "ctxeval.metrics",
    "Judgments": "ctxeval.metrics",
    "MEASURES": "ctxeval.metrics",
    "Measure": "ctxeval.metrics",
    "PrecisionRecallF1": "ctxeval.metrics",
    "RankedRetrievalMetrics": "ctxeval.metrics",
    "SpanMeasures": "ctxeval.metrics",
    "SpanMetrics": "ctxeval.metrics",
    "TextMeasures": "ctxeval.metrics",
    "evaluate_run": "ctxeval.metrics",
    "parse_measure": "ctxeval.metrics",
    "EvaluationResult": "ctxeval.results",
    "RougeTokenizer": "ctxeval.text",
    "UnicodeTokenizer": "ctxeval.text",
    "get_splitter": "ctxeval.text",
    "get_tokenizer": "ctxeval.text",
}

if TYPE_CHECKING:
    from ctxeval.comparison import ComparisonReport, PairedComparison, compare
    from ctxeval.cutoffs.budgets import BudgetCut, budget_cut
    from ctxeval.cutoffs.cutoff import Budget, parse_budget
    from ctxeval.evaluator import RetrievalEvaluator, evaluate
    from ctxeval.io import FieldMap, Record, RecordError, read_records
    from ctxeval.matching import (
        ExactChunkMatch,
        ExactSentenceMatch,
        FuzzyChunkMatch,
        Matches,
        MatchingStrategy,
        PairwiseMatch,
        RougeChunkMatch,
        RougeSentenceMatch,
        parse_strategy,
    )
    from ctxeval.metrics import (
        CONVENTIONS,
        MEASURES,
        IDMeasures,
        IDPrecisionRecallF1,
        IDRankedRetrievalMetrics,
        Judgments,
        Measure,
        PrecisionRecallF1,
        RankedRetrievalMetrics,
        SpanMeasures,
        SpanMetrics,
        TextMeasures,
        evaluate_run,
        parse_measure,
    )
    from ctxeval.results import EvaluationResult
    from ctxeval.text import RougeTokenizer, UnicodeTokenizer, get_splitter, get_tokenizer


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "CONVENTIONS",
    "MEASURES",
    "Budget",
    "BudgetCut",
    "ComparisonReport",
    "ConventionWarning",
    "CtxevalError",
    "CtxevalWarning",
    "EmptyTokensWarning",
    "EnvironmentVariableError",
    "EvaluationResult",
    "ExactChunkMatch",
    "ExactSentenceMatch",
    "FieldMap",
    "FuzzyChunkMatch",
    "IDMeasures",
    "IDPrecisionRecallF1",
    "IDRankedRetrievalMetrics",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidRecordError",
    "Judgments",
    "Matches",
    "MatchingStrategy",
    "Measure",
    "MissingDependencyError",
    "NothingScoredWarning",
    "PairedComparison",
    "PairwiseMatch",
    "PrecisionRecallF1",
    "RankedRetrievalMetrics",
    "Record",
    "RecordError",
    "RetrievalEvaluator",
    "RougeChunkMatch",
    "RougeSentenceMatch",
    "RougeTokenizer",
    "SpanMeasures",
    "SpanMetrics",
    "SpecError",
    "TextMeasures",
    "UnicodeTokenizer",
    "WorkerProcessError",
    "__version__",
    "budget_cut",
    "compare",
    "evaluate",
    "evaluate_run",
    "get_splitter",
    "get_tokenizer",
    "parse_budget",
    "parse_measure",
    "parse_strategy",
    "read_records",
]
