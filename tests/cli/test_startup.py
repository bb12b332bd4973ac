"""Starting is cheap: ``import ctxeval`` and ``ctxeval --help`` load no stage of the flow.

Each check runs in a fresh interpreter and lists the ctxeval modules it loaded. The foundation
(errors and the like) may load; a stage package (records, text, matching, metrics, ...) may not,
and neither may numpy. The help's one-line summaries are kept apart from the commands (so the
listing imports none); a test checks that each is the command's own.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from ctxeval.cli.lazy import COMMANDS, LazyGroup

#: Packages loading nothing of the flow may import: the root, the foundation, and the CLI's
#: group (its lazy table, exit codes and message wording).
LIGHT = ("ctxeval.foundation", "ctxeval.cli.lazy", "ctxeval.cli.exits", "ctxeval.cli.flags")


def _loaded(code: str) -> list[str]:
    """The modules of ctxeval (and numpy, if any) loaded by ``code`` in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ctxeval', 'numpy'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def _heavy(loaded: list[str]) -> list[str]:
    return [m for m in loaded if m not in ("ctxeval", "ctxeval.cli") and not m.startswith(LIGHT)]


def test_import_ctxeval_loads_no_stage() -> None:
    loaded = _loaded("import ctxeval")
    assert "ctxeval" in loaded
    assert _heavy(loaded) == []


def test_help_loads_no_stage() -> None:
    code = (
        "import contextlib, io\nfrom ctxeval.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    assert run(['--help']) == 0"
    )
    loaded = _loaded(code)
    assert "ctxeval.cli" in loaded
    assert _heavy(loaded) == []


def test_the_probe_sees_a_stage_when_one_loads() -> None:
    # The check above can fail: a module of the flow is reported.
    assert "ctxeval.metrics.core" in _heavy(_loaded("import ctxeval.metrics.core"))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_commands_own(name: str) -> None:
    command = COMMANDS[name].load()
    assert command.name == name
    assert command.get_short_help_str(limit=len(COMMANDS[name].summary)) == COMMANDS[name].summary


def test_an_unknown_command_is_none() -> None:
    group = LazyGroup("ctxeval")
    with click.Context(group) as ctx:
        assert group.get_command(ctx, "evaluat") is None
        assert group.list_commands(ctx) == sorted(COMMANDS)
