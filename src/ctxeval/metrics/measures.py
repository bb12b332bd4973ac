"""Measures as values, and the one registry that defines them.

A :class:`Measure` is one measure at one cut-off with options: ``"ndcg@10"``,
``"average_precision"``, ``"precision(precision_denominator='retrieved')@5"``. It hashes,
compares and prints as its canonical spec, which is also the name of its column in every result
(per-query rows, aggregates, saved files, comparisons, the CLI).

:data:`MEASURES` is the one place that says what exists: each measure's canonical name, its two
implementations (the readable reference in :mod:`ctxeval.metrics.reference` and the vectorised
core in :mod:`ctxeval.metrics.core`), the options it takes (each option name means one thing
everywhere: the same names as the metric objects' arguments), and the family it belongs to.

Names other tools use are accepted and mean what they mean there: trec_eval's (``P_5``,
``ndcg_cut_10``, ``recip_rank``, ``success_1``, ``map_cut_100``), ranx's (``map``, ``mrr``,
``hits``, ``f1``, ``ndcg_burges``, ``hit_rate``), ir_measures' (``AP``, ``RR``, ``nDCG``,
``P``, ``R``, ``Success``). Each parses to the canonical measure, so aliases give one column.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_problem, parse_spec_cutoff
from ctxeval.foundation.errors import InvalidArgumentError, SpecError
from ctxeval.foundation.specs import parse_spec, unknown_name
from ctxeval.judging.batch import BatchJudgments
from ctxeval.judging.judgments import Judgments
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics import core
from ctxeval.metrics import reference as ref
from ctxeval.metrics.spans import core as span_core
from ctxeval.metrics.spans import reference as span_reference
from ctxeval.metrics.spans.core import SpanBatch

__all__ = [
    "GEOMETRIC_FLOOR",
    "IMPLEMENTATIONS",
    "MEASURES",
    "RECALL_LEVELS",
    "Aggregate",
    "Implementation",
    "Measure",
    "MeasureDefinition",
    "implementation",
    "in_span_convention",
    "parse_measure",
]

_SPEC_USAGE = (
    "name, name@k or name(option=value, ...)@k, e.g. 'ndcg@10' or \"ndcg(gain='exponential')@10\""
)

Implementation = Literal["core", "reference"]
NOT_GIVEN: Any = object()
"""The cut-off of a measure at a budget when none is given (an error: a budget is per record)."""
IMPLEMENTATIONS: tuple[Implementation, ...] = ("core", "reference")


def implementation(choice: str | None = None) -> Implementation:
    """Which implementation computes the measures: ``choice``, else the environment variable
    ``CTXEVAL_IMPLEMENTATION``, else ``"core"`` (the vectorised core). ``"reference"`` runs every
    record through the readable per-record reference instead: slower, the same numbers."""
    value = choice if choice is not None else os.environ.get("CTXEVAL_IMPLEMENTATION") or "core"
    if value not in IMPLEMENTATIONS:
        raise SpecError(
            f"implementation {value!r} is not known; use 'core' (default) or 'reference' "
            "(argument implementation=..., or the environment variable CTXEVAL_IMPLEMENTATION)"
        )
    return value


# Options of the rank measures, with their allowed values, default first. The names are those
# of the metric objects' arguments (RankedRetrievalMetrics(ap_denominator=...)).
_CREDIT = ("credit", ("matching", "first_come"))
_AP_DENOMINATOR = ("ap_denominator", ("relevant", "hits"))
_AP_CREDIT = ("ap_credit", ("one_to_one", "any"))
_GAIN = ("gain", ("linear", "exponential"))
_TIES = ("ties", ("ordered", "average"))
_IDEAL = ("ideal", ("ground_truth", "retrieved"))
_PRECISION_DENOMINATOR = ("precision_denominator", ("k", "retrieved"))
_GRANULAR = ("granular", (False, True))
# trec_eval's eleven standard recall levels (the same doubles as its C array).
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_RECALL = ("recall", RECALL_LEVELS)
_RECALL_ROUNDING = ("recall_rounding", ("trec_eval9", "trec_eval10"))
_PERSISTENCE = ("persistence", (0.5, 0.8, 0.9, 0.95, 0.99))

Aggregate = Literal["mean", "sum", "geometric"]
"""How a measure's per-query values become its aggregate: the mean (almost every measure),
the sum (trec_eval's counts: ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``), or the
geometric mean of the values floored at :data:`GEOMETRIC_FLOOR` (trec_eval's ``gm_map``)."""

GEOMETRIC_FLOOR = 1e-5
"""trec_eval's ``MIN_GEO_MEAN``: values below it count as it in a geometric mean."""

# Options of the span measures. ``unit`` says how a span is measured (characters, the tokens of
# a named tokenizer, or "tokens": the run's token counter): a judging option, like ``credit``,
# that the formulas do not take.
_SPAN_CONVENTION = ("convention", ("union", "chroma"))
_UNIT = ("unit", ("chars", "rouge", "unicode", "tokens"))
JUDGING_OPTIONS = frozenset({"credit", "unit"})


@dataclass(frozen=True)
class MeasureDefinition:
    """What the registry knows of one measure."""

    name: str
    family: Literal["set", "rank", "span"]
    reference: Callable[..., float]
    core: Callable[..., Any]
    options: dict[str, tuple[Any, ...]]
    doc: str
    aggregate: Aggregate = "mean"
    required: tuple[str, ...] = ()  # options without a default: always in the spec

    def default(self, option: str) -> Any:
        return None if option in self.required else self.options[option][0]


def _define(
    name: str,
    family: Literal["set", "rank"],
    doc: str,
    *options: tuple[str, tuple[Any, ...]],
    aggregate: Aggregate = "mean",
    required: tuple[str, ...] = (),
) -> MeasureDefinition:
    return MeasureDefinition(
        name,
        family,
        getattr(ref, name),
        core.CORE[name],
        dict(options),
        doc,
        aggregate,
        required,
    )


def _define_span(name: str, doc: str) -> MeasureDefinition:
    return MeasureDefinition(
        name,
        "span",
        getattr(span_reference, name),
        span_core.SPAN_CORE[name],
        dict((_SPAN_CONVENTION, _UNIT)),
        doc,
    )


MEASURES: dict[str, MeasureDefinition] = {
    d.name: d
    for d in (
        _define(
            "context_precision",
            "set",
            "retrieved units matching some ground truth / retrieved units",
        ),
        _define(
            "context_recall",
            "set",
            "ground-truth units matched by some retrieved unit / ground-truth units",
        ),
        _define("context_f1", "set", "harmonic mean of context_precision and context_recall"),
        _define(
            "average_precision",
            "rank",
            "average precision (its mean over queries is MAP)",
            _CREDIT,
            _AP_DENOMINATOR,
            _AP_CREDIT,
        ),
        _define(
            "reciprocal_rank",
            "rank",
            "1 / rank of the first hit (mean: MRR); granular=True: the mean of 1 / rank over "
            "every relevant unit retrieved (llama-index's granular MRR)",
            _GRANULAR,
        ),
        _define(
            "ndcg",
            "rank",
            "normalised discounted cumulative gain",
            _CREDIT,
            _GAIN,
            _IDEAL,
            _TIES,
        ),
        _define("precision", "rank", "hits in the top k / k", _CREDIT, _PRECISION_DENOMINATOR),
        _define("recall", "rank", "hits in the top k / relevant items", _CREDIT),
        _define("hit_rate", "rank", "1 if any of the top k is relevant, else 0"),
        _define("hits", "rank", "the number of hits in the top k (ranx hits)", _CREDIT),
        _define("f1", "rank", "harmonic mean of precision@k and recall@k (ranx f1)", _CREDIT),
        _define("dcg", "rank", "discounted cumulative gain (ranx dcg, dcg_burges)", _GAIN),
        _define("r_precision", "rank", "hits in the top R / R (trec_eval Rprec)", _CREDIT),
        _define("bpref", "rank", "binary preference (trec_eval bpref)", _CREDIT),
        _define(
            "iprec_at_recall",
            "rank",
            "interpolated precision at a recall level (trec_eval iprec_at_recall_0.50)",
            _CREDIT,
            _RECALL,
            _RECALL_ROUNDING,
            required=("recall",),
        ),
        _define(
            "rbp",
            "rank",
            "rank-biased precision with a persistence (ranx rbp.95)",
            _CREDIT,
            _PERSISTENCE,
            required=("persistence",),
        ),
        _define(
            "gm_map",
            "rank",
            "average precision, aggregated by its geometric mean (trec_eval gm_map)",
            _CREDIT,
            aggregate="geometric",
        ),
        _define("num_q", "rank", "queries (trec_eval num_q; summed)", aggregate="sum"),
        _define("num_ret", "rank", "units retrieved (trec_eval num_ret; summed)", aggregate="sum"),
        _define("num_rel", "rank", "relevant units (trec_eval num_rel; summed)", aggregate="sum"),
        _define(
            "num_rel_ret",
            "rank",
            "hits retrieved (trec_eval num_rel_ret; summed)",
            _CREDIT,
            aggregate="sum",
        ),
        _define_span("span_precision", "retrieved text that is ground truth / retrieved text"),
        _define_span("span_recall", "ground-truth text retrieved / ground-truth text"),
        _define_span("span_iou", "retrieved ground truth / union of retrieved and ground truth"),
        _define_span("span_f1", "harmonic mean of span_precision and span_recall"),
    )
}

_ALIASES = {
    "map": "average_precision",
    "ap": "average_precision",
    "map_cut": "average_precision",
    "mrr": "reciprocal_rank",
    "rr": "reciprocal_rank",
    "recip_rank": "reciprocal_rank",
    "p": "precision",
    "r": "recall",
    "success": "hit_rate",
    "hit": "hit_rate",
    "ndcg_cut": "ndcg",
    "rprec": "r_precision",
    "r-precision": "r_precision",
}
# ranx's names for exponential-gain (N)DCG; llama-index's granular MRR.
_PRESET_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "ndcg_burges": ("ndcg", {"gain": "exponential"}),
    "dcg_burges": ("dcg", {"gain": "exponential"}),
    "granular_mrr": ("reciprocal_rank", {"granular": True}),
}
# Parameters written into the name: trec_eval's iprec_at_recall_0.50, ranx's rbp.95.
_NAMED_PARAMETER = (
    (re.compile(r"^iprec_at_recall_(?P<value>[01](?:\.\d+)?)$"), "iprec_at_recall", "recall"),
    (re.compile(r"^rbp\.(?P<value>\d+)$"), "rbp", "persistence"),
)
# trec_eval writes the cut-off after an underscore: P_5, ndcg_cut_10, success_1.
_TREC_CUT = re.compile(r"^(?P<name>p|recall|ndcg_cut|map_cut|success)_(?P<k>\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Measure:
    """One measure at one cut-off, with options. ``str(m)`` is its canonical spec.

    Build one with :func:`parse_measure`; ``options`` holds only the values that differ from
    the defaults, sorted by name, so equal measures are equal values with one spec.
    """

    name: str
    k: Cutoff = None
    options: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        spec = self.name
        if self.options:
            spec += "(" + ", ".join(f"{key}={value!r}" for key, value in self.options) + ")"
        if self.k is not None:
            spec += f"@{self.k}"
        return spec

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"

    @property
    def definition(self) -> MeasureDefinition:
        return MEASURES[self.name]

    def at(self, k: Cutoff) -> Measure:
        """The same measure at another cut-off."""
        return Measure(self.name, k, self.options)

    def option(self, name: str) -> Any:
        """The value of an option (its default when not given)."""
        return dict(self.options).get(name, self.definition.default(name))

    @property
    def averages_ties(self) -> bool:
        """Whether the measure averages over each group of equal retrieval scores
        (``ndcg(ties='average')``): the order given to tied documents cannot change it."""
        return dict(self.options).get("ties") == "average"

    def formula_options(self) -> dict[str, Any]:
        """The options the formulas take (``credit`` and ``unit`` are judging options: how
        hits are decided and spans measured, not how they are counted)."""
        return {key: value for key, value in self.options if key not in JUDGING_OPTIONS}

    def __call__(self, judgments: Judgments | RecordSpans, chunks: Any = NOT_GIVEN) -> float:
        """The reference value of this measure for one judged record (its spans, for a span
        measure); at a budget, ``chunks``
        is the cut-off the budget stands for in this record (a count, or None for the whole
        list: :meth:`~ctxeval.cutoffs.budgets.BudgetCut.equivalent_k`)."""
        return self.definition.reference(
            judgments, self._count(self.k, chunks), **self.formula_options()
        )

    def values(self, batch: BatchJudgments | SpanBatch, chunks: Any = NOT_GIVEN) -> Any:
        """The core's values of this measure for every record of a batch; at a budget,
        ``chunks`` holds the cut-off it stands for in each record (an array)."""
        return self.definition.core(batch, self._count(self.k, chunks), **self.formula_options())

    @staticmethod
    def _count(k: Cutoff, chunks: Any) -> Any:
        if not isinstance(k, Budget):
            return k
        if chunks is NOT_GIVEN:
            raise InvalidArgumentError(
                f"a measure at the budget {k} needs the chunks the budget takes for each "
                "record; evaluate it with RetrievalEvaluator"
            )
        return chunks


def make_measure(name: str, k: Cutoff = None, **options: Any) -> Measure:
    """A measure from its canonical name and options (validated; defaults dropped)."""
    return parse_measure(str(Measure(name, k, tuple(sorted(options.items())))))


def in_span_convention(specs: Iterable[str], convention: str) -> list[str]:
    """The measure specs with each span measure in ``convention`` (``span_iou@5`` under
    ``"chroma"`` is ``span_iou(convention='chroma')@5``), the others as given."""
    chosen = []
    for spec in specs:
        measure = parse_measure(spec)
        if measure.definition.family == "span":
            options = dict(measure.options) | {"convention": convention}
            spec = str(make_measure(measure.name, measure.k, **options))
        chosen.append(spec)
    return chosen


def parse_measure(spec: str | Measure) -> Measure:
    """Parse a measure spec into its canonical :class:`Measure`; a Measure passes through."""
    if isinstance(spec, Measure):
        return spec
    parsed = parse_spec(spec, what="measure", usage=_SPEC_USAGE)
    k = None if parsed.k is None else parse_spec_cutoff(spec, parsed.k)
    if parsed.args:
        raise SpecError(f"{spec!r}: measure options must be named, e.g. ndcg(gain='exponential')")
    name, k, options = _named_measure(spec, parsed.name.lower(), k)
    name = _ALIASES.get(name, name)
    definition = MEASURES.get(name)
    if definition is None:
        raise unknown_name(
            spec,
            "measure",
            parsed.name,
            list(MEASURES),
            also=[*_ALIASES, *_PRESET_OPTIONS],
            hint="trec_eval names such as P_5, ndcg_cut_10, recip_rank work too",
        )
    for option, value in parsed.kwargs.items():
        allowed = definition.options.get(option)
        if allowed is None:
            raise unknown_name(
                spec, f"{name} option", option, list(definition.options), none="it has none"
            )
        options[option] = value
    _check_options(spec, name, definition, options)
    # Options equal to the defaults are dropped, so equal measures have one canonical spec.
    canonical = tuple(
        sorted(
            (o, v)
            for o, v in options.items()
            if o in definition.required or v != definition.default(o)
        )
    )
    return Measure(name, k, canonical)


def _named_measure(spec: str, name: str, k: Cutoff) -> tuple[str, Cutoff, dict[str, Any]]:
    """The measure's name, cut-off and options as its name gives them: trec_eval's ``name_K``
    cut-offs, the names that preset options (``ndcg_exp``) and the names with a parameter
    (``success_0.5``)."""
    options: dict[str, Any] = {}
    trec = _TREC_CUT.match(name)
    if trec:
        if k is not None:
            raise SpecError(f"{spec!r}: give the cut-off once, as {trec['name']}_K or name@K")
        name, k = trec["name"].lower(), int(trec["k"])
        if k < 1:
            raise SpecError(f"{spec!r}: the cut-off must be at least 1")
    if isinstance(k, int) and cutoff_problem(k):
        raise SpecError(f"{spec!r}: the cut-off is {k}; {cutoff_problem(k)}")
    if name in _PRESET_OPTIONS:
        name, preset = _PRESET_OPTIONS[name]
        options.update(preset)
    for pattern, measure, option in _NAMED_PARAMETER:
        if found := pattern.match(name):
            value = found["value"]
            name = measure
            options[option] = float(value if option == "recall" else f"0.{value}")
    return name, k, options


def _check_options(
    spec: str, name: str, definition: MeasureDefinition, options: dict[str, Any]
) -> None:
    """Check the measure's options against its definition, in place: each value one the
    registry allows (and spelt as the registry spells it), the required ones given."""
    for option, value in options.items():
        allowed = definition.options[option]
        if type(value) not in (bool, int, float, str) or value not in allowed:
            raise SpecError(
                f"{spec!r}: {option}={value!r} is not valid; use one of "
                + ", ".join(repr(a) for a in allowed)
            )
        # 1 and 1.0 (and True) are one value: keep the registry's, so the spec is canonical.
        options[option] = allowed[allowed.index(value)]
    for option in definition.required:
        if option not in options:
            example = definition.options[option][-1]
            raise SpecError(
                f"{spec!r}: {name} needs {option}=..., e.g. {name}({option}={example!r}); "
                "use one of " + ", ".join(repr(a) for a in definition.options[option])
            )
    if options.get("ap_credit") == "any" and options.get("ap_denominator") != "hits":
        raise SpecError(
            f"{spec!r}: ap_credit='any' needs ap_denominator='hits' (AP would exceed 1)"
        )
