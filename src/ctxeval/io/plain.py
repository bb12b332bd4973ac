"""Plain records, checked a batch at a time.

Most records of a dataset are *plain*: a dict whose id (when the dataset has ids) is a
non-blank string, with no span or score field and no nested metadata; in text mode its
retrieved field a list of strings and its ground truth a non-empty list of non-blank strings;
in ID mode its retrieved ids a list of strings and its qrels a dict of string ids to finite
grades (:func:`~ctxeval.records.checks.plain_qrels`). For those the record-by-record checks of
:class:`~ctxeval.io.stream.RecordStream` (a chain of calls per record; in ID mode, the pydantic
schema's) all pass, so a batch of them is checked with one pass over the batch per condition
instead.

:func:`plain_batch` says whether every item of a batch is plain, and gives their columns. When
one is not, it gives None and the stream reads the whole batch record by record, as before: the
same records, and the same messages for the bad ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

from ctxeval.io.fields import ID_CANDIDATES, ResolvedFields
from ctxeval.records.checks import plain_qrels
from ctxeval.records.model import SPAN_NAMES

__all__ = ["PlainBatch", "not_plain_fields", "plain_batch"]

_STR = frozenset({str})
_LIST = frozenset({list})
_NESTED = frozenset({list, dict})


class PlainBatch(NamedTuple):
    """The columns of a batch of plain records, in order."""

    ids: list[str] | None  # None: the dataset has no id field
    retrieved: list[list[str]]
    ground_truth: list[list[str]] | list[dict[str, float]]  # texts, or qrels (ID mode)
    metadata: list[dict[str, Any]]


def not_plain_fields(resolved: ResolvedFields, score_field: str) -> frozenset[str]:
    """The field names whose presence makes a record not plain: the span fields, the scores
    field, and, in a dataset without an id field, the names an id could have (a record with
    one is an error)."""
    names = SPAN_NAMES | {score_field}
    return names | frozenset(ID_CANDIDATES) if resolved.id is None else names


def plain_batch(
    values: Sequence[object], resolved: ResolvedFields, not_plain: frozenset[str]
) -> PlainBatch | None:
    """The batch's columns when every value is a plain record of ``resolved``'s fields and
    mode (``not_plain``: :func:`not_plain_fields`), else None."""
    if set(map(type, values)) != {dict}:
        return None
    records: Sequence[dict[str, Any]] = values  # type: ignore[assignment]
    used = resolved.used
    if not all(r.keys() >= used and not_plain.isdisjoint(r) for r in records):
        return None
    retrieved = [r[resolved.retrieved] for r in records]
    if not (
        _LIST.issuperset(map(type, retrieved))
        and _STR.issuperset(map(type, itertools.chain.from_iterable(retrieved)))
    ):
        return None
    truth = [r[resolved.ground_truth] for r in records]
    ground_truth = _plain_texts(truth) if resolved.mode == "text" else _plain_qrels(truth)
    if ground_truth is None:
        return None
    ids = None
    if resolved.id is not None:
        ids = [r[resolved.id] for r in records]
        if not (_STR.issuperset(map(type, ids)) and all(map(str.strip, ids))):
            return None
    metadata = [{k: v for k, v in r.items() if k not in used} for r in records]
    if any(type(v) in _NESTED for m in metadata for v in m.values()):
        return None  # nested metadata is checked record by record
    return PlainBatch(ids, retrieved, ground_truth, metadata)


def _plain_texts(truth: list[Any]) -> list[list[str]] | None:
    """Ground truths that are non-empty lists of non-blank strings, or None."""
    if (
        _LIST.issuperset(map(type, truth))
        and all(truth)
        and _STR.issuperset(map(type, itertools.chain.from_iterable(truth)))
        and all(map(str.strip, itertools.chain.from_iterable(truth)))
    ):
        return truth
    return None


def _plain_qrels(truth: list[Any]) -> list[dict[str, float]] | None:
    """Qrels that are all plain (:func:`~ctxeval.records.checks.plain_qrels`), their grades as
    floats, or None."""
    qrels = list(map(plain_qrels, truth))
    return None if None in qrels else qrels  # type: ignore[return-value]
