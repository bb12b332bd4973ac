"""The formats: each turns one segment of a source into items ``(position, value)``.

A value is what the segment holds for one record (a mapping, or anything else a JSON line or an
iterable may hold), or a :class:`Problem` when the record could not be read far enough to be
validated (a malformed JSON line, a CSV cell that is not JSON). The position is the line, row or
index that messages name. :mod:`ctxeval.io.stream` turns the items into records.

Tabular formats (CSV, Parquet, DataFrames) know their columns before their first record: they
settle the fields with the ``resolve`` callback before yielding anything, and use the answer to
decode cells. JSONL, JSON and iterables leave that to the stream, from the records themselves.

Files are streamed: JSONL line by line, CSV row by row, Parquet batch by batch. A ``.json`` file
is one JSON document, so it is parsed whole.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
import tokenize
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ctxeval.foundation.errors import (
    Fix,
    InvalidArgumentError,
    PythonLiteralWarning,
    type_name,
)
from ctxeval.io.fields import ResolvedFields
from ctxeval.io.sources import (
    Segment,
    bom_encoding,
    import_parquet,
    json_error,
    not_utf8,
    open_lines,
)
from ctxeval.io.spreadsheet import restore
from ctxeval.records.checks import find_unwritable, plainly_writable
from ctxeval.records.model import claimed_id

__all__ = [
    "FORMAT_READERS",
    "PARQUET_BATCH",
    "Item",
    "Problem",
    "Resolve",
    "describe_json",
    "iterable_items",
    "jsonl_items",
    "not_an_object",
    "parquet_items",
    "quoted",
]

PARQUET_BATCH = 1024


@dataclass(frozen=True, slots=True)
class Problem:
    """A record that could not be read far enough to validate it."""

    message: str
    field: str | None = None
    id: str | None = None
    # The record it was found in, when it could be decoded: the stream names its id.
    record: Mapping[str, Any] | None = None


# Text that may decode to a lone surrogate: a JSON escape \\ud800-\\udfff, UTF-8-encoded
# surrogates (json.loads decodes bytes with "surrogatepass"), or surrogates already in a str.
# Each pattern starts with a literal, which the regex engine scans for quickly.
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_TOO_DEEP = (
    "the JSON nests lists or objects too deeply to read (Python's limit is about 1,000 levels); "
    "flatten it"
)


def may_hold_surrogates(text: str | bytes) -> bool:
    """Whether decoded ``text`` could hold a lone surrogate (cheap: most text has no escape)."""
    if isinstance(text, bytes):
        return bool(
            (b"\\" in text and _ESCAPE_BYTES.search(text))
            or (b"\xed" in text and _ENCODED_SURROGATE.search(text))
        )
    return bool(
        ("\\" in text and _ESCAPE_TEXT.search(text))
        or (not text.isascii() and _SURROGATE.search(text))
    )


def unwritable(value: object) -> Problem | None:
    """A Problem for a decoded record holding a lone surrogate or nested too deeply."""
    if type(value) is dict and plainly_writable(value):
        return None
    if isinstance(value, Mapping):
        for key, inner in value.items():
            message = find_unwritable(key, "a field name") or find_unwritable(inner, str(key))
            if message:
                field = key if isinstance(key, str) and find_unwritable(key, "") is None else None
                return Problem(message, field, record=value)
        return None
    message = find_unwritable(value, "the record")
    return Problem(message) if message else None


Item = tuple[int, object]  # (position for the location, a mapping or a Problem or anything)
# Settles the fields of a segment from its column names; the second argument names the
# source in messages.
Resolve = Callable[[Iterable[str], str], ResolvedFields]
FormatReader = Callable[[Segment, Resolve], Iterator[Item]]


def _is_empty_file(segment: Segment) -> bool:
    return isinstance(segment.target, str) and os.path.getsize(segment.target) == 0


# --- JSON lines, JSON, iterables -------------------------------------------------------------


def read_jsonl(segment: Segment, resolve: Resolve) -> Iterator[Item]:
    if _is_empty_file(segment):
        return
    if isinstance(segment.target, str):
        with open_lines(segment.target) as lines:
            yield from _decoded(segment, jsonl_items(lines))
    else:
        yield from _decoded(segment, jsonl_items(segment.target))


def _decoded(segment: Segment, items: Iterator[Item]) -> Iterator[Item]:
    """``items``, with a UTF-16/32 decoding error (a whole file's, not one line's) as an error
    naming the file and line."""
    number = 0
    try:
        for number, value in items:
            yield number, value
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{segment.locate(number + 1)} or after: {not_utf8(exc)}"
        ) from None


def jsonl_items(lines: Iterable[str | bytes], first: int = 1) -> Iterator[Item]:
    """The items of JSON lines, numbered from ``first``; blank lines are skipped."""
    for number, line in enumerate(lines, first):
        line = line.rstrip()  # so that an error at the end of the line is on this line
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            # the hint about a JSON array is for a file's first line, not a block's
            value = Problem(_malformed(exc, line, number == 1))
        except UnicodeDecodeError as exc:
            value = Problem(f"the line is {not_utf8(exc)}")
        except RecursionError:
            value = Problem(_TOO_DEEP)
        else:
            if may_hold_surrogates(line):
                value = unwritable(value) or value
        yield number, value


def _malformed(exc: json.JSONDecodeError, line: str | bytes, first: bool) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    if first and text.lstrip("\ufeff").strip() == "[":
        return (
            "this looks like a JSON array (a line holding only '['), not JSON lines: name the "
            "file .json, or write one record per line"
        )
    if "\x00" in text:
        return (
            "the line holds NUL bytes: the file looks like UTF-16 without a byte-order mark; "
            "save it as UTF-8"
        )
    return f"malformed JSON: {json_error(exc)} (character {exc.pos}); fix the line or remove it"


def read_json(segment: Segment, resolve: Resolve) -> Iterator[Item]:
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
        fixes: tuple[Fix, ...] = ()
        hint = ""
        if exc.msg == "Extra data":  # it looks like JSON lines
            fixes = (Fix("format", "jsonl", "name the file .jsonl or pass format='jsonl'"),)
            hint = f"; it looks like JSON lines: {fixes[0].text}"
        raise InvalidArgumentError(
            f"{segment.name}: not valid JSON: {json_error(exc, line=True)}{hint}",
            fixes=fixes,
        ) from None
    except UnicodeDecodeError as exc:
        line = exc.object.count(b"\n", 0, exc.start) + 1 if bom_encoding(text[:4]) is None else 1
        raise InvalidArgumentError(f"{segment.name}:{line}: {not_utf8(exc)}") from None
    except RecursionError:
        raise InvalidArgumentError(f"{segment.name}: {_TOO_DEEP}") from None
    records = _json_records(document, segment.name)
    if may_hold_surrogates(text):
        yield from ((i, unwritable(value) or value) for i, value in enumerate(records))
    else:
        yield from enumerate(records)


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
        f'"records" or "data" (one of them); got {describe_json(document)}'
        + (f" with keys {quoted(document)}" if isinstance(document, dict) else "")
    )


def read_iterable(segment: Segment, resolve: Resolve) -> Iterator[Item]:
    return iterable_items(segment.target, 0)


def iterable_items(values: Iterable[Any], first_pos: int) -> Iterator[Item]:
    """Python objects as items, numbered from ``first_pos`` (a partition of a list starts
    later). They may hold anything: every record is looked at. A pydantic model (ragas'
    SingleTurnSample, as an EvaluationDataset yields them) is read as its fields that are set."""
    for position, value in enumerate(values, first_pos):
        if not isinstance(value, Mapping) and callable(getattr(value, "model_dump", None)):
            value = value.model_dump(exclude_none=True)
        yield position, unwritable(value) or value


# --- CSV -------------------------------------------------------------------------------------


def read_csv(segment: Segment, resolve: Resolve) -> Iterator[Item]:
    """The rows of a CSV file. UTF-8 is decoded with ``surrogateescape``: a byte that is not
    UTF-8 (a Latin-1 ``é``) spoils its own row only, which is a bad record naming its row and
    the file's line (a strict decoder reads ahead in blocks, so it would fail the whole file
    at a row before the byte)."""
    if _is_empty_file(segment):
        return
    if isinstance(segment.target, str):
        with open(segment.target, "rb") as raw:
            encoding = bom_encoding(raw.read(4))
        errors = "strict" if encoding else "surrogateescape"
        with open(
            segment.target, encoding=encoding or "utf-8-sig", errors=errors, newline=""
        ) as file:
            yield from _csv_items(segment, resolve, file, escaped=encoding is None)
    elif isinstance(segment.target, io.TextIOBase):
        yield from _csv_items(segment, resolve, segment.target)
    else:
        text = io.TextIOWrapper(
            segment.target, encoding="utf-8-sig", errors="surrogateescape", newline=""
        )
        try:
            yield from _csv_items(segment, resolve, text, escaped=True)
        finally:
            text.detach()  # the caller's file stays open


def _csv_items(
    segment: Segment, resolve: Resolve, file: Iterable[str], *, escaped: bool = False
) -> Iterator[Item]:
    """``escaped``: the file was decoded with ``surrogateescape`` (its bad bytes are
    U+DC80-U+DCFF)."""
    rows = csv.reader(file)
    number = 0
    try:
        header = next(rows, None)
        if header is None:
            return
        header = [restore(name) for name in header]  # a spreadsheet's text quote taken away
        _check_header(segment, header, escaped)
        resolved = resolve(header, segment.name)
        width = len(header)
        columns = {name: i for i, name in enumerate(header)}
        decoded = {
            columns[resolved.retrieved]: ("retrieved", resolved.retrieved),
            columns[resolved.ground_truth]: ("ground_truth", resolved.ground_truth),
        }
        id_column = columns[resolved.id] if resolved.id is not None else None
        said = False  # whether the Python-literal cells were mentioned
        last_line = rows.line_num  # the file's line where the previous row ended
        for cells in rows:
            number += 1
            first_line, last_line = last_line + 1, rows.line_num
            if not cells:
                continue
            raw_id = (
                restore(cells[id_column])
                if id_column is not None and id_column < len(cells)
                else None
            )
            problem = escaped and _bad_bytes(cells, header, first_line)
            if problem:
                yield number, replace(problem, id=claimed_id(raw_id))
                continue
            if len(cells) != width:
                yield (
                    number,
                    Problem(
                        f"the row has {len(cells)} cells but the header has {width} columns; "
                        "quote cells that contain commas, quotes or line breaks",
                        id=claimed_id(raw_id),
                    ),
                )
                continue
            record: dict[str, Any] = {}
            problem = None
            for i, name in enumerate(header):
                cell = cells[i]
                if i in decoded:
                    value, literal = _decode_cell(cell, name, resolved.mode, decoded[i][0])
                    if literal and not said:
                        said = _say_literal(segment, number, name, rows.line_num)
                    if isinstance(value, Problem):
                        problem = problem or replace(value, id=claimed_id(raw_id))
                    record[name] = value
                else:
                    record[name] = restore(cell)
            if problem is None and any(map(may_hold_surrogates, cells)):
                found = unwritable(record)
                problem = found and replace(found, id=claimed_id(raw_id), record=None)
            yield number, problem or record
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{segment.locate(number + 1)}: {not_utf8(exc)}") from None
    except csv.Error as exc:
        raise InvalidArgumentError(
            f"{segment.locate(number + 1)}: cannot parse the CSV ({exc}); if a cell is longer "
            "than Python's csv field limit, raise it with csv.field_size_limit(...) or use JSONL "
            "or Parquet"
        ) from None


# A byte that is not UTF-8, decoded with "surrogateescape".
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _check_header(segment: Segment, header: list[str], escaped: bool) -> None:
    """The header's names are UTF-8 and none repeats; else an error (not a bad record)."""
    if escaped and (problem := _bad_bytes(header, header, 1)):
        raise InvalidArgumentError(f"{segment.name}: header: {problem.message}")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InvalidArgumentError(
            f"{segment.name}: header: the column "
            f"{quoted(repeated)} appears more than once; rename or remove the copies "
            "(which one is meant cannot be told)"
        )


def _bad_bytes(cells: list[str], header: list[str], first_line: int) -> Problem | None:
    """A Problem for the first byte of a row that is not UTF-8, naming the file's line it is on
    (the row began on ``first_line``; a quoted cell may span lines) and its column."""
    line = first_line
    for i, cell in enumerate(cells):
        found = None if cell.isascii() else _ESCAPED_BYTE.search(cell)
        if found is None:
            line += cell.count("\n")
            continue
        line += cell.count("\n", 0, found.start())
        column = header[i] if i < len(header) else None
        where = f", in column {column!r}" if column is not None else ""
        return Problem(
            f"the row is not valid UTF-8 (byte {ord(found.group()) - 0xDC00:#04x} on line "
            f"{line} of the file{where}); save the file as UTF-8",
            column,
        )
    return None


def _say_literal(segment: Segment, number: int, column: str, line: int) -> bool:
    """Warn (once per file) that list cells are Python literals. The warning points at the
    file and line (Python shows it as ``data.csv:2: PythonLiteralWarning: ...``), not at
    ctxeval's code, which no stack level could name from inside a reader's generators."""
    warnings.warn_explicit(
        f"{segment.locate(number)}: column {column!r} holds Python list literals "
        "(['a', 'b'], as pandas' to_csv writes), not JSON; read as literals (never run as code)",
        PythonLiteralWarning,
        filename=segment.name,
        lineno=line,  # the file's line (the row's last line), the header being line 1
        # this module's registry, as warnings.warn would use: the same file read twice in a
        # run (its fields, then its records) says it once
        registry=globals().setdefault("__warningregistry__", {}),
    )
    return True


def _decode_cell(cell: str, column: str, mode: str, role: str) -> tuple[object, bool]:
    """The cell's list (or object), or a Problem; and whether it was a Python literal."""
    if mode == "id" and role == "ground_truth":
        expected = 'a JSON-encoded list like ["d1", "d2"] or an object like {"d1": 2}'
    elif mode == "id":
        expected = 'a JSON-encoded list like ["d1", "d2"]'
    else:
        expected = 'a JSON-encoded list like ["a", "b"]'
    if not cell.strip():
        return Problem(
            f"{column} is an empty cell; it must hold {expected} ([] for none)", column
        ), False
    shown = cell if len(cell) <= 40 else cell[:36] + "..."
    try:
        value = json.loads(cell)
    except RecursionError:
        return Problem(f"{column}: {_TOO_DEEP}", column), False
    except json.JSONDecodeError as exc:
        literal = python_literal(cell)
        if literal is None:
            return Problem(
                f"{column} must be {expected}; got {shown!r}, which is not JSON "
                f"({json_error(exc)}){_numpy_hint(cell)}",
                column,
            ), False
        value, literal_used = literal, True
    else:
        literal_used = False
    if isinstance(value, list) or (isinstance(value, dict) and "object" in expected):
        return value, literal_used
    return Problem(
        f"{column} must be {expected}; got {shown!r}, which is JSON {describe_json(value)}",
        column,
    ), False


def python_literal(cell: str) -> list[Any] | dict[Any, Any] | None:
    """A list or dict cell written as a Python literal (``['a', "b's"]``: what
    ``pandas.DataFrame.to_csv`` writes for list columns), read with :func:`ast.literal_eval`,
    which accepts literals only and never runs code; None when the cell is not one."""
    text = cell.strip()
    if not text or text[0] not in "[{" or len(text) > _MAX_LITERAL:
        return None
    try:
        if _adjacent_strings(text):
            return None  # 'a' 'b' is one string to Python: a numpy repr, not a list of two
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, tokenize.TokenError):
        return None
    return value if isinstance(value, list | dict) else None


def _adjacent_strings(text: str) -> bool:
    """Whether two string literals follow each other (Python would join them)."""
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            continue
        if token.type == tokenize.STRING and previous == tokenize.STRING:
            return True
        previous = token.type
    return False


_MAX_LITERAL = 50_000_000


def _numpy_hint(cell: str) -> str:
    """The fix for a numpy array's repr (``['a' 'b']``: no commas), which no parser can trust."""
    if cell.lstrip().startswith("[") and re.search(r"['\"]\s+['\"]", cell):
        return (
            "; it looks like a numpy array's repr (no commas): convert the column with "
            ".tolist() before to_csv, or save JSONL or Parquet"
        )
    return ""


# --- Parquet and DataFrames ------------------------------------------------------------------


def read_parquet(segment: Segment, resolve: Resolve) -> Iterator[Item]:
    if _is_empty_file(segment):
        return
    pq = import_parquet()

    try:
        file = pq.ParquetFile(segment.target)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid, OSError, ...
        raise InvalidArgumentError(f"{segment.name}: cannot be read as Parquet ({exc})") from None
    with file:
        batches = file.iter_batches(batch_size=PARQUET_BATCH)
        yield from parquet_items(segment, resolve, file.schema_arrow, batches, 1)


def parquet_items(
    segment: Segment, resolve: Resolve, schema: Any, batches: Iterable[Any], first: int
) -> Iterator[Item]:
    """Items of Parquet record batches; the first has row number ``first``."""
    import pyarrow as pa

    resolved = resolve(schema.names, segment.name)
    truth = schema.field(resolved.ground_truth).type
    # A {id: grade} map column reads as a list of (id, grade) pairs; a struct column (what
    # pandas writes for a column of dicts) has every id of the file as a field, null where a
    # row's dict did not have it.
    struct = pa.types.is_struct(truth)
    # Every map column (the ground truth's {id: grade}, metadata that was a dict, as convert
    # writes it) is read back as a dict, not as Arrow's list of (key, value) pairs.
    maps = [field.name for field in schema if pa.types.is_map(field.type)]
    number = first - 1
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            for name in maps:
                if isinstance(row[name], list):
                    row[name] = dict(row[name])
            value = row[resolved.ground_truth]
            if struct and isinstance(value, dict):
                row[resolved.ground_truth] = {k: v for k, v in value.items() if v is not None}
            yield number, row


def read_frame(segment: Segment, resolve: Resolve) -> Iterator[Item]:
    frame = segment.target
    columns = [str(c) for c in frame.columns]
    resolve(columns, segment.name)
    for pos, values in enumerate(frame.itertuples(index=False, name=None)):
        record = {name: _python_value(v) for name, v in zip(columns, values, strict=True)}
        yield pos, unwritable(record) or record


def _python_value(value: object) -> object:
    """numpy scalars and arrays as Python values; pandas' NA as None."""
    module = type(value).__module__
    if module == "numpy":
        tolist: Callable[[], object] = value.tolist  # type: ignore[attr-defined]
        return tolist()
    if module.startswith("pandas") and type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


FORMAT_READERS: dict[str, FormatReader] = {
    "jsonl": read_jsonl,
    "json": read_json,
    "csv": read_csv,
    "parquet": read_parquet,
    "frame": read_frame,
    "iterable": read_iterable,
}


# --- words for messages ----------------------------------------------------------------------


_EXAMPLE = '{"retrieved_context": [...], "ground_truth_context": [...]}'


def describe_json(value: object) -> str:
    """What a decoded JSON value is, in JSON's words ("an array", "null", ...)."""
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


def not_an_object(segment: Segment, value: object) -> str:
    """The message for an item of ``segment`` that is not a record (a mapping)."""
    if segment.format == "jsonl":
        return (
            f"the line is valid JSON but {describe_json(value)}, not an object; each line must "
            f"hold one record like {_EXAMPLE}"
        )
    if segment.format == "json":
        return (
            f"the record is {describe_json(value)}, not an object; the list must hold records "
            f"like {_EXAMPLE}"
        )
    return (
        f"the record is {type_name(value)}, not a mapping; each record must be a dict like "
        f"{_EXAMPLE}"
    )


def quoted(names: Iterable[str]) -> str:
    """``'a', 'b'`` (or ``(none)``), for lists of field names in messages."""
    listed = [repr(n) for n in names]
    return ", ".join(listed) if listed else "(none)"
