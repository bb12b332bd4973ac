"""Measures as values: ``"ndcg@10"``, ``"map"``, ``"P@5"``, ``"ndcg(gain='exponential')@10"``.

A :class:`Measure` hashes, compares and prints as its canonical spec, so it can key dicts and
name result columns. trec_eval/pytrec_eval names are accepted too (``P_5``, ``ndcg_cut_10``,
``recip_rank``, ``success_1``, ``map_cut_100``) and ranx's (``mrr``, ``ndcg_burges``,
``hit_rate``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxeval.errors import SpecError
from ctxeval.metrics import functional as F
from ctxeval.metrics.judgments import Judgments
from ctxeval.specs import parse_spec

__all__ = ["MEASURES", "Measure", "parse_measure"]

_Fn = Callable[..., float]


@dataclass(frozen=True)
class _Definition:
    fn: _Fn
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    doc: str = ""


MEASURES: dict[str, _Definition] = {
    "map": _Definition(
        F.average_precision,
        {"denominator": ("relevant", "hits"), "credit": ("one_to_one", "any")},
        "average precision (mean over queries: MAP)",
    ),
    "mrr": _Definition(F.reciprocal_rank, {}, "reciprocal rank of the first hit"),
    "ndcg": _Definition(
        F.ndcg,
        {"gain": ("linear", "exponential"), "ideal": ("ground_truth", "retrieved")},
        "normalised discounted cumulative gain",
    ),
    "precision": _Definition(
        F.precision, {"denominator": ("k", "retrieved")}, "hits in the top k / k"
    ),
    "recall": _Definition(F.recall, {}, "hits in the top k / relevant items"),
    "hit_rate": _Definition(F.hit_rate, {}, "1 if any of the top k is relevant"),
    "context_precision": _Definition(F.context_precision, {}, "set precision"),
    "context_recall": _Definition(F.context_recall, {}, "set recall"),
    "context_f1": _Definition(F.context_f1, {}, "set F1"),
}

_ALIASES = {
    "ap": "map",
    "average_precision": "map",
    "rr": "mrr",
    "recip_rank": "mrr",
    "reciprocal_rank": "mrr",
    "p": "precision",
    "r": "recall",
    "success": "hit_rate",
    "hits": "hit_rate",
    "hit": "hit_rate",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "f1": "context_f1",
}
# ranx's name for exponential-gain NDCG.
_PRESET_OPTIONS = {"ndcg_burges": ("ndcg", {"gain": "exponential"})}
# trec_eval writes the cut-off after an underscore: P_5, ndcg_cut_10, success_1.
_TREC_CUT = re.compile(r"^(?P<name>p|recall|ndcg_cut|map_cut|success)_(?P<k>\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Measure:
    """One measure at one cut-off, with options. ``str(m)`` is its canonical spec."""

    name: str
    k: int | None = None
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

    def at(self, k: int | None) -> Measure:
        """The same measure at another cut-off."""
        return Measure(self.name, k, self.options)

    def __call__(self, judgments: Judgments) -> float:
        """The value of this measure for one judged record."""
        return MEASURES[self.name].fn(judgments, self.k, **dict(self.options))


def parse_measure(spec: str | Measure) -> Measure:
    """Parse a measure spec; a :class:`Measure` passes through."""
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
        name, k = trec["name"], int(trec["k"])
        if k < 1:
            raise SpecError(f"{spec!r}: the cut-off must be at least 1")
    if name in _PRESET_OPTIONS:
        name, preset = _PRESET_OPTIONS[name]
        options.update(preset)
    name = _ALIASES.get(name, name)
    definition = MEASURES.get(name)
    if definition is None:
        known = ", ".join(sorted(MEASURES))
        raise SpecError(
            f"{spec!r}: unknown measure {parsed.name!r}; use one of {known} "
            "(trec_eval names such as P_5, ndcg_cut_10, recip_rank work too)"
        )
    for option, value in parsed.kwargs.items():
        allowed = definition.options.get(option)
        if allowed is None:
            valid = ", ".join(definition.options) or "none"
            raise SpecError(f"{spec!r}: {name} has no option {option!r} (options: {valid})")
        if value not in allowed:
            raise SpecError(
                f"{spec!r}: {option}={value!r} is not valid; use one of "
                + ", ".join(repr(a) for a in allowed)
            )
        options[option] = value
    # Options equal to the defaults are dropped, so equal measures have one canonical spec.
    if options.get("credit") == "any" and options.get("denominator") != "hits":
        raise SpecError(f"{spec!r}: credit='any' needs denominator='hits' (AP would exceed 1)")
    defaults = {"denominator": ("relevant" if name == "map" else "k"), "gain": "linear"}
    defaults.update(ideal="ground_truth", credit="one_to_one")
    canonical = tuple(sorted((o, v) for o, v in options.items() if defaults.get(o) != v))
    return Measure(name, k, canonical)
