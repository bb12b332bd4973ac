"""How the CLI tests run ctxeval: its real entry point, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Holds a sitecustomize that blocks every connection off the machine in the subprocess.
OFFLINE = Path(__file__).resolve().parent / "offline"


def offline_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ctxeval subprocess: this one's, with the network blocked."""
    merged = {**os.environ, "PYTHONWARNINGS": "default", **(env or {})}
    paths = [str(OFFLINE), *filter(None, merged.get("PYTHONPATH", "").split(os.pathsep))]
    merged["PYTHONPATH"] = os.pathsep.join(paths)
    return merged


def ctxeval(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = offline_env(env)
    return subprocess.run(
        [sys.executable, "-m", "ctxeval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )
