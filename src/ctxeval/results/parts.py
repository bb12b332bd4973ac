"""Where a distributed run writes its rows: a local directory, or any fsspec URL (``s3://``,
``gs://``, ``abfs://``, ``memory://``) so that a cluster writes where its data lives.

The layout is the same everywhere: ``_result.json`` (the header: aggregate, summary, skipped
records and the list of parts) and one Parquet part per block of the input, ``part-NNNNN.parquet``.
Locally every file is written atomically (a temporary file renamed into place); through fsspec
each part and the header are made in memory and sent with one ``pipe`` call per object, which
an object store publishes whole or not at all (a failed write leaves no partial object), and the
header is written last, so a reader that finds the header finds every part it lists.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require
from ctxeval.io.atomic import atomic_write
from ctxeval.results.arrow import decoded_rows

__all__ = ["PARTS_HEADER", "PartsStore", "is_url", "parts_store", "write_part"]

#: The header file of a distributed run's output directory.
PARTS_HEADER = "_result.json"
_PART_GLOB = "part-*.parquet"


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is an fsspec URL (``scheme://...``) rather than a local path."""
    return "://" in os.fspath(location) and not os.fspath(location).startswith("file://")


def _filesystem(url: str) -> tuple[Any, str]:
    fsspec = require(
        "fsspec",
        purpose=f"{url}: writing and reading results at a URL",
        hint="also install the filesystem's package (e.g. s3fs, gcsfs, adlfs)",
    )
    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as exc:
        raise InvalidArgumentError(f"{url}: no filesystem for this URL ({exc})") from None


@dataclass(frozen=True)
class PartsStore:
    """The output location of a distributed run (picklable: workers get the part names)."""

    location: str

    @property
    def remote(self) -> bool:
        return is_url(self.location)

    def part(self, number: int) -> str:
        """The path or URL of part ``number``."""
        return self._join(f"part-{number:05d}.parquet")

    def _join(self, name: str) -> str:
        if self.remote:
            return self.location.rstrip("/") + "/" + name
        return str(Path(self.location) / name)

    def prepare(self) -> None:
        """Create the location and remove the parts of an earlier run (a new run may have
        fewer blocks, and a stale part must never be read as this run's)."""
        if self.remote:
            fs, root = _filesystem(self.location)
            fs.makedirs(root, exist_ok=True)
            stale = fs.glob(root.rstrip("/") + "/" + _PART_GLOB)
            if stale:
                fs.rm(stale)
            return
        directory = Path(self.location)
        directory.mkdir(parents=True, exist_ok=True)
        for stale_part in directory.glob(_PART_GLOB):
            stale_part.unlink()

    def write_header(self, header: dict[str, Any]) -> None:
        """``_result.json``, written after every part."""
        if self.remote:
            fs, _ = _filesystem(self.location)
            text = json.dumps(header, ensure_ascii=False, indent=1)
            fs.pipe(self._join(PARTS_HEADER), text.encode("utf-8"))  # one object, whole
            return
        with atomic_write(Path(self.location) / PARTS_HEADER) as out:
            json.dump(header, out, ensure_ascii=False, indent=1)

    def remove(self) -> None:
        """Remove what a failed run wrote."""
        if self.remote:
            fs, root = _filesystem(self.location)
            if fs.exists(root):
                fs.rm(root, recursive=True)
            return
        shutil.rmtree(self.location, ignore_errors=True)

    @property
    def header(self) -> str:
        """The path or URL of ``_result.json``."""
        return self._join(PARTS_HEADER)

    def read_header(self) -> bytes:
        """The bytes of ``_result.json``."""
        try:
            if self.remote:
                fs, _ = _filesystem(self.location)
                with fs.open(self.header, "rb") as file:
                    return file.read()  # type: ignore[no-any-return]
            return Path(self.header).read_bytes()
        except FileNotFoundError:
            raise InvalidArgumentError(
                f"{self.location}: no {PARTS_HEADER}, so this is not the output of a finished "
                "distributed run; run it again"
            ) from None
        except OSError as exc:
            raise InvalidArgumentError(
                f"cannot read {self.header}: {exc.strerror or exc}"
            ) from None

    def read_parts(self, names: list[str]) -> Iterator[dict[str, Any]]:
        """The rows of the named parts, in order."""
        pq = require(
            "pyarrow.parquet", purpose=f"reading the parts in {self.location}", extra="parquet"
        )
        fs = _filesystem(self.location)[0] if self.remote else None
        for name in names:
            if fs is None:
                yield from decoded_rows(pq.read_table(Path(self.location) / name))
            else:
                with fs.open(self._join(name), "rb") as file:
                    yield from decoded_rows(pq.read_table(file))


def parts_store(location: str | os.PathLike[str]) -> PartsStore:
    """The store of a distributed run's output at ``location`` (a directory or a URL)."""
    return PartsStore(os.fspath(location))


def write_part(target: str, table: Any) -> None:
    """Write one Parquet part (an Arrow table) to a local path, atomically, or to a URL."""
    pq = require("pyarrow.parquet", purpose=f"writing {target}", extra="parquet")
    if is_url(target):
        fs, path = _filesystem(target)
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        fs.pipe(path, buffer.getvalue())  # one request: the object appears whole or not at all
        return
    with atomic_write(Path(target), binary=True) as out:
        pq.write_table(table, out)
