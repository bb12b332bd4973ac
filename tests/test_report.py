"""The HTML report: content, escaping, and a real headless browser (Debian's chromium)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch
from ctxeval.comparison import compare
from ctxeval.report import html_report, write_html_report

pytest.importorskip("matplotlib")

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
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
    assert page.count('<img src="data:image/png;base64,') == 3  # curves, first rank, scatter
    assert "Worst queries by context_recall@10" in page
    assert "Ground truth" in page
    assert f"{report.row('ndcg@10').means['fixed-100']:.4f}" in page
    assert "<script" not in page  # self-contained, static


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
    import json

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
            images = page.evaluate(
                "Array.from(document.images)"
                ".map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
            )
            title = page.title()
            headings = page.evaluate(
                "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)"
            )
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert len(images) == 3
    assert all(complete and width > 100 and height > 100 for complete, width, height in images)
    assert title == "ctxeval: retrieval comparison"
    assert headings[:2] == ["Comparison", "Plots"]
    assert (tmp_path / "report.png").stat().st_size > 10_000
