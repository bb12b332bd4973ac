"""``ctxeval chunking`` with the semantic chunkers, offline with WordLlama; without it, the
install hint and exit code 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.chunking import parse_chunker

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
SEMANTIC = "semantic(percentile=95)"
CLUSTER = "cluster(max_tokens=200)"


def test_semantic_chunkers_through_the_command_line(tmp_path: Path) -> None:
    pytest.importorskip("wordllama")
    out = tmp_path / "out"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, "--chunker", f"s={SEMANTIC}", "--chunker", f"c={CLUSTER}",
        "-k", "3", "--out-dir", out, "--n-resamples", "200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "context_recall@3" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    specs = {name: run["spec"] for name, run in summary["chunkers"].items()}
    assert specs == {
        "s": "semantic(percentile=95, buffer=1, embedder='wordllama')",
        "c": "cluster(max_tokens=200, piece_tokens=50, embedder='wordllama')",
    }
    # The runs' chunks are the chunkers' spans (chunked here again: deterministic), their
    # texts the documents'.
    documents = {p.stem: p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    for name, spec in (("s", SEMANTIC), ("c", CLUSTER)):
        chunker = parse_chunker(spec)
        expected = {
            (doc, c.start, c.end) for doc, text in documents.items() for c in chunker.chunk(text)
        }
        assert summary["chunkers"][name]["statistics"]["chunks"] == len(expected)
        for line in (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for text, span in zip(
                record["retrieved_context"], record["retrieved_spans"], strict=True
            ):
                assert (span["doc"], span["start"], span["end"]) in expected
                assert text == documents[span["doc"]][span["start"] : span["end"]]


def test_without_wordllama_the_install_hint_and_exit_2(tmp_path: Path) -> None:
    fake = tmp_path / "site"
    (fake / "wordllama").mkdir(parents=True)
    (fake / "wordllama" / "__init__.py").write_text("raise ImportError('not installed')\n")
    path = os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH")]))
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, "--chunker", "a=fixed(words=100)", "--chunker",
        f"s={SEMANTIC}", "-k", "3", "--out-dir", tmp_path / "o", env={"PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "the 'wordllama' embedder needs wordllama: pip install 'ctxeval[dense]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o" / "summary.json").exists()
