"""Blocks: the parts of a dataset that separate tasks read (:mod:`ctxeval.distributed`).

A block is read as :func:`~ctxeval.io.readers.read_records` reads the whole dataset, except that
the fields come from the block's file (settled once, from its first records) and the ids are
collected for a check across blocks instead of checked in the block.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ctxeval.io.fields import FieldsInput, ResolvedFields, as_field_map
from ctxeval.io.formats import FORMAT_READERS, PARQUET_BATCH, jsonl_items, parquet_items
from ctxeval.io.sources import Segment, import_parquet, open_binary
from ctxeval.io.stream import Claim, RecordStream
from ctxeval.records import Record, RecordError

__all__ = ["Block", "file_fields", "owned_lines", "read_block"]


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


def owned_lines(handle: Any, start: int, end: int) -> Iterator[bytes]:
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


def _block_stream(block: Block, fields: FieldsInput, **options: Any) -> RecordStream:
    segment = Segment(block.name, block.format, block.target, block.number)
    return RecordStream(as_field_map(fields), [segment], **options)


def _block_records(stream: RecordStream, block: Block) -> Iterator[Record | RecordError]:
    segment = stream.segments[0]
    if block.format == "jsonl":
        with open_binary(block.target) as handle:
            lines = owned_lines(handle, block.start, block.end)
            yield from stream.read(segment, jsonl_items(lines, block.first_pos))
    elif block.format == "parquet":
        pq = import_parquet()
        with open_binary(block.target) as handle, pq.ParquetFile(handle) as file:
            groups = list(range(block.start, block.end))
            batches = file.iter_batches(batch_size=PARQUET_BATCH, row_groups=groups)
            items = parquet_items(
                segment, stream.resolve, file.schema_arrow, batches, block.first_pos
            )
            yield from stream.read(segment, items)
    elif block.format == "iterable":
        yield from stream.read(segment, enumerate(block.target, block.first_pos))
    else:  # whole files and DataFrame slices read as the local reader reads them
        yield from stream.read(segment, FORMAT_READERS[block.format](segment, stream.resolve))


def file_fields(block: Block, fields: FieldsInput) -> ResolvedFields | None:
    """The fields the local reader resolves for this file (from its first records)."""
    stream = _block_stream(block, fields)
    for _ in _block_records(stream, block):
        if stream.resolved is not None:
            break
    return stream.resolved


def read_block(
    block: Block,
    resolved: ResolvedFields | None,
    *,
    fields: FieldsInput = None,
    first_index: int = 0,
    claims: list[Claim] | None = None,
    known_duplicates: Mapping[int, str] | None = None,
) -> Iterator[Record | RecordError]:
    """Read one block as :func:`read_records` reads the whole dataset, with the fields resolved
    for its file, indices from ``first_index``, ids claimed into ``claims`` instead of checked,
    and the duplicates found across the dataset given as ``{position: first location}``."""
    stream = _block_stream(
        block,
        fields,
        resolved=resolved,
        first_index=first_index,
        claims=[] if claims is None else claims,
        known_duplicates=known_duplicates,
    )
    return _block_records(stream, block)
