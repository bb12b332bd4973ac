"""Semantic chunkers, by span: where the text's meaning changes, by an embedder's vectors.

- :class:`SemanticBreaks` is ``semantic(...)``: Greg Kamradt's method as LangChain's
  ``SemanticChunker`` (``langchain_experimental.text_splitter``) does it. The text is split into
  sentences (LangChain's regex ``(?<=[.?!])\\s+`` by default: the pieces between runs of
  whitespace that follow ``.``, ``?`` or ``!``); each sentence is joined with ``buffer``
  neighbours on each side (``" "`` between them, as LangChain joins them) and embedded; the
  cosine distance between consecutive joined sentences is taken, and a break falls after
  sentence ``i`` where distance ``i`` is above a threshold of all the document's distances:
  their ``percentile`` (``numpy.percentile``, linear), mean plus ``standard_deviation`` times
  their standard deviation, mean plus ``interquartile`` times their interquartile range, the
  ``gradient`` percentile of their gradient (compared with the gradient), or the percentile that
  LangChain interpolates from a wanted number of ``chunks``. A chunk is a run of sentences
  between breaks. ``min_chars`` is LangChain's ``min_chunk_size``: a chunk shorter than it
  (its sentences joined by ``" "``) is not cut off, and runs on to the next break (the last
  chunk is never checked). ``max_tokens`` (ctxeval's, not LangChain's) splits a chunk longer
  than it at its largest distance, again until every part fits or is one sentence.
- :class:`ClusterGroups` is ``cluster(...)``: chroma's ``ClusterSemanticChunker``. The text is
  cut into pieces of at most ``piece_tokens`` tokens (``recursive(tokens=piece_tokens,
  overlap=0)`` with chroma's separators, as chroma's ``RecursiveTokenChunker``); the pieces are
  embedded; their cosine similarity matrix, less the mean of its entries above the diagonal and
  with a zero diagonal, scores a run of pieces by the sum of its block; dynamic programming finds
  the runs of at most ``max_tokens // piece_tokens`` pieces whose scores sum highest. The
  program is chroma's, quirk included: where no run ending at a piece scores above zero, the
  piece's run starts at the document's first piece (so a run may then be longer).

Either chunk is a span of the document from its first sentence's (piece's) start to its last
one's end, stripped of surrounding whitespace; chunks with nothing left are dropped. Vectors
come from :mod:`ctxeval.retrieval.embedders` (``'wordllama'``, offline, by default), each
distinct text embedded once per chunker (:class:`~ctxeval.retrieval.embedders.EmbeddingCache`,
unit length, so that a dot product is the cosine; with ``cache_dir``, kept on disk between runs
as the dense retrievers keep theirs, which changes no vector). Tokens are an LLM tokenizer's with
``tokenizer=`` (:mod:`ctxeval.text.tokenizers`, offline), else ROUGE tokens (runs of ASCII
letters and digits), as the token chunkers count them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ctxeval.chunking.tokens import (
    CHROMA_SEPARATORS,
    RecursiveTokens,
    check_tokenizer,
    token_counter,
)
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.specs import parse_spec, unknown_name
from ctxeval.retrieval.embedders import EmbeddingCache, as_embedder

__all__ = [
    "LANGCHAIN_SENTENCES",
    "THRESHOLDS",
    "ClusterGroups",
    "SemanticBreaks",
    "breakpoints",
    "cluster_segments",
    "vector_segments",
]

Span = tuple[int, int]
Vectors = npt.NDArray[np.float32]

#: LangChain's ``SemanticChunker`` sentence boundary (its ``sentence_split_regex``).
LANGCHAIN_SENTENCES = re.compile(r"(?<=[.?!])\s+")

#: The threshold rules of ``semantic(...)``, with LangChain's default amount of each.
THRESHOLDS: dict[str, float] = {
    "percentile": 95,
    "standard_deviation": 3,
    "interquartile": 1.5,
    "gradient": 95,
}


#: Up to this many pieces in a document, ``cluster`` computes chroma's whole similarity matrix
#: and its mean as chroma does (the same floats); above it, the matrix is never built: the mean
#: is computed from the vectors' sum, and each run's block from its own vectors.
EXACT_PIECES = 2048


def breakpoints(distances: npt.ArrayLike, rule: str, amount: float) -> list[int]:
    """The indices ``i`` after which LangChain's ``SemanticChunker`` breaks, given the cosine
    distances between consecutive joined sentences (at least one) and a threshold ``rule``
    (:data:`THRESHOLDS`, or ``"chunks"``: ``amount`` is the number of chunks wanted)."""
    values = np.asarray(distances, dtype=np.float64)
    compared = values
    threshold: Any
    if rule == "percentile":
        threshold = np.percentile(values, amount)
    elif rule == "standard_deviation":
        threshold = np.mean(values) + amount * np.std(values)
    elif rule == "interquartile":
        q1, q3 = np.percentile(values, [25, 75])
        threshold = np.mean(values) + amount * (q3 - q1)
    elif rule == "gradient":
        compared = np.gradient(values, range(len(values)))
        threshold = np.percentile(compared, amount)
    elif rule == "chunks":
        threshold = np.percentile(values, _chunks_percentile(len(values), amount))
    else:
        raise InvalidArgumentError(f"semantic(...): no threshold rule {rule!r}")
    return [i for i, value in enumerate(compared.tolist()) if value > threshold]


def _chunks_percentile(count: int, chunks: float) -> float:
    """LangChain's ``_threshold_from_clusters``: the percentile, interpolated linearly from 100
    (one chunk) down to 0 (as many chunks as distances)."""
    x1, y1, x2, y2 = float(count), 0.0, 1.0, 100.0
    x = max(min(chunks, x1), x2)
    y = y2 if x2 == x1 else y1 + ((y2 - y1) / (x2 - x1)) * (x - x1)
    return min(max(y, 0.0), 100.0)


def _whole(owner: str, name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgumentError(f"{owner}: give {name} as a whole number >= {least}")
    return value


def _amount(rule: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgumentError(f"semantic({rule}={value!r}): give a finite number")
    if rule in ("percentile", "gradient") and not 0 <= value <= 100:
        raise InvalidArgumentError(f"semantic({rule}={value!r}): give a percentile in [0, 100]")
    return value


def _embedder_name(embedder: object) -> str:
    return embedder if isinstance(embedder, str) else as_embedder(embedder).name


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _distances(vectors: Vectors) -> list[float]:
    """Cosine distances between consecutive vectors (unit length, or zero: distance 1)."""
    rows = vectors.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return (1.0 - np.einsum("ij,ij->i", rows[:-1], rows[1:])).tolist()  # type: ignore[no-any-return]


class SemanticBreaks:
    """``semantic(...)``'s spans: runs of sentences between the breaks LangChain's
    ``SemanticChunker`` finds (see the module)."""

    def __init__(
        self,
        thresholds: Mapping[str, object | None],
        buffer: int = 1,
        embedder: object = "wordllama",
        splitter: str = "langchain",
        min_chars: int | None = None,
        max_tokens: int | None = None,
        tokenizer: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        given = {rule: amount for rule, amount in thresholds.items() if amount is not None}
        if len(given) > 1:
            raise InvalidArgumentError(
                f"semantic(...): give one threshold rule, not {' and '.join(given)}; e.g. "
                "semantic(percentile=95) or semantic(standard_deviation=3)"
            )
        self.rule, amount = next(iter(given.items()), ("percentile", THRESHOLDS["percentile"]))
        if self.rule == "chunks":
            self.amount: float = _whole("semantic(chunks=...)", "chunks", amount, 1)
        else:
            self.amount = _amount(self.rule, amount)
        self.buffer = _whole("semantic(buffer=...)", "buffer", buffer, 0)
        if min_chars is not None:
            _whole("semantic(min_chars=...)", "min_chars", min_chars, 1)
        self.min_chars = min_chars
        self._check_cap(max_tokens, tokenizer)
        self.embedder = _embedder_name(embedder)
        self._vectors = EmbeddingCache(as_embedder(embedder), cache_dir)
        self.splitter = splitter
        self._split = _sentence_spans(splitter)

    def _check_cap(self, max_tokens: int | None, tokenizer: str | None) -> None:
        owner = "semantic(max_tokens=..., tokenizer=...)"
        if max_tokens is None and tokenizer is not None:
            raise InvalidArgumentError(
                f"semantic(tokenizer={tokenizer!r}): a tokenizer goes with max_tokens, e.g. "
                f"semantic(max_tokens=400, tokenizer={tokenizer!r})"
            )
        self.max_tokens = None if max_tokens is None else _whole(owner, "max_tokens", max_tokens, 1)
        self.tokenizer = None if tokenizer is None else check_tokenizer(owner, tokenizer)

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {self.rule: self.amount, "buffer": self.buffer}
        out["embedder"] = self.embedder
        if self.splitter != "langchain":
            out["splitter"] = self.splitter
        optional = (
            ("min_chars", self.min_chars),
            ("max_tokens", self.max_tokens),
            ("tokenizer", self.tokenizer),
        )
        return {**out, **{name: value for name, value in optional if value is not None}}

    def spans(self, text: str) -> list[Span]:
        sentences = self._split(text)
        groups, distances = self.groups([text[s:e] for s, e in sentences])

        def span(first: int, stop: int) -> Span:
            return _trimmed(text, sentences[first][0], sentences[stop - 1][1])

        if self.max_tokens is not None:
            count = token_counter(self.tokenizer)

            def tokens(first: int, stop: int) -> int:
                return count(text[slice(*span(first, stop))])

            groups = [p for g in groups for p in _capped(g, distances, tokens, self.max_tokens)]
        return [(s, e) for s, e in (span(a, b) for a, b in groups) if s < e]

    def groups(self, sentences: list[str]) -> tuple[list[Span], list[float]]:
        """The chunks as ranges ``(first, after last)`` of sentence indices, and the distances
        between consecutive joined sentences."""
        count = len(sentences)
        if count <= 1 or (self.rule == "gradient" and count == 2):
            return [(i, i + 1) for i in range(count)], []  # as LangChain: no distance to rank
        joined = [
            " ".join(sentences[max(0, i - self.buffer) : i + self.buffer + 1]) for i in range(count)
        ]
        distances = _distances(self._vectors(joined))
        groups: list[Span] = []
        start = 0
        for index in breakpoints(distances, self.rule, self.amount):
            stop = index + 1
            if _joined_length(sentences, start, stop) < (self.min_chars or 0):
                continue  # LangChain: too short, so the chunk runs on to the next break
            groups.append((start, stop))
            start = stop
        if start < count:
            groups.append((start, count))
        return groups, distances


def _capped(
    group: Span, distances: list[float], tokens: Callable[[int, int], int], limit: int
) -> list[Span]:
    """``group`` split at its largest distance (the first, on a tie) until every part is
    within ``limit`` tokens (``tokens(first, after last)``) or one sentence."""
    out: list[Span] = []
    todo = [group]
    while todo:
        start, stop = todo.pop()
        if stop - start == 1 or tokens(start, stop) <= limit:
            out.append((start, stop))
            continue
        inside = distances[start : stop - 1]
        cut = start + inside.index(max(inside)) + 1
        todo += [(cut, stop), (start, cut)]
    return out


def _joined_length(sentences: list[str], start: int, stop: int) -> int:
    """``len(" ".join(sentences[start:stop]))``, as LangChain measures ``min_chunk_size``."""
    return sum(len(s) for s in sentences[start:stop]) + stop - start - 1


def _sentence_spans(splitter: str) -> Callable[[str], list[Span]]:
    """The spans of a text's sentences: LangChain's regex split (``"langchain"``: pieces as
    ``re.split`` gives them, the empty ones included), or a ctxeval splitter's sentences by
    name (:func:`~ctxeval.text.sentences.get_splitter`), located in order."""
    if splitter == "langchain":
        return _langchain_spans
    if not isinstance(splitter, str):
        raise InvalidArgumentError(
            f"semantic(splitter={splitter!r}): name a sentence splitter, 'langchain' (LangChain's "
            "regex, the default) or one of ctxeval's, e.g. 'sentencex'"
        )
    from ctxeval.text.sentences import SPLITTER_NAMES, get_splitter, sentence_spans

    name = parse_spec(splitter, what="sentence splitter").name
    if name not in SPLITTER_NAMES:  # the names semantic(...) takes: LangChain's rule too
        known = ["langchain", *SPLITTER_NAMES]
        raise unknown_name(
            splitter, "sentence splitter", name, known, where=f"semantic(splitter={splitter!r})"
        )
    split = get_splitter(splitter).split
    where = f"semantic(splitter={splitter!r})"
    return lambda text: list(sentence_spans(split(text), text, where))


def _langchain_spans(text: str) -> list[Span]:
    out, position = [], 0
    for match in LANGCHAIN_SENTENCES.finditer(text):
        out.append((position, match.start()))
        position = match.end()
    out.append((position, len(text)))
    return out


class ClusterGroups:
    """``cluster(...)``'s spans: chroma's ``ClusterSemanticChunker`` (see the module)."""

    def __init__(
        self,
        max_tokens: int = 400,
        piece_tokens: int = 50,
        embedder: object = "wordllama",
        tokenizer: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        owner = f"cluster(max_tokens={max_tokens!r}, piece_tokens={piece_tokens!r})"
        self.piece_tokens = _whole(owner, "piece_tokens", piece_tokens, 1)
        self.max_tokens = _whole(owner, "max_tokens", max_tokens, piece_tokens)
        self.tokenizer = None if tokenizer is None else check_tokenizer(owner, tokenizer)
        self.embedder = _embedder_name(embedder)
        self._vectors = EmbeddingCache(as_embedder(embedder), cache_dir)
        self._pieces = RecursiveTokens(piece_tokens, 0, tokenizer, CHROMA_SEPARATORS)

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"max_tokens": self.max_tokens, "piece_tokens": self.piece_tokens}
        out["embedder"] = self.embedder
        return out if self.tokenizer is None else {**out, "tokenizer": self.tokenizer}

    def spans(self, text: str) -> list[Span]:
        pieces = self._pieces.spans(text)
        if not pieces:
            return []
        vectors = self._vectors([text[s:e] for s, e in pieces])
        runs = vector_segments(vectors, self.max_tokens // self.piece_tokens)
        return [(pieces[first][0], pieces[last][1]) for first, last in runs]


def cluster_segments(similarity: npt.NDArray[Any], max_size: int) -> list[Span]:
    """chroma's ``_optimal_segmentation``, the same floats: runs ``(first, last)`` (inclusive)
    of consecutive items, at most ``max_size`` long (but see the module), covering them all, that
    maximise the summed scores of their blocks of ``similarity`` less the mean above its
    diagonal, with a zero diagonal."""
    count = len(similarity)
    if count <= 1:
        return [(0, 0)] if count else []
    matrix = similarity - np.mean(similarity[np.triu_indices(count, k=1)])
    np.fill_diagonal(matrix, 0)
    return _segments(
        lambda first, last: np.sum(matrix[first : last + 1, first : last + 1]), count, max_size
    )


def vector_segments(vectors: Vectors, max_size: int) -> list[Span]:
    """:func:`cluster_segments` of the similarities of ``vectors`` (unit rows); beyond
    :data:`EXACT_PIECES` rows, without building the matrix (the same program; the mean and the
    blocks may differ from the matrix's in the last bits)."""
    count = len(vectors)
    if count <= EXACT_PIECES:
        return cluster_segments(vectors @ vectors.T, max_size)
    rows = vectors.astype(np.float64)
    total = rows.sum(axis=0)
    # The sum of all entries of V V^T is |sum of rows|^2; its trace the rows' squared norms.
    mean = (float(total @ total) - float(np.einsum("ij,ij->", rows, rows))) / (count * (count - 1))
    blocks: dict[int, Any] = {}

    def reward(first: int, last: int) -> Any:
        block = blocks.get(last)
        if block is None:
            window = vectors[max(0, last - max_size + 1) : last + 1]
            block = blocks[last] = window @ window.T - np.float32(mean)
            np.fill_diagonal(block, 0)
            blocks.pop(last - 1, None)
        offset = len(block) - (last - first + 1)
        return np.sum(block[offset:, offset:])

    return _segments(reward, count, max_size)


def _segments(reward: Callable[[int, int], Any], count: int, max_size: int) -> list[Span]:
    """chroma's dynamic program: ``best[i]`` is the highest total reward of runs covering items
    ``0..i``, starting at 0 (a run is taken only when it beats it: ties keep the shorter run)."""
    best = np.zeros(count)
    start = np.zeros(count, dtype=int)
    for i in range(count):
        for size in range(1, min(max_size, i + 1) + 1):
            total = reward(i - size + 1, i)
            if i - size >= 0:
                total += best[i - size]
            if total > best[i]:
                best[i] = total
                start[i] = i - size + 1
    runs: list[Span] = []
    i = count - 1
    while i >= 0:
        first = int(start[i])
        runs.append((first, i))
        i = first - 1
    runs.reverse()
    return runs
