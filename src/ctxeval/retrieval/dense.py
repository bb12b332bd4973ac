"""Dense retrieval: exact cosine top-k over an embedder's unit-length vectors.

A chunking's chunks are embedded once (each distinct text once, :class:`EmbeddingCache`) and kept
as one matrix; a question is embedded and scored against every chunk with one matrix-vector
product. The top ``depth`` chunks are returned best first, ties broken by chunk order (document
order, then position in the document), as BM25's are, so runs are reproducible to the last
digit. Exact search is what a benchmark of a few hundred thousand chunks needs (a product of
that many rows of 256 floats takes milliseconds); an approximate index would only pay beyond
millions of chunks, and would change the rankings it is meant to measure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.retrieval.embedders import Bars, Embedder, EmbeddingCache, as_embedder

__all__ = ["DenseRetriever", "Ranking", "top_k"]

Ranking = list[tuple[int, float | None]]


def top_k(scores: npt.NDArray[np.floating[Any]], depth: int) -> Ranking:
    """The ``depth`` best positions of ``scores``, best first, ties by position."""
    order = np.argsort(-scores, kind="stable")[:depth]
    return [(int(i), float(scores[i])) for i in order]


class DenseRetriever:
    """Exact cosine search with ``embedder`` (a name such as ``"wordllama"``, or a callable
    ``texts -> array``); the vectors of texts already seen are reused across chunkings and
    questions of a run, and, with ``cache_dir``, across runs."""

    def __init__(self, embedder: object = "wordllama", cache_dir: str | None = None) -> None:
        self.embedder: Embedder = as_embedder(embedder)
        self.cache_dir = cache_dir
        self.cache = EmbeddingCache(self.embedder, cache_dir)

    @property
    def spec(self) -> str:
        # The cache changes no number: it is not part of what the retriever is.
        return f"dense(embedder={self.embedder.name!r})"

    def __repr__(self) -> str:
        return f"DenseRetriever({self.spec!r})"

    def index(
        self, texts: Sequence[str], progress: Bars | None = None
    ) -> Callable[[str, int], Ranking]:
        """Embed ``texts`` once (``progress``: the bar of the texts to embed, given their
        number; see :class:`EmbeddingCache`); the returned function searches them."""
        empty = np.zeros((0, 0), dtype=np.float32)
        matrix = self.cache(list(texts), progress) if texts else empty

        def search(question: str, depth: int) -> Ranking:
            if not len(matrix):
                return []
            vector = self.cache([question])[0]
            return top_k(matrix @ vector, depth)

        return search
