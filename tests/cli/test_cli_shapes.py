"""The CLI on the data shapes users export from other tools (issue 12, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ctxeval


def _pandas_csv(tmp_path: Path) -> Path:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "user_input": ["q one", "q two"],
            "retrieved_contexts": [["a b", "b c"], []],
            "reference_contexts": [["b c"], ["x"]],
        }
    )
    path = tmp_path / "ragas.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_reads_a_pandas_csv_and_says_so_once(tmp_path: Path) -> None:
    path = _pandas_csv(tmp_path)
    done = ctxeval("evaluate", path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Python list literals") == 1
    assert "Traceback" not in done.stderr
