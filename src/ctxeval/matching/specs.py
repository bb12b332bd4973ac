"""Strategies by spec string: ``"rouge-chunk(threshold=0.7)"``, ``"exact-sentence"``, ..."""

from __future__ import annotations

from ctxeval.foundation.errors import CtxevalError, SpecError
from ctxeval.foundation.specs import check_options, parse_spec, unknown_name
from ctxeval.matching.builtin import BuiltinStrategy
from ctxeval.matching.exact import ExactChunkMatch, ExactSentenceMatch
from ctxeval.matching.fuzzy import FuzzyChunkMatch
from ctxeval.matching.rouge.strategies import RougeChunkMatch, RougeSentenceMatch

__all__ = ["STRATEGIES", "parse_strategy"]

_USAGE = "name or name(option=value, ...), e.g. 'rouge-chunk(threshold=0.7)' or 'exact-chunk'"

STRATEGIES: dict[str, type[BuiltinStrategy]] = {
    cls.spec_name: cls
    for cls in (
        ExactChunkMatch,
        ExactSentenceMatch,
        RougeChunkMatch,
        RougeSentenceMatch,
        FuzzyChunkMatch,
    )
}


def parse_strategy(spec: str) -> BuiltinStrategy:
    """Build a strategy from its spec string; ``spec`` of the result is canonical."""
    parsed = parse_spec(spec, what="strategy", usage=_USAGE)
    if parsed.k is not None:
        raise SpecError(f"{spec!r}: a strategy takes no '@k'; give k to the metric or evaluator")
    key = parsed.name.lower().replace("_", "-")
    cls = STRATEGIES.get(key)
    if cls is None:
        raise unknown_name(spec, "strategy", parsed.name, list(STRATEGIES))
    check_options(spec, key, parsed.kwargs, cls)
    try:
        return cls(*parsed.args, **parsed.kwargs)
    except CtxevalError as exc:
        raise SpecError(f"{spec!r}: {exc}", fixes=exc.fixes) from None
    except TypeError as exc:
        raise SpecError(f"{spec!r}: {exc}") from None
