"""From items to records: the reader's state over the segments of one source.

:class:`RecordStream` numbers the items that :mod:`ctxeval.io.formats` reads from each segment,
settles each segment's fields (:mod:`ctxeval.io.fields`), validates each record against its
mode's schema (:mod:`ctxeval.records.model`) and checks that ids are unique
(:mod:`ctxeval.io.seen_ids`), yielding one :class:`~ctxeval.records.model.Record` or
:class:`~ctxeval.records.model.RecordError` per item, in order.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sized
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple, cast

from pydantic import ValidationError

from ctxeval.foundation.errors import Fix, InvalidRecordError
from ctxeval.io.fields import (
    ID_CANDIDATES,
    FieldMap,
    FieldsNotFoundError,
    ResolvedFields,
    resolve_fields,
)
from ctxeval.io.formats import FORMAT_READERS, Item, Problem, not_an_object, quoted
from ctxeval.io.plain import not_plain_fields, plain_batch
from ctxeval.io.seen_ids import SeenIds
from ctxeval.io.sources import Segment
from ctxeval.records.checks import find_unwritable, validate_scores, validate_spans
from ctxeval.records.model import (
    SCORE_FIELD,
    SPAN_FIELDS,
    SPAN_NAMES,
    Record,
    RecordError,
    claimed_id,
    plain_text_record,
    record_schema,
    validation_fixes,
    validation_problems,
    with_document_texts,
)
from ctxeval.records.values import Span

__all__ = ["RESOLVE_WINDOW", "Claim", "RecordStream"]

# Items read and checked together once a segment's fields are settled (see io.plain).
BATCH = 256

# How many records without recognisable fields a row-by-row source may start with before the
# fields are declared unrecognisable (rather than those records missing a field).
RESOLVE_WINDOW = 100

Claim = tuple[int, str, bool]  # (position, id, whether a good record claims it)


def _absent(value: object) -> bool:
    """A span field that holds nothing (null, an empty CSV cell, a missing DataFrame value)."""
    return value is None or value == "" or (isinstance(value, float) and value != value)


def _may_read_ahead(segment: Segment) -> bool:
    """Whether the segment can be read ahead of the records asked for: a regular file, a list
    or tuple, or a DataFrame (its reader makes a new dict a row). Not a stream, whose next item
    may not exist yet, nor any other iterable: one with a length may still hand out one object
    refilled for each row, as a database cursor can."""
    target = segment.target
    if isinstance(target, str | os.PathLike):
        return os.path.isfile(target)
    return segment.format == "frame" or type(target) in (list, tuple)


class _Place(NamedTuple):
    """Where an item is: its segment, position there, record index and location."""

    segment: Segment
    pos: int
    record_index: int
    location: str

    def error(
        self, record_id: str | None, field: str | None, message: str, fixes: tuple[Fix, ...] = ()
    ) -> RecordError:
        return RecordError(self.record_index, record_id, self.location, field, message, fixes)


class RecordStream:
    """Numbers records across the segments of one source, validates them and tracks ids.

    Reading one block of a partitioned run (:mod:`ctxeval.parallel.blocks`) sets ``resolved`` (the
    fields settled for the whole file), ``first_index``, and ``claims``: ids are then appended
    there as ``(position, id, is_record)`` instead of checked, because the blocks' claims are
    compared across the dataset, and the duplicates found that way are given back as
    ``known_duplicates`` (``{position: first location}``). ``seen`` replaces the duplicate
    check's table (tests compare it with an exact one).
    """

    _ROLE_NAMES: ClassVar[dict[str, str]] = {
        "retrieved": "retrieved",
        "ground_truth": "ground-truth",
        "id": "id",
    }

    def __init__(
        self,
        fields: FieldMap,
        segments: list[Segment],
        *,
        resolved: ResolvedFields | None = None,
        first_index: int = 0,
        claims: list[Claim] | None = None,
        known_duplicates: Mapping[int, str] | None = None,
        seen: SeenIds | None = None,
    ) -> None:
        self.fields = fields
        self.segments = segments
        self.index = first_index
        self.forced = resolved
        self.claims = claims
        self.known_duplicates = known_duplicates or {}
        # Made at the first id claimed, so that a dataset without ids costs nothing.
        self.seen = seen
        # The fields of the segment being read, once settled.
        self.resolved: ResolvedFields | None = None
        self._names: dict[ResolvedFields, dict[str, str]] = {}
        # the fields a text record uses -> with the span fields (not metadata either)
        self._text_used: dict[frozenset[str], frozenset[str]] = {}
        self._score_name = fields.scores or SCORE_FIELD
        # the fields a record uses -> with its scores field (not metadata either)
        self._score_used: dict[frozenset[str], frozenset[str]] = {}

    def records(self) -> Iterator[Record | RecordError]:
        for segment in self.segments:
            yield from self.read(segment, FORMAT_READERS[segment.format](segment, self.resolve))

    def resolve(self, columns: Iterable[str], source: str) -> ResolvedFields:
        """Settle the fields of the segment being read, from its columns (or first record's
        keys); ``source`` names it in messages."""
        if self.forced is not None:
            resolved = self.forced
        else:
            resolved = resolve_fields(list(columns), self.fields, source=source)
            if self.fields.mode is None:
                # Every later file of a glob must be in the same mode as the first.
                self.fields = replace(self.fields, mode=resolved.mode)
        self.resolved = resolved
        return resolved

    def read(self, segment: Segment, items: Iterable[Item]) -> Iterator[Record | RecordError]:
        """The records of one segment's items. A tabular format has settled the fields before
        its first item; otherwise they are settled from the first record that shows them.
        Once they are, the items of a file or a collection in memory are read a batch at a
        time (:meth:`build_batch`); a stream (an open file, a pipe, a generator) is read no
        further than the record it yields."""
        self.resolved = None
        pending: list[Item] = []
        not_found: FieldsNotFoundError | None = None
        unresolved = 0
        items = iter(items)
        batched = _may_read_ahead(segment)
        for item in items:
            resolved = self.resolved
            if resolved is not None:
                if batched:
                    yield from self._batches(segment, item, items, resolved)
                else:
                    yield self.build(segment, item, resolved)
                continue
            if not isinstance(item[1], Mapping):
                if pending:
                    pending.append(item)
                else:
                    yield self.build(segment, item, None)
                continue
            try:
                resolved = self.resolve(item[1].keys(), segment.locate(item[0]))
            except FieldsNotFoundError as exc:
                # This record may be the one missing a field: look at the next ones.
                not_found = not_found or exc
                pending.append(item)
                unresolved += 1
                if unresolved >= RESOLVE_WINDOW:
                    raise not_found from None
                continue
            for waiting in pending:
                yield self.build(segment, waiting, resolved)
            pending.clear()
            yield self.build(segment, item, resolved)
        if not_found is not None and self.resolved is None:
            raise not_found

    def _batches(
        self, segment: Segment, first: Item, items: Iterator[Item], resolved: ResolvedFields
    ) -> Iterator[Record | RecordError]:
        """``first`` and the items after it, up to :data:`BATCH` of them, as records. If the
        reader fails among them, the records before it are given first."""
        batch = [first]
        try:
            while len(batch) < BATCH:
                batch.append(next(items))
        except StopIteration:
            pass
        except BaseException:
            yield from self.build_batch(segment, batch, resolved)
            raise
        yield from self.build_batch(segment, batch, resolved)

    def build_batch(
        self, segment: Segment, batch: list[Item], resolved: ResolvedFields
    ) -> list[Record | RecordError]:
        """The batch's items as records: checked together when every one is a plain record
        (:mod:`ctxeval.io.plain`), else one by one (:meth:`build`)."""
        plain = None
        if self.fields.text_key is None:
            not_plain = not_plain_fields(resolved, self._score_name)
            plain = plain_batch([value for _, value in batch], resolved, not_plain)
        if plain is None:
            return [self.build(segment, item, resolved) for item in batch]
        out: list[Record | RecordError] = []
        ids = plain.ids or itertools.repeat(None)
        for (pos, _), record_id, retrieved, truth, metadata in zip(
            batch, ids, plain.retrieved, plain.ground_truth, plain.metadata, strict=False
        ):
            at = _Place(segment, pos, self.index, segment.locate(pos))
            self.index += 1
            if record_id is None:
                record_id = f"#{at.record_index}"
            else:
                first_seen = self._claim(record_id, segment, pos, record=True)
                if first_seen is not None:
                    out.append(self._duplicate(at, record_id, resolved, first_seen))
                    continue
            ground: Any = truth if isinstance(truth, dict) else list(truth)  # (qrels: new dicts)
            out.append(
                Record(
                    at.record_index,
                    record_id,
                    at.location,
                    resolved.mode,
                    list(retrieved),
                    ground,
                    metadata,
                )
            )
        return out

    def build(
        self, segment: Segment, item: Item, resolved: ResolvedFields | None
    ) -> Record | RecordError:
        """One item as a record, or as the error that stops it (the first one found)."""
        pos, value = item
        index = self.index
        self.index += 1
        at = _Place(segment, pos, index, segment.locate(pos))
        if isinstance(value, Problem):
            return self._problem(at, value, resolved)
        if not isinstance(value, Mapping):
            return at.error(None, None, not_an_object(segment, value))
        assert resolved is not None  # a mapping is only built once the fields are known
        raw_id = self._raw_id(at, value, resolved)
        if isinstance(raw_id, RecordError):
            return raw_id
        validated = self._validated(at, value, resolved, raw_id)
        if isinstance(validated, RecordError):
            return validated
        retrieved, ground_truth, model_id = validated
        if model_id is None:
            record_id = f"#{at.record_index}"
        else:
            record_id = model_id
            first_seen = self._claim(record_id, segment, pos, record=True)
            if first_seen is not None:
                return self._duplicate(at, record_id, resolved, first_seen)
        return self._record(at, value, resolved, record_id, (retrieved, ground_truth))

    @staticmethod
    def _duplicate(
        at: _Place, record_id: str, resolved: ResolvedFields, first_seen: str
    ) -> RecordError:
        return at.error(
            record_id,
            resolved.id,
            f"duplicate id {record_id!r}, first seen at {first_seen}; ids must be unique "
            "within a dataset: rename or remove one of the records",
        )

    def _problem(
        self, at: _Place, problem: Problem, resolved: ResolvedFields | None
    ) -> RecordError:
        """An item the format reader could not read, its id claimed when it shows one."""
        problem_id = problem.id
        if problem_id is None and problem.record is not None:
            problem_id = self._problem_id(problem.record, resolved)
        if problem_id is not None:
            self._claim(problem_id, at.segment, at.pos, record=False)
        return at.error(problem_id, problem.field, problem.message)

    def _raw_id(
        self, at: _Place, value: Mapping[str, Any], resolved: ResolvedFields
    ) -> str | RecordError | None:
        """The id the record claims (None without an id field), or the error of a record
        whose id field or other fields are not those of the others."""
        if resolved.id is None:
            raw_id = None
            stray = next((name for name in ID_CANDIDATES if name in value), None)
            if stray is not None and self.fields.id is None:
                return at.error(
                    claimed_id(value[stray]),
                    stray,
                    f"has an id field {stray!r} but the first record has none; give every "
                    "record an id, or none",
                )
        else:
            raw_id = claimed_id(value.get(resolved.id))
        if not resolved.used.issubset(value):  # (used: the three fields, and a text key)
            for role in ("retrieved", "ground_truth", "id"):
                name = getattr(resolved, role)
                if name is not None and name not in value:
                    fixes = (Fix("fields", {role: None}, f'fields={{"{role}": ...}}'),)
                    return at.error(raw_id, name, self._missing(role, name, value.keys()), fixes)
        return raw_id

    def _validated(
        self, at: _Place, value: Mapping[str, Any], resolved: ResolvedFields, raw_id: str | None
    ) -> tuple[list[Any], Any, str | None] | RecordError:
        """The record's retrieved items, ground truth and id, validated against its mode's
        schema; or its error (its id claimed, when it has one)."""
        names = self._names.get(resolved)
        if names is None:
            names = self._names[resolved] = self._schema_names(resolved)
        data = {key: value[name] for key, name in names.items()}
        if self.fields.text_key is not None and resolved.mode == "text":
            try:
                data = with_document_texts(data, self.fields.text_key, names)
            except InvalidRecordError as exc:
                if raw_id is not None:
                    self._claim(raw_id, at.segment, at.pos, record=False)
                return at.error(raw_id, exc.field, str(exc), exc.fixes)
        plain = plain_text_record(data) if resolved.mode == "text" else None
        if plain is not None:
            return plain
        try:
            model = record_schema(resolved.mode).model_validate(data, context=names)
        except ValidationError as exc:
            if raw_id is not None:
                self._claim(raw_id, at.segment, at.pos, record=False)
            problems = validation_problems(exc, names)
            message = "; ".join(m for _, m in problems)
            return at.error(raw_id, problems[0][0], message, validation_fixes(exc))
        return model.retrieved, model.ground_truth, model.id

    def _record(
        self,
        at: _Place,
        value: Mapping[str, Any],
        resolved: ResolvedFields,
        record_id: str,
        contexts: tuple[list[Any], Any],
    ) -> Record | RecordError:
        """The record, with its spans, scores and metadata (the fields no role uses); or the
        error of the first of them that is not valid."""
        retrieved, ground_truth = contexts
        spans: dict[str, list[Span | None] | None] = {}
        used = resolved.used
        if resolved.mode == "text":
            if not SPAN_NAMES.isdisjoint(value):
                try:
                    spans = self._spans(value, resolved, len(retrieved), len(ground_truth))
                except InvalidRecordError as exc:
                    return at.error(record_id, exc.field, str(exc), exc.fixes)
            used = self._text_used.get(used) or self._text_used.setdefault(used, used | SPAN_NAMES)
        scores = None
        if self._score_name in value:
            try:
                scores = self._scores(value[self._score_name], resolved, len(retrieved))
            except InvalidRecordError as exc:
                return at.error(record_id, exc.field, str(exc), exc.fixes)
            used = self._score_used.get(used) or self._score_used.setdefault(
                used, used | {self._score_name}
            )
        metadata = {k: v for k, v in value.items() if k not in used}
        for name, kept in metadata.items():
            # Only containers can nest; the reader has looked at strings that may hold
            # surrogates. Deep metadata could not be sent to workers nor saved.
            too_deep = (
                find_unwritable(kept, str(name), text=False) if type(kept) in (list, dict) else None
            )
            if too_deep:
                return at.error(record_id, name, too_deep)
        return Record(
            index=at.record_index,
            id=record_id,
            location=at.location,
            mode=resolved.mode,
            retrieved=retrieved,
            ground_truth=cast("dict[Hashable, float]", ground_truth),
            metadata=metadata,
            retrieved_spans=spans.get("retrieved"),
            ground_truth_spans=spans.get("ground_truth"),
            retrieved_scores=scores,
        )

    def _scores(self, value: object, resolved: ResolvedFields, count: int) -> list[float] | None:
        """The record's retrieval scores, validated; None when the field holds nothing."""
        if (
            type(value) is list
            and len(value) == count
            and set(map(type, value)) <= {float}
            and all(map(math.isfinite, value))
        ):
            return value  # the usual case (JSON numbers with a point, Parquet, run files)
        if _absent(value):
            return None
        return validate_scores(value, self._score_name, count, items_field=resolved.retrieved)

    @staticmethod
    def _spans(
        value: Mapping[str, Any], resolved: ResolvedFields, retrieved: int, truth: int
    ) -> dict[str, list[Span | None] | None]:
        """The record's span fields (any of :data:`~ctxeval.records.model.SPAN_FIELDS`),
        validated."""
        found: dict[str, list[Span | None] | None] = {}
        for role, count, texts in (
            ("retrieved", retrieved, resolved.retrieved),
            ("ground_truth", truth, resolved.ground_truth),
        ):
            names = [name for name in SPAN_FIELDS[role] if name in value]
            if len(names) > 1:
                raise InvalidRecordError(
                    f"{quoted(names)} could each be the {role.replace('_', '-')} spans; keep "
                    "one of them",
                    field=names[0],
                )
            if names and not _absent(value[names[0]]):
                found[role] = validate_spans(value[names[0]], names[0], count, texts_field=texts)
        return found

    @staticmethod
    def _schema_names(resolved: ResolvedFields) -> dict[str, str]:
        """``{schema key: the input's field name}`` for the fields a schema validates."""
        keys = record_schema(resolved.mode).KEYS
        names = {keys.retrieved: resolved.retrieved, keys.ground_truth: resolved.ground_truth}
        if resolved.id is not None:
            names[keys.id] = resolved.id
        return names

    def _claim(self, record_id: str, segment: Segment, pos: int, *, record: bool) -> str | None:
        """Register ``record_id`` as seen at ``pos``; for a record, return where it was first
        seen when that is elsewhere (a duplicate)."""
        if self.claims is not None:
            self.claims.append((pos, record_id, record))
            return self.known_duplicates.get(pos) if record else None
        if self.seen is None:
            # Sized for every record when their number is known (a list, a DataFrame): no
            # resizes on the way, and no more memory than those ids need in the end.
            known = [
                len(s.target)
                for s in self.segments
                if s.format in ("frame", "iterable") and isinstance(s.target, Sized)
            ]
            self.seen = SeenIds(capacity=sum(known) if len(known) == len(self.segments) else 0)
        # One integer per location: the position and the segment's number.
        first = self.seen.claim(record_id, pos * len(self.segments) + segment.number, record=record)
        if first is None:
            return None
        first_pos, number = divmod(first, len(self.segments))
        return self.segments[number].locate(first_pos)

    def _problem_id(self, record: Mapping[str, Any], resolved: ResolvedFields | None) -> str | None:
        """The id a record that could not be read claims, by the fields settled so far."""
        if resolved is not None:
            name = resolved.id
        else:
            name = self.fields.id or next((n for n in ID_CANDIDATES if n in record), None)
        return claimed_id(record.get(name)) if name is not None else None

    def _missing(self, role: str, name: str, found: Iterable[str]) -> str:
        what = self._ROLE_NAMES[role]
        if role == "id":
            return (
                f"missing the id field {name!r} that other records have; fields found: "
                f"{quoted(found)}; give every record an id, or none"
            )
        return (
            f"missing the {what} field {name!r}; fields found: {quoted(found)}; add it, or "
            f'name the field that holds it: fields={{"{role}": ...}}'
        )
