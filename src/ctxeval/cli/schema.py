"""``ctxeval schema``: the JSON Schema of a dataset record or of the ``--config`` file."""

from __future__ import annotations

import json

import click

__all__ = ["schema_command"]


@click.command("schema")
@click.argument("what", type=click.Choice(["record", "config"]), default="record")
@click.option(
    "--mode",
    type=click.Choice(["text", "id"]),
    help="For 'record': the schema of one mode's record (default: either).",
)
def schema_command(what: str, mode: str | None) -> None:
    """Print the JSON Schema of a dataset record (default) or of the --config file.

    \b
    Examples:
      ctxeval schema > record.schema.json
      ctxeval schema record --mode id
      ctxeval schema config
    """
    if what == "config":
        from ctxeval.cli.config import ConfigFile

        document = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **ConfigFile.model_json_schema(by_alias=True),
        }
    else:
        from ctxeval.records.model import record_json_schema

        document = record_json_schema(mode)  # type: ignore[arg-type]
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
