"""Every example of every command's --help runs as written from the repository's root."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ctxeval, offline_env

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("evaluate", "compare", "chunking", "convert", "schema")


def examples(command: str) -> list[str]:
    """The example command lines of ``ctxeval COMMAND --help``, continuations joined and
    trailing comments dropped."""
    shown = ctxeval(command, "--help")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout[shown.stdout.index("Examples") :]
    joined = re.sub(r"\\\n\s*", "", text)
    lines = [line.strip() for line in joined.splitlines()]
    return [line.split("  #")[0].strip() for line in lines if line.startswith("ctxeval ")]


def test_every_command_has_examples() -> None:
    assert all(examples(command) for command in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_examples_run_from_a_clone(command: str, tmp_path: Path) -> None:
    # A copy of the clone's root: the examples read fixtures/ and tests/fixtures/ and write
    # where they are run, so they run in a folder that links to those.
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fixtures").symlink_to(ROOT / "tests" / "fixtures")
    program = f"{shlex.quote(sys.executable)} -m ctxeval"
    for line in examples(command):
        done = subprocess.run(
            ["bash", "-c", program + line.removeprefix("ctxeval")],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=offline_env(),
            check=False,
        )
        gated = "--fail-if-worse" in line or "--fail-under" in line
        assert done.returncode in ((0, 1) if gated else (0,)), (line, done.stderr)
        assert "Traceback" not in done.stderr, line
