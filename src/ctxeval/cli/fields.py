"""The options that name a dataset's fields (``--retrieved-field``, ``--scores-field``, ...),
shared by every command that reads records, and the ``fields`` mapping they give."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["field_flags", "field_options", "with_field_flags"]


def field_flags() -> list[Callable[[Any], Any]]:
    """Fresh ``click`` options naming the fields (each command gets its own)."""
    return [
        click.option("--retrieved-field", help="Field with the retrieved contexts or ids."),
        click.option("--ground-truth-field", help="Field with the ground truth (or qrels)."),
        click.option("--id-field", help="Field with the record id."),
        click.option(
            "--scores-field",
            help="Field with the retrieval scores of the retrieved items, for "
            "ndcg(ties=average) (default: retrieved_scores).",
        ),
        click.option(
            "--text-key",
            help="Key holding each item's text when contexts are documents (default: "
            "page_content, text or content).",
        ),
    ]


def with_field_flags(function: Callable[..., Any]) -> Callable[..., Any]:
    """A command with the field options."""
    for option in reversed(field_flags()):
        function = option(function)
    return function


def field_options(options: dict[str, Any]) -> dict[str, str]:
    """The field mapping the ``--retrieved-field``, ``--ground-truth-field``, ``--id-field``,
    ``--scores-field``, ``--text-key`` (and ``--mode``, where the command has it) options
    give."""
    return {
        key: value
        for key, value in (
            ("retrieved", options.get("retrieved_field")),
            ("ground_truth", options.get("ground_truth_field")),
            ("id", options.get("id_field")),
            ("mode", options.get("mode")),
            ("text_key", options.get("text_key")),
            ("scores", options.get("scores_field")),
        )
        if value
    }
