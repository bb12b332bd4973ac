"""Convert datasets between formats, to ctxeval's field names, and to or from TREC files."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ctxeval.errors import InvalidArgumentError
from ctxeval.io.atomic import atomic_write
from ctxeval.io.readers import read_records
from ctxeval.io.trec import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run
from ctxeval.metrics.runs import rank_documents
from ctxeval.optional import require
from ctxeval.records import Record
from ctxeval.validation import GradedText

__all__ = ["convert_dataset", "record_to_dict", "write_records"]

_TREC_SUFFIXES = (".trec", ".run", ".txt")


def record_to_dict(record: Record) -> dict[str, Any]:
    """A record with ctxeval's canonical field names (what the readers detect first)."""
    if record.mode == "id":
        assert isinstance(record.ground_truth, dict)
        return {
            "id": record.id,
            "retrieved_ids": list(record.retrieved),
            "qrels": dict(record.ground_truth),
            **record.metadata,
        }
    truth = [
        {"text": item.text, "grade": item.grade} if isinstance(item, GradedText) else item
        for item in record.ground_truth
    ]
    return {
        "id": record.id,
        "retrieved_context": list(record.retrieved),
        "ground_truth_context": truth,
        **record.metadata,
    }


def write_records(rows: Iterable[dict[str, Any]], target: str | os.PathLike[str]) -> int:
    """Write dicts as .jsonl, .json, .csv (list and dict cells JSON-encoded) or .parquet."""
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
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            for row in materialised:
                writer.writerow(
                    {
                        k: json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v
                        for k, v in row.items()
                    }
                )
        count = len(materialised)
    elif suffix == ".parquet":
        pa = require("pyarrow", purpose=f"writing {path}", extra="parquet")
        pq = require("pyarrow.parquet", purpose=f"writing {path}", extra="parquet")
        materialised = [
            {k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()} for row in rows
        ]
        with atomic_write(path, binary=True) as out:
            pq.write_table(pa.Table.from_pylist(materialised), out)
        count = len(materialised)
    else:
        raise InvalidArgumentError(
            f"cannot write records to {path}: use .jsonl, .json, .csv, .parquet, or .trec/.run "
            "for a TREC run"
        )
    return count


def _trec_records(run_path: str, qrels_path: str, skipped: list[str]) -> Iterator[dict[str, Any]]:
    run = read_trec_run(run_path)
    qrels = read_trec_qrels(qrels_path)
    for qid in run:
        if qid not in qrels:
            skipped.append(f"{run_path}: query {qid!r} has no judgments in {qrels_path}")
    for qid, judged in qrels.items():
        ranked: list[Hashable] = rank_documents(run.get(qid, {}), location=f"run[{qid!r}]")
        yield {"id": qid, "retrieved_ids": ranked, "qrels": judged}


def convert_dataset(
    source: str,
    target: str,
    *,
    qrels: str | None = None,
    qrels_out: str | None = None,
    fields: dict[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Convert ``source`` to ``target``; returns records written and messages of skipped ones.

    - ``qrels`` given: ``source`` is a TREC run, joined with the qrels into ID-mode records
      (a query judged but absent from the run gets an empty ranking, as trec_eval ``-c``);
    - ``target`` ending in .trec/.run: ID-mode records are written as a TREC run (score =
      length - rank) and, with ``qrels_out``, their qrels;
    - otherwise any dataset the readers accept is written with canonical field names.
    """
    skipped: list[str] = []
    if qrels is not None:
        return write_records(_trec_records(source, qrels, skipped), target), skipped

    def good_records() -> Iterator[Record]:
        for item in read_records(source, fields=fields):
            if isinstance(item, Record):
                yield item
            else:
                skipped.append(str(item))

    if Path(target).suffix.lower() in _TREC_SUFFIXES:
        run: dict[str, dict[str, float]] = {}
        judged: dict[str, dict[str, int]] = {}
        for record in good_records():
            if record.mode != "id":
                raise InvalidArgumentError(
                    f"{source}: only ID-mode records (retrieved ids and relevant ids) can be "
                    "written as a TREC run"
                )
            n = len(record.retrieved)
            run[record.id] = {str(doc): float(n - i) for i, doc in enumerate(record.retrieved)}
            judged[record.id] = {
                str(doc): int(grade)
                for doc, grade in record.ground_truth.items()  # type: ignore[union-attr]
            }
        write_trec_run(run, target)
        if qrels_out:
            write_trec_qrels(judged, qrels_out)
        return len(run), skipped
    return write_records((record_to_dict(r) for r in good_records()), target), skipped
