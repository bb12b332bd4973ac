"""``ctxeval chunking --retriever none`` (statistics and ceilings only) and ``--convention
chroma``, through the entry point (offline subprocess) and in-process for the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import ctxeval
from click.testing import CliRunner

from ctxeval.chunking import compare_chunkers
from ctxeval.cli import app

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
CHUNKERS = ("--chunker", "fixed=fixed(words=100)", "--chunker", "sentences=sentences(n=3)")


def test_no_retrieval_through_the_entry_point(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "--retriever", "none", "--convention", "chroma",
        "--out-dir", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No retrieval (retriever none): chunk statistics and ceilings")
    assert "no runs were evaluated" in done.stdout
    assert "Ceilings (best any retriever could do with these chunks) (chroma's convention)" in (
        done.stdout
    )
    assert "wrote summary.json (no runs: no retrieval)" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["verdict"] is None
    assert summary["retriever"] == "none"
    assert summary["convention"] == "chroma"
    expected = compare_chunkers(
        CORPUS,
        QUESTIONS,
        {"fixed": "fixed(words=100)", "sentences": "sentences(n=3)"},
        retriever=None,
        convention="chroma",
    )
    for name, chunker in summary["chunkers"].items():
        ceilings = expected.ceilings[name]
        assert chunker["ceilings"]["ceiling_span_iou"] == ceilings.attribution.span_ceiling
        assert chunker["ceilings"]["ceiling_recall"] == ceilings.attribution.ceiling
        assert chunker["statistics"] == ceilings.statistics


def test_json_format_without_retrieval(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["chunking", str(CORPUS), str(QUESTIONS), *CHUNKERS, "--retriever", "none",
         "--out-dir", str(tmp_path / "o"), "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["verdict"] is None
    assert summary["comparison"] is None
    assert "convention" in summary
    assert summary["convention"] is None


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["-k", "5"], "-k"),
        (["--metric", "span_iou@5"], "--metric"),
        (["--primary", "span_iou"], "--primary"),
        (["--baseline", "fixed"], "--baseline"),
        (["--report", "r.html"], "--report"),
        (["--cache-dir", "cache"], "--cache-dir"),
        (["--budget-policy", "truncate"], "--budget-policy"),
        (["--token-counter", "unicode"], "--token-counter"),
        (["--n-resamples", "100"], "--n-resamples"),
        (["--seed", "0"], "--seed"),  # given, even at its default: it would do nothing
    ],
)
def test_options_needing_runs_are_exit_2_naming_the_flag(
    tmp_path: Path, extra: list[str], flag: str
) -> None:
    result = CliRunner().invoke(
        app,
        ["chunking", str(CORPUS), str(QUESTIONS), *CHUNKERS, "--retriever", "none",
         "--out-dir", str(tmp_path / "o"), *extra],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"{flag} needs retrieval runs, and --retriever none retrieves nothing" in result.output
    assert not (tmp_path / "o").exists()


def test_none_with_other_retrievers_and_a_bad_convention_are_exit_2(tmp_path: Path) -> None:
    args = ["chunking", str(CORPUS), str(QUESTIONS), *CHUNKERS, "--out-dir", str(tmp_path / "o")]
    mixed = CliRunner().invoke(app, [*args, "--retriever", "none", "--retriever", "bm25"])
    assert mixed.exit_code == 2
    assert "--retriever none (no retrieval) cannot be combined" in mixed.output
    bad = CliRunner().invoke(app, [*args, "--convention", "chromadb"])
    assert bad.exit_code == 2
    assert "Invalid value for '--convention'" in bad.output


def test_a_named_none_is_said_as_no_retrieval(tmp_path: Path) -> None:
    # --retriever x=none is not an unknown retriever 'none' (the help lists none): it is told to
    # be written bare, alone or beside other retrievers.
    args = ["chunking", str(CORPUS), str(QUESTIONS), *CHUNKERS, "--out-dir", str(tmp_path / "o")]
    alone = CliRunner().invoke(app, [*args, "--retriever", "x=none"])
    assert alone.exit_code == 2
    assert alone.output.strip() == (
        "ctxeval: error: --retriever x=none: no retrieval takes no name; write --retriever none"
    )
    mixed = CliRunner().invoke(app, [*args, "--retriever", "x=none", "--retriever", "bm25"])
    assert mixed.exit_code == 2
    assert "--retriever none (no retrieval) cannot be combined" in mixed.output
    assert not (tmp_path / "o").exists()
