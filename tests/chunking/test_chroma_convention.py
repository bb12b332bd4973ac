"""chroma's convention for the span ceiling and attribution (``convention="chroma"``), and the
harness without retrieval (``retriever=None``), on hand-built cases.

The expected values come from a readable re-statement of chroma's rules written here (not
chroma's code): a chunk is placed at the first occurrence of its text with a trailing '.'
dropped, and a chunk counts for an excerpt when their ranges intersect or only touch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxeval.chunking import ChunkingWarning, compare_chunkers
from ctxeval.chunking.chroma import chroma_metrics, chroma_place, place_as_chroma, touching
from ctxeval.chunking.chunkers import Chunk
from ctxeval.foundation.errors import InvalidArgumentError

Span = tuple[int, int]


# ---- chroma's rules, said plainly -----------------------------------------------------------


def placed(text: str, document: str) -> Span:
    """Where chroma puts a chunk whose text is in the document: drop one trailing '.', then the
    first occurrence."""
    if text.endswith("."):
        text = text[:-1]
    start = document.index(text)
    return start, start + len(text)


def union(spans: Sequence[Span]) -> set[int]:
    return {i for start, end in spans for i in range(start, end)}


def precision_omega(document: str, chunk_texts: Sequence[str], excerpts: Sequence[Span]) -> float:
    """chroma's per-question precision Ω: chunks touching (or overlapping) any excerpt, the
    excerpts' characters inside them over the characters of them and of the excerpts."""
    spans = [placed(text, document) for text in chunk_texts]
    near = [(s, e) for s, e in spans if any(max(s, a) <= min(e, b) for a, b in excerpts)]
    gold, chunks = union(excerpts), union(near)
    if not near:
        return 0.0
    return len(gold & chunks) / len(gold | chunks)


def spans(excerpts: Sequence[Span]) -> list[dict[str, object]]:
    return [{"doc": "d", "start": a, "end": b} for a, b in excerpts]


def splitter(*texts: str):
    """A chunker returning these texts (located in the document by the harness)."""
    return lambda document: [t for t in texts if t in document]


def ceilings(document: str, excerpts: Sequence[Span], texts: Sequence[str], **options):
    """The span ceiling of one question under ctxeval's default and under chroma's."""
    questions = [{"id": "q", "question": "q", "excerpts": spans(excerpts)}]
    chunkers = {"it": splitter(*texts), "whole": lambda text: [(0, len(text))]}
    found = {}
    for convention in (None, "chroma"):
        outcome = compare_chunkers(
            {"d": document}, questions, chunkers, retriever=None, convention=convention, **options
        )
        found[convention] = outcome.ceilings["it"].attribution.span_ceiling
    return found[None], found["chroma"]


# ---- the three quirks, one case each ----------------------------------------------------------


def test_a_chunk_only_touching_the_excerpt_counts_under_chroma() -> None:
    document = "alpha beta gamma delta epsilon zeta"
    excerpt = (11, 22)  # "gamma delta"
    texts = ["alpha beta", "gamma delta", "epsilon zeta"]  # [0:10], [11:22], [23:35]
    # The neighbours end at 10 and start at 23: no touch. Default and chroma agree: 1.0.
    assert ceilings(document, [excerpt], texts) == (1.0, 1.0)
    # Chunks that include the separating spaces end at 11 and start at 22: they touch.
    document2 = "alpha beta |gamma delta| epsilon zeta"
    excerpt2 = (12, 23)  # "gamma delta"
    texts2 = ["alpha beta |", "gamma delta", "| epsilon zeta"]  # [0:12], [12:23], [23:37]
    default, chroma = ceilings(document2, [excerpt2], texts2)
    assert default == 1.0
    assert chroma == pytest.approx(11 / 37)
    assert chroma == pytest.approx(precision_omega(document2, texts2, [excerpt2]))


def test_a_repeated_chunk_is_placed_at_the_first_occurrence_under_chroma() -> None:
    document = "red fox. red fox. blue sky."
    excerpt = (9, 16)  # the second "red fox"
    texts = ["red fox.", "red fox.", "blue sky."]
    default, chroma = ceilings(document, [excerpt], texts)
    assert default == pytest.approx(7 / 8)  # the second chunk [9:17] holds it
    assert chroma == 0.0  # both "red fox" chunks placed at [0:7]: none touches [9:16]
    assert chroma == precision_omega(document, texts, [excerpt])


def test_a_trailing_period_is_dropped_before_placing_under_chroma() -> None:
    document = "Cats purr. Dogs bark."
    excerpt = (0, 10)  # "Cats purr."
    texts = ["Cats purr.", "Dogs bark."]
    default, chroma = ceilings(document, [excerpt], texts)
    assert default == 1.0
    assert chroma == pytest.approx(9 / 10)  # placed at [0:9]; "Dogs bark" [11:20] is apart
    assert chroma == pytest.approx(precision_omega(document, texts, [excerpt]))


def test_touching_and_placing_directly() -> None:
    assert touching(0, 5, 5, 9)
    assert touching(5, 9, 0, 5)
    assert touching(2, 3, 0, 9)
    assert not touching(0, 4, 5, 9)
    document = "One two.\nThree  four five. Six!"
    assert chroma_place("One two.", document) == (0, 7)
    assert chroma_place("three four", document) == (9, 20)  # other case and whitespace
    assert chroma_place("THREE four\nfive.", document) == (9, 25)
    assert chroma_place("ab cd", "xx abcd") == (3, 7)  # between words, any whitespace or none
    # The last resort: the most similar "sentence" by token_sort_ratio >= 98.
    assert chroma_place("five four three", "x. three  four five! y") == (3, 19)
    assert chroma_place("nothing like it at all", document) is None
    # Only the span moves: the text stays the chunker's, its '.' too. A chunk of only '.' is
    # placed on no characters at the document's start ('' is found at 0), and kept.
    chunks = [Chunk("d", 7, 8, "."), Chunk("d", 0, 8, "One two."), Chunk("d", 27, 31, "Six!")]
    assert place_as_chroma(chunks, {"d": document}) == [
        Chunk("d", 0, 0, "."),
        Chunk("d", 0, 7, "One two."),
        Chunk("d", 27, 31, "Six!"),
    ]


def test_a_chunk_chroma_cannot_place_stops_with_the_chunk_named() -> None:
    # Not reachable through the harness (a chunk's text is its document's), but place_as_chroma
    # takes any chunks: one whose text is nowhere in its document is named, never guessed.
    chunks = [Chunk("d", 0, 7, "One two"), Chunk("d", 9, 14, "zebra quagga okapi")]
    with pytest.raises(
        InvalidArgumentError, match=r"cannot place chunk 1 of document 'd' \(at 9\)"
    ):
        place_as_chroma(chunks, {"d": "One two.\nThree four five."}, name="mine")


def test_the_span_measures_take_chroma_convention() -> None:
    assert chroma_metrics(["context_recall", "span_iou", "span_recall@5"]) == [
        "context_recall",
        "span_iou(convention='chroma')",
        "span_recall(convention='chroma')@5",
    ]


# ---- equality with the plain statement on many documents --------------------------------------

_WORDS = st.sampled_from(["red", "fox", "sky", "Cats", "purr"])
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=4).map(lambda ws: " ".join(ws) + ".")


# Random tiny corpora are what the harness's checks warn of (documents shorter than the
# target, identical chunkings); tests/chunking/test_checks.py tests those warnings.
@pytest.mark.filterwarnings("ignore::ctxeval.chunking.checks.ChunkingWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sentences=st.lists(_SENTENCE, min_size=2, max_size=10),
    words=st.integers(1, 6),
    overlap=st.integers(0, 3),
    picks=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 30)), min_size=1, max_size=3),
)
def test_chroma_ceiling_equals_the_plain_statement(
    sentences: list[str], words: int, overlap: int, picks: list[tuple[int, int]]
) -> None:
    document = " ".join(sentences)
    excerpts = []
    for start, size in picks:
        start = start % (len(document) - 1)
        end = min(len(document), start + size)
        if document[start:end].strip():
            excerpts.append((start, end))
    if not excerpts:
        return
    spec = f"fixed(words={words}, overlap={min(overlap, words - 1)})"
    questions = [{"id": "q", "question": "q", "excerpts": spans(excerpts)}]
    outcome = compare_chunkers(
        {"d": document}, questions, {"a": spec, "b": "fixed(words=50)"}, retriever="none",
        convention="chroma",
    )  # fmt: skip
    from ctxeval.chunking import parse_chunker

    texts = [c.text for c in parse_chunker(spec).chunk(document, "d")]
    expected = precision_omega(document, texts, excerpts)
    assert outcome.ceilings["a"].attribution.span_ceiling == pytest.approx(expected, abs=1e-12)


# ---- without retrieval ------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
CORPUS, QUESTIONS = ROOT / "fixtures" / "corpus", ROOT / "fixtures" / "questions.jsonl"
TWO = {"fixed": "fixed(words=100)", "sentences": "sentences(n=3)"}


def test_without_retrieval_the_ceilings_are_those_of_a_retrieval_run(tmp_path: Path) -> None:
    bare = compare_chunkers(CORPUS, QUESTIONS, TWO, retriever=None, out_dir=tmp_path / "none")
    assert bare.runs == {}
    assert bare.comparison is None
    assert bare.verdict is None
    run = compare_chunkers(CORPUS, QUESTIONS, TWO, k=[3], n_resamples=50)
    for name in TWO:
        assert bare.ceilings[name].attribution.span_ceiling == pytest.approx(
            run.runs[name].attribution.span_ceiling, abs=1e-15
        )
        assert bare.ceilings[name].statistics == run.runs[name].statistics
    assert sorted(p.name for p in (tmp_path / "none").iterdir()) == ["summary.json"]
    summary = bare.summary()
    assert summary["verdict"] is None
    assert summary["comparison"] is None
    assert "no runs were evaluated" in summary["note"]
    assert set(summary["chunkers"]["fixed"]["ceilings"]) == {
        "rule",
        "ceiling_recall",
        "ceiling_span_iou",
    }
    assert bare.attribution_text().startswith("No retrieval")


def test_the_default_is_unchanged_by_the_new_options() -> None:
    run = compare_chunkers(CORPUS, QUESTIONS, TWO, k=[3], n_resamples=50)
    summary = run.summary()
    assert summary["convention"] is None  # as without retrieval: the key is always there
    assert summary["metrics"][-1] == "span_iou"
    assert "chroma" not in run.attribution_text()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"report": "r.html"}, "report"),
        ({"baseline": "fixed"}, "baseline"),
        ({"primary": "span_iou"}, "primary"),
        ({"compare_metrics": ["span_iou"]}, "compare_metrics"),
    ],
)
def test_without_retrieval_options_needing_runs_are_refused(options: dict, named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(f"{named} need")):
        compare_chunkers(CORPUS, QUESTIONS, TWO, retriever=None, **options)


def test_bad_conventions_and_mixes_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown convention 'chromadb'"):
        compare_chunkers(CORPUS, QUESTIONS, TWO, convention="chromadb")
    with pytest.raises(InvalidArgumentError, match="cannot be one of several"):
        compare_chunkers(CORPUS, QUESTIONS, TWO, retriever={"a": "bm25", "b": None})


def test_with_retrieval_the_runs_see_chromas_chunks_and_span_measures() -> None:
    document = "red fox. red fox. blue sky."
    questions = [{"id": "q", "question": "fox", "excerpts": spans([(9, 16)])}]
    chunkers = {"it": splitter("red fox.", "red fox.", "blue sky."), "whole": "fixed(words=50)"}
    with pytest.warns(ChunkingWarning, match=r"chunker whole .*1 of 1 documents"):
        outcome = compare_chunkers(
            {"d": document},
            questions,
            chunkers,
            retriever=lambda question, chunks: list(range(len(chunks))),
            k=[3],
            primary="span_iou",
            compare_metrics=["span_iou"],
            n_resamples=20,
            convention="chroma",
        )
    run = outcome.runs["it"]
    placed_spans = [(s["start"], s["end"]) for s in run.records[0]["retrieved_spans"]]
    assert placed_spans == [(0, 7), (0, 7), (18, 26)]  # chroma's places, not the chunker's
    # The retrievers and the text measures see the chunker's texts, '.' and all.
    assert run.records[0]["retrieved_context"] == ["red fox.", "red fox.", "blue sky."]
    assert run.result.aggregate["span_iou(convention='chroma')@3"] == 0.0
    assert "span_iou@3" not in run.result.aggregate
    assert run.attribution.span_ceiling == 0.0
    assert outcome.summary()["convention"] == "chroma"
    assert outcome.verdict is not None


def test_under_chroma_the_retrievers_and_context_recall_see_the_chunkers_text() -> None:
    # chroma embeds and retrieves the chunker's texts; only the spans are its placements. With
    # exact matching, "Cats purr." matches the excerpt "Cats purr." (it would not as "Cats purr").
    document = "Cats purr. Dogs bark."
    questions = [{"id": "q", "question": "cats", "excerpts": spans([(0, 10)])}]
    seen: list[list[str]] = []

    def retriever(question: str, chunks: list[Chunk]) -> list[int]:
        seen.append([chunk.text for chunk in chunks])
        return list(range(len(chunks)))

    outcome = compare_chunkers(
        {"d": document},
        questions,
        {"it": splitter("Cats purr.", "Dogs bark."), "one": splitter(document)},
        retriever=retriever,
        k=[1],
        matching="exact-chunk",
        n_resamples=20,
        convention="chroma",
    )
    assert seen[0] == ["Cats purr.", "Dogs bark."]  # the chunker "it" comes first
    run = outcome.runs["it"]
    assert run.result.aggregate["context_recall@1"] == 1.0
    assert run.records[0]["retrieved_spans"][0] == {"doc": "d", "start": 0, "end": 9}
    # span IoU of [0:9] against [0:10]: 9 / 10, chroma's.
    assert run.result.aggregate["span_iou(convention='chroma')@1"] == pytest.approx(0.9)
    assert run.attribution.ceiling == 1.0  # "Cats purr." matches as written
