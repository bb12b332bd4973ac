"""Span measures through the real entry point: at a budget under --budget-policy truncate, and
in the tokens of --token-counter (unit='tokens')."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import ctxeval

RECORD = {
    "id": "q1",
    "retrieved_context": ["aaaa bbbb", "cccc dddd eeee"],
    "ground_truth_context": ["dddd"],
}


def test_span_recall_at_a_truncated_budget(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "doc.txt").write_text("aaaa bbbb cccc dddd eeee ffff", encoding="utf-8")
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    common = ["-m", "span_recall", "-m", "span_precision", "-k", "4w", "--corpus", corpus]
    common += ["--format", "json", "--workers", "1"]
    truncated = ctxeval("evaluate", path, *common, "--budget-policy", "truncate")
    assert truncated.returncode == 0, truncated.stderr
    out = json.loads(truncated.stdout)
    # "cccc dddd" of the crossing chunk is fed: its span [10, 19) covers "dddd" [15, 19).
    assert out["aggregate"]["span_recall@4w"] == 1.0
    assert out["aggregate"]["span_precision@4w"] == 4 / 18
    assert out["summary"]["budget_policy"] == "truncate"
    whole = ctxeval("evaluate", path, *common)
    assert whole.returncode == 0, whole.stderr
    assert json.loads(whole.stdout)["aggregate"]["span_recall@4w"] == 0.0


def test_span_unit_tokens_counts_with_the_token_counter(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("alpha beta gamma delta", encoding="utf-8")
    path = tmp_path / "run.jsonl"
    record = {"id": "q", "retrieved_context": ["alpha beta ga"], "ground_truth_context": ["gamma"]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    done = ctxeval(
        "evaluate", path, "-m", "span_recall(unit='tokens')", "--corpus", corpus,
        "--token-counter", "unicode", "--format", "json", "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # R ∩ G = "ga": one unicode token of a text, as many as "gamma" has.
    assert json.loads(done.stdout)["aggregate"]["span_recall(unit='tokens')"] == 1.0
