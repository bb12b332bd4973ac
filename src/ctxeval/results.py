"""Evaluation results: per-query rows, aggregates and a summary; saved atomically, loaded back.

Aggregates are folded in as records arrive (:class:`Aggregator`), so a run never needs every row
in memory to compute them:

- ``{metric}@{k}``: macro average, the mean of per-query values; a query whose values are
  ``None`` (``empty_ground_truth="skip"``) is left out and counted;
- ``micro_{metric}@{k}`` for the set metrics: TP, FP and FN summed over queries first.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxeval.errors import InvalidArgumentError, MissingDependencyError
from ctxeval.io.atomic import atomic_write as _atomic
from ctxeval.io.records import RecordError
from ctxeval.metrics.functional import f1_score
from ctxeval.scoring import RowResult, ScoringPlan, column_name

__all__ = ["Aggregator", "AggregatorState", "EvaluationResult", "JsonlResultWriter"]

_FORMAT_VERSION = 1


@dataclass
class EvaluationResult:
    """What a run produced.

    - ``per_query``: one dict per scored record, in input order: ``id``, the record's metadata
      fields, then a value per metric column (``None`` where a query was skipped by policy);
    - ``aggregate``: ``{column: macro mean}`` and ``micro_`` set metrics;
    - ``summary``: counts and means that qualify the aggregate (queries, skipped records, empty
      ground truth, mean relevant items per query, mean k actually used, ...);
    - ``skipped``: the bad records left out with ``on_error="skip"``: index, id, location, field
      and message.
    """

    per_query: list[dict[str, Any]]
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
            "per_query": self.per_query,
        }

    def to_pandas(self) -> Any:
        """The per-query rows as a pandas DataFrame (requires pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError(
                "EvaluationResult.to_pandas() needs pandas: pip install 'ctxeval[pandas]'"
            ) from exc
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
                    {**header, "per_query": self.per_query},
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
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise MissingDependencyError(
                f"saving {target} needs pyarrow: pip install 'ctxeval[parquet]'"
            ) from exc
        rows = [{k: _parquet_cell(v) for k, v in row.items()} for row in self.per_query]
        table = pa.Table.from_pylist(rows)
        table = table.replace_schema_metadata({"ctxeval": json.dumps(header)})
        with _atomic(target, binary=True) as out:
            pq.write_table(table, out)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvaluationResult:
        """Read a result written by :meth:`save`."""
        source = Path(path)
        suffix = source.suffix.lower()
        if source.is_dir():  # a distributed run: _result.json and Parquet parts
            from ctxeval.distributed import iter_parts

            header = _header(
                json.loads((source / "_result.json").read_text(encoding="utf-8")), source
            )
            rows = list(iter_parts(source))
        elif suffix == ".jsonl":
            with source.open(encoding="utf-8") as lines:
                header = _header(json.loads(next(lines, "{}")), source)
                rows = [json.loads(line) for line in lines if line.strip()]
        elif suffix == ".json":
            data = json.loads(source.read_text(encoding="utf-8"))
            header, rows = _header(data, source), data.get("per_query", [])
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
                rows = [
                    {k: (v if k == "id" else _from_csv(v)) for k, v in row.items()}
                    for row in csv.DictReader(handle)
                ]
        elif suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(source)
            raw = (table.schema.metadata or {}).get(b"ctxeval")
            if raw is None:
                raise InvalidArgumentError(f"{source} was not written by ctxeval (no metadata)")
            header = _header(json.loads(raw), source)
            rows = table.to_pylist()
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


def _columns(rows: list[dict[str, Any]]) -> list[str]:
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


# Every finite double is an integer multiple of 2**-1074.
_EXACT_SHIFT = 1074


def _exact(value: float) -> int:
    """``value`` as an exact integer in units of 2**-1074 (the denominator of
    ``as_integer_ratio`` is a power of two)."""
    numerator, denominator = value.as_integer_ratio()
    return numerator << (_EXACT_SHIFT + 1 - denominator.bit_length())


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
        self.rows: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        # Exact sums (see _exact): the mean does not depend on the order of the records, so a
        # run split into any partitions, merged in any order, gives the same aggregate.
        self._sums = dict.fromkeys(self.columns, 0)
        self._counts = dict.fromkeys(self.columns, 0)
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
        for column, value in item.values.items():
            if value is not None:
                self._sums[column] += _exact(value)
                self._counts[column] += 1
        for key, counts in item.counts.items():
            sums = self._micro.setdefault(key, [0, 0, 0, 0])
            for i, value in enumerate(counts):
                sums[i] += value
        if self.keep_rows or self.row_sink is not None:
            # Interned names: a million rows share one string per column (JSON parsing and
            # unpickling make a fresh copy of every key of every record otherwise).
            row: dict[str, Any] = {"id": item.id}
            values = item.values
            for name, value in item.metadata.items():
                clash = name in values or name == "id"
                row[sys.intern(f"metadata.{name}" if clash else name)] = value
            for column in self.columns:
                row[column] = values[column]
            if self.keep_rows:
                self.rows.append(row)
            if self.row_sink is not None:
                self.row_sink(row)

    def aggregate(self) -> dict[str, float | None]:
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
