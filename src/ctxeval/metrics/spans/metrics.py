"""Metric objects for the span measures: ``SpanMetrics()`` and ``SpanMeasures(["span_iou@5"])``.

``SpanMetrics(unit="chars", convention="union")(retrieved_context=[...],
ground_truth_context=[...], retrieved_spans=[...], ground_truth_spans=[...])`` returns
``{"span_precision": ..., "span_recall": ..., "span_iou": ..., "span_f1": ...}``; with
``corpus={name: text}`` texts without a span are located in it. An evaluation judges every
record's spans once per unit and computes each measure at each cut-off from the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.params import EmptyGroundTruthPolicy, check_choice, own_init
from ctxeval.judging.passes import SpanPass
from ctxeval.judging.spans import locate_record, record_spans
from ctxeval.metrics.base import MetricBase, Scores
from ctxeval.metrics.measure_sets import MeasureSetMixin
from ctxeval.metrics.measures import Measure, make_measure
from ctxeval.records.checks import validate_spans, validate_texts
from ctxeval.records.model import Record
from ctxeval.text.locate import Locator
from ctxeval.text.sizes import TokenCounter, check_token_counter

__all__ = ["SpanMeasures", "SpanMetric", "SpanMetrics"]

_UNITS = ("chars", "rouge", "unicode", "tokens")
_CONVENTIONS = ("union", "chroma")


class SpanMetric(MetricBase):
    """A metric over the character spans of the retrieved and ground-truth texts."""

    mode = "text"
    unit: str = "chars"
    convention: str = "union"

    def judging_pass(self, depth: int | None) -> SpanPass:
        return SpanPass(self.unit)

    def __call__(
        self,
        retrieved_context: object = None,
        ground_truth_context: object = None,
        retrieved_spans: object = None,
        ground_truth_spans: object = None,
        *,
        corpus: Mapping[str, str] | None = None,
        token_counter: str | TokenCounter = "rouge",
        **_other_fields: object,
    ) -> Scores:
        retrieved = validate_texts(retrieved_context, "retrieved_context")
        truth = validate_texts(ground_truth_context, "ground_truth_context", allow_blank=False)
        record = Record(
            index=0,
            id="#0",
            location="record",
            mode="text",
            retrieved=retrieved,
            ground_truth=truth,
            retrieved_spans=None
            if retrieved_spans is None
            else validate_spans(
                retrieved_spans, "retrieved_spans", len(retrieved), texts_field="retrieved_context"
            ),
            ground_truth_spans=None
            if ground_truth_spans is None
            else validate_spans(
                ground_truth_spans,
                "ground_truth_spans",
                len(truth),
                texts_field="ground_truth_context",
            ),
        )
        locator = None if corpus is None else Locator(corpus)
        counter = check_token_counter(
            token_counter, f"{type(self).__name__}(...)(token_counter=...)"
        )
        spans = record_spans(locate_record(record, locator), self.unit, locator, counter)
        return self.scores(spans)  # type: ignore[arg-type]


@own_init
class SpanMetrics(SpanMetric):
    """Span precision, recall, IoU and F1 (see docs/metrics.md): ``unit`` measures spans in
    characters (``"chars"``), in tokens of the ``"rouge"`` or ``"unicode"`` tokenizer that start
    in them, or (``"tokens"``) with the run's token counter over the text of each maximal run
    (``RetrievalEvaluator(token_counter=...)``; a call's ``token_counter=``); token units need
    the corpus. ``convention="chroma"`` reproduces chroma's chunking_evaluation."""

    keys: tuple[str, ...] = ("span_precision", "span_recall", "span_iou", "span_f1")

    def __init__(
        self,
        *,
        k: int | None = None,
        unit: str = "chars",
        convention: str = "union",
        empty_ground_truth: EmptyGroundTruthPolicy = "zero",
    ) -> None:
        super().__init__(k=k, empty_ground_truth=empty_ground_truth)
        if callable(unit):
            raise InvalidArgumentError(
                "SpanMetrics(unit=<a callable>): a token counter is the run's, not the "
                "metric's: use SpanMetrics(unit='tokens') (spec: span_recall(unit='tokens')) "
                "with RetrievalEvaluator(..., token_counter=your_counter)"
            )
        self.unit = check_choice("SpanMetrics", "unit", unit, _UNITS)
        self.convention = check_choice("SpanMetrics", "convention", convention, _CONVENTIONS)

    def _measures(self) -> tuple[Measure, ...]:
        return tuple(
            make_measure(key, unit=self.unit, convention=self.convention) for key in self.keys
        )

    def _options(self) -> dict[str, Any]:
        opts = super()._options()
        if self.unit != "chars":
            opts["unit"] = self.unit
        if self.convention != "union":
            opts["convention"] = self.convention
        return opts


@own_init
class SpanMeasures(MeasureSetMixin, SpanMetric):
    """Span measures given as specs (``["span_iou@5", "span_recall"]``), sharing one unit and
    one convention (split measures of several into several objects)."""

    def __init__(
        self, measures: object, *, empty_ground_truth: EmptyGroundTruthPolicy = "zero"
    ) -> None:
        SpanMetric.__init__(self, empty_ground_truth=empty_ground_truth)
        self._init_measures(measures)
        others = [str(m) for m in self._chosen if m.definition.family != "span"]
        if others:
            raise InvalidArgumentError(
                f"SpanMeasures: {', '.join(others)} are not span measures; evaluate them with "
                "TextMeasures (RetrievalEvaluator(metrics=[...]) splits them for you)"
            )
        for option in ("unit", "convention"):
            values = {m.option(option) for m in self._chosen}
            if len(values) > 1:
                raise InvalidArgumentError(
                    f"SpanMeasures: the measures ask for different {option}s ({sorted(values)}); "
                    "give one SpanMeasures per " + option
                )
            setattr(self, option, values.pop())
