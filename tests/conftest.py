"""Test-wide settings: one hypothesis profile, and guards (nothing may reach the network;
reference tools run offline).

Hypothesis: the "ci" profile (loaded when the environment variable CI is set, as in .ci/run)
is derandomised, so a CI run is reproducible; "dev" explores new examples on every run. Both
have no deadline: timing on a shared 2-core machine says nothing about correctness. Choose one
with HYPOTHESIS_PROFILE=ci|dev.
"""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

# continuous-eval sends telemetry unless told not to; it must never get the chance.
os.environ["CONTINUOUS_EVAL_DO_NOT_TRACK"] = "true"
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), ".numba_cache"))

_LOOPBACK = ("127.", "::1", "localhost")
_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else str(address)
    if isinstance(host, str) and (host.startswith(_LOOPBACK) or self.family == socket.AF_UNIX):
        _real_connect(self, address)  # type: ignore[arg-type]
        return
    raise OSError(f"tests must not touch the network (attempted connection to {address!r})")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(autouse=True)
def _no_nltk_download(monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    def refuse(*args: object, **kwargs: object) -> bool:
        raise AssertionError(f"nltk.download{args} was called; nothing may download data")

    monkeypatch.setattr(nltk, "download", refuse)
