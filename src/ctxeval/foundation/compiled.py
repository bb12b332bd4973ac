"""One switch for every compiled kernel (the ``fast`` extra's numba kernels: ROUGE-L's and the
span measures'): ``CTXEVAL_COMPILED`` (``auto``, the default: each kernel loads when its own
rule says it pays; ``always``; ``never``; case and spaces do not matter), read once, when a
kernel is first asked; :func:`mode` overrides it within a block, in one thread. Each kernel keeps
its own loading state and ``auto`` rule; the mode is this module's."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Literal

from ctxeval.foundation.errors import EnvironmentVariableError, InvalidArgumentError

__all__ = [
    "MODES",
    "Mode",
    "current_mode",
    "kernel_status",
    "load_kernel",
    "mode",
    "read_environment",
]

Mode = Literal["auto", "always", "never"]
MODES: tuple[Mode, ...] = ("auto", "always", "never")

_local = threading.local()  # mode()'s override, per thread
_state: dict[str, Any] = {"mode": None}  # CTXEVAL_COMPILED as last read
_loading = threading.Lock()  # one kernel loads at a time


def read_environment() -> Mode:
    """Read ``CTXEVAL_COMPILED`` again (it is read once, when a kernel is first asked; call this
    after changing it within a process)."""
    raw = os.environ.get("CTXEVAL_COMPILED", "auto")
    value = raw.strip().lower() or "auto"
    if value not in MODES:
        raise EnvironmentVariableError(
            f"environment variable CTXEVAL_COMPILED={raw!r} (the compiled kernels): use "
            "'auto' (the default), 'always' or 'never'"
        )
    _state["mode"] = value
    return value


@contextlib.contextmanager
def mode(value: Mode) -> Iterator[None]:
    """Within the block, use ``value`` (``"auto"``, ``"always"``, ``"never"``) for every compiled
    kernel instead of ``CTXEVAL_COMPILED``, in this thread (to compare the paths, or to test
    them). Worker processes started by fork inherit it; spawned workers and Dask's read the
    environment."""
    if value not in MODES:
        raise InvalidArgumentError(f"compiled.mode({value!r}): use 'auto', 'always' or 'never'")
    before = getattr(_local, "mode", None)
    _local.mode = value
    try:
        yield
    finally:
        _local.mode = before


def current_mode() -> Mode:
    """The mode in force: this thread's :func:`mode`, else ``CTXEVAL_COMPILED`` (read once)."""
    found: Mode | None = getattr(_local, "mode", None) or _state["mode"]
    return found or read_environment()


def load_kernel(
    state: MutableMapping[str, Any], get: Callable[[], Callable[..., Any]]
) -> Callable[..., Any] | None:
    """The compiled kernel of ``state`` (its ``"kernel"``, and ``"why"`` it is or is not
    there), loaded the first time it is asked for, once whatever the threads: ``get`` imports
    it and checks it on a record whose answer is known (numba compiles it, or loads it from its
    cache, then). Any failure leaves the kernel out and says why, so the numpy or Python path
    runs; it is not tried again."""
    if state["why"] == "not loaded yet":
        with _loading:
            if state["why"] == "not loaded yet":
                _load(state, get)
    kernel: Callable[..., Any] | None = state["kernel"]
    return kernel


def _load(state: MutableMapping[str, Any], get: Callable[[], Callable[..., Any]]) -> None:
    try:
        kernel = get()
    except ImportError as exc:
        state["why"] = f"numba is not installed ({exc}): pip install 'ctxeval[fast]'"
    except Exception as exc:  # any failure to load the kernel means the other path
        state["why"] = f"the compiled kernel could not be loaded: {type(exc).__name__}: {exc}"
    else:
        state["kernel"] = kernel
        state["why"] = "loaded"


def kernel_status(state: MutableMapping[str, Any], *, in_use: str, waiting: str) -> str:
    """Whether the kernel of ``state`` (see :func:`load_kernel`) is in use, and if not, why:
    ``in_use`` when it is, ``waiting`` when it is not loaded yet (what its loading waits for)."""
    if current_mode() == "never":
        return "not used: the mode is 'never' (CTXEVAL_COMPILED or compiled.mode)"
    if state["kernel"] is not None:
        return in_use
    if state["why"] == "not loaded yet":
        return f"not loaded yet: {waiting}"
    return f"not used: {state['why']}"
