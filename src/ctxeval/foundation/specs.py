"""Parsing of spec strings such as ``"rouge-chunk(threshold=0.7)"`` and ``"ndcg(gain='exp')@10"``.

A spec is ``name``, optionally followed by ``(arguments)`` written as Python literals, optionally
followed by ``@k``. Arguments are parsed with :mod:`ast` (``literal_eval`` semantics), never
``eval``, so a spec from a config file or the command line cannot run code.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ctxeval.foundation.errors import Fix, SpecError

__all__ = ["ParsedSpec", "check_options", "parse_spec", "unknown_name"]

_SPEC = re.compile(
    r"""^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-.]*)\s*
        (?:\((?P<args>.*)\))?\s*
        (?:@\s*(?P<k>[^\s]+))?\s*$""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class ParsedSpec:
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    k: str | None
    """The text after ``@``, as written: :func:`ctxeval.cutoffs.cutoff.parse_spec_cutoff` reads
    it."""


_USAGE = "name, name(option=value, ...) or name@k, e.g. 'rouge-chunk(threshold=0.7)' or 'ndcg@10'"


def parse_spec(spec: str, *, what: str, usage: str = _USAGE, sequences: bool = False) -> ParsedSpec:
    """Split a spec string into name, literal arguments and cut-off ``k``.

    ``what`` names the kind of spec in error messages ("strategy", "measure"); ``usage`` is
    the forms that kind takes, with examples, for the message about a malformed spec.
    ``sequences`` admits lists (and tuples) of scalar literals as values, given as lists
    (a chunker's ``separators=['\\n\\n', ' ']``).
    """
    if not isinstance(spec, str):
        raise SpecError(f"a {what} spec must be a string, got {type(spec).__name__}")
    found = _SPEC.match(spec)
    if found is None:
        raise SpecError(f"{spec!r} is not a valid {what} spec; write {usage}")
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    if found["args"] is not None and found["args"].strip():
        try:
            call = ast.parse(f"f({found['args']})", mode="eval").body
        except (SyntaxError, MemoryError, RecursionError):
            raise SpecError(
                f"{spec!r}: the arguments in parentheses are not valid; write them as "
                f"option=value with Python literals, e.g. threshold=0.7 or gain='exponential'"
            ) from None
        assert isinstance(call, ast.Call)
        for keyword in call.keywords:
            if keyword.arg is None:
                raise SpecError(f"{spec!r}: '**' is not allowed in a spec")
            if keyword.arg in kwargs:
                raise SpecError(f"{spec!r}: option {keyword.arg!r} is given twice")
            kwargs[keyword.arg] = _literal(spec, keyword.value, sequences)
        args = tuple(_literal(spec, a, sequences) for a in call.args)
    return ParsedSpec(name=found["name"], args=args, kwargs=kwargs, k=found["k"])


_LITERAL_TYPES = (str, int, float, bool, type(None))


def _literal(spec: str, node: ast.expr, sequences: bool = False) -> Any:
    """A scalar literal (number, string, True/False/None), with ``sequences`` a list of them,
    or a SpecError."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _NOT_LITERAL
    if (
        sequences
        and isinstance(value, list | tuple)
        and all(isinstance(v, _LITERAL_TYPES) for v in value)
    ):
        return list(value)
    if not isinstance(value, _LITERAL_TYPES):
        hint = ""
        if isinstance(node, ast.Name) and node.id.lower() in _BOOLEAN_WORDS:  # split=yes
            hint = (
                f"; write {_BOOLEAN_WORDS[node.id.lower()]} for a yes/no option, or quote text "
                f"({node.id!r})"
            )
        elif isinstance(node, ast.Name):  # an unquoted word: tokenizer=unicode
            hint = f"; quote text values, e.g. {node.id!r} (on a shell, wrap the spec in quotes)"
        raise SpecError(
            f"{spec!r}: option values must be literals (numbers, quoted strings, True/False){hint}"
        )
    return value


_NOT_LITERAL = object()
_BOOLEAN_WORDS = {
    word: str(value)
    for value, words in ((True, ("true", "yes", "on")), (False, ("false", "no", "off")))
    for word in words
}


def _closest(name: str, candidates: list[str]) -> str | None:
    """The candidate most like ``name`` (difflib's ratio at least 0.6), also read without its
    first ``_``-part (``recal`` is as close to ``context_recall`` as to ``span_recall``); of
    equals, one alike as a whole name (``mapp``: ``map``, not ``gm_map``), then the first
    listed."""
    import difflib

    def likeness(candidate: str) -> tuple[float, bool]:
        lowered = candidate.lower()
        whole = difflib.SequenceMatcher(None, name.lower(), lowered).ratio()
        rest = difflib.SequenceMatcher(None, name.lower(), lowered.split("_", 1)[-1]).ratio()
        return max(whole, rest), whole >= rest

    best = max(candidates, key=likeness, default=None)  # the first of the most alike
    return best if best is not None and likeness(best)[0] >= 0.6 else None


def unknown_name(
    spec: object,
    what: str,
    name: str,
    known: list[str],
    *,
    also: list[str] | None = None,
    hint: str | None = None,
    none: str = "none exist",
    where: str | None = None,
    fixes: tuple[Fix, ...] = (),
) -> SpecError:
    """The one error for a name no registry knows (a strategy, measure, option, tokenizer,
    splitter, convention), with the closest known name as a suggestion (from ``known`` and the
    aliases in ``also``, which are not listed).

    The message starts with ``where`` when given (``"RankedRetrievalMetrics(convention='x')"``),
    else with the spec when it is more than the name.
    """
    candidates = [*known, *(also or [])]
    close = _closest(name, candidates)
    if where is not None:
        lead = f"{where}: "
    else:
        lead = f"{spec!r}: " if spec is not None and str(spec) != name else ""
    message = f"{lead}unknown {what} {name!r}"
    if close is not None:
        message += f"; did you mean {close!r}?"
    listed = ", ".join(repr(k) for k in known)
    message += f" (use one of {listed})" if known else f" ({none})"
    if hint:
        message += f"; {hint}"
    error = SpecError(message, fixes=fixes)
    error.suggestion = close  # the name suggested, or None: callers choose between errors by it
    return error


def check_options(
    spec: str, owner: str, options: Iterable[str], factory: Callable[..., object]
) -> None:
    """Raise the unknown-name error for the first option that ``factory`` (a class of a
    registry: strategy, splitter) does not take as a keyword; ``owner`` is its spec name."""
    accepted = [
        p.name
        for p in inspect.signature(factory).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    for option in options:
        if option not in accepted:
            raise unknown_name(spec, f"{owner} option", option, accepted, none="it has none")
