"""Miss attribution: is a missed excerpt the retriever's fault or the chunker's?

For one chunking (all its chunks: what the retriever searched), each ground-truth excerpt of a
question is, at cut-off k,

- **found**: a chunk among the top k matches it;
- **missed by the retriever**: a chunk of this chunking matches it, but none of the top k does;
- **unreachable**: no chunk of this chunking matches it (it straddles a boundary, or the chunks
  are too small to hold enough of it), so no retriever could find it.

"Matches" is the comparison's matching strategy on chunk texts (ROUGE-L recall of the excerpt
by the chunk >= 0.7 by default), the same judgment as ``context_recall``. Reachability is
decided among the chunks that overlap the excerpt's span in its document (the chunks that hold
some of it; this keeps the work proportional to the excerpts, not to the corpus); a chunk
elsewhere that happens to match (a repeated passage) and is retrieved counts as found, and so as
reachable.

Shares are macro averages, like ``context_recall``: each question counts once, its excerpts
split into the three classes, so found@k equals ``context_recall@k`` and the three add up to 1.
The chunker's **ceiling** is the share of reachable excerpts: the best ``context_recall`` any
retriever could reach with these chunks. The **span ceiling** (chroma's "precision Ω") is, per
question, the IoU in characters of the excerpts with the chunks that overlap them, i.e. the best
``span_iou`` of a retrieval that returns exactly the chunks touching the answer: |G ∩ C| / |G ∪ C|,
G the union of the excerpts' spans, C the union of the spans of the chunks of the same documents
that overlap G. Small chunks that tile the answer tightly score near 1; big chunks, low.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxeval.chunking.chunkers import Chunk
from ctxeval.chunking.questions import Question
from ctxeval.exact import exact_mean
from ctxeval.matching.base import MatchingStrategy

__all__ = [
    "Attribution",
    "QuestionAttribution",
    "attribute",
    "intersection_length",
    "mean_of",
    "merge_spans",
    "span_length",
]

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class QuestionAttribution:
    """One question: per excerpt, whether some chunk can match it and the rank (1-based) of the
    first retrieved chunk that does (None: not retrieved at the depth searched)."""

    id: str
    reachable: tuple[bool, ...]
    first_found: tuple[int | None, ...]
    span_ceiling: float

    def status(self, k: int) -> list[str]:
        """Each excerpt's class at cut-off ``k``: found, missed or unreachable."""
        return [
            "found"
            if rank is not None and rank <= k
            else ("missed" if reachable else "unreachable")
            for reachable, rank in zip(self.reachable, self.first_found, strict=True)
        ]

    def shares(self, k: int) -> dict[str, float]:
        statuses = self.status(k)
        n = len(statuses)
        return {name: statuses.count(name) / n for name in ("found", "missed", "unreachable")}


@dataclass(frozen=True, slots=True)
class Attribution:
    """One chunking's attribution: the three shares at each k, and its ceilings."""

    ks: tuple[int, ...]
    found: dict[int, float]
    missed: dict[int, float]
    unreachable: dict[int, float]
    ceiling: float
    span_ceiling: float
    questions: tuple[QuestionAttribution, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ks": list(self.ks),
            "found": {str(k): v for k, v in self.found.items()},
            "missed_by_retriever": {str(k): v for k, v in self.missed.items()},
            "unreachable": {str(k): v for k, v in self.unreachable.items()},
            "ceiling_recall": self.ceiling,
            "ceiling_span_iou": self.span_ceiling,
        }


class _DocumentChunks:
    """One document's chunks with their offsets as arrays, to find those overlapping a span."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.starts = np.array([c.start for c in chunks], dtype=np.int64)
        self.ends = np.array([c.end for c in chunks], dtype=np.int64)

    def overlapping(self, start: int, end: int) -> list[Chunk]:
        hits = np.flatnonzero((self.starts < end) & (self.ends > start))
        return [self.chunks[i] for i in hits]


def attribute(
    questions: Sequence[Question],
    chunks: Sequence[Chunk],
    rankings: Sequence[Sequence[int]],
    strategy: MatchingStrategy,
    ks: Sequence[int],
) -> Attribution:
    """Attribute every excerpt of ``questions`` at each of ``ks``, given the chunking's
    ``chunks`` and each question's retrieved chunk positions (``rankings``, best first)."""
    grouped: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.doc, []).append(chunk)
    by_doc = {doc: _DocumentChunks(members) for doc, members in grouped.items()}
    per_question = tuple(
        _question(question, by_doc, [chunks[i].text for i in ranking], strategy)
        for question, ranking in zip(questions, rankings, strict=True)
    )
    shares = {k: [q.shares(k) for q in per_question] for k in ks}

    def mean(name: str, k: int) -> float:
        return mean_of([s[name] for s in shares[k]])

    reachable = [sum(q.reachable) / len(q.reachable) for q in per_question]
    return Attribution(
        ks=tuple(ks),
        found={k: mean("found", k) for k in ks},
        missed={k: mean("missed", k) for k in ks},
        unreachable={k: mean("unreachable", k) for k in ks},
        ceiling=mean_of(reachable),
        span_ceiling=mean_of([q.span_ceiling for q in per_question]),
        questions=per_question,
    )


def _question(
    question: Question,
    by_doc: Mapping[str, _DocumentChunks],
    retrieved: list[str],
    strategy: MatchingStrategy,
) -> QuestionAttribution:
    texts = [excerpt.text for excerpt in question.excerpts]
    first_found: list[int | None] = [None] * len(texts)
    if retrieved:
        relevant = strategy.match(retrieved, texts).relevant
        for j in range(len(texts)):
            hits = np.flatnonzero(relevant[:, j])
            first_found[j] = int(hits[0]) + 1 if hits.size else None
    reachable = [rank is not None for rank in first_found]
    for j, excerpt in enumerate(question.excerpts):
        document = by_doc.get(excerpt.doc)
        if reachable[j] or document is None:
            continue
        candidates = document.overlapping(excerpt.start, excerpt.end)
        if candidates:
            judged = strategy.match([c.text for c in candidates], [excerpt.text])
            reachable[j] = bool(judged.relevant.any())
    return QuestionAttribution(
        question.id, tuple(reachable), tuple(first_found), _span_ceiling(question, by_doc)
    )


def _span_ceiling(question: Question, by_doc: Mapping[str, _DocumentChunks]) -> float:
    inside = union = 0
    for doc in dict.fromkeys(excerpt.doc for excerpt in question.excerpts):
        gold = merge_spans([(e.start, e.end) for e in question.excerpts if e.doc == doc])
        document = by_doc.get(doc)
        touching = merge_spans(
            [
                (c.start, c.end)
                for start, end in gold
                for c in (document.overlapping(start, end) if document else [])
            ]
        )
        common = intersection_length(gold, touching)
        inside += common
        union += span_length(gold) + span_length(touching) - common
    return inside / union if union else 0.0


def mean_of(values: Sequence[float] | np.ndarray) -> float:
    """The exact mean of a non-empty list (0.0 for an empty one: no question, no share)."""
    mean = exact_mean(np.asarray(values, dtype=np.float64))
    return 0.0 if mean is None else mean


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """The union of ``spans`` as sorted, disjoint, disjoint intervals."""
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def span_length(merged: Sequence[Span]) -> int:
    return sum(end - start for start, end in merged)


def intersection_length(a: Sequence[Span], b: Sequence[Span]) -> int:
    """Characters shared by two merged interval lists (one sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total
