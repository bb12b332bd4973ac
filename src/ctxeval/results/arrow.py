"""Per-query rows as Arrow tables (Parquet result files, a distributed run's parts) and back.

Metric columns go straight from a :class:`~ctxeval.results.table.PerQueryTable`'s float64 block.
A metadata column whose values Arrow cannot hold as they are (dicts, or values of different
types in different rows) is written as JSON text, and the table's schema metadata names it
(:data:`JSON_COLUMNS_KEY`), so that :func:`decoded_rows` gives every value back as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ctxeval.foundation.optional import require
from ctxeval.results.table import PerQueryTable

__all__ = ["JSON_COLUMNS_KEY", "arrow_table", "columns_of", "decoded_rows", "encoded_table"]

JSON_COLUMNS_KEY = b"ctxeval_json_columns"
"""Schema-metadata key of a table's columns written as JSON text."""


def columns_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every column of the rows, in order of first appearance."""
    if isinstance(rows, PerQueryTable):
        return rows.column_names()
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def _json(value: Any) -> Any:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def arrow_table(rows: Sequence[dict[str, Any]]) -> Any:
    """The rows as a pyarrow Table, as they are (Arrow's errors for values it cannot hold in one
    column are raised; :func:`encoded_table` writes those as JSON text).

    A :class:`PerQueryTable` gives every one of its columns, the metric columns straight from
    its float64 block (None as null); other rows are read as ``pa.Table.from_pylist`` does (the
    columns of the first row).
    """
    pa = require("pyarrow", purpose="writing Parquet", extra="parquet")
    if not isinstance(rows, PerQueryTable):
        return pa.Table.from_pylist(list(rows))
    arrays = [pa.array(rows.column("id"))]
    for name in rows.metadata_columns:
        arrays.append(pa.array(rows.column(name)))
    values, missing = rows.values(), rows.none_mask()
    for j in range(len(rows.metric_columns)):
        column = values[:, j]
        if missing[:, j].all() and len(rows):
            arrays.append(pa.array([None] * len(rows)))  # as from_pylist: a null column
        else:
            arrays.append(pa.array(column, mask=missing[:, j], type=pa.float64()))
    return pa.Table.from_arrays(arrays, names=rows.column_names())


def encoded_table(rows: Sequence[dict[str, Any]]) -> Any:
    """:func:`arrow_table`, with each column that holds a dict, or values Arrow cannot put in
    one column, as JSON text, named in the schema metadata."""
    pa = require("pyarrow", purpose="writing Parquet", extra="parquet")
    names = columns_of(rows)
    dicts = {name for name in _metadata_names(rows, names) if _holds_dict(rows, name)}
    if not dicts:
        try:
            return arrow_table(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    encoded, arrays = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            if name in dicts:
                raise pa.ArrowTypeError(name)
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([_json(v) for v in values], type=pa.string()))
            encoded.append(name)
    table = pa.Table.from_arrays(arrays, names=names)
    return table.replace_schema_metadata({JSON_COLUMNS_KEY: json.dumps(encoded).encode()})


def _metadata_names(rows: Sequence[dict[str, Any]], names: list[str]) -> list[str]:
    if isinstance(rows, PerQueryTable):
        return list(rows.metadata_columns)
    return names


def _holds_dict(rows: Sequence[dict[str, Any]], name: str) -> bool:
    if isinstance(rows, PerQueryTable):
        return any(isinstance(value, dict) for value in rows.column(name))
    return any(isinstance(row.get(name), dict) for row in rows)


def decoded_rows(table: Any, encoded: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
    """The table's rows, the columns its schema metadata names (and ``encoded``) read back from
    JSON text."""
    raw = (table.schema.metadata or {}).get(JSON_COLUMNS_KEY)
    names = {*encoded, *(json.loads(raw) if raw else ())}
    for batch in table.to_batches():
        for row in batch.to_pylist():
            if names:
                row = {
                    k: json.loads(v) if k in names and v is not None else v for k, v in row.items()
                }
            yield row
