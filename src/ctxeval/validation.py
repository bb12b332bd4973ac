"""Checks of one record's fields, with messages that say what is wrong, where, and what to do.

These run on every metric call, so they are plain loops, not a schema library; the dataset
loaders validate whole files with pydantic and add the file and line to the same messages.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxeval.errors import InvalidArgumentError, InvalidRecordError, type_name

__all__ = [
    "EmptyGroundTruthPolicy",
    "GradedText",
    "check_choice",
    "check_k",
    "check_policy",
    "is_finite",
    "validate_ids",
    "validate_qrels",
    "validate_texts",
]

EmptyGroundTruthPolicy = Literal["zero", "skip", "error"]
_POLICIES = ("zero", "skip", "error")


@dataclass(frozen=True, slots=True)
class GradedText:
    text: str
    grade: float


def _sequence(value: object, field: str, location: str | None, what: str) -> list[Any]:
    if value is None:
        raise InvalidRecordError(
            f"{field} is missing (None); pass a list of {what} (an empty list if there are none)",
            field=field,
            location=location,
        )
    if isinstance(value, str | bytes):
        raise InvalidRecordError(
            f"{field} is a single string, not a list; wrap it: [{_preview(value)}]",
            field=field,
            location=location,
        )
    if _is_nan(value):
        raise InvalidRecordError(
            f"{field} is NaN (a missing value, often an empty CSV or DataFrame cell); pass a "
            f"list of {what}",
            field=field,
            location=location,
        )
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise InvalidRecordError(
            f"{field} must be a list of {what}, got {type_name(value)}",
            field=field,
            location=location,
        )
    return list(value)


def _preview(value: object, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 4] + "...'"


def is_finite(value: Any) -> bool:
    """``math.isfinite``, False (not an OverflowError) for integers too large for a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _bad_item(field: str, i: int | None, item: object, location: str | None, expected: str) -> None:
    where = field if i is None else f"{field}[{i}]"
    if item is None:
        reason = f"{where} is None; remove it or replace it with {expected}"
    elif _is_nan(item):
        reason = (
            f"{where} is NaN (a missing value, often an empty CSV or DataFrame cell); "
            f"remove it or replace it with {expected}"
        )
    else:
        reason = f"{where} is {type_name(item)} {_preview(item)}; every item must be {expected}"
    raise InvalidRecordError(reason, field=field, location=location)


def _check_grade(field: str, i: int, raw: object, location: str | None) -> float:
    if not _is_number(raw) or not is_finite(raw):
        raise InvalidRecordError(
            f"{field}[{i}] has grade {_preview(raw)}; a grade must be a finite number > 0",
            field=field,
            location=location,
        )
    grade = float(raw)  # type: ignore[arg-type]
    if grade <= 0:
        raise InvalidRecordError(
            f"{field}[{i}] has grade {grade}; ground-truth grades must be > 0 (leave "
            f"non-relevant text out of the ground truth)",
            field=field,
            location=location,
        )
    return grade


def validate_texts(
    value: object,
    field: str,
    *,
    location: str | None = None,
    graded: bool = False,
    allow_blank: bool = True,
) -> list[str] | list[GradedText]:
    """Check a list of context strings; with ``graded``, items may be ``{"text", "grade"}``.

    Returns plain strings when no item carries a grade, else :class:`GradedText` items (grade 1
    for plain strings). ``allow_blank=False`` rejects empty or whitespace-only items.
    """
    items = _sequence(value, field, location, "strings")
    if set(map(type, items)) == {str} and (allow_blank or all(map(str.strip, items))):
        return items  # plain, non-blank strings (the usual case): nothing to convert
    texts: list[str] = []
    grades: list[float] = []
    any_grade = False
    for i, item in enumerate(items):
        if isinstance(item, str):
            text, grade = item, 1.0
        elif graded and isinstance(item, Mapping) and "text" in item:
            text = item["text"]
            if not isinstance(text, str):
                _bad_item(f"{field}[{i}].text", None, text, location, "a string")
            grade = _check_grade(field, i, item.get("grade", 1), location)
            any_grade = True
        else:
            expected = 'a string or {"text": ..., "grade": ...}' if graded else "a string"
            _bad_item(field, i, item, location, expected)
        if not allow_blank and not text.strip():
            raise InvalidRecordError(
                f"{field}[{i}] is an empty string (or only whitespace); it can never be "
                "retrieved: remove it (a query with no ground truth at all is handled by "
                "empty_ground_truth='zero' | 'skip' | 'error')",
                field=field,
                location=location,
            )
        texts.append(text)
        grades.append(grade)
    if any_grade:
        return [GradedText(t, g) for t, g in zip(texts, grades, strict=True)]
    return texts


def validate_ids(value: object, field: str, *, location: str | None = None) -> list[Hashable]:
    """Check a ranked list of chunk/document ids (strings or integers)."""
    items = _sequence(value, field, location, "ids (strings or integers)")
    if set(map(type, items)) <= {str}:
        return items  # the usual case: nothing to check item by item
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, str | numbers.Integral):
            _bad_item(field, i, item, location, "an id (a string or an integer)")
    return items


def validate_qrels(
    value: object, field: str, *, location: str | None = None
) -> dict[Hashable, float]:
    """Check relevance judgments: a list of relevant ids (grade 1) or a ``{id: grade}`` map."""
    if (
        type(value) is dict
        and set(map(type, value)) <= {str}
        and set(map(type, value.values())) <= {int, float}
        and all(map(is_finite, value.values()))
    ):
        return {doc: float(grade) for doc, grade in value.items()}  # the common case, fast
    if isinstance(value, Mapping):
        qrels: dict[Hashable, float] = {}
        for i, (doc, grade) in enumerate(value.items()):
            if isinstance(doc, bool) or not isinstance(doc, str | int):
                _bad_item(field, i, doc, location, "an id (a string or an integer)")
            if not _is_number(grade) or not is_finite(grade):
                raise InvalidRecordError(
                    f"{field}[{doc!r}] has grade {_preview(grade)}; a grade must be a finite "
                    "number (0 for judged non-relevant)",
                    field=field,
                    location=location,
                )
            qrels[doc] = float(grade)
        return qrels
    return {doc: 1.0 for doc in validate_ids(value, field, location=location)}


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
    if not _is_number(level) or not level > 0:  # type: ignore[operator]
        raise InvalidArgumentError(
            f"{owner}(relevance_level={level!r}): the grade from which an id counts as "
            "relevant must be a number > 0 (trec_eval's default is 1)"
        )
    return float(level)  # type: ignore[arg-type]


def check_k(owner: str, k: object) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidArgumentError(
            f"{owner}(k={k!r}): k must be a whole number >= 1, or None for the whole list"
        )
    if k < 1:
        raise InvalidArgumentError(f"{owner}(k={k}): k must be >= 1, or None for the whole list")
    return int(k)
