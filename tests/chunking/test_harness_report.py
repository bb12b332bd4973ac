"""The harness's HTML report: its chunking section, and a real headless browser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxeval.chunking import compare_chunkers
from ctxeval.chunking.report import harness_report, write_harness_report

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def outcome():
    return compare_chunkers(
        ROOT / "fixtures" / "corpus",
        ROOT / "fixtures" / "questions.jsonl",
        {"fixed": "fixed(words=100, overlap=10)", "sentences": "sentences(n=3)"},
        k=[1, 5, 10],
        n_resamples=200,
    )


@pytest.fixture(scope="module")
def grid():
    """The README's grid: three chunkers x BM25, dense and their fusion, at budgets."""
    return compare_chunkers(
        ROOT / "fixtures" / "corpus",
        ROOT / "fixtures" / "questions.jsonl",
        {
            "fixed": "fixed(words=100, overlap=10)",
            "sentences": "sentences(n=3)",
            "paragraphs": "paragraphs(max_words=100)",
        },
        retriever={"bm25": "bm25", "dense": "dense", "hybrid": "rrf('bm25', 'dense')"},
        k=["100w", "800w"],
        n_resamples=200,
    )


def test_the_chunking_section_comes_first_with_its_table_and_plots(outcome) -> None:
    page = harness_report(outcome)
    assert page.index("<h2>Chunkings</h2>") < page.index("<h2>Comparison</h2>")
    section = page[page.index("<h2>Chunkings</h2>") : page.index("<h2>Comparison</h2>")]
    # chunk sizes, recall against context, attribution bars
    assert section.count("<figure") == section.count("<svg ") == 3
    fixed = outcome.runs["fixed"]
    assert f"<td>{fixed.statistics['chunks']}</td>" in section
    assert f"{fixed.attribution.ceiling:.4f}" in section
    assert f"{fixed.context[10]['words']:.1f}" in section
    # The comparison report follows, with the queries read from the runs' records.
    assert "Queries where the runs disagree most" in page
    assert "Ground truth" in page
    assert page.count("<script") == 1  # the per-query table's, inline: nothing fetched


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_harness_report_in_a_headless_browser(grid, tmp_path: Path) -> None:
    outcome = grid
    sync_api = pytest.importorskip("playwright.sync_api")
    path = write_harness_report(tmp_path / "report.html", outcome)
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            figures = page.evaluate(
                "Array.from(document.querySelectorAll('figure svg'))"
                ".map(s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height])"
            )
            headings = page.evaluate(
                "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)"
            )
            overflowing = page.evaluate(
                "Array.from(document.querySelectorAll('details.panel, .wide'))"
                ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText.slice(0, 40))"
            )
            page_width = page.evaluate("document.documentElement.scrollWidth")
            verdict = page.evaluate(
                "(() => { const p = document.querySelector('details.panel');"
                " return [p.innerText, p.scrollWidth, p.clientWidth]; })()"
            )
        finally:
            browser.close()
    assert errors == []
    # three chunking plots, then the comparison's: every figure is drawn, none wider than
    # the page
    assert len(figures) == path.read_text(encoding="utf-8").count("<svg ") >= 4
    assert all(100 < width <= 1280 and height > 100 for width, height in figures)
    assert headings[:4] == ["Verdict", "What was compared", "Chunkings", "Comparison"]
    text, scroll_width, width = verdict
    # The verdict opens the page, a sentence per cut-off, and fits the page's width.
    for standing in outcome.verdict.of(""):
        assert standing.sentence(outcome.verdict.primary) in text
    assert scroll_width <= width
    # Nothing is clipped or scrolls sideways at 1,280 px: tables wrap to fit.
    assert overflowing == []
    assert page_width <= 1280


def test_the_note_says_when_the_numbers_are_chromas_convention(outcome) -> None:
    # Under --convention chroma the span columns and the span ceiling are chroma's: the note
    # says so, as the terminal's ceilings table does; the default's note does not.
    chroma = compare_chunkers(
        ROOT / "fixtures" / "corpus",
        ROOT / "fixtures" / "questions.jsonl",
        {"fixed": "fixed(words=100, overlap=10)", "sentences": "sentences(n=3)"},
        k=[5],
        n_resamples=20,
        convention="chroma",
    )
    said = "convention: chroma's chunking_evaluation (span measures, span ceiling, attribution:"
    page = harness_report(chroma)
    section = page[page.index("<h2>Chunkings</h2>") : page.index("<h2>Comparison</h2>")]
    assert said in section
    assert "convention:" not in harness_report(outcome)


def test_token_budgets_name_their_tokenizer_in_the_summary_and_the_report(outcome) -> None:
    # -k 200t counts with --token-counter: the summary and the report's note say which; with
    # no token budget neither mentions one.
    def words(text: str) -> int:
        return len(text.split())

    counted = compare_chunkers(
        ROOT / "fixtures" / "corpus",
        ROOT / "fixtures" / "questions.jsonl",
        {"fixed": "fixed(words=100, overlap=10)", "sentences": "sentences(n=3)"},
        k=["200t"],
        n_resamples=20,
        token_counter=words,
    )
    assert counted.summary()["token_counter"] == "words"
    assert "; tokens counted by words;" in harness_report(counted)
    assert "token_counter" not in outcome.summary()
    assert "tokens counted by" not in harness_report(outcome)
