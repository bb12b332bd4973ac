"""Convert datasets between formats, to ctxeval's field names, and to or from TREC files."""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import Fix, InvalidArgumentError, InvalidRecordError
from ctxeval.foundation.optional import require
from ctxeval.foundation.params import check_choice
from ctxeval.io.atomic import atomic_write
from ctxeval.io.paths import check_output
from ctxeval.io.readers import read_records
from ctxeval.io.spreadsheet import neutralise
from ctxeval.io.trec import (
    check_trec_qrels,
    run_tag,
    trec_records,
    write_trec_qrels,
    write_trec_run,
)
from ctxeval.records.model import Record, RecordError
from ctxeval.records.values import GradedText

__all__ = ["RUN_TAG_FIELD", "convert_dataset", "record_to_dict", "write_records"]

_TREC_SUFFIXES = (".trec", ".run", ".txt")
#: The field of ID-mode records that keeps a TREC run's tag (its 6th column) through a round trip.
RUN_TAG_FIELD = "run_tag"
RECORD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")


ROW_GROUP_RECORDS = 10_000
"""Records per Parquet row group that ``convert`` writes: worker processes and Dask read a
Parquet dataset a row group at a time, so one large group would be read by one worker."""


def record_to_dict(record: Record) -> dict[str, Any]:
    """A record with ctxeval's canonical field names (what the readers detect first)."""
    given = record.retrieved_scores
    scores = {} if given is None else {"retrieved_scores": list(given)}
    if record.mode == "id":
        assert isinstance(record.ground_truth, dict)
        return {
            "id": record.id,
            "retrieved_ids": list(record.retrieved),
            **scores,
            "qrels": dict(record.ground_truth),
            **record.metadata,
        }
    truth = [
        {"text": item.text, "grade": item.grade} if isinstance(item, GradedText) else item
        for item in record.ground_truth
    ]
    out: dict[str, Any] = {
        "id": record.id,
        "retrieved_context": list(record.retrieved),
        **scores,
        "ground_truth_context": truth,
    }
    for name, spans in (
        ("retrieved_spans", record.retrieved_spans),
        ("ground_truth_spans", record.ground_truth_spans),
    ):
        if spans is not None:
            out[name] = [None if span is None else span.as_dict() for span in spans]
    out.update(record.metadata)
    return out


def write_records(
    rows: Iterable[dict[str, Any]], target: str | os.PathLike[str], *, csv_safe: bool = True
) -> int:
    """Write dicts as .jsonl, .json, .csv (list and dict cells JSON-encoded) or .parquet,
    atomically. ``csv_safe`` (the default) prefixes CSV text cells and column names that a
    spreadsheet would run as a formula with ``'`` (:mod:`ctxeval.io.spreadsheet`), which the
    CSV reader takes away again; ``csv_safe=False`` writes them as they are. A Parquet column
    whose values have different types in different records is rejected, naming the field and
    the two records."""
    path = Path(target)
    suffix = path.suffix.lower()
    count = 0
    if suffix in (".jsonl", ".ndjson"):
        with atomic_write(path) as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
    elif suffix == ".json":
        materialised = list(rows)
        with atomic_write(path) as out:
            json.dump(materialised, out, ensure_ascii=False, indent=1)
        count = len(materialised)
    elif suffix == ".csv":
        materialised = list(rows)
        columns = list(dict.fromkeys(key for row in materialised for key in row))
        with atomic_write(path) as out:
            writer = csv.writer(out)
            writer.writerow(map(neutralise, columns) if csv_safe else columns)
            for row in materialised:
                cells = [
                    json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v
                    for v in map(row.get, columns)
                ]
                writer.writerow(map(neutralise, cells) if csv_safe else cells)
        count = len(materialised)
    elif suffix == ".parquet":
        pa = require("pyarrow", purpose=f"writing {path}", extra="parquet")
        pq = require("pyarrow.parquet", purpose=f"writing {path}", extra="parquet")
        materialised = list(rows)
        try:
            table = _arrow_records(pa, materialised)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(_mixed_types(materialised, path, exc)) from None
        with atomic_write(path, binary=True) as out:
            pq.write_table(table, out, row_group_size=ROW_GROUP_RECORDS)
        count = len(materialised)
    else:
        raise InvalidArgumentError(
            f"cannot write records to {path}: use .jsonl, .json, .csv, .parquet, or .trec/.run "
            "for a TREC run"
        )
    return count


def _arrow_records(pa: Any, rows: list[dict[str, Any]]) -> Any:
    """The rows as a pyarrow Table. A column of ``{id: grade}`` objects (qrels) becomes a map
    column, which the Parquet reader turns back into dicts; other columns are inferred."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    arrays = []
    for column in columns:
        values = [row.get(column) for row in rows]
        present = [v for v in values if v is not None]
        if present and all(_is_grades(v) for v in present):
            whole = all(isinstance(g, int) for v in present for g in v.values())
            kind = pa.map_(pa.string(), pa.int64() if whole else pa.float64())
            arrays.append(pa.array([None if v is None else list(v.items()) for v in values], kind))
        else:
            arrays.append(pa.array(values))
    return pa.Table.from_arrays(arrays, names=columns)


def _is_grades(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(g, int | float) and not isinstance(g, bool)
        for k, g in value.items()
    )


def _shape(value: Any) -> str:
    if isinstance(value, list):
        kinds = sorted({_shape(item) for item in value if item is not None})
        return f"list of {' and '.join(kinds)}" if kinds else "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _mixed_types(rows: list[dict[str, Any]], path: Path, exc: Exception) -> str:
    """Name the field and the records whose values Parquet cannot put in one column."""
    fix = (
        "a Parquet column holds one type. Write .jsonl (or .json) instead, or make the field "
        "the same type in every record"
    )
    for column in dict.fromkeys(key for row in rows for key in row):
        seen: dict[str, Any] = {}
        for row in rows:
            value = row.get(column)
            if value is None:
                continue
            shape = _shape(value)
            if " and " in shape:
                return (
                    f"cannot write {path}: field {column!r} is a {shape} in record "
                    f"{row.get('id')!r}; {fix}"
                )
            seen.setdefault(shape, row.get("id"))
            if len(seen) > 1:
                (a, first), (b, second) = list(seen.items())[:2]
                return (
                    f"cannot write {path}: field {column!r} is a {a} in record {first!r} and a "
                    f"{b} in record {second!r}; {fix}"
                )
    return f"cannot write {path} as Parquet: {exc}; write .jsonl instead"


def _run_scores(record: Record) -> dict[str, float]:
    """A record's ranking as a TREC run's ``{docno: score}``: its own scores when it has them
    and they rank it as listed (non-increasing), else ``length - rank``."""
    scores = record.retrieved_scores
    if scores is None or any(b > a for a, b in itertools.pairwise(scores)):
        n = len(record.retrieved)
        scores = [float(n - i) for i in range(n)]
    return {str(doc): score for doc, score in zip(record.retrieved, scores, strict=True)}


def _trec_records(run_path: str, qrels_path: str) -> list[dict[str, Any]]:
    """The run joined with the qrels as ``evaluate --run`` joins them (:func:`trec_records`:
    the run's queries without judgments left out with a note, as trec_eval does; a judged
    query absent from the run with an empty ranking), each record keeping the run's tag."""
    tag = run_tag(run_path)  # kept in each record, so that converting back writes it again
    kept = {} if tag is None else {RUN_TAG_FIELD: tag}
    # The records keep the scores, so ties are the evaluation's business, not a note here.
    records = trec_records(run_path, qrels_path, tie_order_matters=False, note_missing=False)
    return [{**record, **kept} for record in records]


def _tag(tags: set[str | None], source: str) -> str:
    """The run tag to write: the records' ``run_tag`` when they all carry the same one (a run
    converted to records keeps its tag there), else ``ctxeval``."""
    tag = tags.pop() if len(tags) == 1 else None
    if tag is None:
        return "ctxeval"
    if not tag or any(c.isspace() for c in tag):
        raise InvalidArgumentError(
            f"{source}: the records' {RUN_TAG_FIELD} {tag!r} cannot be a TREC run tag (one "
            f"word, no whitespace); rename it, or drop the {RUN_TAG_FIELD} field to write "
            "'ctxeval'"
        )
    return tag


def _record_tag(record: Record) -> str | None:
    """A record's ``run_tag`` (None when it has none); anything but a string is refused."""
    tag = record.metadata.get(RUN_TAG_FIELD)
    if tag is None or isinstance(tag, str):
        return tag
    raise InvalidArgumentError(
        f"{record.location} (record {record.id!r}): field {RUN_TAG_FIELD!r} must be a string "
        f"(the TREC run tag to write), got {type(tag).__name__} {tag!r}; make it a string or "
        "drop it"
    )


def convert_dataset(
    source: str,
    target: str,
    *,
    qrels: str | None = None,
    qrels_out: str | None = None,
    fields: dict[str, str] | None = None,
    csv_safe: bool = True,
    on_error: str = "skip",
) -> tuple[int, list[RecordError]]:
    """Convert ``source`` to ``target``; returns records written and the bad records skipped
    (``on_error="skip"``, the default); ``on_error="raise"``: the first bad record raises
    :class:`~ctxeval.foundation.errors.InvalidRecordError` and nothing is written.

    - ``qrels`` given: ``source`` is a TREC run, joined with the qrels into ID-mode records
      with the run's scores (``retrieved_scores``; a query judged but absent from the run gets
      an empty ranking, as trec_eval ``-c``; a query of the run without judgments is left out,
      as trec_eval and ``evaluate --run`` leave it out, with a
      :class:`~ctxeval.foundation.errors.ConventionWarning` naming how many and the first);
    - ``target`` ending in .trec/.run/.txt: ID-mode records are written as a TREC run (score =
      the record's ``retrieved_scores`` when they rank it as listed, else length - rank) and,
      with ``qrels_out``, their qrels; ids with whitespace and grades that are not whole numbers
      are rejected (they would read back different);
    - otherwise any dataset the readers accept is written with canonical field names (a CSV
      ``target`` with its formula-like text cells quoted unless ``csv_safe=False``: see
      :func:`write_records`).

    Before anything is read, ``target`` and ``qrels_out`` are checked: neither may be an input
    (also through a symlink or a hard link), a directory, or have an unknown extension. Every
    file is written atomically.
    """
    check_choice("convert_dataset", "on_error", on_error, ("raise", "skip"))
    trec_target = Path(target).suffix.lower() in _TREC_SUFFIXES
    _check_targets(source, target, qrels, qrels_out, trec_target)
    skipped: list[RecordError] = []
    if qrels is not None:
        rows = _trec_records(source, qrels)
        return write_records(rows, target, csv_safe=csv_safe), skipped

    def good_records() -> Iterator[Record]:
        for item in read_records(source, fields=fields):
            if isinstance(item, Record):
                yield item
            elif on_error == "raise":  # inside the atomic write: the target is not written
                raise InvalidRecordError(
                    f"{item}. Fix the record, or pass on_error='skip' to convert the others",
                    field=item.field,
                    fixes=(*item.fixes, Fix("on_error", "skip")),
                )
            else:
                skipped.append(item)

    if trec_target:
        return _write_trec(good_records(), source, target, qrels_out), skipped
    return write_records(
        (record_to_dict(r) for r in good_records()), target, csv_safe=csv_safe
    ), skipped


def _check_targets(
    source: str, target: str, qrels: str | None, qrels_out: str | None, trec_target: bool
) -> None:
    """Before anything is read: the outputs are no input, and fit what is converted."""
    check_output(
        target,
        flag="TARGET",
        inputs=[source, qrels],
        suffixes=RECORD_SUFFIXES + _TREC_SUFFIXES,
    )
    if qrels_out is not None:
        if not trec_target:
            raise InvalidArgumentError(
                f"--qrels-out {qrels_out}: qrels are written only with a TREC TARGET "
                f"(.trec, .run or .txt); the records in {target} keep their qrels"
            )
        check_output(qrels_out, flag="--qrels-out", inputs=[source, qrels, target])
    if qrels is not None and trec_target:
        raise InvalidArgumentError(
            f"{source} with --qrels {qrels} -> {target}: that is already a TREC run; "
            "convert it to .jsonl, .json, .csv or .parquet records"
        )


def _write_trec(records: Iterator[Record], source: str, target: str, qrels_out: str | None) -> int:
    """ID-mode records written as a TREC run (and their qrels to ``qrels_out``); the count."""
    run: dict[str, dict[str, float]] = {}
    judged: dict[str, dict[str, Any]] = {}
    tags: set[str | None] = set()
    for record in records:
        if record.mode != "id":
            raise InvalidArgumentError(
                f"{source}: only ID-mode records (retrieved ids and relevant ids) can be "
                "written as a TREC run"
            )
        tags.add(_record_tag(record))
        run[record.id] = _run_scores(record)
        judged[record.id] = {
            str(doc): grade
            for doc, grade in record.ground_truth.items()  # type: ignore[union-attr]
        }
    if qrels_out:
        check_trec_qrels(judged, location=f"{source}: record")
    write_trec_run(run, target, tag=_tag(tags, source), location=f"{source}: record")
    if qrels_out:
        write_trec_qrels(judged, qrels_out, location=f"{source}: record")
    return len(run)
