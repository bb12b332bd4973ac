"""Records as the evaluator consumes them, and the schema that says what a valid one holds.

A dataset is a stream of records, one query each. :mod:`ctxeval.io` reads files, DataFrames and
iterables into :class:`Record` (a good record) and :class:`RecordError` (a bad one, with its
location, field and the fix); the evaluator decides whether an error stops the run or is counted
and skipped.

What a valid record is, is defined once, by two pydantic models: :class:`TextRecordSchema` (text
mode: contexts) and :class:`IdRecordSchema` (ID mode: chunk ids). Their fields carry the
canonical names (those :func:`ctxeval.io.convert.record_to_dict` writes); datasets with other
names are mapped onto them by :mod:`ctxeval.io.fields`. Their validators are the checks the metrics
run (:mod:`ctxeval.records.checks`), so a record gets the same message wherever it comes from.
:func:`record_json_schema` gives their JSON Schema. Nothing here reads a file.

``TextRecordSchema.model_validate({"retrieved_context": [...], "ground_truth_context": [...]})``
checks one record as the readers do (the model's docstrings are the schema's descriptions, so
they stay plain text); an invalid record raises ``pydantic.ValidationError``, whose errors wrap
:class:`~ctxeval.foundation.errors.InvalidRecordError` with ctxeval's message, and
:func:`validation_problems` lists them as ``(field, message)``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from ctxeval.foundation.errors import Fix, InvalidRecordError, type_name
from ctxeval.foundation.params import check_choice
from ctxeval.records.checks import (
    document_text,
    preview,
    validate_ids,
    validate_qrels,
    validate_scores,
    validate_spans,
    validate_texts,
)
from ctxeval.records.values import GradedText, Span

__all__ = [
    "SCORE_FIELD",
    "SPAN_FIELDS",
    "SPAN_NAMES",
    "IdRecordSchema",
    "Mode",
    "Record",
    "RecordError",
    "SchemaKeys",
    "TextRecordSchema",
    "claimed_id",
    "plain_text_record",
    "record_json_schema",
    "record_schema",
    "validation_fixes",
    "validation_problems",
    "with_document_texts",
]

Mode = Literal["text", "id"]


@dataclass(frozen=True, slots=True)
class Record:
    """One validated query.

    - ``index``: 0-based position in the input stream (bad records count too), so results can be
      put back in input order;
    - ``id``: the record's id (from the data, or ``"#<index>"`` when it has none);
    - ``location``: where it came from, for messages (``"runs/a.jsonl:12"``, ``"row 3"``);
    - ``mode``: ``"text"`` (contexts) or ``"id"`` (chunk ids);
    - text mode: ``retrieved`` is ``list[str]``, ``ground_truth`` is ``list[str]`` or
      ``list[GradedText]``;
    - ID mode: ``retrieved`` is a list of ids, ``ground_truth`` is ``{id: grade}``;
    - ``metadata``: every other field of the input record (question, tags, ...), passed through
      to per-query results;
    - text mode: ``retrieved_spans`` and ``ground_truth_spans``, when the record gives them: one
      :class:`~ctxeval.records.checks.Span` (or None, unknown) per text, in the same order;
    - ``retrieved_scores``, when the record gives them: the retriever's score of each retrieved
      item, in the same order (``ndcg(ties='average')`` averages gains over equal scores).
    """

    index: int
    id: str
    location: str
    mode: Mode
    retrieved: list[Any]
    ground_truth: list[str] | list[GradedText] | dict[Hashable, float]
    metadata: dict[str, Any] = field(default_factory=dict)
    retrieved_spans: list[Span | None] | None = None
    ground_truth_spans: list[Span | None] | None = None
    retrieved_scores: list[float] | None = None


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record that cannot be scored: ``str(error)`` says where, which field, why and the fix."""

    index: int
    id: str | None
    location: str
    field: str | None
    message: str
    fixes: tuple[Fix, ...] = ()
    """The fixes ``message`` names (see :class:`~ctxeval.foundation.errors.Fix`)."""

    def __str__(self) -> str:
        who = f" (record {self.id!r})" if self.id is not None else ""
        return f"{self.location}{who}: {self.message}"


# --- the schema ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchemaKeys:
    """The names a schema gives the retrieved, ground-truth and id fields of a record."""

    retrieved: str
    ground_truth: str
    id: str = "id"


# The models' aliases spell these out again (mypy wants literals there); a test checks that they
# agree.
_TEXT_KEYS = SchemaKeys("retrieved_context", "ground_truth_context")
_ID_KEYS = SchemaKeys("retrieved_ids", "qrels")

SPAN_FIELDS: dict[str, tuple[str, ...]] = {
    "retrieved": ("retrieved_spans", "retrieved_context_spans"),
    "ground_truth": ("ground_truth_spans", "ground_truth_context_spans"),
}
"""The names a text-mode record's span fields may have (canonical name first), by role."""

SPAN_NAMES = frozenset(name for names in SPAN_FIELDS.values() for name in names)
"""Every name of :data:`SPAN_FIELDS`, whatever the role."""

SCORE_FIELD = "retrieved_scores"
"""The name of a record's field of retrieval scores, found without being named (any other
name is given as ``fields={"scores": ...}``)."""

_SPAN: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "doc": {"type": "string", "minLength": 1},
                "start": {"type": "integer", "minimum": 0},
                "end": {"type": "integer", "minimum": 0},
            },
            "required": ["doc", "start", "end"],
        },
        {"type": "null"},
    ]
}
_SPANS: dict[str, Any] = {"type": "array", "items": _SPAN}

_NON_BLANK: dict[str, Any] = {"type": "string", "pattern": r"\S"}
_DOC_ID: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
_RECORD_ID: dict[str, Any] = {"anyOf": [_NON_BLANK, {"type": "integer"}]}
_GRADED_TEXT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": _NON_BLANK,
        "grade": {"type": "number", "exclusiveMinimum": 0, "default": 1},
    },
    "required": ["text"],
}


def _input_name(info: ValidationInfo, key: str) -> str:
    """The dataset's own name of a field, for messages: the reader passes its names as the
    validation context; a record validated directly is named by the schema's keys."""
    names = info.context
    return names.get(key, key) if isinstance(names, Mapping) else key


def _reject_nan(value: object, field: str, what: str) -> None:
    if isinstance(value, float) and math.isnan(value):
        raise InvalidRecordError(
            f"{field} is NaN (a missing value, often an empty CSV or DataFrame cell); pass a "
            f"list of {what} (an empty list if there are none)",
            field=field,
        )


def _record_id(value: object, info: ValidationInfo) -> str:
    field = _input_name(info, "id")
    if isinstance(value, str):
        if value.strip():
            return value
        reason = "is an empty string"
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    elif value is None:
        reason = "is missing (None)"
    elif isinstance(value, float) and math.isnan(value):
        reason = "is NaN (a missing value, often an empty CSV or DataFrame cell)"
    elif isinstance(value, float):
        reason = (
            f"is a float ({value!r}); an id must be a string or an integer (integer ids read "
            "as floats when their column has empty cells)"
        )
    else:
        reason = f"is {type_name(value)} {value!r:.40}; an id must be a string or an integer"
    raise InvalidRecordError(
        f"{field} {reason}; give every record a unique id, or leave the {field!r} field out "
        "of every record",
        field=field,
    )


def _retrieved_texts(value: object, info: ValidationInfo) -> list[str]:
    field = _input_name(info, _TEXT_KEYS.retrieved)
    _reject_nan(value, field, "strings")
    return validate_texts(value, field)  # type: ignore[return-value]


def _ground_truth_texts(value: object, info: ValidationInfo) -> list[str] | list[GradedText]:
    field = _input_name(info, _TEXT_KEYS.ground_truth)
    _reject_nan(value, field, "strings")
    return validate_texts(value, field, graded=True, allow_blank=False)


def _retrieved_ids(value: object, info: ValidationInfo) -> list[str]:
    field = _input_name(info, _ID_KEYS.retrieved)
    _reject_nan(value, field, "ids")
    ids = validate_ids(value, field)
    return ids if set(map(type, ids)) <= {str} else [str(doc) for doc in ids]  # type: ignore[return-value]


def _qrels(value: object, info: ValidationInfo) -> dict[str, float]:
    field = _input_name(info, _ID_KEYS.ground_truth)
    _reject_nan(value, field, "ids")
    qrels = validate_qrels(value, field)
    if set(map(type, qrels)) <= {str}:
        return qrels  # type: ignore[return-value]
    return {str(doc): grade for doc, grade in qrels.items()}


def _spans(
    value: object, info: ValidationInfo, role: str, texts_key: str
) -> list[Span | None] | None:
    if value is None:
        return None
    field = _input_name(info, SPAN_FIELDS[role][0])
    texts = info.data.get(role)
    # When the texts were invalid their own error is reported; the spans are checked alone.
    count = len(texts) if isinstance(texts, list) else len(value) if isinstance(value, list) else 0
    return validate_spans(value, field, count, texts_field=_input_name(info, texts_key))


def _retrieved_spans(value: object, info: ValidationInfo) -> list[Span | None] | None:
    return _spans(value, info, "retrieved", _TEXT_KEYS.retrieved)


def _ground_truth_spans(value: object, info: ValidationInfo) -> list[Span | None] | None:
    return _spans(value, info, "ground_truth", _TEXT_KEYS.ground_truth)


def _scores(value: object, info: ValidationInfo, items_key: str) -> list[float] | None:
    if value is None:
        return None
    items = info.data.get("retrieved")
    # When the items were invalid their own error is reported; the scores are checked alone.
    count = len(items) if isinstance(items, list) else len(value) if isinstance(value, list) else 0
    return validate_scores(
        value, _input_name(info, SCORE_FIELD), count, items_field=_input_name(info, items_key)
    )


def _text_scores(value: object, info: ValidationInfo) -> list[float] | None:
    return _scores(value, info, _TEXT_KEYS.retrieved)


def _id_scores(value: object, info: ValidationInfo) -> list[float] | None:
    return _scores(value, info, _ID_KEYS.retrieved)


_SCORES_DESCRIPTION = (
    "Optional: the retriever's score of each retrieved item (finite numbers, higher is better), "
    "one per item, in the same order. ndcg(ties='average') averages the gains of items of "
    "equal score (the list must then be ranked by score, highest first)."
)
_SCORES_SCHEMA = WithJsonSchema({"type": "array", "items": {"type": "number"}})

_RecordId = Annotated[str | None, PlainValidator(_record_id), WithJsonSchema(_RECORD_ID)]
_ID_DESCRIPTION = (
    "The query's id: a non-blank string or an integer (7 and '7' are the same id), unique "
    "within the dataset. Optional, but all records have one or none."
)


class TextRecordSchema(BaseModel):
    """A text-mode record: the retrieved contexts, ranked, and the ground-truth contexts.

    Any other field (question, tags, ...) is metadata, passed through to per-query results.
    """

    model_config = ConfigDict(title="TextRecord", json_schema_extra={"additionalProperties": True})
    KEYS: ClassVar[SchemaKeys] = _TEXT_KEYS

    retrieved: Annotated[
        list[str],
        PlainValidator(_retrieved_texts),
        WithJsonSchema({"type": "array", "items": {"type": "string"}}),
    ] = Field(
        alias="retrieved_context",
        description="The retrieved contexts, best first. [] is valid (scores 0); an empty "
        "string in it is allowed and never relevant.",
    )
    ground_truth: Annotated[
        list[str] | list[GradedText],
        PlainValidator(_ground_truth_texts),
        WithJsonSchema({"type": "array", "items": {"anyOf": [_NON_BLANK, _GRADED_TEXT]}}),
    ] = Field(
        alias="ground_truth_context",
        description='The ground-truth contexts: non-blank strings (grade 1), or {"text": ..., '
        '"grade": g} with g > 0 for graded NDCG. [] follows the empty_ground_truth policy.',
    )
    id: _RecordId = Field(None, alias="id", description=_ID_DESCRIPTION)
    retrieved_spans: Annotated[
        list[Span | None] | None,
        PlainValidator(_retrieved_spans),
        WithJsonSchema(_SPANS),
    ] = Field(
        None,
        alias="retrieved_spans",
        description='Optional: where each retrieved context is in its document, {"doc": name, '
        '"start": s, "end": e} (Python string indices, so doc[s:e]), or null when unknown; one '
        "per retrieved context, in the same order. Span metrics use them.",
    )
    ground_truth_spans: Annotated[
        list[Span | None] | None,
        PlainValidator(_ground_truth_spans),
        WithJsonSchema(_SPANS),
    ] = Field(
        None,
        alias="ground_truth_spans",
        description="Optional: the span of each ground-truth context, as retrieved_spans.",
    )
    retrieved_scores: Annotated[
        list[float] | None, PlainValidator(_text_scores), _SCORES_SCHEMA
    ] = Field(None, alias="retrieved_scores", description=_SCORES_DESCRIPTION)


class IdRecordSchema(BaseModel):
    """An ID-mode record: the retrieved chunk ids, ranked, and the relevant ids or their grades.

    Ids are compared as strings (7 and "7" are the same id). Any other field (question, tags,
    ...) is metadata, passed through to per-query results.
    """

    model_config = ConfigDict(title="IdRecord", json_schema_extra={"additionalProperties": True})
    KEYS: ClassVar[SchemaKeys] = _ID_KEYS

    retrieved: Annotated[
        list[str],
        PlainValidator(_retrieved_ids),
        WithJsonSchema({"type": "array", "items": _DOC_ID}),
    ] = Field(
        alias="retrieved_ids",
        description="The retrieved chunk or document ids (strings or integers), best first.",
    )
    ground_truth: Annotated[
        dict[str, float],
        PlainValidator(_qrels),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": _DOC_ID},
                    {"type": "object", "additionalProperties": {"type": "number"}},
                ]
            }
        ),
    ] = Field(
        alias="qrels",
        description="The relevant ids (grade 1 each), or {id: grade} judgments (0 = judged "
        "non-relevant).",
    )
    id: _RecordId = Field(None, alias="id", description=_ID_DESCRIPTION)
    retrieved_scores: Annotated[list[float] | None, PlainValidator(_id_scores), _SCORES_SCHEMA] = (
        Field(None, alias="retrieved_scores", description=_SCORES_DESCRIPTION)
    )


_SCHEMAS: dict[Mode, type[TextRecordSchema] | type[IdRecordSchema]] = {
    "text": TextRecordSchema,
    "id": IdRecordSchema,
}


def record_schema(mode: Mode) -> type[TextRecordSchema] | type[IdRecordSchema]:
    """The model that validates a record of ``mode`` (``"text"`` or ``"id"``)."""
    return _SCHEMAS[check_choice("record_schema", "mode", mode, tuple(_SCHEMAS))]


_JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def record_json_schema(mode: Mode | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one dataset record, as a dict.

    With ``mode`` (``"text"`` or ``"id"``), the schema of that mode's record; without, either
    one (``anyOf`` of both, under ``$defs``). Field names are the canonical ones; the other names
    ``read_records`` recognises are listed in ``docs/datasets.md``.
    """
    if mode is not None:
        return {"$schema": _JSON_SCHEMA_DIALECT, **record_schema(mode).model_json_schema()}
    defs = {
        model.__name__.removesuffix("Schema"): model.model_json_schema()
        for model in (
            TextRecordSchema,
            IdRecordSchema,
        )
    }
    return {
        "$schema": _JSON_SCHEMA_DIALECT,
        "title": "ctxeval record",
        "description": "One query of a ctxeval dataset: a text-mode record (contexts) or an "
        "ID-mode record (chunk ids). One JSON object per line of a .jsonl file.",
        "anyOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "$defs": defs,
    }


# --- helpers of the readers ------------------------------------------------------------------


def plain_text_record(
    data: Mapping[str, Any],
) -> tuple[list[str], list[str], str | None] | None:
    """``(retrieved, ground_truth, id)`` of a text record that is plainly valid (lists of
    strings, ground truth non-blank, a non-blank string id or none), exactly as
    :class:`TextRecordSchema` would return them; None when anything needs the model's checks
    (and its messages). ``data`` is keyed by the schema's keys. Most records are plain: this
    lets the readers skip pydantic for them."""
    retrieved = data[_TEXT_KEYS.retrieved]
    truth = data[_TEXT_KEYS.ground_truth]
    record_id = data.get(_TEXT_KEYS.id)  # absent when the dataset has no id field; then never None
    if (
        type(retrieved) is list
        and type(truth) is list
        and truth
        and (not retrieved or set(map(type, retrieved)) == {str})
        and set(map(type, truth)) == {str}
        and all(map(str.strip, truth))
        and (_TEXT_KEYS.id not in data or (type(record_id) is str and record_id.strip()))
    ):
        return list(retrieved), list(truth), record_id
    return None


def with_document_texts(
    data: Mapping[str, Any], key: str, names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A text record (keyed by the schema's keys) whose document items (mappings or objects
    with their text under ``key``) are replaced by that text; strings and graded items
    (``{"text", "grade"}``) are left for validation to judge. A document without text under
    ``key`` is an :class:`InvalidRecordError` (named by the input's field, ``names`` mapping
    the schema's keys to them): the key the user named is the only one read."""
    out = dict(data)
    for name in (_TEXT_KEYS.retrieved, _TEXT_KEYS.ground_truth):
        items = out.get(name)
        if isinstance(items, list) and set(map(type, items)) != {str}:
            shown = (names or {}).get(name, name)
            out[name] = [_document_item(item, key, shown, i) for i, item in enumerate(items)]
    return out


def _document_item(item: object, key: str, field: str, i: int) -> object:
    if isinstance(item, str) or (isinstance(item, Mapping) and "grade" in item):
        return item
    if item is None or isinstance(item, numbers.Number | list | tuple):
        return item  # not a document: validation says what it is
    text = document_text(item, key)
    if text is None:
        raise missing_text_key(field, i, item, key)
    return text


def missing_text_key(field: str, i: int, item: object, key: str) -> InvalidRecordError:
    """The error for a document item without its text under the text key the user named
    (that key is then the only one read: no fallback to ``page_content`` and the others)."""
    return InvalidRecordError(
        f"{field}[{i}] is {type_name(item)} {preview(item)}, with no text under {key!r}, the "
        f'text key given (fields={{"text_key": "{key}"}}); give every document its text under '
        f"{key!r}, or name the key they all use",
        field=field,
        fixes=(Fix("fields", {"text_key": key}, f'fields={{"text_key": "{key}"}}'),),
    )


def validation_problems(error: ValidationError, names: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(field, message)`` for each failure of a schema's validation, in ctxeval's words
    (pydantic's only as a last resort); ``names`` maps the schema's keys to the input's field
    names."""
    found = []
    for detail in error.errors():
        cause = detail.get("ctx", {}).get("error")
        key = str(detail["loc"][0]) if detail["loc"] else ""
        field = names.get(key, key)
        if isinstance(cause, InvalidRecordError):
            found.append((field, str(cause)))
        else:
            found.append((field, f"{field} is not valid: {detail['msg']}"))
    return found


def validation_fixes(error: ValidationError) -> tuple[Fix, ...]:
    """The fixes the messages of :func:`validation_problems` name, in the same order."""
    causes = (detail.get("ctx", {}).get("error") for detail in error.errors())
    return tuple(fix for cause in causes for fix in getattr(cause, "fixes", ()))


def claimed_id(value: object) -> str | None:
    """The id a record claims, whether or not the record is valid: a non-blank string, or an
    integer as a string; None for anything else. A bad record still claims its id, so that a
    later record with the same id is reported as a duplicate. An id holding a lone surrogate
    (such a record is bad) is claimed with it escaped (``"q\\ud800"``), so that messages and
    saved lists of skipped records can be written."""
    if isinstance(value, str) and value.strip():
        if value.isascii():
            return value
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return None
