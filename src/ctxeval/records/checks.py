"""Checks of one record's fields, with messages that say what is wrong, where, and what to do.

These run on every metric call, so they are plain loops, not a schema library; the dataset
loaders validate whole files with pydantic and add the file and line to the same messages.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from ctxeval.foundation.errors import Fix, InvalidRecordError, type_name
from ctxeval.records.values import GradedText, Span

__all__ = [
    "DOCUMENT_TEXT_KEYS",
    "MAX_DEPTH",
    "MAX_GRADE",
    "document_text",
    "find_unwritable",
    "is_finite",
    "plain_qrels",
    "plainly_writable",
    "preview",
    "validate_ids",
    "validate_qrels",
    "validate_scores",
    "validate_spans",
    "validate_texts",
]


#: The largest grade: NDCG's sums stay finite with it, also with exponential gain (2**1000 - 1,
#: summed over up to 2**23 relevant units). Grades are judgments (0-4 in TREC), not scores.
MAX_GRADE = 1000
#: How deeply a value kept with a record (metadata) may nest lists and objects: deeper values
#: cannot be sent to worker processes (pickle gives up near 500 levels) nor saved reliably.
MAX_DEPTH = 100


def _sequence(value: object, field: str, location: str | None, what: str) -> list[Any]:
    if value is None:
        raise InvalidRecordError(
            f"{field} is missing (None); pass a list of {what} (an empty list if there are none)",
            field=field,
            location=location,
        )
    if isinstance(value, str | bytes):
        raise InvalidRecordError(
            f"{field} is a single string, not a list; wrap it: [{_json_preview(value)}]",
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


def preview(value: object, width: int = 40) -> str:
    """``repr(value)``, cut to ``width`` characters for a message."""
    text = repr(value)
    if len(text) <= width:
        return text
    return text[: width - 4] + ("...'" if text[0] in "'\"" else "...")


def _json_preview(text: str | bytes, width: int = 40) -> str:
    """A string as JSON (the same in Python), cut to about ``width`` characters."""
    if isinstance(text, bytes):
        return preview(text, width)
    shown = text if len(text) <= width else text[: width - 3] + "..."
    return json.dumps(shown, ensure_ascii=False)


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


def _bad_item(
    field: str,
    i: int | None,
    item: object,
    location: str | None,
    expected: str,
    fixes: tuple[Fix, ...] = (),
) -> None:
    where = field if i is None else f"{field}[{i}]"
    if item is None:
        reason = f"{where} is None; remove it or replace it with {expected}"
    elif _is_nan(item):
        reason = (
            f"{where} is NaN (a missing value, often an empty CSV or DataFrame cell); "
            f"remove it or replace it with {expected}"
        )
    else:
        reason = f"{where} is {type_name(item)} {preview(item)}; every item must be {expected}"
    raise InvalidRecordError(reason, field=field, location=location, fixes=fixes)


_TOO_HIGH = (
    f"grades must be at most {MAX_GRADE}: larger ones overflow NDCG's sums (exponential gain "
    "2**grade - 1 overflows above 1023); rescale the grades"
)


def _check_grade(field: str, i: int, raw: object, location: str | None) -> float:
    if not _is_number(raw) or not is_finite(raw):
        raise InvalidRecordError(
            f"{field}[{i}] has grade {preview(raw)}; a grade must be a finite number > 0",
            field=field,
            location=location,
        )
    grade = float(raw)  # type: ignore[arg-type]
    if grade > MAX_GRADE:
        raise InvalidRecordError(
            f"{field}[{i}] has grade {preview(raw)}; {_TOO_HIGH}",
            field=field,
            location=location,
        )
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
        elif graded and isinstance(item, Mapping) and "grade" in item and "text" in item:
            text = item["text"]
            if not isinstance(text, str):
                _bad_item(f"{field}[{i}].text", None, text, location, "a string")
            grade = _check_grade(field, i, item["grade"], location)
            any_grade = True
        elif (found := document_text(item)) is not None:
            text, grade = found, 1.0
        else:
            expected = 'a string or {"text": ..., "grade": ...}' if graded else "a string"
            _bad_item(field, i, item, location, expected + _DOCUMENTS, (_TEXT_KEY_FIX,))
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


# Where documents of other libraries keep their text: LangChain's Document (page_content),
# llama-index's nodes (text), Haystack's Document and chroma's references (content).
DOCUMENT_TEXT_KEYS = ("page_content", "text", "content")
_DOCUMENTS = (
    " (or a document with its text under 'page_content', 'text' or 'content'; name another "
    'key with fields={"text_key": ...})'
)
_TEXT_KEY_FIX = Fix("fields", {"text_key": None}, 'fields={"text_key": ...}')


def document_text(item: object, key: str | None = None) -> str | None:
    """The text of a document-like item: a mapping's ``key`` (by default the first of
    :data:`DOCUMENT_TEXT_KEYS` it has) or an object's attribute of that name (a LangChain
    ``Document``), when it is a string; else None."""
    keys = DOCUMENT_TEXT_KEYS if key is None else (key,)
    if isinstance(item, Mapping):
        for name in keys:
            if name in item:
                value = item[name]
                return value if isinstance(value, str) else None
        return None
    for name in keys:
        value = getattr(item, name, None)
        if value is not None:
            return value if isinstance(value, str) else None
    return None


def validate_ids(value: object, field: str, *, location: str | None = None) -> list[Hashable]:
    """Check a ranked list of chunk/document ids (strings or integers)."""
    items = _sequence(value, field, location, "ids (strings or integers)")
    if set(map(type, items)) <= {str}:
        return items  # the usual case: nothing to check item by item
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, str | numbers.Integral):
            _bad_item(field, i, item, location, "an id (a string or an integer)")
    return items


def plain_qrels(value: object) -> dict[str, float] | None:
    """The common case of :func:`validate_qrels`, checked fast: a dict of string ids to
    finite ``int`` or ``float`` grades up to :data:`MAX_GRADE`, its grades as floats; None
    for anything else (which :func:`validate_qrels` looks at closer)."""
    if (
        type(value) is dict
        and set(map(type, value)) <= {str}
        and set(map(type, value.values())) <= {int, float}
        and all(map(is_finite, value.values()))
        and max(value.values(), default=0) <= MAX_GRADE
    ):
        return {doc: float(grade) for doc, grade in value.items()}
    return None


def validate_qrels(
    value: object, field: str, *, location: str | None = None
) -> dict[Hashable, float]:
    """Check relevance judgments: a list of relevant ids (grade 1) or a ``{id: grade}`` map."""
    plain = plain_qrels(value)
    if plain is not None:
        return plain  # type: ignore[return-value]
    if isinstance(value, Mapping):
        qrels: dict[Hashable, float] = {}
        for i, (doc, grade) in enumerate(value.items()):
            if isinstance(doc, bool) or not isinstance(doc, str | int):
                _bad_item(field, i, doc, location, "an id (a string or an integer)")
            if not _is_number(grade) or not is_finite(grade):
                raise InvalidRecordError(
                    f"{field}[{doc!r}] has grade {preview(grade)}; a grade must be a finite "
                    "number (0 for judged non-relevant)",
                    field=field,
                    location=location,
                )
            if grade > MAX_GRADE:
                raise InvalidRecordError(
                    f"{field}[{doc!r}] has grade {preview(grade)}; {_TOO_HIGH}",
                    field=field,
                    location=location,
                )
            qrels[doc] = float(grade)
        return qrels
    return {doc: 1.0 for doc in validate_ids(value, field, location=location)}


# -- values kept with a record and written back (metadata, ids) ------------------------------

_CONTAINERS = (list, tuple, dict)


def find_unwritable(value: object, field: str, *, text: bool = True) -> str | None:
    """The message for the first part of ``value`` that could not be written back, or None:
    a string (or object key) holding a lone surrogate (``"\\ud800"``, a valid JSON escape
    that no UTF-8 file can hold), or lists and objects nested more than :data:`MAX_DEPTH`
    levels deep. The message names the place (``field[2]["k"]``) and the fix. With
    ``text=False`` only the nesting is checked (strings are not looked at)."""
    stack: list[tuple[Any, str, int]] = [(value, field, 0)]
    while stack:
        item, where, depth = stack.pop()
        if type(item) is str:
            position = _surrogate_at(item) if text else None
            if position is not None:
                return _surrogate_message(where, item, position)
            continue
        if not _worth_a_look(item, text):
            continue
        if depth >= MAX_DEPTH:
            return (
                f"{field} nests lists or objects more than {MAX_DEPTH} levels deep (at "
                f"{_shorten(where)}); flatten it, or store it as a string"
            )
        if not text and _flat(item):
            continue
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if text and type(key) is str and _surrogate_at(key) is not None:
                    return _surrogate_message(f"a key of {where}", key, _surrogate_at(key) or 0)
                if _worth_a_look(inner, text):
                    stack.append((inner, f"{where}[{key!r}]", depth + 1))
        elif text and _clean_strings(item):
            continue
        else:
            stack.extend(
                (inner, f"{where}[{i}]", depth + 1)
                for i, inner in reversed(list(enumerate(item)))
                if _worth_a_look(inner, text)
            )
    return None


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat(item: Any) -> bool:
    """A list or dict of plain scalars: nothing nests inside (one C-level pass)."""
    values = item.values() if isinstance(item, Mapping) else item
    return _SCALARS.issuperset(map(type, values))


def _worth_a_look(value: object, text: bool) -> bool:
    """Whether ``value`` may hold a surrogate or nest (numbers, None, ... cannot)."""
    kind = type(value)
    if kind is str:
        return text
    return kind in _CONTAINERS or isinstance(value, list | tuple | Mapping)


_STR = frozenset({str})


def _clean_strings(items: Iterable[Any]) -> bool:
    """True when every item is a string and none holds a surrogate."""
    return _STR.issuperset(map(type, items)) and _no_surrogates(items)


def _no_surrogates(strings: Iterable[str]) -> bool:
    """True when no string holds a surrogate. ``isascii`` is a flag check; only the strings
    beyond ASCII are encoded, one by one (joining them first would widen every string to the
    widest one's form, and cost more than the check)."""
    try:
        for text in itertools.filterfalse(str.isascii, strings):
            text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def plainly_writable(record: dict[Any, Any]) -> bool:
    """The fast answer for the usual record: True when its keys are strings and its values
    strings, numbers, None, flat lists of strings or flat dicts of strings to numbers (qrels),
    none holding a surrogate (then :func:`find_unwritable` would find nothing). False means
    "look closer", not "bad"."""
    for key, value in record.items():
        if type(key) is not str or not (key.isascii() or _no_surrogates((key,))):
            return False
        kind = type(value)
        if kind is str:
            if not (value.isascii() or _no_surrogates((value,))):
                return False
        elif kind is list:
            if not _clean_strings(value):
                return False
        elif kind is dict:
            if not (
                _clean_strings(value.keys()) and _NUMBERS.issuperset(map(type, value.values()))
            ):
                return False
        elif kind not in _SCALARS:
            return False
    return True


_NUMBERS = frozenset({int, float, bool, type(None)})


def _surrogate_at(text: str) -> int | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _shorten(where: str) -> str:
    return where if len(where) <= 60 else where[:28] + "..." + where[-28:]


def _surrogate_message(where: str, text: str, position: int) -> str:
    code = ord(text[position])
    return (
        f"{_shorten(where)} holds a lone surrogate \\u{code:04x} at character {position} (a "
        'JSON escape such as "\\ud800" without its pair, or text decoded with '
        "errors='surrogateescape'); no UTF-8 file can hold it: fix or remove the character"
    )


_SPAN_SHAPE = '{"doc": "name", "start": 0, "end": 12}'


def validate_spans(
    value: object, field: str, count: int, *, texts_field: str, location: str | None = None
) -> list[Span | None]:
    """A list of ``count`` spans (``{"doc", "start", "end"}``, or None when unknown), parallel
    to the texts in ``texts_field``. A string is read as JSON (a CSV cell)."""
    value = _json_cell(value, field, location, f"of spans like [{_SPAN_SHAPE}] (null when unknown)")
    items = _sequence(value, field, location, "spans")
    if len(items) != count:
        raise InvalidRecordError(
            f"{field} has {len(items)} span(s) but {texts_field} has {count} text(s); give one "
            "span per text, in the same order (null for a text whose span is unknown)",
            field=field,
            location=location,
        )
    return [_span(item, f"{field}[{i}]", field, location) for i, item in enumerate(items)]


def _span(item: object, where: str, field: str, location: str | None) -> Span | None:
    if item is None or _is_nan(item):
        return None
    if not isinstance(item, Mapping):
        raise InvalidRecordError(
            f"{where} is {type_name(item)} {preview(item)}; a span is an object like "
            f"{_SPAN_SHAPE}, or null when unknown",
            field=field,
            location=location,
        )
    doc, start, end = item.get("doc"), item.get("start"), item.get("end")
    if not isinstance(doc, str) or not doc:
        raise InvalidRecordError(
            f"{where}: doc must be a document name (a non-empty string), got {preview(doc)}; "
            f"a span is an object like {_SPAN_SHAPE}",
            field=field,
            location=location,
        )
    for name, offset in (("start", start), ("end", end)):
        if not isinstance(offset, numbers.Integral) or isinstance(offset, bool) or offset < 0:
            raise InvalidRecordError(
                f"{where}: {name} must be a whole number >= 0 (a character offset into the "
                f"document), got {preview(offset)}",
                field=field,
                location=location,
            )
    if start > end:  # type: ignore[operator]
        raise InvalidRecordError(
            f"{where}: start {start} is after end {end}; a span is doc[start:end] with start <= "
            "end",
            field=field,
            location=location,
        )
    return Span(doc, int(start), int(end))  # type: ignore[arg-type]


def _json_cell(value: object, field: str, location: str | None, what: str) -> object:
    """A string (a CSV cell) read as JSON; any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise InvalidRecordError(
            f"{field} must be a JSON list {what}; got {preview(value)}",
            field=field,
            location=location,
        ) from None


def validate_scores(
    value: object, field: str, count: int, *, items_field: str, location: str | None = None
) -> list[float]:
    """A list of ``count`` finite scores (the retriever's, higher is better), parallel to the
    retrieved items in ``items_field``. A string is read as JSON (a CSV cell)."""
    items = _sequence(
        _json_cell(value, field, location, "of numbers like [0.9, 0.7]"), field, location, "numbers"
    )
    if len(items) != count:
        raise InvalidRecordError(
            f"{field} has {len(items)} score(s) but {items_field} has {count} item(s); give one "
            "score per retrieved item, in the same order",
            field=field,
            location=location,
        )
    if set(map(type, items)) <= {float} and all(map(math.isfinite, items)):
        return items  # the usual case: nothing to check item by item
    for i, item in enumerate(items):
        if not _is_number(item) or not is_finite(item):
            _bad_item(field, i, item, location, "a finite number (the item's retrieval score)")
    return [float(item) for item in items]
