"""Renderings that live in a later room, found by name at call time.

``EvaluationResult.to_html`` and ``ComparisonReport.to_html`` write pages that
:mod:`ctxeval.report` draws, and the report is a later stage than results and comparisons: it
may import them, they may not import it (the layers contract, docs/architecture.md). So, as
pandas' ``DataFrame.plot`` loads its plotting backend by name, this room knows only a module name
(:data:`REPORT_BACKEND`) and the small protocol that module implements
(:class:`ReportBackend`); :func:`report_backend` imports it when a page is asked for. Any module
with the two functions can stand in (``to_html(..., backend="mypkg.pages")``).

This is the one place where an earlier room reaches a later one, and it does so through the
protocol only: tests/foundation/test_architecture.py allows no other import by name of a
ctxeval module, and tests/results/test_to_html.py checks that :mod:`ctxeval.report`
implements the protocol.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.io.paths import check_output

__all__ = ["HTML_SUFFIXES", "REPORT_BACKEND", "ReportBackend", "check_html_path", "report_backend"]

#: The module that draws the HTML pages unless ``backend=`` names another.
REPORT_BACKEND = "ctxeval.report"
#: The extensions an HTML page may have (as ``--report`` on the command line).
HTML_SUFFIXES = (".html", ".htm")


class ReportBackend(Protocol):
    """What a report backend module provides: two functions that write a page atomically
    (complete or not at all) and return its path."""

    def write_result_report(
        self, path: str | os.PathLike[str], result: Any, **options: Any
    ) -> Path:
        """One :class:`~ctxeval.results.EvaluationResult`'s page."""

    def write_html_report(
        self,
        path: str | os.PathLike[str],
        report: Any,
        results: Mapping[str, Any],
        **options: Any,
    ) -> Path:
        """A :class:`~ctxeval.comparison.ComparisonReport`'s page, with the results it
        compared."""


_FUNCTIONS = ("write_result_report", "write_html_report")


def report_backend(name: str | None, *, owner: str) -> ReportBackend:
    """The backend module ``name`` (default :data:`REPORT_BACKEND`), imported now; an error
    naming ``owner``'s ``backend=`` when it cannot be imported or lacks a function."""
    module_name = REPORT_BACKEND if name is None else name
    if not isinstance(module_name, str) or not module_name:
        raise InvalidArgumentTypeError(
            f"{owner}(backend={name!r}): give a module name such as 'ctxeval.report', or leave "
            "backend out"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # the backend exists but one of its own imports failed: its error, unchanged
        raise InvalidArgumentError(
            f"{owner}(backend={module_name!r}): no module of that name can be imported; leave "
            "backend out for ctxeval's own report, or install the package that provides it"
        ) from None
    missing = [f for f in _FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise InvalidArgumentTypeError(
            f"{owner}(backend={module_name!r}): the module has no {', '.join(missing)}; a "
            "report backend defines write_result_report(path, result, **options) and "
            "write_html_report(path, report, results, **options)"
        )
    return cast(ReportBackend, module)


def check_html_path(
    path: object, *, owner: str, inputs: Iterable[object] = ()
) -> str | os.PathLike[str]:
    """``path`` as an HTML output: a str or path, ending in .html or .htm, that is no input
    file and not a directory, in a directory ctxeval may write in (the rules of ``--report``)."""
    if not isinstance(path, str | os.PathLike):
        raise InvalidArgumentTypeError(
            f"{owner}(path={path!r}): give the name of the file to write, e.g. 'report.html'"
        )
    files = [p for p in inputs if isinstance(p, str | os.PathLike) and os.path.isfile(p)]
    check_output(path, flag=f"{owner}(path)", inputs=files, suffixes=HTML_SUFFIXES)
    return path
