"""The per-query table: one row per scored record, in input order, with a fixed schema.

A row is ``{"id": ..., <metadata>..., <metric columns>...}``. The table keeps

- the ids, one list;
- the metadata, one list per field (objects, as the records had them): a record's field named
  like ``"id"`` or a metric column is stored as ``metadata.<name>`` (:func:`metadata_column`);
- the metric values, one 2-D block of float64 (one row of ``len(metric_columns)`` doubles per
  record), with a mask of the values that are ``None`` (a query skipped by policy) made at the
  first such value.

A run with four cut-offs has 36 metric columns: as dicts, a million rows took 1.6 GB; here a row
costs its 288 bytes of doubles, a pointer per id and metadata field, and the id itself.
"""

from __future__ import annotations

import operator
import sys
from array import array
from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any, cast, overload

import numpy as np

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require

__all__ = ["PerQueryTable", "metadata_column"]


class _Absent:
    """Marks a metadata cell of a row whose record did not have that field."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "_ABSENT"  # unpickles to the one instance


_ABSENT = _Absent()


def metadata_column(name: str, metric_columns: Container[str]) -> str:
    """The column of a record's metadata field ``name`` in a per-query row: ``name`` itself, or
    ``metadata.<name>`` when it is ``"id"`` or a metric column. Interned: a million rows share
    one string per column."""
    clash = name == "id" or name in metric_columns
    return sys.intern(f"metadata.{name}" if clash else name)


# How the metadata of records with given field names goes into the columns: the column of each
# distinct renamed field with the position of the value it takes (the last field of a name
# wins, as in a dict), and the columns those records lack.
_Route = tuple[list[tuple[list[Any], int]], bool, list[list[Any]]]


class PerQueryTable(Sequence[dict[str, Any]]):
    """Per-query rows: ids, metadata columns and a float64 block of metric values.

    Built by the aggregator, a scored batch at a time (:meth:`append_many`) or one scored record
    at a time (:meth:`append`), or from the rows of a result file (:meth:`append_row`); read as
    a sequence of dicts: ``len``, iteration, indexing and slicing (a list) give fresh dicts
    equal to the rows as they were added: floats bit for bit, ``None`` as ``None``, metadata
    objects as they were. ``==`` compares with another table
    or a list of dicts; ``+`` with a list gives a list. :meth:`column` gives one column,
    :meth:`to_pandas` a DataFrame, ``list(table)`` plain dicts (for JSON).

    Keys of a row come in the table's order: ``id``, the metadata fields in the order the table
    first met them (a row lacks the fields its record did not have), then the metric columns.
    """

    __hash__ = None  # type: ignore[assignment]  # grows, like a list

    def __init__(self, metric_columns: Sequence[str]) -> None:
        self._metrics: tuple[str, ...] = tuple(metric_columns)
        self._position = {name: j for j, name in enumerate(self._metrics)}
        if len(self._position) != len(self._metrics):
            raise InvalidArgumentError(
                f"PerQueryTable({list(self._metrics)}): a metric column is named twice"
            )
        self._width = len(self._metrics)
        self._ids: list[Any] = []
        self._metadata: dict[str, list[Any]] = {}
        self._block = array("d")
        self._none: bytearray | None = None  # 1 where a value is None, beside the block
        self._routes: dict[tuple[str, ...], _Route] = {}

    # -- building ---------------------------------------------------------------------------
    @property
    def metric_columns(self) -> tuple[str, ...]:
        return self._metrics

    @property
    def metadata_columns(self) -> tuple[str, ...]:
        return tuple(self._metadata)

    def append(
        self, record_id: Any, metadata: Mapping[str, Any], values: Sequence[float | None]
    ) -> None:
        """Add a scored record's row: its id, its metadata fields (renamed by
        :func:`metadata_column`) and one value per metric column, a float or None."""
        if len(values) != self._width:
            raise InvalidArgumentError(
                f"PerQueryTable.append: {len(values)} values for {self._width} metric columns"
            )
        # The values first: a value that is not a number fails before the table changes.
        missing = None
        if None in values:
            missing = bytes(value is None for value in values)
            row = array("d", [0.0 if value is None else value for value in values])
        else:
            row = array("d", cast("Sequence[float]", values))
        keys = tuple(metadata)
        route = self._routes.get(keys)
        if route is None:
            route = self._route(keys)
        targets, in_order, absent = route
        if in_order:
            for (column, _), value in zip(targets, metadata.values(), strict=True):
                column.append(value)
        else:
            given = list(metadata.values())
            for column, pick in targets:
                column.append(given[pick])
        for column in absent:
            column.append(_ABSENT)
        self._ids.append(record_id)
        self._block.extend(row)
        if missing is not None:
            if self._none is None:
                self._none = bytearray(len(self._block) - self._width)
            self._none.extend(missing)
        elif self._none is not None:
            self._none.extend(bytes(self._width))

    def append_many(
        self,
        record_ids: Sequence[Any],
        metadata: Sequence[Mapping[str, Any]],
        values: Any,
        none: Any = None,
    ) -> None:
        """Add many scored records' rows at once, as :meth:`append` would one by one:
        ``values`` a (rows x metric columns) float array, ``none`` None or a bool array of the
        same shape, True where a value is None."""
        block = np.asarray(values, dtype=np.float64)
        if block.ndim != 2 or block.shape[1] != self._width:
            raise InvalidArgumentError(
                f"PerQueryTable.append_many: values of shape {block.shape} for "
                f"{self._width} metric columns"
            )
        if not len(record_ids) == len(metadata) == len(block):
            raise InvalidArgumentError(
                f"PerQueryTable.append_many: {len(record_ids)} ids, {len(metadata)} metadata "
                f"and {len(block)} rows of values"
            )
        missing = None if none is None else np.asarray(none, dtype=bool)
        if missing is not None and missing.any():
            block = np.where(missing, 0.0, block)
        else:
            missing = None
        keys = [tuple(fields) for fields in metadata]
        start, count = 0, len(keys)
        while start < count:  # runs of rows whose metadata has the same fields
            end = start + 1
            while end < count and keys[end] == keys[start]:
                end += 1
            route = self._routes.get(keys[start]) or self._route(keys[start])
            targets, _, absent = route
            if targets:
                given = [list(fields.values()) for fields in metadata[start:end]]
                for column, pick in targets:
                    column.extend([values[pick] for values in given])
            for column in absent:
                column.extend([_ABSENT] * (end - start))
            self._ids.extend(record_ids[start:end])
            start = end
        if missing is not None and self._none is None:
            self._none = bytearray(len(self._block))
        self._block.frombytes(np.ascontiguousarray(block).tobytes())
        if self._none is not None:
            self._none.extend(
                missing.astype(np.uint8).tobytes() if missing is not None else bytes(block.size)
            )

    def extend(self, other: PerQueryTable) -> None:
        """Add every row of ``other`` (a table with the same metric columns), in its order, as
        :meth:`append` would have one by one."""
        if other._metrics != self._metrics:
            raise InvalidArgumentError(
                f"PerQueryTable.extend: metric columns {list(other._metrics)} differ from "
                f"{list(self._metrics)}"
            )
        rows, added = len(self._ids), len(other._ids)
        for name, column in self._metadata.items():
            column.extend(other._metadata.get(name, [_ABSENT] * added))
        for name, column in other._metadata.items():
            if name not in self._metadata:
                self._metadata[name] = [_ABSENT] * rows + column
        self._routes.clear()
        self._ids.extend(other._ids)
        if other._none is not None and self._none is None:
            self._none = bytearray(len(self._block))
        self._block.extend(other._block)
        if self._none is not None:
            self._none.extend(other._none if other._none is not None else bytes(len(other._block)))

    def _route(self, keys: tuple[str, ...]) -> _Route:
        names = [metadata_column(key, self._position) for key in keys]
        last = {name: pick for pick, name in enumerate(names)}
        rows = len(self._ids)
        for name in last:
            if name not in self._metadata:
                self._metadata[name] = [_ABSENT] * rows
                self._routes.clear()  # the other routes now lack this column
        targets = [(self._metadata[name], pick) for name, pick in last.items()]
        in_order = len(last) == len(names)
        absent = [column for name, column in self._metadata.items() if name not in last]
        route = (targets, in_order, absent)
        self._routes[keys] = route
        return route

    def fits(self, row: Mapping[str, Any]) -> bool:
        """True when ``row`` can be added with :meth:`append_row`: it has an ``id`` and a float
        or None under every metric column."""
        if "id" not in row:
            return False
        for name in self._metrics:
            value = row.get(name, _ABSENT)
            if value is not None and type(value) is not float:
                return False
        return True

    def append_row(self, row: Mapping[str, Any]) -> None:
        """Add a row read back from a result file (see :meth:`fits`); its other keys are its
        metadata, already named as in a row."""
        if not self.fits(row):
            raise InvalidArgumentError(
                f"PerQueryTable.append_row: the row {row!r:.80} lacks an id or a float (or None) "
                f"under a metric column of {self._metrics}"
            )
        metadata = {k: v for k, v in row.items() if k != "id" and k not in self._position}
        self.append(row["id"], metadata, [row[name] for name in self._metrics])

    # -- rows -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("per-query row index out of range")
        return self._row(i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self._ids)):
            yield self._row(i)

    def _row(self, i: int) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self._ids[i]}
        for name, column in self._metadata.items():
            value = column[i]
            if value is not _ABSENT:
                row[name] = value
        start = i * self._width
        end = start + self._width
        if self._none is not None and any(self._none[start:end]):
            values: list[Any] = self._block[start:end].tolist()
            for j, missing in enumerate(self._none[start:end]):
                if missing:
                    values[j] = None
            row.update(zip(self._metrics, values, strict=True))
        else:
            row.update(zip(self._metrics, self._block[start:end], strict=True))
        return row

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PerQueryTable | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __add__(self, other: object) -> list[dict[str, Any]]:
        if not isinstance(other, PerQueryTable | list):
            return NotImplemented
        return [*self, *other]

    def __radd__(self, other: object) -> list[dict[str, Any]]:
        if not isinstance(other, list):
            return NotImplemented
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_routes"] = {}  # rebuilt on the next append
        return state

    # -- columns ----------------------------------------------------------------------------
    def column_names(self) -> list[str]:
        """``id``, the metadata columns, then the metric columns."""
        return ["id", *self._metadata, *self._metrics]

    def column(self, name: str) -> list[Any]:
        """The values of ``name``, one per row; None where a row does not have it."""
        if name == "id":
            return list(self._ids)
        position = self._position.get(name)
        if position is not None:
            values: list[Any] = self._block[position :: self._width].tolist()
            if self._none is not None:
                for i, missing in enumerate(self._none[position :: self._width]):
                    if missing:
                        values[i] = None
            return values
        column = self._metadata.get(name)
        if column is None:
            return [None] * len(self)
        return [None if value is _ABSENT else value for value in column]

    def values(self) -> Any:
        """The metric values as a (rows x metric columns) float64 numpy array (a copy); a None
        value is NaN there (see :meth:`none_mask`)."""
        block = np.frombuffer(self._block, dtype=np.float64) if self._block else np.empty(0)
        return block.reshape(len(self), self._width).copy()

    def none_mask(self) -> Any:
        """A (rows x metric columns) bool numpy array: True where a value is None."""
        if self._none is None:
            return np.zeros((len(self), self._width), dtype=bool)
        mask = np.frombuffer(self._none, dtype=np.uint8) if self._none else np.empty(0, np.uint8)
        return mask.reshape(len(self), self._width).astype(bool)

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame, equal to
        ``pandas.DataFrame(list(table), columns=table.column_names())``, built column by column."""
        pd = require("pandas", purpose="PerQueryTable.to_pandas()", extra="pandas")
        data: dict[str, Any] = {"id": list(self._ids)}
        for name, column in self._metadata.items():
            # A field a record lacks is NaN in a DataFrame made from dicts.
            data[name] = [np.nan if value is _ABSENT else value for value in column]
        block = self.values()
        mask = self.none_mask()
        for j, name in enumerate(self._metrics):
            # A column with None values: as pandas infers it from the objects.
            data[name] = self.column(name) if mask[:, j].any() else block[:, j]
        return pd.DataFrame(data, columns=self.column_names())
