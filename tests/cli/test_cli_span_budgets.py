"""Span measures at a budget under --budget-policy truncate, through the real entry point."""

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
