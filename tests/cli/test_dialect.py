"""cli_syntax: the library's Python-argument fixes read as command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.cli.dialect import cli_syntax

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("python", "cli"),
    [
        (
            'choose one: fields={"mode": "text"} or fields={"mode": "id"}, or name the fields: '
            'fields={"retrieved": ..., "ground_truth": ...}',
            "choose one: --mode text or --mode id, or name the fields: "
            "--retrieved-field NAME --ground-truth-field NAME",
        ),
        (
            'name them: fields={"retrieved": ..., "ground_truth": ...} '
            "(CLI: --retrieved-field, --ground-truth-field)",
            "name them: --retrieved-field NAME --ground-truth-field NAME",
        ),
        (
            """name the one to use: fields={"retrieved": 'chunks'} (CLI: --retrieved-field """
            "chunks)",
            "name the one to use: --retrieved-field chunks",
        ),
        (
            'name the field that holds it: fields={"id": ...}',
            "name the field that holds it: --id-field NAME",
        ),
        (
            'say which mode the data is in: fields={..., "mode": "text"} (contexts) or '
            '"mode": "id" (chunk ids)',
            "say which mode the data is in: --mode text (contexts) or --mode id (chunk ids)",
        ),
        ("or pass on_error='skip' to skip", "or pass --on-error skip to skip"),
        ("use RougeChunkMatch(tokenizer='unicode')", "use --tokenizer unicode"),
        (
            "or pass format='jsonl'|'json'|'csv'|'parquet'",
            "or give the file its format's extension (.jsonl, .json, .csv or .parquet)",
        ),
        (
            "name the file .jsonl or pass format='jsonl'",
            "name the file .jsonl",
        ),
        ('name it: fields={"scores": "similarity"}', "name it: --scores-field similarity"),
        (
            """a.jsonl:1: fields["retrieved"] = 'contexts' is not a field here""",
            "a.jsonl:1: --retrieved-field contexts is not a field here",
        ),
        (
            "RougeChunkMatch(threshold=1.5): threshold must be between 0 and 1 (...); for a "
            "rapidfuzz score of 85 write threshold=0.85",
            "--threshold 1.5: must be between 0 and 1 (...); for a rapidfuzz score of 85 write "
            "--threshold 0.85",
        ),
        (
            "were scored 0 (missing_queries='zero'); first: 'q4'",
            "were scored 0 (-c; --skip-missing leaves them out); first: 'q4'",
        ),
        (
            "were left out (missing_queries='skip')",
            "were left out (--skip-missing; -c scores them 0)",
        ),
        (
            "TextMeasures(rouge-sentence(threshold=0.8)): ndcg@2 rank retrieved chunks, but this "
            "strategy matches sentences; use a chunk strategy (rouge-chunk)",
            "-m ndcg@2 ranks retrieved chunks, but --match rouge-sentence(threshold=0.8) matches "
            "sentences; use --match with a chunk strategy (rouge-chunk)",
        ),
        (
            "RetrievalEvaluator: the budget 300w needs the chunks' texts, but IDMeasures(('map', "
            "'ndcg@10')) scores chunk ids; give budgets for text data, or a number of chunks",
            "-k 300w needs the chunks' texts, but these records have chunk ids; give -k a number "
            "of chunks",
        ),
        ("nothing to change here", "nothing to change here"),
    ],
)
def test_cli_syntax(python: str, cli: str) -> None:
    assert cli_syntax(python) == cli


@pytest.mark.parametrize(
    ("match", "expected"),
    [
        ("rouge-chunk(threshold=2)", "--match rouge-chunk(threshold=2): threshold must be between"),
        ("rouge-chnk", "--match rouge-chnk: unknown strategy 'rouge-chnk'; did you mean"),
        ("rouge-chunk(tokenizer=foo)", "quote text values, e.g. 'foo'"),
    ],
)
def test_match_errors_name_the_flag_without_python_class_names(match: str, expected: str) -> None:
    done = ctxeval("evaluate", ROOT / "fixtures" / "records.jsonl", "--match", match)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "RougeChunkMatch" not in done.stderr
    assert done.stderr.count("\n") == 1
