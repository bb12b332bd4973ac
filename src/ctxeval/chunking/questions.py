"""The questions of a chunking comparison, their ground-truth excerpts located in the corpus.

:func:`load_questions` reads

- **JSONL** (or a list of dicts): ``{"id": ..., "question": ..., "excerpts": [...]}`` where an
  excerpt is a text (``"..."``, located in the corpus), a span ``{"doc": ..., "start": ...,
  "end": ...}`` (its text is taken from the corpus), or both (``{"text": ..., "doc": ...,
  "start": ..., "end": ...}``, checked against the corpus);
- the **fixtures' shape**: ``ground_truth_context`` (texts) with ``doc``, ``char_start``,
  ``char_end`` (the span of the first text; further texts are located in ``doc``);
- **chroma's questions CSV** (``chunking_evaluation``): columns ``question``, ``references`` (JSON
  ``[{"content", "start_index", "end_index"}]``) and ``corpus_id``, as it is. Its questions have
  no ids: each is named by its 1-based row number.

A text without a span is located in its ``doc`` when one is given, else in the documents in
corpus order (the first occurrence wins): exactly (``str.find``), then, like ``--corpus``
locating (:class:`~ctxeval.text.locate.Locator`), whitespace- and case-normalised, then fuzzy
(rapidfuzz alignment of at least 90). A text found the second or third way takes the document's
text at its span, and one :class:`ExcerptWarning` says how many were; a text found no way stops
the run. Offsets are Python string indices into the document. Every problem names the file and
line (or row), the field and the fix.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxeval.foundation.errors import CtxevalWarning, InvalidArgumentError, type_name
from ctxeval.io.sources import json_error, text_lines
from ctxeval.text.locate import Locator

__all__ = ["Excerpt", "ExcerptWarning", "Question", "load_questions"]


class ExcerptWarning(CtxevalWarning):
    """Excerpts located only after normalising whitespace and case, or fuzzily."""


class _Finder:
    """Locates excerpt texts in the corpus, or in their ``doc`` alone, with one
    :class:`~ctxeval.text.locate.Locator` per scope (exact, normalised, fuzzy); counts the
    texts found only the second or third way."""

    def __init__(self, corpus: Mapping[str, str]) -> None:
        self.corpus = corpus
        self.counts = {"normalised": 0, "fuzzy": 0}
        self._locators: dict[str | None, Locator] = {}

    def find(self, text: str, doc: str | None) -> Excerpt | None:
        locator = self._locators.get(doc)
        if locator is None:
            scope = self.corpus if doc is None else {doc: self.corpus[doc]}
            locator = self._locators[doc] = Locator(scope)
        found = locator.locate(text)
        span = found.span
        if span is None:
            return None
        if found.how in self.counts:
            self.counts[found.how] += 1
        text = self.corpus[span.doc][span.start : span.end]
        return Excerpt(span.doc, span.start, span.end, text, found.how)

    def report(self, source: object) -> None:
        if any(self.counts.values()):
            warnings.warn(
                ExcerptWarning(
                    f"questions {source}: {self.counts['normalised']} excerpt text(s) located "
                    f"after normalising whitespace and case, {self.counts['fuzzy']} fuzzily; "
                    "each takes the document's text at its span (give spans, or copy the "
                    "texts exactly, to silence this)"
                ),
                stacklevel=3,
            )


_ID_FIELDS = ("id", "query_id", "qid", "_id")
_QUESTION_FIELDS = ("question", "query")
_EXCERPT_KEYS = ("text", "content", "doc", "start", "end")


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A ground-truth excerpt: ``text`` is exactly ``corpus[doc][start:end]``; ``located``
    says how its span was found: ``"given"`` (a span in the questions), or its text located
    ``"exact"``-ly, ``"normalised"`` or ``"fuzzy"`` (not part of its identity)."""

    doc: str
    start: int
    end: int
    text: str
    located: str = field(default="given", compare=False)

    def span(self) -> dict[str, Any]:
        return {"doc": self.doc, "start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a chunking comparison and where its answer lies in the corpus."""

    id: str
    question: str
    excerpts: tuple[Excerpt, ...]


def load_questions(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], corpus: Mapping[str, str]
) -> list[Question]:
    """The questions of ``source`` (a ``.jsonl`` file, chroma's ``.csv``, or dicts), their
    excerpts checked against (or located in) ``corpus``, in input order."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise InvalidArgumentError(f"questions {path}: no such file")
        if path.suffix.lower() == ".csv":
            rows: Iterator[tuple[str, Any]] = _chroma_rows(path)
        elif path.suffix.lower() in (".jsonl", ".ndjson"):
            rows = _jsonl_rows(path)
        else:
            raise InvalidArgumentError(
                f"questions {path}: unsupported file type {path.suffix or '(none)'}; give a "
                ".jsonl file of {id, question, excerpts} or chroma's questions .csv"
            )
    else:
        rows = ((f"questions[{i}]", _with_id(row, str(i + 1))) for i, row in enumerate(source))
    finder = _Finder(corpus)
    questions = []
    first_seen: dict[str, str] = {}
    for where, row in rows:
        question = _question(where, row, finder)
        if question.id in first_seen:
            raise InvalidArgumentError(
                f"{where}: duplicate question id {question.id!r} (first at "
                f"{first_seen[question.id]}); give each question its own id"
            )
        first_seen[question.id] = where
        questions.append(question)
    finder.report(source if isinstance(source, str | os.PathLike) else "(in memory)")
    if not questions:
        raise InvalidArgumentError(f"questions {source}: no questions")
    return questions


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    for number, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(
                f"{where}: not valid JSON ({json_error(exc)}); each line must be one "
                '{"id": ..., "question": ..., "excerpts": [...]} object'
            ) from None
        yield where, _with_id(row, str(number))


def _with_id(row: object, default: str) -> object:
    """A question without an id is named by its line number (or position)."""
    if isinstance(row, Mapping) and not any(f in row for f in _ID_FIELDS):
        return {**row, "id": default}
    return row


def _chroma_rows(path: Path) -> Iterator[tuple[str, Any]]:
    # Lines as text_lines decodes them: a byte that is not UTF-8 is one error naming its
    # file:line, not a crash. (Its file is closed when the lines are, at the last row or when
    # an error drops them.)
    reader = csv.DictReader(line for _, line in text_lines(path))
    missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or ())
    if missing:
        raise InvalidArgumentError(
            f"questions {path}: a questions CSV needs the columns question, references, "
            f"corpus_id (chroma's format); missing: {', '.join(sorted(missing))}"
        )
    for number, row in enumerate(reader, 1):
        where = f"{path}: row {number}"
        try:
            references = json.loads(row["references"])
        except (json.JSONDecodeError, TypeError):
            raise InvalidArgumentError(
                f"{where}: column 'references' is not valid JSON; give "
                '[{"content": ..., "start_index": ..., "end_index": ...}]'
            ) from None
        if not isinstance(references, list):
            raise InvalidArgumentError(f"{where}: column 'references' must be a JSON list")
        excerpts = [_chroma_reference(where, ref, row["corpus_id"]) for ref in references]
        yield where, {"id": str(number), "question": row["question"], "excerpts": excerpts}


def _chroma_reference(where: str, reference: object, corpus_id: str) -> dict[str, Any]:
    if not isinstance(reference, dict) or not {"content", "start_index", "end_index"} <= set(
        reference
    ):
        raise InvalidArgumentError(
            f"{where}: each reference needs content, start_index and end_index"
        )
    return {
        "text": reference["content"],
        "doc": corpus_id,
        "start": reference["start_index"],
        "end": reference["end_index"],
    }


def _question(where: str, row: object, finder: _Finder) -> Question:
    if not isinstance(row, dict):
        raise InvalidArgumentError(
            f'{where}: expected a {{"id": ..., "question": ..., "excerpts": [...]}} object, '
            f"got {type_name(row)}"
        )
    qid = _first(row, _ID_FIELDS)
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid:
        raise InvalidArgumentError(f"{where}: field 'id' must be a non-empty string")
    text = _first(row, _QUESTION_FIELDS)
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(
            f"{where} (question {qid!r}): field 'question' must be a non-empty string"
        )
    here = f"{where} (question {qid!r})"
    items = _raw_excerpts(here, row)
    excerpts = tuple(
        _excerpt(f"{here}: {field} {n}", item, finder) for n, (field, item) in enumerate(items, 1)
    )
    return Question(qid, text, excerpts)


def _raw_excerpts(here: str, row: dict[str, Any]) -> list[tuple[str, object]]:
    if "excerpts" in row:
        items = row["excerpts"]
        if not isinstance(items, list) or not items:
            raise InvalidArgumentError(
                f"{here}: field 'excerpts' must be a non-empty list of texts or "
                '{"doc": ..., "start": ..., "end": ...} spans'
            )
        return [("excerpt", item) for item in items]
    if "ground_truth_context" in row:
        texts = row["ground_truth_context"]
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            raise InvalidArgumentError(
                f"{here}: field 'ground_truth_context' must be a non-empty list of texts"
            )
        return [("ground_truth_context", item) for item in _fixture_items(row, texts)]
    fields = ("excerpts", "ground_truth_context")
    typos = [
        f"; is {key!r} meant to be {close[0]!r}?"
        for key in row
        if isinstance(key, str)
        and (close := difflib.get_close_matches(key, fields, n=1, cutoff=0.6))
    ]
    hint = typos[0] if typos else ""
    raise InvalidArgumentError(
        f"{here}: no ground truth; give 'excerpts' (texts or "
        '{"doc": ..., "start": ..., "end": ...} spans) or \'ground_truth_context\'' + hint
    )


def _fixture_items(row: dict[str, Any], texts: list[object]) -> list[object]:
    """The fixtures' shape: ``doc``, ``char_start``, ``char_end`` give the first text's span."""
    doc = row.get("doc")
    if doc is None:
        return list(texts)
    items: list[object] = [{"text": t, "doc": doc} for t in texts]
    if "char_start" in row or "char_end" in row:
        items[0] = {
            "text": texts[0],
            "doc": doc,
            "start": row.get("char_start"),
            "end": row.get("char_end"),
        }
    return items


def _excerpt(where: str, item: object, finder: _Finder) -> Excerpt:
    corpus = finder.corpus
    if isinstance(item, str):
        return _located(where, item, None, finder)
    if not isinstance(item, dict):
        raise InvalidArgumentError(
            f"{where}: give a text or a {{'doc': ..., 'start': ..., 'end': ...}} span, "
            f"got {type_name(item)}"
        )
    unknown = [key for key in item if key not in _EXCERPT_KEYS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), _EXCERPT_KEYS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InvalidArgumentError(
            f"{where}: unknown field {unknown[0]!r}{hint} (an excerpt has 'text' and/or its "
            "span 'doc', 'start', 'end')"
        )
    text = item.get("text", item.get("content"))
    if text is not None and not isinstance(text, str):
        raise InvalidArgumentError(f"{where}: field 'text' must be a string")
    doc = item.get("doc")
    if doc is not None and doc not in corpus:
        doc = _corpus_name(where, doc, corpus)
    has_span = item.get("start") is not None or item.get("end") is not None
    if not has_span:
        if text is None:
            raise InvalidArgumentError(
                f"{where}: give the excerpt's text, or its span as doc, start and end"
            )
        return _located(where, text, doc, finder)
    if doc is None:
        raise InvalidArgumentError(f"{where}: a span needs 'doc', the document it is in")
    start, end = _offset(where, "start", item.get("start")), _offset(where, "end", item.get("end"))
    document = corpus[doc]
    if not start < end <= len(document):
        raise InvalidArgumentError(
            f"{where}: span [{start}:{end}] is not inside document {doc!r} "
            f"({len(document)} characters); give 0 <= start < end <= {len(document)}"
        )
    if text is not None and document[start:end] != text:
        raise InvalidArgumentError(
            f"{where}: the text disagrees with the corpus at {doc!r}[{start}:{end}] (the corpus "
            f"has {_clip(document[start:end])}, the excerpt {_clip(text)}); fix the offsets "
            "(Python string indices into the UTF-8 document) or leave them out to locate the "
            "text"
        )
    return Excerpt(doc, start, end, document[start:end])


def _corpus_name(where: str, doc: object, corpus: Mapping[str, str]) -> str:
    """``doc`` as a corpus name: as given, or a path's name without its extension (chroma's
    ``corpus_id`` may be a file path)."""
    if isinstance(doc, str):
        parts = Path(doc).with_suffix("").parts
        # The longest tail of the path that names a document: corpora/notes/faq.md -> notes/faq.
        for i in range(len(parts)):
            candidate = "/".join(parts[i:])
            if candidate in corpus:
                return candidate
    from ctxeval.foundation.specs import unknown_name

    raise InvalidArgumentError(
        str(unknown_name(None, "corpus document", str(doc), list(corpus), where=f"{where}: doc"))
        + "; every excerpt's doc must name a document of the corpus"
    )


def _located(where: str, text: str, doc: str | None, finder: _Finder) -> Excerpt:
    if not text.strip():
        raise InvalidArgumentError(f"{where}: the excerpt text is empty")
    found = finder.find(text, doc)
    if found is not None:
        return found
    inside = f"document {doc!r}" if doc is not None else "any document of the corpus"
    raise InvalidArgumentError(
        f"{where}: the text {_clip(text)} is not in {inside} (not exactly, not after "
        "normalising whitespace and case, not fuzzily); give its span as doc, start and end, "
        "or copy the text from the document"
    )


def _offset(where: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"{where}: field {name!r} must be a whole number >= 0 (a character offset), "
            f"got {value!r}"
        )
    return value


def _first(row: dict[str, Any], names: tuple[str, ...]) -> object:
    for name in names:
        if name in row:
            return row[name]
    return None


def _clip(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
