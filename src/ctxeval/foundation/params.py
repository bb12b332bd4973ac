"""Checks of a function's parameters (choices, the empty-ground-truth policy, relevance levels,
whole numbers; :func:`check_parameters` applies a table of rules), with one message shape:
``Owner(name=value): what to use``."""

from __future__ import annotations

import functools
import numbers
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ctxeval.foundation.errors import InvalidArgumentError

__all__ = [
    "EmptyGroundTruthPolicy",
    "OneOf",
    "Rule",
    "WholeNumber",
    "check_choice",
    "check_parameters",
    "check_policy",
    "check_relevance_level",
    "own_init",
]


EmptyGroundTruthPolicy = Literal["zero", "skip", "error"]
_C = TypeVar("_C", bound=type)


_POLICIES = ("zero", "skip", "error")


def check_policy(owner: str, policy: object) -> EmptyGroundTruthPolicy:
    if policy in _POLICIES:
        return policy  # type: ignore[return-value]
    raise InvalidArgumentError(
        f"{owner}(empty_ground_truth={policy!r}): use 'zero' (score 0 and count the query), "
        f"'skip' (return None so aggregates leave the query out) or 'error'"
    )


def check_choice(owner: str, name: str, value: object, choices: tuple[str, ...]) -> Any:
    if value in choices:
        return value
    options = ", ".join(repr(c) for c in choices)
    raise InvalidArgumentError(f"{owner}({name}={value!r}): use one of {options}")


def check_relevance_level(owner: str, level: object) -> float:
    if not isinstance(level, numbers.Real) or isinstance(level, bool) or not level > 0:  # type: ignore[operator]
        raise InvalidArgumentError(
            f"{owner}(relevance_level={level!r}): the grade from which an id counts as "
            "relevant must be a number > 0 (trec_eval's default is 1)"
        )
    return float(level)


@dataclass(frozen=True)
class WholeNumber:
    """A rule: a whole number >= ``minimum`` (``True`` is not a number); None too when ``none``
    says what it means (``"for every core"``). ``means`` follows the demand in the message
    (``" (1 scores in this process)"``)."""

    minimum: int = 1
    none: str | None = None
    means: str = ""

    def check(self, owner: str, name: str, value: object) -> int | None:
        if value is None and self.none is not None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < self.minimum:
            instead = f", or None {self.none}" if self.none is not None else ""
            raise InvalidArgumentError(
                f"{owner}({name}={value!r}): give a whole number >= {self.minimum}"
                f"{self.means}{instead}"
            )
        return value


@dataclass(frozen=True)
class OneOf:
    """A rule: one of ``choices``."""

    choices: tuple[str, ...]

    def check(self, owner: str, name: str, value: object) -> Any:
        return check_choice(owner, name, value, self.choices)


Rule = WholeNumber | OneOf


def check_parameters(owner: str, rules: Mapping[str, Rule], **values: object) -> dict[str, Any]:
    """Each of ``values`` checked by its rule in ``rules`` (the one table of a function's
    parameter rules), in the table's order: the first broken rule raises, naming ``owner``."""
    return {name: rule.check(owner, name, values[name]) for name, rule in rules.items()}


def own_init(cls: _C) -> _C:
    """Give the public class ``cls`` its own copy of the ``__init__`` it inherits, named
    ``Cls.__init__``, so that Python's errors for a wrong argument (``got an unexpected keyword
    argument``) name the class the user called rather than a base (``_RougeMatch``). A class
    decorator for the classes users construct: on a mixin the copy would come before a later
    base's ``__init__`` in its subclasses' method order."""
    init = getattr(cls, "__init__")  # noqa: B009 (the class attribute, as mypy cannot type it)
    if "__init__" in vars(cls) or not isinstance(init, types.FunctionType):
        return cls
    copy = types.FunctionType(
        init.__code__, init.__globals__, init.__name__, init.__defaults__, init.__closure__
    )
    functools.update_wrapper(copy, init)
    copy.__kwdefaults__ = init.__kwdefaults__
    copy.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", copy)  # noqa: B010
    return cls
