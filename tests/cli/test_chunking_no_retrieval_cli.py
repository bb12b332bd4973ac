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


def _small(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    story = "Cats purr softly. Cats nap all day. Dogs bark at night. Dogs fetch sticks. Cars honk."
    (corpus / "a.txt").write_text(story, encoding="utf-8")
    (corpus / "b.txt").write_text(story.replace("Cats", "Birds"), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    line = {"id": "q", "question": "dogs", "ground_truth_context": ["Dogs bark at night."]}
    questions.write_text(json.dumps({**line, "doc": "a"}) + "\n", encoding="utf-8")
    return corpus, questions


def test_cache_dir_keeps_the_semantic_chunkers_vectors_without_retrieval(tmp_path: Path) -> None:
    pytest.importorskip("wordllama")
    corpus, questions = _small(tmp_path)
    cache = tmp_path / "cache"
    chunkers = ("--chunker", "s=semantic(percentile=50, buffer=0)",
                "--chunker", "c=cluster(max_tokens=8, piece_tokens=4)")  # fmt: skip
    outputs = []
    for run in ("one", "two", "plain"):
        extra = () if run == "plain" else ("--cache-dir", cache)
        done = ctxeval(
            "chunking", corpus, questions, *chunkers, "--retriever", "none", *extra,
            "--out-dir", tmp_path / run, "--format", "json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout)["chunkers"])
        if run == "one":  # one checked file a distinct text, under the embedder's folder
            files = sorted(cache.rglob("*.vec"))
            assert files
            assert all(f.parent.parent.name.startswith("wordllama-") for f in files)
            stamps = [f.stat().st_mtime_ns for f in files]
    assert sorted(cache.rglob("*.vec")) == files  # the second run added nothing
    assert [f.stat().st_mtime_ns for f in files] == stamps  # and rewrote nothing
    assert outputs[0] == outputs[1] == outputs[2]  # the same chunks with or without the cache


def test_cache_dir_without_retrieval_or_embedding_chunkers_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["chunking", str(CORPUS), str(QUESTIONS), *CHUNKERS, "--retriever", "none",
         "--out-dir", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "cache")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--cache-dir keeps the embeddings of dense retrievers and of semantic and cluster" in (
        result.output
    )
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "cache").exists()
