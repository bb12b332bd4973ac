"""``ctxeval convert``: datasets between formats and field names, TREC runs to records and back."""

from __future__ import annotations

from typing import Any

import click

from ctxeval.cli.common import conventions_as_notes, guard
from ctxeval.cli.fields import field_options, with_field_flags
from ctxeval.cli.flags import cli_text


@click.command("convert")
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("target", type=click.Path(dir_okay=False))
@click.option(
    "--qrels",
    "qrels_file",
    type=click.Path(dir_okay=False),
    help="SOURCE is a TREC run; write ID-mode records joining it with these qrels.",
)
@click.option(
    "--qrels-out",
    type=click.Path(dir_okay=False),
    help="With a .trec/.run TARGET: also write the qrels of the ID-mode records here.",
)
@click.option(
    "--mode",
    type=click.Choice(["text", "id"]),
    help="Convert contexts (text) or chunk ids (id), when the records carry both.",
)
@click.option(
    "--csv-safe/--raw-csv",
    default=True,
    help="With a .csv TARGET: text cells (ids, metadata) that begin with = + - @, a tab or a "
    "carriage return get a leading ' so that a spreadsheet shows them as text instead of "
    "running them as formulas (the default; ctxeval reads the file back without the quotes). "
    "--raw-csv writes them as they are.",
)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    show_default=True,
    help="Stop at the first bad record and write nothing, or convert the others and list "
    "the bad ones.",
)
@with_field_flags
@guard
def convert_command(source: str, target: str, **options: Any) -> None:
    """Convert a dataset between formats and to ctxeval's field names.

    \b
    Examples:
      ctxeval convert fixtures/records.jsonl records.csv    # any format to any other
      ctxeval convert tests/fixtures/trec_eval/results.test id-records.jsonl \\
          --qrels tests/fixtures/trec_eval/qrels.test        # TREC -> ID-mode records
      ctxeval convert id-records.jsonl run.trec --qrels-out qrels.txt   # ID mode -> TREC

    With --qrels, a query of the run without judgments is left out with a note, as trec_eval
    and evaluate --run leave it out; a judged query the run lacks gets an empty ranking.

    The first bad record stops the conversion and nothing is written; with --on-error skip
    the others are converted and the bad ones listed. TARGET (and --qrels-out) may not be an
    input; every file is written atomically. A TREC
    TARGET refuses ids with whitespace and, with --qrels-out, grades that are not whole numbers:
    they would read back different. A run's tag (6th column) is kept in the records' run_tag
    field and written back when every record has the same one (else the tag is ctxeval).
    """
    from ctxeval.io.convert import convert_dataset

    fields = field_options(options)
    with conventions_as_notes():  # a run's queries without judgments: left out, as trec_eval
        written, skipped = convert_dataset(
            source,
            target,
            qrels=options["qrels_file"],
            qrels_out=options["qrels_out"],
            fields=fields or None,
            csv_safe=options["csv_safe"],
            on_error=options["on_error"],
        )
    click.echo(f"ctxeval: wrote {written} records to {target}", err=True)
    for message in skipped[:5]:
        click.echo(f"ctxeval: skipped {cli_text(message)}", err=True)
    if len(skipped) > 5:
        click.echo(f"ctxeval: ... and {len(skipped) - 5} more bad record(s) skipped", err=True)
