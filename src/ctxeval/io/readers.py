"""Read datasets into a stream of validated records.

:func:`read_records` turns a JSONL, JSON, CSV or Parquet file (or a glob of them), an open file, a
pandas DataFrame or an iterable of dicts into :class:`~ctxeval.io.records.Record` (a good record)
and :class:`~ctxeval.io.records.RecordError` (a bad one, with its location, field and the fix),
one per input record and in input order. A bad record never stops the stream: the evaluator
decides. Problems with the source itself (a missing file, an unknown format, fields that cannot be
identified) raise :class:`~ctxeval.errors.InvalidArgumentError` instead.

Files are streamed: JSONL line by line, CSV row by row, Parquet batch by batch. A ``.json`` file is
one JSON document, so it is parsed whole.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import math
import numbers
import os
import stat
import sys
from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from hashlib import blake2b
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from ctxeval.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
    MissingDependencyError,
    type_name,
)
from ctxeval.io.fields import (
    ID_CANDIDATES,
    FieldMap,
    FieldsInput,
    FieldsNotFoundError,
    ResolvedFields,
    as_field_map,
    resolve_fields,
)
from ctxeval.io.records import Record, RecordError
from ctxeval.validation import GradedText, validate_ids, validate_qrels, validate_texts

__all__ = ["SUPPORTED_FORMATS", "Block", "file_fields", "read_block", "read_records"]

SUPPORTED_FORMATS: tuple[str, ...] = ("jsonl", "json", "csv", "parquet")
_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
_FORMAT_NAMES = {
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "json": "json",
    "csv": "csv",
    "parquet": "parquet",
}
_SUPPORTED = (
    "supported formats: .jsonl/.ndjson (one JSON record per line), .json (a list of records), "
    ".csv (list columns JSON-encoded), .parquet; or pass format='jsonl'|'json'|'csv'|'parquet'"
)
_PARQUET_HINT = "reading Parquet needs pyarrow: pip install 'ctxeval[parquet]'"
_PARQUET_BATCH = 1024
# How many records without recognisable fields a row-by-row source may start with before the
# fields are declared unrecognisable (rather than those records missing a field).
_RESOLVE_WINDOW = 100


def read_records(
    source: object, *, fields: FieldsInput = None, format: str | None = None
) -> Iterator[Record | RecordError]:
    """Stream the records of ``source``, validated, in input order.

    ``source`` is a path to a ``.jsonl``/``.ndjson``, ``.json``, ``.csv`` or ``.parquet`` file, a
    glob pattern of such paths (read in sorted order), an open file, a pandas DataFrame or an
    iterable of dicts. ``fields`` names the retrieved, ground-truth and id fields
    (``{"retrieved": ..., "ground_truth": ..., "id": ..., "mode": "text" | "id"}``); whatever it
    leaves out is auto-detected. ``format`` overrides the file extension.

    Yields a :class:`Record` for each good record and a :class:`RecordError` for each bad one;
    ``index`` counts both. A file that cannot be opened, an unsupported format or fields that
    cannot be identified raise :class:`~ctxeval.errors.InvalidArgumentError`; the first two at
    once, the last when the records are read.
    """
    field_map = as_field_map(fields)
    segments = _segments(source, _format_name(format))
    return _Reader(field_map, segments).records()


# --- sources ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Problem:
    """A record that could not be read far enough to validate it."""

    message: str
    field: str | None = None
    id: str | None = None


@dataclass(slots=True)
class _Segment:
    """One file (or DataFrame, or iterable) of a source; ``number`` is its place in the source."""

    name: str
    format: str  # one of SUPPORTED_FORMATS, or "frame" / "iterable"
    target: Any
    number: int = 0

    def locate(self, pos: int) -> str:
        if self.format == "jsonl":
            return f"{self.name}:{pos}"
        if self.format in ("csv", "parquet"):
            return f"{self.name}:row {pos}"
        if self.format == "json":
            return f"{self.name}[{pos}]"
        if self.format == "frame":
            return f"row {self.target.index[pos]}"
        return f"record {pos}"


def _format_name(format: object) -> str | None:
    if format is None:
        return None
    if isinstance(format, str) and format.lower().lstrip(".") in _FORMAT_NAMES:
        return _FORMAT_NAMES[format.lower().lstrip(".")]
    raise InvalidArgumentError(
        f"read_records(format={format!r}): use one of "
        + ", ".join(repr(f) for f in SUPPORTED_FORMATS)
        + ", or None to go by the file extension"
    )


def _segments(source: object, fmt: str | None) -> list[_Segment]:
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not isinstance(path, str):
            raise InvalidArgumentTypeError(f"read_records: give paths as str, got {path!r}")
        if _is_pattern(path) and not os.path.exists(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise InvalidArgumentError(f"{path}: no files match this pattern; {_SUPPORTED}")
            paths = matches
        else:
            paths = [path]
        segments = [_Segment(p, _check_file(p, fmt), p, n) for n, p in enumerate(paths)]
        if any(s.format == "parquet" for s in segments):
            _import_parquet()
        return segments
    if fmt is not None and not hasattr(source, "read"):
        raise InvalidArgumentError(
            f"read_records(format={fmt!r}) applies to paths and open files, not to "
            f"{type_name(source)}; leave format out"
        )
    if hasattr(source, "read"):
        return [_file_object_segment(source, fmt)]
    if _is_dataframe(source):
        return [_Segment("DataFrame", "frame", source)]
    if isinstance(source, Mapping):
        raise InvalidArgumentTypeError(
            "read_records got a single dict; pass a list (or any iterable) of records, "
            "e.g. [record] or data['records']"
        )
    if isinstance(source, bytes | bytearray) or not isinstance(source, Iterable):
        raise InvalidArgumentTypeError(
            f"read_records cannot read {type_name(source)}: pass a path, a glob pattern, an open "
            "file, a pandas DataFrame or an iterable of dicts"
        )
    return [_Segment("records", "iterable", source)]


def _is_pattern(path: str) -> bool:
    return any(c in path for c in "*?[")


def _check_file(path: str, fmt: str | None) -> str:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InvalidArgumentError(f"{path}: no such file; {_SUPPORTED}") from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if stat.S_ISDIR(mode):
        raise InvalidArgumentError(
            f"{path}: is a directory; pass a file, or a glob pattern such as "
            f"'{Path(path) / '*.jsonl'}'; {_SUPPORTED}"
        )
    if fmt is None:
        suffix = Path(path).suffix.lower()
        if suffix not in _EXTENSIONS:
            shown = repr(suffix) if suffix else "(none)"
            raise InvalidArgumentError(f"{path}: unsupported file extension {shown}; {_SUPPORTED}")
        fmt = _EXTENSIONS[suffix]
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return fmt


def _unreadable(path: str, exc: OSError) -> InvalidArgumentError:
    return InvalidArgumentError(f"{path}: cannot be opened ({exc.strerror}); {_SUPPORTED}")


def _file_object_segment(source: Any, fmt: str | None) -> _Segment:
    name = getattr(source, "name", None)
    name = name if isinstance(name, str) else "<stream>"
    if fmt is None:
        suffix = Path(name).suffix.lower()
        if suffix not in _EXTENSIONS:
            raise InvalidArgumentError(
                f"{name}: cannot tell the format of an open file without a known extension; "
                f"pass format='jsonl'|'json'|'csv'|'parquet'"
            )
        fmt = _EXTENSIONS[suffix]
    if fmt == "parquet":
        _import_parquet()
    return _Segment(name, fmt, source)


def _is_dataframe(obj: object) -> bool:
    # Duck typing by class name, so pandas is never imported just to ask.
    return any(
        cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")
        for cls in type(obj).__mro__
    )


def _import_parquet() -> ModuleType:
    try:
        import pyarrow.parquet
    except ImportError as exc:
        raise MissingDependencyError(_PARQUET_HINT) from exc
    module: ModuleType = pyarrow.parquet
    return module


# --- validation ------------------------------------------------------------------------------


def _reject_nan(value: object, field: str, what: str) -> None:
    if isinstance(value, float) and math.isnan(value):
        raise InvalidRecordError(
            f"{field} is NaN (a missing value, often an empty CSV or DataFrame cell); pass a "
            f"list of {what} (an empty list if there are none)",
            field=field,
        )


def _check_id(value: object, field: str) -> str:
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


def _plain_text(data: dict[str, Any]) -> tuple[list[str], list[str], str | None] | None:
    """A text record that is plainly valid (lists of strings, ground truth non-blank, a
    non-blank string id or none), as the model would return it; None when anything needs the
    model's checks (and its messages). Most records are plain: this skips pydantic for them."""
    retrieved = data["retrieved"]
    truth = data["ground_truth"]
    record_id = data.get("id")  # absent when the dataset has no id field; then never None
    if (
        type(retrieved) is list
        and type(truth) is list
        and truth
        and (not retrieved or set(map(type, retrieved)) == {str})
        and set(map(type, truth)) == {str}
        and all(map(str.strip, truth))
        and ("id" not in data or (type(record_id) is str and record_id.strip()))
    ):
        return list(retrieved), list(truth), record_id
    return None


def _fields(info: ValidationInfo) -> dict[str, str]:
    return cast("dict[str, str]", info.context)


class _TextRecordModel(BaseModel):
    """Text mode: contexts and ground-truth contexts (graded or not) and an optional id.

    The validators call :mod:`ctxeval.validation`, so the messages are the ones the metrics give;
    the validation context carries the input's own field names for those messages.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retrieved: list[str]
    ground_truth: list[str] | list[GradedText]
    id: str | None = None

    @field_validator("retrieved", mode="plain")
    @classmethod
    def _retrieved(cls, value: object, info: ValidationInfo) -> list[str]:
        field = _fields(info)["retrieved"]
        _reject_nan(value, field, "strings")
        return validate_texts(value, field)  # type: ignore[return-value]

    @field_validator("ground_truth", mode="plain")
    @classmethod
    def _ground_truth(cls, value: object, info: ValidationInfo) -> list[str] | list[GradedText]:
        field = _fields(info)["ground_truth"]
        _reject_nan(value, field, "strings")
        return validate_texts(value, field, graded=True, allow_blank=False)

    @field_validator("id", mode="plain")
    @classmethod
    def _id(cls, value: object, info: ValidationInfo) -> str:
        return _check_id(value, _fields(info)["id"])


class _IdRecordModel(BaseModel):
    """ID mode: ranked ids and relevant ids or ``{id: grade}``; ids are compared as strings."""

    retrieved: list[str]
    ground_truth: dict[str, float]
    id: str | None = None

    @field_validator("retrieved", mode="plain")
    @classmethod
    def _retrieved(cls, value: object, info: ValidationInfo) -> list[str]:
        field = _fields(info)["retrieved"]
        _reject_nan(value, field, "ids")
        ids = validate_ids(value, field)
        return ids if set(map(type, ids)) <= {str} else [str(doc) for doc in ids]  # type: ignore[return-value]

    @field_validator("ground_truth", mode="plain")
    @classmethod
    def _ground_truth(cls, value: object, info: ValidationInfo) -> dict[str, float]:
        field = _fields(info)["ground_truth"]
        _reject_nan(value, field, "ids")
        qrels = validate_qrels(value, field)
        if set(map(type, qrels)) <= {str}:
            return qrels  # type: ignore[return-value]
        return {str(doc): grade for doc, grade in qrels.items()}

    @field_validator("id", mode="plain")
    @classmethod
    def _id(cls, value: object, info: ValidationInfo) -> str:
        return _check_id(value, _fields(info)["id"])


_MODELS: dict[str, type[_TextRecordModel] | type[_IdRecordModel]] = {
    "text": _TextRecordModel,
    "id": _IdRecordModel,
}


def _problems(error: ValidationError, names: Mapping[str, str]) -> list[tuple[str, str]]:
    """(field, message) for each failure, in our words; pydantic's only as a last resort."""
    found = []
    for detail in error.errors():
        cause = detail.get("ctx", {}).get("error")
        role = str(detail["loc"][0]) if detail["loc"] else ""
        field = names.get(role, role)
        if isinstance(cause, InvalidRecordError):
            found.append((field, str(cause)))
        else:
            found.append((field, f"{field} is not valid: {detail['msg']}"))
    return found


# --- the reader ------------------------------------------------------------------------------


_Item = tuple[int, object]  # (position for the location, a mapping or a _Problem or anything)


class _Reader:
    """Numbers records across the segments of one source, validates them and tracks ids."""

    _ROLE_NAMES: ClassVar[dict[str, str]] = {
        "retrieved": "retrieved",
        "ground_truth": "ground-truth",
        "id": "id",
    }

    # False in a replay of the ids only (see _Replay): build() stops before validating.
    _validates: ClassVar[bool] = True

    def __init__(self, fields: FieldMap, segments: list[_Segment]) -> None:
        self.fields = fields
        self.initial_fields = fields
        self.segments = segments
        self.index = 0
        # The ids seen so far, for the duplicate check; made at the first id (see _SeenIds).
        self.seen: _SeenIds | None = None
        self.contexts: dict[ResolvedFields, dict[str, str]] = {}
        # Reading one block of a partitioned run (ctxeval.distributed): the fields were resolved
        # for the whole file, ids are claimed (not checked: the blocks' claims are compared
        # across the dataset), and the duplicates found that way are given by position.
        self.forced: ResolvedFields | None = None
        self.claims: list[tuple[int, str, bool]] | None = None
        self.known_duplicates: Mapping[int, str] = {}
        self.resolutions = 0

    def records(self) -> Iterator[Record | RecordError]:
        for segment in self.segments:
            yield from _READERS[segment.format](self, segment)

    def resolve(self, columns: Iterable[str], source: str) -> ResolvedFields:
        if self.forced is not None:
            return self.forced
        self.resolutions += 1
        resolved = resolve_fields(list(columns), self.fields, source=source)
        if self.fields.mode is None:
            # Every later file of a glob must be in the same mode as the first.
            self.fields = replace(self.fields, mode=resolved.mode)
        return resolved

    def rows(self, segment: _Segment, items: Iterable[_Item]) -> Iterator[Record | RecordError]:
        """Records whose fields are known only by reading them (JSONL, JSON, iterables)."""
        resolved: ResolvedFields | None = None
        pending: list[_Item] = []
        not_found: FieldsNotFoundError | None = None
        unresolved = 0
        for item in items:
            if resolved is not None:
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
                if unresolved >= _RESOLVE_WINDOW:
                    raise not_found from None
                continue
            for waiting in pending:
                yield self.build(segment, waiting, resolved)
            pending.clear()
            yield self.build(segment, item, resolved)
        if not_found is not None and resolved is None:
            raise not_found

    def build(
        self, segment: _Segment, item: _Item, resolved: ResolvedFields | None
    ) -> Record | RecordError:
        pos, value = item
        index = self.index
        self.index += 1
        location = segment.locate(pos)
        if isinstance(value, _Problem):
            if value.id is not None:
                self._claim(value.id, segment, pos, record=False)
            return RecordError(index, value.id, location, value.field, value.message)
        if not isinstance(value, Mapping):
            return RecordError(index, None, location, None, _not_an_object(segment, value))
        assert resolved is not None  # a mapping is only built once the fields are known
        if resolved.id is None:
            raw_id = None
            stray = next((name for name in ID_CANDIDATES if name in value), None)
            if stray is not None and self.fields.id is None:
                return RecordError(
                    index,
                    _lenient_id(value[stray]),
                    location,
                    stray,
                    f"has an id field {stray!r} but the first record has none; give every "
                    "record an id, or none",
                )
        else:
            raw_id = _lenient_id(value.get(resolved.id))
        for role in ("retrieved", "ground_truth", "id"):
            name = getattr(resolved, role)
            if name is not None and name not in value:
                return RecordError(
                    index, raw_id, location, name, self._missing(role, name, value.keys())
                )

        if not self._validates:
            if raw_id is not None:  # the id a record claims does not depend on its validity
                self._claim(raw_id, segment, pos, record=False)
            return RecordError(index, raw_id, location, None, "not validated")

        names = self.contexts.get(resolved)
        if names is None:
            names = {"retrieved": resolved.retrieved, "ground_truth": resolved.ground_truth}
            if resolved.id is not None:
                names["id"] = resolved.id
            self.contexts[resolved] = names
        data = {role: value[name] for role, name in names.items()}
        plain = _plain_text(data) if resolved.mode == "text" else None
        retrieved: list[Any]
        ground_truth: Any
        if plain is not None:
            retrieved, ground_truth, model_id = plain
        else:
            try:
                model = _MODELS[resolved.mode].model_validate(data, context=names)
            except ValidationError as exc:
                if raw_id is not None:
                    self._claim(raw_id, segment, pos, record=False)
                problems = _problems(exc, names)
                message = "; ".join(m for _, m in problems)
                return RecordError(index, raw_id, location, problems[0][0], message)
            retrieved, ground_truth, model_id = model.retrieved, model.ground_truth, model.id

        if model_id is None:
            record_id = f"#{index}"
        else:
            record_id = model_id
            first_seen = self._claim(record_id, segment, pos, record=True)
            if first_seen is not None:
                return RecordError(
                    index,
                    record_id,
                    location,
                    resolved.id,
                    f"duplicate id {record_id!r}, first seen at {first_seen}; ids must "
                    "be unique within a dataset: rename or remove one of the records",
                )
        used = resolved.used
        metadata = {k: v for k, v in value.items() if k not in used}
        return Record(
            index=index,
            id=record_id,
            location=location,
            mode=resolved.mode,
            retrieved=retrieved,
            ground_truth=cast("dict[Hashable, float]", ground_truth),
            metadata=metadata,
        )

    def _claim(self, record_id: str, segment: _Segment, pos: int, *, record: bool) -> str | None:
        """Register ``record_id`` as seen at ``pos``; for a record, return where it was first
        seen when that is elsewhere (a duplicate)."""
        if self.claims is not None:
            self.claims.append((pos, record_id, record))
            return self.known_duplicates.get(pos) if record else None
        if self.seen is None:
            replayable = all(_replayable(segment) for segment in self.segments)
            self.seen = _SeenIds(self._replay if replayable else None)
        first = self.seen.claim(record_id, self._key(segment, pos), self.index - 1, record=record)
        return None if first is None else self._where(first)

    def _replay(self, stop: int, visit: Callable[[str, int], None]) -> None:
        """Read the source again from its start and call ``visit(id, key)`` for every id that
        the records before record ``stop`` claimed, in order (the records are not validated)."""
        try:
            for _ in _Replay(self.initial_fields, self.segments, stop, visit).records():
                pass
        except _ReplayDone:
            pass

    def _key(self, segment: _Segment, pos: int) -> int:
        return pos * len(self.segments) + segment.number

    def _where(self, key: int) -> str:
        pos, number = divmod(key, len(self.segments))
        return self.segments[number].locate(pos)

    def _missing(self, role: str, name: str, found: Iterable[str]) -> str:
        what = self._ROLE_NAMES[role]
        if role == "id":
            return (
                f"missing the id field {name!r} that other records have; fields found: "
                f"{_quoted(found)}; give every record an id, or none"
            )
        return (
            f"missing the {what} field {name!r}; fields found: {_quoted(found)}; add it, or "
            f'name the field that holds it: fields={{"{role}": ...}}'
        )


class _ReplayDone(Exception):
    """A replay reached its stop (or found what it looked for)."""


class _Replay(_Reader):
    """Reads a source again, up to a record, only for the ids its records claim."""

    _validates = False

    def __init__(
        self,
        fields: FieldMap,
        segments: list[_Segment],
        stop: int,
        visit: Callable[[str, int], None],
    ) -> None:
        super().__init__(fields, segments)
        self.stop = stop
        self.visit = visit

    def build(
        self, segment: _Segment, item: _Item, resolved: ResolvedFields | None
    ) -> Record | RecordError:
        if self.index >= self.stop:
            raise _ReplayDone
        return super().build(segment, item, resolved)

    def _claim(self, record_id: str, segment: _Segment, pos: int, *, record: bool) -> str | None:
        self.visit(record_id, self._key(segment, pos))
        return None


def _replayable(segment: _Segment) -> bool:
    """Whether a segment can be read again from its start: files given by path, DataFrames and
    sequences can; an open file or an iterator cannot."""
    if segment.format == "iterable":
        target = segment.target
        return isinstance(target, Sequence) and not isinstance(target, str | bytes)
    return segment.format == "frame" or isinstance(segment.target, str)


def _id_hash(record_id: str) -> int:
    """64 bits of ``record_id``: Python's own string hash (SipHash, seeded per process; cached
    on the string) where it is 64 bits wide."""
    return hash(record_id)


def _blake2b_hash(record_id: str) -> int:
    digest = blake2b(record_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


if sys.hash_info.width < 64:  # pragma: no cover - 32-bit Python: too many collisions
    _id_hash = _blake2b_hash


_MASK64 = (1 << 64) - 1


class _HashSet:
    """A set of 64-bit integers in one flat array (open addressing, linear probing): 10 to 15
    bytes per member, against ~125 for a dict of id strings."""

    _MAX_LOAD = 0.8

    def __init__(self) -> None:
        self._slots = array("Q", [0]) * 1024  # 0 marks an empty slot
        self._count = 0
        self._limit = int(len(self._slots) * self._MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    def add(self, value: int) -> bool:
        """Add ``value``; False if it was there already."""
        value = (value & _MASK64) or 1  # 0 is taken; 1 then stands for both (a collision)
        slots = self._slots
        size = len(slots)
        i = value % size
        while True:
            found = slots[i]
            if found == value:
                return False
            if not found:
                break
            i += 1
            if i == size:
                i = 0
        slots[i] = value
        self._count += 1
        if self._count > self._limit:
            self._grow()
        return True

    def _grow(self) -> None:
        old = self._slots
        size = len(old) * 3 // 2
        slots = self._slots = array("Q", [0]) * size
        self._limit = int(size * self._MAX_LOAD)
        for value in old:
            if value:
                i = value % size
                while slots[i]:
                    i += 1
                    if i == size:
                        i = 0
                slots[i] = value


# How many ids a reader resolves by reading its source again before it keeps every id exactly.
_MAX_REPLAYS = 4


class _SeenIds:
    """The ids a reader has seen, for the duplicate check, with where each was first seen.

    Each id is kept as a 64-bit hash (``_HashSet``), ~12 bytes, not as a string with its
    location. A new id's hash is almost never in the set; when a record's is, the id is either a
    duplicate or another id's hash, and ``replay`` (a second read of the source up to that
    record) finds which, and where the id was first seen, exactly. Ids resolved that way are
    remembered exactly, so that each costs one replay.

    A source that cannot be read twice (an open file, an iterator) keeps every id exactly from
    the start, as does a source that needed more than ``_MAX_REPLAYS`` replays (one with many
    duplicate ids, when bad records are skipped): replaying again and again would cost more
    than the memory saved.
    """

    def __init__(self, replay: Callable[[int, Callable[[str, int], None]], None] | None) -> None:
        self._replay = replay
        self._exact: dict[str, int] | None = {} if replay is None else None
        self._hashes = _HashSet()
        self._resolved: dict[str, int] = {}
        self._hash = _id_hash
        self.replays = 0

    def claim(self, record_id: str, key: int, index: int, *, record: bool) -> int | None:
        """Register ``record_id`` as seen at ``key`` by record ``index``; for a record (not a
        bad one), return the key where the id was first seen if that is elsewhere."""
        if self._exact is None:
            first = self._resolved.get(record_id)
            if first is None:
                if self._hashes.add(self._hash(record_id)) or not record:
                    # New; or a bad record's id, which has nothing to report: a later record
                    # with the same hash replays the source and meets this one there.
                    return None
                if self.replays < _MAX_REPLAYS:
                    first = self._first_claim(record_id, index)
                    self._resolved[record_id] = key if first is None else first
                    return first
                self._keep_exact(index)
        if self._exact is not None:
            first = self._exact.setdefault(record_id, key)
        return first if record and first != key else None

    def _first_claim(self, record_id: str, index: int) -> int | None:
        assert self._replay is not None
        self.replays += 1
        found: int | None = None

        def visit(claimed: str, key: int) -> None:
            nonlocal found
            if claimed == record_id:
                found = key
                raise _ReplayDone

        self._replay(index, visit)
        return found

    def _keep_exact(self, index: int) -> None:
        assert self._replay is not None
        self.replays += 1
        exact: dict[str, int] = {}

        def visit(claimed: str, key: int) -> None:
            exact.setdefault(claimed, key)

        self._replay(index, visit)
        self._exact = exact
        self._hashes = _HashSet()
        self._resolved = {}


def _quoted(names: Iterable[str]) -> str:
    listed = [repr(n) for n in names]
    return ", ".join(listed) if listed else "(none)"


def _lenient_id(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return None


_EXAMPLE = '{"retrieved_context": [...], "ground_truth_context": [...]}'


def _describe_json(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type_name(value)


def _not_an_object(segment: _Segment, value: object) -> str:
    if segment.format == "jsonl":
        return (
            f"the line is valid JSON but {_describe_json(value)}, not an object; each line must "
            f"hold one record like {_EXAMPLE}"
        )
    if segment.format == "json":
        return (
            f"the record is {_describe_json(value)}, not an object; the list must hold records "
            f"like {_EXAMPLE}"
        )
    return (
        f"the record is {type_name(value)}, not a mapping; each record must be a dict like "
        f"{_EXAMPLE}"
    )


# --- formats ---------------------------------------------------------------------------------


def _is_empty_file(segment: _Segment) -> bool:
    return isinstance(segment.target, str) and os.path.getsize(segment.target) == 0


def _read_jsonl(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    if _is_empty_file(segment):
        return
    if isinstance(segment.target, str):
        with open(segment.target, "rb") as lines:
            yield from reader.rows(segment, _jsonl_items(lines))
    else:
        yield from reader.rows(segment, _jsonl_items(segment.target))


def _jsonl_items(lines: Iterable[str | bytes], first: int = 1) -> Iterator[_Item]:
    for number, line in enumerate(lines, first):
        line = line.rstrip()  # so that an error at the end of the line is on this line
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            value = _Problem(
                f"malformed JSON: {exc.msg} at column {exc.colno} (character {exc.pos}); "
                "fix the line or remove it"
            )
        except UnicodeDecodeError as exc:
            value = _Problem(
                f"the line is not valid UTF-8 (byte {exc.object[exc.start]:#04x} at position "
                f"{exc.start}); save the file as UTF-8"
            )
        yield number, value


def _read_json(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    if _is_empty_file(segment):
        return
    if isinstance(segment.target, str):
        with open(segment.target, "rb") as file:
            text = file.read()
    else:
        text = segment.target.read()
    if not text.strip():
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (
            "; it looks like JSON lines: name the file .jsonl or pass format='jsonl'"
            if exc.msg == "Extra data"
            else ""
        )
        raise InvalidArgumentError(
            f"{segment.name}: not valid JSON: {exc.msg} at line {exc.lineno} column "
            f"{exc.colno}{hint}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{segment.name}: not valid UTF-8 text ({exc.reason})") from None
    records = _json_records(document, segment.name)
    yield from reader.rows(segment, enumerate(records))


def _json_records(document: object, name: str) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        lists = [key for key in ("records", "data") if isinstance(document.get(key), list)]
        if len(lists) == 1:
            records: list[Any] = document[lists[0]]
            return records
    raise InvalidArgumentError(
        f"{name}: a .json file must hold a list of records, or an object with the list under "
        f'"records" or "data" (one of them); got {_describe_json(document)}'
        + (f" with keys {_quoted(document)}" if isinstance(document, dict) else "")
    )


def _read_iterable(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    yield from reader.rows(segment, enumerate(segment.target))


def _read_csv(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    if _is_empty_file(segment):
        return
    if isinstance(segment.target, str):
        with open(segment.target, encoding="utf-8-sig", newline="") as file:
            yield from _csv_records(reader, segment, file)
    elif isinstance(segment.target, io.TextIOBase):
        yield from _csv_records(reader, segment, segment.target)
    else:
        text = io.TextIOWrapper(segment.target, encoding="utf-8-sig", newline="")
        try:
            yield from _csv_records(reader, segment, text)
        finally:
            text.detach()  # the caller's file stays open


def _csv_records(
    reader: _Reader, segment: _Segment, file: Iterable[str]
) -> Iterator[Record | RecordError]:
    rows = csv.reader(file)
    number = 0
    try:
        header = next(rows, None)
        if header is None:
            return
        resolved = reader.resolve(header, segment.name)
        width = len(header)
        columns = {name: i for i, name in enumerate(header)}
        decoded = {
            columns[resolved.retrieved]: ("retrieved", resolved.retrieved),
            columns[resolved.ground_truth]: ("ground_truth", resolved.ground_truth),
        }
        id_column = columns[resolved.id] if resolved.id is not None else None
        for cells in rows:
            number += 1
            if not cells:
                continue
            raw_id = cells[id_column] if id_column is not None and id_column < len(cells) else None
            if len(cells) != width:
                yield reader.build(
                    segment,
                    (
                        number,
                        _Problem(
                            f"the row has {len(cells)} cells but the header has {width} columns; "
                            "quote cells that contain commas, quotes or line breaks",
                            id=_lenient_id(raw_id),
                        ),
                    ),
                    resolved,
                )
                continue
            record: dict[str, Any] = {}
            problem = None
            for i, name in enumerate(header):
                cell = cells[i]
                if i in decoded:
                    value = _decode_cell(cell, name, resolved.mode, decoded[i][0])
                    if isinstance(value, _Problem):
                        problem = problem or replace(value, id=_lenient_id(raw_id))
                    record[name] = value
                else:
                    record[name] = cell
            yield reader.build(segment, (number, problem or record), resolved)
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{segment.locate(number + 1)}: not valid UTF-8 text ({exc.reason}); save the file "
            "as UTF-8"
        ) from None
    except csv.Error as exc:
        raise InvalidArgumentError(
            f"{segment.locate(number + 1)}: cannot parse the CSV ({exc}); if a cell is longer "
            "than Python's csv field limit, raise it with csv.field_size_limit(...) or use JSONL "
            "or Parquet"
        ) from None


def _decode_cell(cell: str, column: str, mode: str, role: str) -> object:
    if mode == "id" and role == "ground_truth":
        expected = 'a JSON-encoded list like ["d1", "d2"] or an object like {"d1": 2}'
    elif mode == "id":
        expected = 'a JSON-encoded list like ["d1", "d2"]'
    else:
        expected = 'a JSON-encoded list like ["a", "b"]'
    if not cell.strip():
        return _Problem(f"{column} is an empty cell; it must hold {expected} ([] for none)", column)
    shown = cell if len(cell) <= 40 else cell[:36] + "..."
    try:
        value = json.loads(cell)
    except json.JSONDecodeError as exc:
        return _Problem(
            f"{column} must be {expected}; got {shown!r}, which is not JSON ({exc.msg} at "
            f"column {exc.colno})",
            column,
        )
    if isinstance(value, list) or (isinstance(value, dict) and "object" in expected):
        return value
    return _Problem(
        f"{column} must be {expected}; got {shown!r}, which is JSON {_describe_json(value)}",
        column,
    )


def _read_parquet(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    if _is_empty_file(segment):
        return
    pq = _import_parquet()

    try:
        file = pq.ParquetFile(segment.target)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid, OSError, ...
        raise InvalidArgumentError(f"{segment.name}: cannot be read as Parquet ({exc})") from None
    with file:
        batches = file.iter_batches(batch_size=_PARQUET_BATCH)
        yield from _parquet_records(reader, segment, file.schema_arrow, batches, 1)


def _parquet_records(
    reader: _Reader, segment: _Segment, schema: Any, batches: Iterable[Any], first: int
) -> Iterator[Record | RecordError]:
    """Records of Parquet record batches; the first has row number ``first``."""
    import pyarrow as pa

    resolved = reader.resolve(schema.names, segment.name)
    truth = schema.field(resolved.ground_truth).type
    # A {id: grade} map column reads as a list of (id, grade) pairs; a struct column (what
    # pandas writes for a column of dicts) has every id of the file as a field, null where a
    # row's dict did not have it.
    pairs, struct = pa.types.is_map(truth), pa.types.is_struct(truth)
    number = first - 1
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            value = row[resolved.ground_truth]
            if pairs and isinstance(value, list):
                row[resolved.ground_truth] = dict(value)
            elif struct and isinstance(value, dict):
                row[resolved.ground_truth] = {k: v for k, v in value.items() if v is not None}
            yield reader.build(segment, (number, row), resolved)


def _read_frame(reader: _Reader, segment: _Segment) -> Iterator[Record | RecordError]:
    frame = segment.target
    columns = [str(c) for c in frame.columns]
    resolved = reader.resolve(columns, segment.name)
    for pos, values in enumerate(frame.itertuples(index=False, name=None)):
        row = {name: _python_value(v) for name, v in zip(columns, values, strict=True)}
        yield reader.build(segment, (pos, row), resolved)


def _python_value(value: object) -> object:
    """numpy scalars and arrays as Python values; pandas' NA as None."""
    module = type(value).__module__
    if module == "numpy":
        tolist: Callable[[], object] = value.tolist  # type: ignore[attr-defined]
        return tolist()
    if module.startswith("pandas") and type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


_READERS: dict[str, Callable[[_Reader, _Segment], Iterator[Record | RecordError]]] = {
    "jsonl": _read_jsonl,
    "json": _read_json,
    "csv": _read_csv,
    "parquet": _read_parquet,
    "frame": _read_frame,
    "iterable": _read_iterable,
}


# --- blocks: parts of a dataset read by separate tasks (ctxeval.distributed) -------------------


@dataclass(frozen=True)
class Block:
    """A part of a dataset that one task reads: a byte range of a JSONL file (the lines that
    *start* in ``[start, end)``), row groups ``[start, end)`` of a Parquet file, a whole CSV or
    JSON file, or a slice of an in-memory dataset (``target``: the records or the DataFrame
    rows). ``number`` is the file's place in the dataset; ``first_pos`` the position (line, row,
    record) the block's first record has in its file."""

    name: str
    format: str
    number: int
    target: Any
    start: int = 0
    end: int = 0
    first_pos: int = 1


def _open_binary(path: str) -> Any:
    if "://" in path:
        try:
            import fsspec
        except ImportError as exc:
            raise MissingDependencyError(
                f"{path}: reading remote files needs fsspec (pip install fsspec and the "
                "filesystem's package, e.g. s3fs)"
            ) from exc
        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def _owned_lines(handle: Any, start: int, end: int) -> Iterator[bytes]:
    """The lines of a binary file that start in ``[start, end)``."""
    if start > 0:
        handle.seek(start - 1)
        handle.readline()  # the end of the line that started before this block
    offset = handle.tell()
    while offset < end:
        line = handle.readline()
        if not line:
            return
        yield line
        offset += len(line)


def _block_reader(block: Block, resolved: ResolvedFields | None, fields: FieldsInput) -> _Reader:
    segment = _Segment(block.name, block.format, block.target, block.number)
    reader = _Reader(as_field_map(fields), [segment])
    reader.forced = resolved
    return reader


def _block_items(reader: _Reader, block: Block) -> Iterator[Record | RecordError]:
    segment = reader.segments[0]
    if block.format == "jsonl":
        with _open_binary(block.target) as handle:
            lines = _owned_lines(handle, block.start, block.end)
            yield from reader.rows(segment, _jsonl_items(lines, block.first_pos))
    elif block.format == "parquet":
        pq = _import_parquet()
        with _open_binary(block.target) as handle, pq.ParquetFile(handle) as file:
            groups = list(range(block.start, block.end))
            batches = file.iter_batches(batch_size=_PARQUET_BATCH, row_groups=groups)
            yield from _parquet_records(
                reader, segment, file.schema_arrow, batches, block.first_pos
            )
    elif block.format == "iterable":
        yield from reader.rows(segment, enumerate(block.target, block.first_pos))
    else:  # whole files and DataFrame slices read as the local reader reads them
        yield from _READERS[block.format](reader, segment)


def file_fields(block: Block, fields: FieldsInput) -> ResolvedFields | None:
    """The fields the local reader resolves for this file (from its first records)."""
    reader = _block_reader(block, None, fields)
    resolved: ResolvedFields | None = None
    original = reader.resolve

    def remember(columns: Iterable[str], source: str) -> ResolvedFields:
        nonlocal resolved
        resolved = original(columns, source)
        return resolved

    reader.resolve = remember  # type: ignore[method-assign]
    for _ in _block_items(reader, block):
        if resolved is not None:
            break
    return resolved


def read_block(
    block: Block,
    resolved: ResolvedFields | None,
    *,
    fields: FieldsInput = None,
    first_index: int = 0,
    claims: list[tuple[int, str, bool]] | None = None,
    known_duplicates: Mapping[int, str] | None = None,
) -> Iterator[Record | RecordError]:
    """Read one block as :func:`read_records` reads the whole dataset, with the fields resolved
    for its file, indices from ``first_index``, ids claimed into ``claims`` instead of checked,
    and the duplicates found across the dataset given as ``{position: first location}``."""
    reader = _block_reader(block, resolved, fields)
    reader.index = first_index
    reader.claims = [] if claims is None else claims
    reader.known_duplicates = known_duplicates or {}
    return _block_items(reader, block)
