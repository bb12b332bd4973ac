"""Cut-offs: a count of chunks (``5``), a context budget (``"300w"``, ``"2000c"``, ``"512t"``), or
``None`` for the whole retrieved list.

A :class:`Budget` is a size: words (whitespace-separated), characters (``len(str)``) or tokens
(of the run's token counter). It is a value that prints as its spec, so ``recall@300w`` is the
same column in the API, the CLI, configs and result files. How chunks are taken up to a budget
is :mod:`ctxeval.cutoffs.budgets`; this module only says what a cut-off is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ctxeval.foundation.errors import SpecError

__all__ = [
    "BUDGET_UNITS",
    "MAX_BUDGET",
    "Budget",
    "BudgetUnit",
    "Cutoff",
    "budget_problem",
    "cutoff_key",
    "cutoff_label",
    "parse_budget",
    "sort_cutoffs",
]

BudgetUnit = Literal["w", "c", "t"]
BUDGET_UNITS: dict[str, str] = {"w": "words", "c": "characters", "t": "tokens"}
MAX_BUDGET = 2**31 - 1

_BUDGET = re.compile(r"^\s*(?P<size>[+-]?\d+)\s*(?P<unit>[A-Za-z]*)\s*$")
USAGE = "a size: '300w' (words), '2000c' (characters), '512t' (tokens)"


@dataclass(frozen=True, order=True)
class Budget:
    """A context budget: ``size`` words, characters or tokens. ``str(b)`` is ``"300w"``."""

    unit: BudgetUnit
    size: int

    def __str__(self) -> str:
        return f"{self.size}{self.unit}"

    def __repr__(self) -> str:
        return f"Budget({str(self)!r})"

    @property
    def unit_name(self) -> str:
        return BUDGET_UNITS[self.unit]


Cutoff = int | Budget | None


def budget_problem(text: str) -> str | None:
    """What is wrong with a budget string such as ``"300w"``, or None when it is one."""
    found = _BUDGET.match(text)
    if found is None:
        return f"{text!r} is not a cut-off; k must be a whole number >= 1 or {USAGE}"
    unit = found["unit"].lower()
    if not unit:
        return f"{text!r} is text without a unit; k must be a whole number >= 1 or {USAGE}"
    if unit not in BUDGET_UNITS:
        return f"{text!r}: unknown budget unit {found['unit']!r}; give {USAGE}"
    size = int(found["size"])
    if size < 1:
        return f"{text!r}: a budget must be 1 or more {BUDGET_UNITS[unit]}"
    if size > MAX_BUDGET:
        return f"{text!r}: a budget must be at most {MAX_BUDGET} {BUDGET_UNITS[unit]}"
    return None


def parse_budget(text: str) -> Budget:
    """``"300w"`` -> ``Budget("w", 300)``; a :class:`~ctxeval.foundation.errors.SpecError` saying what is
    wrong otherwise."""
    problem = budget_problem(text)
    if problem is not None:
        raise SpecError(problem)
    found = _BUDGET.match(text)
    assert found is not None
    return Budget(found["unit"].lower(), int(found["size"]))  # type: ignore[arg-type]


def cutoff_key(k: Cutoff) -> tuple[int, str, int]:
    """Sort key: counts (ascending), then budgets by unit and size, then ``None`` last."""
    if k is None:
        return (2, "", 0)
    if isinstance(k, Budget):
        return (1, k.unit, k.size)
    return (0, "", k)


def sort_cutoffs(ks: Iterable[Cutoff]) -> tuple[Cutoff, ...]:
    """Distinct cut-offs in :func:`cutoff_key` order."""
    return tuple(sorted(set(ks), key=cutoff_key))


def cutoff_label(k: Cutoff) -> str:
    """The cut-off as written after ``@``: ``"5"``, ``"300w"``; ``"all"`` for the whole list."""
    return "all" if k is None else str(k)
