"""``ctxeval chunking`` with LLM-token chunkers (fixed and recursive with tokenizer=), offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.chunking import parse_chunker

llama_index_core = pytest.importorskip("llama_index.core")
pytest.importorskip("tiktoken")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
SHIPPED = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"
FIXED = "fixed(tokens=200, tokenizer='cl100k_base')"
RECURSIVE = "recursive(tokens=200, overlap=50, tokenizer='cl100k_base')"


def test_token_chunkers_through_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHIPPED))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    out = tmp_path / "out"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, "--chunker", f"a={FIXED}", "--chunker", f"b={RECURSIVE}",
        "-k", "2", "--out-dir", out, "--n-resamples", "200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "context_recall@2" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    specs = {name: run["spec"] for name, run in summary["chunkers"].items()}
    assert specs == {"a": "fixed(tokens=200, overlap=0, tokenizer='cl100k_base')", "b": RECURSIVE}
    # Each run's chunks are the chunkers' spans of the corpus, their texts the documents'.
    documents = {p.stem: p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    for name, spec in (("a", FIXED), ("b", RECURSIVE)):
        chunker = parse_chunker(spec)
        expected = {
            (doc, c.start, c.end) for doc, text in documents.items() for c in chunker.chunk(text)
        }
        assert summary["chunkers"][name]["statistics"]["chunks"] == len(expected)
        lines = (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 99
        for line in lines:
            record = json.loads(line)
            assert len(record["retrieved_spans"]) == 2
            for text, span in zip(
                record["retrieved_context"], record["retrieved_spans"], strict=True
            ):
                assert (span["doc"], span["start"], span["end"]) in expected
                assert text == documents[span["doc"]][span["start"] : span["end"]]


def test_a_bad_tokenizer_is_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: no encoding file
    missing = ctxeval(
        "chunking", CORPUS, QUESTIONS, "--chunker", "a=fixed(words=100)", "--chunker",
        "b=fixed(tokens=200, tokenizer='o200k_base')", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert missing.returncode == 2
    assert "--chunker b=fixed(tokens=200, tokenizer='o200k_base'): fixed(" in missing.stderr
    assert "o200k_base.tiktoken is not on this machine" in missing.stderr
    assert "Traceback" not in missing.stderr
    unknown = ctxeval(
        "chunking", CORPUS, QUESTIONS, "--chunker", "a=fixed(words=100)", "--chunker",
        "b=recursive(tokens=200, tokenizer='cl100k')", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert unknown.returncode == 2
    assert "unknown tokenizer 'cl100k'; did you mean 'cl100k_base'?" in unknown.stderr
