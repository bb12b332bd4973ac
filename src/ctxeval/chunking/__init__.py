"""Chunking comparisons: chunkers that know their spans, and the harness from documents to report.

- :mod:`~ctxeval.chunking.chunkers`: built-in chunkers (``fixed``, ``sentences``, ``paragraphs``,
  ``recursive``, ``semantic``, ``cluster``) by spec;
- :mod:`~ctxeval.chunking.splitters`: any chunker (LangChain, chonkie, a function) with its chunks
  located in the document;
- :mod:`~ctxeval.chunking.questions`: questions and their excerpts, located in the corpus;
- :mod:`~ctxeval.chunking.retrieval`: BM25 (bm25s) or any callable retriever;
- :mod:`~ctxeval.chunking.attribution`: found / missed by the retriever / unreachable, ceilings;
- :mod:`~ctxeval.chunking.harness`: :func:`compare_chunkers`;
- :mod:`~ctxeval.chunking.checks`: what it warns of (:class:`ChunkingWarning`);
- :mod:`~ctxeval.chunking.model`: what it returns (:class:`HarnessResult`, one
  :class:`ChunkingRun` per chunker);
- :mod:`~ctxeval.chunking.outputs` and :mod:`~ctxeval.chunking.report`: files and the report.
"""

from ctxeval.chunking.attribution import Attribution, QuestionAttribution, attribute
from ctxeval.chunking.checks import ChunkingWarning
from ctxeval.chunking.chunkers import (
    CHUNKERS,
    Chunk,
    Chunker,
    ClusterChunker,
    FixedChunker,
    ParagraphChunker,
    RecursiveChunker,
    SemanticChunker,
    SentenceChunker,
    parse_chunker,
)
from ctxeval.chunking.harness import DEFAULT_KS, chunk_corpus, chunk_statistics, compare_chunkers
from ctxeval.chunking.model import HARNESS_METRICS, ChunkingRun, HarnessInterrupted, HarnessResult
from ctxeval.chunking.questions import Excerpt, Question, load_questions
from ctxeval.chunking.retrieval import (
    BM25Retriever,
    FusedRetriever,
    PerChunking,
    retrieval_depth,
)
from ctxeval.chunking.splitters import ExternalChunker, as_chunker

__all__ = [
    "CHUNKERS",
    "DEFAULT_KS",
    "HARNESS_METRICS",
    "Attribution",
    "BM25Retriever",
    "Chunk",
    "Chunker",
    "ChunkingRun",
    "ChunkingWarning",
    "ClusterChunker",
    "Excerpt",
    "ExternalChunker",
    "FixedChunker",
    "FusedRetriever",
    "HarnessInterrupted",
    "HarnessResult",
    "ParagraphChunker",
    "PerChunking",
    "Question",
    "QuestionAttribution",
    "RecursiveChunker",
    "SemanticChunker",
    "SentenceChunker",
    "as_chunker",
    "attribute",
    "chunk_corpus",
    "chunk_statistics",
    "compare_chunkers",
    "load_questions",
    "parse_chunker",
    "retrieval_depth",
]
