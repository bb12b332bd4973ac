"""TREC run and qrels files, the formats trec_eval reads.

- run: ``qid Q0 docno rank score [tag]`` per line (the rank column is ignored, as trec_eval does:
  documents are ordered by score);
- qrels: ``qid iteration docno relevance`` per line.

Both are read into the dicts :func:`ctxeval.evaluate_run` and pytrec_eval take. A malformed line
raises :class:`~ctxeval.errors.InvalidRecordError` naming the file and line, what was expected and
what was found.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

from ctxeval.errors import InvalidRecordError
from ctxeval.io.sources import text_lines

__all__ = ["read_trec_qrels", "read_trec_run", "write_trec_qrels", "write_trec_run"]


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[str, int, list[str]]]:
    # UTF-8, or UTF-16/32 with a byte-order mark; a line that is neither names file:line.
    source = Path(path)
    for number, line in text_lines(source):
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            yield f"{source}:{number}", number, parts


def read_trec_run(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """``{qid: {docno: score}}`` from a TREC run file."""
    run: dict[str, dict[str, float]] = {}
    for where, _, parts in _lines(path):
        if len(parts) not in (5, 6):
            raise InvalidRecordError(
                f"a run line has 6 columns 'qid Q0 docno rank score tag' (the tag may be "
                f"missing), found {len(parts)}: {' '.join(parts)[:80]!r}",
                location=where,
            )
        qid, _, docno, _, score_text = parts[:5]
        try:
            score = float(score_text)
        except ValueError:
            raise InvalidRecordError(
                f"the score (5th column) must be a number, found {score_text!r}", location=where
            ) from None
        if not math.isfinite(score):
            raise InvalidRecordError(
                f"the score (5th column) must be finite, found {score_text!r}", location=where
            )
        docs = run.setdefault(qid, {})
        if docno in docs:
            raise InvalidRecordError(
                f"document {docno!r} appears twice for query {qid!r}; trec_eval rejects "
                "duplicate documents in a run",
                location=where,
            )
        docs[docno] = score
    return run


def read_trec_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{qid: {docno: relevance}}`` from a TREC qrels file."""
    qrels: dict[str, dict[str, int]] = {}
    for where, _, parts in _lines(path):
        if len(parts) != 4:
            raise InvalidRecordError(
                f"a qrels line has 4 columns 'qid iteration docno relevance', found "
                f"{len(parts)}: {' '.join(parts)[:80]!r}",
                location=where,
            )
        qid, _, docno, rel_text = parts
        try:
            relevance = int(rel_text)
        except ValueError:
            raise InvalidRecordError(
                f"the relevance (4th column) must be a whole number, found {rel_text!r}",
                location=where,
            ) from None
        judged = qrels.setdefault(qid, {})
        if docno in judged and judged[docno] != relevance:
            raise InvalidRecordError(
                f"document {docno!r} is judged twice for query {qid!r} with different "
                f"relevance ({judged[docno]} and {relevance})",
                location=where,
            )
        judged[docno] = relevance
    return qrels


def write_trec_run(
    run: dict[str, dict[str, float]], path: str | os.PathLike[str], *, tag: str = "ctxeval"
) -> None:
    """Write ``{qid: {docno: score}}`` as a TREC run, ranked by score (ties: docno descending)."""
    with Path(path).open("w", encoding="utf-8") as out:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
            for rank, (docno, score) in enumerate(ranked, 1):
                out.write(f"{qid} Q0 {docno} {rank} {score!r} {tag}\n")


def write_trec_qrels(qrels: dict[str, dict[str, int]], path: str | os.PathLike[str]) -> None:
    with Path(path).open("w", encoding="utf-8") as out:
        for qid, docs in qrels.items():
            for docno, relevance in docs.items():
                out.write(f"{qid} 0 {docno} {relevance}\n")
