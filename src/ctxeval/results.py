"""Evaluation results: per-query rows, aggregates and a summary; saved atomically, loaded back.

Aggregates are folded in as records arrive (:class:`Aggregator`), so a run never needs every row
in memory to compute them:

- ``{metric}@{k}``: macro average, the mean of per-query values; a query whose values are
  ``None`` (``empty_ground_truth="skip"``) is left out and counted;
- ``micro_{metric}@{k}`` for the set metrics: TP, FP and FN summed over queries first.

The per-query rows that a run keeps are stored by column (:class:`PerQueryRows`) and read as
dicts.
"""

from __future__ import annotations

import csv
import json
import operator
import os
import sys
import tempfile
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, overload

import numpy as np

from ctxeval.errors import InvalidArgumentError, InvalidArgumentTypeError, MissingDependencyError
from ctxeval.io.atomic import atomic_write as _atomic
from ctxeval.metrics.functional import f1_score
from ctxeval.records import RecordError
from ctxeval.scoring import RowResult, ScoringPlan, column_name

__all__ = [
    "Aggregator",
    "AggregatorState",
    "EvaluationResult",
    "JsonlResultWriter",
    "PerQueryRows",
]

_FORMAT_VERSION = 1


@dataclass
class EvaluationResult:
    """What a run produced.

    - ``per_query``: one dict per scored record, in input order: ``id``, the record's metadata
      fields, then a value per metric column (``None`` where a query was skipped by policy). A
      run stores them by column (:class:`PerQueryRows`, a read-only-dict sequence); any
      sequence of dicts, such as a list, works as well;
    - ``aggregate``: ``{column: macro mean}`` and ``micro_`` set metrics;
    - ``summary``: counts and means that qualify the aggregate (queries, skipped records, empty
      ground truth, mean relevant items per query, mean k actually used, ...);
    - ``skipped``: the bad records left out with ``on_error="skip"``: index, id, location, field
      and message.
    """

    per_query: Sequence[dict[str, Any]]
    aggregate: dict[str, float | None]
    summary: dict[str, Any]
    skipped: list[dict[str, Any]] = field(default_factory=list)

    # -- rendering ---------------------------------------------------------------------------
    def __str__(self) -> str:
        s = self.summary
        lines = [
            f"{s.get('queries', 0)} queries from {s.get('source', '?')}"
            f" ({s.get('skipped_records', 0)} skipped, "
            f"{s.get('empty_ground_truth', 0)} with empty ground truth)"
        ]
        width = max((len(key) for key in self.aggregate), default=0)
        for key, value in self.aggregate.items():
            shown = "n/a" if value is None else f"{value:.4f}"
            lines.append(f"  {key:<{width}}  {shown}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "aggregate": self.aggregate,
            "summary": self.summary,
            "skipped": self.skipped,
            "per_query": list(self.per_query),
        }

    def to_pandas(self) -> Any:
        """The per-query rows as a pandas DataFrame (requires pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError(
                "EvaluationResult.to_pandas() needs pandas: pip install 'ctxeval[pandas]'"
            ) from exc
        if isinstance(self.per_query, PerQueryRows):
            return self.per_query.to_pandas()
        return pd.DataFrame(self.per_query)

    # -- files -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the result to ``.jsonl``, ``.json``, ``.csv`` or ``.parquet``, atomically.

        The file appears complete or not at all, even after an error or Ctrl-C. JSONL puts the
        aggregate and summary on the first line and one query per line after it; CSV writes the
        per-query rows and the rest to ``<name>.summary.json`` beside it; Parquet keeps the rest
        in the file's metadata.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        header = {
            "ctxeval_result": _FORMAT_VERSION,
            "aggregate": self.aggregate,
            "summary": self.summary,
            "skipped": self.skipped,
        }
        if suffix == ".jsonl":
            with _atomic(target) as out:
                out.write(json.dumps(header, ensure_ascii=False) + "\n")
                for row in self.per_query:
                    out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        elif suffix == ".json":
            with _atomic(target) as out:
                json.dump(
                    {**header, "per_query": list(self.per_query)},
                    out,
                    ensure_ascii=False,
                    default=str,
                    indent=1,
                )
        elif suffix == ".csv":
            columns = _columns(self.per_query)
            with _atomic(target) as out:
                writer = csv.DictWriter(out, fieldnames=columns)
                writer.writeheader()
                for row in self.per_query:
                    writer.writerow({k: _csv_cell(row.get(k)) for k in columns})
            with _atomic(_sidecar(target)) as out:
                json.dump(header, out, ensure_ascii=False, indent=1)
        elif suffix == ".parquet":
            self._save_parquet(target, header)
        else:
            raise InvalidArgumentError(
                f"cannot save results to {target}: use a .jsonl, .json, .csv or .parquet name"
            )
        return target

    def _save_parquet(self, target: Path, header: dict[str, Any]) -> None:
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise MissingDependencyError(
                f"saving {target} needs pyarrow: pip install 'ctxeval[parquet]'"
            ) from exc
        table = _arrow_table(self.per_query)
        table = table.replace_schema_metadata({"ctxeval": json.dumps(header)})
        with _atomic(target, binary=True) as out:
            pq.write_table(table, out)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvaluationResult:
        """Read a result written by :meth:`save` (the rows into a :class:`PerQueryRows`)."""
        source = Path(path)
        suffix = source.suffix.lower()
        if source.is_dir():  # a distributed run: _result.json and Parquet parts
            from ctxeval.distributed import iter_parts

            header = _header(
                json.loads((source / "_result.json").read_text(encoding="utf-8")), source
            )
            rows = PerQueryRows(iter_parts(source))
        elif suffix == ".jsonl":
            with source.open(encoding="utf-8") as lines:
                header = _header(json.loads(next(lines, "{}")), source)
                rows = PerQueryRows(json.loads(line) for line in lines if line.strip())
        elif suffix == ".json":
            data = json.loads(source.read_text(encoding="utf-8"))
            header = _header(data, source)
            rows = PerQueryRows(data.get("per_query", []))
        elif suffix == ".csv":
            sidecar = _sidecar(source)
            if not sidecar.exists():
                raise InvalidArgumentError(
                    f"{source}: its aggregate and summary live in {sidecar.name}, which is "
                    "missing; keep the two files together"
                )
            header = _header(json.loads(sidecar.read_text(encoding="utf-8")), sidecar)
            with source.open(encoding="utf-8", newline="") as handle:
                # ids stay strings ("007", "1e3"); other cells were written as JSON scalars.
                rows = PerQueryRows(
                    {k: (v if k == "id" else _from_csv(v)) for k, v in row.items()}
                    for row in csv.DictReader(handle)
                )
        elif suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(source)
            raw = (table.schema.metadata or {}).get(b"ctxeval")
            if raw is None:
                raise InvalidArgumentError(f"{source} was not written by ctxeval (no metadata)")
            header = _header(json.loads(raw), source)
            rows = PerQueryRows(row for batch in table.to_batches() for row in batch.to_pylist())
        else:
            raise InvalidArgumentError(
                f"cannot load results from {source}: use a .jsonl, .json, .csv or .parquet file"
            )
        return cls(
            per_query=rows,
            aggregate=header["aggregate"],
            summary=header["summary"],
            skipped=header.get("skipped", []),
        )


class JsonlResultWriter:
    """Streams per-query rows of a run to disk and writes the result file atomically at the end.

    Rows go to a temporary file as they arrive, so memory stays flat however many records a run
    has; :meth:`finish` writes the header line (aggregate, summary, skipped) followed by the rows
    to the target, which appears complete or not at all.
    """

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.target = Path(target)
        if self.target.suffix.lower() != ".jsonl":
            raise InvalidArgumentError(
                f"run(output={os.fspath(target)!r}): per-query rows are streamed to .jsonl "
                "files; save other formats with result.save(path) after the run"
            )
        self.target.parent.mkdir(parents=True, exist_ok=True)
        # Closed by finish()/close(); a context manager cannot span the run.
        self._rows = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", dir=self.target.parent
        )
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        self._rows.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self.count += 1

    def finish(self, result: EvaluationResult) -> None:
        header = {
            "ctxeval_result": _FORMAT_VERSION,
            "aggregate": result.aggregate,
            "summary": result.summary,
            "skipped": result.skipped,
        }
        self._rows.seek(0)
        with _atomic(self.target) as out:
            out.write(json.dumps(header, ensure_ascii=False) + "\n")
            while chunk := self._rows.read(1 << 20):
                out.write(chunk)
        self.close()

    def close(self) -> None:
        self._rows.close()


def _header(data: Any, source: Path) -> dict[str, Any]:
    if not isinstance(data, dict) or "aggregate" not in data or "summary" not in data:
        raise InvalidArgumentError(f"{source} is not a ctxeval result file (no aggregate/summary)")
    return data


def _sidecar(path: Path) -> Path:
    return path.with_name(path.stem + ".summary.json")


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    if isinstance(rows, PerQueryRows):
        return rows.column_names()
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict | bool):
        return json.dumps(value, ensure_ascii=False)
    return value


def _from_csv(value: str) -> Any:
    if value == "":
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def _parquet_cell(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value


def _arrow_table(rows: Sequence[dict[str, Any]]) -> Any:
    """The rows as a pyarrow Table, as ``pa.Table.from_pylist`` makes it (the columns of the
    first row; dict cells as JSON text), built column by column from a :class:`PerQueryRows`."""
    import pyarrow as pa

    if not isinstance(rows, PerQueryRows):
        return pa.Table.from_pylist([{k: _parquet_cell(v) for k, v in row.items()} for row in rows])
    names = list(rows[0]) if rows else []
    arrays = []
    for name in names:
        floats = rows._float_column(name)
        if floats is not None:
            arrays.append(pa.array(floats))
        else:
            arrays.append(pa.array([_parquet_cell(v) for v in rows.column(name)]))
    return pa.Table.from_arrays(arrays, names=names)


# --- per-query rows --------------------------------------------------------------------------


@dataclass(slots=True)
class _Layout:
    """The keys of some rows, in their order, and where each key's values are stored.

    ``sources`` holds, per key, the position of a float column in a row of the block, or an
    object column (a list, or a dict by row number); ``absent`` the list columns these rows do
    not have (padded with None). ``objects`` is set when the keys are object columns followed by
    every float column in order (every row an evaluation makes): such a row is read with one
    slice of the block.
    """

    names: tuple[str, ...]
    sources: tuple[int | _Column, ...]
    absent: list[list[Any]]
    objects: tuple[_Column, ...] | None


@dataclass(slots=True)
class _ScoredLayout:
    """How an evaluated record's metadata (by its keys) goes into the columns of a row."""

    layout: int
    id_column: _Column
    columns: list[_Column]  # one per distinct row key from the metadata
    # Which metadata value each column takes; None: one each, in order, every column a list.
    picks: list[int] | None
    absent: list[list[Any]]


# An object column: a list with one value per row, or a dict of the rows that have the key.
_Column = list[Any] | dict[int, Any]
# Object columns kept as lists (a pointer per row, whether a row has the key or not).
_MAX_LISTS = 64


class PerQueryRows(Sequence[dict[str, Any]]):
    """Per-query rows stored by column; reads as a list of dicts, in input order.

    A run with four cut-offs has 37 columns: as dicts, a million rows took 1.6 GB; here the float
    columns share one array of doubles (8 bytes a value), the ids and metadata are one list per
    column, and each row's keys are a shared tuple, so a row costs about 0.3 KB plus its id.

    Every read builds fresh dicts equal to the rows that were added: floats bit for bit, None and
    ints and any other value as they were, keys in their order. Indexing, slicing (a list),
    iteration, ``len``, ``==`` (with a list or another ``PerQueryRows``), ``append``, ``extend``
    and pickling work as on a list; changing a dict read from it does not change the row: use
    ``list(rows)`` for a list of dicts of your own.
    """

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]] = (),
        *,
        value_columns: Sequence[str] | None = None,
    ) -> None:
        self._size = 0
        # Float columns: a row-major block of doubles, ``_width`` per row. Given up front (an
        # evaluation's metric columns) or taken from the float values of the first row.
        self._values: tuple[str, ...] = ()
        self._value_index: dict[str, int] = {}
        self._width = 0
        self._block = array("d")
        self._zeros = array("d")
        self._fixed = False
        if value_columns is not None:
            self._set_value_columns(value_columns)
        # Every other column: one list each, None where a row does not have the key; past
        # _MAX_LISTS of them (rows with keys of their own), a dict of the rows that have it.
        self._objects: dict[str, _Column] = {}
        self._lists = 0
        self._layouts: list[_Layout] = []
        self._layout_ids: dict[tuple[str, ...], int] = {}
        self._row_layout = array("B")
        # Rows whose float-column values are not all floats (None under empty_ground_truth=
        # "skip", or anything a row added by hand holds): row number, (position, value) pairs.
        self._odd_rows = array("q")
        self._odd: list[tuple[tuple[int, Any], ...]] = []
        self._none_patterns: dict[tuple[int, ...], tuple[tuple[int, Any], ...]] = {}
        self._odd_columns: set[int] = set()  # the positions that have odd values
        self._scored: dict[tuple[str, ...], _ScoredLayout] = {}
        self.extend(rows)

    def _set_value_columns(self, names: Iterable[str]) -> None:
        self._values = tuple(dict.fromkeys(names))
        self._value_index = {name: j for j, name in enumerate(self._values)}
        self._width = len(self._values)
        self._zeros = array("d", bytes(8 * self._width))
        self._fixed = True

    # -- adding rows ------------------------------------------------------------------------
    def append(self, row: Mapping[str, Any]) -> None:
        """Add a row at the end (any mapping; its keys and values are kept as they are)."""
        if not isinstance(row, Mapping):
            raise InvalidArgumentTypeError(
                f"per-query rows are dicts; cannot append {type(row).__name__} {row!r:.60}"
            )
        items = list(row.items())
        if not self._fixed:
            self._set_value_columns(name for name, value in items if type(value) is float)
        layout_id = self._layout_id(tuple(name for name, _ in items))
        layout = self._layouts[layout_id]
        i = self._size
        base = i * self._width
        self._block.extend(self._zeros)
        odd = []
        for source, (_, value) in zip(layout.sources, items, strict=True):
            if type(source) is int:
                if type(value) is float:
                    self._block[base + source] = value
                else:
                    odd.append((source, value))
            elif type(source) is list:
                source.append(value)
            else:
                source[i] = value  # type: ignore[index]
        for column in layout.absent:
            column.append(None)
        if odd:
            self._add_odd(i, odd)
        self._add_row_layout(layout_id)

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.append(row)

    def _append_scored(
        self, record_id: str, metadata: dict[str, Any], values: list[Any], plain: bool
    ) -> None:
        """Add an evaluated record's row: ``{"id": ..., **metadata, **values}`` with the
        metadata keys that clash with "id" or a value column renamed ``metadata.<key>``.
        ``values`` follow the value columns; ``plain``: every one is a float."""
        keys = tuple(metadata)
        scored = self._scored.get(keys)
        if scored is None:
            scored = self._scored_layout(keys)
        i = self._size
        if scored.picks is None:
            scored.id_column.append(record_id)  # type: ignore[union-attr]
            for column, value in zip(scored.columns, metadata.values(), strict=True):
                column.append(value)  # type: ignore[union-attr]
        else:
            given = [record_id, *metadata.values()]
            for column, pick in zip([scored.id_column, *scored.columns], scored.picks, strict=True):
                if type(column) is list:
                    column.append(given[pick])
                else:
                    column[i] = given[pick]
        for column in scored.absent:
            column.append(None)
        if plain:
            self._block.extend(values)
        else:
            self._block.extend([v if type(v) is float else 0.0 for v in values])
            self._add_odd(i, [(j, v) for j, v in enumerate(values) if type(v) is not float])
        self._add_row_layout(scored.layout)

    def _scored_layout(self, keys: tuple[str, ...]) -> _ScoredLayout:
        # Rename as the row dict would be built: later keys overwrite earlier ones of the same
        # (renamed) name, in the earlier one's place.
        names: dict[str, int] = {"id": -1}
        for j, key in enumerate(keys):
            clash = key in self._value_index or key == "id"
            names[sys.intern(f"metadata.{key}" if clash else key)] = j
        picks = [pick + 1 for pick in names.values()]  # into [id, *metadata values]
        layout_id = self._layout_id((*names, *self._values))
        layout = self._layouts[layout_id]
        id_column, *columns = cast("list[_Column]", layout.sources[: len(names)])
        direct = picks == list(range(len(keys) + 1)) and all(
            type(column) is list for column in (id_column, *columns)
        )
        scored = _ScoredLayout(
            layout=layout_id,
            id_column=id_column,
            columns=columns,
            picks=None if direct else picks,
            absent=layout.absent,
        )
        self._scored[keys] = scored
        return scored

    def _layout_id(self, names: tuple[str, ...]) -> int:
        layout_id = self._layout_ids.get(names)
        if layout_id is not None:
            return layout_id
        sources: list[int | _Column] = []
        for name in names:
            position = self._value_index.get(name)
            if position is not None:
                sources.append(position)
            else:
                column = self._objects.get(name)
                if column is None:
                    column = self._new_object_column(name)
                sources.append(column)
        present = set(names)
        absent = [
            column
            for name, column in self._objects.items()
            if name not in present and isinstance(column, list)
        ]
        leading = next((n for n, source in enumerate(sources) if type(source) is int), len(sources))
        objects = None
        if names[leading:] == self._values:
            objects = tuple(cast("list[_Column]", sources[:leading]))
        self._layouts.append(_Layout(names, tuple(sources), absent, objects))
        layout_id = len(self._layouts) - 1
        self._layout_ids[names] = layout_id
        if layout_id == 256 and self._row_layout.typecode == "B":
            self._row_layout = array("I", self._row_layout)
        return layout_id

    def _new_object_column(self, name: str) -> _Column:
        column: _Column
        if self._lists < _MAX_LISTS:
            column = [None] * self._size
            for layout in self._layouts:
                layout.absent.append(column)
            self._lists += 1
        else:
            column = {}
        self._objects[name] = column
        return column

    def _add_row_layout(self, layout_id: int) -> None:
        self._row_layout.append(layout_id)
        self._size += 1

    def _add_odd(self, row: int, odd: list[tuple[int, Any]]) -> None:
        pattern: tuple[tuple[int, Any], ...] = tuple(odd)
        if all(value is None for _, value in odd):  # shared: rows skipped by policy
            positions = tuple(j for j, _ in odd)
            shared = self._none_patterns.get(positions)
            if shared is None:
                self._none_patterns[positions] = pattern
                self._odd_columns.update(positions)
            else:
                pattern = shared
        else:
            self._odd_columns.update(j for j, _ in odd)
        self._odd_rows.append(row)
        self._odd.append(pattern)

    # -- reading rows -----------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._row(i, self._odd_at(i)) for i in range(*index.indices(self._size))]
        i = operator.index(index)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError("per-query row index out of range")
        return self._row(i, self._odd_at(i))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        odd_rows, odd = self._odd_rows, self._odd
        k = 0
        next_odd = odd_rows[0] if odd_rows else -1
        row = self._row
        for i in range(self._size):
            if i == next_odd:
                yield row(i, odd[k])
                k += 1
                next_odd = odd_rows[k] if k < len(odd_rows) else -1
            else:
                yield row(i, None)

    def _odd_at(self, i: int) -> tuple[tuple[int, Any], ...] | None:
        rows = self._odd_rows
        if not rows:
            return None
        k = bisect_left(rows, i)
        return self._odd[k] if k < len(rows) and rows[k] == i else None

    def _row(self, i: int, odd: tuple[tuple[int, Any], ...] | None) -> dict[str, Any]:
        layout = self._layouts[self._row_layout[i]]
        base = i * self._width
        if layout.objects is not None:
            values = [column[i] for column in layout.objects]
            values += self._block[base : base + self._width]
        else:
            block = self._block
            values = [
                block[base + source] if type(source) is int else source[i]  # type: ignore[index]
                for source in layout.sources
            ]
        row = dict(zip(layout.names, values, strict=True))
        if odd is not None:
            names = self._values
            for position, value in odd:
                row[names[position]] = value
        return row

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PerQueryRows | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __add__(self, other: object) -> list[dict[str, Any]]:
        if not isinstance(other, PerQueryRows | list):
            return NotImplemented
        return [*self, *other]

    def __radd__(self, other: object) -> list[dict[str, Any]]:
        if not isinstance(other, list):
            return NotImplemented
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    # -- columns ----------------------------------------------------------------------------
    def column_names(self) -> list[str]:
        """Every key of every row, in order of first appearance."""
        names: dict[str, None] = {}
        for layout in self._layouts:
            names.update(dict.fromkeys(layout.names))
        return list(names)

    def column(self, name: str) -> list[Any]:
        """The values of ``name``, one per row; None where a row does not have it."""
        position = self._value_index.get(name)
        if position is None:
            column = self._objects.get(name)
            if type(column) is dict:
                return [column.get(i) for i in range(self._size)]
            return [None] * self._size if column is None else list(column)
        values: list[Any] = self._block[position :: self._width].tolist()
        if position in self._odd_columns:
            found: dict[int, dict[int, Any]] = {}  # by pattern: rows skipped share theirs
            for row, pattern in zip(self._odd_rows, self._odd, strict=True):
                odd = found.get(id(pattern))
                if odd is None:
                    odd = found[id(pattern)] = dict(pattern)
                if position in odd:
                    values[row] = odd[position]
        lacking = {n for n, layout in enumerate(self._layouts) if name not in layout.names}
        if lacking:
            for row, layout_id in enumerate(self._row_layout):
                if layout_id in lacking:
                    values[row] = None
        return values

    def _float_column(self, name: str) -> Any:
        """A numpy float64 array of ``name`` when every row has a float there, else None."""
        position = self._value_index.get(name)
        if (
            position is None
            or any(name not in layout.names for layout in self._layouts)
            or position in self._odd_columns
        ):
            return None
        block = np.frombuffer(self._block, dtype=np.float64) if self._block else np.empty(0)
        return block.reshape(self._size, self._width)[:, position].copy()

    def to_pandas(self) -> Any:
        """As ``pandas.DataFrame(list(rows))``, built column by column when every row has the
        same keys."""
        import pandas as pd

        if len(self._layouts) != 1:
            return pd.DataFrame(list(self))
        names = self._layouts[0].names
        data: dict[str, Any] = {}
        for name in names:
            floats = self._float_column(name)
            data[name] = self.column(name) if floats is None else floats
        return pd.DataFrame(data, columns=list(names))


# Every finite double is an integer multiple of 2**-1074.
_EXACT_SHIFT = 1074


def _exact(value: float) -> int:
    """``value`` as an exact integer in units of 2**-1074 (the denominator of
    ``as_integer_ratio`` is a power of two)."""
    numerator, denominator = value.as_integer_ratio()
    return numerator << (_EXACT_SHIFT + 1 - denominator.bit_length())


def _exact_column_sums(block: Any) -> list[int]:
    """The exact sum of each column of a 2-D float64 array of finite values, in units of
    2**-1074: what adding ``_exact`` of every value gives, for many rows at once.

    Each value is ``m * 2**(e - 53)`` with an integer ``|m| < 2**53`` (``frexp``); the ``m`` of
    one column and exponent are summed in float64 as two 27-bit halves, which stays exact for
    up to 2**25 rows; only one big integer per (column, exponent) is then made.
    """
    rows, width = block.shape
    if not rows or not width:
        return [0] * width
    fractions, exponents = np.frexp(block)
    mantissas = np.ldexp(fractions, 53).astype(np.int64)
    high = mantissas >> 26
    low = mantissas - (high << 26)  # in [0, 2**26)
    lowest = int(exponents.min())
    span = int(exponents.max()) - lowest + 1
    keys = ((exponents - lowest) + np.arange(width) * span).ravel()
    high_sums = np.bincount(keys, weights=high.ravel(), minlength=width * span)
    low_sums = np.bincount(keys, weights=low.ravel(), minlength=width * span)
    sums = [0] * width
    for key in np.flatnonzero((high_sums != 0) | (low_sums != 0)).tolist():
        column, exponent = divmod(key, span)
        total = (int(high_sums[key]) << 26) + int(low_sums[key])
        shift = exponent + lowest - 53 + _EXACT_SHIFT
        # A negative shift only for subnormals, whose mantissas end in that many zero bits.
        sums[column] += total << shift if shift >= 0 else total >> -shift
    return sums


# Rows of plain float values buffered before their exact sums are taken together.
_FOLD_ROWS = 1024
_FLOAT_ONLY = frozenset({float})


@dataclass(frozen=True)
class AggregatorState:
    """A picklable snapshot of an :class:`Aggregator`'s sums (what a worker sends back)."""

    values: dict[str, Any]


class Aggregator:
    """Folds row results into per-query rows and running sums, in input order."""

    def __init__(
        self,
        plan: ScoringPlan,
        source: str,
        *,
        keep_rows: bool = True,
        row_sink: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.plan = plan
        self.source = source
        self.keep_rows = keep_rows
        self.row_sink = row_sink
        self.columns = plan.columns()
        self._column_order = tuple(self.columns)
        self.rows = PerQueryRows(value_columns=self.columns)
        self.skipped: list[dict[str, Any]] = []
        # Exact sums (see _exact): the mean does not depend on the order of the records, so a
        # run split into any partitions, merged in any order, gives the same aggregate.
        self._sums = dict.fromkeys(self.columns, 0)
        self._counts = dict.fromkeys(self.columns, 0)
        # Rows whose values are all floats wait here, row-major, for _fold.
        self._pending = array("d")
        self._pending_rows = 0
        self._micro: dict[tuple[int, int | None], list[int]] = {}
        self._queries = 0
        self._empty = 0
        self._excluded = 0
        self._relevant = 0
        self._retrieved = 0
        self._k_used = {k: 0 for k in self._all_ks()}
        self._tokenless = 0
        self._tokenless_records = 0

    def _all_ks(self) -> list[int | None]:
        ks: dict[int | None, None] = {}
        for metric in self.plan.metrics:
            ks.update(dict.fromkeys(self.plan.metric_ks(metric)))
        return list(ks)

    _STATE = (
        "_sums",
        "_counts",
        "_micro",
        "_queries",
        "_empty",
        "_excluded",
        "_relevant",
        "_retrieved",
        "_k_used",
        "_tokenless",
        "_tokenless_records",
        "skipped",
    )

    def state(self) -> AggregatorState:
        """The running sums, to merge into another aggregator (a partition's share of a run)."""
        self._fold()
        return AggregatorState({name: getattr(self, name) for name in self._STATE})

    def merge(self, state: AggregatorState) -> None:
        """Add another aggregator's sums (all exact, so the order of merging never matters)."""
        other = state.values
        for name in ("_sums", "_counts", "_k_used"):
            mine = getattr(self, name)
            for key, value in other[name].items():
                mine[key] = mine.get(key, 0) + value
        for key, counts in other["_micro"].items():
            sums = self._micro.setdefault(key, [0, 0, 0, 0])
            for i, value in enumerate(counts):
                sums[i] += value
        for name in (
            "_queries",
            "_empty",
            "_excluded",
            "_relevant",
            "_retrieved",
            "_tokenless",
            "_tokenless_records",
        ):
            setattr(self, name, getattr(self, name) + other[name])
        self.skipped.extend(other["skipped"])

    def add(self, item: RowResult | RecordError) -> None:
        if isinstance(item, RecordError):
            self.skipped.append(
                {
                    "index": item.index,
                    "id": item.id,
                    "location": item.location,
                    "field": item.field,
                    "message": item.message,
                }
            )
            return
        self._queries += 1
        self._empty += item.empty_ground_truth
        self._excluded += item.skipped_values
        self._relevant += item.num_relevant
        self._retrieved += item.num_retrieved
        self._tokenless += item.tokenless
        self._tokenless_records += item.tokenless > 0
        for k in self._k_used:
            self._k_used[k] += item.num_retrieved if k is None else min(k, item.num_retrieved)
        scores = item.values
        values: list[Any] = list(scores.values())
        if tuple(scores) != self._column_order:
            values = list(map(scores.__getitem__, self.columns))
        floats = set(map(type, values)) == _FLOAT_ONLY
        # x - x == 0 for a finite sum only: NaN and infinity go one at a time, to _exact's error.
        if floats and (total := sum(values)) - total == 0.0:
            self._pending.extend(values)
            self._pending_rows += 1
            if self._pending_rows == _FOLD_ROWS:
                self._fold()
        else:  # None (skipped by policy), or a value of another type: one at a time
            for column, value in zip(self.columns, values, strict=True):
                if value is not None:
                    self._sums[column] += _exact(value)
                    self._counts[column] += 1
        micro = self._micro
        for key, counts in item.counts.items():
            sums = micro.get(key)
            if sums is None:
                micro[key] = list(counts)
            else:
                sums[0] += counts[0]
                sums[1] += counts[1]
                sums[2] += counts[2]
                sums[3] += counts[3]
        if self.keep_rows:
            self.rows._append_scored(item.id, item.metadata, values, floats)
        if self.row_sink is not None:
            # Interned names: a million rows share one string per column (JSON parsing and
            # unpickling make a fresh copy of every key of every record otherwise).
            row: dict[str, Any] = {"id": item.id}
            for name, value in item.metadata.items():
                clash = name in item.values or name == "id"
                row[sys.intern(f"metadata.{name}" if clash else name)] = value
            row.update(zip(self.columns, values, strict=True))
            self.row_sink(row)

    def _fold(self) -> None:
        """Add the pending rows to the exact sums."""
        rows = self._pending_rows
        if not rows:
            return
        block = np.frombuffer(self._pending, dtype=np.float64).reshape(rows, len(self.columns))
        self._pending = array("d")
        self._pending_rows = 0
        for column, total in zip(self.columns, _exact_column_sums(block), strict=True):
            self._sums[column] += total
            self._counts[column] += rows

    def aggregate(self) -> dict[str, float | None]:
        self._fold()
        out: dict[str, float | None] = {}
        for column in self.columns:
            count = self._counts[column]
            # int / int is correctly rounded: the exact mean, rounded once.
            out[column] = self._sums[column] / (count << _EXACT_SHIFT) if count else None
        for (position, k), (tp_r, retrieved, tp_g, truth) in sorted(
            self._micro.items(), key=lambda item: (item[0][0], item[0][1] or 0)
        ):
            del position
            p = tp_r / retrieved if retrieved else 0.0
            r = tp_g / truth if truth else 0.0
            out[column_name("micro_context_precision", k)] = p
            out[column_name("micro_context_recall", k)] = r
            out[column_name("micro_context_f1", k)] = f1_score(p, r)
        return out

    def summary(self) -> dict[str, Any]:
        q = self._queries
        return {
            "source": self.source,
            "queries": q,
            "skipped_records": len(self.skipped),
            "empty_ground_truth": self._empty,
            "excluded_from_aggregates": self._excluded,
            "mean_relevant_per_query": self._relevant / q if q else 0.0,
            "mean_retrieved_per_query": self._retrieved / q if q else 0.0,
            "mean_k_used": {
                ("all" if k is None else str(k)): (used / q if q else 0.0)
                for k, used in self._k_used.items()
            },
            "ks": [k for k in self._all_ks()],
            "metrics": [repr(m) for m in self.plan.metrics],
            "tokenless_texts": self._tokenless,
            "records_with_tokenless_texts": self._tokenless_records,
        }

    def result(self) -> EvaluationResult:
        return EvaluationResult(
            per_query=self.rows,
            aggregate=self.aggregate(),
            summary=self.summary(),
            skipped=self.skipped,
        )
