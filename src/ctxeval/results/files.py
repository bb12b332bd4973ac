"""Result files: ``.jsonl``, ``.json``, ``.csv`` and ``.parquet``, and Dask output directories.

Every file is written atomically (it appears complete or not at all, even after an error or
Ctrl-C). JSONL puts the aggregate, summary and skipped records (the *header*) on the first line
and one query per line after it; JSON holds the header and a ``per_query`` list; CSV writes the
per-query rows and the header to ``<name>.summary.json`` beside it; Parquet keeps the header in the
file's metadata. A distributed run writes a directory: ``_result.json`` (the header and the list
of parts) and one Parquet part per block of the input (:func:`iter_parts`).

Rows read back go into a :class:`~ctxeval.results.table.PerQueryTable` when they fit its schema
(an id, and a float or None under every metric column of the aggregate), and into a list of
dicts otherwise (rows made by hand), so that what is read equals what was written.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require
from ctxeval.io.atomic import atomic_write
from ctxeval.io.paths import check_output
from ctxeval.io.sources import json_error, not_utf8, text_lines
from ctxeval.io.spreadsheet import neutralise, restore
from ctxeval.results.arrow import columns_of, decoded_rows, encoded_table
from ctxeval.results.parts import PARTS_HEADER, is_url, parts_store
from ctxeval.results.table import PerQueryTable

__all__ = [
    "FORMAT_VERSION",
    "PARTS_HEADER",
    "FinishedRun",
    "JsonlResultWriter",
    "check_result_path",
    "is_result_file",
    "iter_parts",
    "read_result",
    "result_header",
    "write_result",
]

FORMAT_VERSION = 1
_SUFFIXES = ".jsonl, .json, .csv or .parquet"
RESULT_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
#: Header key listing the Parquet columns written as JSON text (values of mixed types).
JSON_COLUMNS = "json_columns"
#: Summary-file key of a CSV result whose formula-like text cells were quoted (``csv_safe``).
CSV_FORMULAS = "csv_formulas"


def result_header(
    aggregate: Mapping[str, Any], summary: Mapping[str, Any], skipped: list[dict[str, Any]]
) -> dict[str, Any]:
    """What a result file holds besides the per-query rows."""
    return {
        "ctxeval_result": FORMAT_VERSION,
        "aggregate": aggregate,
        "summary": summary,
        "skipped": skipped,
    }


# -- writing ------------------------------------------------------------------------------------
def check_result_path(
    path: str | os.PathLike[str],
    *,
    flag: str = "save(path=...)",
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> Path:
    """Raise :class:`InvalidArgumentError` naming ``flag`` unless ``path`` can take a result
    file: a known extension, not a directory, not an input, in a directory ctxeval may write
    in, and for ``.parquet`` with pyarrow installed. Commands call it before scoring, so a bad
    path fails at once."""
    target = check_output(path, flag=flag, inputs=inputs, suffixes=RESULT_SUFFIXES)
    if target.suffix.lower() == ".csv":
        check_output(_sidecar(target), flag=f"{flag} (its summary)", inputs=inputs)
    elif target.suffix.lower() == ".parquet":  # before the run, not after it
        require("pyarrow.parquet", purpose=f"saving {target}", extra="parquet")
    return target


def write_result(
    path: str | os.PathLike[str],
    per_query: Sequence[dict[str, Any]],
    header: dict[str, Any],
    *,
    csv_safe: bool = True,
) -> Path:
    """Write ``header`` and the rows to ``path``; the format follows the suffix.

    ``csv_safe`` (CSV only; the default) prefixes text cells, column names included, that a
    spreadsheet would run as a formula (``= + - @``, tab, CR) with ``'``
    (:mod:`ctxeval.io.spreadsheet`), and says so in the summary file, so that
    :func:`read_result` takes the quotes away again; numbers are never quoted. Parquet
    columns whose values have different types in different rows (a metadata field that is a
    list here and a string there) are written as JSON text and listed in the header, so that
    :func:`read_result` gives the values back."""
    target = check_result_path(path)
    suffix = target.suffix.lower()
    if suffix == ".jsonl":
        with atomic_write(target) as out:
            out.write(json.dumps(header, ensure_ascii=False) + "\n")
            for row in per_query:
                out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    elif suffix == ".json":
        with atomic_write(target) as out:
            json.dump(
                {**header, "per_query": list(per_query)},
                out,
                ensure_ascii=False,
                default=str,
                indent=1,
            )
    elif suffix == ".csv":
        _write_csv(target, per_query, header, csv_safe)
    elif suffix == ".parquet":
        pq = require("pyarrow.parquet", purpose=f"saving {target}", extra="parquet")
        table = encoded_table(per_query)
        metadata = {**(table.schema.metadata or {}), b"ctxeval": json.dumps(header).encode()}
        table = table.replace_schema_metadata(metadata)
        with atomic_write(target, binary=True) as out:
            pq.write_table(table, out)
    else:
        raise InvalidArgumentError(f"cannot save results to {target}: use a {_SUFFIXES} name")
    return target


def _write_csv(
    target: Path, per_query: Sequence[dict[str, Any]], header: dict[str, Any], safe: bool
) -> None:
    """The rows to ``target``, the header to its summary file (marked when the cells that
    look like formulas were quoted)."""
    columns = columns_of(per_query)
    cell = (lambda value: neutralise(_csv_cell(value))) if safe else _csv_cell
    with atomic_write(target) as out:
        writer = csv.writer(out)
        writer.writerow(map(neutralise, columns) if safe else columns)
        for row in per_query:
            writer.writerow([cell(row.get(k)) for k in columns])
    with atomic_write(_sidecar(target)) as out:
        json.dump(
            {**header, CSV_FORMULAS: "quoted"} if safe else header,
            out,
            ensure_ascii=False,
            indent=1,
        )


class FinishedRun(Protocol):
    """What :meth:`JsonlResultWriter.finish` needs of a run's result (an
    :class:`~ctxeval.results.EvaluationResult`): its header parts. Typed structurally so that
    this module, which :mod:`ctxeval.results.result` imports, does not import it back."""

    @property
    def aggregate(self) -> Mapping[str, Any]: ...

    @property
    def summary(self) -> Mapping[str, Any]: ...

    @property
    def skipped(self) -> list[dict[str, Any]]: ...


class JsonlResultWriter:
    """Streams per-query rows of a run to disk and writes the result file atomically at the end.

    Rows go to a temporary file as they arrive, so memory stays flat however many records a run
    has; :meth:`finish` writes the header line (aggregate, summary, skipped) followed by the rows
    to the target, which appears complete or not at all. When the OS refuses the write (disk
    full, file too large, permissions), the :class:`OSError` carries the finished result in its
    ``result`` attribute and a note naming the file.
    """

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        inputs: Iterable[str | os.PathLike[str] | None] = (),
        flag: str = "run(output=...)",
    ) -> None:
        self.target = Path(target)
        if self.target.suffix.lower() != ".jsonl":
            raise InvalidArgumentError(
                f"run(output={os.fspath(target)!r}): per-query rows are streamed to .jsonl "
                "files; save other formats with result.save(path) after the run"
            )
        check_output(target, flag=flag, inputs=inputs, suffixes=(".jsonl",))
        self.target.parent.mkdir(parents=True, exist_ok=True)
        # Closed by finish()/close(); a context manager cannot span the run.
        self._rows = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", dir=self.target.parent
        )
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        self._rows.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self.count += 1

    def finish(self, result: FinishedRun) -> None:
        header = result_header(result.aggregate, result.summary, result.skipped)
        self._rows.seek(0)
        try:
            with atomic_write(self.target) as out:
                out.write(json.dumps(header, ensure_ascii=False) + "\n")
                while chunk := self._rows.read(1 << 20):
                    out.write(chunk)
        except OSError as exc:
            # The run is done: keep it reachable from the error instead of losing it.
            exc.result = result  # type: ignore[attr-defined]
            exc.add_note(
                f"ctxeval: the run finished but {self.target} could not be written "
                f"({exc.strerror or exc}); a file already there is unchanged. The result is in "
                "this exception's .result attribute (save it elsewhere with .result.save(path))"
            )
            raise
        self.close()

    def close(self) -> None:
        self._rows.close()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.stem + ".summary.json")


_MARK = b'"ctxeval_result"'


def is_result_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a result ctxeval saved, told from its header without reading its
    rows: the first line of a ``.jsonl``, the first bytes of a ``.json`` (an object that opens
    with the header, where a dataset is a list), a ``.csv``'s summary file beside it, a
    ``.parquet``'s metadata (when pyarrow is installed: without it no Parquet file is read), a
    distributed run's directory's header file."""
    source = Path(path)
    suffix = source.suffix.lower()
    try:
        if source.is_dir():  # a distributed run's directory: its header file
            header = source / PARTS_HEADER
            return header.is_file() and _MARK in header.read_bytes()[:4096]
        if suffix == ".jsonl":
            with open(source, "rb") as handle:
                return _is_header(handle.readline())
        if suffix == ".json":
            with open(source, "rb") as handle:
                head = handle.read(4096)
            return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and _MARK in head
        if suffix == ".csv":
            sidecar = _sidecar(source)
            return sidecar.is_file() and _MARK in sidecar.read_bytes()[:4096]
        if suffix == ".parquet":
            return _parquet_marked(source)
    except OSError:
        return False  # unreadable here: the reader says why
    return False


def _is_header(line: bytes) -> bool:
    if _MARK not in line:  # no parse of a line that is data (it may be deep)
        return False
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "ctxeval_result" in first


def _parquet_marked(source: Path) -> bool:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return False
    try:
        metadata = pq.read_schema(source).metadata or {}
    except (OSError, ValueError):
        return False
    return b"ctxeval" in metadata


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict | bool):
        return json.dumps(value, ensure_ascii=False)
    return value


# -- reading ------------------------------------------------------------------------------------
def read_result(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Sequence[dict[str, Any]]]:
    """The header and the per-query rows of a result file or of a distributed run's directory.

    A file that is not UTF-8 (or UTF-16/32 with a byte-order mark), or whose JSON is truncated
    or damaged, raises :class:`~ctxeval.foundation.errors.InvalidArgumentError` naming
    ``file:line``.
    """
    if is_url(path) or Path(path).is_dir():
        store = parts_store(path)
        header = _header(_json_text(store.header, store.read_header()), store.header)
        return header, _rows(store.read_parts(header["parts"]), header, os.fspath(path))
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix == ".jsonl":
        lines = ((n, line) for n, line in text_lines(source) if line.strip())
        first = next(lines, None)
        header = _header(_json_line(source, *first) if first else {}, source)
        return header, _rows((_json_line(source, n, line) for n, line in lines), header, source)
    if suffix == ".json":
        data = _json_file(source)
        header = _header(data, source)
        return header, _rows(data.get("per_query", []), header, source)
    if suffix == ".csv":
        sidecar = _sidecar(source)
        if not sidecar.exists():
            raise InvalidArgumentError(
                f"{source}: its aggregate and summary live in {sidecar.name}, which is "
                "missing; keep the two files together"
            )
        header = _header(_json_file(sidecar), sidecar)
        quoted = header.pop(CSV_FORMULAS, None) == "quoted"
        return header, _rows(_csv_rows(source, quoted), header, source)
    if suffix == ".parquet":
        pq = require("pyarrow.parquet", purpose=f"loading {source}", extra="parquet")
        try:
            table = pq.read_table(source)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InvalidArgumentError(
                f"{source}: cannot be read as Parquet ({exc}); the file is damaged or "
                "truncated: save the result again"
            ) from None
        raw = (table.schema.metadata or {}).get(b"ctxeval")
        if raw is None:
            raise InvalidArgumentError(f"{source} was not written by ctxeval (no metadata)")
        header = _header(_json_text(source, raw), source)
        # Files of earlier versions name their JSON-text columns in the header.
        rows = decoded_rows(table, header.pop(JSON_COLUMNS, []))
        return header, _rows(rows, header, source)
    raise InvalidArgumentError(f"cannot load results from {source}: use a {_SUFFIXES} file")


def _json_line(source: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"{source}:{number}: not valid JSON ({json_error(exc)}); the result "
            "file is truncated or damaged: save or evaluate it again"
        ) from None
    except RecursionError:
        raise InvalidArgumentError(
            f"{source}:{number}: the JSON nests too deeply to read; this is not a result file "
            "ctxeval wrote"
        ) from None


def _json_file(source: Path) -> Any:
    try:
        text = source.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot open {source}: {exc.strerror or exc}") from None
    return _json_text(source, text)


def _json_text(source: Path | str, text: bytes) -> Any:
    try:
        return json.loads(text)  # bytes: UTF-8, UTF-16 or UTF-32, as json detects them
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"{source}:{exc.lineno}: not valid JSON ({json_error(exc)}); the "
            "file is truncated or damaged: save or evaluate it again"
        ) from None
    except UnicodeDecodeError as exc:
        line = text.count(b"\n", 0, exc.start) + 1
        raise InvalidArgumentError(f"{source}:{line}: {not_utf8(exc)}") from None
    except RecursionError:
        raise InvalidArgumentError(
            f"{source}: the JSON nests too deeply to read; this is not a result file ctxeval wrote"
        ) from None


def iter_parts(directory: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The per-query rows of a distributed run's output directory (or URL), in input order."""
    store = parts_store(directory)
    header = _header(_json_text(store.header, store.read_header()), store.header)
    yield from store.read_parts(header["parts"])


def _header(data: Any, source: Path | str) -> dict[str, Any]:
    if not isinstance(data, dict) or "aggregate" not in data or "summary" not in data:
        raise InvalidArgumentError(f"{source} is not a ctxeval result file (no aggregate/summary)")
    version = data.get("ctxeval_result", FORMAT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise InvalidArgumentError(
            f"{source}: result format {version!r}, and this ctxeval reads format "
            f"{FORMAT_VERSION}: read it with the ctxeval that wrote it, or evaluate again"
        )
    for key, kind in (("aggregate", dict), ("summary", dict), ("skipped", list)):
        value = data.get(key, kind())
        if not isinstance(value, kind):
            raise InvalidArgumentError(
                f"{source} is damaged: its {key!r} is {type(value).__name__}, not "
                f"{'an object' if kind is dict else 'a list'}; save or evaluate it again"
            )
    used = data["summary"].get("context_used", {})
    if not isinstance(used, dict) or not all(isinstance(v, dict) for v in used.values()):
        raise InvalidArgumentError(
            f"{source} is damaged: its summary's 'context_used' is not an object of objects "
            "(per cut-off: chunks, words, characters); save or evaluate it again"
        )
    return data


def _rows(
    rows: Iterable[dict[str, Any]], header: dict[str, Any], source: Path | str
) -> Sequence[dict[str, Any]]:
    """The rows in a :class:`PerQueryTable` whose metric columns are the aggregate's macro
    columns, or, from the first row that does not fit it, all of them in a list."""
    metrics = [c for c in header["aggregate"] if not c.startswith("micro_")]
    table = PerQueryTable(metrics)
    remaining = _objects(rows, source)
    for row in remaining:
        if not table.fits(row):
            return [*table, row, *remaining]
        table.append_row(row)
    return table


def _objects(rows: Iterable[Any], source: Path | str) -> Iterator[dict[str, Any]]:
    """The rows, each checked to be an object with an id."""
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or "id" not in row:
            what = "has no id" if isinstance(row, dict) else f"is {type(row).__name__}"
            raise InvalidArgumentError(
                f"{source}: per-query row {number} {what}, not a query's row: the result file "
                "is damaged; save or evaluate it again"
            )
        yield row


def _csv_rows(source: Path, quoted: bool) -> Iterator[dict[str, Any]]:
    """The rows of a CSV result. ids stay strings ("007", "1e3"); other cells were written as
    JSON scalars, except text that was quoted (``quoted``: the file was written ``csv_safe``),
    which is given back as the text it was."""
    lines = csv.reader(line for _, line in text_lines(source))
    columns = next(lines, [])
    if quoted:
        columns = [restore(name) for name in columns]
    for cells in lines:
        if not cells:
            continue  # a blank line, as csv.DictReader skips it
        row = {}
        for name, value in zip(columns, cells, strict=False):
            text = restore(value) if quoted else value
            was_quoted = len(text) != len(value)
            row[name] = text if name == "id" or was_quoted else _from_csv(value)
        yield row


def _from_csv(value: str) -> Any:
    if value == "":
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value
