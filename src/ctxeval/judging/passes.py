"""How a metric is judged: a judging pass, one per way of judging.

Every metric object says how it is judged (``metric.judging_pass(depth)``) with one of these
values; the scoring engine calls them and never asks what family a metric is. Passes are frozen
and compare by value, so metrics whose passes are equal share one judging of each record:

- :class:`TextPass`: texts matched by a strategy and credited by a rule, to a depth;
- :class:`IdPass`: ids against qrels, relevant from a grade on, to a depth;
- :class:`SpanPass`: a record's spans (given or located), measured in a unit.

``judge(record, located, ...)`` judges one record: the pass's judgments (or spans) and how many of
its texts produced no tokens. A text pass of chunk units also offers ``chunk_texts(record)``:
what its strategy matches, so that a batch's records can be matched in one call
(``strategy.match_records``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ctxeval.judging.judgments import Credit, judge_ids
from ctxeval.judging.spans import LocatedRecord, record_spans
from ctxeval.judging.texts import ground_truth_units, judge_texts
from ctxeval.matching.base import MatchingStrategy
from ctxeval.records.model import Mode, Record
from ctxeval.text.locate import Locator
from ctxeval.text.sizes import TokenCounter

__all__ = ["ChunkTexts", "IdPass", "JudgingPass", "SpanPass", "TextPass"]

# A chunk pass's texts for one record: the chunks shown, the ground-truth units, their grades.
ChunkTexts = tuple[list[str], list[str], list[float] | None]


class JudgingPass(Protocol):
    """What the scoring engine needs of a way of judging (hashable: equal passes are shared)."""

    mode: ClassVar[Mode]
    locates: ClassVar[bool]  # judges spans: each record's are located once for every such pass

    @property
    def token_unit(self) -> str | None:
        """The unit of spans measured in the documents' tokens (which needs the corpus)."""

    @property
    def strategy(self) -> MatchingStrategy | None:
        """The strategy that matches texts, for passes that match any."""

    @property
    def credit(self) -> Credit:
        """How matches earn credit (the first one, or each ground-truth item once)."""

    def chunk_texts(self, record: Record) -> ChunkTexts | None:
        """What a chunk pass's strategy matches for ``record``; None for other passes."""

    def judge(
        self,
        record: Record,
        located: LocatedRecord | None,
        *,
        locator: Locator | None,
        token_counter: str | TokenCounter,
    ) -> tuple[Any, int]:
        """``record``'s judgments (or spans), and how many of its texts yield no tokens."""

    def __hash__(self) -> int: ...


@dataclass(frozen=True)
class TextPass:
    """Texts matched by ``matching`` and credited by ``credit_rule``, the first ``depth`` chunks
    (None: all)."""

    matching: MatchingStrategy
    credit_rule: Credit
    depth: int | None

    mode: ClassVar[Mode] = "text"
    locates: ClassVar[bool] = False
    token_unit: ClassVar[None] = None

    @property
    def strategy(self) -> MatchingStrategy:
        return self.matching

    @property
    def credit(self) -> Credit:
        return self.credit_rule

    def chunk_texts(self, record: Record) -> ChunkTexts | None:
        if self.matching.unit != "chunk":
            return None
        truth, grades = ground_truth_units(self.matching, record.ground_truth)  # type: ignore[arg-type]
        chunks: list[str] = record.retrieved  # validated by the reader: strings only
        depth = self.depth
        shown = chunks if depth is None or depth >= len(chunks) else chunks[:depth]
        return shown, truth, grades

    def judge(
        self,
        record: Record,
        located: LocatedRecord | None,
        *,
        locator: Locator | None,
        token_counter: str | TokenCounter,
    ) -> tuple[Any, int]:
        judged = judge_texts(
            self.matching,
            record.retrieved,
            record.ground_truth,
            k=self.depth,
            location=record.location,
            credit=self.credit_rule,
            validated=True,  # the reader validated the record with the same checks
        )
        return judged.judgments, len(judged.tokenless)


class _Unmatched:
    """What passes that match no texts share: no strategy, no chunk texts."""

    strategy: ClassVar[None] = None
    credit: ClassVar[Credit] = "matching"

    def chunk_texts(self, record: Record) -> None:
        return None


@dataclass(frozen=True)
class IdPass(_Unmatched):
    """Ids judged against qrels, relevant from ``relevance_level`` on, the first ``depth`` ids
    (None: all)."""

    relevance_level: float
    depth: int | None

    mode: ClassVar[Mode] = "id"
    locates: ClassVar[bool] = False
    token_unit: ClassVar[None] = None

    def judge(
        self,
        record: Record,
        located: LocatedRecord | None,
        *,
        locator: Locator | None,
        token_counter: str | TokenCounter,
    ) -> tuple[Any, int]:
        qrels: dict[Hashable, float] = record.ground_truth  # type: ignore[assignment]
        retrieved = record.retrieved if self.depth is None else record.retrieved[: self.depth]
        return judge_ids(retrieved, qrels, relevance_level=self.relevance_level), 0


@dataclass(frozen=True)
class SpanPass(_Unmatched):
    """A record's spans, given or located once per record, measured in ``unit``."""

    unit: str

    mode: ClassVar[Mode] = "text"
    locates: ClassVar[bool] = True

    @property
    def token_unit(self) -> str | None:
        return None if self.unit == "chars" else self.unit

    def judge(
        self,
        record: Record,
        located: LocatedRecord | None,
        *,
        locator: Locator | None,
        token_counter: str | TokenCounter,
    ) -> tuple[Any, int]:
        assert located is not None  # located for every record when the plan has span metrics
        return record_spans(located, self.unit, locator, token_counter), 0
