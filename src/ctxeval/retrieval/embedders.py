"""Embedders: texts to vectors, offline, each distinct text embedded once.

An embedder is a callable from a list of texts to a 2-D float array (one row a text) with a
``name`` (for reports, and to key what is cached). Built in:

- ``"wordllama"``: WordLlama's 256-dimension static embeddings (``pip install
  'ctxeval[dense]'``). Its weights and tokenizer ship inside its wheel, and ctxeval loads them
  from there with downloads disabled: nothing is fetched, ever (``tests/retrieval/`` loads it with
  the network disabled).
- ``"model2vec:FOLDER"``: a Model2Vec static model saved in a local folder
  (``StaticModel.save_pretrained``; ``pip install model2vec``). ctxeval loads models from local
  folders only: given a name that is no folder, it stops and says so (Model2Vec itself would
  download a hub name; download it yourself if you want it, and give the folder);
- ``"sentence-transformers:FOLDER"``: a Sentence Transformers model saved in a local folder
  (``SentenceTransformer(name).save(folder)``; ``pip install sentence-transformers``, which
  needs torch), loaded with ``local_files_only=True``; a name that is no folder is refused the
  same way (Sentence Transformers would download it from the Hugging Face Hub);
- any callable ``texts -> array`` (a user's model, an API client), named by its
  ``name`` attribute or its qualified name.

:class:`EmbeddingCache` embeds each distinct text once per embedder and normalises the rows to
unit length, so that a dot product is the cosine.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.foundation.optional import require
from ctxeval.foundation.progress import Progress
from ctxeval.foundation.specs import unknown_name
from ctxeval.retrieval.disk_cache import DiskCache

__all__ = [
    "EMBEDDERS",
    "EMBED_BATCH",
    "Bars",
    "Embedder",
    "EmbeddingCache",
    "FunctionEmbedder",
    "Model2VecEmbedder",
    "SentenceTransformersEmbedder",
    "WordLlamaEmbedder",
    "as_embedder",
]

Vectors = npt.NDArray[np.float32]

#: A function that, given how many texts are to be embedded, returns the bar they move.
Bars = Callable[[int], Progress]

#: Texts given to an embedder in one call, so that a progress bar moves. Static embedders
#: (WordLlama, Model2Vec) give a text the same vector whatever the batch; a transformer's may
#: differ in the last digits with the batch (as between a cached and a fresh vector).
EMBED_BATCH = 1024


class Embedder(Protocol):
    """Texts to one row of floats each; ``name`` says which model (for caches and reports)."""

    @property
    def name(self) -> str: ...

    def __call__(self, texts: list[str]) -> Any: ...


class WordLlamaEmbedder:
    """WordLlama's ``l2_supercat`` model, 256 dimensions, loaded from its wheel (no download)."""

    name = "wordllama"

    def __call__(self, texts: list[str]) -> Any:
        return _wordllama().embed(texts, norm=False, return_np=True)

    def __repr__(self) -> str:
        return "WordLlamaEmbedder()"


@functools.lru_cache(maxsize=1)
def _wordllama() -> Any:
    # wordllama configures the root logger when imported (logging.basicConfig): undone, so that
    # no library's log lines reach the user's terminal because ctxeval imported it.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        module = require("wordllama", purpose="the 'wordllama' embedder", extra="dense")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    # The wheel ships the weights and the tokenizer; pointing the cache at the package folder
    # finds both there (the default looks for the tokenizer in a folder the wheel does not
    # have, and would need a download).
    folder = os.path.dirname(str(module.__file__))
    return module.WordLlama.load(cache_dir=folder, disable_download=True)


class Model2VecEmbedder:
    """A Model2Vec static model from a local folder (its raw, unnormalised vectors)."""

    def __init__(self, folder: str) -> None:
        if not os.path.isdir(folder):
            raise InvalidArgumentError(
                f"embedder 'model2vec:{folder}': no such folder; ctxeval loads models from local "
                "folders only (save one with StaticModel.save_pretrained, or download it "
                "yourself), never from a hub"
            )
        self.folder = folder
        self.name = f"model2vec:{folder}"
        self._model: Any = None

    def __call__(self, texts: list[str]) -> Any:
        if self._model is None:
            module = require("model2vec", purpose="the 'model2vec:' embedder")
            self._model = module.StaticModel.from_pretrained(self.folder, force_download=False)
        return self._model.encode(texts, normalize=False, use_multiprocessing=False)

    def __repr__(self) -> str:
        return f"Model2VecEmbedder({self.folder!r})"


class SentenceTransformersEmbedder:
    """A Sentence Transformers model from a local folder (its raw, unnormalised vectors)."""

    def __init__(self, folder: str) -> None:
        if not os.path.isdir(folder):
            raise InvalidArgumentError(
                f"embedder 'sentence-transformers:{folder}': no such folder; ctxeval loads models "
                "from local folders only, never from a hub (to have one, save it while online: "
                "SentenceTransformer(name).save(folder))"
            )
        self.folder = folder
        self.name = f"sentence-transformers:{folder}"
        self._model: Any = None

    def __call__(self, texts: list[str]) -> Any:
        if self._model is None:
            module = require(
                "sentence_transformers",
                purpose="the 'sentence-transformers:' embedder",
                package="sentence-transformers",
            )
            self._model = module.SentenceTransformer(self.folder, local_files_only=True)
        return self._model.encode(
            texts, normalize_embeddings=False, convert_to_numpy=True, show_progress_bar=False
        )

    def __repr__(self) -> str:
        return f"SentenceTransformersEmbedder({self.folder!r})"


class FunctionEmbedder:
    """A user's callable ``texts -> array`` as an embedder."""

    def __init__(self, embed: Callable[[list[str]], Any], name: str | None = None) -> None:
        self.embed = embed
        self.name = name or str(getattr(embed, "name", None) or _qualified(embed))

    def __call__(self, texts: list[str]) -> Any:
        return self.embed(texts)

    def __repr__(self) -> str:
        return f"FunctionEmbedder({self.name!r})"


def _qualified(thing: object) -> str:
    return str(getattr(thing, "__qualname__", type(thing).__name__))


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"wordllama": WordLlamaEmbedder}
"""The built-in embedders by name."""

LOCAL_EMBEDDERS: dict[str, Callable[[str], Embedder]] = {
    "model2vec": Model2VecEmbedder,
    "sentence-transformers": SentenceTransformersEmbedder,
}
"""The embedders of a model in a local folder, by the prefix of ``PREFIX:FOLDER``."""


def as_embedder(embedder: object) -> Embedder:
    """An embedder from its name (``"wordllama"``, ``"model2vec:FOLDER"``,
    ``"sentence-transformers:FOLDER"``), an embedder, or a callable ``texts -> array``."""
    if isinstance(embedder, str):
        kind, colon, folder = embedder.partition(":")
        local = LOCAL_EMBEDDERS.get(kind) if colon else None
        if local is not None:
            return local(folder)
        make = EMBEDDERS.get(embedder)
        if make is None:
            raise unknown_name(
                embedder,
                "embedder",
                embedder,
                list(EMBEDDERS),
                hint="or 'model2vec:FOLDER', 'sentence-transformers:FOLDER', or pass a callable "
                "texts -> array of vectors",
            )
        return make()
    if isinstance(
        embedder,
        WordLlamaEmbedder | Model2VecEmbedder | SentenceTransformersEmbedder | FunctionEmbedder,
    ):
        return embedder
    if callable(embedder):
        return FunctionEmbedder(embedder)
    raise InvalidArgumentTypeError(
        f"embedder: expected 'wordllama' or a callable texts -> array of vectors, got "
        f"{type_name(embedder)}"
    )


#: How many pieces :class:`EmbeddingCache` keeps before joining them into one table.
_PIECES = 64


class EmbeddingCache:
    """Unit-length vectors of texts, each distinct text embedded once by ``embedder``; with
    ``cache_dir``, also kept on disk between runs (:class:`~ctxeval.retrieval.disk_cache.DiskCache`:
    the raw vectors, by embedder name and text)."""

    def __init__(self, embedder: Embedder, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.embedder = embedder
        self.disk = None if cache_dir is None else DiskCache(cache_dir, embedder.name)
        self._rows: dict[str, int] = {}
        self._vectors: list[Vectors] = []
        self.dimension: int | None = None

    def __call__(self, texts: Sequence[str], progress: Bars | None = None) -> Vectors:
        """The unit-length vectors of ``texts``, in order (zero vectors stay zero).
        ``progress``, given the number of texts to embed (those not embedded yet), returns the
        bar the embedding moves, batch by batch."""
        new = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if new:
            if progress is None:
                self._add(new, None)
            else:
                with progress(len(new)) as bar:
                    self._add(new, bar)
        rows = np.fromiter((self._rows[t] for t in texts), dtype=np.int64, count=len(texts))
        return self._gather(rows)

    def _gather(self, rows: npt.NDArray[np.int64]) -> Vectors:
        """The vectors of table rows ``rows``. The table grows in pieces (one per call that
        embedded something); they are joined only every :data:`_PIECES` pieces, so a run that
        embeds one question at a time copies the table rarely, not at every question."""
        if not self._vectors:  # nothing asked, nothing embedded yet
            return np.zeros((0, 0), dtype=np.float32)
        if len(self._vectors) > _PIECES:
            self._vectors = [np.concatenate(self._vectors)]
        if len(self._vectors) == 1:
            return self._vectors[0][rows]
        out = np.empty((len(rows), self._vectors[0].shape[1]), dtype=self._vectors[0].dtype)
        start = 0
        for piece in self._vectors:
            inside = (rows >= start) & (rows < start + len(piece))
            out[inside] = piece[rows[inside] - start]
            start += len(piece)
        return out

    def _add(self, texts: list[str], bar: Progress | None) -> None:
        vectors = self._embedded(texts, bar)
        self.dimension = vectors.shape[1]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        start = len(self._rows)
        self._rows.update((text, start + i) for i, text in enumerate(texts))
        self._vectors.append(vectors)

    def _embedded(self, texts: list[str], bar: Progress | None) -> Vectors:
        """The raw vectors of ``texts``: from the disk where it holds one that fits, else
        embedded (and stored). Vectors of different lengths mean another model was stored under
        this name: then none is trusted, and every text is embedded again."""
        if self.disk is None:
            return self._embed(texts, bar)
        stored = [self.disk.get(text) for text in texts]
        missing = [i for i, vector in enumerate(stored) if vector is None]
        if bar is not None:
            bar.update(len(texts) - len(missing))  # found on the disk
        fresh = self._embed([texts[i] for i in missing], bar) if missing else None
        for i, vector in zip(missing, [] if fresh is None else fresh, strict=True):
            stored[i] = vector
        widths = {len(vector) for vector in stored if vector is not None}
        if self.dimension is not None:
            widths.add(self.dimension)
        if len(widths) > 1:
            missing, fresh = list(range(len(texts))), self._embed(texts, None)
            stored = list(fresh)
        for i in missing:
            self.disk.put(texts[i], stored[i])  # type: ignore[arg-type]
        return np.stack(stored).astype(np.float32)  # type: ignore[arg-type]

    def _embed(self, texts: list[str], bar: Progress | None) -> Vectors:
        """The embedder's vectors of ``texts``, asked for in batches of :data:`EMBED_BATCH`
        (so that a progress bar moves; whether one is drawn changes no call)."""
        parts: list[Vectors] = []
        dimension = self.dimension
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            parts.append(_checked(self.embedder, batch, self.embedder(batch), dimension))
            dimension = parts[-1].shape[1]
            if bar is not None:
                bar.update(len(batch))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _checked(
    embedder: Embedder, texts: list[str], returned: object, dimension: int | None
) -> Vectors:
    """The embedder's answer as a (texts, dimension) float32 array, or an error naming it."""
    try:
        vectors = np.asarray(returned, dtype=np.float32)
    except (TypeError, ValueError):
        vectors = None
    if vectors is None or vectors.ndim != 2 or vectors.shape[0] != len(texts):
        shape = "nothing usable" if vectors is None else f"shape {vectors.shape}"
        raise InvalidArgumentError(
            f"embedder {embedder.name}: returned {shape} for {len(texts)} texts; return one row "
            "of floats per text (a 2-D array)"
        )
    if dimension is not None and vectors.shape[1] != dimension:
        raise InvalidArgumentError(
            f"embedder {embedder.name}: returned vectors of {vectors.shape[1]} dimensions after "
            f"vectors of {dimension}; every vector must have the same length"
        )
    if not np.isfinite(vectors).all():
        raise InvalidArgumentError(
            f"embedder {embedder.name}: returned a vector with NaN or infinity; return finite "
            "numbers"
        )
    return vectors
