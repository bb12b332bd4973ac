"""Output paths checked before any work: never an input, never a directory, a known format,
a directory ctxeval may write in.

Every command and API that writes a file calls :func:`check_output` first, so that a run that
would replace its own dataset (``evaluate d.jsonl -o d.jsonl``), or could not save its result at
the end, stops at once with a message naming the option, instead of after minutes of scoring.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name

__all__ = ["check_output", "same_file"]

PathLike = str | os.PathLike[str]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` name the same file: the same path once symlinks and ``..`` are
    resolved, or (both existing) the same inode on the same device, which catches hard links."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:  # one of them does not exist (yet)
        pass
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):  # a symlink loop: not an input we could have read
        return False


def check_output(
    path: PathLike,
    *,
    flag: str,
    inputs: Iterable[PathLike | None] = (),
    suffixes: Iterable[str] | None = None,
    directory: bool = False,
) -> Path:
    """Raise :class:`~ctxeval.foundation.errors.InvalidArgumentError` naming ``flag`` when ``path``
    cannot be an output: it is one of ``inputs`` (also through a symlink or a hard link), an
    existing directory (unless ``directory``), has a suffix outside ``suffixes``, or its directory
    exists and is not writable. A missing directory is fine: the atomic writer creates it."""
    if not isinstance(path, str | os.PathLike) or isinstance(path, bytes):
        raise InvalidArgumentTypeError(
            f"{flag}: give a file path, a str or a pathlib.Path; got {type_name(path)} {path!r}"
        )
    target = Path(path)
    # "--report out.html", "report=out.html": a flag given with its separator keeps it.
    shown = (flag if flag.endswith(("=", " ")) else f"{flag} ") + os.fspath(path)
    for source in inputs:
        if source is not None and not _is_stream(source) and same_file(target, source):
            also = "" if os.fspath(source) == os.fspath(path) else f" ({os.fspath(source)})"
            other = "directory" if directory else "file name"
            raise InvalidArgumentError(
                f"{shown} is also the input{also}: writing it would replace the data being "
                f"read; choose another {other}"
            )
    if directory:
        if target.exists() and not target.is_dir():
            raise InvalidArgumentError(f"{shown} is a file; give a directory")
    else:
        if target.is_dir():
            raise InvalidArgumentError(f"{shown} is a directory; give a file name")
        if suffixes is not None:
            known = tuple(suffixes)
            if target.suffix.lower() not in known:
                raise InvalidArgumentError(
                    f"{shown}: unknown extension {target.suffix or '(none)'!r}; use "
                    + ", ".join(known)
                )
    parent = _existing_parent(target if directory else target.parent)
    if parent is not None and not parent.is_dir():
        raise InvalidArgumentError(f"{shown}: {parent} is a file, not a directory")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidArgumentError(
            f"{shown}: cannot write in {parent} (no write permission, or a read-only "
            "file system); choose another directory"
        )
    return target


def _existing_parent(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return None


def _is_stream(source: PathLike) -> bool:
    return os.fspath(source) == "-"
