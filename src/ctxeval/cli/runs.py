"""The runs named on ``ctxeval compare``'s command line: ``NAME=PATH`` or paths, glob patterns
expanded, names made unique, ``--baseline`` resolved; which files look like TREC runs (which
are saved results: :func:`ctxeval.results.files.is_result_file`)."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

import click

from ctxeval.cli.common import fail
from ctxeval.results.files import is_result_file

__all__ = ["baseline_name", "looks_like_trec_run", "named_run_paths"]


def _first_line(path: str) -> bytes:
    with open(path, "rb") as handle:  # bytes: a non-UTF-8 dataset is the reader's to report
        return handle.readline()


def looks_like_trec_run(path: str) -> bool:
    parts = _first_line(path).split()
    return len(parts) >= 6 and parts[1] == b"Q0"


def _split_name(arg: str) -> tuple[str | None, str]:
    """``NAME=PATH`` or a plain path (an existing file whose name holds '=' stays a path)."""
    if os.path.exists(arg) or "=" not in arg:
        return None, arg
    name, _, path = arg.partition("=")
    if not name:
        fail(f"{arg!r}: the run name before '=' is empty; write NAME=PATH, e.g. base=run.jsonl")
    if not path:
        fail(f"{arg!r}: the path after '=' is empty; write NAME=PATH, e.g. {name}=run.jsonl")
    return name, path


def _expand(arg: str, name: str | None, path: str) -> list[str]:
    """The files of one argument: the path, or the files a glob pattern matches (sorted)."""
    if os.path.exists(path) or not glob.has_magic(path):
        if os.path.isdir(path) and is_result_file(path):  # a distributed run's directory
            return [path]
        if not os.path.isfile(path):
            what = "is a directory" if os.path.isdir(path) else "does not exist"
            fail(
                f"{path}: {what}; give a dataset, a saved result (a file, or the directory of "
                "a Dask run's parts) or a TREC run file"
            )
        return [path]
    matches = sorted(p for p in glob.glob(path) if os.path.isfile(p))
    if not matches:
        fail(f"{path}: no file matches the pattern")
    if name is not None and len(matches) > 1:
        fail(
            f"{arg!r}: the pattern matches {len(matches)} files and NAME=PATH names one run; "
            "name each file, or drop the name to name the runs after their files"
        )
    return matches


def named_run_paths(args: Sequence[str]) -> list[tuple[str, str]]:
    """``[(run name, path)]``: NAME=PATH names a run; other runs are named after their file
    stems (:func:`~ctxeval.comparison.inputs.run_name`: a saved result's ``.result`` dropped),
    made unique with -2, -3, ...; globs are expanded."""
    from ctxeval.comparison.inputs import run_name

    given: list[tuple[str | None, str]] = []
    for arg in args:
        name, path = _split_name(arg)
        given += [(name, match) for match in _expand(arg, name, path)]
    explicit = [name for name, _ in given if name is not None]
    twice = sorted({name for name in explicit if explicit.count(name) > 1})
    if twice:
        fail(f"run name {twice[0]!r} is given twice; give each run its own NAME=PATH")
    taken = set(explicit)
    named: list[tuple[str, str]] = []
    for name, path in given:
        if name is None:
            stem = run_name(path) or "run"
            name, n = stem, 2
            while name in taken:
                name, n = f"{stem}-{n}", n + 1
        taken.add(name)
        named.append((name, path))
    return named


def warn_same_files(named: list[tuple[str, str]]) -> None:
    """A warning for each run that is the same file as an earlier one: a comparison of a run
    with itself says nothing."""
    seen: dict[str, str] = {}
    for name, path in named:
        key = os.path.realpath(path) if os.path.exists(path) else path
        if key in seen:
            click.echo(
                f"ctxeval: warning: runs {seen[key]!r} and {name!r} are the same file ({path}): "
                "a run compared with itself differs nowhere; was another file meant?",
                err=True,
            )
        else:
            seen[key] = name


def baseline_name(given: str | None, named: list[tuple[str, str]]) -> str | None:
    """--baseline names a run, or repeats its path."""
    if given is None:
        return None
    names = [name for name, _ in named]
    if given in names:
        return given
    for name, path in named:
        if os.path.exists(given) and os.path.samefile(given, path):
            return name
    from ctxeval.foundation.specs import unknown_name

    fail(str(unknown_name(None, "run", given, names, where="--baseline")))
