"""Evaluation results: the result object, the per-query table, result files.

- :class:`EvaluationResult` (:mod:`ctxeval.results.result`): per-query rows, aggregate, summary
  and skipped records of a run, with its renderings;
- :class:`PerQueryTable` (:mod:`ctxeval.results.table`): the per-query rows with a fixed schema;
- :mod:`ctxeval.results.files`: saving and loading ``.jsonl``/``.json``/``.csv``/``.parquet``
  results, streaming rows to a JSONL file, reading a distributed run's Parquet parts.

The aggregates themselves are folded by :mod:`ctxeval.results.aggregation`.
"""

from ctxeval.results.arrow import arrow_table, encoded_table
from ctxeval.results.files import JsonlResultWriter, iter_parts
from ctxeval.results.result import EvaluationResult
from ctxeval.results.table import PerQueryTable, metadata_column

__all__ = [
    "EvaluationResult",
    "JsonlResultWriter",
    "PerQueryTable",
    "arrow_table",
    "encoded_table",
    "iter_parts",
    "metadata_column",
]
