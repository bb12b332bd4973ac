"""``ctxeval chunking``'s warnings through its real entry point: one line each on stderr, kept
in summary.json, and exit code 0."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import ctxeval


def _sentence(i: int, words: int = 6) -> str:
    return " ".join(f"w{i}x{j}" for j in range(words)) + "."


def _document(first: int, sentences: int) -> str:
    return " ".join(_sentence(first + i) for i in range(sentences))


def test_the_command_line_says_each_warning_on_one_line_and_exits_0(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in {"a": _document(0, 2), "b": _document(10, 2), "c": _document(20, 8)}.items():
        (corpus / f"{name}.txt").write_text(text, encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q", "question": "w0x1", "excerpts": [_sentence(0)]}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    done = ctxeval(
        "chunking", corpus, questions,
        "--chunker", "w6=fixed(words=6)", "--chunker", "s1=sentences(n=1)",
        "--chunker", "big=fixed(words=30)", "-k", "1", "--n-resamples", "10", "--out-dir", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ctxeval: warning:")]
    assert len(lines) == 2
    assert lines[0].startswith(
        "ctxeval: warning: chunker big (fixed(words=30, overlap=0)): 2 of 3 documents (67%)"
    )
    assert lines[1].startswith("ctxeval: warning: chunkers w6 and s1 make the same chunks")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [f"ctxeval: warning: {m}" for m in summary["warnings"]] == lines
