"""Ties: groups of equal retrieval scores in a ranked list, where each ends."""

from __future__ import annotations

from ctxeval.foundation.errors import InvalidRecordError

__all__ = [
    "ranked_tie_ends",
]


def ranked_tie_ends(
    scores: list[float], field: str, *, location: str | None = None
) -> tuple[int, ...]:
    """Where each group of equal scores ends (exclusive) in a list ranked best first; raises
    when a score is higher than the one before it (the list is not ranked by its scores)."""
    ends = []
    for i in range(1, len(scores)):
        before, score = scores[i - 1], scores[i]
        if score > before:
            raise InvalidRecordError(
                f"{field}[{i}] = {score!r} is higher than {field}[{i - 1}] = {before!r}; "
                "ties='average' averages over equal scores, which must be next to each other: "
                "list the retrieved items best first, by score, highest first (for distances, "
                "where lower is closer, negate them)",
                field=field,
                location=location,
            )
        if score != before:
            ends.append(i)
    return (*ends, len(scores)) if scores else ()
