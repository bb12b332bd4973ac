"""Token chunkers of the field, by span: equal chunk for chunk to their reference implementations.

- :class:`TokenWindows` is ``fixed(tokens=N, overlap=M, tokenizer=...)``: LangChain's
  ``TokenTextSplitter`` (chroma's ``FixedTokenChunker`` is a copy): the document encoded once,
  windows of ``N`` token ids every ``N - M`` tokens, the last one ending at the last token. Each
  window is the span of the characters its tokens' bytes encode, so its text is LangChain's
  decoded window. Where a window's edge falls inside a character (a token holding part of a
  character's UTF-8 bytes, as byte-level BPE does with emoji and rare CJK), the span extends to
  the whole character: it covers every byte of its tokens, and LangChain's text is it with the
  cut character replaced by U+FFFD (docs/decisions.md).
- :class:`RecursiveTokens` is ``recursive(tokens=N, overlap=M, tokenizer=..., separators=...)``:
  LangChain's ``RecursiveCharacterTextSplitter.from_tiktoken_encoder(...)`` (chroma's
  ``RecursiveTokenChunker``, whose separators ``CHROMA_SEPARATORS`` are the default here), with
  its defaults ``keep_separator=True`` (a separator opens the piece after it) and
  ``strip_whitespace=True``, reproduced step by step on spans: the first separator the text
  holds splits it; a piece of fewer than ``N`` tokens (counted alone, as LangChain counts it) is
  merged with its neighbours by LangChain's ``_merge_splits`` (sizes summed, the overlap kept by
  dropping pieces from the front until at most ``M`` tokens remain), a larger one is split again
  with the next separators, or kept whole when none is left; a merged chunk is stripped of
  surrounding whitespace and dropped when nothing remains.

The tokenizer is a name of :mod:`ctxeval.text.tokenizers` (``"cl100k_base"``, ``"o200k_base"``,
..., ``"hf:PATH"``), loaded offline once per process; the chunkers keep the name, not the object,
so they pickle to workers. Texts are encoded without special tokens (``encode_ordinary``):
LangChain's default refuses a document holding ``<|endoftext|>``, ctxeval counts it as text.
``recursive(tokens=N)`` without a tokenizer counts ROUGE tokens (runs of ASCII letters and
digits), as ``fixed(tokens=N)`` without one does. An ``hf:`` tokenizer's windows are spans by the
tokenizer's own character offsets (LangChain has no splitter on them to equal).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import deque
from collections.abc import Callable, Sequence

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.specs import unknown_name
from ctxeval.text.tokenizers import (
    TIKTOKEN_ENCODINGS,
    is_llm_tokenizer,
    llm_token_counter,
    llm_tokenizer,
)

__all__ = [
    "CHROMA_SEPARATORS",
    "RecursiveTokens",
    "TokenWindows",
    "check_tokenizer",
    "token_windows",
]

#: chroma's ``RecursiveTokenChunker`` separators (LangChain's are ``"\n\n", "\n", " ", ""``).
CHROMA_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ".", "?", "!", " ", "")

#: The tokens of ``fixed(tokens=N)``, ``recursive(tokens=N)``, ``semantic``'s and ``cluster``'s
#: sizes and the caps when no tokenizer is named: runs of ASCII letters and digits (rouge-score's
#: tokens, case aside).
ROUGE_TOKEN = re.compile(r"[A-Za-z0-9]+")
_CONTINUATION = bytes(range(0x80, 0xC0))  # UTF-8 bytes that continue a character

Span = tuple[int, int]


def check_tokenizer(owner: str, name: object) -> str:
    """``name`` when it names an LLM tokenizer this machine has, else the error saying why
    (an unknown name, a missing or damaged file), led by ``owner`` (the chunker's spec)."""
    if not isinstance(name, str) or not is_llm_tokenizer(name):
        raise unknown_name(
            None,
            "tokenizer",
            str(name),
            list(TIKTOKEN_ENCODINGS),
            hint="or 'hf:PATH', a Hugging Face tokenizer.json",
            where=owner,
        )
    try:
        llm_tokenizer(name)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{owner}: {error}") from None
    return name


def _check_sizes(owner: str, size: int, overlap: int) -> None:
    for option, value, least in (("tokens", size, 1), ("overlap", overlap, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InvalidArgumentError(f"{owner}: give {option} as a whole number >= {least}")
    if overlap >= size:
        raise InvalidArgumentError(
            f"{owner}: the overlap ({overlap} tokens) must be smaller than the chunk size "
            f"({size} tokens)"
        )


def token_windows(count: int, size: int, overlap: int) -> list[Span]:
    """Index ranges of ``size`` tokens every ``size - overlap`` tokens, covering ``count``
    (LangChain's ``split_text_on_tokens``: the last window ends at the last token)."""
    step, out = size - overlap, []
    for start in range(0, count, step):
        out.append((start, min(start + size, count)))
        if start + size >= count:
            break
    return out


class TokenWindows:
    """Windows of ``size`` tokens of an LLM tokenizer, ``overlap`` shared, as spans."""

    def __init__(self, size: int, overlap: int, tokenizer: str) -> None:
        owner = f"fixed(tokens={size!r}, overlap={overlap!r}, tokenizer={tokenizer!r})"
        _check_sizes(owner, size, overlap)
        self.size, self.overlap = size, overlap
        self.tokenizer = check_tokenizer(owner, tokenizer)

    def spans(self, text: str) -> list[Span]:
        encoder = llm_tokenizer(self.tokenizer)
        if self.tokenizer.startswith("hf:"):
            return self._offset_spans(encoder, text)
        ids = encoder.encode_ordinary(text)
        windows = token_windows(len(ids), self.size, self.overlap)
        # The window edges cut the ids into runs, each decoded to bytes once; a run's characters
        # are the bytes that start one (not 0b10xxxxxx). A window starts at the character
        # holding its first byte and ends after the character holding its last byte.
        cuts = sorted({edge for window in windows for edge in window})
        first: dict[int, int] = {}
        after: dict[int, int] = {}
        previous = characters = 0
        for cut in cuts[1:]:
            run = encoder.decode_bytes(ids[previous:cut])
            first[previous] = characters - (0x80 <= run[0] < 0xC0)
            characters += len(run.translate(None, _CONTINUATION))
            after[cut], previous = characters, cut
        return [(first[start], after[end]) for start, end in windows]

    def _offset_spans(self, encoder: object, text: str) -> list[Span]:
        offsets = encoder.encode(text, add_special_tokens=False).offsets  # type: ignore[attr-defined]
        return [
            (min(s for s, _ in offsets[a:b]), max(e for _, e in offsets[a:b]))
            for a, b in token_windows(len(offsets), self.size, self.overlap)
        ]


@functools.cache
def token_counter(tokenizer: str | None) -> Callable[[str], int]:
    """How a chunker counts a text's tokens: :data:`ROUGE_TOKEN`'s without ``tokenizer``, else
    the LLM tokenizer's (read offline)."""
    if tokenizer is None:
        return lambda text: sum(1 for _ in ROUGE_TOKEN.finditer(text))
    return llm_token_counter(tokenizer)


class RecursiveTokens:
    """LangChain's recursive splitter with a length in tokens, chunk for chunk, as spans."""

    def __init__(
        self, size: int, overlap: int, tokenizer: str | None, separators: Sequence[str]
    ) -> None:
        said = "" if tokenizer is None else f", tokenizer={tokenizer!r}"  # None: ROUGE's
        owner = f"recursive(tokens={size!r}, overlap={overlap!r}{said})"
        _check_sizes(owner, size, overlap)
        if (
            isinstance(separators, str)
            or not isinstance(separators, Sequence)
            or not separators
            or not all(isinstance(s, str) for s in separators)
        ):
            raise InvalidArgumentError(
                f"{owner}: give separators as a list of strings, tried in order, e.g. "
                "separators=['\\n\\n', '\\n', ' ', ''] ('' splits between characters)"
            )
        self.size, self.overlap, self.separators = size, overlap, tuple(separators)
        self.tokenizer = None if tokenizer is None else check_tokenizer(owner, tokenizer)

    def spans(self, text: str) -> list[Span]:
        return _Split(text, token_counter(self.tokenizer), self.size, self.overlap).split(
            0, len(text), self.separators
        )


class _Split:
    """One document's split: LangChain's ``_split_text`` and ``_merge_splits`` on spans."""

    def __init__(self, text: str, count: Callable[[str], int], size: int, overlap: int) -> None:
        self.text, self.size, self.overlap = text, size, overlap
        self.counted: dict[str, int] = {}
        self._count = count
        self.joint = count("")  # the length LangChain adds between merged pieces

    def length(self, start: int, end: int) -> int:
        piece = self.text[start:end]
        found = self.counted.get(piece)
        if found is None:
            found = self.counted[piece] = self._count(piece)
        return found

    def split(self, start: int, end: int, separators: tuple[str, ...]) -> list[Span]:
        separator = separators[-1]
        rest: tuple[str, ...] = ()
        for i, candidate in enumerate(separators):
            if not candidate:
                separator = candidate
                break
            if self.text.find(candidate, start, end) >= 0:
                separator, rest = candidate, separators[i + 1 :]
                break
        chunks: list[Span] = []
        good: list[tuple[int, int, int]] = []
        for piece_start, piece_end in self.pieces(start, end, separator):
            size = self.length(piece_start, piece_end)
            if size < self.size:
                good.append((piece_start, piece_end, size))
                continue
            if good:
                chunks.extend(self.merge(good))
                good = []
            if rest:
                chunks.extend(self.split(piece_start, piece_end, rest))
            else:
                chunks.append((piece_start, piece_end))  # LangChain keeps it as it is
        if good:
            chunks.extend(self.merge(good))
        return chunks

    def pieces(self, start: int, end: int, separator: str) -> list[Span]:
        """``re.split`` with the separator kept at the start of the piece after it."""
        if not separator:
            return [(i, i + 1) for i in range(start, end)]
        cuts, found = [start], self.text.find(separator, start, end)
        while found >= 0:
            cuts.append(found)
            found = self.text.find(separator, found + len(separator), end)
        cuts.append(end)
        return [(a, b) for a, b in itertools.pairwise(cuts) if a < b]

    def merge(self, pieces: list[tuple[int, int, int]]) -> list[Span]:
        """LangChain's ``_merge_splits`` on consecutive pieces: ``(start, end, length)``."""
        chunks: list[Span] = []
        current: deque[tuple[int, int, int]] = deque()
        total = 0
        for piece in pieces:
            size = piece[2]
            if current and total + size + self.joint > self.size:
                self.emit(chunks, current[0][0], current[-1][1])
                while total > self.overlap or (
                    total + size + (self.joint if current else 0) > self.size and total > 0
                ):
                    total -= current.popleft()[2] + (self.joint if len(current) > 0 else 0)
            current.append(piece)
            total += size + (self.joint if len(current) > 1 else 0)
        if current:
            self.emit(chunks, current[0][0], current[-1][1])
        return chunks

    def emit(self, chunks: list[Span], start: int, end: int) -> None:
        """The chunk without surrounding whitespace (``str.strip``), unless nothing remains."""
        text = self.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            chunks.append((start, end))
