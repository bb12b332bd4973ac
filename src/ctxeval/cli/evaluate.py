"""``ctxeval evaluate``: one dataset, or a TREC run against qrels."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click

from ctxeval.cli.common import (
    check_gates,
    dataset_options,
    fail,
    guard,
    parse_gates,
    render_aggregate,
    run_dataset,
)

_EPILOG_EVALUATE = """\b
Examples:
  ctxeval evaluate runs/fixed-512.jsonl -k 1 -k 3 -k 5 -k 10
  ctxeval evaluate runs/fixed-512.jsonl --match 'rouge-chunk(threshold=0.8)' --format json
  ctxeval evaluate runs/fixed-512.jsonl --fail-under context_recall@5=0.8
  ctxeval evaluate runs/ragas.jsonl --retrieved-field retrieved_contexts \\
      --ground-truth-field reference_contexts
  ctxeval evaluate --run run.trec --qrels qrels.txt -m map -m ndcg@10 -m P@5
"""


@click.command("evaluate", epilog=_EPILOG_EVALUATE)
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@dataset_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "markdown"]),
    default="table",
    show_default=True,
    help="How to print the aggregate results on stdout.",
)
@click.option(
    "--fail-under",
    "gates",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit with code 1 when an aggregate is below VALUE (repeatable): a CI gate.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="Also save the full result (.jsonl, .json, .csv or .parquet).",
)
@click.option("--run", "run_file", type=click.Path(dir_okay=False), help="TREC run file.")
@click.option("--qrels", "qrels_file", type=click.Path(dir_okay=False), help="TREC qrels file.")
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="Measure spec (repeatable): ndcg@10, P@5, recall@100, map, mrr, hit_rate@5, "
    "context_recall@5, or trec_eval names (ndcg_cut_10, P_5); without @K it is evaluated at "
    "every -k. Replaces --metrics. Default for --run/--qrels: map, mrr, ndcg@10, P@5, recall@100.",
)
@guard
def evaluate_command(path: str | None, **options: Any) -> None:
    """Evaluate one dataset of retrieval results (or a TREC run against qrels).

    PATH is a JSONL, JSON, CSV or Parquet file with one record per query: retrieved contexts
    and ground-truth contexts (text mode) or retrieved and relevant chunk ids (ID mode).
    """
    gates = parse_gates(options["gates"])
    if options["run_file"] or options["qrels_file"]:
        if path is not None:
            fail("give either a dataset PATH or --run/--qrels, not both")
        if not (options["run_file"] and options["qrels_file"]):
            fail("--run and --qrels go together")
        result = _evaluate_trec(options)
    else:
        if path is None:
            fail("give a dataset PATH (or --run and --qrels); see 'ctxeval evaluate --help'")
        result = run_dataset(path, options)
    if options["output"]:
        saved = result.save(options["output"])
        click.echo(f"ctxeval: saved {saved}", err=True)
    aggregate, summary = result.aggregate, result.summary
    for skipped in result.skipped[:5]:
        click.echo(f"ctxeval: skipped {skipped['location']}: {skipped['message']}", err=True)
    if len(result.skipped) > 5:
        click.echo(f"ctxeval: ... and {len(result.skipped) - 5} more skipped", err=True)
    click.echo(render_aggregate(aggregate, summary, options["fmt"]))
    sys.exit(check_gates(aggregate, gates))


TREC_MEASURES = ("map", "mrr", "ndcg@10", "P@5", "recall@100")


def _evaluate_trec(options: dict[str, Any]) -> Any:
    from ctxeval.errors import ConventionWarning
    from ctxeval.evaluator import RetrievalEvaluator

    measures = list(options["measures"]) or list(TREC_MEASURES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConventionWarning)
        evaluator = RetrievalEvaluator.from_trec(
            options["run_file"],
            options["qrels_file"],
            measures,
            workers=options["workers"],
            progress=options["progress"],
        )
        result = evaluator.run(k=list(options["ks"]) or None)
    for warning in caught:
        if isinstance(warning.message, ConventionWarning):
            click.echo(f"ctxeval: note: {warning.message}", err=True)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return result
