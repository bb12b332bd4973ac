"""Metrics: pure functions over judgments, and the metric objects called as ``metric(**datum)``."""

from ctxeval.judging.judgments import Judgments, judge_ids, judge_matrix
from ctxeval.judging.texts import judge_texts
from ctxeval.metrics.conventions import CONVENTIONS, RankOptions
from ctxeval.metrics.id_metrics import IDPrecisionRecallF1, IDRankedRetrievalMetrics
from ctxeval.metrics.measure_sets import IDMeasures, TextMeasures
from ctxeval.metrics.measures import MEASURES, Measure, parse_measure
from ctxeval.metrics.runs import evaluate_run, rank_documents
from ctxeval.metrics.spans.metrics import SpanMeasures, SpanMetrics
from ctxeval.metrics.text_metrics import PrecisionRecallF1, RankedRetrievalMetrics

__all__ = [
    "CONVENTIONS",
    "MEASURES",
    "IDMeasures",
    "IDPrecisionRecallF1",
    "IDRankedRetrievalMetrics",
    "Judgments",
    "Measure",
    "PrecisionRecallF1",
    "RankOptions",
    "RankedRetrievalMetrics",
    "SpanMeasures",
    "SpanMetrics",
    "TextMeasures",
    "evaluate_run",
    "judge_ids",
    "judge_matrix",
    "judge_texts",
    "parse_measure",
    "rank_documents",
]
