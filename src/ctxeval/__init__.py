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

from ctxeval.comparison import ComparisonReport, PairedComparison, compare
from ctxeval.errors import (
    ConventionWarning,
    CtxevalError,
    CtxevalWarning,
    EmptyTokensWarning,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
    MissingDependencyError,
    SpecError,
)
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
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    Judgments,
    Measure,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    evaluate_run,
    parse_measure,
)
from ctxeval.results import EvaluationResult
from ctxeval.text import RougeTokenizer, UnicodeTokenizer, get_splitter, get_tokenizer

__version__ = "0.1.0"

__all__ = [
    "CONVENTIONS",
    "ComparisonReport",
    "ConventionWarning",
    "CtxevalError",
    "CtxevalWarning",
    "EmptyTokensWarning",
    "EvaluationResult",
    "ExactChunkMatch",
    "ExactSentenceMatch",
    "FieldMap",
    "FuzzyChunkMatch",
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
    "SpecError",
    "UnicodeTokenizer",
    "__version__",
    "compare",
    "evaluate",
    "evaluate_run",
    "get_splitter",
    "get_tokenizer",
    "parse_measure",
    "parse_strategy",
    "read_records",
]
