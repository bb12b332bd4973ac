"""The ``ctxeval`` command line: evaluate, compare, chunking, convert, schema.

Results go to stdout, progress and messages to stderr. Exit codes (``ctxeval --help`` lists
them): 0 success; 1 a gate failed (``--fail-under``); 2 a usage or input error, with a one-line
message naming the file, option or setting and the fix, never a traceback; 3 an internal error
(a bug in ctxeval: one line saying what failed and how to report it; ``--debug`` or
``CTXEVAL_DEBUG=1`` shows the traceback); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from ctxeval import __version__
from ctxeval.cli.exits import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE
from ctxeval.cli.lazy import LazyGroup
from ctxeval.foundation.errors import InvalidArgumentError

__all__ = ["app", "main", "run"]

_EPILOG = """\b
Exit codes: 0 ok, 1 a gate failed, 2 a usage or input error, 3 an internal error (a bug:
please report it), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
\b
Environment: CTXEVAL_COMPILED=auto|always|never (the compiled ROUGE-L kernel of
pip install 'ctxeval[fast]'; auto loads it once 20 million characters have been tokenised
without it: loading costs about 0.5 s, compiling it the first time a few seconds, so small
runs are faster without it), CTXEVAL_DEBUG=1.
"""


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG
)
@click.version_option(__version__, prog_name="ctxeval")
@click.option(
    "--debug",
    is_flag=True,
    envvar="CTXEVAL_DEBUG",
    help="Show the Python traceback of an internal error (also CTXEVAL_DEBUG=1).",
)
@click.pass_context
def app(ctx: click.Context, debug: bool) -> None:
    """Evaluate the context a RAG retriever returns: deterministic, offline, no LLM."""
    ctx.obj = {"debug": debug}


_SCORING = ("evaluate", "compare", "chunking")  # the commands that may match texts
_HELP = frozenset({"--help", "-h"})


def _debugging(argv: Sequence[str]) -> bool:
    flag = os.environ.get("CTXEVAL_DEBUG", "").lower() not in ("", "0", "false", "no")
    return flag or "--debug" in argv


#: Raised by click (8.2 and later) for a group called with no arguments: it carries the help.
_HELP_INSTEAD: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _click_message(exc: click.ClickException) -> str:
    """Click's own errors (a bad option value, an unknown option, a missing argument) in the
    one-line form of ctxeval's: click's message, its did-you-mean included, then where the
    help is, instead of click's three lines (usage, "Try ...", "Error: ...")."""
    message = " ".join(exc.format_message().split())
    ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    if ctx is None:
        return message
    return f"{message} (see '{ctx.command_path} --help')"


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), None)
    if command in _SCORING and not _HELP.intersection(args):
        from ctxeval.foundation.compiled import read_environment

        try:
            read_environment()  # a bad CTXEVAL_COMPILED stops the command before any reading
        except InvalidArgumentError as exc:
            click.echo(f"ctxeval: error: {exc} (see 'ctxeval --help')", err=True)
            return EXIT_USAGE
    try:
        returned = app.main(args=args, prog_name="ctxeval", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        # A step that knows what it leaves behind says so (the harness: which files it wrote);
        # click turns a KeyboardInterrupt into an Abort caused by it.
        cause = exc if isinstance(exc, KeyboardInterrupt) else exc.__cause__
        said = str(cause) if isinstance(cause, KeyboardInterrupt) else ""
        click.echo(f"ctxeval: {said or 'interrupted'}", err=True)
        return EXIT_INTERRUPTED
    except _HELP_INSTEAD as exc:  # 'ctxeval' alone: the help, as click shows it
        exc.show()
        return EXIT_USAGE
    except click.ClickException as exc:
        click.echo(f"ctxeval: error: {_click_message(exc)}", err=True)
        return EXIT_USAGE if exc.exit_code == 2 else exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except Exception as exc:  # anything else is ctxeval's fault, not the user's
        if _debugging(args):
            traceback.print_exc()
        click.echo(
            f"ctxeval: internal error: {type(exc).__name__}: {exc}. This is a bug in ctxeval, "
            f"not in your input: please report it with the command you ran and ctxeval "
            f"{__version__}" + ("" if _debugging(args) else " (add --debug for the traceback)"),
            err=True,
        )
        return EXIT_INTERNAL
    return returned if isinstance(returned, int) else 0


def main() -> NoReturn:
    """The ``ctxeval`` console script."""
    sys.exit(run())
