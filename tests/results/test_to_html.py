"""``EvaluationResult.to_html`` and ``ComparisonReport.to_html``: the pages of ctxeval.report,
reached through the backend protocol of results/backends.py (results and comparisons may not
import the report), with ``--report``'s rules for the path: .html/.htm, never an input, never a
directory, replaced atomically."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxeval import RetrievalEvaluator, compare
from ctxeval.comparison import ComparisonReport
from ctxeval.foundation.errors import InvalidArgumentError, InvalidArgumentTypeError
from ctxeval.results import EvaluationResult
from ctxeval.results.backends import REPORT_BACKEND, ReportBackend, report_backend

RECORDS = [
    {
        "id": f"q{i}",
        "question": f"question {i}",
        "retrieved_ids": [*["a", "b", "c"][i % 3 :], "x"],
        "relevant_ids": ["a"] if i % 2 else ["b", "x"],
    }
    for i in range(6)
]


def dataset(tmp_path: Path, name: str = "run.jsonl", shift: int = 0) -> Path:
    path = tmp_path / name
    rows = [
        {**r, "retrieved_ids": r["retrieved_ids"][shift:] + r["retrieved_ids"][:shift]}
        for r in RECORDS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def evaluated(path: Path) -> EvaluationResult:
    return RetrievalEvaluator(path, ["recall", "ndcg"], workers=1).run(k=[1, 3])


def test_result_to_html_writes_the_single_run_page(tmp_path: Path) -> None:
    data = dataset(tmp_path)
    result = evaluated(data)
    target = tmp_path / "out" / "run.html"  # a missing directory is created
    assert result.to_html(target, dataset=data) == target
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert "What was evaluated" in page
    assert "Lowest recall@3" in page
    # ID mode with the dataset: the retrieved ids with their relevance.
    assert "judged by the qrels" in page
    assert "not available" not in page
    # No temporary file is left beside it.
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.html"]


def test_result_to_html_replaces_a_page_and_keeps_it_on_error(tmp_path: Path) -> None:
    result = evaluated(dataset(tmp_path))
    target = tmp_path / "run.html"
    target.write_text("old page", encoding="utf-8")
    result.to_html(target, title="second")
    assert "second" in target.read_text(encoding="utf-8")
    target.write_text("old page", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"focus='nope@3'.*recall@1"):
        result.to_html(target, focus="nope@3")
    assert target.read_text(encoding="utf-8") == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.html", "run.jsonl"]


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        ("run.jsonl", InvalidArgumentError, r"to_html\(path\) .*run.jsonl is also the input"),
        ("page.txt", InvalidArgumentError, r"unknown extension '.txt'; use .html, .htm"),
        (".", InvalidArgumentError, r"is a directory; give a file name"),
        (3, InvalidArgumentTypeError, r"to_html\(path=3\): give the name of the file"),
    ],
)
def test_result_to_html_refuses_paths_as_report_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Any, error: type, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    data = dataset(tmp_path)
    result = evaluated(Path("run.jsonl"))
    before = data.read_bytes()
    with pytest.raises(error, match=message):
        result.to_html(path)
    assert data.read_bytes() == before


def test_the_dataset_given_is_an_input_too(tmp_path: Path) -> None:
    data = dataset(tmp_path)
    result = evaluated(data)
    result.summary["source"] = "elsewhere.jsonl"
    with pytest.raises(InvalidArgumentError, match="is also the input"):
        result.to_html(data, dataset=data)


def test_comparison_to_html_writes_the_comparison_page(tmp_path: Path) -> None:
    a, b = dataset(tmp_path, "a.jsonl"), dataset(tmp_path, "b.jsonl", shift=1)
    report = compare({"a": evaluated(a), "b": evaluated(b)}, n_resamples=50)
    target = report.to_html(tmp_path / "cmp.html", datasets={"a": a, "b": b}, worst=2)
    page = target.read_text(encoding="utf-8")
    assert "What was compared" in page
    assert "Queries where the runs disagree most" in page
    assert "judged by the qrels" in page
    for bad, message in [
        (a, "is also the input"),
        (tmp_path / "cmp.csv", "unknown extension"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            report.to_html(bad)
    with pytest.raises(InvalidArgumentError, match=r"no run is named 'c'; runs: \['a', 'b'\]"):
        report.to_html(tmp_path / "x.html", datasets={"c": a})
    with pytest.raises(InvalidArgumentError, match=r"focus='map@3'.*\['recall@3', 'ndcg@3'\]"):
        report.to_html(tmp_path / "x.html", focus="map@3")
    assert not (tmp_path / "x.html").exists()


def test_a_report_built_by_hand_says_what_to_call(tmp_path: Path) -> None:
    a = dataset(tmp_path, "a.jsonl")
    report = compare({"a": evaluated(a), "b": evaluated(a)}, n_resamples=10)
    names = inspect.signature(ComparisonReport).parameters
    fields = {name: getattr(report, name) for name in names}
    bare = ComparisonReport(**{**fields, "results": {}})
    assert bare == report  # the results are not part of the comparison's value
    with pytest.raises(InvalidArgumentError, match=r"write_html_report\(path, report, results\)"):
        bare.to_html(tmp_path / "x.html")


def test_ctxeval_report_implements_the_backend_protocol() -> None:
    backend = report_backend(None, owner="test")
    assert backend.__name__ == REPORT_BACKEND  # type: ignore[attr-defined]
    for name, declared in inspect.getmembers(ReportBackend, inspect.isfunction):
        if name.startswith("_"):
            continue
        wanted = list(inspect.signature(declared).parameters)[1:]  # without self
        assert list(inspect.signature(getattr(backend, name)).parameters) == wanted, name


def test_another_backend_is_loaded_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # results knows only the name and the protocol: any module implementing it draws the page.
    (tmp_path / "plain_pages.py").write_text(
        "from pathlib import Path\n"
        "def write_result_report(path, result, **options):\n"
        '    Path(path).write_text(f"{len(result.per_query)} queries {options}")\n'
        "    return Path(path)\n"
        "def write_html_report(path, report, results, **options):\n"
        "    Path(path).write_text(' '.join(results))\n"
        "    return Path(path)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plain_pages", raising=False)
    result = evaluated(dataset(tmp_path))
    written = result.to_html(tmp_path / "p.html", backend="plain_pages", worst=1)
    assert written.read_text() == "6 queries {'dataset': None, 'worst': 1}"
    report = compare({"x": result, "y": result}, n_resamples=10)
    assert report.to_html(tmp_path / "c.html", backend="plain_pages").read_text() == "x y"


@pytest.mark.parametrize(
    ("backend", "error", "message"),
    [
        ("no_such_module_i12", InvalidArgumentError, "no module of that name can be imported"),
        ("ctxeval.results", InvalidArgumentTypeError, "has no write_result_report"),
        ("", InvalidArgumentTypeError, "give a module name such as 'ctxeval.report'"),
    ],
)
def test_backend_errors_name_the_argument(
    tmp_path: Path, backend: str, error: type, message: str
) -> None:
    result = evaluated(dataset(tmp_path))
    with pytest.raises(error, match=rf"EvaluationResult.to_html\(backend=.*{message}"):
        result.to_html(tmp_path / "p.html", backend=backend)
    assert not (tmp_path / "p.html").exists()
