"""Checks of a function's parameters (choices, the empty-ground-truth policy, relevance levels),
with one message shape: ``Owner(name=value): what to use``."""

from __future__ import annotations

import numbers
from typing import Any, Literal

from ctxeval.foundation.errors import InvalidArgumentError

__all__ = [
    "EmptyGroundTruthPolicy",
    "check_choice",
    "check_policy",
    "check_relevance_level",
]


EmptyGroundTruthPolicy = Literal["zero", "skip", "error"]


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
