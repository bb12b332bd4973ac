"""Progress and Ctrl-C on the command line.

``--progress`` draws every long step with its total (the stderr these tests capture is no
terminal: without the flag nothing is drawn); Ctrl-C in ``ctxeval chunking`` exits 130 and
says which files were written and which not. No test looks at times.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import ctxeval

from ctxeval.io.corpus import load_corpus

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
RECORDS = ROOT / "fixtures" / "records.jsonl"
RUNS = ROOT / "fixtures" / "runs"
CHUNKERS = ["--chunker", "fixed=fixed(words=100, overlap=10)", "--chunker", "sent=sentences(n=3)"]
FULL = r" \[#+\] 100%  "


def _progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("ctxeval: wrote")]


def test_chunking_progress_shows_every_step_with_its_total(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.html"
    done = ctxeval(
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "3", "--out-dir", out,
        "--report", report, "--n-resamples", "200", "--progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    characters = sum(map(len, load_corpus(CORPUS).values()))
    questions = len(QUESTIONS.read_text().splitlines())
    expected = [
        r"loading the corpus and questions: done in ",
        *[
            pattern
            for name in ("fixed", "sent")
            for pattern in (
                rf"chunking {name}{FULL}{characters:,}/{characters:,} characters, done in ",
                rf"indexing {name}: done in ",
                rf"retrieving {name}{FULL}{questions}/{questions} questions, done in ",
                rf"scoring {name}\.jsonl{FULL}{questions}/{questions} records, done in ",
                rf"attributing {name}{FULL}{questions}/{questions} questions, done in ",
            )
        ],
        r"comparing the runs: done in ",
        r"testing the verdict: done in ",
        rf"writing{FULL}6/6 files, done in ",
    ]
    lines = _progress_lines(done.stderr)
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.match(f"ctxeval: {pattern}", line), (pattern, line)


def test_evaluate_and_compare_show_the_records_scored_out_of_the_total() -> None:
    done = ctxeval("evaluate", RECORDS, "-k", "3", "--progress")
    assert done.returncode == 0, done.stderr
    line = rf"^ctxeval: scoring records\.jsonl{FULL}8/8 records, done in "
    assert re.search(line, done.stderr, re.M), done.stderr
    quiet = ctxeval("evaluate", RECORDS, "-k", "3")
    assert "scoring" not in quiet.stderr  # stderr is no terminal here
    runs = [RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl"]
    done = ctxeval("compare", *runs, "-k", "3", "--progress")
    assert done.returncode == 0, done.stderr
    for run in runs:
        line = rf"^ctxeval: scoring {run.name}{FULL}99/99 records, done in "
        assert re.search(line, done.stderr, re.M), done.stderr
    assert re.search(r"^ctxeval: comparing the runs: done in ", done.stderr, re.M)


# ``ctxeval chunking`` with one function made to raise KeyboardInterrupt, as Ctrl-C would there.
_INTERRUPTED = """
import sys
import {module}

def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

{module}.{name} = interrupted
from ctxeval.cli import main
sys.argv = ["ctxeval", *sys.argv[1:]]
main()
"""


def _interrupted(module: str, name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _INTERRUPTED.format(module=module, name=name), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ctrl_c_while_the_report_is_written_says_what_was_written(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.html"
    done = _interrupted(
        "ctxeval.chunking.report", "write_harness_report",
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "3", "--out-dir", out,
        "--report", report, "--n-resamples", "200", "--progress",
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"ctxeval: interrupted while writing {report}: wrote {out}/ (2 runs, summary.json); "
        f"{report} not written"
    )
    # The writing bar stops where it was: five files of six.
    stopped = r"^ctxeval: writing \[#+-+\]  83%  5/6 files, stopped after "
    assert re.search(stopped, done.stderr, re.M), done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "fixed.jsonl", "fixed.result.jsonl", "sent.jsonl", "sent.result.jsonl", "summary.json",
    ]  # fmt: skip
    assert not report.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert done.stdout == ""


def test_ctrl_c_before_any_file_says_nothing_was_written(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.html"
    done = _interrupted(
        "ctxeval.evaluator", "RetrievalEvaluator.run",
        "chunking", CORPUS, QUESTIONS, *CHUNKERS, "-k", "3", "--out-dir", out,
        "--report", report,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"ctxeval: interrupted while scoring fixed: nothing written to {out}/ or {report}"
    )
    assert not report.exists()
    assert not out.exists() or not any(out.iterdir())
