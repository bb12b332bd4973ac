"""``ctxeval chunking``: compare chunkers on a corpus and questions, from documents to report."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import click

from ctxeval.cli.common import (
    CutoffType,
    budget_options,
    fail,
    guard,
    load_config,
    note_token_budgets,
    resampling_options,
    show_warning,
)

_EPILOG = """\b
Examples (from the repository's root):
  ctxeval chunking fixtures/corpus fixtures/questions.jsonl \\
      --chunker fixed='fixed(words=100, overlap=10)' --chunker sentences='sentences(n=3)' \\
      -k 100w -k 300w --out-dir runs --report report.html
  ctxeval chunking fixtures/corpus fixtures/questions.jsonl \\
      --chunker rec='recursive(chars=800)' --chunker fixed='fixed(chars=800, overlap=400)' \\
      --retriever bm25 --retriever dense --retriever "rrf('bm25', 'dense')" -k 2000c \\
      --out-dir grid-runs --primary span_iou
  ctxeval chunking fixtures/corpus fixtures/questions.jsonl --retriever none \\
      --chunker s3='sentences(n=3, max_words=150)' \\
      --chunker p100='paragraphs(max_words=100, split=True)' --out-dir sweep  # ceilings only

\b
Chunkers: fixed(chars=N|words=N|tokens=N, overlap=M), sentences(n=N, overlap=M,
max_words=N|max_tokens=N), paragraphs(max_words=N, split=True), recursive(chars=N);
LLM tokens, as LangChain and chroma: fixed(tokens=N, overlap=M, tokenizer='cl100k_base'),
recursive(tokens=N, overlap=M, tokenizer='cl100k_base', separators=[...]); semantic, offline
with WordLlama (or embedder='model2vec:FOLDER'): semantic(percentile=95, buffer=1) (LangChain's
SemanticChunker: breaks where adjacent sentence groups differ most; or standard_deviation=,
interquartile=, gradient=, chunks=; max_tokens=N caps a chunk), cluster(max_tokens=400,
piece_tokens=50) (chroma's ClusterSemanticChunker). Questions: JSONL {id, question, excerpts}
(texts or {doc, start, end} spans) or chroma's questions CSV. See docs/chunking.md.
"""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _named_specs(
    flag: str,
    values: Sequence[str],
    split: Callable[[str], tuple[str, str]],
    usage: str,
    build: Callable[[str], Any],
) -> dict[str, Any]:
    """``flag`` options as ``{name: build(spec)}``: each value split into its name and spec,
    the name checked (letters, digits, '.', '_', '-'; once each), every error naming the option
    as it was written."""
    from ctxeval.foundation.errors import CtxevalError

    named: dict[str, Any] = {}
    for value in values:
        name, spec = split(value)
        if not _NAME.fullmatch(name) or not spec:
            fail(f"{flag} {value}: {usage}")
        if name in named:
            fail(f"{flag} {value}: the name {name!r} is used twice; give each its own: NAME=SPEC")
        try:
            named[name] = build(spec)
        except CtxevalError as exc:
            fail(f"{flag} {value}: {exc}", fixes=exc.fixes)
    return named


def _name_and_spec(value: str) -> tuple[str, str]:
    name, sep, spec = value.partition("=")
    return (name.strip(), spec.strip()) if sep else ("", "")


def _maybe_named(value: str) -> tuple[str, str]:
    """``NAME=SPEC``, or a bare spec named by its name (its options may hold '=')."""
    name, sep, spec = value.partition("=")
    if not sep or "(" in name:
        name, spec = value.partition("(")[0], value
    return name.strip(), spec.strip()


def parse_chunker_options(values: Sequence[str]) -> dict[str, Any]:
    """``--chunker NAME=SPEC`` options as ``{name: chunker}``, each spec parsed."""
    from ctxeval.chunking import parse_chunker

    usage = (
        "write NAME=SPEC, e.g. --chunker 'fixed=fixed(words=100, overlap=10)' (NAME: letters, "
        "digits, '.', '_', '-'; it names the run file NAME.jsonl)"
    )
    return _named_specs("--chunker", values, _name_and_spec, usage, parse_chunker)


def parse_retriever_options(values: Sequence[str]) -> dict[str, Any]:
    """``--retriever [NAME=]SPEC`` options as ``{name: retriever}`` (a bare spec is named by its
    name: ``bm25``, ``dense``, ``rrf``), each resolved once."""
    from ctxeval.chunking.retrieval import as_retriever

    usage = (
        "write SPEC or NAME=SPEC, e.g. --retriever dense or --retriever "
        "fused=\"rrf('bm25', 'dense')\" (NAME: letters, digits, '.', '_', '-'; runs are named "
        "CHUNKER+NAME)"
    )
    return _named_specs("--retriever", values, _maybe_named, usage, as_retriever)


@click.command("chunking", epilog=_EPILOG)
@click.argument("corpus", type=click.Path())
@click.argument("questions", type=click.Path(dir_okay=False))
@click.option(
    "--chunker",
    "chunkers",
    multiple=True,
    metavar="NAME=SPEC",
    help="A chunker to compare (repeat; at least two under one retriever), e.g. "
    "fixed='fixed(words=100, overlap=10)'.",
)
@click.option(
    "--retriever",
    "retrievers",
    multiple=True,
    metavar="[NAME=]SPEC",
    help="A retriever (repeat to compare chunker x retriever pairs, runs named CHUNKER+NAME; "
    "default bm25): none, no retrieval at all (chunk statistics and ceilings only, in "
    "seconds: no runs, no verdict); bm25, bm25(k1=1.2, b=0.75); dense, exact cosine search "
    "over WordLlama's offline embeddings (pip install 'ctxeval[dense]'), or "
    "dense(embedder='model2vec:FOLDER') or dense(embedder='sentence-transformers:FOLDER') "
    "over a model saved in a local folder "
    "(never downloaded); rrf('bm25', 'dense', k=60) or "
    "wsum('bm25', 'dense', norm='z-score') to fuse them.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the embeddings of the dense retrievers and of the semantic and cluster chunkers "
    "here between runs (one file a text, keyed by the embedder and the text; safe with runs "
    "at once).",
)
@click.option(
    "-k",
    "--k",
    "ks",
    type=CutoffType(),
    multiple=True,
    help="Cut-off: a number of chunks (5) or a context budget (300w words, 2000c characters, "
    "512t tokens); repeat for several (default 1, 3, 5, 10). Chunkings are compared at the "
    "largest budget (else the largest k): at equal context, bigger chunks win nothing for free.",
)
@click.option(
    "--metric",
    "metric_columns",
    multiple=True,
    help="Metric to compare with significance (repeatable), e.g. context_recall@200w; a name "
    "without @K is at the comparison cut-off (the largest budget, else the largest k). "
    "Default: every harness metric there.",
)
@click.option(
    "--primary",
    default="context_recall",
    show_default=True,
    help="The measure of the verdict: at every cut-off, the best run on it and its paired "
    "tests against every other run (any harness metric, e.g. span_iou).",
)
@click.option(
    "--attribution",
    default="match",
    show_default=True,
    help="When a chunk holds an excerpt, for miss attribution: match (the --match strategy, "
    "as context_recall) or 'overlap(min=0.7)' (its span covers that share of the excerpt).",
)
@click.option(
    "--match",
    default="rouge-chunk",
    show_default=True,
    help="Chunk matching strategy: rouge-chunk, exact-chunk, fuzzy-chunk, with options.",
)
@budget_options
@click.option(
    "--convention",
    type=click.Choice(["chroma"]),
    default=None,
    help="chroma: follow chroma's chunking_evaluation for the span measures, the span ceiling "
    "(its precision omega) and attribution: each chunk placed at the first occurrence of its "
    "text (a trailing '.' dropped), a chunk only touching an excerpt counted as overlapping "
    "it. Default: ctxeval's own (see docs/metrics.md for each difference).",
)
@click.option("--out-dir", required=True, type=click.Path(), help="Directory for the outputs.")
@click.option(
    "--overwrite", is_flag=True, help="Replace the harness's files in a non-empty --out-dir."
)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="HTML report.")
@click.option("--baseline", help="Chunker name the others are compared with; default first.")
@resampling_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (default: when stderr is a terminal).",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    callback=load_config,
    is_eager=True,
    expose_value=False,
    help="TOML file whose keys set option defaults (e.g. chunker = ['fixed=fixed(words=100)']).",
)
@guard
def chunking_command(corpus: str, questions: str, **options: Any) -> None:
    """Compare chunkers: chunk CORPUS, retrieve for each question of QUESTIONS, evaluate,
    attribute misses, compare with paired significance.

    CORPUS is a directory of .txt/.md files (each document named by its relative path without
    the extension), one file, or JSONL/Parquet of {id, text}. Writes NAME.jsonl (the run),
    NAME.result.jsonl (its evaluation) per chunker and summary.json to --out-dir.
    """
    from ctxeval.chunking import compare_chunkers
    from ctxeval.chunking.outputs import OutputPlan

    _check_cutoffs(options["ks"])
    chunkers = parse_chunker_options(options["chunkers"])
    if not chunkers:
        fail("give the chunkers to compare: --chunker NAME=SPEC (repeat)")
    retrievers = _retrievers(options)
    if options["cache_dir"] is not None:
        from ctxeval.chunking.chunkers import with_cache_dir

        cached = {n: with_cache_dir(c, options["cache_dir"]) for n, c in chunkers.items()}
        if not retrievers and all(cached[n] is c for n, c in chunkers.items()):
            fail(
                "--cache-dir keeps the embeddings of dense retrievers and of semantic and "
                "cluster chunkers, and with --retriever none and these chunkers there are none; "
                "leave out --cache-dir"
            )
        chunkers = cached
    run_names = [c if len(retrievers) == 1 else f"{c}+{r}" for c in chunkers for r in retrievers]
    if options["baseline"] is not None and options["baseline"] not in run_names:
        from ctxeval.foundation.specs import unknown_name

        fail(str(unknown_name(None, "run", options["baseline"], run_names, where="--baseline")))
    if options["metric_columns"]:
        _check_metrics(options["metric_columns"], options["ks"] or (1, 3, 5, 10))
    _check_primary(options["primary"])
    from ctxeval.cli.common import build_strategy

    strategy = build_strategy(options["match"], None, None)
    attribution = _attribution(options["attribution"])
    # Checked with the command line's names before any work; compare_chunkers checks again.
    OutputPlan(
        options["out_dir"],
        options["report_path"],
        run_names,
        options["overwrite"],
        (corpus, questions),
        flags=("--out-dir ", "--report "),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = compare_chunkers(
            corpus,
            questions,
            chunkers,
            retriever=_one_or_all(retrievers),
            k=options["ks"] or (1, 3, 5, 10),
            matching=strategy,
            budget_policy=options["budget_policy"],
            token_counter=options["token_counter"],
            attribution=attribution,
            compare_metrics=list(options["metric_columns"]) or None,
            primary=options["primary"],
            baseline=options["baseline"],
            seed=options["seed"],
            n_resamples=options["n_resamples"],
            out_dir=options["out_dir"],
            overwrite=options["overwrite"],
            report=options["report_path"],
            progress=options["progress"],
            convention=options["convention"],
        )
    for warning in caught:
        show_warning(warning.message, warning.category, warning.filename, warning.lineno)
    _print(outcome, options["fmt"])
    wrote = f"{len(outcome.runs)} runs" if retrievers else "summary.json (no runs: no retrieval)"
    click.echo(f"ctxeval: wrote {wrote} to {options['out_dir']}", err=True)
    if options["report_path"]:
        click.echo(f"ctxeval: wrote {options['report_path']}", err=True)


def _check_cutoffs(ks: Sequence[Any]) -> None:
    """``-k``: no whole list (a corpus's every chunk); a note on what ``t`` budgets count."""
    if None in ks:
        fail(
            "-k all: the harness compares chunkings at numbers of chunks or at budgets, and the "
            "whole ranked list is every chunk of the corpus; give -k 5 or -k 300w"
        )
    note_token_budgets(ks)


def _one_or_all(retrievers: dict[str, Any]) -> Any:
    """What ``compare_chunkers`` takes: None (no retrieval), the one retriever, or them all."""
    if len(retrievers) == 1:
        return next(iter(retrievers.values()))
    return retrievers or None


def _retrievers(options: dict[str, Any]) -> dict[str, Any]:
    """``--retriever`` options as ``{name: retriever}``: ``{}`` for ``--retriever none`` (no
    retrieval), which refuses the options that need runs, each named."""
    given = options["retrievers"] or ("bm25",)
    nones = [value for value in given if _maybe_named(value)[1] == "none"]
    if not nones:
        retrievers = parse_retriever_options(given)
        if options["cache_dir"] is not None:
            from ctxeval.chunking.retrieval import with_cache_dir

            cache = options["cache_dir"]
            retrievers = {n: with_cache_dir(r, cache) for n, r in retrievers.items()}
        return retrievers
    if len(given) > 1:
        fail("--retriever none (no retrieval) cannot be combined with other --retriever options")
    if nones[0].strip() != "none":
        fail(f"--retriever {nones[0]}: no retrieval takes no name; write --retriever none")
    needing = [
        ("-k", bool(options["ks"])),
        ("--metric", bool(options["metric_columns"])),
        ("--primary", options["primary"] != "context_recall"),
        ("--baseline", options["baseline"] is not None),
        ("--report", options["report_path"] is not None),
        *((flag, _on_command_line(name)) for flag, name in _RUNS_ONLY),
    ]
    for flag, asked in needing:
        if asked:
            fail(
                f"{flag} needs retrieval runs, and --retriever none retrieves nothing (chunk "
                f"statistics and ceilings only); leave out {flag}, or give a retriever"
            )
    return {}


# Options that shape the runs' budgets and the comparison's tests: without retrieval they would
# do nothing, so given on the command line with --retriever none they are refused like -k.
_RUNS_ONLY = (
    ("--budget-policy", "budget_policy"),
    ("--token-counter", "token_counter"),
    ("--n-resamples", "n_resamples"),
    ("--seed", "seed"),
)


def _on_command_line(name: str) -> bool:
    """Whether the option ``name`` was given on the command line (not left at its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return source is click.core.ParameterSource.COMMANDLINE


def _check_metrics(wanted: Sequence[str], ks: Sequence[Any]) -> None:
    from ctxeval.chunking.harness import HARNESS_METRICS, compare_columns
    from ctxeval.foundation.errors import CtxevalError

    try:
        compare_columns(wanted, HARNESS_METRICS, ks, where="--metric")
    except CtxevalError as exc:
        fail(exc)


def _check_primary(primary: str) -> None:
    from ctxeval.chunking.harness import HARNESS_METRICS
    from ctxeval.foundation.specs import unknown_name

    if primary not in HARNESS_METRICS:
        fail(str(unknown_name(None, "metric", primary, list(HARNESS_METRICS), where="--primary")))


def _attribution(spec: str) -> Any:
    from ctxeval.chunking.attribution import attribution_rule
    from ctxeval.foundation.errors import CtxevalError

    try:
        return attribution_rule(spec)
    except CtxevalError as exc:
        fail(f"--attribution {spec}: {str(exc).split(': ', 1)[-1]}", fixes=exc.fixes)


def _print(outcome: Any, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(outcome.summary(), indent=2))
        return
    from ctxeval.chunking.grid import verdict_text

    markdown = fmt == "markdown"

    def plain(text: str) -> str:  # a plain-text block, fenced in Markdown
        return f"```text\n{text}\n```" if markdown else text

    comparison = outcome.comparison
    if comparison is None:  # no retrieval: the statistics and ceilings, and saying so
        click.echo(plain(outcome.attribution_text()))
        return
    if outcome.verdict is not None:
        click.echo(verdict_text(outcome, markdown))
        click.echo("")
    click.echo(comparison.to_markdown() if markdown else comparison.to_text())
    click.echo("")
    click.echo(plain(outcome.attribution_text()))
    if outcome.verdict is not None:
        click.echo("")
        click.echo(plain(outcome.verdict.in_short()))
