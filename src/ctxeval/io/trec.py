"""TREC run and qrels files, the formats trec_eval reads.

- run: ``qid Q0 docno rank score [tag]`` per line (the rank column is ignored, as trec_eval does:
  documents are ordered by score; so are columns after the tag, as in trec_eval's own test file
  ``results.trunc``);
- qrels: ``qid iteration docno relevance`` per line; :func:`read_qrels` also reads qrels from
  JSON (llama-index's ``EmbeddingQAFinetuneDataset``, ranx's and pytrec_eval's dicts).

Both are read into the dicts :func:`ctxeval.evaluate_run` and pytrec_eval take. A malformed line
raises :class:`~ctxeval.foundation.errors.InvalidRecordError` naming the file and line, what was
expected and what was found.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import Fix, InvalidArgumentError, InvalidRecordError
from ctxeval.io.atomic import atomic_write
from ctxeval.io.llama_index import llama_index_qrels, read_json_document
from ctxeval.io.sources import text_lines

__all__ = [
    "check_trec_qrels",
    "check_trec_run",
    "read_qrels",
    "read_trec_qrels",
    "read_trec_run",
    "run_tag",
    "trec_records",
    "write_trec_qrels",
    "write_trec_run",
]


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
        if len(parts) < 5:
            raise InvalidRecordError(
                f"a run line has 6 columns 'qid Q0 docno rank score tag' (the tag may be "
                f"missing; columns after it are ignored, as trec_eval does), found "
                f"{len(parts)}: {' '.join(parts)[:80]!r}",
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


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{qid: {docno: relevance}}`` from a TREC qrels file, or from JSON: llama-index's
    ``EmbeddingQAFinetuneDataset`` (``{"queries", "corpus", "relevant_docs": {qid: [node
    ids]}}``, every listed node relevance 1) or ranx's and pytrec_eval's ``{qid: {doc:
    relevance}}``."""
    if Path(path).suffix.lower() != ".json":
        return read_trec_qrels(path)
    document = read_json_document(path)
    if isinstance(document, dict) and "relevant_docs" in document:
        return llama_index_qrels(document["relevant_docs"], os.fspath(path))
    if isinstance(document, dict) and {"queries", "corpus"} <= set(document):
        # llama-index's keys without its judgments: not qrels of queries named "queries"
        raise InvalidArgumentError(
            f'{path}: has "queries"/"corpus" like llama-index\'s EmbeddingQAFinetuneDataset '
            'but no "relevant_docs" (the judgments: {"qid": ["node id", ...]}); add it, or '
            'give qrels as {"qid": {"doc": relevance}}'
        )
    if isinstance(document, dict) and all(isinstance(v, dict) for v in document.values()):
        return {
            str(q): _json_grades(grades, f"{path}: query {q!r}") for q, grades in document.items()
        }
    raise InvalidArgumentError(
        f"{path}: expected llama-index's EmbeddingQAFinetuneDataset JSON (with "
        '"relevant_docs") or qrels as {"qid": {"doc": relevance}}; or give a TREC qrels file'
    )


def _json_grades(grades: dict[Any, Any], where: str) -> dict[str, int]:
    for doc, grade in grades.items():
        if isinstance(grade, bool) or not isinstance(grade, int):
            raise InvalidArgumentError(
                f"{where}: the relevance of {doc!r} must be a whole number, found {grade!r}"
            )
    return {str(doc): grade for doc, grade in grades.items()}


def _trec_token(value: object, what: str, where: str) -> str:
    """``value`` as one column of a TREC line, or an error: trec_eval splits lines on
    whitespace and ctxeval's reader skips lines starting with ``#``, so such ids would read back
    as different columns or no line at all."""
    text = str(value)
    if not text:
        problem = "is empty"
    elif any(c.isspace() for c in text):
        problem = "contains whitespace (TREC columns are separated by whitespace)"
    elif what == "query id" and text.startswith("#"):
        problem = "starts with '#' (a comment line in TREC files)"
    else:
        return text
    fix = "rename it (e.g. replace spaces with '_')"
    fixes: tuple[Fix, ...] = ()
    if what == "query id" and text[:1] == "#" and text[1:].isdigit():
        # "#<position>": the id given to a record without one
        fix = (
            "records without an id are numbered '#0', '#1', ...: give each record an id "
            '(an "id" field, or name yours with fields={"id": ...})'
        )
        fixes = (Fix("fields", {"id": None}, 'fields={"id": ...}'),)
    raise InvalidArgumentError(
        f"{where}: the {what} {text!r} {problem}, so it cannot be written to a TREC file "
        f"and read back; {fix}, or keep the records in .jsonl",
        fixes=fixes,
    )


def check_trec_run(run: dict[str, dict[str, float]], *, location: str = "run") -> None:
    """Raise :class:`InvalidArgumentError` naming the query and document when ``run`` cannot be
    written as a TREC run that reads back equal."""
    for qid, docs in run.items():
        _trec_token(qid, "query id", f"{location}[{qid!r}]")
        for docno, score in docs.items():
            _trec_token(docno, "document id", f"{location}[{qid!r}]")
            if not math.isfinite(float(score)):
                raise InvalidArgumentError(
                    f"{location}[{qid!r}][{docno!r}]: the score {score!r} is not finite; a TREC "
                    "run needs finite scores"
                )


def check_trec_qrels(qrels: dict[str, dict[str, Any]], *, location: str = "qrels") -> None:
    """Raise :class:`InvalidArgumentError` naming the query and document when ``qrels`` cannot
    be written as TREC qrels that read back equal (ids with whitespace, grades that are not
    whole numbers: trec_eval reads relevance as an integer)."""
    for qid, docs in qrels.items():
        _trec_token(qid, "query id", f"{location}[{qid!r}]")
        for docno, grade in docs.items():
            _trec_token(docno, "document id", f"{location}[{qid!r}]")
            if isinstance(grade, bool) or not float(grade).is_integer():
                raise InvalidArgumentError(
                    f"{location}[{qid!r}][{docno!r}]: the grade {grade!r} is not a whole number; "
                    "TREC qrels hold integer relevance (trec_eval reads 2.5 as 2), so it cannot "
                    "be written without changing the scores; keep graded records in .jsonl"
                )


def write_trec_run(
    run: dict[str, dict[str, float]],
    path: str | os.PathLike[str],
    *,
    tag: str = "ctxeval",
    location: str = "run",
) -> None:
    """Write ``{qid: {docno: score}}`` as a TREC run, ranked by score (ties: docno descending),
    atomically. Ids containing whitespace, a query id starting with ``#`` and scores that are
    not finite are rejected (naming the query) before anything is written."""
    check_trec_run(run, location=location)
    _trec_token(tag, "run tag", "write_trec_run(tag=...)")
    with atomic_write(Path(path)) as out:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
            for rank, (docno, score) in enumerate(ranked, 1):
                out.write(f"{qid} Q0 {docno} {rank} {float(score)!r} {tag}\n")


def write_trec_qrels(
    qrels: dict[str, dict[str, Any]], path: str | os.PathLike[str], *, location: str = "qrels"
) -> None:
    """Write ``{qid: {docno: relevance}}`` as TREC qrels, atomically; grades must be whole
    numbers and ids free of whitespace (checked, naming the query, before anything is
    written)."""
    check_trec_qrels(qrels, location=location)
    with atomic_write(Path(path)) as out:
        for qid, docs in qrels.items():
            for docno, relevance in docs.items():
                out.write(f"{qid} 0 {docno} {int(relevance)}\n")


def run_tag(path: str | os.PathLike[str]) -> str | None:
    """The run's tag (the 6th column of its first result line), which trec_eval prints as
    ``runid``; None when the run has no line or no tag."""
    for _, _, parts in _lines(path):
        return parts[5] if len(parts) >= 6 else None
    return None


def trec_records(
    run: str | os.PathLike[str],
    qrels: str | os.PathLike[str],
    max_retrieved: int | None = None,
    missing_queries: str = "zero",
    *,
    tie_order_matters: bool = True,
    note_missing: bool = True,
) -> list[dict[str, Any]]:
    """ID-mode records of a TREC run judged by ``qrels`` (see
    :meth:`~ctxeval.RetrievalEvaluator.from_trec`): one per judged query (``missing_queries=
    "skip"``: per judged query the run has results for, as trec_eval without ``-c``),
    documents ranked by score (ties: docid descending, as trec_eval) with their scores
    (``retrieved_scores``), the first ``max_retrieved`` kept. Warns (a
    :class:`~ctxeval.foundation.errors.ConventionWarning`) of the queries of the run without
    judgments (left out, as trec_eval does), of the queries missing from the run (unless
    ``note_missing`` is False) and of ties that straddle relevance (unless
    ``tie_order_matters`` is False: every measure averages over tied documents)."""
    from ctxeval.metrics.runs import rank_documents, ties_straddle_relevance, warn_policies

    ranked = read_trec_run(run)
    judged = read_qrels(qrels)
    records = []
    tied = 0
    for qid, grades in judged.items():
        if missing_queries == "skip" and qid not in ranked:
            continue
        scored = ranked.get(qid, {})
        order = rank_documents(scored, location=f"{run}: {qid}")
        if len(set(scored.values())) < len(scored):
            tied += ties_straddle_relevance(scored, order, grades)
        kept = order[:max_retrieved]
        scores = [scored[doc] for doc in kept]  # type: ignore[index]  # best first: ties adjacent
        records.append(
            {"id": qid, "retrieved_ids": kept, "retrieved_scores": scores, "qrels": grades}
        )
    missing = [qid for qid in judged if qid not in ranked] if note_missing else []
    warn_policies(
        ranked, judged, missing, missing_queries, tied if tie_order_matters else 0, "trec_eval"
    )
    return records
