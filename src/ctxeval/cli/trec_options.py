"""The options that judge TREC runs as trec_eval does (``-l``, ``-M``), shared by ``evaluate
--run/--qrels`` and ``compare --qrels`` so that both judge a run alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["max_retrieved_option", "relevance_level_option"]


def relevance_level_option(scope: str) -> Callable[[Any], Any]:
    """``-l/--relevance-level`` (``scope``: when it applies, e.g. "With --qrels")."""
    return click.option(
        "-l",
        "--relevance-level",
        type=click.FloatRange(min=0, min_open=True),
        help=f"{scope}: the lowest grade that counts as relevant (trec_eval -l; default 1).",
    )


def max_retrieved_option(scope: str) -> Callable[[Any], Any]:
    """``-M/--max-retrieved``."""
    return click.option(
        "-M",
        "--max-retrieved",
        type=click.IntRange(min=1),
        help=f"{scope}: only the first M documents of each query count (trec_eval -M).",
    )
