"""Any chunker as a :class:`~ctxeval.chunking.chunkers.Chunker` whose chunks know their spans.

:func:`as_chunker` accepts

- a built-in chunker or its spec string (``"fixed(words=100, overlap=10)"``);
- an object with ``split_text(text) -> list[str]`` (LangChain's text splitters);
- an object with ``chunk(text)`` returning chunks with ``.text``, ``.start_index`` and
  ``.end_index`` (chonkie's chunkers);
- a callable ``text -> list[str]`` or ``text -> list[(start, end)]``.

Chunk texts without offsets are located back in the document in order: each with ``str.find``
from one character after the previous chunk's start (so overlapping chunks are found where
they are), and when it is not there verbatim (a splitter that strips or collapses whitespace),
as the same words separated by any whitespace. A chunk found neither way stops the run with the
chunker's name, the document and the chunk, never a guessed span. Empty and whitespace-only
chunks are dropped (they hold no text to retrieve). Offsets that a splitter reports are checked
against the text it returns; when they disagree, the text is located instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ctxeval.chunking.chunkers import Chunker, parse_chunker
from ctxeval.errors import InvalidArgumentError, InvalidArgumentTypeError, type_name

__all__ = ["ExternalChunker", "as_chunker", "locate_chunks"]

_WORDS = re.compile(r"\S+")


class ExternalChunker(Chunker):
    """A third-party splitter or a function, with its chunks located in the document."""

    name = "external"

    def __init__(self, split: Callable[[str], Sequence[Any]], description: str) -> None:
        self._split = split
        self._description = description

    @property
    def spec(self) -> str:
        return self._description

    def spans(self, text: str) -> list[tuple[int, int]]:
        pieces = list(self._split(text))
        if pieces and all(_is_span(piece) for piece in pieces):
            return [_checked_span(self.spec, text, piece) for piece in pieces]
        texts = [_piece_text(self.spec, piece) for piece in pieces]
        return locate_chunks(self.spec, text, texts, [_offsets(piece) for piece in pieces])


def as_chunker(chunker: object) -> Chunker:
    """``chunker`` (a spec, a built-in, a splitter object or a function) as a :class:`Chunker`."""
    if isinstance(chunker, Chunker):
        return chunker
    if isinstance(chunker, str):
        return parse_chunker(chunker)
    split_text = getattr(chunker, "split_text", None)
    if callable(split_text):
        return ExternalChunker(split_text, f"{type(chunker).__name__}.split_text")
    chunk = getattr(chunker, "chunk", None)
    if callable(chunk):
        return ExternalChunker(chunk, f"{type(chunker).__name__}.chunk")
    if callable(chunker):
        name = getattr(chunker, "__qualname__", type(chunker).__name__)
        return ExternalChunker(chunker, f"{name}()")
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
) -> list[tuple[int, int]]:
    """The spans of ``texts`` (chunks in document order) in ``document``: the reported
    ``offsets`` where they hold the text exactly, else located (see the module doc)."""
    spans: list[tuple[int, int]] = []
    position = 0
    for number, text in enumerate(texts):
        if not text.strip():
            continue
        given = offsets[number] if offsets is not None else None
        if given is not None and given[0] >= 0 and document[given[0] : given[1]] == text:
            span: tuple[int, int] | None = given
        else:
            span = _find(document, text, position)
        if span is None:
            raise InvalidArgumentError(
                f"chunker {spec}: chunk {number} ({_clip(text)}) is not in the document, "
                "verbatim or up to whitespace, after the previous chunk; use a splitter that "
                "keeps the text (no lowercasing, no rewriting) or return (start, end) spans"
            )
        spans.append(span)
        position = span[0] + 1
    return spans


def _find(document: str, text: str, position: int) -> tuple[int, int] | None:
    start = document.find(text, position)
    if start >= 0:
        return start, start + len(text)
    pattern = r"\s+".join(re.escape(word) for word in _WORDS.findall(text))
    found = re.compile(pattern).search(document, position)
    return None if found is None else (found.start(), found.end())


def _clip(text: str, limit: int = 50) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
