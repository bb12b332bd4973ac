"""Optional dependencies: imported when first needed, with one install hint when missing.

Every message has one shape, ``"<purpose> needs <package>: pip install <target>"``, where the
target is the ctxeval extra that brings the package (``'ctxeval[pandas]'``) or, without one, the
package itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import shlex
import sys
from types import ModuleType

from ctxeval.foundation.errors import MissingDependencyError

__all__ = ["check_installed", "missing_dependency", "require"]


def require(
    module: str,
    *,
    purpose: str,
    extra: str | None = None,
    package: str | None = None,
    hint: str | None = None,
) -> ModuleType:
    """Import ``module``, or raise :class:`MissingDependencyError` saying how to install it.

    ``purpose`` says what needs the module ("EvaluationResult.to_pandas()"); ``package`` is the
    name shown (and, without ``extra``, installed), by default the module's top-level name;
    ``hint`` is appended after the install command.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        shown = package or module.partition(".")[0]
        raise missing_dependency(purpose, shown, extra=extra, hint=hint) from exc


def check_installed(
    module: str, *, purpose: str, extra: str | None = None, package: str | None = None
) -> None:
    """Raise what :func:`require` would when ``module`` is not installed, without importing
    it: for objects that import it only when first used, so that a missing package is said
    when they are made, before any record is read."""
    top = module.partition(".")[0]
    if top in sys.modules:
        found = sys.modules[top] is not None
    else:
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
    if not found:
        raise missing_dependency(purpose, package or top, extra=extra)


def missing_dependency(
    purpose: str, package: str, *, extra: str | None = None, hint: str | None = None
) -> MissingDependencyError:
    """The error :func:`require` raises, for a check it cannot make by importing a module (a
    version too old to have a name, say). ``package`` may carry a version: ``"nltk>=3.8.2"``."""
    target = f"ctxeval[{extra}]" if extra else package
    message = f"{purpose} needs {package}: pip install {shlex.quote(target)}"
    return MissingDependencyError(f"{message}; {hint}" if hint else message)
