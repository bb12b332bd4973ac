"""The ``ctxeval`` command line: evaluate, compare, convert, schema.

Results go to stdout, progress and messages to stderr. Exit codes: 0 success, 1 a ``--fail-under``
gate failed, 2 a usage or input error (with a message, never a traceback, for user mistakes).
"""

from __future__ import annotations

import click

from ctxeval import __version__
from ctxeval.cli.compare import compare
from ctxeval.cli.convert import convert
from ctxeval.cli.evaluate import evaluate
from ctxeval.cli.schema import schema

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxeval")
def main() -> None:
    """Evaluate the context a RAG retriever returns: deterministic, offline, no LLM."""


main.add_command(evaluate)
main.add_command(compare)
main.add_command(convert)
main.add_command(schema)
