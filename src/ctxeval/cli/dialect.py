"""Messages in the syntax of where the user is: the library's fixes name Python arguments
(``fields={"mode": "text"}``, ``on_error='skip'``); on the command line the same fix is a flag
(``--mode text``, ``--on-error skip``). Every message the CLI prints goes through
:func:`cli_syntax`, so each library message is written once, in Python, and read on the CLI in
the CLI's words. The table below is the whole dictionary; a test runs every message that names a
Python argument through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["cli_syntax"]

_ROLE_FLAGS = {
    "retrieved": "--retrieved-field",
    "ground_truth": "--ground-truth-field",
    "id": "--id-field",
    "mode": "--mode",
    "text_key": "--text-key",
    "scores": "--scores-field",
}


def _field_flag(match: re.Match[str]) -> str:
    role, value = match["role"], match["value"].strip()
    value = "NAME" if value == "..." else value.strip("'\"")
    return f"{_ROLE_FLAGS[role]} {value}"


_RULES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # the library's own "(CLI: ...)" asides become the fix itself
    (
        re.compile(
            r'fields=\{"retrieved": \.\.\., "ground_truth": \.\.\.\}'
            r"(?: \(CLI: --retrieved-field, --ground-truth-field\))?"
        ),
        "--retrieved-field NAME --ground-truth-field NAME",
    ),
    (
        re.compile(r'fields=\{\.\.\., "mode": "text"\} \(contexts\) or "mode": "id"'),
        "--mode text (contexts) or --mode id",
    ),
    (
        re.compile(
            r'fields=\{"(?P<role>retrieved|ground_truth|id|mode|text_key|scores)": '
            r"(?P<value>[^{}]*?)\}"
            r"(?: \(CLI: [^)]*\))?"
        ),
        _field_flag,
    ),
    (
        re.compile(r"RetrievalEvaluator\.from_trec\(run, qrels\) \(CLI: ([^)]*)\)"),
        r"\1",
    ),
    (
        re.compile(
            r'fields\["(?P<role>retrieved|ground_truth|id|mode|text_key|scores)"\] = '
            r"(?P<value>'[^']*'|\"[^\"]*\")"
        ),
        _field_flag,
    ),
    (re.compile(r"\b[A-Z]\w*Match\(threshold=([^)]*)\): threshold must"), r"--threshold \1: must"),
    (re.compile(r"\bwrite threshold=([0-9.]+)"), r"write --threshold \1"),
    (re.compile(r"missing_queries='zero'"), "-c; --skip-missing leaves them out"),
    (re.compile(r"missing_queries='skip'"), "--skip-missing; -c scores them 0"),
    (
        re.compile(
            r"TextMeasures\((?P<spec>[^()]*(?:\([^()]*\))?)\): (?P<measure>\S+) rank retrieved "
            r"chunks, but this strategy matches sentences; use a chunk strategy"
        ),
        r"-m \g<measure> ranks retrieved chunks, but --match \g<spec> matches sentences; use "
        r"--match with a chunk strategy",
    ),
    (
        re.compile(
            r"RetrievalEvaluator: the budget (\S+) needs the chunks' texts, but "
            r"IDMeasures\(.*?\) scores chunk ids; give budgets for text data, or a number of "
            r"chunks"
        ),
        r"-k \1 needs the chunks' texts, but these records have chunk ids; give -k a number of "
        r"chunks",
    ),
    (re.compile(r"on_error='(\w+)'"), r"--on-error \1"),
    (re.compile(r"RougeChunkMatch\(tokenizer='(\w+)'\)"), r"--tokenizer \1"),
    (
        re.compile(r"pass format='jsonl'\|'json'\|'csv'\|'parquet'"),
        "give the file its format's extension (.jsonl, .json, .csv or .parquet)",
    ),
    (re.compile(r" or pass format='\w+'"), ""),  # after "name the file .jsonl"
)


def cli_syntax(message: str) -> str:
    """``message`` with each Python-argument fix replaced by its command-line flag."""
    for pattern, replacement in _RULES:
        message = pattern.sub(replacement, message)
    return message
