"""``ctxeval compare``: runs on the same queries, side by side, with paired significance."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ctxeval.cli.common import (
    PreparedRun,
    dataset_options,
    fail,
    guard,
    prepare_dataset,
    report_skipped,
    result_column,
    save_or_fail,
)
from ctxeval.cli.dialect import cli_syntax

_EPILOG_COMPARE = """\b
Examples:
  ctxeval compare runs/fixed-512.jsonl runs/sentence.jsonl runs/semantic.jsonl --report report.html
  ctxeval compare a.jsonl b.jsonl -k 5 -k 10 --baseline a --format markdown
  ctxeval compare results-a.jsonl results-b.jsonl   # results saved with 'evaluate -o'
"""


def _is_saved_result(path: str) -> bool:
    if not path.lower().endswith(".jsonl"):
        return False
    with open(path, "rb") as handle:  # bytes: a non-UTF-8 dataset is the reader's to report
        first = handle.readline()
    try:
        return isinstance(json.loads(first), dict) and "ctxeval_result" in json.loads(first)
    except ValueError:
        return False


def _deepest_columns(results: dict[str, Any]) -> list[str]:
    """Each metric once, at the deepest cut-off: a sweep of k would otherwise multiply the
    comparisons that Holm's correction must pay for. With budgets, the largest budget: runs
    are then compared at equal context, which fixed counts of chunks of different sizes are
    not."""
    first = next(iter(results.values()))
    deepest: dict[str, tuple[tuple[int, str, int], str]] = {}
    for column in first.aggregate:
        if column.startswith("micro_"):
            continue
        name, _, k = column.partition("@")
        depth = (0, "", int(k)) if k.isdigit() else (1, "", 0) if not k else (2, k[-1], int(k[:-1]))
        if name not in deepest or depth > deepest[name][0]:
            deepest[name] = (depth, column)
    return [column for _, column in deepest.values()]


def _check_metric_names(
    given: Sequence[str], wanted: Sequence[str], columns: dict[str, list[str]]
) -> None:
    """Stop, before scoring, at a --metric that some run will not have."""
    from ctxeval.specs import unknown_name

    for name, column in zip(given, wanted, strict=True):
        for run, available in columns.items():
            if column not in available:
                fail(
                    str(
                        unknown_name(
                            None,
                            "measure",
                            name,
                            available,
                            where=f"--metric {name} (run {run!r})",
                        )
                    )
                )


def _run_names(paths: Sequence[str]) -> list[str]:
    names: list[str] = []
    for path in paths:
        stem = Path(path).stem or "run"
        name, n = stem, 2
        while name in names:
            name, n = f"{stem}-{n}", n + 1
        names.append(name)
    return names


@click.command("compare", epilog=_EPILOG_COMPARE)
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@dataset_options
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="Measure spec to compute for dataset runs (repeatable), e.g. span_iou@5 (with "
    "--corpus), ndcg@10; replaces --metrics.",
)
@click.option("--baseline", help="Run name (file stem) to compare the others with; default first.")
@click.option(
    "--metric",
    "metric_columns",
    multiple=True,
    help="Measure to compare (repeatable), e.g. context_recall@5, ndcg@10, map@5; default: "
    "every metric at the deepest cut-off (the largest budget, when -k gives budgets).",
)
@click.option(
    "--test",
    type=click.Choice(["randomization", "bootstrap"]),
    default="randomization",
    show_default=True,
    help="Paired significance test.",
)
@click.option("--n-resamples", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05)
@click.option(
    "--correction", type=click.Choice(["holm", "none"]), default="holm", show_default=True
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "latex", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Write a self-contained HTML report (tables, plots, worst queries) here.",
)
@guard
def compare_command(paths: tuple[str, ...], **options: Any) -> None:
    """Compare runs (chunking strategies, retrievers) on the same queries, with significance.

    Each PATH is a dataset evaluated with the options below, or a result saved with
    'ctxeval evaluate -o results.jsonl'. Runs are named after their file stems.
    """
    from ctxeval.comparison import compare as compare_runs
    from ctxeval.results import EvaluationResult

    if len(paths) < 2:
        fail("give at least two runs to compare")
    if options["report_path"]:
        from ctxeval.io.paths import check_output

        check_output(
            options["report_path"], flag="--report", inputs=paths, suffixes=(".html", ".htm")
        )
    names = _run_names(paths)
    if options["baseline"] is not None and options["baseline"] not in names:
        from ctxeval.specs import unknown_name

        fail(str(unknown_name(None, "run", options["baseline"], names, where="--baseline")))
    # Everything is read and checked before the first dataset is scored: saved results are
    # loaded, datasets prepared (their columns are known from the metrics).
    results: dict[str, EvaluationResult] = {}
    prepared: dict[str, tuple[str, PreparedRun]] = {}
    columns: dict[str, list[str]] = {}
    for name, path in zip(names, paths, strict=True):
        if _is_saved_result(path):
            results[name] = EvaluationResult.load(path)
            columns[name] = [c for c in results[name].aggregate if not c.startswith("micro_")]
        else:
            prepared[name] = (path, prepare_dataset(path, options))
            columns[name] = prepared[name][1].per_query_columns()
    wanted = [result_column(m) for m in options["metric_columns"]]
    _check_metric_names(options["metric_columns"], wanted, columns)
    datasets: dict[str, str] = {}
    for name in names:
        if name in prepared:
            path, run = prepared[name]
            click.echo(f"ctxeval: evaluating {path}", err=True)
            results[name] = run.run()
            report_skipped(results[name])
            datasets[name] = path
    results = {name: results[name] for name in names}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = compare_runs(
            results,
            metrics=wanted or _deepest_columns(results),
            baseline=options["baseline"],
            test=options["test"],
            n_resamples=options["n_resamples"],
            seed=options["seed"],
            alpha=options["alpha"],
            correction=options["correction"],
        )
    for warning in caught:
        click.echo(f"ctxeval: warning: {cli_syntax(str(warning.message))}", err=True)
    fmt = options["fmt"]
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    elif fmt == "markdown":
        click.echo(report.to_markdown())
    elif fmt == "latex":
        click.echo(report.to_latex())
    else:
        click.echo(report.to_text())
    if options["report_path"]:
        from ctxeval.report import write_html_report

        path = options["report_path"]
        written = save_or_fail(
            lambda: write_html_report(path, report, results, datasets=datasets), path
        )
        click.echo(f"ctxeval: wrote {written}", err=True)
