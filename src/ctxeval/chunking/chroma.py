"""chroma's convention for the harness: where chroma's chunking_evaluation puts a chunk, and which
chunks it counts as touching an excerpt.

Under ``convention="chroma"`` (``--convention chroma``) the harness reproduces chroma's
``_full_precision_score`` (its "precision Ω", ctxeval's span ceiling) and its retrieval scorer:

- **placement** (:func:`chroma_place`): a chunk's span is where chroma's
  ``rigorous_document_search`` finds its text, not where the chunker cut it (its text, which the
  retrievers index and the text measures judge, stays the chunker's, as chroma's collection holds
  the chunker's texts): a trailing ``.`` is dropped from the text first (so the span is one
  character shorter than the text), then the text's *first* occurrence in the document
  (``str.find``: a repeated passage is always placed at its first occurrence, however far from
  where it was cut), else the first match of its words with any whitespace (or none) between
  them, ignoring case, else the document's "sentence" (split at ``.``, ``!``, ``?`` with the
  whitespace after them, and at newlines) most like it by fuzzywuzzy's ``token_sort_ratio``
  rounded to a whole number, when that is at least 98 (rapidfuzz computes the score, so a tie
  or a score at the edge could differ from fuzzywuzzy's); a chunk found no way is an error, as
  it is in chroma. A chunk that was only ``.`` is placed on no characters (at the document's
  start, as in chroma): it can be retrieved and adds nothing to any length;
- **touching** (:func:`touching`): a chunk counts for an excerpt when their ranges intersect
  *or only touch* (chroma's ``intersect_two_ranges`` compares with ``<=``), so a chunk that
  ends where the excerpt starts enters the ceiling's denominator with all its characters.

The span measures take chroma's convention too (:func:`chroma_metrics`; see
:mod:`ctxeval.metrics.spans.reference`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from rapidfuzz import fuzz, utils

from ctxeval.chunking.chunkers import Chunk
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.metrics.measures import in_span_convention

__all__ = [
    "CONVENTIONS",
    "FUZZY_SCORE",
    "check_convention",
    "chroma_metrics",
    "chroma_place",
    "place_as_chroma",
    "touching",
]

#: The harness's conventions: None (ctxeval's own) or ``"chroma"``.
CONVENTIONS = ("chroma",)

#: chroma's least fuzzy score for a chunk placed by its most similar sentence.
FUZZY_SCORE = 98

_SENTENCE_BREAK = re.compile(r"[.!?]\s*|\n")
_SPACES = re.compile(r"\s+")


def check_convention(convention: object, where: str = "compare_chunkers(convention=...)") -> None:
    """``convention`` is None (ctxeval's own) or ``"chroma"``."""
    if convention is not None and convention not in CONVENTIONS:
        raise InvalidArgumentError(
            f"{where}: unknown convention {convention!r}; give 'chroma' (chroma's "
            "chunking_evaluation) or leave it out for ctxeval's own"
        )


def chroma_metrics(metrics: Iterable[str]) -> list[str]:
    """The measure specs with each span measure in chroma's convention (others as given)."""
    return in_span_convention(metrics, "chroma")


def touching(start: int, end: int, other_start: int, other_end: int) -> bool:
    """chroma's ``intersect_two_ranges`` is not None: the ranges overlap or only touch."""
    return max(start, other_start) <= min(end, other_end)


def chroma_place(text: str, document: str) -> tuple[int, int] | None:
    """Where chroma's ``rigorous_document_search`` places ``text`` in ``document``, as
    ``(start, end)``, or None when it does not find it."""
    target = text[:-1] if text.endswith(".") else text
    if target in document:
        start = document.find(target)
        return start, start + len(target)
    words = _SPACES.sub(" ", target).strip().split()
    found = re.compile(r"\s*".join(re.escape(word) for word in words), re.IGNORECASE).search(
        document
    )
    if found is not None:
        return found.start(), found.end()
    sentence = _most_similar_sentence(target, document)
    if sentence is None:
        return None
    start = document.find(sentence)
    return start, start + len(sentence)


def _most_similar_sentence(target: str, document: str) -> str | None:
    """chroma's last resort: the first of the document's pieces with the highest
    ``token_sort_ratio`` (both texts lowercased, non-alphanumerics as spaces, rounded to a whole
    number), when that is at least :data:`FUZZY_SCORE`."""
    best, best_score = None, -1
    for sentence in _SENTENCE_BREAK.split(document):
        score = fuzz.token_sort_ratio(target, sentence, processor=utils.default_process)
        rounded = round(score)
        if rounded > best_score:
            best, best_score = sentence, rounded
    return best if best_score >= FUZZY_SCORE else None


def place_as_chroma(
    chunks: Sequence[Chunk], documents: Mapping[str, str], name: str = "chunker"
) -> list[Chunk]:
    """Each chunk's span moved to where chroma places its text (:func:`chroma_place`), its text
    the chunker's (what chroma embeds and retrieves): only the span follows chroma, and a chunk
    of only ``.`` keeps its place in the ranking on no characters. A chunk chroma cannot place
    stops the run, as it stops chroma's."""
    placed: list[Chunk] = []
    cache: dict[tuple[str, str], tuple[int, int] | None] = {}
    for number, chunk in enumerate(chunks):
        document = documents[chunk.doc]
        key = (chunk.doc, chunk.text)
        if key not in cache:
            cache[key] = chroma_place(chunk.text, document)
        where = cache[key]
        if where is None:
            raise InvalidArgumentError(
                f"chunker {name}: chroma's convention cannot place chunk {number} of document "
                f"{chunk.doc!r} (at {chunk.start}) in it (not exactly, not with other "
                f"whitespace, no sentence with a fuzzy score of {FUZZY_SCORE}); chroma's own "
                "evaluation stops on it too: leave out --convention chroma"
            )
        placed.append(Chunk(chunk.doc, *where, chunk.text))
    return placed
