"""Built-in chunkers: a document's text into chunks that know their character span.

Every chunk is a :class:`Chunk` whose ``text`` is exactly ``document[start:end]`` (offsets are
Python string indices into the document decoded as UTF-8, not bytes), so span metrics can work
on offsets and text metrics on texts of the same chunking. Chunkers are values with a canonical
spec, in ctxeval's one spec grammar:

- ``fixed(chars=800, overlap=400)``: windows of ``chars`` characters starting every
  ``chars - overlap`` characters; the last window ends at the end of the document;
- ``fixed(words=100, overlap=10)``: windows of ``words`` whitespace-separated words (the span
  runs from the first word's first character to the last word's last character);
- ``fixed(tokens=256, overlap=0)``: windows of ``tokens`` tokens of the ROUGE tokenizer
  (runs of ASCII letters and digits, as rouge-score), offsets as above;
- ``fixed(tokens=256, overlap=32, tokenizer='cl100k_base')``: windows of an LLM tokenizer's
  tokens, LangChain's ``TokenTextSplitter`` (chroma's ``FixedTokenChunker``) chunk for chunk
  (:mod:`ctxeval.chunking.tokens`);
- ``sentences(n=5, overlap=0)``: groups of ``n`` sentences of ctxeval's offline splitter;
  ``max_words=N`` (or ``max_tokens=N``, ``tokenizer=...``) caps a group's size, cutting a longer
  sentence at word boundaries;
- ``paragraphs(max_words=200)``: paragraphs (separated by blank lines), consecutive ones merged
  while the group stays within ``max_words`` words; a longer paragraph is its own chunk, or with
  ``split=True`` is cut into sentences (and words) so that no chunk is over ``max_words``;
- ``recursive(chars=800)``: LangChain's recursive rule: split on blank lines, then lines, then
  spaces, then characters, merging pieces up to ``chars`` characters;
- ``recursive(tokens=200, overlap=50, tokenizer='cl100k_base', separators=[...])``: LangChain's
  ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` (chroma's ``RecursiveTokenChunker``,
  whose separators are the default) chunk for chunk (:mod:`ctxeval.chunking.tokens`);
- ``semantic(percentile=95, buffer=1, embedder='wordllama')``: Greg Kamradt's semantic chunking
  as LangChain's ``SemanticChunker``, breaks where adjacent sentence groups' embeddings differ
  most; ``cluster(max_tokens=400, piece_tokens=50, embedder='wordllama')``: chroma's
  ``ClusterSemanticChunker`` (:mod:`ctxeval.chunking.semantic`).

Word-, token-, sentence- and paragraph-based chunks begin and end on text, never on whitespace;
character windows are taken as they are (they may begin or end inside a word, as chroma's
``FixedTokenChunker`` does with characters).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

from ctxeval.chunking.caps import Measure, capped_windows, fit_units, token_measure, word_measure
from ctxeval.chunking.semantic import ClusterGroups, SemanticBreaks
from ctxeval.chunking.tokens import (
    CHROMA_SEPARATORS,
    ROUGE_TOKEN,
    RecursiveTokens,
    TokenWindows,
    check_tokenizer,
)
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.specs import check_options, parse_spec, unknown_name
from ctxeval.text.tokenizers import llm_token_counter

__all__ = [
    "CHUNKERS",
    "Chunk",
    "Chunker",
    "ClusterChunker",
    "FixedChunker",
    "ParagraphChunker",
    "RecursiveChunker",
    "SemanticChunker",
    "SentenceChunker",
    "parse_chunker",
    "position_reporter",
    "reporting_positions",
    "with_cache_dir",
]

_WORD = re.compile(r"\S+")
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*\Z)", re.S)

# Who hears how far into a document the chunker is (see reporting_positions), and how often.
_REPORTER: ContextVar[Callable[[int], None] | None] = ContextVar("_REPORTER", default=None)
_REPORT_EVERY = 4096  # words, tokens, paragraphs or sentences


@contextlib.contextmanager
def reporting_positions(report: Callable[[int], None]) -> Iterator[None]:
    """While the block runs, the built-in chunkers (and the locating of a splitter's chunks)
    call ``report(position)`` now and then as they pass through a document: the characters of
    it done, increasing. A progress bar of characters so moves within one large document."""
    token = _REPORTER.set(report)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def position_reporter() -> Callable[[int], None] | None:
    """The function :func:`reporting_positions` set, or None."""
    return _REPORTER.get()


def _reported(matches: Iterable[re.Match[str]]) -> Iterable[re.Match[str]]:
    """``matches``, reporting how far into the text they are (when someone listens)."""
    report = _REPORTER.get()
    return matches if report is None else _reporting(matches, report)


def _reporting(
    matches: Iterable[re.Match[str]], report: Callable[[int], None]
) -> Iterator[re.Match[str]]:
    for number, match in enumerate(matches, 1):
        yield match
        if not number % _REPORT_EVERY:
            report(match.end())


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of a document: its text is ``document[start:end]`` (under chroma's convention
    the span is where chroma places the text, :func:`~ctxeval.chunking.chroma.place_as_chroma`)."""

    doc: str
    start: int
    end: int
    text: str


def _positive(owner: str, name: str, value: object, *, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        least = 0 if zero else 1
        raise InvalidArgumentError(f"{owner}({name}={value!r}): give a whole number >= {least}")
    return value


def _windows(count: int, size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Index ranges of ``size`` items every ``size - overlap`` items, covering ``count``."""
    step = size - overlap
    start = 0
    while start < count:
        end = min(start + size, count)
        yield start, end
        if end == count:
            return
        start += step


class Chunker:
    """A chunking of documents into spans. Subclasses set ``name`` and ``spans``."""

    name: ClassVar[str]

    def spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError

    def chunk(self, text: str, doc: str = "") -> list[Chunk]:
        """The chunks of one document, in document order."""
        return [Chunk(doc, s, e, text[s:e]) for s, e in self.spans(text)]

    def options(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    @property
    def spec(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.options().items() if v is not None)
        return f"{self.name}({args})"

    def __repr__(self) -> str:
        return f"Chunker({self.spec!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chunker) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)


def _unit_spans(matches: list[re.Match[str]], size: int, overlap: int) -> list[tuple[int, int]]:
    return [
        (matches[a].start(), matches[b - 1].end()) for a, b in _windows(len(matches), size, overlap)
    ]


class FixedChunker(Chunker):
    """Fixed-size windows of characters, words or tokens (give exactly one of them); tokens are
    ROUGE tokens, or an LLM tokenizer's with ``tokenizer=`` (:class:`~ctxeval.chunking.tokens.
    TokenWindows`)."""

    name = "fixed"

    def __init__(
        self,
        chars: int | None = None,
        words: int | None = None,
        tokens: int | None = None,
        overlap: int = 0,
        tokenizer: str | None = None,
    ) -> None:
        sizes = (("chars", chars), ("words", words), ("tokens", tokens))
        given = {unit: size for unit, size in sizes if size is not None}
        if len(given) != 1:
            raise InvalidArgumentError(
                "fixed(...): give exactly one size, e.g. fixed(chars=800), fixed(words=100) "
                "or fixed(tokens=256)"
            )
        unit, size = next(iter(given.items()))
        self.chars, self.words, self.tokens = chars, words, tokens
        _positive("fixed", unit, size)
        self.overlap = _positive("fixed", "overlap", overlap, zero=True)
        if overlap >= size:
            raise InvalidArgumentError(
                f"fixed({unit}={size}, overlap={overlap}): the overlap must be smaller than the "
                "chunk size"
            )
        self._unit, self._size = unit, size
        self.tokenizer = tokenizer
        self._llm = None
        if tokenizer is not None:
            if unit != "tokens":
                raise InvalidArgumentError(
                    f"fixed({unit}={size}, tokenizer={tokenizer!r}): a tokenizer goes with tokens, "
                    f"e.g. fixed(tokens=256, tokenizer={tokenizer!r})"
                )
            self._llm = TokenWindows(size, overlap, tokenizer)

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {self._unit: self._size, "overlap": self.overlap}
        return out if self.tokenizer is None else {**out, "tokenizer": self.tokenizer}

    def spans(self, text: str) -> list[tuple[int, int]]:
        if self._llm is not None:
            return self._llm.spans(text)
        if self._unit == "chars":
            return list(_windows(len(text), self._size, self.overlap))
        pattern = _WORD if self._unit == "words" else ROUGE_TOKEN
        return _unit_spans(list(_reported(pattern.finditer(text))), self._size, self.overlap)


class SentenceChunker(Chunker):
    """Groups of ``n`` consecutive sentences of an offline splitter (ctxeval's default); with
    ``max_words`` (or ``max_tokens``, of ``tokenizer`` or ROUGE tokens), a group also stops
    before the sentence that would take it over the cap, and a longer sentence is cut at word
    boundaries (:mod:`ctxeval.chunking.caps`)."""

    name = "sentences"

    def __init__(
        self,
        n: int = 5,
        overlap: int = 0,
        splitter: str = "default",
        max_words: int | None = None,
        max_tokens: int | None = None,
        tokenizer: str | None = None,
    ) -> None:
        self.n = _positive("sentences", "n", n)
        self.overlap = _positive("sentences", "overlap", overlap, zero=True)
        if overlap >= n:
            raise InvalidArgumentError(
                f"sentences(n={n}, overlap={overlap}): the overlap must be smaller than n"
            )
        from ctxeval.text.sentences import get_splitter

        self.splitter = splitter
        self._split = get_splitter(splitter).split
        self.max_words, self.max_tokens, self.tokenizer = _sentence_cap(
            max_words, max_tokens, tokenizer
        )
        self._count = None if tokenizer is None else llm_token_counter(tokenizer)

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "overlap": self.overlap}
        if self.splitter != "default":
            out["splitter"] = self.splitter
        caps: dict[str, Any] = {"max_words": self.max_words, "max_tokens": self.max_tokens}
        caps["tokenizer"] = self.tokenizer
        return {**out, **{key: value for key, value in caps.items() if value is not None}}

    def sentences(self, text: str) -> list[tuple[int, int]]:
        """The spans of the splitter's sentences, in order."""
        from ctxeval.text.sentences import sentence_spans

        located: list[tuple[int, int]] = []
        report = _REPORTER.get()
        spans = sentence_spans(self._split(text), text, "sentences(...)")
        for number, span in enumerate(spans, 1):
            if report is not None and not number % _REPORT_EVERY:
                report(span[0])
            located.append(span)
        return located

    def spans(self, text: str) -> list[tuple[int, int]]:
        located = self.sentences(text)
        if self.max_words is None and self.max_tokens is None:
            return capped_windows(located, self.n, self.overlap, None)
        if self.max_words is not None:
            measure, cap = word_measure(text), self.max_words
        else:
            measure, cap = token_measure(text, self._count), int(self.max_tokens or 0)
        units = fit_units(located, measure, cap)
        return capped_windows(units, self.n, self.overlap, lambda s, e: measure.size(s, e) <= cap)


def _sentence_cap(
    max_words: object, max_tokens: object, tokenizer: object
) -> tuple[int | None, int | None, str | None]:
    """``sentences(...)``'s cap, checked: at most one of ``max_words`` and ``max_tokens``, and
    a ``tokenizer`` only with ``max_tokens``."""
    if max_words is not None and max_tokens is not None:
        raise InvalidArgumentError(
            f"sentences(max_words={max_words!r}, max_tokens={max_tokens!r}): give one cap, "
            "in words or in tokens"
        )
    if tokenizer is not None and max_tokens is None:
        raise InvalidArgumentError(
            f"sentences(tokenizer={tokenizer!r}): a tokenizer goes with max_tokens, e.g. "
            f"sentences(n=3, max_tokens=128, tokenizer={tokenizer!r})"
        )
    words = None if max_words is None else _positive("sentences", "max_words", max_words)
    tokens = None if max_tokens is None else _positive("sentences", "max_tokens", max_tokens)
    name = None
    if tokenizer is not None:
        name = check_tokenizer(f"sentences(max_tokens={max_tokens!r})", tokenizer)
    return words, tokens, name


class ParagraphChunker(Chunker):
    """Paragraphs (blank-line separated), merged while a group stays within ``max_words``; a
    longer paragraph is its own chunk, or, with ``split=True``, is cut into its sentences (a
    sentence still longer into runs of words) merged the same way, so that no chunk is over
    ``max_words``."""

    name = "paragraphs"

    def __init__(self, max_words: int = 200, split: bool = False) -> None:
        self.max_words = _positive("paragraphs", "max_words", max_words)
        if not isinstance(split, bool):
            raise InvalidArgumentError(
                f"paragraphs(split={split!r}): give True (cut paragraphs longer than max_words) "
                "or False"
            )
        self.split = split
        self._sentences: SentenceChunker | None = None

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"max_words": self.max_words}
        return {**out, "split": True} if self.split else out

    def spans(self, text: str) -> list[tuple[int, int]]:
        paragraphs = [match.span() for match in _reported(_PARAGRAPH.finditer(text))]
        measure = word_measure(text)
        units = self._split_long(text, paragraphs, measure) if self.split else paragraphs
        out: list[tuple[int, int]] = []
        words = 0
        for start, end in units:
            count = measure.size(start, end)
            if out and words + count <= self.max_words:
                out[-1] = (out[-1][0], end)
                words += count
            else:
                out.append((start, end))
                words = count
        return out

    def _split_long(
        self, text: str, paragraphs: list[tuple[int, int]], measure: Measure
    ) -> list[tuple[int, int]]:
        """Each paragraph over ``max_words`` replaced by its sentences, each of those over it
        by runs of ``max_words`` words."""
        sentences = self._sentences or SentenceChunker(n=1)
        self._sentences = sentences
        units: list[tuple[int, int]] = []
        for start, end in paragraphs:
            if measure.size(start, end) <= self.max_words:
                units.append((start, end))
                continue
            inside = [(start + s, start + e) for s, e in sentences.sentences(text[start:end])]
            units.extend(fit_units(inside or [(start, end)], measure, self.max_words))
        return units


class RecursiveChunker(Chunker):
    """LangChain's recursive character rule, by span: pieces split on the first separator that
    occurs (blank line, line break, space, then single characters), merged up to ``chars``.

    With ``tokens=`` instead, LangChain's recursive splitter measured in tokens, chunk for chunk
    (:class:`~ctxeval.chunking.tokens.RecursiveTokens`)."""

    name = "recursive"
    _SEPARATORS: ClassVar[tuple[str, ...]] = ("\n\n", "\n", " ", "")

    def __init__(
        self,
        chars: int | None = None,
        tokens: int | None = None,
        overlap: int | None = None,
        tokenizer: str | None = None,
        separators: list[str] | tuple[str, ...] | None = None,
    ) -> None:
        self._llm = None
        if tokens is None:
            if (overlap, tokenizer, separators) != (None, None, None):
                raise InvalidArgumentError(
                    "recursive(chars=...) takes no overlap, tokenizer or separators; they go "
                    "with tokens, e.g. recursive(tokens=200, overlap=50, tokenizer='cl100k_base')"
                )
            self.chars = _positive("recursive", "chars", 800 if chars is None else chars)
            return
        if chars is not None:
            raise InvalidArgumentError(
                "recursive(...): give chars or tokens, not both, e.g. recursive(tokens=200)"
            )
        self._llm = RecursiveTokens(
            tokens,
            0 if overlap is None else overlap,
            tokenizer,
            CHROMA_SEPARATORS if separators is None else separators,
        )

    def options(self) -> dict[str, Any]:
        if self._llm is None:
            return {"chars": self.chars}
        out: dict[str, Any] = {"tokens": self._llm.size, "overlap": self._llm.overlap}
        if self._llm.tokenizer is not None:
            out["tokenizer"] = self._llm.tokenizer
        if self._llm.separators != CHROMA_SEPARATORS:
            out["separators"] = list(self._llm.separators)
        return out

    def spans(self, text: str) -> list[tuple[int, int]]:
        if self._llm is not None:
            return self._llm.spans(text)
        pieces = self._pieces(text, 0, len(text), 0)
        merged: list[tuple[int, int]] = []
        for start, end in pieces:
            if merged and end - merged[-1][0] <= self.chars:
                merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        return [_trim(text, s, e) for s, e in merged if text[s:e].strip()]

    def _pieces(self, text: str, start: int, end: int, level: int) -> list[tuple[int, int]]:
        if end - start <= self.chars:
            return [(start, end)]
        separator = self._SEPARATORS[level]
        if not separator:
            return list((s, min(s + self.chars, end)) for s in range(start, end, self.chars))
        out: list[tuple[int, int]] = []
        position = start
        while position < end:
            found = text.find(separator, position, end)
            stop = end if found < 0 else found + len(separator)
            out.extend(self._pieces(text, position, stop, level + 1))
            position = stop
        return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class SemanticChunker(Chunker):
    """Runs of sentences between the breaks of LangChain's ``SemanticChunker``: one threshold
    rule of ``percentile`` (95 by default), ``standard_deviation``, ``interquartile``,
    ``gradient`` or ``chunks`` (:class:`~ctxeval.chunking.semantic.SemanticBreaks`); with
    ``cache_dir``, the vectors kept there between runs (not part of the spec: no chunk changes)."""

    name = "semantic"

    def __init__(  # noqa: PLR0913 (LangChain's options, one keyword each, and the cache)
        self,
        percentile: float | None = None,
        standard_deviation: float | None = None,
        interquartile: float | None = None,
        gradient: float | None = None,
        chunks: int | None = None,
        buffer: int = 1,
        embedder: object = "wordllama",
        splitter: str = "langchain",
        min_chars: int | None = None,
        max_tokens: int | None = None,
        tokenizer: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        rules = {"percentile": percentile, "standard_deviation": standard_deviation}
        rules |= {"interquartile": interquartile, "gradient": gradient, "chunks": chunks}
        self._embedder = embedder
        self._engine = SemanticBreaks(
            rules, buffer, embedder, splitter, min_chars, max_tokens, tokenizer, cache_dir
        )

    def options(self) -> dict[str, Any]:
        return self._engine.options()

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self._engine.spans(text)


class ClusterChunker(Chunker):
    """chroma's ``ClusterSemanticChunker``: pieces of ``piece_tokens`` grouped by dynamic
    programming into chunks of at most ``max_tokens`` (:class:`~ctxeval.chunking.semantic.
    ClusterGroups`); ``cache_dir`` as :class:`SemanticChunker`'s."""

    name = "cluster"

    def __init__(
        self,
        max_tokens: int = 400,
        piece_tokens: int = 50,
        embedder: object = "wordllama",
        tokenizer: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._embedder = embedder
        self._engine = ClusterGroups(max_tokens, piece_tokens, embedder, tokenizer, cache_dir)

    def options(self) -> dict[str, Any]:
        return self._engine.options()

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self._engine.spans(text)


def with_cache_dir(chunker: Chunker, cache_dir: str | os.PathLike[str]) -> Chunker:
    """``chunker`` keeping its vectors in ``cache_dir`` between runs when it embeds
    (``semantic``, ``cluster``: the same chunker, rebuilt), else ``chunker`` itself."""
    if not isinstance(chunker, SemanticChunker | ClusterChunker):
        return chunker
    options = {**chunker.options(), "embedder": chunker._embedder}  # the embedder as given
    return type(chunker)(**options, cache_dir=cache_dir)


CHUNKERS: dict[str, Callable[..., Chunker]] = {
    cls.name: cls
    for cls in (
        FixedChunker,
        SentenceChunker,
        ParagraphChunker,
        RecursiveChunker,
        SemanticChunker,
        ClusterChunker,
    )
}


_USAGE = "name or name(option=value, ...), e.g. 'fixed(words=100, overlap=10)' or 'sentences(n=3)'"


def parse_chunker(spec: str) -> Chunker:
    """A built-in chunker from its spec: ``"fixed(chars=800, overlap=400)"``,
    ``"sentences(n=5)"``, ``"paragraphs(max_words=200)"``, ``"recursive(chars=800)"``,
    ``"fixed(tokens=256, overlap=32, tokenizer='cl100k_base')"``,
    ``"recursive(tokens=200, overlap=50, tokenizer='cl100k_base', separators=['\\n\\n', ''])"``,
    ``"semantic(percentile=95)"``, ``"cluster(max_tokens=200)"``."""
    parsed = parse_spec(spec, what="chunker", usage=_USAGE, sequences=True)
    factory = CHUNKERS.get(parsed.name)
    if factory is None:
        raise unknown_name(spec, "chunker", parsed.name, list(CHUNKERS))
    if parsed.args or parsed.k is not None:
        raise InvalidArgumentError(
            f"{spec!r}: name the chunker's options, e.g. fixed(chars=800, overlap=400)"
        )
    check_options(spec, parsed.name, parsed.kwargs, factory)
    return factory(**parsed.kwargs)
