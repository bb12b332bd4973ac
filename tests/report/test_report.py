"""The HTML report: content, escaping, and a real headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ctxeval import (
    ExactChunkMatch,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.comparison import compare
from ctxeval.report import html_report, write_html_report
from ctxeval.results import EvaluationResult

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
NAMES = ("fixed-100", "sentence-3", "paragraph")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def evaluated() -> tuple[dict, dict]:
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    datasets = {name: RUNS / f"{name}.jsonl" for name in NAMES}
    results = {
        name: RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 3, 5, 10])
        for name, path in datasets.items()
    }
    return results, datasets


def test_report_has_every_section(evaluated: tuple[dict, dict], tmp_path: Path) -> None:
    results, datasets = evaluated
    report = compare(results, metrics=["context_recall@10", "ndcg@10"], n_resamples=500)
    page = html_report(report, results, datasets=datasets)
    for name in NAMES:
        assert name in page
    # curves, first rank, scatter: drawn as inline SVG, no image fetched or embedded
    assert page.count("<figure") == page.count("<svg ") == 3
    assert "<img" not in page
    assert "Queries where the runs disagree most" in page
    assert "Ground truth" in page
    assert f"{report.row('ndcg@10').means['fixed-100']:.4f}" in page
    # Self-contained: one inline script, nothing fetched.
    assert page.count("<script") == 1
    assert "<script>" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_text_from_the_data_is_escaped(tmp_path: Path) -> None:
    records = [
        {
            "id": f"q{i}",
            "question": "<script>alert(1)</script>",
            "retrieved_context": ["<b>bold</b> answer text here", "other"],
            "ground_truth_context": ["answer text here <i>"],
        }
        for i in range(4)
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    results = {
        "a": RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 2]),
        "b": RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 2]),
    }
    page = html_report(compare(results, n_resamples=100), results, datasets={"a": path, "b": path})
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_report_in_a_headless_browser(evaluated: tuple[dict, dict], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    results, datasets = evaluated
    report = compare(results, n_resamples=500)
    page_path = write_html_report(tmp_path / "report.html", report, results, datasets=datasets)
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            figures = page.evaluate(
                "Array.from(document.querySelectorAll('figure svg'))"
                ".map(s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height,"
                " s.querySelectorAll('circle, rect, polyline').length])"
            )
            title = page.title()
            headings = page.evaluate(
                "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)"
            )
            # The per-query table's script: filter by text, keep the differing queries, sort.
            count = page.locator("details:has(table.queries) .count")
            shown_at_first = count.text_content()
            page.fill("details:has(table.queries) input[type=search]", "q00")
            filtered = count.text_content()
            page.fill("details:has(table.queries) input[type=search]", "")
            page.check("details:has(table.queries) input[type=checkbox]")
            differing = count.text_content()
            page.click("table.queries th >> text=query")
            first_ids = page.evaluate(
                "Array.from(document.querySelectorAll('table.queries tbody tr'))"
                ".slice(0, 3).map(r => r.cells[0].textContent)"
            )
            # "save as SVG": the figure as a file of its own (the download itself prevented)
            saved = page.evaluate(
                """async () => {
                  const link = document.querySelector('figure a.save');
                  link.addEventListener('click', e => e.preventDefault());
                  link.click();
                  const text = await (await fetch(link.href)).text();
                  return [link.getAttribute('download'), link.href.slice(0, 5), text];
                }"""
            )
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    queries = report.alignment.queries
    assert shown_at_first == f"{queries} of {queries} queries shown"
    assert filtered == f"9 of {queries} queries shown"  # q001 ... q009
    differ = sum(
        len({v for v in (report.values["context_recall@10"][run][i] for run in report.runs)}) > 1
        for i in range(queries)
    )
    assert differing == f"{differ} of {queries} queries shown"
    assert first_ids == ["q001", "q002", "q003"]
    # Each figure is drawn at a readable size, with its marks.
    assert len(figures) == 3
    assert all(width > 100 and height > 100 and marks > 10 for width, height, marks in figures)
    name, scheme, text = saved
    assert (name, scheme) == ("metrics-at-every-cut-off.svg", "blob:")
    assert text.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox=')
    assert text.count("<polyline") >= 3
    assert text.endswith("</svg>")
    assert title == "ctxeval: retrieval comparison"
    assert headings[:3] == ["What was compared", "Comparison", "Metrics at every cut-off"]
    assert (tmp_path / "report.png").stat().st_size > 10_000


# -- judging the worst queries as the run did --------------------------------------------------
def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _columns(page: str) -> dict[tuple[str, str], tuple[str, list[bool]]]:
    """{(query id, run): (the note above the chunks, whether each shown chunk is marked)}."""
    worst = page[page.index("<h2>Queries where the runs disagree most") :]
    found = {}
    for block in re.split(r'<details class="query"(?: open)?>', worst)[1:]:
        qid = re.match(r"<summary>([^ <]+)", block).group(1)  # type: ignore[union-attr]
        for column in block.split('<div class="col">')[1:]:
            run = re.match(r"<h4>([^ <]+)", column).group(1)  # type: ignore[union-attr]
            note = re.search(r'<p class="note">(.*?)</p>', column)
            marks = [hit == " hit" for hit in re.findall(r'<div class="chunk( hit)?">', column)]
            found[(qid, run)] = (note.group(1) if note else "", marks)
    return found


SENTENCE = "the committee approved the new budget for the coming fiscal year in march"
NEAR = "the committee approved the new budget for the coming fiscal year in april"  # ROUGE-L 0.92


def test_exact_chunk_report_marks_exactly_what_the_metric_credited(tmp_path: Path) -> None:
    rng = random.Random(5)
    filler = [f"unrelated passage number {i} about other things" for i in range(20)]
    records = []
    for i in range(12):
        chunks = rng.sample(filler, 3)
        if i % 3 == 0:
            chunks[rng.randrange(3)] = NEAR  # a near copy: a hit for ROUGE, a miss for exact
        if i % 2 == 0:
            chunks[rng.randrange(3)] = SENTENCE
        records.append(
            {"id": f"q{i:02d}", "retrieved_context": chunks, "ground_truth_context": [SENTENCE]}
        )
    path = _write(tmp_path / "run.jsonl", records)
    metrics = [PrecisionRecallF1("exact-chunk"), RankedRetrievalMetrics("exact-chunk")]
    results = {
        name: RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 3]) for name in ("a", "b")
    }
    assert results["a"].summary["strategy"] == "exact-chunk"
    report = compare(results, metrics=["context_precision@3", "ndcg@3"], n_resamples=50)
    page = html_report(
        report, results, datasets={"a": path, "b": path}, focus="context_precision@3", worst=12
    )
    columns = _columns(page)
    assert len(columns) == 24
    by_id = {record["id"]: record for record in records}
    rows = {row["id"]: row for row in results["a"].per_query}
    for (qid, _), (note, marks) in columns.items():
        chunks = by_id[qid]["retrieved_context"]
        assert note == "matched with exact-chunk"
        assert marks == [chunk == SENTENCE for chunk in chunks]
        assert sum(marks) == rows[qid]["context_precision@3"] * 3
    assert any(NEAR in record["retrieved_context"] for record in records)
    assert "ROUGE-L" not in page


def test_report_reads_a_dataset_with_custom_field_names(tmp_path: Path) -> None:
    records = [
        {"qid": f"q{i}", "question": f"question {i}", "chunks": [SENTENCE, "other"], "gold": [NEAR]}
        for i in range(4)
    ]
    path = _write(tmp_path / "custom.jsonl", records)
    fields = {"retrieved": "chunks", "ground_truth": "gold", "id": "qid"}
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    results = {
        name: RetrievalEvaluator(path, metrics, fields=fields, workers=1).run(k=[1, 2])
        for name in ("a", "b")
    }
    assert results["a"].summary["fields"] == fields
    page = html_report(compare(results, n_resamples=50), results, datasets={"a": path, "b": path})
    assert "Ground truth" in page
    assert "question 3" in page
    marks = _columns(page)
    assert marks[("q0", "a")] == ("matched with rouge-chunk(threshold=0.7)", [True, False])
    # the same through the command line, whose --report used to fail after the comparison
    target = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "ctxeval", "compare", path, path, "--retrieved-field", "chunks",
         "--ground-truth-field", "gold", "--id-field", "qid", "-k", "2", "--n-resamples", "50",
         "--report", target],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "question 3" in target.read_text(encoding="utf-8")


def _shared_words(retrieved: Sequence[str], ground_truth: Sequence[str]) -> list[list[bool]]:
    return [[bool(set(r.split()) & set(g.split())) for g in ground_truth] for r in retrieved]


def test_a_custom_strategy_is_not_judged_again(tmp_path: Path) -> None:
    records = [
        {"id": f"q{i}", "retrieved_context": [SENTENCE, "other"], "ground_truth_context": [NEAR]}
        for i in range(3)
    ]
    path = _write(tmp_path / "run.jsonl", records)
    metrics = [PrecisionRecallF1(_shared_words), RankedRetrievalMetrics(_shared_words)]
    results = {
        name: RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 2]) for name in ("a", "b")
    }
    assert results["a"].summary["strategy"] is None
    page = html_report(compare(results, n_resamples=50), results, datasets={"a": path, "b": path})
    for note, marks in _columns(page).values():
        assert note.startswith("not judged again")
        assert marks == [False, False]
    assert SENTENCE in page  # the texts are shown, unmarked


def test_the_summary_records_how_to_judge_again(tmp_path: Path) -> None:
    text = [{"id": "q", "retrieved_context": ["a b"], "ground_truth_context": ["a b"]}]
    ids = [{"id": "q", "retrieved_ids": ["a"], "relevant_ids": ["a"]}]
    strategy = RougeChunkMatch(threshold=0.5, tokenizer="unicode")
    summary = RetrievalEvaluator(text, [PrecisionRecallF1(strategy)], workers=1).run().summary
    assert summary["strategy"] == "rouge-chunk(threshold=0.5, tokenizer='unicode')"
    assert summary["fields"] == {}
    summary = RetrievalEvaluator(ids, workers=1).run().summary
    assert summary["strategy"] is None  # ID mode: nothing to match
    mixed = [PrecisionRecallF1("exact-chunk"), RankedRetrievalMetrics("rouge-chunk")]
    assert RetrievalEvaluator(text, mixed, workers=1).run().summary["strategy"] is None
    result = RetrievalEvaluator(
        text, fields={"retrieved": "retrieved_context", "mode": "text"}, workers=1
    ).run()
    assert result.summary["fields"] == {"retrieved": "retrieved_context", "mode": "text"}
    loaded = EvaluationResult.load(result.save(tmp_path / "r.jsonl"))
    assert loaded.summary["fields"] == result.summary["fields"]
    assert loaded.summary["strategy"] == "rouge-chunk(threshold=0.7)"


def test_a_match_below_the_first_chunks_is_shown_with_its_rank(tmp_path: Path) -> None:
    # Run a finds the answer at rank 5 of 7: the panel shows ranks 1-3, a gap, rank 5 marked,
    # and what is left; run b at rank 1.
    filler = [f"unrelated passage number {i} about other things" for i in range(7)]
    deep = [*filler[:4], SENTENCE, *filler[4:6]]
    records = {
        "a": [{"id": "q0", "retrieved_context": deep, "ground_truth_context": [SENTENCE]}],
        "b": [
            {
                "id": "q0",
                "retrieved_context": [SENTENCE, *filler[:2]],
                "ground_truth_context": [SENTENCE],
            }
        ],
    }
    results = {}
    for name, rows in records.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        results[name] = RetrievalEvaluator(
            path, [PrecisionRecallF1(ExactChunkMatch())], workers=1
        ).run(k=[10])
    datasets = {name: tmp_path / f"{name}.jsonl" for name in records}
    page = html_report(compare(results, n_resamples=20), results, datasets=datasets)
    marks = _columns(page)
    assert marks[("q0", "a")][1] == [False, False, False, True]
    assert marks[("q0", "b")][1] == [True, False, False]
    column = page[page.index("<h4>a") :]
    assert '<div class="gap">... 1 not relevant ...</div>' in column
    assert f'<div class="chunk hit">5. {SENTENCE}</div>' in column
    assert '<div class="gap">... 2 more, not relevant</div>' in column
