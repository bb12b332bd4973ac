"""The command group's subcommands, imported when one is run or asked for its help.

``ctxeval --help`` lists every command with its one-line summary, which is kept here, so the
listing imports no command module and no stage of the flow (``tests/cli/test_startup.py`` checks
both, and that each summary is the command's own).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass

import click

__all__ = ["COMMANDS", "LazyCommand", "LazyGroup"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives (``module``, ``attribute``) and its one-line summary."""

    module: str
    attribute: str
    summary: str

    def load(self) -> click.Command:
        command = getattr(importlib.import_module(self.module), self.attribute)
        if not isinstance(command, click.Command):  # a wrong entry in COMMANDS: ctxeval's bug
            raise TypeError(f"{self.module}.{self.attribute} is not a click command")
        return command


COMMANDS: dict[str, LazyCommand] = {
    "evaluate": LazyCommand(
        "ctxeval.cli.evaluate",
        "evaluate_command",
        "Evaluate one dataset of retrieval results (or a TREC run...",
    ),
    "compare": LazyCommand(
        "ctxeval.cli.compare",
        "compare_command",
        "Compare runs (chunking strategies, retrievers) on the same...",
    ),
    "chunking": LazyCommand(
        "ctxeval.cli.chunking",
        "chunking_command",
        "Compare chunkers: chunk CORPUS, retrieve for each question of...",
    ),
    "convert": LazyCommand(
        "ctxeval.cli.convert",
        "convert_command",
        "Convert a dataset between formats and to ctxeval's field names.",
    ),
    "schema": LazyCommand(
        "ctxeval.cli.schema",
        "schema_command",
        "Print the JSON Schema of a dataset record (default) or of the...",
    ),
}
"""Every subcommand by name, in the order of the help's listing (sorted, as click lists)."""


class LazyGroup(click.Group):
    """A group whose subcommands are :data:`COMMANDS`, each imported when first needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        return None if entry is None else entry.load()

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name is not None and name not in COMMANDS and not name.startswith("-"):
            raise click.UsageError(f"No such command {name!r}.{_did_you_mean(name)}", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name].summary) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _did_you_mean(name: str) -> str:
    """The commands close to ``name``, as click words it."""
    close = sorted(difflib.get_close_matches(name, COMMANDS))
    if not close:
        return ""
    if len(close) == 1:
        return f" Did you mean {close[0]!r}?"
    return f" (Did you mean one of: {', '.join(map(repr, close))}?)"
