"""``ctxeval evaluate``: one dataset, or a TREC run against qrels."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from ctxeval.cli.common import (
    MeasureType,
    batch_size,
    check_gate_names,
    check_gates,
    check_report_path,
    conventions_as_notes,
    dataset_options,
    empty_run_said_by_the_command,
    expected_columns,
    fail,
    gate_results,
    guard,
    note_token_budgets,
    nothing_scored,
    parse_gates,
    prepare_dataset,
    render_aggregate,
    report_skipped,
    save_or_fail,
    write_run_report,
)
from ctxeval.cli.flags import show_path_as
from ctxeval.cli.trec_eval import (
    DEFAULT_MEASURES,
    TREC_EVAL_VERSIONS,
    render_trec_eval,
    trec_eval_means,
    with_trec_eval_version,
)
from ctxeval.cli.trec_options import max_retrieved_option, relevance_level_option

_EPILOG_EVALUATE = """\b
Examples:
  ctxeval evaluate fixtures/runs/fixed-100.jsonl -k 1 -k 3 -k 5 -k 10
  ctxeval evaluate fixtures/runs/fixed-100.jsonl --match 'rouge-chunk(threshold=0.8)' --format json
  ctxeval evaluate fixtures/runs/fixed-100.jsonl -k 5 --fail-under context_recall@5=0.8
  ctxeval evaluate fixtures/runs/fixed-100.jsonl -k 1 -k 5 -k 10 --report run.html
  ctxeval evaluate fixtures/runs/fixed-100.jsonl --corpus fixtures/corpus \\
      -m span_iou@5 -m span_recall@5
  ctxeval evaluate fixtures/custom-fields.jsonl --retrieved-field hits --ground-truth-field gold
  ctxeval evaluate --run tests/fixtures/trec_eval/results.test \\
      --qrels tests/fixtures/trec_eval/qrels.test -m map -m ndcg@10 -m P@5
  ctxeval evaluate --run tests/fixtures/trec_eval/results.test \\
      --qrels tests/fixtures/trec_eval/qrels.rel_level --format trec_eval -q -l 2 -M 100
  (every example runs as written from the repository's root)
"""


@click.command("evaluate", epilog=_EPILOG_EVALUATE)
@click.argument("path", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@dataset_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "markdown", "trec_eval"]),
    default="table",
    show_default=True,
    help="How to print the aggregate results on stdout. trec_eval: its lines and names "
    "('map  all  0.1785'); with --run/--qrels and no -m, its default measures.",
)
@click.option(
    "-q",
    "--per-query",
    is_flag=True,
    help="With --format trec_eval: each query's lines before the summary, as trec_eval -q.",
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
@relevance_level_option("With --run/--qrels")
@max_retrieved_option("With --run/--qrels")
@click.option(
    "-c",
    "--complete",
    "complete",
    flag_value=True,
    default=None,
    help="With --run/--qrels: a query of the qrels with no results in the run scores 0 and "
    "counts in every mean (trec_eval -c). Default: yes, except with --format trec_eval, which "
    "like trec_eval leaves such queries out unless -c is given.",
)
@click.option(
    "--skip-missing",
    is_flag=True,
    help="With --run/--qrels: leave out the queries of the qrels with no results in the run "
    "(trec_eval without -c).",
)
@click.option(
    "--trec-eval-version",
    type=click.Choice(list(TREC_EVAL_VERSIONS)),
    help="Round iprec_at_recall's recall levels as this trec_eval does: 9 (pytrec_eval's; the "
    "default) or 10 (to the nearest number of relevant documents). Applies to every "
    "iprec_at_recall measure, trec_eval's default report included.",
)
@click.option(
    "-m",
    "--measure",
    "measures",
    type=MeasureType(),
    multiple=True,
    help="Measure spec (repeatable): ndcg@10, P@5, recall@100, map, mrr, hit_rate@5, "
    "context_recall@5, or trec_eval names (ndcg_cut_10, P_5); without @K it is evaluated at "
    "every -k. Span measures (span_iou@5, span_recall, span_precision, span_f1) need spans in "
    "the records or --corpus. Replaces --metrics. Default for --run/--qrels: map, mrr, ndcg@10, "
    "P@5, recall@100.",
)
@click.option(
    "--csv-safe/--raw-csv",
    default=True,
    help="With -o results.csv: text cells (ids, metadata) that begin with = + - @, a tab or a "
    "carriage return get a leading ' so that a spreadsheet shows them as text instead of "
    "running them as formulas (the default; ctxeval reads its file back without the quotes). "
    "--raw-csv writes them as they are.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Also write a self-contained HTML report of the run (aggregate, per-k curves, "
    "per-query table, lowest queries) here.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Exit 0 even when no query was scored (an empty dataset, or every record skipped).",
)
@guard
def evaluate_command(path: str | None, **options: Any) -> None:
    """Evaluate one dataset of retrieval results (or a TREC run against qrels).

    PATH is a JSONL, JSON, CSV or Parquet file with one record per query: retrieved contexts
    and ground-truth contexts (text mode) or retrieved and relevant chunk ids (ID mode); '-'
    reads JSONL from stdin.
    """
    gates = parse_gates(options["gates"])
    _check_flags(options)
    note_token_budgets(options["ks"])
    with contextlib.ExitStack() as stack:
        # The command says an empty result its own way (exit 2, or --allow-empty).
        stack.enter_context(empty_run_said_by_the_command())
        # records: what --report reads the queries' retrieved items from.
        result, records = _run(path, options, gates, stack)
        report_skipped(result)
        if not options["allow_empty"] and (problem := nothing_scored(result)):
            fail(problem)  # before anything is printed, drawn or saved
        outcomes = gate_results(result.aggregate, gates)
        _print_aggregate(result, options, outcomes)
        # The gates are said before anything is written: a file that cannot be written
        # (exit 2) does not hide a gate that failed.
        code = check_gates(outcomes)
        if options["report_path"]:
            write_run_report(options["report_path"], result, records, options["progress"])
    if options["output"]:
        output = options["output"]
        saved = save_or_fail(lambda: result.save(output, csv_safe=options["csv_safe"]), output)
        click.echo(f"ctxeval: saved {saved}", err=True)
    sys.exit(code)


def _check_flags(options: dict[str, Any]) -> None:
    """``--skip-missing`` folded into ``complete``; ``-q`` only with ``--format trec_eval``."""
    if options.pop("skip_missing"):
        if options["complete"]:
            fail("-c/--complete and --skip-missing contradict each other: give one of them")
        options["complete"] = False
    if options["per_query"] and options["fmt"] != "trec_eval":
        fail("-q/--per-query prints trec_eval's per-query lines: add --format trec_eval")


def _run(
    path: str | None,
    options: dict[str, Any],
    gates: list[tuple[str, float]],
    stack: contextlib.ExitStack,
) -> tuple[Any, Any]:
    """Evaluate what the command line names (a TREC run and its qrels, stdin, or a dataset
    PATH): the result, and the records --report reads the queries' retrieved items from."""
    if options["run_file"] or options["qrels_file"]:
        if path is not None:
            fail("give either a dataset PATH or --run/--qrels, not both")
        if not (options["run_file"] and options["qrels_file"]):
            fail("--run and --qrels go together")
        _refuse_dataset_options(options)
        _check_output(options, [options["run_file"], options["qrels_file"]])
        # A TREC run's records (ids and qrels) are built in memory by the evaluator.
        return _evaluate_trec(options, gates)
    if path is None:
        fail("give a dataset PATH (or --run and --qrels); see 'ctxeval evaluate --help'")
    if (
        options["relevance_level"] is not None
        or options["max_retrieved"] is not None
        or options["complete"] is not None
    ):
        fail(
            "-l/--relevance-level, -M/--max-retrieved, -c/--complete and --skip-missing "
            "apply to --run/--qrels, not to a dataset"
        )
    if path == "-":
        _trec_eval_version(options)
        _check_output(options, [])
        # Spooled to disk (kept until the report is written): the mode is read from the
        # first record, then the whole file is streamed (and worker processes read
        # batches), which a pipe cannot do twice.
        spool = stack.enter_context(tempfile.TemporaryDirectory(prefix="ctxeval-stdin-"))
        records = Path(spool) / "stdin.jsonl"
        show_path_as(str(records), "<stdin>")
        with records.open("wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        _refuse_a_json_array(records)
        return _evaluate_dataset(str(records), options, gates, source="<stdin>"), records
    from ctxeval.results.files import is_result_file

    if os.path.isfile(path) and is_result_file(path):
        fail(
            f"{path} is a result ctxeval saved, not a dataset: compare it with others "
            f"(ctxeval compare NAME={path} ...), or evaluate the dataset it came from"
        )
    _trec_eval_version(options)
    _check_output(options, [path])
    return _evaluate_dataset(path, options, gates), path


def _print_aggregate(result: Any, options: dict[str, Any], gates: list[dict[str, Any]]) -> None:
    """The aggregate on stdout, in the --format asked for (JSON with the gates' outcomes)."""
    shown = printed_aggregate(result.aggregate)
    if options["fmt"] == "trec_eval":
        rows = result.per_query if options["per_query"] else ()
        from ctxeval.io.convert import RUN_TAG_FIELD
        from ctxeval.io.trec import run_tag

        if options["run_file"]:
            tag = run_tag(options["run_file"])
        else:  # records converted from a run keep its tag (convert's run_tag field)
            tags = {row.get(RUN_TAG_FIELD) for row in result.per_query}
            tag = next(iter(tags)) if len(tags) == 1 else None
        means = trec_eval_means(shown, result.per_query)
        click.echo(render_trec_eval(means, rows, runid=tag if isinstance(tag, str) else None))
    else:
        click.echo(render_aggregate(shown, result.summary, options["fmt"], gates))


def printed_aggregate(aggregate: dict[str, float | None]) -> dict[str, float | None]:
    """The aggregate as printed: every measure evaluated, and the micro average of each of
    them only. The evaluator keeps ``micro_context_precision``, ``_recall`` and ``_f1`` whenever
    one set measure is evaluated (they come from the same counts); ``-m context_recall`` asks for
    one of them, so one is printed. A saved result (``-o``) keeps them all."""
    return {
        column: value
        for column, value in aggregate.items()
        if not column.startswith("micro_") or column.removeprefix("micro_") in aggregate
    }


# Options that mean something for a dataset only; with --run/--qrels they are refused rather
# than silently ignored (value: the option's default).
_DATASET_ONLY = {
    "match": ("--match", "rouge-chunk"),
    "threshold": ("--threshold", None),
    "tokenizer": ("--tokenizer", None),
    "metric_set": ("--metrics", "all"),
    "convention": ("--convention", None),
    "retrieved_field": ("--retrieved-field", None),
    "ground_truth_field": ("--ground-truth-field", None),
    "id_field": ("--id-field", None),
    "mode": ("--mode", None),
    "text_key": ("--text-key", None),
    "scores_field": ("--scores-field", None),
    "scheduler": ("--scheduler", None),
    "corpus": ("--corpus", None),
    "fuzzy_threshold": ("--fuzzy-threshold", 90.0),
    "budget_policy": ("--budget-policy", "whole"),
    "token_counter": ("--token-counter", "rouge"),
}


def _refuse_dataset_options(options: dict[str, Any]) -> None:
    # Only what the command line gave: a shared --config file may set them for datasets.
    ctx = click.get_current_context()
    given = [
        flag
        for name, (flag, default) in _DATASET_ONLY.items()
        if options.get(name) != default
        and ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]
    if given:
        fail(
            f"{', '.join(given)} apply to a dataset PATH, not to --run/--qrels (TREC runs are "
            "judged by id); name the measures with -m, e.g. -m map -m ndcg@10"
        )
    from_config = [
        flag.lstrip("-")
        for name, (flag, default) in _DATASET_ONLY.items()
        if options.get(name) != default
        and ctx.get_parameter_source(name) is click.core.ParameterSource.DEFAULT_MAP
    ]
    if from_config:  # a shared file may set them for datasets: said, not refused
        click.echo(
            f"ctxeval: note: --config sets {', '.join(from_config)}, which TREC runs do not use "
            "(they are judged by id)",
            err=True,
        )


def _check_output(options: dict[str, Any], inputs: list[str]) -> None:
    """-o and --report are checked before anything is read or scored."""
    from ctxeval.io.paths import check_output
    from ctxeval.results.files import check_result_path

    if options["report_path"]:
        check_report_path(options["report_path"], inputs)
    output = options["output"]
    if output is None:
        return
    if options.get("scheduler"):
        if "://" not in output:  # an fsspec URL (s3://...) is checked by its filesystem
            check_output(output, flag="-o/--output", inputs=inputs, directory=True)
    else:
        check_result_path(output, flag="-o/--output", inputs=inputs)


def _refuse_a_json_array(spooled: Path) -> None:
    """Stdin is read as JSONL; a JSON array there (one record over many lines, or all on one)
    is said as such, with what to do, instead of as a bad record on every line."""
    with spooled.open("rb") as handle:
        start = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"["):
        fail(
            "stdin holds a JSON array, and 'evaluate -' reads JSONL (one record a line): save "
            "it as FILE.json and give its path, or turn it into lines, e.g. jq -c '.[]' | "
            "ctxeval evaluate -"
        )


def _evaluate_dataset(
    path: str, options: dict[str, Any], gates: list[tuple[str, float]], source: str | None = None
) -> Any:
    prepared = prepare_dataset(path, options, source=source)
    check_gate_names(gates, prepared.columns())
    if options.get("scheduler") and options["output"]:
        # Distributed: the workers write the rows straight into the output directory.
        directory, options["output"] = options["output"], None
        result = prepared.run(output=directory)
        click.echo(f"ctxeval: saved {directory} (Parquet parts and _result.json)", err=True)
        return result
    return prepared.run()


TREC_MEASURES = ("map", "mrr", "ndcg@10", "P@5", "recall@100")


def _trec_eval_version(options: dict[str, Any]) -> None:
    """--trec-eval-version: every iprec_at_recall of -m rounds as that trec_eval does."""
    if options["trec_eval_version"]:
        specs = with_trec_eval_version(options["measures"], options["trec_eval_version"])
        options["measures"] = tuple(specs)


def _evaluate_trec(options: dict[str, Any], gates: list[tuple[str, float]]) -> tuple[Any, Any]:
    """The result of --run against --qrels, and the ID-mode records it scored (for --report)."""
    from ctxeval.evaluator import RetrievalEvaluator
    from ctxeval.io.trec import read_trec_run

    measures = list(options["measures"])
    if not measures and options["fmt"] == "trec_eval":
        measures = [spec for _, spec in DEFAULT_MEASURES]
    elif not measures:
        measures = list(TREC_MEASURES)
        if options["ks"]:  # the default measures at the cut-offs asked for, as compare's
            from ctxeval.metrics.measures import parse_measure

            measures = list(dict.fromkeys(str(parse_measure(m).at(None)) for m in measures))
    if options["trec_eval_version"]:
        measures = with_trec_eval_version(measures, options["trec_eval_version"])
    run_file = options["run_file"]
    level = options["relevance_level"]
    complete = options["complete"]
    if complete is None:  # trec_eval's report is trec_eval's default: without -c
        complete = options["fmt"] != "trec_eval"
    with conventions_as_notes():
        evaluator = RetrievalEvaluator.from_trec(
            run_file,
            options["qrels_file"],
            measures,
            relevance_level=1 if level is None else level,
            max_retrieved=options["max_retrieved"],
            missing_queries="zero" if complete else "skip",
            workers=options["workers"],
            **batch_size(options),
            progress=options["progress"],
        )
        check_gate_names(gates, expected_columns(evaluator.metrics_for("id"), options["ks"]))
        if not read_trec_run(run_file):
            click.echo(
                f"ctxeval: note: the run {run_file} is empty (no result lines): every query "
                f"of {options['qrels_file']} scores 0",
                err=True,
            )
        result = evaluator.run(k=list(options["ks"]) or None)
    return result, evaluator.dataset
