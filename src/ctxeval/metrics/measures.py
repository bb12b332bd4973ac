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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ctxeval.cutoffs import Budget, Cutoff
from ctxeval.errors import InvalidArgumentError, SpecError
from ctxeval.metrics import core
from ctxeval.metrics import reference as ref
from ctxeval.metrics.judgments import Judgments
from ctxeval.specs import parse_spec, unknown_name
from ctxeval.validation import cutoff_problem

__all__ = [
    "IMPLEMENTATIONS",
    "MEASURES",
    "Implementation",
    "Measure",
    "MeasureDefinition",
    "implementation",
    "parse_measure",
]

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
_IDEAL = ("ideal", ("ground_truth", "retrieved"))
_PRECISION_DENOMINATOR = ("precision_denominator", ("k", "retrieved"))


@dataclass(frozen=True)
class MeasureDefinition:
    """What the registry knows of one measure."""

    name: str
    family: Literal["set", "rank"]
    reference: Callable[..., float]
    core: Callable[..., Any]
    options: dict[str, tuple[Any, ...]]
    doc: str

    def default(self, option: str) -> Any:
        return self.options[option][0]


def _define(
    name: str,
    family: Literal["set", "rank"],
    doc: str,
    *options: tuple[str, tuple[Any, ...]],
) -> MeasureDefinition:
    return MeasureDefinition(name, family, getattr(ref, name), core.CORE[name], dict(options), doc)


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
        _define("reciprocal_rank", "rank", "1 / rank of the first hit (mean: MRR)"),
        _define("ndcg", "rank", "normalised discounted cumulative gain", _CREDIT, _GAIN, _IDEAL),
        _define("precision", "rank", "hits in the top k / k", _CREDIT, _PRECISION_DENOMINATOR),
        _define("recall", "rank", "hits in the top k / relevant items", _CREDIT),
        _define("hit_rate", "rank", "1 if any of the top k is relevant, else 0"),
        _define("hits", "rank", "the number of hits in the top k (ranx hits)", _CREDIT),
        _define("f1", "rank", "harmonic mean of precision@k and recall@k (ranx f1)", _CREDIT),
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
}
# ranx's name for exponential-gain NDCG.
_PRESET_OPTIONS = {"ndcg_burges": ("ndcg", {"gain": "exponential"})}
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

    def formula_options(self) -> dict[str, Any]:
        """The options the formulas take (``credit`` is a judging option: how hits are
        decided, not how they are counted)."""
        return {key: value for key, value in self.options if key != "credit"}

    def __call__(self, judgments: Judgments, chunks: Any = NOT_GIVEN) -> float:
        """The reference value of this measure for one judged record; at a budget, ``chunks``
        is the cut-off the budget stands for in this record (a count, or None for the whole
        list: :meth:`~ctxeval.budgets.BudgetCut.equivalent_k`)."""
        return self.definition.reference(
            judgments, self._count(self.k, chunks), **self.formula_options()
        )

    def values(self, batch: core.BatchJudgments, chunks: Any = NOT_GIVEN) -> Any:
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
                "record; evaluate it with RetrievalEvaluator or score_batch"
            )
        return chunks


def make_measure(name: str, k: Cutoff = None, **options: Any) -> Measure:
    """A measure from its canonical name and options (validated; defaults dropped)."""
    return parse_measure(str(Measure(name, k, tuple(sorted(options.items())))))


def parse_measure(spec: str | Measure) -> Measure:
    """Parse a measure spec into its canonical :class:`Measure`; a Measure passes through."""
    if isinstance(spec, Measure):
        return spec
    parsed = parse_spec(spec, what="measure")
    if parsed.args:
        raise SpecError(f"{spec!r}: measure options must be named, e.g. ndcg(gain='exponential')")
    name = parsed.name.lower()
    k = parsed.k
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
        if value not in allowed:
            raise SpecError(
                f"{spec!r}: {option}={value!r} is not valid; use one of "
                + ", ".join(repr(a) for a in allowed)
            )
        options[option] = value
    if options.get("ap_credit") == "any" and options.get("ap_denominator") != "hits":
        raise SpecError(
            f"{spec!r}: ap_credit='any' needs ap_denominator='hits' (AP would exceed 1)"
        )
    # Options equal to the defaults are dropped, so equal measures have one canonical spec.
    canonical = tuple(sorted((o, v) for o, v in options.items() if v != definition.default(o)))
    return Measure(name, k, canonical)
