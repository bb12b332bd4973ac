"""What a user of the harness needs to be warned of: comparisons that cannot say much.

:func:`check_harness` looks at what :func:`~ctxeval.chunking.compare_chunkers` found and warns
(:class:`ChunkingWarning`, one line each) of:

- **documents shorter than a chunker's target size**: a document no longer than the target is
  one chunk, the whole document (within the size the chunker states, if it states one: in words
  or characters, that one chunk's; in tokens, the document's, counted once with the chunker's
  tokenizer), whatever the chunker, so chunkers whose targets exceed most documents make the
  same chunks and tie (warned per chunker, when more than :data:`SHORT_DOCUMENT_SHARE` of the
  documents are one chunk);
- **chunkers with the same chunks**: the same spans in every document, named together;
- **chunks many times their chunker's target size**: over :data:`OVERSIZE_FACTOR` times a size
  the chunker states in words or characters (``paragraphs(max_words=100)``: a long paragraph
  is its own chunk), or :data:`MEDIAN_OVERSIZE_FACTOR` times the chunking's median chunk when
  it states none (``sentences(n=3)``), with how many and the largest;
- **budgets too small for a run's chunks**: under ``budget_policy="whole"``, a question whose
  first retrieved chunk is over the budget is fed no chunk at all; when more than
  :data:`STARVED_SHARE` of the questions are, at some budget, the run loses there for its chunks'
  size, not its ranking (warned per run, with the share at each such budget);
- **excerpts not found in the corpus as written**: a text located only after normalising
  whitespace and case, or fuzzily, takes the document's text at its span; when at least
  :data:`APPROXIMATE_EXCERPT_SHARE` of the excerpts were, the questions were probably written
  for other texts. (An excerpt found no way stops the run, so none is ever left out.)

Everything is computed from the chunks' spans and the statistics the harness already has; a
chunking's chunks are counted again only when its largest one is over the line, and a document
is counted in tokens only when a chunker sized in tokens made it one chunk (once per tokenizer).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ctxeval.chunking.chunkers import (
    Chunk,
    Chunker,
    ClusterChunker,
    FixedChunker,
    ParagraphChunker,
    RecursiveChunker,
    SemanticChunker,
    SentenceChunker,
)
from ctxeval.chunking.model import ChunkingCeilings, ChunkingRun, HarnessResult
from ctxeval.chunking.tokens import token_counter
from ctxeval.cutoffs.budgets import ContextSizes
from ctxeval.cutoffs.cutoff import Budget
from ctxeval.foundation.errors import CtxevalWarning

__all__ = [
    "APPROXIMATE_EXCERPT_SHARE",
    "MEDIAN_OVERSIZE_FACTOR",
    "OVERSIZE_FACTOR",
    "SHORT_DOCUMENT_SHARE",
    "STARVED_SHARE",
    "ChunkingWarning",
    "check_harness",
]

SHORT_DOCUMENT_SHARE = 0.5
"""Warn when more than this share of the documents are one chunk each: most of the corpus is
then chunked alike by every chunker whose target they fit."""

OVERSIZE_FACTOR = 4.0
"""Warn of chunks over this many times the size a chunker states (words, characters)."""

MEDIAN_OVERSIZE_FACTOR = 10.0
"""Warn of chunks over this many times the chunking's median chunk, for a chunker that states
no size in words or characters."""

STARVED_SHARE = 0.2
"""Warn when a run feeds no chunk to more than this share of the questions at a budget."""

APPROXIMATE_EXCERPT_SHARE = 0.1
"""Warn when at least this share of the excerpts were not in the corpus as written."""

_WORD = re.compile(r"\S+")
_BUILT_IN = (FixedChunker, SentenceChunker, ParagraphChunker, RecursiveChunker, ClusterChunker)


class ChunkingWarning(CtxevalWarning):
    """A chunker comparison that cannot say much as it stands (see :func:`check_harness`)."""


def check_harness(
    outcome: HarnessResult, chunkers: Mapping[str, Chunker], documents: Mapping[str, str]
) -> list[str]:
    """Warn of what makes ``outcome`` say less than it seems to (one
    :class:`ChunkingWarning` each) and return the messages, in order: per chunker, documents
    shorter than its target and chunks many times it; then chunkers with the same chunks; then
    runs whose chunks do not fit a budget; then excerpts not found as written. Without
    retrieval, the chunkers' chunks are the :attr:`~HarnessResult.ceilings`' own."""
    firsts: dict[str, ChunkingRun | ChunkingCeilings] = dict(outcome.ceilings)
    for run in outcome.runs.values():
        firsts.setdefault(run.chunker or run.name, run)
    messages: list[str] = []

    @functools.cache
    def tokens(tokenizer: str | None, doc: str) -> int:
        return token_counter(tokenizer)(documents[doc])

    for name, first in firsts.items():
        chunker = chunkers.get(name)
        if chunker is not None and isinstance(chunker, _BUILT_IN):
            messages += _short_documents(name, chunker, first.chunks, documents, tokens)
        messages += _oversized(name, chunker, first)
    messages += _same_chunks(firsts)
    messages += _starved(outcome)
    messages += _approximate_excerpts(outcome)
    for message in messages:
        warnings.warn(ChunkingWarning(message), stacklevel=3)
    return messages


def _short_documents(
    name: str,
    chunker: Chunker,
    chunks: Sequence[Chunk],
    documents: Mapping[str, str],
    tokens: Callable[[str | None, str], int],
) -> list[str]:
    """Documents the chunker left whole (one chunk each, within the size it states: a long
    paragraph alone is not short; a size in tokens is the document's, ``tokens(tokenizer,
    doc)``), when they are most of the corpus."""
    per_document: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        per_document.setdefault(chunk.doc, []).append(chunk)
    stated, in_tokens = _stated_size(chunker), _token_size(chunker)

    def within(doc: str, chunk: Chunk) -> bool:
        if in_tokens is not None:
            return tokens(in_tokens[1], doc) <= in_tokens[0]
        return stated is None or _size(chunk, stated[1]) <= stated[0]

    whole = [doc for doc, found in per_document.items() if len(found) == 1 and within(doc, *found)]
    if not documents or len(whole) <= SHORT_DOCUMENT_SHARE * len(documents):
        return []
    words = int(np.median([len(_WORD.findall(text)) for text in documents.values()]))
    return [
        f"chunker {name} ({chunker.spec}): {len(whole)} of {len(documents)} documents "
        f"({len(whole) / len(documents):.0%}) are no longer than its target size, each one "
        "chunk, the whole document; every chunker whose target they fit chunks them the same "
        f"way, so such chunkers tie on them (the median document has {words:,} words: choose "
        "sizes below the documents' lengths, or a corpus of longer documents)"
    ]


def _size(chunk: Chunk, unit: str) -> int:
    """The chunk's size in ``unit``: ``"chars"`` or ``"words"``."""
    return len(chunk.text) if unit == "chars" else len(_WORD.findall(chunk.text))


def _stated_size(chunker: Chunker | None) -> tuple[int, str] | None:
    """The size a chunker states in words or characters: its target, or its cap."""
    if isinstance(chunker, FixedChunker | RecursiveChunker):
        options = chunker.options()
        if "words" in options:
            return options["words"], "words"
        if "chars" in options:
            return options["chars"], "chars"
    if isinstance(chunker, ParagraphChunker | SentenceChunker) and chunker.max_words:
        return chunker.max_words, "words"
    return None


def _token_size(chunker: Chunker) -> tuple[int, str | None] | None:
    """The size a chunker states in tokens, and its tokenizer (None: ROUGE tokens): the target
    of ``fixed(tokens=N)`` and ``recursive(tokens=N)``, the cap of ``sentences(max_tokens=N)``
    and ``cluster(max_tokens=N)``."""
    options = chunker.options()
    size = options.get("tokens", options.get("max_tokens"))
    return None if size is None else (size, options.get("tokenizer"))


def _oversized(
    name: str, chunker: Chunker | None, run: ChunkingRun | ChunkingCeilings
) -> list[str]:
    """Chunks many times their chunker's size, when the largest one is."""
    stated = _stated_size(chunker)
    if stated is not None:
        size, unit = stated
        factor = OVERSIZE_FACTOR
        reference = f"the {size:,} {'characters' if unit == 'chars' else 'words'} it states"
    else:
        size, unit = run.statistics["words"]["median"], "words"
        factor = MEDIAN_OVERSIZE_FACTOR
        reference = f"its median chunk ({size:,.0f} words)"
    line = factor * size
    if run.statistics[unit]["max"] <= line:
        return []
    sizes = [_size(chunk, unit) for chunk in run.chunks]
    over = sum(1 for value in sizes if value > line)
    said = "characters" if unit == "chars" else "words"
    spec = run.spec
    return [
        f"chunker {name} ({spec}): {over:,} chunk{'s' if over != 1 else ''} over {factor:g} "
        f"times {reference}, the largest {max(sizes):,} {said}; a budget smaller than a chunk "
        f"never feeds it, and it dilutes whatever it holds ({_cap_hint(chunker)})"
    ]


def _cap_hint(chunker: Chunker | None) -> str:
    """How to cap the chunker's size, or, when it has a size in tokens already (a group within
    it is 10 times the median: the size is high for these documents), to lower it."""
    options = {} if chunker is None else chunker.options()
    if isinstance(chunker, SemanticChunker) and "max_tokens" in options:
        return (  # the cap cuts between sentences, never inside one
            f"semantic(max_tokens={options['max_tokens']}) cuts only between sentences: a longer "
            "sentence stays whole; lower max_tokens, or give a splitter that finds more "
            "sentences, e.g. splitter='newline'"
        )
    if isinstance(chunker, ClusterChunker):
        return (
            f"lower max_tokens: cluster(..., max_tokens={options['max_tokens']}) makes chunks of "
            "up to that many tokens (longer only where no run of pieces scores above zero)"
        )
    for key in ("max_tokens", "tokens"):
        if chunker is not None and key in options:
            said = f"{chunker.name}(..., {key}={options[key]})"
            return f"lower its size: {said} makes chunks of up to {options[key]} tokens"
    if isinstance(chunker, SentenceChunker):
        return "cap it: sentences(..., max_words=N), or max_tokens=N"
    if isinstance(chunker, ParagraphChunker):
        return f"cut long paragraphs: paragraphs(max_words={chunker.max_words}, split=True)"
    if isinstance(chunker, SemanticChunker):
        return "cap it: semantic(..., max_tokens=N)"
    return "choose a chunker that caps its size"


def _same_chunks(runs: Mapping[str, ChunkingRun | ChunkingCeilings]) -> list[str]:
    """Chunkers whose chunks have the same spans in every document, named together."""
    groups: dict[Any, list[str]] = {}
    for name, run in runs.items():
        key = tuple((chunk.doc, chunk.start, chunk.end) for chunk in run.chunks)
        groups.setdefault(key, []).append(name)
    messages = []
    for names in groups.values():
        if len(names) < 2:
            continue
        said = " and ".join([", ".join(names[:-1]), names[-1]])
        specs = "; ".join(f"{name}: {runs[name].spec}" for name in names)
        messages.append(
            f"chunkers {said} make the same chunks (the same spans in every document: "
            f"{specs}); they are one chunking under {len(names)} names, and comparing them "
            "says nothing (drop all but one, or change their sizes)"
        )
    return messages


def _starved(outcome: HarnessResult) -> list[str]:
    """Runs that feed no chunk to many questions at a budget (whole chunks only)."""
    budgets = [k for k in outcome.ks if isinstance(k, Budget)]
    if outcome.budget_policy != "whole" or not budgets:
        return []
    messages = []
    for name, run in outcome.runs.items():
        if not run.records:
            continue
        sizes = ContextSizes([r["retrieved_context"] for r in run.records], outcome.token_counter)
        shares: list[str] = []
        for budget in budgets:
            cut = sizes.cut(budget, "whole")
            share = float(np.mean((cut.chunks == 0) & (cut.retrieved > 0)))
            if share > STARVED_SHARE:
                of = "" if shares else " of the questions"
                shares.append(f"{share:.0%}{of} at {budget}")
        if shares:
            messages.append(
                f"{name} feeds no chunk at all to {', '.join(shares)}: "
                "their first retrieved chunk is larger than the budget, so the run loses there "
                "for its chunks' size, not its ranking (compare at larger budgets, make the "
                "chunks smaller, or cut the chunk that crosses the budget to fit: the "
                "'truncate' budget policy)"
            )
    return messages


def _approximate_excerpts(outcome: HarnessResult) -> list[str]:
    """Excerpts not found as written, when they are many."""
    excerpts = [excerpt for question in outcome.questions for excerpt in question.excerpts]
    ways = {"normalised": 0, "fuzzy": 0}
    for excerpt in excerpts:
        if excerpt.located in ways:
            ways[excerpt.located] += 1
    approximate = sum(ways.values())
    if not excerpts or approximate < APPROXIMATE_EXCERPT_SHARE * len(excerpts):
        return []
    return [
        f"{approximate:,} of {len(excerpts):,} excerpts ({approximate / len(excerpts):.0%}) "
        f"are not in the corpus as written ({ways['normalised']:,} found after normalising "
        f"whitespace and case, {ways['fuzzy']:,} fuzzily), and each takes the document's text "
        "at its span: were the questions written for another version of the corpus? (give "
        "spans, or copy the excerpts from the documents)"
    ]
