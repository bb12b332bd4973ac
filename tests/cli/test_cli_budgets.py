"""The command line at context budgets: -k 300w, --budget-policy, the context used, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import ctxeval

DATA = [
    {"id": "q1", "retrieved_context": ["aa bb cc", "dd ee", "ff"], "ground_truth_context": ["ff"]},
    {"id": "q2", "retrieved_context": ["gg hh ii jj kk ll"], "ground_truth_context": ["gg"]},
    {"id": "q3", "retrieved_context": [], "ground_truth_context": ["zz"]},
]


def test_cli_evaluates_at_budgets(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in DATA) + "\n", encoding="utf-8")
    done = ctxeval(
        "evaluate", path, "-k", "2", "-k", "5w", "-m", "recall", "--budget-policy", "truncate",
        "--format", "json", "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out["aggregate"]) == {"recall@2", "recall@5w"}
    assert out["summary"]["context_used"]["5w"]["chunks"] == 1.0
    text = ctxeval("evaluate", path, "-k", "5w", "-m", "recall", "--workers", "1")
    assert "context used (mean per query):" in text.stdout
    assert "5w" in text.stdout.split("context used")[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-k", "300x"], "'300x': unknown budget unit 'x'"),
        (["-k", "0c"], "'0c': a budget must be 1 or more characters"),
        (["-k", "-5w"], "'-5w': a budget must be 1 or more words"),
        (["-k", "5w", "--budget-policy", "cut"], "'cut' is not one of 'whole', 'truncate'"),
        (["-m", "recall@300x"], "'recall@300x': the cut-off after '@' must be"),
    ],
)
def test_cli_budget_errors(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(DATA[0]) + "\n", encoding="utf-8")
    done = ctxeval("evaluate", path, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_config_file_sets_budgets(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in DATA) + "\n", encoding="utf-8")
    config = tmp_path / "ctxeval.toml"
    config.write_text('k = [2, "5w"]\nbudget-policy = "truncate"\n', encoding="utf-8")
    done = ctxeval(
        "evaluate", path, "--config", config, "-m", "recall", "--format", "json", "--workers", "1"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["budget_policy"] == "truncate"
    assert summary["context_used"]["5w"]["words"] == 10 / 3
