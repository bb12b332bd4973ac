"""The harness's progress: every step with its total, a function's counts, a chunking that moves
within one document, and what an interruption leaves on disk. No test looks at times."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ctxeval.chunking import (
    HarnessInterrupted,
    attribute,
    chunk_corpus,
    compare_chunkers,
    load_questions,
    parse_chunker,
)
from ctxeval.foundation.progress import Progress
from ctxeval.matching.rouge.strategies import RougeChunkMatch
from ctxeval.retrieval.dense import DenseRetriever
from ctxeval.retrieval.embedders import EMBED_BATCH, EmbeddingCache, FunctionEmbedder

CORPUS = {
    "animals": "Cats sleep all day. Dogs bark at night. Fish swim in tanks. Birds sing at dawn.",
    "weather": "Rain falls in spring. Snow covers the hills in winter. Summer is dry and hot.",
}
QUESTIONS = [
    {"id": "q1", "question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]},
    {"id": "q2", "question": "What covers the hills?", "excerpts": ["Snow covers the hills"]},
    {"id": "q3", "question": "When do birds sing?", "excerpts": ["Birds sing at dawn."]},
]
CHUNKERS = {"s": "sentences(n=1)", "w": "fixed(words=4)"}
CHARACTERS = sum(map(len, CORPUS.values()))


def _letters(texts: list[str]) -> np.ndarray:
    return np.array([[t.lower().count(c) + 0.5 for c in "abcdefghij"] for t in texts])


def test_every_step_shows_its_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compare_chunkers(
        CORPUS, QUESTIONS, CHUNKERS, retriever=DenseRetriever(_letters), k=[1, 2],
        n_resamples=50, out_dir=tmp_path / "out", report=tmp_path / "report.html", progress=True,
    )  # fmt: skip
    lines = capsys.readouterr().err.splitlines()
    full = r" \[#+\] 100%  "
    expected = [
        r"loading the corpus and questions: done in ",
        *[
            pattern
            for name in CHUNKERS
            for pattern in (
                rf"chunking {name}{full}{CHARACTERS:,}/{CHARACTERS:,} characters, done in ",
                rf"embedding {name}{full}(\d+)/\1 texts, done in ",
                rf"indexing {name}: done in ",
                rf"retrieving {name}{full}3/3 questions, done in ",
                rf"scoring {name}\.jsonl{full}3/3 records, done in ",
                rf"attributing {name}{full}3/3 questions, done in ",
            )
        ],
        r"comparing the runs: done in ",
        r"testing the verdict: done in ",
        rf"writing{full}6/6 files, done in ",
    ]
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.match(f"ctxeval: {pattern}", line), (pattern, line)


def test_silent_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=[1], n_resamples=50)
    assert capsys.readouterr().err == ""


def test_a_function_gets_each_steps_counts_up_to_its_total() -> None:
    seen: list[int] = []
    compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=[1], n_resamples=50, progress=seen.append)
    first = len(CORPUS["animals"])
    # One step after another, each counting from its start up to its total: the characters
    # chunked (document by document), indexing (a step with no count: 1 when done), the
    # questions retrieved, the records scored (one batch), the questions attributed.
    per_chunker = [first, CHARACTERS, 1, 1, 2, 3, 3, 1, 2, 3]
    # Loading before, comparing the runs and testing the verdict after.
    assert seen == [1, *per_chunker, *per_chunker, 1, 1]


def test_chunking_moves_within_one_large_document() -> None:
    text = "Plain words in a row, sentence after sentence. " * 20_000
    for spec in ("fixed(words=100)", "fixed(tokens=50)", "sentences(n=3)"):
        seen: list[int] = []
        chunker = parse_chunker(spec)
        with Progress(callback=seen.append) as bar:
            chunks = chunk_corpus(chunker, {"big": text}, bar)
        assert len(seen) > 2, spec  # it moved before the document's end
        assert seen == sorted(set(seen))
        assert seen[-1] == len(text)
        assert chunks == chunk_corpus(chunker, {"big": text})  # progress changes no chunk


def test_embedding_moves_batch_by_batch_and_gives_the_vectors_of_one_call() -> None:
    texts = [f"text number {i} " + "abcdefghij"[: i % 10] for i in range(EMBED_BATCH * 2 + 5)]
    calls: list[int] = []

    def embed(batch: list[str]) -> np.ndarray:
        calls.append(len(batch))
        return _letters(batch)

    seen: list[int] = []
    totals: list[int] = []

    def bar(total: int) -> Progress:
        totals.append(total)
        return Progress(callback=seen.append, total=total)

    vectors = EmbeddingCache(FunctionEmbedder(embed))(texts, bar)
    assert calls == [EMBED_BATCH, EMBED_BATCH, 5]
    assert totals == [len(texts)]
    assert seen == [EMBED_BATCH, 2 * EMBED_BATCH, len(texts)]
    alone = EmbeddingCache(FunctionEmbedder(_letters))(texts)
    assert np.array_equal(vectors, alone)


def test_attribution_counts_questions() -> None:
    questions = load_questions(QUESTIONS, CORPUS)
    chunks = chunk_corpus(parse_chunker("sentences(n=1)"), CORPUS)
    seen: list[int] = []
    rankings = [[0, 1]] * len(questions)
    attribute(questions, chunks, rankings, RougeChunkMatch(), [1], progress=seen.append)
    assert seen == [1, 1, 1]


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


def test_an_interrupted_report_says_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxeval.chunking.report

    monkeypatch.setattr(ctxeval.chunking.report, "write_harness_report", _interrupt)
    out, report = tmp_path / "out", tmp_path / "report.html"
    with pytest.raises(HarnessInterrupted) as stopped:
        compare_chunkers(
            CORPUS, QUESTIONS, CHUNKERS, k=[1], n_resamples=50, out_dir=out, report=report
        )
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert str(stopped.value) == (
        f"interrupted while writing {report}: wrote {out}/ (2 runs, summary.json); {report} "
        "not written"
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "s.jsonl", "s.result.jsonl", "summary.json", "w.jsonl", "w.result.jsonl",
    ]  # fmt: skip
    json.loads((out / "summary.json").read_text())
    assert not report.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_interruption_before_the_files_says_nothing_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxeval.chunking.harness

    monkeypatch.setattr(ctxeval.chunking.harness, "attribute", _interrupt)
    out = tmp_path / "out"
    with pytest.raises(HarnessInterrupted, match=re.escape("while attributing s: nothing written")):
        compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=[1], n_resamples=50, out_dir=out)
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(HarnessInterrupted, match=r"^interrupted while attributing s$"):
        compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=[1], n_resamples=50)
