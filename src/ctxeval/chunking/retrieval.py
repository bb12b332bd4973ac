"""Retrievers for the harness: built-in BM25 (bm25s), or any callable.

A retriever is

- ``"bm25"`` / ``"bm25(k1=1.5, b=0.75)"`` or a :class:`BM25Retriever`: Okapi BM25 (Lucene's
  variant, as bm25s computes it) over the chunks' words (lowercased runs of two or more letters
  or digits; no stopwords, no stemming, so nothing is ever downloaded). Chunks that share no word
  with the question score 0 and are not returned; ties are broken by chunk order (document
  order, then position in the document), so runs are reproducible to the last digit;
- ``"dense"`` / ``"dense(embedder='wordllama')"`` or a
  :class:`~ctxeval.retrieval.dense.DenseRetriever`: exact cosine search over an embedder's
  vectors (WordLlama's, offline, by default; ``pip install 'ctxeval[dense]'``), each distinct text
  embedded once per run; ties broken by chunk order;
- ``"rrf('bm25', 'dense', k=60)"``, ``"wsum('bm25', 'dense', norm='z-score')"`` or a
  :class:`FusedRetriever`: two or more retrievers fused as ranx fuses runs (reciprocal rank
  fusion; a weighted sum of min-max or z-score normalised scores), ties broken by chunk order;
- :class:`PerChunking` ``(lambda chunks: retriever)``: a user's retriever (a LangChain or
  llama-index retriever, a vector store's, a function) built for each chunking, its hits matched
  back to the chunks by their text;
- any callable ``retrieve(question, chunks)`` returning chunk positions (indices into
  ``chunks``), best first, or ``(position, score)`` pairs: an embedding retriever, a reranker,
  a vector database. It receives the same ``chunks`` list for every question of a chunking, so
  it may index them once (keyed by ``id(chunks)``).

How deep to retrieve is decided in one place, :func:`retrieval_depth`: the largest k, or for a
size budget the most chunks of this chunking that could ever fit in it, plus the one that
crosses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ctxeval.chunking.chunkers import Chunk
from ctxeval.cutoffs.budgets import ContextSizes
from ctxeval.cutoffs.cutoff import Budget, BudgetUnit, Cutoff
from ctxeval.foundation.arrays import IntArray
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name
from ctxeval.foundation.optional import require
from ctxeval.foundation.params import check_choice
from ctxeval.foundation.specs import check_options, parse_spec, unknown_name
from ctxeval.retrieval.dense import DenseRetriever
from ctxeval.retrieval.embedders import Bars
from ctxeval.retrieval.fusion import FUSIONS, Fusion, fuse
from ctxeval.retrieval.objects import hit_text, retriever_function
from ctxeval.text.sizes import TokenCounter

__all__ = [
    "RETRIEVERS",
    "BM25Retriever",
    "ChunkSizes",
    "FusedRanking",
    "FusedRetriever",
    "PerChunking",
    "Ranking",
    "Search",
    "chunk_sizes",
    "component_places",
    "cut_ranking",
    "needed_depths",
    "retrieval_depth",
    "searcher",
    "spec_of",
    "with_cache_dir",
]

Ranking = list[tuple[int, float | None]]
Search = Callable[[str, int], Ranking]

_WORD = re.compile(r"(?u)\b\w\w+\b")


class ChunkSizes:
    """A chunking's chunk sizes in each budget unit, counted once, as :mod:`ctxeval.cutoffs.budgets`
    counts them: words (``len(text.split())``), characters, or tokens of ``tokens``."""

    def __init__(self, chunks: Sequence[Chunk], tokens: str | TokenCounter = "rouge") -> None:
        self.chunks = chunks
        self.tokens = tokens
        self._sizes: dict[BudgetUnit, IntArray] = {}

    def __call__(self, unit: BudgetUnit) -> IntArray:
        found = self._sizes.get(unit)
        if found is None:
            one_each = [[chunk.text] for chunk in self.chunks]
            found = self._sizes[unit] = ContextSizes(one_each, self.tokens).cumulative(unit)[:, 0]
        return found


def retrieval_depth(
    ks: Sequence[Cutoff],
    chunks: Sequence[Chunk] = (),
    tokens: str | TokenCounter = "rouge",
    *,
    sizes: ChunkSizes | None = None,
) -> int:
    """How many chunks to retrieve per question so that every cut-off can be evaluated exactly:
    the largest k; for a size budget, one more than the most chunks of ``chunks`` whose sizes
    fit in it together (its smallest chunks), so that the chunk crossing the budget is always
    retrieved (the ``truncate`` policy cuts it; under ``whole`` it tells a budget that was
    filled from a list that ran out). Never more than there are chunks, never less than 1."""
    depth = max((k for k in ks if isinstance(k, int)), default=1)
    budgets = [k for k in ks if isinstance(k, Budget)]
    if not budgets:
        return depth
    sizes = sizes or ChunkSizes(chunks, tokens)
    for budget in budgets:
        cumulative = np.cumsum(np.sort(sizes(budget.unit)))
        fitting = int(np.searchsorted(cumulative, budget.size, side="right"))
        depth = max(depth, fitting + 1)
    return max(1, min(depth, len(sizes.chunks)))


def needed_depths(
    ks: Sequence[Cutoff], rankings: Sequence[Sequence[int]], sizes: ChunkSizes
) -> list[int]:
    """How many of each question's ranked chunks (``rankings[b]``: chunk positions, retrieved
    to :func:`retrieval_depth`) any cut-off reads: the largest k, and for each budget the
    chunks that fit in it plus the one that crosses it. Later chunks change no number, so the
    harness keeps only these (shorter run files, less to judge)."""
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
    count = max((k for k in ks if isinstance(k, int)), default=0)
    needed = np.full(len(rankings), count, dtype=np.int64)
    width = max(int(lengths.max(initial=0)), 1)
    inside = np.arange(width) < lengths[:, None]
    flat = np.fromiter(
        (i for ranking in rankings for i in ranking), dtype=np.int64, count=int(lengths.sum())
    )
    for budget in (k for k in ks if isinstance(k, Budget)):
        table = np.zeros((len(rankings), width), dtype=np.int64)
        table[inside] = sizes(budget.unit)[flat]
        fitting = (np.cumsum(table, axis=1) <= budget.size).sum(axis=1)
        needed = np.maximum(needed, fitting + 1)
    return np.minimum(needed, lengths).tolist()  # type: ignore[no-any-return]


def chunk_sizes(
    chunks: Sequence[Chunk], unit: BudgetUnit, tokens: str | TokenCounter = "rouge"
) -> IntArray:
    """Each chunk's size in a budget's unit (see :class:`ChunkSizes`)."""
    return ChunkSizes(chunks, tokens)(unit)


def words(text: str) -> list[str]:
    """BM25's terms: lowercased runs of two or more word characters."""
    return _WORD.findall(text.lower())


class BM25Retriever:
    """Okapi BM25 over the chunks (bm25s, Lucene's variant), ``k1`` and ``b`` as usual."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        for name, value in (("k1", k1), ("b", b)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidArgumentError(f"bm25({name}={value!r}): give a number >= 0")
        self.k1, self.b = float(k1), float(b)

    @property
    def spec(self) -> str:
        return f"bm25(k1={self.k1!r}, b={self.b!r})"

    def __repr__(self) -> str:
        return f"BM25Retriever({self.spec!r})"

    def index(self, chunks: Sequence[Chunk]) -> Search:
        """Index ``chunks`` once; the returned function searches them."""
        bm25s = require("bm25s", purpose="the built-in BM25 retriever", extra="bm25")
        model = bm25s.BM25(k1=self.k1, b=self.b)
        model.index([words(chunk.text) for chunk in chunks], show_progress=False)
        vocabulary: dict[str, int] = model.vocab_dict

        def search(question: str, depth: int) -> Ranking:
            ids = [vocabulary[w] for w in words(question) if w in vocabulary]
            if not ids:
                return []
            scores = np.asarray(model.get_scores_from_ids(ids), dtype=np.float64)
            order = np.argsort(-scores, kind="stable")[:depth]
            return [(int(i), float(scores[i])) for i in order if scores[i] > 0]

        return search


class FusedRanking(list[tuple[int, float | None]]):
    """A fused ranking that keeps where each component retriever put each chunk:
    ``components[name][position]`` is ``(rank, score)``, rank counting from 1."""

    def __init__(
        self,
        items: Ranking,
        components: dict[str, dict[int, tuple[int, float | None]]],
    ) -> None:
        super().__init__(items)
        self.components = components

    def cut(self, depth: int) -> FusedRanking:
        """The first ``depth`` chunks, with the components' places."""
        return FusedRanking(self[:depth], self.components)


def cut_ranking(ranking: Ranking, depth: int) -> Ranking:
    """The first ``depth`` of a ranking (a fused one keeps its components' places)."""
    return ranking.cut(depth) if isinstance(ranking, FusedRanking) else ranking[:depth]


def component_places(ranking: Ranking) -> dict[str, dict[str, list[Any]]] | None:
    """For a fused ranking, each component's rank and score of every chunk retrieved, in the
    fused order (None where the component did not retrieve it); None for other rankings."""
    if not isinstance(ranking, FusedRanking):
        return None
    places: dict[str, dict[str, list[Any]]] = {}
    for name, found in ranking.components.items():
        rows = [found.get(position) for position, _ in ranking]
        places[name] = {
            "ranks": [None if row is None else row[0] for row in rows],
            "scores": [None if row is None else row[1] for row in rows],
        }
    return places


class FusedRetriever:
    """Two or more retrievers fused (:mod:`ctxeval.retrieval.fusion`): ``method="rrf"``
    (reciprocal rank fusion, ``k`` = 60), or a weighted sum of their scores after ``"min-max"``
    or ``"z-score"`` normalisation; ``weights`` one per retriever (1.0 each by default). Each
    retriever is asked for the same depth; the fused list is cut there."""

    def __init__(
        self,
        *retrievers: object,
        method: Fusion = "rrf",
        k: float = 60,
        weights: Sequence[float] | None = None,
    ) -> None:
        if len(retrievers) < 2:
            raise InvalidArgumentError(
                f"fusion: got {len(retrievers)} retriever(s); fuse two or more, e.g. "
                "rrf('bm25', 'dense')"
            )
        self.retrievers = [as_retriever(r) for r in retrievers]
        self.method: Fusion = check_choice("fusion", "method", method, FUSIONS)
        if isinstance(k, bool) or not isinstance(k, int | float) or not k > 0:
            raise InvalidArgumentError(f"rrf(k={k!r}): give a number > 0 (60 by default)")
        self.k = k
        if weights is not None and (
            len(weights) != len(retrievers)
            or any(isinstance(w, bool) or not isinstance(w, int | float) for w in weights)
        ):
            raise InvalidArgumentError(
                f"fusion(weights={list(weights)!r}): give one number per retriever "
                f"({len(retrievers)})"
            )
        self.weights = None if weights is None else [float(w) for w in weights]

    @property
    def spec(self) -> str:
        parts = [repr(spec_of(r)) for r in self.retrievers]
        if self.method == "rrf":
            options = [] if self.k == 60 else [f"k={self.k!r}"]
            name = "rrf"
        else:
            options, name = [f"norm={self.method!r}"], "wsum"
        if self.weights is not None:
            options.append(f"weights={self.weights!r}")
        return f"{name}({', '.join(parts + options)})"

    def __repr__(self) -> str:
        return f"FusedRetriever({self.spec!r})"

    def index(self, chunks: Sequence[Chunk], embedding: Bars | None = None) -> Search:
        """Index ``chunks`` with every retriever (``embedding``: as for :func:`searcher`); the
        returned function fuses their rankings."""
        searches = [searcher(r, chunks, embedding) for r in self.retrievers]

        names = self.component_names()

        def search(question: str, depth: int) -> Ranking:
            rankings = [each(question, depth) for each in searches]
            fused = fuse(rankings, self.method, weights=self.weights, k=self.k)
            places = {
                name: {p: (rank, score) for rank, (p, score) in enumerate(ranking, 1)}
                for name, ranking in zip(names, rankings, strict=True)
            }
            return FusedRanking(fused[:depth], places)

        return search

    def with_retrievers(self, retrievers: Sequence[object]) -> FusedRetriever:
        """The same fusion of other retrievers (one for each of this one's)."""
        return FusedRetriever(*retrievers, method=self.method, k=self.k, weights=self.weights)

    def component_names(self) -> list[str]:
        """Each component's name in a run file: its spec's name (``bm25``, ``dense``),
        numbered when two share one."""
        names: list[str] = []
        for retriever in self.retrievers:
            base = spec_of(retriever).partition("(")[0]
            name, n = base, 1
            while name in names:
                n += 1
                name = f"{base}-{n}"
            names.append(name)
        return names


class PerChunking:
    """A user's retriever built for each chunking by ``make(chunks)``: a vector store filled
    with the chunks, say (``lambda chunks: store_of(chunks).as_retriever(...)``). The retriever
    is a function ``question -> hits``, a LangChain retriever (``invoke``) or a llama-index one
    (``retrieve``); its hits (texts, ``Document`` s, ``NodeWithScore`` s) are matched back to the
    chunks by their text, so a chunk retrieved must be one of ``chunks`` as it was given."""

    def __init__(self, make: Callable[[list[Chunk]], object], name: str | None = None) -> None:
        if not callable(make):
            raise InvalidArgumentTypeError(
                f"PerChunking(make=...): give a function chunks -> retriever, got {type_name(make)}"
            )
        self.make = make
        self.spec = name or f"per-chunking({spec_of(make)})"

    def __repr__(self) -> str:
        return f"PerChunking({self.spec!r})"

    def index(self, chunks: Sequence[Chunk]) -> Search:
        """Build the chunking's retriever; the returned function maps its hits to chunks."""
        retrieve = retriever_function(self.make(list(chunks)), f"retriever {self.spec}")
        where: dict[str, list[int]] = {}
        for position, chunk in enumerate(chunks):
            where.setdefault(chunk.text, []).append(position)

        def search(question: str, depth: int) -> Ranking:
            taken: set[int] = set()
            ranking: Ranking = []
            for hit in retrieve(question)[:depth]:
                text = hit_text(hit)
                free = (
                    [p for p in where.get(text, []) if p not in taken]
                    if isinstance(text, str)
                    else []
                )
                if not free:
                    raise InvalidArgumentError(
                        f"retriever {self.spec}: for the question {question!r} it returned "
                        f"{_shown(text)}, which is not one of this chunking's chunks (or is one "
                        "already returned); build the retriever from the chunks it is given"
                    )
                taken.add(free[0])
                score = getattr(hit, "score", None)
                ranking.append((free[0], float(score) if isinstance(score, int | float) else None))
            return ranking

        return search


def _shown(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def with_cache_dir(retriever: object, cache_dir: str) -> object:
    """``retriever`` with its dense retrievers (fused ones' too) keeping vectors in
    ``cache_dir``; the others as they are."""
    if isinstance(retriever, DenseRetriever):
        return DenseRetriever(retriever.embedder, cache_dir)
    if isinstance(retriever, FusedRetriever):
        return retriever.with_retrievers(
            [with_cache_dir(r, cache_dir) for r in retriever.retrievers]
        )
    return retriever


def spec_of(retriever: object) -> str:
    """A retriever's spec, or a function's qualified name."""
    spec = getattr(retriever, "spec", None)
    if isinstance(spec, str):
        return spec
    return str(getattr(retriever, "__qualname__", type(retriever).__name__))


def _rrf(*retrievers: object, k: float = 60) -> FusedRetriever:
    return FusedRetriever(*retrievers, method="rrf", k=k)


def _wsum(*retrievers: object, norm: str = "min-max") -> FusedRetriever:
    if norm not in ("min-max", "z-score"):
        raise InvalidArgumentError(f"wsum(norm={norm!r}): use 'min-max' or 'z-score'")
    return FusedRetriever(*retrievers, method=norm)  # type: ignore[arg-type]


_USAGE = "name or name(option=value, ...), e.g. 'bm25', 'dense' or \"rrf('bm25', 'dense')\""


RETRIEVERS: dict[str, Callable[..., BM25Retriever | DenseRetriever | FusedRetriever]] = {
    "bm25": BM25Retriever,
    "dense": DenseRetriever,
    "rrf": _rrf,
    "wsum": _wsum,
}
"""The built-in retrievers by spec name: ``rrf('bm25', 'dense', k=60)`` and
``wsum('bm25', 'dense', norm='z-score')`` fuse the retrievers their arguments name."""


def as_retriever(
    retriever: object,
) -> BM25Retriever | DenseRetriever | FusedRetriever | PerChunking | Callable[..., Any]:
    """A retriever from its spec (``"bm25"``, ``"dense(embedder='wordllama')"``), a built-in
    retriever, or a callable."""
    if isinstance(retriever, BM25Retriever | DenseRetriever | FusedRetriever | PerChunking):
        return retriever
    if isinstance(retriever, str):
        parsed = parse_spec(retriever, what="retriever", usage=_USAGE)
        make = RETRIEVERS.get(parsed.name)
        if make is None:
            raise unknown_name(retriever, "retriever", parsed.name, list(RETRIEVERS))
        fusing = parsed.name in ("rrf", "wsum")
        if (parsed.args and not fusing) or parsed.k is not None:
            raise InvalidArgumentError(
                f"{retriever!r}: name the options, e.g. bm25(k1=1.2) or dense(embedder='wordllama')"
            )
        check_options(retriever, parsed.name, parsed.kwargs, make)
        return make(*parsed.args, **parsed.kwargs)
    if callable(retriever) and not hasattr(retriever, "invoke"):
        return retriever
    raise InvalidArgumentTypeError(
        f"retriever: expected 'bm25', 'dense', a callable (question, chunks) -> ranked chunk "
        f"positions, or PerChunking(lambda chunks: your retriever over them), got "
        f"{type_name(retriever)}; a LangChain or llama-index retriever is built over its own "
        "documents: wrap the function that builds it from the chunks in PerChunking"
    )


def searcher(retriever: object, chunks: Sequence[Chunk], embedding: Bars | None = None) -> Search:
    """The search function of ``retriever`` over ``chunks`` (indexed once); ``embedding``,
    given the number of chunks a dense retriever has to embed, returns the progress bar they
    move (:class:`~ctxeval.retrieval.embedders.EmbeddingCache`)."""
    resolved = as_retriever(retriever)
    if isinstance(resolved, FusedRetriever):
        return resolved.index(chunks, embedding)
    if isinstance(resolved, BM25Retriever | PerChunking):
        return resolved.index(chunks)
    if isinstance(resolved, DenseRetriever):
        return resolved.index([chunk.text for chunk in chunks], embedding)
    name = getattr(resolved, "__qualname__", type(resolved).__name__)

    def search(question: str, depth: int) -> Ranking:
        return _ranking(name, resolved(question, chunks), len(chunks))[:depth]

    return search


def _ranking(name: str, returned: object, count: int) -> Ranking:
    if not isinstance(returned, Iterable) or isinstance(returned, str | bytes):
        raise InvalidArgumentTypeError(
            f"retriever {name}: returned {type_name(returned)}; return chunk positions (ints), "
            "best first, or (position, score) pairs"
        )
    ranking: Ranking = []
    seen: set[int] = set()
    for item in returned:
        position, score = (
            item if isinstance(item, tuple | list) and len(item) == 2 else (item, None)
        )
        if isinstance(position, np.integer):
            position = int(position)
        if isinstance(position, bool) or not isinstance(position, int):
            raise InvalidArgumentTypeError(
                f"retriever {name}: returned {item!r}; return chunk positions (ints), best "
                "first, or (position, score) pairs"
            )
        if not 0 <= position < count:
            raise InvalidArgumentError(
                f"retriever {name}: chunk position {position} is out of range (there are "
                f"{count} chunks, 0 to {count - 1})"
            )
        if position in seen:
            raise InvalidArgumentError(
                f"retriever {name}: returned chunk {position} twice; return each chunk once"
            )
        seen.add(position)
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float | np.number)
        ):
            raise InvalidArgumentTypeError(
                f"retriever {name}: returned {item!r}; a score must be a number, e.g. "
                "(position, 0.83)"
            )
        ranking.append((position, None if score is None else float(score)))
    return ranking
