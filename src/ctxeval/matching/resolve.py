"""One way to get a strategy from whatever names one: a strategy object, a spec string such as
``"rouge-chunk(threshold=0.7)"``, or a function ``f(retrieved, ground_truth) -> matrix``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentTypeError, type_name
from ctxeval.matching.base import Matches, MatchingStrategy, Unit, as_matches
from ctxeval.matching.specs import parse_strategy

__all__ = ["as_strategy"]


def as_strategy(strategy: object, *, owner: str = "metric") -> MatchingStrategy:
    """Resolve a strategy object, a spec string or a matrix-returning function."""
    if isinstance(strategy, str):
        return parse_strategy(strategy)
    if isinstance(strategy, type):
        raise InvalidArgumentTypeError(
            f"{owner}: got the class {strategy.__name__}; give an instance of it, "
            f"{strategy.__name__}()"
        )
    if isinstance(strategy, MatchingStrategy):
        _check_protocol(strategy, owner)
        return strategy
    if hasattr(strategy, "match"):
        _check_protocol(strategy, owner)
    if callable(strategy):
        return _CallableStrategy(strategy, "chunk")
    if hasattr(strategy, "is_relevant"):
        raise InvalidArgumentTypeError(
            f"{owner}: {type_name(strategy)} looks like a continuous-eval strategy (it has "
            "is_relevant); use the ctxeval strategy of the same name, or wrap the predicate "
            "with ctxeval.PairwiseMatch(obj.is_relevant)"
        )
    raise InvalidArgumentTypeError(
        f"{owner} needs a matching strategy (e.g. RougeChunkMatch()), a spec string such as "
        f"'rouge-chunk(threshold=0.7)', or a function (retrieved, ground_truth) -> matrix; "
        f"got {type_name(strategy)}"
    )


_PROTOCOL = (
    "a strategy needs unit ('chunk' or 'sentence'), spec (a string that names it), "
    "units(texts) -> list of str and match(retrieved, ground_truth) -> boolean matrix "
    "(subclassing MatchingStrategy, a Protocol, gives none of them; a plain function "
    "(retrieved, ground_truth) -> matrix needs none)"
)


def _check_protocol(strategy: object, owner: str) -> None:
    """Stop at a strategy object that lacks part of the protocol, or whose ``unit`` or
    ``spec`` is not what the protocol says, naming what is wrong."""
    missing = [name for name in ("unit", "spec", "units", "match") if not hasattr(strategy, name)]
    wrong = missing or [
        name
        for name, ok in (
            ("unit", getattr(strategy, "unit", None) in ("chunk", "sentence")),
            ("spec", isinstance(getattr(strategy, "spec", None), str)),
            ("units", callable(getattr(strategy, "units", None))),
            ("match", callable(getattr(strategy, "match", None))),
        )
        if not ok
    ]
    if wrong:
        said = "lacks" if missing else "has no valid"
        raise InvalidArgumentTypeError(
            f"{owner}: {type_name(strategy)} {said} {', '.join(wrong)}; {_PROTOCOL}"
        )


class _CallableStrategy:
    """A function ``f(retrieved, ground_truth) -> bool matrix`` used as a chunk strategy."""

    def __init__(self, fn: Callable[[Sequence[str], Sequence[str]], Any], unit: Unit) -> None:
        self._fn = fn
        self._unit = unit

    @property
    def unit(self) -> Unit:
        return self._unit

    @property
    def spec(self) -> str:
        return f"custom({getattr(self._fn, '__qualname__', type(self._fn).__qualname__)})"

    def units(self, texts: Sequence[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        result = self._fn(retrieved, ground_truth)
        return as_matches(result, len(retrieved), len(ground_truth), self)

    def __repr__(self) -> str:
        return self.spec

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _CallableStrategy) and other._fn is self._fn

    def __hash__(self) -> int:
        return hash((_CallableStrategy, id(self._fn)))
