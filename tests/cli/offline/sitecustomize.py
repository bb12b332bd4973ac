"""Loaded at start-up by every ctxeval subprocess of the CLI tests (cli_helpers puts this folder
first on PYTHONPATH): no connection or name lookup leaves the machine, as pytest-socket ensures
for the tests themselves. A hidden download fails the command instead of passing on a machine
that happens to have a cache. Loopback stays open (Dask's local cluster)."""

import socket

_LOCAL = {"127.0.0.1", "::1", "localhost", ""}
_connect = socket.socket.connect
_getaddrinfo = socket.getaddrinfo


def _host(address: object) -> object:
    return address[0] if isinstance(address, tuple) else address


def _guarded_connect(self: socket.socket, address: object) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in _LOCAL:
        raise OSError(f"the ctxeval tests allow no network access: connect to {address}")
    _connect(self, address)  # type: ignore[arg-type]


def _guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
    if host not in _LOCAL and host is not None:
        raise socket.gaierror(f"the ctxeval tests allow no network access: lookup of {host}")
    return _getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]
