"""What the HTML reports say, read back with an HTML parser: what was compared, per-k curves
with bands, the context used, the per-query table led by disagreement, collapsible panels,
ID-mode panels, and the single-run report (API and ``evaluate --report``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ctxeval import (
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.comparison import compare
from ctxeval.comparison.curves import metric_curves
from ctxeval.comparison.queries import context_used
from ctxeval.io.readers import read_records
from ctxeval.records.model import Record
from ctxeval.report import html_report, result_html, write_result_report
from ctxeval.results import EvaluationResult

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
NAMES = ("fixed-100", "paragraph")


class Page(HTMLParser):
    """The parts of a report page the tests read: panel titles, tables (cells as text, and the
    data-v of numbers), figures (inline SVG) and scripts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.panels: list[tuple[str, bool]] = []
        self.tables: list[dict[str, Any]] = []
        self.figures = 0
        self.scripts: list[str] = []
        self._stack: list[str] = []
        self._text: list[str] | None = None
        self._cell: dict[str, Any] | None = None
        self._open_panel = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "details" and a.get("class") == "panel":
            self._open_panel = "open" in a
        if tag == "h2":
            self._text = []
        if tag == "table":
            self.tables.append({"class": a.get("class") or "", "header": [], "rows": []})
        if tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        if tag in ("td", "th"):
            self._cell = {"tag": tag, "text": [], "v": a.get("data-v")}
        if tag == "svg":
            self.figures += 1
        self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._text is not None:
            self.panels.append(("".join(self._text), self._open_panel))
            self._text = None
        if tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell["text"]).strip()
            row = self.tables[-1]["rows"][-1]
            row.append(text if self._cell["v"] is None else (text, float(self._cell["v"])))
            self._cell = None
        if self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell["text"].append(data)
        if self._stack and self._stack[-1] == "script":
            self.scripts.append(data)

    def table(self, cls: str) -> list[list[Any]]:
        found = next(t for t in self.tables if t["class"] == cls)
        return [row for row in found["rows"] if row]


@pytest.fixture(scope="module")
def example() -> tuple[dict, dict]:
    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    datasets = {name: RUNS / f"{name}.jsonl" for name in NAMES}
    results = {
        name: RetrievalEvaluator(path, metrics, workers=1).run(k=[1, 5, 10])
        for name, path in datasets.items()
    }
    return results, datasets


def test_the_comparison_report_says_what_was_compared(example: tuple[dict, dict]) -> None:
    results, datasets = example
    report = compare(results, metrics=["context_recall@10", "ndcg@10"], n_resamples=300, seed=7)
    page = Page(html_report(report, results, datasets=datasets))
    titles = [title for title, _ in page.panels]
    assert titles[:3] == ["What was compared", "Comparison", "Metrics at every cut-off"]
    assert "Queries where the runs disagree most" in titles
    runs = page.table("runs")
    assert runs[0] == [
        "run", "file", "matching", "threshold", "convention", "cut-offs", "queries",
        "context used per query",
    ]  # fmt: skip
    assert runs[1][:7] == [
        "fixed-100", str(datasets["fixed-100"]), "rouge-chunk(threshold=0.7)", "0.7",
        "trec_eval", "1, 5, 10", "99",
    ]  # fmt: skip
    html = html_report(report, results, datasets=datasets)
    assert "seed 7" in html
    assert "300 resamples" in html
    # Nothing fetched: one inline script, figures drawn inline.
    assert len(page.scripts) == 1
    assert "http" not in page.scripts[0]
    assert page.figures == 3
    assert "<img" not in html


def test_the_context_used_counts_the_chunks_and_characters(example: tuple[dict, dict]) -> None:
    results, datasets = example
    records = [r for r in read_records(datasets["paragraph"]) if isinstance(r, Record)]
    used = context_used(results["paragraph"], records)
    top = [r.retrieved[:5] for r in records]
    assert used["5"]["chunks"] == results["paragraph"].summary["mean_k_used"]["5"]
    assert used["5"]["characters"] == pytest.approx(
        sum(sum(map(len, chunks)) for chunks in top) / len(top), rel=1e-15
    )
    assert used["5"]["words"] == pytest.approx(
        sum(sum(len(c.split()) for c in chunks) for chunks in top) / len(top), rel=1e-15
    )
    # A result that records its own context used (size budgets) is taken at its word.
    results["paragraph"].summary["context_used"] = {"5": {"chunks": 4.0, "characters": 9.0}}
    try:
        assert context_used(results["paragraph"], records) == {
            "5": {"chunks": 4.0, "characters": 9.0}
        }
    finally:
        del results["paragraph"].summary["context_used"]
    assert context_used(results["paragraph"]) == {
        k: {"chunks": v} for k, v in results["paragraph"].summary["mean_k_used"].items()
    }


def test_curves_are_centred_on_the_aggregate_with_a_band(example: tuple[dict, dict]) -> None:
    results, _ = example
    curves = metric_curves(results, seed=3, n_resamples=400)
    assert set(curves) == {
        "context_precision", "context_recall", "context_f1", "average_precision",
        "reciprocal_rank", "ndcg", "hit_rate", "precision", "recall",
    }  # fmt: skip
    for measure, by_run in curves.items():
        for run, points in by_run.items():
            assert [p.k for p in points] == [1, 5, 10]
            for p in points:
                assert p.mean == results[run].aggregate[f"{measure}@{p.k}"]
                assert p.low <= p.mean <= p.high
                assert p.low < p.high
    assert metric_curves(results, seed=3, n_resamples=400) == curves


def test_the_per_query_table_leads_with_disagreement(example: tuple[dict, dict]) -> None:
    results, datasets = example
    report = compare(results, metrics=["context_recall@10"], n_resamples=100)
    page = Page(html_report(report, results, datasets=datasets))
    rows = page.table("queries")
    assert rows[0][:5] == ["query", "question", "spread", "mean", "fixed-100"]
    body = rows[1:]
    assert len(body) == 99
    spreads = [row[2][1] for row in body]
    assert spreads == sorted(spreads, reverse=True)
    assert spreads[0] == 1.0
    # Queries where the runs agree come last; among them the lowest mean first.
    agree = [row[3][1] for row in body if row[2][1] == 0]
    assert agree == sorted(agree)
    assert "only where the runs differ" in html_report(report, results, datasets=datasets)


def _id_records(tmp_path: Path, shift: int) -> Path:
    records = [
        {
            "id": f"q{i}",
            "retrieved_ids": [f"d{(i + j + shift) % 6}" for j in range(4)],
            "qrels": {f"d{i % 6}": 2, f"d{(i + 1) % 6}": 1},
        }
        for i in range(6)
    ]
    path = tmp_path / f"ids-{shift}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_id_mode_panels_list_the_retrieved_ids_with_their_relevance(tmp_path: Path) -> None:
    datasets = {"a": _id_records(tmp_path, 0), "b": _id_records(tmp_path, 2)}
    metrics = [IDPrecisionRecallF1(), IDRankedRetrievalMetrics()]
    results = {n: RetrievalEvaluator(p, metrics, workers=1).run(k=[4]) for n, p in datasets.items()}
    page = html_report(compare(results, n_resamples=50), results, datasets=datasets, worst=6)
    assert "retrieved text not available" not in page
    assert "top 4 of 4 retrieved ids, judged by the qrels" in page
    # q0 in run a retrieves d0 (grade 2), d1 (grade 1), d2, d3; in run b d2, d3, d4, d5.
    assert '<div class="chunk hit">1. d0: relevant (grade 2)</div>' in page
    assert '<div class="chunk hit">2. d1: relevant (grade 1)</div>' in page
    assert '<div class="chunk">1. d2: not relevant</div>' in page
    assert '<div class="gt">d0 (grade 2)</div>' in page


def test_a_query_with_nothing_retrieved_is_shown_as_such(tmp_path: Path) -> None:
    # Found by a user's trial: an empty retrieved list (valid, scores 0) made --report exit 3.
    records = [
        {"id": "q1", "retrieved_context": ["Paris is the capital of France.", "Lyon is big."],
         "ground_truth_context": ["Paris is the capital of France."]},
        {"id": "q2", "retrieved_context": [],
         "ground_truth_context": ["The Seine flows through Paris."]},
    ]  # fmt: skip
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = RetrievalEvaluator(path, [PrecisionRecallF1()], workers=1).run(k=[1])
    page = result_html(result, dataset=path)
    assert page.count("no retrieved item for this query") == 1
    assert '<div class="chunk hit">1. Paris is the capital of France.</div>' in page


def test_a_single_run_report(example: tuple[dict, dict], tmp_path: Path) -> None:
    results, datasets = example
    result = results["paragraph"]
    page = Page(result_html(result, dataset=datasets["paragraph"]))
    titles = [title for title, _ in page.panels]
    assert titles[:3] == ["What was evaluated", "Aggregate", "Metrics at every cut-off"]
    assert titles[-1] == "Lowest context_recall@10"
    aggregate = next(t for t in page.tables if t["rows"][0][:2] == ["metric", "@1"])["rows"]
    ndcg = next(row for row in aggregate if row and row[0] == "ndcg")
    assert ndcg[3].startswith(f"{result.aggregate['ndcg@10']:.4f}")
    queries = page.table("queries")[1:]
    values = [row[2][1] for row in queries]
    assert values == sorted(values)  # lowest first
    assert len(queries) == 99
    written = write_result_report(tmp_path / "run.html", result)
    assert written.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_evaluate_report_through_the_command_line(tmp_path: Path) -> None:
    target = tmp_path / "run.html"
    command = [sys.executable, "-m", "ctxeval", "evaluate"]
    done = subprocess.run(
        [*command, RUNS / "paragraph.jsonl", "-k", "5", "--report", target],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"ctxeval: wrote {target}" in done.stderr
    page = target.read_text(encoding="utf-8")
    assert "Lowest context_recall@5" in page
    refused = subprocess.run(
        [*command, RUNS / "paragraph.jsonl", "--report", tmp_path / "run.txt"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--report" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_single_run_page_leads_with_a_quality_measure_never_a_count() -> None:
    from ctxeval.report.queries import focus_metric

    assert focus_metric(["num_q", "num_ret", "average_precision", "gm_map"]) == "average_precision"
    assert focus_metric(["num_q", "num_ret", "bpref"]) == "bpref"
    assert focus_metric(["num_q"]) == "num_q"  # nothing else to show
    assert focus_metric(["ndcg@5", "recall@10", "recall@100"]) == "recall@100"


def test_the_question_is_found_under_ragas_and_llama_index_names(tmp_path: Path) -> None:
    records = [
        {
            "id": "q1",
            "user_input": "Where is the Seine?",
            "retrieved_contexts": ["The Seine runs through Paris."],
            "reference_contexts": ["The Seine runs through Paris."],
        }
    ]
    result = RetrievalEvaluator(records, ["context_recall"], progress=False).run()
    page = result_html(result, dataset=records)
    assert "Where is the Seine?" in page


def _budget_result(rr_small: list[float], rr_large: list[float]) -> EvaluationResult:
    """A run evaluated at 100w and 800w (800w fed more text), reciprocal rank per query."""
    rows = [
        {"id": f"q{i}", "reciprocal_rank@100w": a, "reciprocal_rank@800w": b}
        for i, (a, b) in enumerate(zip(rr_small, rr_large, strict=True))
    ]
    aggregate = {
        "reciprocal_rank@100w": sum(rr_small) / len(rr_small),
        "reciprocal_rank@800w": sum(rr_large) / len(rr_large),
    }
    used = {"100w": {"chunks": 1.0, "characters": 600.0}, "800w": {"chunks": 8, "characters": 5e3}}
    return EvaluationResult(per_query=rows, aggregate=aggregate, summary={"context_used": used})


def test_budget_columns_keep_their_cut_off_in_the_report() -> None:
    # The first-rank histogram is drawn at the largest budget (where the comparison is), says
    # so, and counts what that budget found; the aggregate table has a column per budget.
    from ctxeval.report.page import first_rank_plot, first_ranks
    from ctxeval.report.queries import focus_metric

    result = _budget_result([0.0, 0.0, 1.0], [1.0, 0.5, 1.0])
    # ranks 1, 2 and none at 800w (at 100w it would be 1, 0, 2)
    assert first_ranks({"run": result}) == ("reciprocal_rank@800w", {"run": [2, 1, 0]})
    html = first_rank_plot({"run": result})
    assert "at @800w" in html
    # one bar per count, its number shown on hover
    bars = re.findall(r"<rect [^>]*><title>([^<]*)</title></rect>", html)
    assert bars == [
        "run: 2 queries at rank 1",
        "run: 1 query at rank 2",
        "run: 0 queries found none",
    ]
    assert focus_metric(["reciprocal_rank@800w", "reciprocal_rank@100w"]) == "reciprocal_rank@800w"
    page = result_html(result)
    assert "<th>@100w</th>" in page
    assert "<th>@800w</th>" in page
