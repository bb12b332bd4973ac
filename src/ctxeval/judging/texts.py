"""Judging one record of texts: split into units, matched once by its strategy, credited.

:func:`judge_texts` is what a text metric does to one record (checks, units, one ``match`` call,
:func:`~ctxeval.judging.judgments.judge_matrix`); :func:`ground_truth_units` the distinct
ground-truth units it matches against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ctxeval.judging.judgments import (
    Credit,
    Judgments,
    judge_matrix,
    scored_tie_ends,
    with_tie_ends,
)
from ctxeval.matching.base import MatchingStrategy, as_matches
from ctxeval.matching.builtin import BuiltinStrategy
from ctxeval.records.checks import validate_texts
from ctxeval.records.values import GradedText

__all__ = [
    "JudgedRecord",
    "ground_truth_units",
    "judge_texts",
]


@dataclass(frozen=True, slots=True)
class JudgedRecord:
    judgments: Judgments
    tokenless: tuple[str, ...]


def ground_truth_units(
    strategy: MatchingStrategy, items: list[str] | list[GradedText]
) -> tuple[list[str], list[float] | None]:
    """Distinct ground-truth units in first-seen order; a repeated unit keeps its best grade."""
    graded = bool(items) and isinstance(items[0], GradedText)
    if not graded and strategy.unit == "chunk" and isinstance(strategy, BuiltinStrategy):
        return list(dict.fromkeys(items)), None  # type: ignore[arg-type]
    best: dict[str, float] = {}
    for item in items:
        text, grade = (item.text, item.grade) if isinstance(item, GradedText) else (item, 1.0)
        for unit in strategy.units([text]):
            if grade > best.get(unit, 0.0):
                best[unit] = grade
    return list(best), (list(best.values()) if graded else None)


def judge_texts(
    strategy: MatchingStrategy,
    retrieved_context: object,
    ground_truth_context: object,
    *,
    k: int | None = None,
    location: str | None = None,
    credit: Credit = "matching",
    validated: bool = False,
    retrieved_scores: object = None,
    tie_groups: bool = False,
) -> JudgedRecord:
    """Validate one record, split it into units, match it once and judge it (top ``k`` chunks).

    ``validated=True`` skips the checks for a record the dataset reader has already validated.
    ``retrieved_scores``, when given, are checked, and their groups of equal scores kept when
    ``tie_groups`` (chunk units only: rank measures need them).
    """
    retrieved: list[str] | list[GradedText]
    ground_truth: list[str] | list[GradedText]
    if validated:
        retrieved = cast("list[str]", retrieved_context)
        ground_truth = cast("list[str] | list[GradedText]", ground_truth_context)
    else:
        retrieved = validate_texts(retrieved_context, "retrieved_context", location=location)
        ground_truth = validate_texts(
            ground_truth_context,
            "ground_truth_context",
            location=location,
            graded=True,
            allow_blank=False,
        )
    chunks = [r for r in retrieved if isinstance(r, str)]
    ends = scored_tie_ends(
        retrieved_scores,
        len(chunks),
        items_field="retrieved_context",
        needed=tie_groups and strategy.unit == "chunk",
        location=location,
    )
    if k is not None:
        chunks = chunks[:k]
    gt_units, grades = ground_truth_units(strategy, ground_truth)
    if strategy.unit == "sentence":
        r_units: list[str] = []
        chunk_ends: list[int] | None = []
        for chunk in chunks:
            r_units.extend(strategy.units([chunk]))
            chunk_ends.append(len(r_units))  # type: ignore[union-attr]
    else:
        r_units, chunk_ends = chunks, None
    matches = as_matches(strategy.match(r_units, gt_units), len(r_units), len(gt_units), strategy)
    judgments = judge_matrix(matches.relevant, grades, chunk_ends=chunk_ends, credit=credit)
    return JudgedRecord(with_tie_ends(judgments, ends), matches.tokenless)
