"""What a dataset source is made of: its segments (files, an open file, a DataFrame, an iterable),
the format of each, and how files are opened.

:func:`source_segments` checks a source at once (a missing file, an unknown extension, a glob that
matches nothing raise :class:`~ctxeval.foundation.errors.InvalidArgumentError` before any record is
read) and returns the segments that :mod:`ctxeval.io.formats` reads.
"""

from __future__ import annotations

import codecs
import glob
import io
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ctxeval.foundation.errors import (
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    type_name,
)
from ctxeval.foundation.optional import require

__all__ = [
    "EXTENSIONS",
    "SUPPORTED_FORMATS",
    "Segment",
    "bom_encoding",
    "format_name",
    "import_parquet",
    "json_error",
    "locate",
    "open_binary",
    "open_lines",
    "source_segments",
    "text_lines",
]

SUPPORTED_FORMATS: tuple[str, ...] = ("jsonl", "json", "csv", "parquet")
EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
_FORMAT_NAMES = {
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "json": "json",
    "csv": "csv",
    "parquet": "parquet",
}
_SUPPORTED = (
    "supported formats: .jsonl/.ndjson (one JSON record per line), .json (a list of records), "
    ".csv (list columns JSON-encoded), .parquet; or pass format='jsonl'|'json'|'csv'|'parquet'"
)
_FORMAT = (
    Fix(
        "format", ("jsonl", "json", "csv", "parquet"), "pass format='jsonl'|'json'|'csv'|'parquet'"
    ),
)
_FROM_TREC = Fix(
    "from_trec",
    None,
    "RetrievalEvaluator.from_trec(run, qrels) (CLI: ctxeval evaluate --run RUN --qrels QRELS; or "
    "turn it into records with ctxeval convert RUN OUT.jsonl --qrels QRELS)",
)


@dataclass(slots=True)
class Segment:
    """One file (or DataFrame, or iterable) of a source; ``number`` is its place in the source."""

    name: str
    format: str  # one of SUPPORTED_FORMATS, or "frame" / "iterable"
    target: Any  # a path, an open file, a DataFrame or an iterable
    number: int = 0

    def locate(self, pos: int) -> str:
        """Where the record at ``pos`` (line, row or position) is, for messages."""
        if self.format == "frame":
            return f"row {self.target.index[pos]}"
        return locate(self.name, self.format, pos)


def locate(name: str, format: str, pos: int) -> str:
    """Where record ``pos`` of a file (line, row or position) is, for messages: ``a.jsonl:12``,
    ``a.csv:row 3``, ``a.json[4]``; ``record 5`` for in-memory data."""
    if format == "jsonl":
        return f"{name}:{pos}"
    if format in ("csv", "parquet"):
        return f"{name}:row {pos}"
    if format == "json":
        return f"{name}[{pos}]"
    return f"record {pos}"


def format_name(format: object) -> str | None:
    """The format named by ``read_records(format=...)``, or None to go by the extension."""
    if format is None:
        return None
    if isinstance(format, str) and format.lower().lstrip(".") in _FORMAT_NAMES:
        return _FORMAT_NAMES[format.lower().lstrip(".")]
    raise InvalidArgumentError(
        f"read_records(format={format!r}): use one of "
        + ", ".join(repr(f) for f in SUPPORTED_FORMATS)
        + ", or None to go by the file extension"
    )


def source_segments(source: object, fmt: str | None) -> list[Segment]:
    """The segments of ``source`` (a path, a glob pattern, an open file, a DataFrame or an
    iterable of dicts), each file checked to exist, be readable and have a known format."""
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not isinstance(path, str):
            raise InvalidArgumentTypeError(f"read_records: give paths as str, got {path!r}")
        if _is_pattern(path) and not os.path.exists(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise InvalidArgumentError(
                    f"{path}: no files match this pattern; {_SUPPORTED}", fixes=_FORMAT
                )
            paths = matches
        else:
            paths = [path]
        segments = [Segment(p, _check_file(p, fmt), p, n) for n, p in enumerate(paths)]
        if any(s.format == "parquet" for s in segments):
            import_parquet()
        return segments
    if fmt is not None and not hasattr(source, "read"):
        raise InvalidArgumentError(
            f"read_records(format={fmt!r}) applies to paths and open files, not to "
            f"{type_name(source)}; leave format out"
        )
    if hasattr(source, "read"):
        return [_file_object_segment(source, fmt)]
    if _is_dataframe(source):
        return [Segment("DataFrame", "frame", source)]
    if isinstance(source, Mapping):
        splits = list(source)
        if type(source).__name__ == "DatasetDict" or (
            splits and all(hasattr(source[s], "column_names") for s in splits[:3])
        ):  # Hugging Face datasets' splits
            raise InvalidArgumentTypeError(
                f"read_records got a DatasetDict of splits ({', '.join(map(str, splits))}); "
                f"choose one, e.g. dataset[{str(splits[0]) if splits else 'test'!r}]"
            )
        raise InvalidArgumentTypeError(
            "read_records got a single dict; pass a list (or any iterable) of records, "
            "e.g. [record] or data['records']"
        )
    if isinstance(source, bytes | bytearray) or not isinstance(source, Iterable):
        raise InvalidArgumentTypeError(
            f"read_records cannot read {type_name(source)}: pass a path, a glob pattern, an open "
            "file, a pandas DataFrame or an iterable of dicts"
        )
    return [Segment("records", "iterable", source)]


def _is_pattern(path: str) -> bool:
    return any(c in path for c in "*?[")


def _check_file(path: str, fmt: str | None) -> str:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InvalidArgumentError(f"{path}: no such file; {_SUPPORTED}", fixes=_FORMAT) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if stat.S_ISDIR(mode):
        raise InvalidArgumentError(
            f"{path}: is a directory; pass a file, or a glob pattern such as "
            f"'{Path(path) / '*.jsonl'}'; {_SUPPORTED}",
            fixes=_FORMAT,
        )
    if fmt is None:
        suffix = Path(path).suffix.lower()
        if suffix not in EXTENSIONS:
            shown = repr(suffix) if suffix else "(none)"
            raise InvalidArgumentError(
                f"{path}: unsupported file extension {shown}; {_trec_hint(path) or _SUPPORTED}",
                fixes=(*_FORMAT, _FROM_TREC),
            )
        fmt = EXTENSIONS[suffix]
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return fmt


_TREC_RUN_LINE = re.compile(r"^\S+\s+\S+\s+\S+\s+\d+\s+[-+0-9.eE]+(\s|$)")
_TREC_QRELS_LINE = re.compile(r"^\S+\s+\S+\s+\S+\s+-?\d+\s*$")


def _trec_hint(path: str) -> str | None:
    """What to do with a TREC run or qrels file given as a dataset, or None if it is not one
    (judged by its first line that is not blank or a comment)."""
    try:
        with open(path, "rb") as file:
            head = file.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    line = next((x for x in head.splitlines() if x.strip() and not x.startswith("#")), "")
    if _TREC_RUN_LINE.match(line):
        kind = "a TREC run ('qid Q0 docno rank score tag')"
    elif _TREC_QRELS_LINE.match(line):
        kind = "TREC qrels ('qid 0 docno relevance')"
    else:
        return None
    return f"it looks like {kind}: evaluate a run against its qrels with {_FROM_TREC.text}"


def _unreadable(path: str, exc: OSError) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{path}: cannot be opened ({exc.strerror}); {_SUPPORTED}", fixes=_FORMAT
    )


def _file_object_segment(source: Any, fmt: str | None) -> Segment:
    name = getattr(source, "name", None)
    name = name if isinstance(name, str) else "<stream>"
    if fmt is None:
        suffix = Path(name).suffix.lower()
        if suffix not in EXTENSIONS:
            raise InvalidArgumentError(
                f"{name}: cannot tell the format of an open file without a known extension; "
                f"pass format='jsonl'|'json'|'csv'|'parquet'",
                fixes=_FORMAT,
            )
        fmt = EXTENSIONS[suffix]
    if fmt == "parquet":
        import_parquet()
    return Segment(name, fmt, source)


def _is_dataframe(obj: object) -> bool:
    # Duck typing by class name, so pandas is never imported just to ask.
    return any(
        cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")
        for cls in type(obj).__mro__
    )


def import_parquet() -> ModuleType:
    """``pyarrow.parquet``, or an install hint."""
    return require("pyarrow.parquet", purpose="reading Parquet", extra="parquet")


def open_binary(path: str, buffering: int = -1) -> Any:
    """Open a local path, or a remote URL (``s3://...``) through fsspec, for reading bytes;
    ``buffering`` as :func:`open` takes it (a local file's buffer)."""
    if "://" in path:
        fsspec = require(
            "fsspec",
            purpose=f"{path}: reading remote files",
            hint="also install the filesystem's package (e.g. s3fs, gcsfs)",
        )
        return fsspec.open(path, "rb").open()
    return open(path, "rb", buffering=buffering)


# --- text encodings ----------------------------------------------------------------------------

# UTF-32 first: its little-endian mark begins with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def bom_encoding(head: bytes) -> str | None:
    """``"utf-16"`` or ``"utf-32"`` when ``head`` (a file's first bytes) starts with that
    encoding's byte-order mark (PowerShell 5 writes UTF-16 by default); None otherwise (UTF-8,
    with or without its own mark)."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def open_lines(path: str) -> Any:
    """A file of ``path`` to iterate by lines: bytes for UTF-8 (decoded line by line by the
    reader, so that a bad byte spoils one line), str for a UTF-16 or UTF-32 file with a
    byte-order mark (decoded here, the mark dropped)."""
    raw = open_binary(path)
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    encoding = bom_encoding(head)
    if encoding is None:
        return raw
    return io.TextIOWrapper(raw, encoding=encoding, newline=None)


def text_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text file: UTF-8 (a UTF-8 mark is dropped), or UTF-16/32
    with a byte-order mark. A line that cannot be decoded raises
    :class:`~ctxeval.foundation.errors.InvalidArgumentError` naming ``file:line``."""
    name = os.fspath(path)
    try:
        handle = open_lines(name)
    except OSError as exc:
        raise InvalidArgumentError(f"cannot open {name}: {exc.strerror or exc}") from None
    with handle:
        number = 0
        line: str | bytes = ""
        try:
            for number, line in enumerate(handle, 1):
                if isinstance(line, bytes):
                    line = line.decode("utf-8-sig" if number == 1 else "utf-8")
                yield number, line
        except UnicodeDecodeError as exc:
            # A bytes line failed as itself; a UTF-16/32 file failed while reading ahead of
            # the last good line (its decoder reads blocks, so the line is approximate).
            where = number if isinstance(line, bytes) else f"{number + 1} or after"
            raise InvalidArgumentError(f"{name}:{where}: {not_utf8(exc)}") from None


def json_error(exc: json.JSONDecodeError, *, line: bool = False) -> str:
    """Where and why JSON did not parse, as messages say it: ``Expecting value at column 4``,
    ``Unterminated string starting at line 2 column 7`` (with ``line``). Some of json's own
    messages end in "at" (``Unterminated string starting at``, ``Invalid control character
    at``): that "at" is the one before the position, not a second one."""
    reason = exc.msg.removesuffix(" at")
    where = f"line {exc.lineno} column {exc.colno}" if line else f"column {exc.colno}"
    return f"{reason} at {where}"


def not_utf8(exc: UnicodeDecodeError) -> str:
    """What a decoding error says to the user, with the fix."""
    if exc.encoding.lower().replace("-", "").startswith("utf8"):
        return (
            f"not valid UTF-8 (byte {exc.object[exc.start]:#04x} at position {exc.start}); "
            "save the file as UTF-8"
        )
    return f"not valid {exc.encoding.upper()} text ({exc.reason}); save the file as UTF-8"
