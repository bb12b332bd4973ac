"""The ``ctxeval`` command line: evaluate, compare, convert.

Results go to stdout, progress and messages to stderr. Exit codes: 0 success, 1 a ``--fail-under``
gate failed, 2 a usage or input error (with a message, never a traceback, for user mistakes).
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
import tomllib

from ctxeval import __version__
from ctxeval.errors import CtxevalError
from ctxeval.metrics.base import MetricBase

EXIT_GATE = 1
EXIT_USAGE = 2

_EPILOG_EVALUATE = """\b
Examples:
  ctxeval evaluate runs/fixed-512.jsonl -k 1 -k 3 -k 5 -k 10
  ctxeval evaluate runs/fixed-512.jsonl --match 'rouge-chunk(threshold=0.8)' --format json
  ctxeval evaluate runs/fixed-512.jsonl --fail-under context_recall@5=0.8
  ctxeval evaluate runs/ragas.jsonl --retrieved-field retrieved_contexts \\
      --ground-truth-field reference_contexts
  ctxeval evaluate --run run.trec --qrels qrels.txt -m map -m ndcg@10 -m P@5
"""


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"ctxeval: error: {message}", err=True)
    sys.exit(code)


def _guard(function: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ctxeval's and the OS's errors into one-line messages and exit code 2."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.showwarning = _show_warning
        try:
            return function(*args, **kwargs)
        except CtxevalError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    click.echo(f"ctxeval: warning: {message}", err=True)


def _load_config(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--config file.toml``: its keys become option defaults (command line wins)."""
    if value is None:
        return None
    try:
        data = tomllib.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"cannot read {value}: {exc}") from None
    section = data.get(ctx.info_name or "", data)
    defaults: dict[str, Any] = {}
    # Settings are named like the long options: format = "json", fail-under = [...], k = [3].
    by_flag = {
        flag.lstrip("-").replace("-", "_"): param.name
        for param in ctx.command.params
        if isinstance(param, click.Option) and param.name and param.name != "config"
        for flag in param.opts
        if flag.startswith("--")
    }
    by_flag["k"] = "ks"
    for key, setting in section.items():
        if isinstance(setting, dict):
            continue
        name = by_flag.get(key.replace("-", "_"))
        if name is None:
            raise click.BadParameter(
                f"{value}: unknown setting {key!r}; valid settings: "
                + ", ".join(sorted(flag.replace("_", "-") for flag in by_flag))
            )
        defaults[name] = tuple(setting) if isinstance(setting, list) else setting
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def _dataset_options(function: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--match",
            "match",
            default="rouge-chunk",
            show_default=True,
            help="Matching strategy spec: exact-chunk, exact-sentence, rouge-chunk, "
            "rouge-sentence, fuzzy-chunk, with options: 'rouge-chunk(threshold=0.8)'.",
        ),
        click.option("--threshold", type=float, help="Override the strategy's threshold."),
        click.option(
            "--tokenizer",
            type=click.Choice(["rouge", "rouge-stem", "unicode"]),
            help="Tokenizer of ROUGE strategies (unicode for text that is not English).",
        ),
        click.option(
            "--metrics",
            "metric_set",
            type=click.Choice(["all", "set", "ranked"]),
            default="all",
            show_default=True,
            help="Set metrics (precision/recall/F1), rank metrics (AP, RR, NDCG, ...), or both.",
        ),
        click.option(
            "--convention",
            type=click.Choice(["trec_eval", "ranx", "continuous_eval"]),
            help="Rank-metric convention to reproduce (default trec_eval).",
        ),
        click.option(
            "-k",
            "--k",
            "ks",
            type=click.IntRange(min=1),
            multiple=True,
            help="Cut-off; repeat for several (default: the whole list).",
        ),
        click.option(
            "--on-error",
            type=click.Choice(["raise", "skip"]),
            default="raise",
            show_default=True,
            help="Stop at the first bad record, or skip bad records and count them.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            help="Processes (default: every core, when records are slow enough to pay).",
        ),
        click.option(
            "--scheduler",
            help="Run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local'. "
            "Needs ctxeval[dask]; with -o, per-query rows go to that directory as Parquet.",
        ),
        click.option("--retrieved-field", help="Field with the retrieved contexts or ids."),
        click.option("--ground-truth-field", help="Field with the ground truth (or qrels)."),
        click.option("--id-field", help="Field with the record id."),
        click.option("--mode", type=click.Choice(["text", "id"]), help="Force text or ID mode."),
        click.option(
            "--progress/--no-progress",
            default=None,
            help="Progress on stderr (default: when stderr is a terminal).",
        ),
        click.option(
            "--config",
            type=click.Path(dir_okay=False),
            callback=_load_config,
            is_eager=True,
            expose_value=False,
            help="TOML file whose keys set option defaults (e.g. match = 'rouge-chunk').",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _strategy(match: str, threshold: float | None, tokenizer: str | None) -> Any:
    from ctxeval.matching.specs import parse_strategy

    strategy = parse_strategy(match)
    if threshold is None and tokenizer is None:
        return strategy
    options = strategy.options()
    if threshold is not None:
        if "threshold" not in options:
            _fail(f"--threshold does not apply to {strategy.spec}, which has no threshold")
        options["threshold"] = threshold
    if tokenizer is not None:
        if "tokenizer" not in options:
            _fail(f"--tokenizer does not apply to {strategy.spec}, which has no tokenizer")
        options["tokenizer"] = tokenizer
    return type(strategy)(**options)


def _metrics(
    mode: str | None, metric_set: str, strategy: Any, convention: str | None
) -> list[MetricBase] | None:
    from ctxeval.metrics.id_metrics import IDPrecisionRecallF1, IDRankedRetrievalMetrics
    from ctxeval.metrics.text_metrics import PrecisionRecallF1, RankedRetrievalMetrics

    chosen: list[MetricBase] = []
    if mode == "id":
        if metric_set in ("all", "set"):
            chosen.append(IDPrecisionRecallF1())
        if metric_set in ("all", "ranked"):
            chosen.append(IDRankedRetrievalMetrics(convention=convention))
        return chosen
    if metric_set in ("all", "set"):
        chosen.append(PrecisionRecallF1(strategy))
    if metric_set in ("all", "ranked"):
        if strategy.unit == "sentence":
            if metric_set == "ranked":
                _fail(f"rank metrics need a chunk strategy; {strategy.spec} matches sentences")
        else:
            chosen.append(RankedRetrievalMetrics(strategy, convention=convention))
    return chosen


def _dataset_mode(path: str, fields: dict[str, str], mode: str | None) -> str:
    """The dataset's mode, from its first good record, so the metrics can be chosen."""
    if mode is not None:
        return mode
    from ctxeval.io.readers import read_records
    from ctxeval.records import Record

    for item in read_records(path, fields=fields or None):
        if isinstance(item, Record):
            return item.mode
    return "text"


def _run_dataset(path: str, options: dict[str, Any]) -> Any:
    from ctxeval.evaluator import RetrievalEvaluator

    fields = {
        key: value
        for key, value in (
            ("retrieved", options["retrieved_field"]),
            ("ground_truth", options["ground_truth_field"]),
            ("id", options["id_field"]),
            ("mode", options["mode"]),
        )
        if value
    }
    strategy = _strategy(options["match"], options["threshold"], options["tokenizer"])
    mode = _dataset_mode(path, fields, options["mode"])
    metrics = _metrics(mode, options["metric_set"], strategy, options["convention"])
    evaluator = RetrievalEvaluator(
        path,
        metrics,
        fields=fields or None,
        on_error=options["on_error"],
        workers=options["workers"],
        progress=options["progress"],
        scheduler=options.get("scheduler"),
    )
    if options.get("scheduler") and options.get("output"):
        # Distributed: the rows are written by the workers, straight into the output directory.
        directory, options["output"] = options["output"], None
        result = evaluator.run(k=list(options["ks"]) or None, output=directory)
        click.echo(f"ctxeval: saved {directory} (Parquet parts and _result.json)", err=True)
        return result
    return evaluator.run(k=list(options["ks"]) or None)


def _parse_gates(gates: Sequence[str]) -> list[tuple[str, float]]:
    parsed = []
    for gate in gates:
        name, sep, value = gate.partition("=")
        try:
            threshold = float(value)
        except ValueError:
            threshold = math.nan
        if not sep or not name or math.isnan(threshold):
            _fail(f"--fail-under {gate!r}: write METRIC=VALUE, e.g. context_recall@5=0.8")
        parsed.append((name.strip(), threshold))
    return parsed


def _check_gates(aggregate: dict[str, float | None], gates: list[tuple[str, float]]) -> int:
    failed = 0
    for name, threshold in gates:
        if name not in aggregate:
            _fail(f"--fail-under {name}: no such result; available: {', '.join(aggregate)}")
        value = aggregate[name]
        if value is None or value < threshold:
            shown = "n/a" if value is None else f"{value:.4f}"
            click.echo(f"ctxeval: gate failed: {name} = {shown} < {threshold}", err=True)
            failed += 1
        else:
            click.echo(f"ctxeval: gate passed: {name} = {value:.4f} >= {threshold}", err=True)
    return EXIT_GATE if failed else 0


def _render_aggregate(aggregate: dict[str, float | None], summary: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"aggregate": aggregate, "summary": summary}, indent=2)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["metric", "value"])
        for key, value in aggregate.items():
            writer.writerow([key, "" if value is None else repr(value)])
        return buffer.getvalue().rstrip("\n")
    rows = [(key, "n/a" if v is None else f"{v:.4f}") for key, v in aggregate.items()]
    if fmt == "markdown":
        lines = ["| metric | value |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in rows]
        return "\n".join(lines)
    width = max((len(k) for k, _ in rows), default=6)
    header = (
        f"{summary.get('queries', 0)} queries from {summary.get('source', '?')}"
        f" ({summary.get('skipped_records', 0)} skipped,"
        f" {summary.get('empty_ground_truth', 0)} with empty ground truth)"
    )
    return "\n".join([header, *(f"  {k:<{width}}  {v:>8}" for k, v in rows)])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxeval")
def main() -> None:
    """Evaluate the context a RAG retriever returns: deterministic, offline, no LLM."""


@main.command(epilog=_EPILOG_EVALUATE)
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@_dataset_options
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
    help="Measure for --run/--qrels: map, mrr, ndcg@10, P@5, recall@100, hit_rate@5, "
    "or trec_eval names (ndcg_cut_10, P_5). Default: map, mrr, ndcg@10, P@5, recall@100.",
)
@_guard
def evaluate(path: str | None, **options: Any) -> None:
    """Evaluate one dataset of retrieval results (or a TREC run against qrels).

    PATH is a JSONL, JSON, CSV or Parquet file with one record per query: retrieved contexts
    and ground-truth contexts (text mode) or retrieved and relevant chunk ids (ID mode).
    """
    gates = _parse_gates(options["gates"])
    if options["run_file"] or options["qrels_file"]:
        if path is not None:
            _fail("give either a dataset PATH or --run/--qrels, not both")
        if not (options["run_file"] and options["qrels_file"]):
            _fail("--run and --qrels go together")
        aggregate, summary = _evaluate_trec(options)
    else:
        if path is None:
            _fail("give a dataset PATH (or --run and --qrels); see 'ctxeval evaluate --help'")
        result = _run_dataset(path, options)
        if options["output"]:
            saved = result.save(options["output"])
            click.echo(f"ctxeval: saved {saved}", err=True)
        aggregate, summary = result.aggregate, result.summary
        for skipped in result.skipped[:5]:
            click.echo(f"ctxeval: skipped {skipped['location']}: {skipped['message']}", err=True)
        if len(result.skipped) > 5:
            click.echo(f"ctxeval: ... and {len(result.skipped) - 5} more skipped", err=True)
    click.echo(_render_aggregate(aggregate, summary, options["fmt"]))
    sys.exit(_check_gates(aggregate, gates))


def _evaluate_trec(options: dict[str, Any]) -> tuple[dict[str, float | None], dict[str, Any]]:
    import warnings

    from ctxeval.errors import ConventionWarning
    from ctxeval.io.trec import read_trec_qrels, read_trec_run
    from ctxeval.metrics.runs import evaluate_run

    measures = list(options["measures"]) or ["map", "mrr", "ndcg@10", "P@5", "recall@100"]
    run = read_trec_run(options["run_file"])
    qrels = read_trec_qrels(options["qrels_file"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConventionWarning)
        per_query = evaluate_run(run, qrels, measures)
    for warning in caught:
        click.echo(f"ctxeval: note: {warning.message}", err=True)
    count = len(per_query)
    aggregate: dict[str, float | None] = {
        m: (sum(q[m] for q in per_query.values()) / count if count else None) for m in measures
    }
    summary = {"source": options["run_file"], "queries": count, "skipped_records": 0}
    if options["output"]:
        from ctxeval.results import EvaluationResult

        rows = [{"id": qid, **values} for qid, values in per_query.items()]
        saved = EvaluationResult(rows, aggregate, summary).save(options["output"])
        click.echo(f"ctxeval: saved {saved}", err=True)
    return aggregate, summary


@main.command()
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
@click.option("--retrieved-field", help="Field with the retrieved contexts or ids.")
@click.option("--ground-truth-field", help="Field with the ground truth (or qrels).")
@click.option("--id-field", help="Field with the record id.")
@_guard
def convert(source: str, target: str, **options: Any) -> None:
    """Convert a dataset between formats and to ctxeval's field names.

    \b
    Examples:
      ctxeval convert ragas.csv records.jsonl          # any format, renamed fields
      ctxeval convert run.trec records.jsonl --qrels qrels.txt   # TREC -> ID-mode records
      ctxeval convert records.jsonl run.trec --qrels-out qrels.txt   # ID mode -> TREC
    """
    from ctxeval.io.convert import convert_dataset

    fields = {
        key: value
        for key, value in (
            ("retrieved", options["retrieved_field"]),
            ("ground_truth", options["ground_truth_field"]),
            ("id", options["id_field"]),
        )
        if value
    }
    written, skipped = convert_dataset(
        source,
        target,
        qrels=options["qrels_file"],
        qrels_out=options["qrels_out"],
        fields=fields or None,
    )
    click.echo(f"ctxeval: wrote {written} records to {target}", err=True)
    for message in skipped[:5]:
        click.echo(f"ctxeval: skipped {message}", err=True)
    if skipped:
        _fail(f"{len(skipped)} bad record(s) were not converted", EXIT_USAGE)


_EPILOG_COMPARE = """\b
Examples:
  ctxeval compare runs/fixed-512.jsonl runs/sentence.jsonl runs/semantic.jsonl --report report.html
  ctxeval compare a.jsonl b.jsonl -k 5 -k 10 --baseline a --format markdown
  ctxeval compare results-a.jsonl results-b.jsonl   # results saved with 'evaluate -o'
"""


def _is_saved_result(path: str) -> bool:
    if not path.lower().endswith(".jsonl"):
        return False
    with open(path, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        return isinstance(json.loads(first), dict) and "ctxeval_result" in json.loads(first)
    except ValueError:
        return False


def _deepest_columns(results: dict[str, Any]) -> list[str]:
    """Each metric once, at the deepest cut-off: a sweep of k would otherwise multiply the
    comparisons that Holm's correction must pay for."""
    first = next(iter(results.values()))
    deepest: dict[str, tuple[int, str]] = {}
    for column in first.aggregate:
        if column.startswith("micro_"):
            continue
        name, _, k = column.partition("@")
        depth = int(k) if k.isdigit() else 10**9
        if name not in deepest or depth > deepest[name][0]:
            deepest[name] = (depth, column)
    return [column for _, column in deepest.values()]


def _run_names(paths: Sequence[str]) -> list[str]:
    names: list[str] = []
    for path in paths:
        stem = Path(path).stem or "run"
        name, n = stem, 2
        while name in names:
            name, n = f"{stem}-{n}", n + 1
        names.append(name)
    return names


@main.command(epilog=_EPILOG_COMPARE)
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_dataset_options
@click.option("--baseline", help="Run name (file stem) to compare the others with; default first.")
@click.option(
    "--metric",
    "metric_columns",
    multiple=True,
    help="Result column to compare (repeatable), e.g. context_recall@5; default: every "
    "metric at the deepest cut-off.",
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
@_guard
def compare(paths: tuple[str, ...], **options: Any) -> None:
    """Compare runs (chunking strategies, retrievers) on the same queries, with significance.

    Each PATH is a dataset evaluated with the options below, or a result saved with
    'ctxeval evaluate -o results.jsonl'. Runs are named after their file stems.
    """
    from ctxeval.comparison import compare as compare_runs
    from ctxeval.results import EvaluationResult

    if len(paths) < 2:
        _fail("give at least two runs to compare")
    names = _run_names(paths)
    results: dict[str, EvaluationResult] = {}
    datasets: dict[str, str] = {}
    for name, path in zip(names, paths, strict=True):
        if _is_saved_result(path):
            results[name] = EvaluationResult.load(path)
        else:
            click.echo(f"ctxeval: evaluating {path}", err=True)
            results[name] = _run_dataset(path, options)
            datasets[name] = path
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = compare_runs(
            results,
            metrics=list(options["metric_columns"]) or _deepest_columns(results),
            baseline=options["baseline"],
            test=options["test"],
            n_resamples=options["n_resamples"],
            seed=options["seed"],
            alpha=options["alpha"],
            correction=options["correction"],
        )
    for warning in caught:
        click.echo(f"ctxeval: warning: {warning.message}", err=True)
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

        written = write_html_report(options["report_path"], report, results, datasets=datasets)
        click.echo(f"ctxeval: wrote {written}", err=True)
