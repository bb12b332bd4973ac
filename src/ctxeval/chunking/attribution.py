"""Miss attribution: is a missed excerpt the retriever's fault or the chunker's?

For one chunking (all its chunks: what the retriever searched), each ground-truth excerpt of a
question is, at cut-off k,

- **found**: a chunk among the top k matches it;
- **missed by the retriever**: a chunk of this chunking matches it, but none of the top k does;
- **unreachable**: no chunk of this chunking matches it (it straddles a boundary, or the chunks
  are too small to hold enough of it), so no retriever could find it.

"Matches" follows one of two rules. ``"match"`` (the default) is the comparison's matching
strategy on chunk texts (ROUGE-L recall of the excerpt by the chunk >= 0.7 by default), the same
judgment as ``context_recall``. ``"overlap(min=0.7)"`` judges offsets instead of words: a chunk
matches an excerpt when its span covers at least ``min`` of the excerpt's characters (same
document), so a chunk that holds the words but not the place (a repeated passage) does not count,
and a chunker whose chunks cut the excerpt in two is unreachable whatever the words. Reachability is
decided among the chunks that overlap the excerpt's span in its document (the chunks that hold
some of it; this keeps the work proportional to the excerpts, not to the corpus); a chunk
elsewhere that happens to match (a repeated passage) and is retrieved counts as found, and so as
reachable.

A cut-off is a number of chunks or a size budget (``"300w"``, ``"2000c"``, ``"512t"``): a budget
takes each question's top chunks as the evaluation does
(:class:`ctxeval.cutoffs.budgets.ContextSizes`,
under the same policy and token counter), and under ``truncate`` the crossing chunk counts by
what is kept of it (its text cut, its span cut to the same prefix).

Shares are macro averages, like ``context_recall``: each question counts once, its excerpts
split into the three classes, so under the ``"match"`` rule found@k equals ``context_recall@k``
(at budgets too) and the three add up to 1.
The chunker's **ceiling** is the share of reachable excerpts: the best ``context_recall`` any
retriever could reach with these chunks. The **span ceiling** (chroma's "precision Ω") is, per
question, the IoU in characters of the excerpts with the chunks that overlap them, i.e. the best
``span_iou`` of a retrieval that returns exactly the chunks touching the answer: |G ∩ C| / |G ∪ C|,
G the union of the excerpts' spans, C the union of the spans of the chunks of the same documents
that overlap G. Small chunks that tile the answer tightly score near 1; big chunks, low.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxeval.chunking.chunkers import Chunk
from ctxeval.chunking.questions import Excerpt, Question
from ctxeval.cutoffs.budgets import BudgetPolicy, ContextSizes
from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_label
from ctxeval.foundation.errors import InvalidArgumentError, SpecError
from ctxeval.foundation.exact import exact_mean
from ctxeval.foundation.specs import parse_spec
from ctxeval.matching.base import MatchingStrategy
from ctxeval.text.sizes import TokenCounter

__all__ = [
    "Attribution",
    "OverlapRule",
    "QuestionAttribution",
    "attribute",
    "attribution_rule",
    "intersection_length",
    "mean_of",
    "merge_spans",
    "span_length",
]

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class OverlapRule:
    """A chunk matches an excerpt when its span covers at least ``min`` of the excerpt's
    characters (in the same document)."""

    min: float = 0.7

    def __post_init__(self) -> None:
        value = self.min
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise InvalidArgumentError(
                f"overlap(min={value!r}): give the share of the excerpt a chunk must cover, "
                "a number in (0, 1], e.g. overlap(min=0.7)"
            )
        object.__setattr__(self, "min", float(value))

    @property
    def spec(self) -> str:
        return f"overlap(min={self.min!r})"

    def covers(self, start: int, end: int, excerpt: Excerpt) -> bool:
        inside = min(end, excerpt.end) - max(start, excerpt.start)
        size = excerpt.end - excerpt.start
        return size > 0 and inside >= self.min * size


Rule = str | OverlapRule
_RULES = "'match' (the matching strategy, as context_recall) or 'overlap(min=0.7)'"


def attribution_rule(rule: object) -> Rule:
    """``"match"``, or an :class:`OverlapRule` from ``"overlap"`` / ``"overlap(min=0.5)"``."""
    if isinstance(rule, OverlapRule) or rule == "match":
        return rule
    if isinstance(rule, str):
        try:
            parsed = parse_spec(rule, what="attribution rule", usage=_RULES)
        except SpecError as exc:
            raise InvalidArgumentError(f"attribution={rule!r}: {exc}") from None
        if (
            parsed.name == "overlap"
            and not parsed.args
            and parsed.k is None
            and set(parsed.kwargs) <= {"min"}
        ):
            return OverlapRule(**parsed.kwargs)
    raise InvalidArgumentError(f"attribution={rule!r}: give {_RULES}")


@dataclass(frozen=True, slots=True)
class QuestionAttribution:
    """One question: per excerpt, whether some chunk can match it and the rank (1-based) of the
    first retrieved chunk that does (None: not retrieved at the depth searched)."""

    id: str
    reachable: tuple[bool, ...]
    first_found: tuple[int | None, ...]
    span_ceiling: float

    def status(self, taken: int, also_found: Sequence[bool] = ()) -> list[str]:
        """Each excerpt's class when the top ``taken`` chunks are fed (and, under a truncating
        budget, ``also_found[j]`` when the cut chunk after them matches excerpt ``j``)."""
        extra = list(also_found) or [False] * len(self.reachable)
        return [
            "found"
            if (rank is not None and rank <= taken) or found_in_cut
            else ("missed" if reachable else "unreachable")
            for reachable, rank, found_in_cut in zip(
                self.reachable, self.first_found, extra, strict=True
            )
        ]

    def shares(self, taken: int, also_found: Sequence[bool] = ()) -> dict[str, float]:
        statuses = self.status(taken, also_found)
        n = len(statuses)
        return {name: statuses.count(name) / n for name in ("found", "missed", "unreachable")}


@dataclass(frozen=True, slots=True)
class Attribution:
    """One chunking's attribution: the three shares at each cut-off, and its ceilings."""

    ks: tuple[Cutoff, ...]
    found: dict[Cutoff, float]
    missed: dict[Cutoff, float]
    unreachable: dict[Cutoff, float]
    ceiling: float
    span_ceiling: float
    questions: tuple[QuestionAttribution, ...]
    rule: str = "match"

    def reach(self, share: float = 0.95) -> Cutoff | None:
        """The first cut-off (in :attr:`ks` order) at which the excerpts found are at least
        ``share`` of the ceiling, or None when none is."""
        for k in self.ks:
            if self.found[k] >= share * self.ceiling:
                return k
        return None

    def to_dict(self) -> dict[str, Any]:
        reached = self.reach()
        return {
            "rule": self.rule,
            "ks": [k if isinstance(k, int) else str(k) for k in self.ks],
            "found": {str(k): v for k, v in self.found.items()},
            "missed_by_retriever": {str(k): v for k, v in self.missed.items()},
            "unreachable": {str(k): v for k, v in self.unreachable.items()},
            "ceiling_recall": self.ceiling,
            "ceiling_span_iou": self.span_ceiling,
            "reaches_95_percent_of_ceiling_at": None if reached is None else cutoff_label(reached),
        }


class _DocumentChunks:
    """One document's chunks with their offsets as arrays, to find those overlapping a span."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.starts = np.array([c.start for c in chunks], dtype=np.int64)
        self.ends = np.array([c.end for c in chunks], dtype=np.int64)

    def overlapping(self, start: int, end: int, touching: bool = False) -> list[Chunk]:
        """The chunks sharing a character with ``[start, end)``; with ``touching``, also those
        that only touch it (chroma's rule: ``max(starts) <= min(ends)``)."""
        if touching:
            hits = np.flatnonzero((self.starts <= end) & (self.ends >= start))
        else:
            hits = np.flatnonzero((self.starts < end) & (self.ends > start))
        return [self.chunks[i] for i in hits]


def attribute(
    questions: Sequence[Question],
    chunks: Sequence[Chunk],
    rankings: Sequence[Sequence[int]],
    strategy: MatchingStrategy,
    ks: Sequence[Cutoff],
    *,
    rule: object = "match",
    budget_policy: BudgetPolicy = "whole",
    token_counter: str | TokenCounter = "rouge",
    progress: Callable[[int], None] | None = None,
    convention: str | None = None,
) -> Attribution:
    """Attribute every excerpt of ``questions`` at each of ``ks`` (numbers of chunks or size
    budgets), given the chunking's ``chunks`` and each question's retrieved chunk positions
    (``rankings``, best first). Budgets take chunks under ``budget_policy``, counting tokens
    with ``token_counter``, as :class:`~ctxeval.RetrievalEvaluator` does. ``progress`` is
    called with 1 as each question's excerpts are judged. ``convention="chroma"`` counts a
    chunk that only touches an excerpt as overlapping it (for reachability and the span
    ceiling), as chroma's ``_full_precision_score`` does."""
    judge = attribution_rule(rule)
    touch = convention == "chroma"
    grouped: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.doc, []).append(chunk)
    by_doc = {doc: _DocumentChunks(members) for doc, members in grouped.items()}
    retrieved = [[chunks[i] for i in ranking] for ranking in rankings]
    per_question = []
    for question, got in zip(questions, retrieved, strict=True):
        per_question.append(_question(question, by_doc, got, (strategy, judge), touch))
        if progress is not None:
            progress(1)
    sizes = ContextSizes([[c.text for c in got] for got in retrieved], token_counter)
    shares: dict[Cutoff, list[dict[str, float]]] = {}
    for k in ks:
        if isinstance(k, Budget):
            cut = sizes.cut(k, budget_policy)
            taken = cut.chunks.tolist()
            partial = cut.partial_chars.tolist()
        else:
            taken = [len(got) if k is None else min(k, len(got)) for got in retrieved]
            partial = [0] * len(retrieved)
        shares[k] = [
            q.shares(n, _found_in_cut(question, got, n, cut_chars, strategy, judge))
            for q, question, got, n, cut_chars in zip(
                per_question, questions, retrieved, taken, partial, strict=True
            )
        ]

    def mean(name: str, k: Cutoff) -> float:
        return mean_of([s[name] for s in shares[k]])

    reachable = [sum(q.reachable) / len(q.reachable) for q in per_question]
    return Attribution(
        ks=tuple(ks),
        found={k: mean("found", k) for k in ks},
        missed={k: mean("missed", k) for k in ks},
        unreachable={k: mean("unreachable", k) for k in ks},
        ceiling=mean_of(reachable),
        span_ceiling=mean_of([q.span_ceiling for q in per_question]),
        questions=tuple(per_question),
        rule=judge if isinstance(judge, str) else judge.spec,
    )


def _matching(
    candidates: Sequence[Chunk],
    excerpts: Sequence[Excerpt],
    strategy: MatchingStrategy,
    rule: Rule,
) -> np.ndarray:
    """``(len(candidates), len(excerpts))``: which candidate chunk matches which excerpt."""
    if not candidates or not excerpts:
        return np.zeros((len(candidates), len(excerpts)), dtype=bool)
    if isinstance(rule, OverlapRule):
        return np.array(
            [
                [c.doc == e.doc and rule.covers(c.start, c.end, e) for e in excerpts]
                for c in candidates
            ],
            dtype=bool,
        ).reshape(len(candidates), len(excerpts))
    judged = strategy.match([c.text for c in candidates], [e.text for e in excerpts])
    return np.asarray(judged.relevant, dtype=bool)


def _found_in_cut(
    question: Question,
    retrieved: Sequence[Chunk],
    taken: int,
    kept: int,
    strategy: MatchingStrategy,
    rule: Rule,
) -> list[bool]:
    """Which excerpts the truncated chunk (the first ``kept`` characters of the chunk after the
    ``taken`` whole ones) matches; empty when no chunk is cut."""
    if kept <= 0 or taken >= len(retrieved):
        return []
    whole = retrieved[taken]
    cut = Chunk(whole.doc, whole.start, min(whole.start + kept, whole.end), whole.text[:kept])
    return _matching([cut], question.excerpts, strategy, rule)[0].tolist()  # type: ignore[no-any-return]


def _question(
    question: Question,
    by_doc: Mapping[str, _DocumentChunks],
    retrieved: Sequence[Chunk],
    judging: tuple[MatchingStrategy, Rule],
    touching: bool = False,
) -> QuestionAttribution:
    """One question's excerpts: the first retrieved chunk matching each, whether a chunk
    overlapping it (or, with ``touching``, only touching it) matches it, and the span
    ceiling."""
    strategy, rule = judging
    excerpts = question.excerpts
    first_found: list[int | None] = [None] * len(excerpts)
    relevant = _matching(retrieved, excerpts, strategy, rule)
    for j in range(len(excerpts)):
        hits = np.flatnonzero(relevant[:, j])
        first_found[j] = int(hits[0]) + 1 if hits.size else None
    reachable = [rank is not None for rank in first_found]
    for j, excerpt in enumerate(excerpts):
        document = by_doc.get(excerpt.doc)
        if reachable[j] or document is None:
            continue
        candidates = document.overlapping(excerpt.start, excerpt.end, touching)
        reachable[j] = bool(_matching(candidates, [excerpt], strategy, rule).any())
    ceiling = _span_ceiling(question, by_doc, touching)
    return QuestionAttribution(question.id, tuple(reachable), tuple(first_found), ceiling)


def _span_ceiling(
    question: Question, by_doc: Mapping[str, _DocumentChunks], touch: bool = False
) -> float:
    """|G ∩ C| / |G ∪ C|: G the union of the excerpts' spans, C the union of the chunks
    overlapping G (with ``touch``, also those only touching it: chroma's precision Ω)."""
    inside = union = 0
    for doc in dict.fromkeys(excerpt.doc for excerpt in question.excerpts):
        gold = merge_spans([(e.start, e.end) for e in question.excerpts if e.doc == doc])
        document = by_doc.get(doc)
        touching = merge_spans(
            [
                (c.start, c.end)
                for start, end in gold
                for c in (document.overlapping(start, end, touch) if document else [])
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
