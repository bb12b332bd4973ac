"""Chunking comparisons: chunkers that know their spans (the first piece of the harness)."""

from ctxeval.chunking.chunkers import (
    CHUNKERS,
    Chunk,
    Chunker,
    FixedChunker,
    ParagraphChunker,
    RecursiveChunker,
    SentenceChunker,
    parse_chunker,
)

__all__ = [
    "CHUNKERS",
    "Chunk",
    "Chunker",
    "FixedChunker",
    "ParagraphChunker",
    "RecursiveChunker",
    "SentenceChunker",
    "parse_chunker",
]
