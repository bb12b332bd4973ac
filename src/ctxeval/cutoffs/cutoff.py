"""Cut-offs: a count of chunks (``5``), a context budget (``"300w"``, ``"2000c"``, ``"512t"``), or
``None`` for the whole retrieved list.

A :class:`Budget` is a size: words (whitespace-separated), characters (``len(str)``) or tokens
(of the run's token counter). It is a value that prints as its spec, so ``recall@300w`` is the
same column in the API, the CLI, configs and result files. How chunks are taken up to a budget
is :mod:`ctxeval.cutoffs.budgets`; this module only says what a cut-off is.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ctxeval.foundation.errors import InvalidArgumentError, SpecError

__all__ = [
    "BUDGET_UNITS",
    "MAX_BUDGET",
    "MAX_K",
    "Budget",
    "BudgetUnit",
    "Cutoff",
    "budget_problem",
    "check_count",
    "check_k",
    "check_ks",
    "cutoff_key",
    "cutoff_label",
    "cutoff_problem",
    "parse_budget",
    "parse_spec_cutoff",
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
    """``"300w"`` -> ``Budget("w", 300)``; a :class:`~ctxeval.foundation.errors.SpecError` saying
    what is wrong otherwise."""
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


def parse_spec_cutoff(spec: str, text: str) -> int | Budget:
    """The cut-off after ``@`` in ``spec``: a whole number of chunks, or a budget such as
    ``300w``."""
    try:
        k = int(text)
    except ValueError:
        problem = budget_problem(text)
        if problem is not None:
            raise SpecError(
                f"{spec!r}: the cut-off after '@' must be a positive whole number or a budget "
                f"of at least 1, such as 300w (words), 2000c (characters), 512t (tokens); got "
                f"{text!r}"
            ) from None
        return parse_budget(text)
    if k < 1:
        raise SpecError(f"{spec!r}: the cut-off after '@' must be at least 1, got {k}")
    return k


#: The largest cut-off: beyond it numpy's integers could overflow, and no list is that long.
MAX_K = 2**31 - 1


def check_k(owner: str, k: object, *, lead: str | None = None) -> Cutoff:
    """A cut-off: a whole number in [1, MAX_K], a budget (``"300w"``, ``"2000c"``, ``"512t"``
    or a :class:`~ctxeval.cutoffs.cutoff.Budget`), or None for the whole list. A message
    starts with ``lead`` (``owner(k=...)`` by default)."""
    lead = f"{owner}(k={k!r})" if lead is None else lead
    if k is None or isinstance(k, Budget):
        return k
    if isinstance(k, str):
        problem = budget_problem(k)
        if problem:
            raise InvalidArgumentError(f"{lead}: {problem}")
        return parse_budget(k)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidArgumentError(
            f"{lead}: k must be a whole number >= 1, a budget such as '300w', "
            "'2000c' or '512t', or None for the whole list"
        )
    problem = cutoff_problem(int(k))
    if problem:
        raise InvalidArgumentError(f"{lead}: {problem}")
    return int(k)


def check_ks(owner: str, values: Sequence[object]) -> list[Cutoff]:
    """:func:`check_k` of each of a list of cut-offs, a message naming the list and the one at
    fault: ``run(k=[0, 5]): k[0]: k must be >= 1``."""
    return [
        check_k(owner, value, lead=f"{owner}(k={list(values)!r}): k[{i}]")
        for i, value in enumerate(values)
    ]


def check_count(owner: str, k: object) -> int | None:
    """A cut-off that counts items: a whole number in [1, MAX_K], or None (ID mode, where
    there are no texts to fill a budget with)."""
    found = check_k(owner, k)
    if isinstance(found, Budget):
        raise InvalidArgumentError(
            f"{owner}(k={k!r}): a budget needs the chunks' texts, and ID-mode metrics score "
            "ids; give a number of chunks, or None for the whole list"
        )
    return found


def cutoff_problem(k: int) -> str | None:
    """What is wrong with a whole-number cut-off, or None."""
    if k < 1:
        return "k must be >= 1, or None for the whole list"
    if k > MAX_K:
        return f"k must be at most {MAX_K} (2**31 - 1), or None for the whole list"
    return None
