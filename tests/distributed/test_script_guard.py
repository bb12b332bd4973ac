"""``scheduler="local"`` from a plain script: with or without ``if __name__ == "__main__":``,
the run works and prints no traceback (real script files, run by a real interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("distributed")

SRC = str(Path(__file__).resolve().parents[2] / "src")

PRELUDE = """
import json, sys
from ctxeval import RetrievalEvaluator

records = [
    {"id": f"q{i}", "retrieved_context": [f"x {i}", f"the answer is {i}"],
     "ground_truth_context": [f"the answer is {i}"]}
    for i in range(30)
]
"""

BODIES = {
    "unguarded": """
result = RetrievalEvaluator(records, ["P@5", "recall@5"], scheduler="local").run()
print(json.dumps(result.aggregate))
""",
    "unguarded main()": """
def main():
    result = RetrievalEvaluator(records, ["P@5", "recall@5"], scheduler="local").run()
    print(json.dumps(result.aggregate))

main()
""",
    "guarded": """
def main():
    result = RetrievalEvaluator(records, ["P@5", "recall@5"], scheduler="local").run()
    print(json.dumps(result.aggregate))

if __name__ == "__main__":
    main()
""",
}


@pytest.mark.parametrize("body", list(BODIES), ids=list(BODIES))
def test_local_scheduler_from_a_script(tmp_path: Path, body: str) -> None:
    script = tmp_path / "evaluate_it.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(BODIES[body]))
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "precision@5": pytest.approx(0.2),
        "recall@5": 1.0,
    }
    warned = "worker processes would run this script again" in done.stderr
    assert warned == body.startswith("unguarded"), done.stderr
    if warned:
        assert f"{script}:" in done.stderr  # the warning points at the user's line
