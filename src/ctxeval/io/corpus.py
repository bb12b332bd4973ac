"""A corpus: the documents that chunks and ground-truth excerpts come from, by name.

:func:`load_corpus` reads one from

- a **directory** of ``.txt`` and ``.md`` files (searched recursively, hidden files and folders
  skipped): each document is named by its path relative to the directory, with ``/`` separators
  and without the extension (``guides/setup.md`` is ``guides/setup``);
- a **single** ``.txt`` or ``.md`` file: one document named by the file's stem;
- a **JSONL** file (``.jsonl``/``.ndjson``) or **Parquet** file of ``{"id": ..., "text": ...}``
  records (BEIR's ``corpus.jsonl`` with ``_id`` works as it is; extra fields are ignored);
- a mapping ``{name: text}`` already in memory (checked the same way).

Texts are decoded as UTF-8 exactly, byte for byte (no newline translation, a byte-order mark
kept as ``\\ufeff``), so character offsets are Python string indices into what the file holds.
Every problem names the file (and line) and the fix, and nothing is skipped silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.io.sources import import_parquet, json_error, not_utf8, text_lines

__all__ = ["DOCUMENT_EXTENSIONS", "load_corpus"]

DOCUMENT_EXTENSIONS = (".txt", ".md")
_RECORD_EXTENSIONS = (".jsonl", ".ndjson", ".parquet")
_ID_FIELDS = ("id", "_id", "doc_id")
_TEXT_FIELDS = ("text", "content", "page_content")


def load_corpus(source: str | os.PathLike[str] | Mapping[str, str]) -> dict[str, str]:
    """The documents of ``source`` as ``{name: text}``, in a stable order (sorted by name for a
    directory, file order for JSONL and Parquet)."""
    if isinstance(source, Mapping):
        return _checked_mapping(source)
    if not isinstance(source, str | os.PathLike):
        raise InvalidArgumentTypeError(
            f"corpus: expected a directory, a .txt/.md/.jsonl/.parquet file or a mapping "
            f"{{name: text}}, got {type_name(source)}"
        )
    path = Path(source)
    if path.is_dir():
        documents = dict(_directory(path))
    elif not path.exists():
        raise InvalidArgumentError(f"corpus {path}: no such file or directory")
    elif path.suffix.lower() in DOCUMENT_EXTENSIONS:
        documents = {path.stem: _read_text(path)}
    elif path.suffix.lower() == ".parquet":
        documents = _records(path, _parquet_rows(path))
    elif path.suffix.lower() in _RECORD_EXTENSIONS:
        documents = _records(path, _jsonl_rows(path))
    else:
        raise InvalidArgumentError(
            f"corpus {path}: unsupported file type {path.suffix or '(none)'}; give a directory "
            "of .txt/.md files, one .txt/.md file, or a .jsonl/.parquet file of "
            '{"id": ..., "text": ...} records'
        )
    if not documents:
        raise InvalidArgumentError(
            f"corpus {path}: no documents (a directory needs .txt or .md files; a record file "
            "needs at least one record)"
        )
    return documents


def _checked_mapping(source: Mapping[str, str]) -> dict[str, str]:
    documents: dict[str, str] = {}
    for name, text in source.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"corpus: every document needs a str name and a str text, got "
                f"{type_name(name)} -> {type_name(text)} for {name!r}"
            )
        documents[name] = text
    if not documents:
        raise InvalidArgumentError("corpus: the mapping has no documents")
    return documents


def _directory(root: Path) -> Iterator[tuple[str, str]]:
    seen: dict[str, Path] = {}
    files = (
        p
        for p in root.rglob("*")
        if p.suffix.lower() in DOCUMENT_EXTENSIONS
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for file in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        name = file.relative_to(root).with_suffix("").as_posix()
        if name in seen:
            raise InvalidArgumentError(
                f"corpus {root}: {seen[name].name} and {file.name} would both be document "
                f"{name!r}; rename one of them"
            )
        seen[name] = file
        yield name, _read_text(file)


def _read_text(file: Path) -> str:
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidArgumentError(f"{file}:{line}: {not_utf8(exc)}") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[str, object]]:
    for number, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(
                f"{where}: not valid JSON ({json_error(exc)}); each line must be one "
                '{"id": ..., "text": ...} object'
            ) from None


def _parquet_rows(path: Path) -> Iterator[tuple[str, object]]:
    pq = import_parquet()
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid, OSError, ...
        raise InvalidArgumentError(f"corpus {path}: cannot be read as Parquet ({exc})") from None
    for number, row in enumerate(table.to_pylist(), 1):
        yield f"{path}: row {number}", row


def _records(path: Path, rows: Iterator[tuple[str, object]]) -> dict[str, str]:
    documents: dict[str, str] = {}
    first: dict[str, str] = {}
    for where, row in rows:
        if not isinstance(row, dict):
            raise InvalidArgumentError(
                f'{where}: expected a {{"id": ..., "text": ...}} object, got {type_name(row)}'
            )
        name = _field(row, _ID_FIELDS, where, "id")
        text = _field(row, _TEXT_FIELDS, where, "text")
        if isinstance(name, int) and not isinstance(name, bool):
            name = str(name)
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(
                f"{where}: field 'id' must be a non-empty string, got {type_name(name)}"
            )
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"{where}: field 'text' must be a string, got {type_name(text)}"
            )
        if name in documents:
            raise InvalidArgumentError(
                f"{where}: duplicate document id {name!r} (first at {first[name]}); "
                "give each document its own id"
            )
        documents[name], first[name] = text, where
    return documents


def _field(row: dict[str, object], names: tuple[str, ...], where: str, role: str) -> object:
    for name in names:
        if name in row:
            return row[name]
    raise InvalidArgumentError(
        f"{where}: no {role} field (looked for {', '.join(repr(n) for n in names)}); "
        f"each record needs its document's {role}"
    )
