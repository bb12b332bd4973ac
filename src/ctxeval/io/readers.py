"""Read datasets into a stream of validated records: :func:`read_records`, the entry point.

:func:`read_records` turns a JSONL, JSON, CSV or Parquet file (or a glob of them), an open file, a
pandas DataFrame or an iterable of dicts into :class:`~ctxeval.records.model.Record` (a good record)
and :class:`~ctxeval.records.model.RecordError` (a bad one, with its location, field and the fix),
one per input record and in input order. A bad record never stops the stream: the evaluator
decides. Problems with the source itself (a missing file, an unknown format, fields that cannot be
identified) raise :class:`~ctxeval.foundation.errors.InvalidArgumentError` instead.

The work is done by one module per job: :mod:`~ctxeval.io.sources` (what a source is made of),
:mod:`~ctxeval.io.formats` (reading each format), :mod:`~ctxeval.io.stream` (items to records),
:mod:`~ctxeval.io.seen_ids` (duplicate ids) and, for partitioned runs,
:mod:`~ctxeval.parallel.blocks`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ctxeval.io.fields import FieldsInput, as_field_map
from ctxeval.io.sources import SUPPORTED_FORMATS, format_name, source_segments
from ctxeval.io.stream import RecordStream
from ctxeval.records.model import Record, RecordError

__all__ = ["SUPPORTED_FORMATS", "read_records"]


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
    cannot be identified raise :class:`~ctxeval.foundation.errors.InvalidArgumentError`; the first
    two at once, the last when the records are read.
    """
    field_map = as_field_map(fields)
    segments = source_segments(source, format_name(format))
    return RecordStream(field_map, segments).records()
