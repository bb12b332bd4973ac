"""The record schema (ctxeval.records.model): the public models, their JSON Schema, and the fast
path that skips them for plainly valid text records."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.io import read_records
from ctxeval.io.convert import record_to_dict
from ctxeval.records.model import (
    SCORE_FIELD,
    SPAN_FIELDS,
    IdRecordSchema,
    Record,
    RecordError,
    TextRecordSchema,
    plain_text_record,
    record_json_schema,
    record_schema,
    validation_problems,
)
from ctxeval.records.values import GradedText, Span

NAMES = {"retrieved_context": "retrieved_contexts", "ground_truth_context": "reference_contexts"}


# -- the fast path equals the model -----------------------------------------------------------

_ANY_TEXT = st.one_of(st.text(max_size=5), st.integers(), st.none(), st.just(float("nan")))


@settings(max_examples=300, deadline=None)
@given(
    retrieved=st.one_of(st.lists(_ANY_TEXT, max_size=3), st.text(max_size=3), st.none()),
    truth=st.one_of(
        st.lists(
            st.one_of(_ANY_TEXT, st.fixed_dictionaries({"text": st.text(max_size=3)})), max_size=3
        ),
        st.none(),
    ),
    record_id=st.one_of(st.text(max_size=3), st.integers(), st.none(), st.just(2.5)),
    with_id=st.booleans(),
)
def test_plain_text_records_skip_the_model_with_the_same_result(
    retrieved: object, truth: object, record_id: object, with_id: bool
) -> None:
    data = {"retrieved_context": retrieved, "ground_truth_context": truth}
    if with_id:
        data["id"] = record_id
    names = {"retrieved_context": "retrieved_context", "ground_truth_context": "gt", "id": "id"}
    plain = plain_text_record(data)
    try:
        model = TextRecordSchema.model_validate(data, context=names)
    except ValidationError:
        assert plain is None  # a record the model rejects is never taken as plain
        return
    if plain is not None:
        assert plain == (model.retrieved, model.ground_truth, model.id)
        assert type(plain[0]) is list
        assert plain[0] is not retrieved  # a copy, as the model makes


def test_plain_text_records_are_recognised() -> None:
    def plain(retrieved: Any, truth: Any, **record_id: Any) -> Any:
        return plain_text_record(
            {"retrieved_context": retrieved, "ground_truth_context": truth, **record_id}
        )

    assert plain(["a", ""], ["b"], id="q") == (["a", ""], ["b"], "q")
    assert plain([], ["b"]) == ([], ["b"], None)
    assert plain(["a"], [" "]) is None  # blank truth
    assert plain(["a"], []) is None  # the policy decides
    assert plain(["a"], ["b"], id=None) is None
    assert plain(["a"], ["b"], id=7) is None  # -> "7"


# -- the models -------------------------------------------------------------------------------


def test_the_models_validate_records_by_their_canonical_names() -> None:
    text = TextRecordSchema.model_validate(
        {
            "id": 7,
            "retrieved_context": ["a", ""],
            "ground_truth_context": ["a", {"text": "b", "grade": 2}],
            "question": "ignored here: metadata",
        }
    )
    assert (text.retrieved, text.ground_truth, text.id) == (
        ["a", ""],
        [GradedText("a", 1.0), GradedText("b", 2.0)],
        "7",
    )
    ids = IdRecordSchema.model_validate({"retrieved_ids": [1, "d2"], "qrels": {"1": 2, 3: 0}})
    assert (ids.retrieved, ids.ground_truth, ids.id) == (["1", "d2"], {"1": 2.0, "3": 0.0}, None)
    assert IdRecordSchema.model_validate({"retrieved_ids": [], "qrels": [4]}).ground_truth == {
        "4": 1.0
    }
    assert record_schema("text") is TextRecordSchema
    assert record_schema("id") is IdRecordSchema
    with pytest.raises(InvalidArgumentError, match=r"record_schema\(mode='ids'\)"):
        record_schema("ids")  # type: ignore[arg-type]


@pytest.mark.parametrize("model", [TextRecordSchema, IdRecordSchema])
def test_the_schema_keys_are_the_model_aliases(model: Any) -> None:
    aliases = {name: info.alias for name, info in model.model_fields.items()}
    keys = model.KEYS
    spans = (
        {
            "retrieved_spans": SPAN_FIELDS["retrieved"][0],
            "ground_truth_spans": SPAN_FIELDS["ground_truth"][0],
        }
        if model is TextRecordSchema
        else {}
    )
    assert aliases == {
        "retrieved": keys.retrieved,
        "ground_truth": keys.ground_truth,
        "id": keys.id,
        **spans,
        "retrieved_scores": SCORE_FIELD,
    }


def test_the_models_give_ctxeval_messages_with_the_datasets_names() -> None:
    data = {"retrieved_context": "one string", "ground_truth_context": ["a", " "], "id": 2.5}
    with pytest.raises(ValidationError) as direct:
        TextRecordSchema.model_validate(data)
    assert [field for field, _ in validation_problems(direct.value, {})] == [
        "retrieved_context",
        "ground_truth_context",
        "id",
    ]
    with pytest.raises(ValidationError) as named:
        TextRecordSchema.model_validate(data, context=NAMES)
    problems = validation_problems(named.value, NAMES)
    assert problems[0] == (
        "retrieved_contexts",
        'retrieved_contexts is a single string, not a list; wrap it: ["one string"]',
    )
    assert problems[1][0] == "reference_contexts"
    assert problems[1][1].startswith("reference_contexts[1] is an empty string")
    assert problems[2] == (
        "id",
        "id is a float (2.5); an id must be a string or an integer (integer ids read as floats "
        "when their column has empty cells); give every record a unique id, or leave the 'id' "
        "field out of every record",
    )
    with pytest.raises(ValidationError) as missing:
        IdRecordSchema.model_validate({"qrels": {"a": float("nan")}})
    assert validation_problems(missing.value, {}) == [
        ("retrieved_ids", "retrieved_ids is not valid: Field required"),
        (
            "qrels",
            "qrels['a'] has grade nan; a grade must be a finite number (0 for judged non-relevant)",
        ),
    ]


def test_the_reader_and_the_models_agree() -> None:
    rows = [
        {"id": "a", "retrieved_context": ["x"], "ground_truth_context": [{"text": "x"}]},
        {"id": "b", "retrieved_context": ["x"], "ground_truth_context": "x"},
    ]
    good, bad = read_records(rows)
    assert isinstance(good, Record)
    assert isinstance(bad, RecordError)
    model = TextRecordSchema.model_validate(rows[0])
    assert (good.retrieved, good.ground_truth, good.id) == (
        model.retrieved,
        model.ground_truth,
        model.id,
    )
    with pytest.raises(ValidationError) as caught:
        TextRecordSchema.model_validate(rows[1])
    assert validation_problems(caught.value, {}) == [(bad.field, bad.message)]


# -- the JSON Schema --------------------------------------------------------------------------


def test_the_json_schema_of_both_modes() -> None:
    schema = record_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["anyOf"] == [{"$ref": "#/$defs/TextRecord"}, {"$ref": "#/$defs/IdRecord"}]
    text, ids = schema["$defs"]["TextRecord"], schema["$defs"]["IdRecord"]
    assert text["required"] == ["retrieved_context", "ground_truth_context"]
    assert ids["required"] == ["retrieved_ids", "qrels"]
    assert text["additionalProperties"] is True
    assert text["properties"]["retrieved_context"]["items"] == {"type": "string"}
    graded = text["properties"]["ground_truth_context"]["items"]["anyOf"][1]
    assert graded["required"] == ["text"]
    assert graded["properties"]["grade"]["exclusiveMinimum"] == 0
    assert ids["properties"]["qrels"]["anyOf"][1] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert all(p.get("description") for m in (text, ids) for p in m["properties"].values())
    json.dumps(schema)  # plain JSON
    assert record_json_schema("id") == {"$schema": schema["$schema"], **ids}


def test_convert_writes_the_schemas_field_names() -> None:
    rows = [
        {
            "id": 1,
            "retrieved_context": ["a", ""],
            "ground_truth_context": [{"text": "a"}, "b"],
            "retrieved_context_spans": [{"doc": "d", "start": 0, "end": 1}, None],
            "ground_truth_spans": [{"doc": "d", "start": 0, "end": 1}, None],
            "retrieved_scores": [0.5, 0.25],
        },
        {
            "query_id": "q",
            "retrieved_ids": [1, "d"],
            "relevant_ids": ["d"],
            "retrieved_scores": [2, 2],
        },
    ]
    defs = record_json_schema()["$defs"]
    for row, name, model in [
        (rows[0], "TextRecord", TextRecordSchema),
        (rows[1], "IdRecord", IdRecordSchema),
    ]:
        (record,) = read_records([row])
        assert isinstance(record, Record)
        written = record_to_dict(record)
        assert set(written) == set(defs[name]["properties"])
        validated = model.model_validate(written)
        assert (validated.retrieved, validated.ground_truth, validated.id) == (
            record.retrieved,
            record.ground_truth,
            record.id,
        )
        assert validated.retrieved_scores == record.retrieved_scores == row["retrieved_scores"]
        if model is TextRecordSchema:
            assert validated.retrieved_spans == record.retrieved_spans
            assert validated.ground_truth_spans == record.ground_truth_spans
            assert record.retrieved_spans == [Span("d", 0, 1), None]
