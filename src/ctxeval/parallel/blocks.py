"""Blocks: the parts of a dataset that separate tasks read (:mod:`ctxeval.parallel.partitions`).

A block is read as :func:`~ctxeval.io.readers.read_records` reads the whole dataset, except that
the fields come from the block's file (settled once, from its first records) and the ids are
collected for a check across blocks instead of checked in the block.
"""

from __future__ import annotations

import glob as globlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require
from ctxeval.io.fields import FieldsInput, ResolvedFields, as_field_map
from ctxeval.io.formats import (
    FORMAT_READERS,
    PARQUET_BATCH,
    iterable_items,
    jsonl_items,
    parquet_items,
)
from ctxeval.io.sources import EXTENSIONS, Segment, import_parquet, open_binary
from ctxeval.io.stream import Claim, RecordStream
from ctxeval.records.model import Record, RecordError

__all__ = [
    "Block",
    "block_extent",
    "expand_paths",
    "file_fields",
    "file_size",
    "format_of",
    "owned_lines",
    "place_blocks",
    "plan_blocks",
    "read_block",
]


# The read buffer of a JSONL block's lines: lines of kilobytes read through the default 8 KiB
# buffer cost several times as much (measured: 7.2 against 2.3 µs a 7 KB line).
LINE_BUFFER = 1 << 16


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


def block_extent(block: Block) -> tuple[int, int]:
    """How many positions (lines, rows) and records a JSONL or Parquet block has, without
    reading its records: the lines that start in its byte range and those that are not blank
    (:func:`~ctxeval.io.formats.jsonl_items` skips the blank ones), or the rows of its row
    groups. Cheap next to reading the records: no JSON is parsed."""
    if block.format == "jsonl":
        lines = records = 0
        with open_binary(block.target, LINE_BUFFER) as handle:
            for line in owned_lines(handle, block.start, block.end):
                lines += 1
                # what jsonl_items skips: nothing left after bytes.rstrip (ASCII whitespace)
                records += not line.isspace()
        return lines, records
    if block.format == "parquet":
        pq = import_parquet()
        with open_binary(block.target) as handle, pq.ParquetFile(handle) as file:
            meta = file.metadata
            rows = sum(meta.row_group(i).num_rows for i in range(block.start, block.end))
        return rows, rows
    raise ValueError(f"block_extent: a {block.format} block has no cheap extent")


def _block_stream(block: Block, fields: FieldsInput, **options: Any) -> RecordStream:
    segment = Segment(block.name, block.format, block.target, block.number)
    return RecordStream(as_field_map(fields), [segment], **options)


def _block_records(stream: RecordStream, block: Block) -> Iterator[Record | RecordError]:
    segment = stream.segments[0]
    if block.format == "jsonl":
        with open_binary(block.target, LINE_BUFFER) as handle:
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
    elif block.format == "iterable":  # (checked and converted as the local reader does)
        yield from stream.read(segment, iterable_items(block.target, block.first_pos))
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


# --- planning: the blocks of a dataset ----------------------------------------------------


def expand_paths(path: str) -> list[str]:
    """The files of a path, a glob pattern or a URL (fsspec), sorted."""
    if "://" in path:
        fsspec = _fsspec()
        files = fsspec.open_files(path)
        return sorted(f.full_name if hasattr(f, "full_name") else f.path for f in files)
    if any(c in path for c in "*?[") and not os.path.exists(path):
        matches = sorted(globlib.glob(path, recursive=True))
        if not matches:
            raise InvalidArgumentError(f"{path}: no files match this pattern")
        return matches
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"{path}: no such file")
    return [path]


def _fsspec() -> Any:
    return require(
        "fsspec",
        purpose="reading remote files",
        hint="also install the filesystem's package (e.g. s3fs, gcsfs)",
    )


def file_size(path: str) -> int:
    """The size in bytes of a local file or a URL's object."""
    if "://" in path:
        fs, _, paths = _fsspec().core.get_fs_token_paths(path)
        return int(fs.size(paths[0]))
    return os.path.getsize(path)


def format_of(path: str, fmt: str | None) -> str:
    """The format of a file: ``fmt`` if given, else by its extension."""
    if fmt is not None:
        return {"ndjson": "jsonl"}.get(fmt, fmt)
    suffix = Path(path.split("?")[0]).suffix.lower()
    if suffix not in EXTENSIONS:
        raise InvalidArgumentError(
            f"{path}: unsupported extension; use .jsonl, .json, .csv or .parquet, or format="
        )
    return EXTENSIONS[suffix]


def plan_blocks(
    dataset: Any,
    *,
    format: str | None = None,
    block_bytes: int = 64 << 20,
    block_records: int = 20_000,
) -> list[list[Block]]:
    """The dataset's blocks, grouped by file (one group for in-memory data)."""
    if isinstance(dataset, str | os.PathLike):
        groups = []
        for number, path in enumerate(expand_paths(os.fspath(dataset))):
            fmt = format_of(path, format)
            if fmt == "jsonl":
                size = file_size(path)
                starts = range(0, size, block_bytes)
                blocks = [
                    Block(path, fmt, number, path, s, min(s + block_bytes, size)) for s in starts
                ]
            elif fmt == "parquet":
                blocks = _parquet_blocks(path, number, block_records)
            else:
                blocks = [Block(path, fmt, number, path)]
            groups.append(blocks)
        return groups
    if type(dataset).__module__.startswith("pandas") and hasattr(dataset, "iloc"):
        rows = len(dataset)
        return [
            [
                Block("DataFrame", "frame", 0, dataset.iloc[a : a + block_records])
                for a in range(0, rows, block_records)
            ]
        ]
    iterator = iter(dataset)
    blocks = []
    position = 0
    while chunk := list(islice(iterator, block_records)):
        blocks.append(Block("records", "iterable", 0, chunk, first_pos=position))
        position += len(chunk)
    return [blocks]


def place_blocks(
    blocks: Sequence[Block], counts: Sequence[tuple[int, int]]
) -> tuple[list[int], list[Block]]:
    """Each block's first record index in the dataset, and the blocks with the line their JSONL
    part starts at, from every block's ``(positions, records)`` (a survey or
    :func:`block_extent`)."""
    first_index, index = [], 0
    positioned: list[Block] = []
    next_pos: dict[int, int] = {}
    for block, (positions, records) in zip(blocks, counts, strict=True):
        first_index.append(index)
        index += records
        if block.format == "jsonl":
            start = next_pos.get(block.number, 1)
            positioned.append(replace(block, first_pos=start))
            next_pos[block.number] = start + positions
        else:
            positioned.append(block)
    return first_index, positioned


def _parquet_blocks(path: str, number: int, block_records: int) -> list[Block]:
    pq = require("pyarrow.parquet", purpose=f"reading {path}", extra="parquet")

    with open_binary(path) as handle, pq.ParquetFile(handle) as file:
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
    blocks = []
    first_row, start, rows = 1, 0, 0
    for group, count in enumerate(sizes):
        rows += count
        if rows >= block_records or group == len(sizes) - 1:
            blocks.append(Block(path, "parquet", number, path, start, group + 1, first_row))
            first_row += rows
            start, rows = group + 1, 0
    return blocks
