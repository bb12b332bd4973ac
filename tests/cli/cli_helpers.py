"""How the CLI tests run ctxeval: its real entry point, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def ctxeval(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "default", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ctxeval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )
