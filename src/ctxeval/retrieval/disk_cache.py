"""Vectors kept on disk between runs: one file a text, keyed by the embedder's name and the text.

``cache_dir/<embedder>/<hh>/<sha256 of the text>.vec`` holds one vector: a header (a magic word,
the SHA-256 of the embedder's name and of the text, the dimension), the float32 values, and the
SHA-256 of everything before it. A file is written to a temporary name in its folder and renamed
into place, so two runs at once never see half a file; a file whose header, size or checksum is
not what it must be (truncated, written by something else, another embedder's) is not read but
computed again and rewritten.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["DiskCache"]

_MAGIC = b"CTXVEC1\n"
_HEADER = struct.Struct("<8s32s32sI")  # magic, sha256(embedder), sha256(text), dimension
_DIGEST = 32


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class DiskCache:
    """The vectors of one embedder (by ``name``) under ``folder``."""

    def __init__(self, folder: str | os.PathLike[str], name: str) -> None:
        self.name = name
        self._name_sha = _sha(name)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60] or "embedder"
        self.root = Path(folder) / f"{safe}-{self._name_sha.hex()[:12]}"

    def _path(self, text_sha: bytes) -> Path:
        digest = text_sha.hex()
        return self.root / digest[:2] / f"{digest}.vec"

    def get(self, text: str) -> npt.NDArray[np.float32] | None:
        """The stored vector of ``text``, or None when there is none that can be trusted."""
        text_sha = _sha(text)
        try:
            data = self._path(text_sha).read_bytes()
        except OSError:
            return None
        if len(data) < _HEADER.size + _DIGEST:
            return None
        magic, name_sha, stored_sha, dimension = _HEADER.unpack_from(data)
        body = data[: len(data) - _DIGEST]
        if (
            magic != _MAGIC
            or name_sha != self._name_sha
            or stored_sha != text_sha
            or len(data) != _HEADER.size + 4 * dimension + _DIGEST
            or hashlib.sha256(body).digest() != data[len(body) :]
        ):
            return None
        return np.frombuffer(body, dtype="<f4", offset=_HEADER.size).astype(np.float32)

    def put(self, text: str, vector: npt.NDArray[np.float32]) -> None:
        """Store ``vector`` for ``text``: written whole or not at all."""
        text_sha = _sha(text)
        values = np.ascontiguousarray(vector, dtype="<f4")
        body = _HEADER.pack(_MAGIC, self._name_sha, text_sha, len(values)) + values.tobytes()
        target = self._path(text_sha)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".tmp", delete=False) as handle:
            temporary = Path(handle.name)
            try:
                handle.write(body + hashlib.sha256(body).digest())
            except BaseException:
                handle.close()
                temporary.unlink(missing_ok=True)
                raise
        try:
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
