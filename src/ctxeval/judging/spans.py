"""A record's spans, as the span measures take them: given by the record, or located.

:func:`locate_record` settles the span of every retrieved and ground-truth text of one record
once (whatever the number of span metrics), and counts how each was settled: given by the
record, located exactly, after normalising, fuzzily, or not at all. :func:`record_spans` then
measures them in a unit (:class:`~ctxeval.metrics.spans.reference.RecordSpans`).

Policies (docs/decisions.md):

- a span the record gives is used as it is; with a corpus, its text must be the corpus text it
  points to (``doc[start:end]``), else the record is bad (an offset off by one would silently
  shift every number);
- a record without span fields needs a corpus to locate its texts in, else it is bad;
- a retrieved text that cannot be located adds nothing to R; a ground-truth text that cannot be
  located counts as missed (its length is added to G): it is reported, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ctxeval.foundation.errors import CORPUS_FIX, InvalidArgumentError, InvalidRecordError
from ctxeval.records.model import Record
from ctxeval.records.values import GradedText, Span
from ctxeval.text.locate import HOW, Locator
from ctxeval.text.sizes import TokenCounter, counting
from ctxeval.text.tokenize import token_starts

__all__ = [
    "DOC_FIELDS",
    "LOCATED_KEYS",
    "UNLOCATED_SHOWN",
    "LocatedRecord",
    "RecordSpans",
    "locate_record",
    "record_spans",
]

DOC_FIELDS = ("doc", "doc_id", "corpus_id")
"""Metadata fields that name the document a record's texts come from (searched first)."""

LOCATED_KEYS = ("given", *HOW)
"""How a text's span was settled, in the order of :attr:`LocatedRecord.counts`."""

UNLOCATED_SHOWN = 5
"""How many texts that could not be located a result lists (all are counted)."""


@dataclass(frozen=True, slots=True)
class LocatedRecord:
    """One record's spans (None: unknown) and how they were settled."""

    retrieved: tuple[Span | None, ...]
    truth: tuple[Span | None, ...]
    missing_truth: tuple[str, ...]  # the ground-truth texts without a span
    counts: tuple[int, ...]  # per LOCATED_KEYS
    unlocated: tuple[tuple[str, str], ...]  # (field[i], text) of the first few not located


def _texts(items: Sequence[str | GradedText]) -> list[str]:
    return [item.text if isinstance(item, GradedText) else item for item in items]


def _doc_hint(record: Record) -> str | None:
    for name in DOC_FIELDS:
        value = record.metadata.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _check_given(locator: Locator, span: Span, text: str, where: str, record: Record) -> None:
    found = locator.text_of(span)
    if found is None:
        raise InvalidRecordError(
            f"{where} points into document {span.doc!r}, which is not in the corpus; fix the "
            "span's doc, or leave the span out (null) to have the text located",
            field=where.split("[")[0],
            location=record.location,
        )
    size = len(locator.corpus[span.doc])
    if span.end > size:
        raise InvalidRecordError(
            f"{where} is {span.doc!r}[{span.start}:{span.end}], past the end of the document "
            f"({size} characters); fix the offsets (Python string indices into the document, "
            "not bytes), or leave the span out (null) to have the text located",
            field=where.split("[")[0],
            location=record.location,
        )
    if found != text:
        raise InvalidRecordError(
            f"{where} is {span.doc!r}[{span.start}:{span.end}], which holds "
            f"{found[:40]!r} in the corpus, not the text {text[:40]!r}; fix the offsets "
            "(Python string indices into the document, not bytes), or leave the span out "
            "(null) to have the text located",
            field=where.split("[")[0],
            location=record.location,
        )


def _settle(
    texts: list[str],
    given: list[Span | None] | None,
    field: str,
    record: Record,
    locator: Locator | None,
    counts: list[int],
    unlocated: list[tuple[str, str]],
) -> list[Span | None]:
    if given is None and locator is None:
        raise InvalidRecordError(
            f"span metrics need the span of each text, and the record has no {field}; give "
            f'them ({field}: [{{"doc": ..., "start": ..., "end": ...}}, ...]) or a corpus to '
            "locate the texts in (corpus=...)",
            field=field,
            location=record.location,
            fixes=(CORPUS_FIX,),
        )
    hint = _doc_hint(record)
    spans: list[Span | None] = []
    for i, text in enumerate(texts):
        span = given[i] if given is not None else None
        if span is not None:
            if locator is not None:
                _check_given(locator, span, text, f"{field}[{i}]", record)
            counts[0] += 1
            spans.append(span)
            continue
        how = "unlocated"
        if locator is not None:
            located = locator.locate(text, hint)
            span, how = located.span, located.how
        counts[LOCATED_KEYS.index(how)] += 1
        if span is None and len(unlocated) < UNLOCATED_SHOWN:
            unlocated.append((f"{field}[{i}]", text))
        spans.append(span)
    return spans


def locate_record(record: Record, locator: Locator | None) -> LocatedRecord:
    """The spans of ``record``'s texts, given or located in ``locator``'s corpus."""
    counts = [0] * len(LOCATED_KEYS)
    unlocated: list[tuple[str, str]] = []
    retrieved = [text if isinstance(text, str) else "" for text in record.retrieved]
    truth = _texts(record.ground_truth)  # type: ignore[arg-type]
    r = _settle(
        retrieved, record.retrieved_spans, "retrieved_spans", record, locator, counts, unlocated
    )
    g = _settle(
        truth, record.ground_truth_spans, "ground_truth_spans", record, locator, counts, unlocated
    )
    missing = tuple(text for text, span in zip(truth, g, strict=True) if span is None)
    return LocatedRecord(tuple(r), tuple(g), missing, tuple(counts), tuple(unlocated))


def record_spans(
    located: LocatedRecord,
    unit: str,
    locator: Locator | None,
    token_counter: str | TokenCounter = "rouge",
) -> RecordSpans:
    """The record's spans measured in ``unit``: ``"chars"``, a tokenizer's name (tokens that
    start in a span), or ``"tokens"`` (``token_counter`` over the text of each maximal run)."""
    if unit == "chars":
        missing = sum(map(len, located.missing_truth))
        return RecordSpans(located.retrieved, located.truth, missing)
    if locator is None:
        raise InvalidArgumentError(
            f"span unit {unit!r} counts the tokens of the documents: give the corpus "
            "(corpus=...), or use unit='chars'",
            fixes=(CORPUS_FIX,),
        )
    if unit == "tokens":
        count = counting(token_counter)
        missing = sum(map(count, located.missing_truth))
        return RecordSpans(
            located.retrieved, located.truth, missing, counter=count, documents=locator.corpus
        )
    missing = sum(len(token_starts(unit, text)) for text in located.missing_truth)
    return RecordSpans(located.retrieved, located.truth, missing, locator.token_starts(unit))


@dataclass(frozen=True)
class RecordSpans:
    """One record's spans: ``retrieved`` in rank order and ``truth`` (None: not located);
    ``missing_truth``: the total length of the ground-truth texts that could not be located;
    ``token_starts``: per document, the positions where its tokens start (None: characters);
    ``counter`` with ``documents``: a token counter and the documents' texts it counts in
    (``unit="tokens"``)."""

    retrieved: tuple[Span | None, ...]
    truth: tuple[Span | None, ...]
    missing_truth: int = 0
    token_starts: Mapping[str, frozenset[int]] | None = None
    counter: Callable[[str], int] | None = None
    documents: Mapping[str, str] | None = None

    @property
    def num_relevant(self) -> int:
        """Ground-truth texts (located or not): none means the empty-ground-truth policy."""
        return len(self.truth)

    def cut(self, k: int | None) -> int:
        """Retrieved items kept by the cut-off ``k`` (a count of chunks)."""
        return len(self.retrieved) if k is None else min(k, len(self.retrieved))
