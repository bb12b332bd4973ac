"""``ctxeval compare``: runs on the same queries, side by side, with paired significance."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import click
from click.core import ParameterSource

from ctxeval.cli.common import (
    MeasureType,
    PreparedRun,
    batch_size,
    dataset_options,
    empty_run_said_by_the_command,
    fail,
    guard,
    note_token_budgets,
    nothing_scored,
    prepare_dataset,
    report_skipped,
    resampling_options,
    result_column,
    save_or_fail,
    show_warning,
)
from ctxeval.cli.exits import EXIT_GATE
from ctxeval.cli.runs import (
    baseline_name,
    looks_like_trec_run,
    named_run_paths,
    warn_same_files,
)
from ctxeval.cli.trec_options import max_retrieved_option, relevance_level_option
from ctxeval.foundation.progress import Progress
from ctxeval.results.files import is_result_file

_EPILOG_COMPARE = """\b
Examples (from the repository's root):
  ctxeval compare fixtures/runs/*.jsonl -k 5 -k 10 --report report.html
  ctxeval compare base=fixtures/runs/fixed-100.jsonl new=fixtures/runs/paragraph.jsonl \\
      -k 10 --baseline base --fail-if-worse context_recall@10
  ctxeval compare 'fixtures/runs/*.jsonl' -k 10 --metric all --format markdown
  ctxeval compare a=tests/fixtures/trec_eval/results.test b=tests/fixtures/trec_eval/results.test \\
      --qrels tests/fixtures/trec_eval/qrels.test --metric ndcg@10
"""

#: The measures a TREC run is evaluated with when no --metric names them (as 'evaluate').
TREC_MEASURES = ("map", "mrr", "ndcg@10", "P@5", "recall@100")


# -- metric columns -----------------------------------------------------------------------------
#: How to get a measure or a cut-off the runs lack: ``remedy("measure", spec)`` or
#: ``remedy("cut-off", label)`` says what to add to the command (it depends on the runs: a
#: dataset is evaluated with -m and -k, a saved result was evaluated already).
Remedy = Callable[[str, str], str]


def _generic_remedy(kind: str, given: str) -> str:
    if kind == "measure":
        return f"evaluate the runs with it (-m {given})"
    return f"evaluate the runs at it (-k {given})"


def _measure(spec: str) -> Any:
    """The measure a spec names, or None when it names none (a typo, a micro average)."""
    from ctxeval.metrics.measures import parse_measure

    try:
        return parse_measure(spec)
    except ValueError:
        return None


def _column(
    given: str,
    columns: Sequence[str],
    flag: str,
    fed: dict[str, float] | None = None,
    remedy: Remedy = _generic_remedy,
) -> str:
    """A metric named on the command line as a result column; a name without '@k' is the
    measure at its deepest cut-off. A known measure the runs lack, or lack at that cut-off, is
    an error saying what they have and how to evaluate it."""
    from ctxeval.comparison.family import deepest_columns
    from ctxeval.cutoffs.cutoff import budget_problem
    from ctxeval.foundation.specs import unknown_name

    column = result_column(given)
    if column in columns:
        return column
    if "@" not in given and column in deepest_columns(columns, fed):
        return deepest_columns(columns, fed)[column]
    available = [c for c in columns if not c.startswith("micro_")]
    if column.startswith("micro_"):
        fail(
            f"{flag} {given}: a micro average has no per-query values to pair; compare "
            f"{column.removeprefix('micro_')} instead"
        )
    name, at, label = column.partition("@")
    evaluated = [c.partition("@")[2] for c in available if c.partition("@")[0] == name]
    if at and not label.isdigit() and (problem := budget_problem(label)) is not None:
        fail(f"{flag} {given}: {problem}")
    if at and evaluated:  # a known measure at a cut-off the runs were not evaluated at
        where = ", ".join(filter(None, evaluated)) or "no cut-off (the whole list)"
        if "" in evaluated and any(evaluated):
            where += " and the whole list"
        fail(
            f"{flag} {given}: the runs have {name} at {where}, not at {label}; choose "
            f"{'one of those' if any(evaluated) else f'{name}'}, or {remedy('cut-off', label)}"
        )
    if _measure(given) is not None and not evaluated:
        measures = ", ".join(dict.fromkeys(c.partition("@")[0] for c in available))
        fail(
            f"{flag} {given}: the runs were not evaluated with {name} (their measures: "
            f"{measures}); {remedy('measure', given)}"
        )
    problem = _spec_problem(given)
    if problem is not None and not problem.startswith("unknown measure"):
        fail(f"{flag} {given}: {problem}")  # a known measure's spec, mistyped: its own message
    fail(str(unknown_name(None, "measure", given, available, where=f"{flag} {given}")))


def _spec_problem(spec: str) -> str | None:
    """What is wrong with a measure spec (None when it parses)."""
    from ctxeval.metrics.measures import parse_measure

    try:
        parse_measure(spec)
    except ValueError as exc:
        return str(exc).removeprefix(f"{spec!r}: ")
    return None


def chosen_metrics(
    metrics: Sequence[str],
    gates: Sequence[str],
    columns: dict[str, list[str]],
    fed: dict[str, float] | None = None,
    remedy: Remedy = _generic_remedy,
) -> tuple[list[str], list[str]]:
    """The columns to compare (``--metric``; default
    :func:`~ctxeval.comparison.family.default_metrics`, as ``compare()``'s; ``all``: every
    metric at the deepest cut-off), then each gate's column, added when not compared. Checked
    against every run's columns before anything is scored."""
    from ctxeval.comparison.family import deepest_columns, default_metrics

    first = next(iter(columns.values()))
    if list(metrics) == ["all"]:
        wanted = list(deepest_columns(first, fed).values())
    elif metrics:
        wanted = [_column(given, first, "--metric", fed, remedy) for given in metrics]
    else:
        wanted = default_metrics(first, fed)
    gated = [_column(given, first, "--fail-if-worse", fed, remedy) for given in gates]
    wanted += [column for column in dict.fromkeys(gated) if column not in wanted]
    for run, available in columns.items():
        for column in wanted:
            if column not in available:
                fail(
                    f"run {run!r} has no {column!r} to compare (its columns: "
                    f"{', '.join(c for c in available if not c.startswith('micro_'))}); "
                    "evaluate the runs with the same metrics and cut-offs"
                )
    return list(dict.fromkeys(wanted)), gated


def regression_gates(
    report: Any, gated: Sequence[str], shared_only: bool = False
) -> list[dict[str, Any]]:
    """``--fail-if-worse``: each gate's outcome (``run``, ``metric``, ``passed``, ``message``):
    a run fails when it is significantly below the baseline on a gated metric after the
    correction. A run that lacks queries the others have fails too, unless ``shared_only``
    (``--align intersection`` given): the test on the shared queries cannot see what it did not
    answer."""
    outcomes = [] if shared_only or not gated else _incomplete(report)
    p_name = "Holm-adjusted p" if report.correction == "holm" else "p"
    for column in gated:
        for run in report.runs:
            if run == report.baseline:
                continue
            item = report.comparison(run, column)
            diff = "n/a" if item.diff is None else f"{item.diff:+.4f}"
            p = "n/a" if item.p_adjusted is None else f"{item.p_adjusted:.4f}"
            worse = item.significant and item.diff is not None and item.diff < 0
            if worse:
                message = (
                    f"{run} is worse than {report.baseline} on {column} (diff {diff}, {p_name} "
                    f"{p} < {report.alpha:g})"
                )
            else:
                better = item.significant and item.diff is not None and item.diff > 0
                verdict = "significantly better" if better else "not significantly worse"
                message = (
                    f"{run} vs {report.baseline} on {column}: diff {diff}, {p_name} {p} ({verdict})"
                )
            outcomes.append({"run": run, "metric": column, "passed": not worse, "message": message})
    return outcomes


def check_regressions(outcomes: Sequence[dict[str, Any]]) -> int:
    """Say each gate's outcome on stderr; exit code 1 when one failed, else 0."""
    for gate in outcomes:
        click.echo(f"ctxeval: {_gate_line(gate)}", err=True)
    return 0 if all(gate["passed"] for gate in outcomes) else EXIT_GATE


def _gate_line(gate: dict[str, Any]) -> str:
    return f"gate {'passed' if gate['passed'] else 'failed'}: {gate['message']}"


def _incomplete(report: Any) -> list[dict[str, Any]]:
    """Failed gates for the runs (not the baseline) that lack queries the others have."""
    from ctxeval.comparison.data import id_list

    return [
        {
            "run": run.run,
            "metric": None,
            "passed": False,
            "message": (
                f"{run.run} lacks {run.missing} of the queries the other runs have "
                f"({id_list(run.missing_ids)}), which a test on the shared queries cannot see; "
                "fix the run, or pass --align intersection to gate on the queries every run has"
            ),
        }
        for run in report.alignment.runs
        if run.run != report.baseline and run.missing
    ]


# -- evaluating the runs ------------------------------------------------------------------------
_DATASET_ONLY = {
    "match": "--match",
    "threshold": "--threshold",
    "tokenizer": "--tokenizer",
    "metric_set": "--metrics",
    "convention": "--convention",
    "measures": "-m/--measure",
    "corpus": "--corpus",
    "fuzzy_threshold": "--fuzzy-threshold",
    "budget_policy": "--budget-policy",
    "token_counter": "--token-counter",
    "on_error": "--on-error",
    "retrieved_field": "--retrieved-field",
    "ground_truth_field": "--ground-truth-field",
    "id_field": "--id-field",
    "scores_field": "--scores-field",
    "mode": "--mode",
    "text_key": "--text-key",
    "scheduler": "--scheduler",
}
#: Options for the runs ctxeval evaluates (datasets and TREC runs), none of which a saved
#: result needs: it was evaluated already (-k chooses among its cut-offs instead).
_EVALUATING = {
    **_DATASET_ONLY,
    "qrels": "--qrels",
    "workers": "--workers",
    "batch_size": "--batch-size",
    "relevance_level": "-l/--relevance-level",
    "max_retrieved": "-M/--max-retrieved",
    "skip_missing": "--skip-missing",
}


def _given(flags: dict[str, str]) -> list[str]:
    """The flags of ``flags`` given on the command line (a shared --config may set them)."""
    ctx = click.get_current_context()
    return [
        flag
        for name, flag in flags.items()
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]


def _apply(flags: list[str]) -> str:
    return f"{', '.join(flags)} {'applies' if len(flags) == 1 else 'apply'}"


def _labels(ks: Sequence[Any]) -> list[str]:
    from ctxeval.cutoffs.cutoff import cutoff_label, sort_cutoffs

    return [cutoff_label(k) for k in sort_cutoffs(ks)]


def _trec_measures(options: dict[str, Any]) -> list[str]:
    """The measures of a TREC run: the --metric and --fail-if-worse ones (default: evaluate's).
    With -k, each is evaluated at the -k cut-offs, as a dataset's measures are: the cut-offs
    compared are the ones asked for, and a --metric at another cut-off is an error."""
    named = [m for m in options["metric_columns"] if m != "all"]
    gates = list(options["gates"])
    measures = list(dict.fromkeys([*named, *gates])) if named else list(TREC_MEASURES)
    measures += [gate for gate in gates if gate not in measures]
    at_ks = []
    for spec in measures:
        flag = "--metric" if spec in named else "--fail-if-worse"
        if spec.startswith("micro_"):
            fail(f"{flag} {spec}: a micro average has no per-query values to pair")
        problem = _spec_problem(spec)
        if problem is not None:
            fail(f"{flag} {spec}: {problem}")
        measure = _measure(spec)
        if measure.definition.family == "span":
            fail(
                f"{flag} {spec}: span measures need the texts of the retrieved chunks and "
                "their spans; TREC runs have ids only"
            )
        at_ks.append(str(measure.at(None)) if options["ks"] else spec)
    return list(dict.fromkeys(at_ks))


def _prepare_trec(path: str, options: dict[str, Any]) -> PreparedRun:
    """A TREC run against --qrels, through the evaluator 'evaluate --run/--qrels' uses."""
    from ctxeval.evaluator import RetrievalEvaluator

    given = _given(_DATASET_ONLY)
    if given:
        fail(
            f"{_apply(given)} to datasets, not to TREC runs (judged by id against "
            "--qrels); name the measures with --metric, e.g. --metric ndcg@10"
        )
    budgets = [k for k in options["ks"] if k is not None and not isinstance(k, int)]
    if budgets:
        fail(
            f"-k {budgets[0]}: a context budget counts the retrieved texts, and TREC runs have "
            "ids only; give -k a number of documents, e.g. -k 10"
        )
    evaluator = RetrievalEvaluator.from_trec(
        path,
        options["qrels"],
        _trec_measures(options),
        relevance_level=1 if options["relevance_level"] is None else options["relevance_level"],
        max_retrieved=options["max_retrieved"],
        missing_queries="skip" if options["skip_missing"] else "zero",
        workers=options["workers"],
        **batch_size(options),
        progress=options["progress"],
    )
    return PreparedRun(evaluator, "id", tuple(options["ks"]))


def _check_measure_cutoffs(options: dict[str, Any]) -> None:
    """With -k, a dataset's -m measure at its own cut-off must be at one of -k's: the runs
    are compared at the cut-offs -k gives, not at another one left over from an -m."""
    if not options["ks"]:
        return
    labels = _labels(options["ks"])
    for spec in options["measures"]:
        measure = _measure(spec)
        if measure is not None and measure.k is not None and str(measure.k) not in labels:
            fail(
                f"-m {spec}: its cut-off {measure.k} is not one of -k's ({', '.join(labels)}), "
                f"at which the runs are compared; write -m {measure.at(None)} to evaluate it "
                f"at every -k, or add -k {measure.k}"
            )


def _prepare(path: str, options: dict[str, Any]) -> PreparedRun:
    if options["qrels"]:
        return _prepare_trec(path, options)
    trec_only = [
        flag
        for name, flag in (
            ("relevance_level", "-l/--relevance-level"),
            ("max_retrieved", "-M/--max-retrieved"),
            ("skip_missing", "--skip-missing"),
        )
        if options[name] not in (None, False)
    ]
    if trec_only:
        fail(f"{', '.join(trec_only)}: for TREC runs judged against --qrels, not for datasets")
    if looks_like_trec_run(path):
        fail(f"{path} looks like a TREC run file; give its judgments with --qrels QRELS")
    _check_measure_cutoffs(options)
    return prepare_dataset(path, options)


def _saved_at_cutoffs(run: str, columns: list[str], ks: Sequence[Any]) -> list[str]:
    """-k with a saved result: its columns at those cut-offs, which it must have (it cannot be
    evaluated again)."""
    labels = _labels(ks)
    have = list(dict.fromkeys(c.partition("@")[2] or "all" for c in columns))
    for label in labels:
        if label not in have:
            fail(
                f"-k {label}: run {run!r} is a saved result, evaluated at {', '.join(have)}, "
                f"and cannot be evaluated again; give -k among those, leave out -k, or "
                f"evaluate its dataset at -k {label} and compare that result"
            )
    return [c for c in columns if (c.partition("@")[2] or "all") in labels]


def _remedy(options: dict[str, Any], saved: bool) -> Remedy:
    """How to get a measure or a cut-off the runs lack, in the terms of these runs."""

    def remedy(kind: str, given: str) -> str:
        if saved:
            flag, what = ("-m", "with") if kind == "measure" else ("-k", "at")
            return (
                f"evaluate the datasets again {what} it (ctxeval evaluate DATASET {flag} "
                f"{given} -o RESULT: a saved result has only what it was evaluated with) and "
                "compare those results"
            )
        if kind == "cut-off":
            return f"evaluate the runs at it (-k {given})"
        if options["qrels"]:
            return f"evaluate the runs with it (--metric {given})"
        fix = f"add -m {given} to evaluate it"
        if not options["measures"]:
            fix += " (-m replaces the default measures: add an -m for each measure to compare)"
        measure = _measure(given)
        if measure.definition.family == "span" and not options["corpus"]:
            fix += (
                "; span measures locate the texts in --corpus DIR (unless the records have spans)"
            )
        return fix

    return remedy


@click.command("compare", epilog=_EPILOG_COMPARE)
@click.argument("runs", nargs=-1, required=True, metavar="[NAME=]PATH...")
@dataset_options
@click.option(
    "-m",
    "--measure",
    "measures",
    type=MeasureType(),
    multiple=True,
    help="Measure spec to compute for dataset runs (repeatable), e.g. span_iou@5 (with "
    "--corpus), ndcg@10; replaces --metrics.",
)
@click.option(
    "--qrels",
    type=click.Path(dir_okay=False),
    help="TREC qrels: every PATH that is not a saved result is a TREC run judged against it "
    "(as 'evaluate --run PATH --qrels QRELS').",
)
@relevance_level_option("With --qrels")
@max_retrieved_option("With --qrels")
@click.option(
    "--skip-missing",
    is_flag=True,
    help="With --qrels: leave out the queries of the qrels a run has no results for (by "
    "default they score 0, trec_eval -c); the runs are then paired on the queries they share.",
)
@click.option(
    "--baseline", help="Run to compare the others with (its NAME, or its PATH); default first."
)
@click.option(
    "--metric",
    "metric_columns",
    multiple=True,
    help="Measure to compare (repeatable), e.g. context_recall@5, ndcg@10, map@5; a name "
    "without @K is its deepest cut-off; 'all': every metric at the deepest cut-off. Default: "
    "recall and ndcg at the deepest cut-off (the largest budget, when -k gives budgets).",
)
@click.option(
    "--fail-if-worse",
    "gates",
    multiple=True,
    metavar="METRIC",
    help="Exit with code 1 when a run is significantly worse than the baseline on METRIC "
    "after the correction (repeatable; compared even if --metric leaves it out): a CI gate.",
)
@click.option(
    "--test",
    type=click.Choice(["randomization", "bootstrap"]),
    default="randomization",
    show_default=True,
    help="Paired significance test.",
)
@resampling_options
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the tests (after the correction for multiple comparisons).",
)
@click.option(
    "--correction",
    type=click.Choice(["holm", "none"]),
    default="holm",
    show_default=True,
    help="Over every comparison shown: each distinct metric x each run but the baseline.",
)
@click.option(
    "--align",
    type=click.Choice(["intersection", "error"]),
    default="intersection",
    show_default=True,
    help="Runs that do not cover the same queries: compare the queries every run has (with a "
    "warning), or stop with an error.",
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
    help="Write a self-contained HTML report (tables, plots, per-query table) here.",
)
@guard
def compare_command(runs: tuple[str, ...], **options: Any) -> None:
    """Compare runs (chunking strategies, retrievers) on the same queries, with significance.

    Each PATH is a dataset evaluated with the options below, a result saved with
    'ctxeval evaluate -o results.jsonl', or, with --qrels, a TREC run; a glob pattern gives
    every file it matches. NAME=PATH names a run; other runs are named after their file stems
    (bm25.result.jsonl: bm25). -k sets the cut-offs compared, for every kind of run. Metrics
    whose per-query values are identical in every run are compared once.
    """
    from ctxeval.comparison import compare as compare_runs

    named = named_run_paths(runs)
    note_token_budgets(options["ks"])
    if len(named) < 2:
        fail("give at least two runs to compare")
    warn_same_files(named)
    paths = [path for _, path in named]
    if options["report_path"]:
        from ctxeval.io.paths import check_output

        inputs = [*paths, options["qrels"]]
        check_output(
            options["report_path"], flag="--report", inputs=inputs, suffixes=(".html", ".htm")
        )
    baseline = baseline_name(options["baseline"], named)
    results, datasets = _evaluate_runs(named, options)
    with (
        warnings.catch_warnings(record=True) as caught,
        Progress.phase(options["progress"], stream=sys.stderr, label="comparing the runs"),
    ):
        warnings.simplefilter("always")
        report = compare_runs(
            results,
            metrics=options["chosen"],
            baseline=baseline,
            test=options["test"],
            n_resamples=options["n_resamples"],
            seed=options["seed"],
            alpha=options["alpha"],
            correction=options["correction"],
            align=options["align"],
        )
    for warning in caught:
        show_warning(warning.message, warning.category, warning.filename, warning.lineno)
    given = click.get_current_context().get_parameter_source("align")
    gates = regression_gates(report, options["gated"], given is not ParameterSource.DEFAULT)
    click.echo(_rendered(report, options["fmt"], gates))
    # Said before the report is written: a file that cannot be written (exit 2) does not hide
    # a gate that failed.
    code = check_regressions(gates)
    if options["report_path"]:
        from ctxeval.report import write_html_report

        path = options["report_path"]
        with Progress.phase(options["progress"], stream=sys.stderr, label=f"writing {path}"):
            written = save_or_fail(
                lambda: write_html_report(path, report, results, datasets=datasets), path
            )
        click.echo(f"ctxeval: wrote {written}", err=True)
    sys.exit(code)


def _evaluate_runs(
    named: list[tuple[str, str]], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every run's result, by name, and the datasets by name (for the report's texts).

    Everything is read and checked before the first run is scored: saved results are loaded,
    datasets and TREC runs prepared (their columns are known from the metrics), the metrics
    chosen (``options["chosen"]``, ``options["gated"]``)."""
    from ctxeval.results import EvaluationResult

    results: dict[str, EvaluationResult] = {}
    prepared: dict[str, tuple[str, PreparedRun]] = {}
    columns: dict[str, list[str]] = {}
    for name, path in named:
        if is_result_file(path):
            results[name] = EvaluationResult.load(path)
            _refuse_empty(name, results[name])
            columns[name] = [c for c in results[name].aggregate if not c.startswith("micro_")]
            if options["ks"]:
                columns[name] = _saved_at_cutoffs(name, columns[name], options["ks"])
        else:
            if not options["qrels"] and _has_no_records(path):
                fail(f"run {name!r}: {path} has no records; leave the run out of the comparison")
            prepared[name] = (path, _prepare(path, options))
            columns[name] = prepared[name][1].per_query_columns()
    if not prepared and (given := _given(_EVALUATING)):
        fail(
            f"{_apply(given)} to the runs ctxeval evaluates (datasets, TREC runs), "
            "and every run here is a saved result, evaluated already; leave them out, or "
            "compare the datasets (or TREC runs) themselves"
        )
    from ctxeval.comparison.family import characters_fed

    # Saved results say how much text each cut-off fed: budgets of different units are then
    # ordered by it (runs still to be scored are ordered by unit, then size).
    fed = characters_fed([r.summary for r in results.values()]) if not prepared else None
    remedy = _remedy(options, saved=named[0][0] in results)
    options["chosen"], options["gated"] = chosen_metrics(
        options["metric_columns"], options["gates"], columns, fed, remedy
    )
    datasets: dict[str, Any] = {}
    for name, (path, run) in prepared.items():
        click.echo(f"ctxeval: evaluating {path}", err=True)
        with empty_run_said_by_the_command():  # said below, in the command line's words
            results[name] = run.run()
        report_skipped(results[name])
        _refuse_empty(name, results[name])
        # A TREC run's records (ids and qrels) are built in memory by the evaluator.
        datasets[name] = run.evaluator.dataset if options["qrels"] else path
    return {name: results[name] for name, _ in named}, datasets


def _refuse_empty(name: str, result: Any) -> None:
    """Stop when a run scored no query (an empty dataset, every record skipped, or a result
    saved with --allow-empty): there is nothing of it to compare."""
    if problem := nothing_scored(result, "leave the run out of the comparison"):
        fail(f"run {name!r}: {problem}")


def _has_no_records(path: str) -> bool:
    """Whether a dataset file has nothing but blank space (read up to its first non-blank)."""
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 16):
                if chunk.strip(b" \t\r\n\xef\xbb\xbf"):
                    return False
    except OSError:
        return False  # the reader says why
    return True


def _rendered(report: Any, fmt: str, gates: Sequence[dict[str, Any]] = ()) -> str:
    """The report in ``fmt``; in JSON and Markdown with the gates' outcomes, when gated."""
    if fmt == "json":
        shown = report.to_dict()
        return json.dumps({**shown, "gates": list(gates)} if gates else shown, indent=2)
    if fmt == "markdown":
        said = [f"- {_gate_line(gate)}" for gate in gates]
        return str(report.to_markdown()) + ("\n" + "\n".join(said) + "\n" if said else "")
    if fmt == "latex":
        return str(report.to_latex())
    return str(report.to_text())
