"""Span measures on the command line: the API's numbers, --corpus, --convention chroma, compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import ctxeval

from ctxeval import RetrievalEvaluator

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
RUN = ROOT / "fixtures" / "runs" / "fixed-100.jsonl"
MEASURES = ["span_iou@5", "span_recall", "span_f1(convention='chroma')@5", "ndcg@5"]


def records(count: int = 40) -> list[dict[str, Any]]:
    lines = RUN.read_text(encoding="utf-8").splitlines()[:count]
    return [json.loads(line) for line in lines]


def test_cli_gives_the_api_numbers(tmp_path: Path) -> None:
    located = RetrievalEvaluator(records(), MEASURES, corpus=CORPUS, workers=1).run(k=[1, 5])
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records()), encoding="utf-8")
    args = [a for m in MEASURES for a in ("-m", m)]
    done = ctxeval(
        "evaluate", path, "--corpus", CORPUS, *args, "-k", "1", "-k", "5", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["aggregate"] == located.aggregate
    assert "spans: 0 given, " in done.stderr
    chroma = ctxeval(
        "evaluate",
        path,
        "--corpus",
        CORPUS,
        "-m",
        "span_iou@5",
        "--convention",
        "chroma",
        "--format",
        "json",
    )
    assert "span_iou(convention='chroma')@5" in json.loads(chroma.stdout)["aggregate"]
    missing = ctxeval("evaluate", path, "--corpus", tmp_path / "nowhere", "-m", "span_iou@5")
    assert missing.returncode == 2
    assert "--corpus" in missing.stderr
    assert "no such file" in missing.stderr
    default = ctxeval("evaluate", path, "--convention", "chroma")
    assert default.returncode == 2
    assert "-m span_iou@5" in default.stderr


def test_cli_compare_span_measures(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    items = records(20)
    first.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    reversed_items = [{**r, "retrieved_context": r["retrieved_context"][::-1]} for r in items]
    second.write_text("".join(json.dumps(r) + "\n" for r in reversed_items), encoding="utf-8")
    done = ctxeval(
        "compare",
        first,
        second,
        "--corpus",
        CORPUS,
        "-m",
        "span_iou@3",
        "--metric",
        "span_iou@3",
        "--n-resamples",
        "200",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert "span_iou@3" in done.stdout
