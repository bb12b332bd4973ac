"""Any chunker as a :class:`~ctxeval.chunking.chunkers.Chunker` whose chunks know their spans.

:func:`as_chunker` accepts

- a built-in chunker or its spec string (``"fixed(words=100, overlap=10)"``);
- an object with ``split_text(text) -> list[str]`` (LangChain's text splitters);
- an object with ``chunk(text)`` returning chunks with ``.text``, ``.start_index`` and
  ``.end_index`` (chonkie's chunkers);
- a callable ``text -> list[str]`` or ``text -> list[(start, end)]``.

Spans a function returns are used as they are (inside the document). Offsets a chunk object
reports are used when they hold its text exactly (counted ``given``). Other chunk texts are
located back in the document in order (:class:`~ctxeval.text.locate.InOrder`): exactly,
from one character after the previous chunk's start (so overlapping chunks are found where
they are); then up to whitespace and case (a splitter that strips, collapses or re-joins
whitespace; a tokenizer's decoding that adds or drops spaces); then fuzzily, near the previous
chunk, when rapidfuzz's ratio of the chunk and the span is at least ``fuzzy_threshold`` (a
splitter that rewrites, adds or drops characters: a regex separator re-joined as written). A
located chunk's text is the document's text at its span (what span metrics measure), never
the splitter's.

:attr:`ExternalChunker.locating` counts how each chunk was placed, over every document the
chunker chunked (``given``, ``exact``, ``normalised``, ``fuzzy``, ``unlocated``); a document
with fuzzy or unlocated chunks gets a :class:`SplitterWarning` with its counts. A chunk found
nowhere stops the run (``unlocated="error"``, the default) with the chunker's name, the
document, the chunk's number and text, and its best score; with ``unlocated="skip"`` it is
left out, counted and named in the warning; it is never given a guessed span. Empty and
whitespace-only chunks are dropped (they hold no text to retrieve).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from ctxeval.chunking.chunkers import Chunk, Chunker, parse_chunker, position_reporter
from ctxeval.foundation.errors import (
    CtxevalWarning,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    type_name,
)
from ctxeval.text.locate import DEFAULT_FUZZY_THRESHOLD, HOW, InOrder

__all__ = [
    "LOCATING_KEYS",
    "ExternalChunker",
    "SplitterWarning",
    "as_chunker",
    "locate_chunks",
]

LOCATING_KEYS = ("given", *HOW)
"""How a chunk's span was settled, the keys of :attr:`ExternalChunker.locating`."""

Unlocated = Literal["error", "skip"]
_SHOWN = 3  # unlocated chunks named in a warning


class SplitterWarning(CtxevalWarning):
    """A splitter's chunks were located fuzzily in a document, or not at all (left out)."""


class ExternalChunker(Chunker):
    """A third-party splitter or a function, with its chunks located in the document."""

    name = "external"

    def __init__(
        self,
        split: Callable[[str], Sequence[Any]],
        description: str,
        *,
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
        unlocated: Unlocated = "error",
    ) -> None:
        if isinstance(fuzzy_threshold, bool) or not isinstance(fuzzy_threshold, int | float):
            raise InvalidArgumentError(
                f"fuzzy_threshold={fuzzy_threshold!r}: give a number above 0, at most 100"
            )
        if not 0 < fuzzy_threshold <= 100:
            raise InvalidArgumentError(
                f"fuzzy_threshold={fuzzy_threshold!r}: give a number above 0, at most 100 "
                "(100 accepts only chunks equal to the document's text up to whitespace and case)"
            )
        if unlocated not in ("error", "skip"):
            raise InvalidArgumentError(
                f"unlocated={unlocated!r}: give 'error' (stop at a chunk that is not in its "
                "document) or 'skip' (leave it out, counted and warned)"
            )
        self._split = split
        self._description = description
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.unlocated: Unlocated = unlocated
        self.locating: dict[str, int] = dict.fromkeys(LOCATING_KEYS, 0)
        """How many chunks were placed each way, over every document chunked so far."""

    @property
    def spec(self) -> str:
        return self._description

    def options(self) -> dict[str, Any]:
        return {"fuzzy_threshold": self.fuzzy_threshold, "unlocated": self.unlocated}

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self._spans(text, None)

    def chunk(self, text: str, doc: str = "") -> list[Chunk]:
        """The chunks of one document, in document order, each the document's text at its
        located span."""
        return [Chunk(doc, s, e, text[s:e]) for s, e in self._spans(text, doc)]

    def _spans(self, text: str, doc: str | None) -> list[tuple[int, int]]:
        returned = self._split(text)
        if isinstance(returned, str | bytes) or not isinstance(returned, Iterable):
            raise InvalidArgumentTypeError(
                f"{self.spec}: returned {type_name(returned)} for document {doc!r}; return a "
                "list of chunk texts or (start, end) spans"
            )
        pieces = list(returned)
        if pieces and all(_is_span(piece) for piece in pieces):
            spans = [_checked_span(self.spec, text, piece) for piece in pieces]
            self.locating["given"] += len(spans)
            return spans
        texts = [_piece_text(self.spec, piece) for piece in pieces]
        return locate_chunks(
            self.spec,
            text,
            texts,
            [_offsets(piece) for piece in pieces],
            doc=doc,
            threshold=self.fuzzy_threshold,
            unlocated=self.unlocated,
            counts=self.locating,
        )


def as_chunker(
    chunker: object,
    *,
    fuzzy_threshold: float | None = None,
    unlocated: Unlocated | None = None,
) -> Chunker:
    """``chunker`` (a spec, a built-in, a splitter object or a function) as a :class:`Chunker`;
    ``fuzzy_threshold`` (default :data:`~ctxeval.text.locate.DEFAULT_FUZZY_THRESHOLD`)
    and ``unlocated`` (default ``"error"``) apply to splitters and functions, whose chunks are
    located (see the module)."""
    options: dict[str, Any] = {
        "fuzzy_threshold": DEFAULT_FUZZY_THRESHOLD if fuzzy_threshold is None else fuzzy_threshold,
        "unlocated": "error" if unlocated is None else unlocated,
    }
    if isinstance(chunker, Chunker | str):
        if fuzzy_threshold is not None or unlocated is not None:
            raise InvalidArgumentError(
                f"chunker {chunker if isinstance(chunker, str) else chunker.spec}: "
                "fuzzy_threshold and unlocated apply to splitters and functions, whose chunks "
                "are located; this chunker's chunks know their spans"
            )
        return chunker if isinstance(chunker, Chunker) else parse_chunker(chunker)
    split_text = getattr(chunker, "split_text", None)
    if callable(split_text):
        return ExternalChunker(split_text, f"{type(chunker).__name__}.split_text", **options)
    chunk = getattr(chunker, "chunk", None)
    if callable(chunk):
        return ExternalChunker(chunk, f"{type(chunker).__name__}.chunk", **options)
    if callable(chunker):
        name = getattr(chunker, "__qualname__", type(chunker).__name__)
        return ExternalChunker(chunker, f"{name}()", **options)
    raise InvalidArgumentTypeError(
        f"chunker: expected a spec such as 'fixed(words=100)', a ctxeval Chunker, a splitter "
        f"with split_text() or chunk(), or a function text -> list of texts or (start, end) "
        f"spans; got {type_name(chunker)}"
    )


def _is_span(piece: object) -> bool:
    return (
        isinstance(piece, tuple | list)
        and len(piece) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in piece)
    )


def _checked_span(spec: str, text: str, piece: Sequence[int]) -> tuple[int, int]:
    start, end = piece
    if not 0 <= start <= end <= len(text):
        raise InvalidArgumentError(
            f"chunker {spec}: span ({start}, {end}) is not inside the document "
            f"({len(text)} characters)"
        )
    return start, end


def _offsets(piece: object) -> tuple[int, int] | None:
    """The offsets a chunk object reports (chonkie's ``start_index``, ``end_index``)."""
    start, end = getattr(piece, "start_index", None), getattr(piece, "end_index", None)
    if isinstance(start, int) and isinstance(end, int):
        return start, end
    return None


def _piece_text(spec: str, piece: object) -> str:
    """A chunk's text: a string, or a chunk object's ``.text`` (``.page_content``)."""
    if isinstance(piece, str):
        return piece
    text = getattr(piece, "text", None)
    if isinstance(text, str):
        return text
    content = getattr(piece, "page_content", None)  # a LangChain Document
    if isinstance(content, str):
        return content
    raise InvalidArgumentTypeError(
        f"chunker {spec}: returned {type_name(piece)}; a chunker must return texts, objects "
        "with .text, or (start, end) spans"
    )


def locate_chunks(
    spec: str,
    document: str,
    texts: Sequence[str],
    offsets: Sequence[tuple[int, int] | None] | None = None,
    *,
    doc: str | None = None,
    threshold: float = DEFAULT_FUZZY_THRESHOLD,
    unlocated: Unlocated = "error",
    counts: dict[str, int] | None = None,
) -> list[tuple[int, int]]:
    """The spans of ``texts`` (chunks in document order) in ``document`` (named ``doc``): the
    reported ``offsets`` where they hold the text exactly, else located (see the module doc).
    ``counts`` (keys :data:`LOCATING_KEYS`) is added to."""
    where = f"chunker {spec}" + ("" if doc is None else f", document {doc!r}")
    found = dict.fromkeys(LOCATING_KEYS, 0)
    lowest = 100.0
    missing: list[str] = []
    spans: list[tuple[int, int]] = []
    locator = InOrder(document, threshold)
    report = position_reporter()  # a progress bar, moving as chunks are found
    for number, text in enumerate(texts):
        if not text.strip():
            continue
        given = offsets[number] if offsets is not None else None
        if given is not None and given[0] >= 0 and document[given[0] : given[1]] == text:
            found["given"] += 1
            spans.append(given)
            locator.cursor, locator.reach = given[0] + 1, given[1]
            continue
        placed = locator.locate(text)
        found[placed.how] += 1
        if placed.how != "unlocated":
            spans.append((placed.start, placed.end))
            lowest = min(lowest, placed.score)
            if report is not None:
                report(placed.end)
            continue
        best = f"{placed.score:.1f}" if placed.score else f"below {max(0.0, threshold - 10):g}"
        problem = (
            f"chunk {number} ({_clip(text)}) is not in the document after the previous chunk, "
            f"exactly, up to whitespace and case, or fuzzily (best score {best}, "
            f"threshold {threshold:g})"
        )
        if unlocated == "error":
            raise InvalidArgumentError(
                f"{where}: {problem}; use a splitter that keeps the text, return (start, end) "
                "spans, lower fuzzy_threshold, or pass as_chunker(splitter, unlocated='skip') "
                "to leave such chunks out (counted and warned)"
            )
        missing.append(f"{problem}: left out")
    if counts is not None:
        for key, count in found.items():
            counts[key] += count
    if found["fuzzy"] or found["unlocated"]:
        _warn(where, found, lowest, missing)
    return spans


def _warn(where: str, found: dict[str, int], lowest: float, missing: list[str]) -> None:
    placed = ", ".join(f"{count} {key}" for key, count in found.items() if count)
    message = f"{where}: chunks located {placed}"
    if found["fuzzy"]:
        message += f" (lowest fuzzy score {lowest:.1f}; their spans hold the document's text)"
    if missing:
        shown = "; ".join(missing[:_SHOWN])
        more = len(missing) - _SHOWN
        message += f"; {shown}" + (f"; and {more} more" if more > 0 else "")
    warnings.warn(message, SplitterWarning, stacklevel=4)


def _clip(text: str, limit: int = 50) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
