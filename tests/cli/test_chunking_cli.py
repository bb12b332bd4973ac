"""``ctxeval chunking`` through its real entry point: outputs, re-evaluation, user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.chunking import HARNESS_METRICS
from ctxeval.results import EvaluationResult

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
CHUNKERS = ["--chunker", "fixed=fixed(words=100, overlap=10)", "--chunker", "sent=sentences(n=3)"]


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("cli")
    out, report = tmp / "out", tmp / "report.html"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "3", "-k", "10",
        "--out-dir", out, "--report", report, "--n-resamples", "200",
    )  # fmt: skip
    return done, out, report


def test_the_harness_writes_runs_results_summary_and_report(harness_run) -> None:
    done, out, report = harness_run
    assert done.returncode == 0, done.stderr
    assert "context_recall@10" in done.stdout
    assert "Miss attribution" in done.stdout
    # The verdict first: a sentence per cut-off, then the primary measure by run and cut-off.
    lines = done.stdout.splitlines()
    assert lines[0] == "Verdict on context_recall:"
    # ... and ends with it in short: a sentence per cut-off.
    assert lines[-3] == "In short, on context_recall:"
    assert lines[-2] == lines[1]
    assert lines[-1] == lines[2]
    assert lines[1].startswith("  at 3: ")
    assert lines[2].startswith("  at 10: ")
    table = next(
        i for i, line in enumerate(lines) if line.split() == ["context_recall", "@3", "@10"]
    )
    summary = json.loads((out / "summary.json").read_text())
    for row in lines[table + 1 : table + 3]:
        name, *cells = row.split()
        means = summary["verdict"]["families"][""]
        assert [float(c.rstrip("*")) for c in cells] == [
            round(means[k]["means"][name], 3) for k in ("3", "10")
        ]
    assert "Ceilings" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "fixed.jsonl", "fixed.result.jsonl", "sent.jsonl", "sent.result.jsonl", "summary.json",
    ]  # fmt: skip
    page = report.read_text()
    assert "Chunkings" in page
    assert "Miss attribution" in page
    assert "<svg " in page  # the plots, drawn inline


def test_no_progress_is_drawn_when_stderr_is_no_terminal(harness_run) -> None:
    # Without --progress, progress is drawn on a terminal only (here stderr is a pipe).
    done, out, report = harness_run
    assert done.stderr.splitlines() == [
        f"ctxeval: wrote 2 runs to {out}",
        f"ctxeval: wrote {report}",
    ]


def test_ctxeval_evaluate_on_a_run_file_gives_the_saved_numbers(harness_run, tmp_path) -> None:
    _, out, _ = harness_run
    measures = [arg for m in HARNESS_METRICS for arg in ("-m", m)]
    again = tmp_path / "again.jsonl"
    done = ctxeval("evaluate", out / "sent.jsonl", *measures, "-k", "3", "-k", "10", "-o", again)
    assert done.returncode == 0, done.stderr
    saved = EvaluationResult.load(out / "sent.result.jsonl")
    assert EvaluationResult.load(again).aggregate == saved.aggregate
    # The default metrics too (chunk-level; span metrics are asked for with -m, above): every
    # column both have holds the same value.
    done = ctxeval("evaluate", out / "sent.jsonl", "-k", "3", "-k", "10", "--format", "json")
    assert done.returncode == 0, done.stderr
    aggregate = json.loads(done.stdout)["aggregate"]
    shared = [c for c in saved.aggregate if "span_" not in c]
    assert len(shared) >= 10
    assert {c: aggregate[c] for c in shared} == {c: saved.aggregate[c] for c in shared}


def test_json_format_is_the_summary(tmp_path: Path) -> None:
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "5", "--out-dir", tmp_path / "o",
        "--format", "json", "--n-resamples", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ks"] == [5]
    assert set(summary["chunkers"]) == {"fixed", "sent"}


def _bad_questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "a", "question": "q", "excerpts": ["assert"]})
        + "\n"
        + json.dumps(
            {"id": "b", "question": "q", "excerpts": [{"doc": "asert", "start": 0, "end": 4}]}
        )
        + "\n"
    )
    return path


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"questions": "missing-doc"}, "q.jsonl:2 (question 'b'): excerpt 1: doc: unknown corpus"),
        ({"chunker": "x=fixd(words=3)"}, "--chunker x=fixd(words=3): "),
        ({"chunker": "fixed(words=3)"}, "--chunker fixed(words=3): write NAME=SPEC"),
        ({"out": "existing"}, "is not empty; choose a new directory, or allow replacing"),
        ({"retriever": "bm52"}, "--retriever bm52: "),
        ({"primary": "recall"}, "--primary: unknown metric 'recall'"),
    ],
)
def test_user_errors_are_one_line_with_exit_2(tmp_path: Path, change: dict, expected: str) -> None:
    out = tmp_path / "out"
    if change.get("out") == "existing":
        out.mkdir()
        (out / "x.txt").write_text("x")
    questions = _bad_questions(tmp_path) if "questions" in change else QUESTIONS
    chunkers = [
        "--chunker",
        change.get("chunker", "a=fixed(words=50)"),
        "--chunker",
        "b=sentences(n=2)",
    ]
    done = ctxeval(
        "chunking", CORPUS, questions, *chunkers, "--out-dir", out,
        "--retriever", change.get("retriever", "bm25"),
        "--primary", change.get("primary", "context_recall"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    if "chunker" in change and "fixd" in change["chunker"]:
        assert "did you mean 'fixed'" in done.stderr
    if "questions" in change:
        assert "did you mean 'assert'" in done.stderr


def test_a_config_file_sets_the_chunkers(tmp_path: Path) -> None:
    config = tmp_path / "ctxeval.toml"
    config.write_text(
        "[chunking]\n"
        "chunker = ['fixed=fixed(words=100, overlap=10)', 'para=paragraphs(max_words=100)']\n"
        "k = [5]\n"
        "n-resamples = 50\n"
        "format = 'json'\n"
    )
    done = ctxeval("chunking", CORPUS, QUESTIONS, "--config", config, "--out-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert list(summary["chunkers"]) == ["fixed", "para"]
    assert summary["ks"] == [5]


def test_budgets_compare_at_equal_context(tmp_path: Path) -> None:
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "3", "-k", "100w", "-k", "200w",
        "--out-dir", tmp_path / "o", "--format", "json", "--n-resamples", "50",
        "--metric", "context_recall", "--metric", "span_iou@100w",
        "--attribution", "overlap(min=0.5)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ks"] == [3, "100w", "200w"]
    assert summary["compared_at"] == "200w"
    assert summary["attribution"] == "overlap(min=0.5)"
    assert summary["comparison"]["metrics"] == ["context_recall@200w", "span_iou@100w"]
    for chunker in summary["chunkers"].values():
        assert chunker["context"]["100w"]["words"] <= 100
        assert set(chunker["attribution"]["found"]) == {"3", "100w", "200w"}
    saved = EvaluationResult.load(tmp_path / "o" / "sent.result.jsonl")
    assert summary["chunkers"]["sent"]["aggregate"] == saved.aggregate


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["-k", "100x"], "unknown budget unit 'x'"),
        (["-k", "100w", "--metric", "recall"], "--metric: unknown metric 'recall'"),
        (["-k", "100w", "--metric", "ndcg@5"], "--metric: unknown cut-off '5'"),
        (["--attribution", "overlap(min=2)"], "--attribution overlap(min=2): give the share"),
        (["--budget-policy", "cut"], "'cut' is not one of 'whole', 'truncate'"),
    ],
)
def test_budget_option_errors_name_the_flag(tmp_path: Path, arguments: list, expected: str) -> None:
    done = ctxeval("chunking", CORPUS, QUESTIONS, *CHUNKERS, *arguments, "--out-dir", tmp_path)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())  # refused before any work


def test_markdown_format_is_markdown_throughout(tmp_path: Path) -> None:
    # Found by a user's trial: the verdict and its tables came out as indented plain text
    # before the Markdown comparison, a jumble in a CI step summary.
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "5", "--out-dir", tmp_path / "o",
        "--format", "markdown", "--n-resamples", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("**Verdict on context_recall**\n\n- at 5: ")
    assert "| cut-off | best | other | diff | 95% CI | p (Holm) | W/T/L | n |" in text
    assert "| context_recall | @5 |" in text
    assert "\n- fixed: " in text  # where each run reaches its ceiling, a list
    assert "**2 runs on 99 queries, baseline fixed**" in text
    # What stays plain text (the ceilings, the short verdict) is fenced.
    assert text.count("```text\n") == text.count("\n```\n") == 2
    unfenced = "".join(part for i, part in enumerate(text.split("```")) if i % 2 == 0)
    assert not any(line.startswith("  at ") for line in unfenced.splitlines())


def test_mixed_unit_budgets_compare_where_the_most_text_was_fed(tmp_path: Path) -> None:
    out = tmp_path / "o"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "100w", "-k", "2000c", "-k", "512t",
        "--out-dir", out, "--format", "json", "--n-resamples", "20",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["compared_at"] == "512t"
    again = ctxeval(
        "compare", f"fixed={out / 'fixed.result.jsonl'}", f"sent={out / 'sent.result.jsonl'}",
        "--n-resamples", "20", "--format", "json",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["metrics"] == ["context_recall@512t", "ndcg@512t"]


def test_the_offline_dense_retriever_from_the_command_line(tmp_path: Path) -> None:
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "200w", "--retriever", "dense",
        "--out-dir", tmp_path / "out", "--n-resamples", "200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "dense(embedder='wordllama')" in json.dumps(summary)
    run = EvaluationResult.load(tmp_path / "out" / "sent.result.jsonl")
    assert 0 < run.aggregate["context_recall@200w"] <= 1
    unknown = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "--retriever", "dense(embedder='x')",
        "--out-dir", tmp_path / "other",
    )  # fmt: skip
    assert unknown.returncode == 2
    assert "unknown embedder 'x'" in unknown.stderr


def test_a_grid_from_the_command_line(tmp_path: Path) -> None:
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "5", "--retriever", "bm25",
        "--retriever", "fused=rrf('bm25', 'dense')", "--baseline", "sent+fused",
        "--out-dir", tmp_path / "out", "--n-resamples", "200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "baseline sent+fused" in done.stdout
    # The verdict opens the output: every pair, then the chunkers under each retriever, and the
    # grid of chunkers x retrievers.
    assert done.stdout.startswith("Verdict on context_recall:\n  at 5: ")
    assert "\n  with bm25:\n    at 5: " in done.stdout
    assert "\n  with fused:\n    at 5: " in done.stdout
    grid = done.stdout[done.stdout.index("  context_recall@5") :].splitlines()
    assert grid[0].split() == ["context_recall@5", "bm25", "fused"]
    assert [row.split()[0] for row in grid[1:3]] == ["fixed", "sent"]
    names = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.endswith(".result.jsonl"))
    assert names == [f"{c}+{r}.result.jsonl" for c in ("fixed", "sent") for r in ("bm25", "fused")]
    twice = ctxeval("chunking", CORPUS, QUESTIONS, *CHUNKERS, "--retriever", "bm25",
                    "--retriever", "bm25(k1=1.2)", "--out-dir", tmp_path / "b")  # fmt: skip
    assert twice.returncode == 2
    assert "the name 'bm25' is used twice" in twice.stderr
    baseline = ctxeval(
        "chunking",
        CORPUS,
        QUESTIONS,
        *CHUNKERS,
        "--retriever",
        "bm25",
        "--retriever",
        "dense",
        "--baseline",
        "sent",
        "--out-dir",
        tmp_path / "c",
    )
    assert baseline.returncode == 2
    assert "--baseline: unknown run 'sent'" in baseline.stderr


def test_the_embedding_cache_between_runs(tmp_path: Path) -> None:
    runs = []
    for out in ("one", "two"):
        done = ctxeval(
            "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "5", "--retriever", "dense",
            "--cache-dir", tmp_path / "cache", "--out-dir", tmp_path / out,
            "--n-resamples", "200",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs.append((tmp_path / out / "sent.jsonl").read_text())
    assert runs[0] == runs[1]  # the same rankings, scores included, from the cached vectors
    assert len(list((tmp_path / "cache").rglob("*.vec"))) > 100
