"""The harness: corpus -> chunkers -> retriever -> runs -> evaluation -> comparison.

:func:`compare_chunkers` chunks every document of a corpus with each chunker, retrieves the
top chunks of each question over all of a chunking's chunks, evaluates the runs with chunk-level
metrics (:data:`HARNESS_METRICS`, ROUGE-L chunk matching by default), attributes each miss to the
retriever or the chunker (:mod:`ctxeval.chunking.attribution`), compares the runs with paired
significance (:func:`ctxeval.comparison.compare`), and optionally writes the runs, results,
statistics and an HTML report (:mod:`ctxeval.chunking.outputs`). What it returns, a
:class:`~ctxeval.chunking.model.HarnessResult`, is defined in :mod:`ctxeval.chunking.model`
(re-exported here with :data:`HARNESS_METRICS` and :func:`comparison_cutoff`).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ctxeval.chunking.attribution import attribute, attribution_rule, mean_of
from ctxeval.chunking.checks import check_harness
from ctxeval.chunking.chroma import check_convention, chroma_metrics, place_as_chroma
from ctxeval.chunking.chunkers import Chunk, Chunker, reporting_positions
from ctxeval.chunking.grid import harness_verdict
from ctxeval.chunking.model import (
    HARNESS_METRICS,
    ChunkingCeilings,
    ChunkingRun,
    HarnessInterrupted,
    HarnessResult,
    comparison_cutoff,
    fed_order,
)
from ctxeval.chunking.questions import Question, load_questions
from ctxeval.chunking.retrieval import (
    ChunkSizes,
    FusedRetriever,
    Ranking,
    as_retriever,
    component_places,
    cut_ranking,
    needed_depths,
    retrieval_depth,
    searcher,
    spec_of,
)
from ctxeval.chunking.splitters import as_chunker
from ctxeval.comparison import compare
from ctxeval.comparison.family import characters_fed
from ctxeval.cutoffs.budgets import BudgetPolicy, check_budget_policy
from ctxeval.cutoffs.cutoff import (
    Budget,
    Cutoff,
    check_k,
    check_ks,
    cutoff_label,
    sort_cutoffs,
)
from ctxeval.evaluator import RetrievalEvaluator
from ctxeval.foundation.errors import (
    CtxevalError,
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    type_name,
)
from ctxeval.foundation.progress import Progress, Total
from ctxeval.foundation.specs import unknown_name
from ctxeval.io.corpus import load_corpus
from ctxeval.matching.base import MatchingStrategy
from ctxeval.matching.resolve import as_strategy
from ctxeval.matching.rouge.strategies import RougeChunkMatch
from ctxeval.metrics.measures import parse_measure
from ctxeval.retrieval.dense import DenseRetriever
from ctxeval.retrieval.embedders import Bars
from ctxeval.text.sizes import TokenCounter, check_token_counter

__all__ = [
    "DEFAULT_KS",
    "HARNESS_METRICS",
    "ChunkingRun",
    "HarnessResult",
    "chunk_corpus",
    "chunk_statistics",
    "compare_chunkers",
    "comparison_cutoff",
]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WORD = re.compile(r"\S+")


def compare_chunkers(  # noqa: PLR0913 (the harness's options, one keyword each)
    corpus: str | os.PathLike[str] | Mapping[str, str],
    questions: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    chunkers: Mapping[str, object],
    *,
    retriever: object = "bm25",
    k: Cutoff | Sequence[Cutoff] = DEFAULT_KS,
    matching: object = None,
    budget_policy: BudgetPolicy = "whole",
    token_counter: str | TokenCounter = "rouge",
    attribution: object = "match",
    metrics: Sequence[str] = HARNESS_METRICS,
    compare_metrics: Sequence[str] | None = None,
    primary: str = "context_recall",
    baseline: str | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
    out_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    report: str | os.PathLike[str] | None = None,
    progress: bool | Callable[[int], None] | None = False,
    convention: str | None = None,
) -> HarnessResult:
    """Compare ``chunkers`` (``{name: chunker}``: a spec such as ``"sentences(n=3)"``, a
    :class:`~ctxeval.chunking.Chunker`, a LangChain/chonkie splitter or a function) on
    ``corpus`` (a directory, file or ``{name: text}``) and ``questions`` (see
    :func:`~ctxeval.chunking.load_questions`), retrieving with ``retriever`` (``"bm25"`` or a
    callable ``(question, chunks) -> positions``) deep enough for every cut-off of ``k``;
    ``None`` (or ``"none"``): statistics and ceilings only (:attr:`HarnessResult.ceilings`).

    ``k`` holds numbers of chunks and size budgets (``"300w"``, ``"2000c"``, ``"512t"``):
    chunkings whose chunks differ in size are compared fairly at a budget, where each feeds the
    model the same amount of text. Budgets take whole chunks (``budget_policy="whole"``) or cut
    the one that crosses (``"truncate"``); ``t`` budgets count with ``token_counter``
    (``"rouge"``, ``"unicode"`` or a callable ``str -> int``).

    ``matching`` judges chunks against excerpts (a chunk strategy; ROUGE-L by default);
    ``metrics`` are measure specs evaluated at every cut-off; ``compare_metrics`` the result
    columns compared with significance (``"context_recall@300w"``; a name without ``@`` is at
    :func:`comparison_cutoff`: the largest budget when there are budgets, else the largest k;
    default: every metric there), against ``baseline`` (default: the first chunker). ``primary``
    is the measure of the verdict (one of ``metrics``): at every cut-off, the best run and its
    paired tests against every other run, Holm-corrected over the whole verdict
    (:mod:`ctxeval.chunking.grid`). ``attribution`` is the rule that says whether a chunk holds
    an excerpt (``"match"``: the matching strategy; ``"overlap(min=0.7)"``: its span covers that
    share of the excerpt's characters; see :mod:`ctxeval.chunking.attribution`). ``out_dir``
    receives the run files, results, statistics and summary (a non-empty directory is refused
    unless ``overwrite``); ``report`` an HTML report.

    ``progress`` draws each step's bar on stderr (``True``; ``None``: when it is a terminal),
    with its total and the time left; a function is called with each step's count done, step
    after step. Interrupted (Ctrl-C), it raises
    :class:`~ctxeval.chunking.model.HarnessInterrupted`, a ``KeyboardInterrupt`` saying during
    which step, and which files were written and which not. ``convention="chroma"``: chroma's
    span measures, ceiling and attribution (:mod:`ctxeval.chunking.chroma`).
    """
    started = time.perf_counter()
    ks = _cut_offs(k)
    _check_metric_lists(metrics, compare_metrics)
    metrics, compare_metrics, primary = _as_in(convention, metrics, compare_metrics, primary)
    wanted = _check_measures(compare_metrics or metrics, metrics, ks, primary)
    strategy = _chunk_strategy(matching)
    settings = _settings(budget_policy, token_counter, attribution, convention)
    retrievers = _retrievers(retriever, (compare_metrics, primary, baseline, report))
    resolved = _chunkers(chunkers, fewest=2 if len(retrievers) == 1 else 1)
    names = _run_names(resolved, retrievers)
    plan = _output_plan(out_dir, report, list(names.values()), overwrite, (corpus, questions))
    steps = _Steps(progress)
    tests = {"baseline": baseline, "seed": seed, "n_resamples": n_resamples}
    try:
        job = _load((corpus, questions), (strategy, ks, metrics, settings), steps, plan)
        outcome = _results(resolved, (retrievers, names), job, (wanted, tests))
        outcome.warnings = check_harness(outcome, resolved, job.documents)
        if plan is not None:
            with steps.bar("writing", "files", len(plan.targets())) as bar:
                plan.write(outcome, bar)
    except KeyboardInterrupt as exc:
        raise HarnessInterrupted(steps.interrupted(plan)) from exc
    job.timings["total"] = time.perf_counter() - started
    return outcome


def _settings(
    budget_policy: object, token_counter: object, attribution: object, convention: str | None
) -> _Settings:
    return _Settings(
        check_budget_policy("compare_chunkers(budget_policy=...)", budget_policy),
        _token_counter(token_counter),
        attribution_rule(attribution),
        convention,
    )


def _results(
    chunkers: Mapping[str, Chunker],
    retrieving: tuple[dict[str, object], Mapping[tuple[str, str], str]],
    job: _Job,
    comparing: tuple[tuple[Sequence[str], str], dict[str, Any]],
) -> HarnessResult:
    """Every run compared; without retrievers, the chunkers' ceilings alone."""
    retrievers, names = retrieving
    if not retrievers:
        return _ceilings(chunkers, job)
    runs = _grid(chunkers, retrievers, names, job)
    return _outcome(runs, job, _retriever_spec(retrievers), *comparing)


def _as_in(
    convention: object,
    metrics: Sequence[str],
    compare_metrics: Sequence[str] | None,
    primary: str,
) -> tuple[Sequence[str], Sequence[str] | None, str]:
    """The measures as ``convention`` has them: chroma's span measures under ``"chroma"``
    (named as the user wrote them: ``span_iou`` is ``span_iou(convention='chroma')``)."""
    check_convention(convention)
    if convention != "chroma":
        return metrics, compare_metrics, primary
    chosen = chroma_metrics(compare_metrics) if compare_metrics else compare_metrics
    named = chroma_metrics([primary])[0] if isinstance(primary, str) else primary
    return chroma_metrics(metrics), chosen, named


def _load(inputs: tuple[Any, Any], how: tuple[Any, ...], steps: _Steps, plan: Any) -> _Job:
    """The documents and questions (``inputs``), with how every run judges them (``how``:
    the matching strategy, cut-offs, metrics and settings), as the job every run shares."""
    clock = time.perf_counter()
    corpus, questions = inputs
    strategy, ks, metrics, settings = how
    with steps.phase("loading the corpus and questions"):
        documents = load_corpus(corpus)
        loaded = load_questions(questions, documents)
    timings = {"loading": time.perf_counter() - clock}
    return _Job(documents, loaded, strategy, ks, metrics, settings, steps, timings, plan)


def _outcome(
    runs: dict[str, ChunkingRun],
    job: _Job,
    retriever_spec: str,
    measures: tuple[Sequence[str], str],
    tests: dict[str, Any],
) -> HarnessResult:
    """The runs compared (``measures``: the columns wanted, the verdict's primary measure;
    ``tests``: baseline, seed, resamples) at the comparison cut-off and in the verdict, and
    everything the harness found."""
    wanted, primary = measures
    clock = time.perf_counter()
    settings = job.settings
    fed = characters_fed([run.result.summary for run in runs.values()])
    # In the order of the text fed: "first reached at", the verdict and the tables read it.
    ks = fed_order(job.ks, fed)
    for run in runs.values():
        run.attribution = replace(run.attribution, ks=ks)
    top = comparison_cutoff(ks, fed)
    columns = compare_columns(wanted, job.metrics, ks, top=top)
    results = {name: run.result for name, run in runs.items()}
    with job.steps.phase("comparing the runs"):
        comparison = compare(results, metrics=columns, **tests)
    with job.steps.phase("testing the verdict"):
        judged = harness_verdict(runs, ks, primary, tests)
    job.timings["comparison"] = time.perf_counter() - clock
    rule = settings.rule if isinstance(settings.rule, str) else settings.rule.spec
    return HarnessResult(
        runs,
        comparison,
        ks,
        job.questions,
        retriever_spec,
        job.strategy.spec,
        job.timings,
        settings.policy,
        rule,
        top,
        settings.tokens,
        judged,
        convention=settings.convention,
    )


def _ceilings(chunkers: Mapping[str, Chunker], job: _Job) -> HarnessResult:
    """Without retrieval: each chunker's chunks, statistics and ceilings (nothing retrieved,
    no run evaluated, no comparison)."""
    found: dict[str, ChunkingCeilings] = {}
    nothing: list[list[int]] = [[] for _ in job.questions]
    for name, chunker in chunkers.items():
        clock = time.perf_counter()
        chunks, statistics = _chunk(name, chunker, job)
        clock = _tick(job.timings, "chunking", clock)
        with job.steps.bar(f"ceilings of {name}", "questions", len(job.questions)) as bar:
            attribution = attribute(
                job.questions,
                chunks,
                nothing,
                job.strategy,
                (),
                rule=job.settings.rule,
                progress=bar.update,
                convention=job.settings.convention,
            )
        _tick(job.timings, "attribution", clock)
        found[name] = ChunkingCeilings(name, chunker.spec, chunks, statistics, attribution)
    rule = job.settings.rule
    return HarnessResult(
        {},
        None,
        job.ks,
        job.questions,
        "none",
        job.strategy.spec,
        job.timings,
        job.settings.policy,
        rule if isinstance(rule, str) else rule.spec,
        job.ks[-1],
        job.settings.tokens,
        ceilings=found,
        convention=job.settings.convention,
    )


def _check_metric_lists(metrics: object, compare_metrics: object) -> None:
    """``metrics`` and ``compare_metrics`` (when given) checked: :func:`_check_metric_list`."""
    _check_metric_list(metrics, "metrics")
    if compare_metrics is not None:
        _check_metric_list(compare_metrics, "compare_metrics", cut_offs=True)


def _check_metric_list(given: object, argument: str, *, cut_offs: bool = False) -> None:
    """Stop at ``metrics`` (or ``compare_metrics``) that is not a list of measure names (a
    string alone, a name no registry knows, a cut-off where ``k`` gives them), naming the
    argument."""
    where = f"compare_chunkers({argument}=...)"
    if isinstance(given, str) or not isinstance(given, list | tuple):
        raise InvalidArgumentTypeError(
            f"{where}: give a list of measure names, e.g. {argument}=['context_recall', 'ndcg']; "
            f"got {type_name(given)} {given!r}"
        )
    for name in given:
        if not isinstance(name, str):
            raise InvalidArgumentTypeError(f"{where}: {name!r} is not a measure name (a string)")
        if "@" in name and not cut_offs:
            raise InvalidArgumentError(
                f"{where}: {name!r}: give measures without a cut-off, e.g. "
                f"{name.partition('@')[0]!r}; the cut-offs are k=..."
            )
        try:
            parse_measure(name)
        except CtxevalError as exc:
            raise type(exc)(f"{where}: {exc}", fixes=exc.fixes) from None


def _check_measures(
    wanted: Sequence[str], metrics: Sequence[str], ks: Sequence[Cutoff], primary: object
) -> tuple[Sequence[str], str]:
    """The columns to compare and the verdict's measure, checked before any work: ``wanted``
    by :func:`compare_columns`; ``primary`` one of the metrics every run is evaluated with,
    without a cut-off (the verdict is at every cut-off)."""
    compare_columns(wanted, metrics, ks)
    where = "compare_chunkers(primary=...)"
    if not isinstance(primary, str):
        raise InvalidArgumentTypeError(
            f"{where}: give a metric name, e.g. primary='context_recall'; got {type_name(primary)}",
            fixes=(Fix("primary", "context_recall"),),
        )
    name, at, _ = primary.partition("@")
    if at:
        raise InvalidArgumentError(
            f"{where}: give the metric without a cut-off, primary={name!r}; the verdict is at "
            "every cut-off",
            fixes=(Fix("primary", name),),
        )
    if primary not in metrics:
        raise unknown_name(None, "metric", primary, list(metrics), where=where)
    return wanted, primary


def _output_plan(
    out_dir: str | os.PathLike[str] | None,
    report: str | os.PathLike[str] | None,
    names: list[str],
    overwrite: bool,
    inputs: tuple[object, ...],
) -> Any:
    """Where the harness's files go (checked before any work), or None for no files."""
    if out_dir is None and report is None:
        return None
    from ctxeval.chunking.outputs import OutputPlan

    return OutputPlan(out_dir, report, names, overwrite, inputs)


def compare_columns(
    wanted: Sequence[str],
    metrics: Sequence[str],
    ks: Sequence[Cutoff],
    where: str = "compare_chunkers(compare_metrics=...)",
    top: Cutoff = None,
) -> list[str]:
    """The result columns to compare: each of ``wanted`` (``"context_recall@300w"``, or a
    metric without ``@`` at ``top``, by default :func:`comparison_cutoff`), checked against the
    ``metrics`` and cut-offs ``ks`` the runs are evaluated with (so it can run before any
    work)."""
    labels = [cutoff_label(k) for k in ks]
    at_top = cutoff_label(comparison_cutoff(ks) if top is None else top)
    columns = []
    for given in wanted:
        name, at, label = given.partition("@")
        if name not in metrics:
            raise unknown_name(None, "metric", name, list(metrics), where=where)
        if at and label not in labels:
            raise unknown_name(None, "cut-off", label, labels, where=where)
        columns.append(f"{name}@{label if at else at_top}")
    return columns


@dataclass(frozen=True)
class _Settings:
    policy: BudgetPolicy
    tokens: str | TokenCounter
    rule: Any
    convention: str | None = None


@dataclass
class _Steps:
    """The harness's progress, one step after another, each its bar or line on stderr as
    ``option`` says (:meth:`Progress.from_option`); and the step under way, for the message
    of an interruption."""

    option: bool | Callable[[int], None] | None
    current: str = "starting"

    def bar(self, label: str, unit: str, total: Total) -> Progress:
        self.current = label
        return Progress.from_option(
            self.option, stream=sys.stderr, unit=unit, label=label, total=total
        )

    def phase(self, label: str) -> Progress:
        """A step with no natural count: one line, ``label: done in 2.3 s``."""
        self.current = label
        return Progress.phase(self.option, stream=sys.stderr, label=label)

    def embedding(self, name: str) -> Bars:
        """The bar of the texts a dense retriever embeds for run ``name``, given their number."""
        return lambda total: self.bar(f"embedding {name}", "texts", total)

    def interrupted(self, plan: Any) -> str:
        """What an interruption stopped, and which files were written (each is written whole
        or not at all)."""
        writing = None if plan is None else plan.writing
        step = self.current if writing is None else f"writing {os.fspath(writing)}"
        said = f"interrupted while {step}"
        return said if plan is None else f"{said}: {plan.account()}"


@dataclass(frozen=True)
class _Job:
    """What every chunker's run shares: the documents and questions, how to retrieve and judge,
    the cut-offs and metrics, the steps' progress, the timings it adds to, and where files
    go."""

    documents: Mapping[str, str]
    questions: list[Question]
    strategy: MatchingStrategy
    ks: tuple[Cutoff, ...]
    metrics: Sequence[str]
    settings: _Settings
    steps: _Steps
    timings: dict[str, float]
    plan: Any


def _token_counter(counter: object) -> str | TokenCounter:
    try:
        return check_token_counter(counter)
    except InvalidArgumentError as exc:
        raise type(exc)(
            str(exc).replace("RetrievalEvaluator(", "compare_chunkers("), fixes=exc.fixes
        ) from None


def _cut_offs(k: Cutoff | Sequence[Cutoff]) -> tuple[Cutoff, ...]:
    values = [k] if isinstance(k, int | str | Budget) else list(k)  # type: ignore[arg-type]
    if not values or None in values:
        raise InvalidArgumentError(
            f"compare_chunkers(k={k!r}): give one or more cut-offs: numbers of chunks or size "
            "budgets, e.g. [5, '300w', '2000c']"
        )
    if isinstance(k, int | str | Budget):
        return (check_k("compare_chunkers", k),)
    return sort_cutoffs(check_ks("compare_chunkers", values))


def _chunk_strategy(matching: object) -> MatchingStrategy:
    strategy = RougeChunkMatch() if matching is None else as_strategy(matching, owner="matching")
    if strategy.unit != "chunk":
        raise InvalidArgumentError(
            f"matching {strategy.spec}: the harness judges whole chunks; use a chunk strategy "
            "(rouge-chunk, exact-chunk, fuzzy-chunk)"
        )
    return strategy


def _chunkers(chunkers: Mapping[str, object], fewest: int) -> dict[str, Chunker]:
    """The chunkers resolved; at least ``fewest``: two under one retriever (a comparison needs
    two runs), one under several retrievers (they are compared) or none (ceilings only)."""
    if not isinstance(chunkers, Mapping):
        raise InvalidArgumentTypeError(
            "chunkers: give {name: chunker}, e.g. "
            '{"fixed": "fixed(words=100)", "sentences": "sentences(n=3)"}; got '
            f"{type_name(chunkers)}"
        )
    if len(chunkers) < fewest:
        said = (
            f"chunkers: got {len(chunkers)}; a comparison needs at least two runs: two "
            'chunkers, e.g. {"fixed": "fixed(words=100)", "sentences": "sentences(n=3)"}, or '
            "two retrievers (retriever=None for one chunker's ceilings alone)"
        )
        raise InvalidArgumentError(said, fixes=(Fix("chunkers", len(chunkers), said),))
    resolved: dict[str, Chunker] = {}
    for name, chunker in chunkers.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgumentError(
                f"chunker name {name!r}: use letters, digits, '.', '_' and '-' (it names the "
                "run file NAME.jsonl), starting with a letter or digit"
            )
        if name.lower().endswith(".result"):
            raise InvalidArgumentError(
                f"chunker name {name!r}: a name may not end in '.result' (NAME.result.jsonl is "
                "the file of the chunker NAME's evaluation); choose another name"
            )
        resolved[name] = as_chunker(chunker)
    return resolved


def _retriever_spec(retrievers: Mapping[str, object]) -> str:
    """The retriever's spec; with several, ``name=spec`` each, in order."""
    if len(retrievers) == 1:
        return spec_of(next(iter(retrievers.values())))
    return ", ".join(f"{name}={spec_of(r)}" for name, r in retrievers.items())


def _retrievers(retriever: object, needing_runs: tuple[object, ...]) -> dict[str, object]:
    """``{name: retriever}``: one retriever (named by its spec's name), or a mapping of them
    (names as for chunkers), each resolved once; none (``{}``) for ``None`` or ``"none"``,
    when nothing of ``needing_runs`` (compare_metrics, primary, baseline, report) is asked."""
    if retriever is None or retriever == "none":
        _check_no_retrieval(needing_runs)
        return {}
    if not isinstance(retriever, Mapping):
        resolved = as_retriever(retriever)
        return {spec_of(resolved).partition("(")[0]: resolved}
    if not retriever:
        raise InvalidArgumentError("retriever: give at least one retriever")
    named: dict[str, object] = {}
    for name, given in retriever.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or "+" in name:
            raise InvalidArgumentError(
                f"retriever name {name!r}: use letters, digits, '.', '_' and '-' (a run is "
                "named CHUNKER+RETRIEVER), starting with a letter or digit"
            )
        if given is None or given == "none":
            raise InvalidArgumentError(
                f"retriever {name!r}: 'none' (no retrieval) cannot be one of several "
                "retrievers; give retriever=None alone, or leave it out"
            )
        named[name] = as_retriever(given)
    return share_embeddings(named)


def _check_no_retrieval(needing_runs: tuple[object, ...]) -> None:
    """Without retrieval there are no runs: the options that need them are refused."""
    compare_metrics, primary, baseline, report = needing_runs
    asked = [
        name
        for name, value, default in (
            ("compare_metrics", compare_metrics, None),
            ("primary", str(primary).partition("(")[0], "context_recall"),
            ("baseline", baseline, None),
            ("report", report, None),
        )
        if value != default
    ]
    if asked:
        raise InvalidArgumentError(
            f"compare_chunkers(retriever=None): {', '.join(asked)} need runs, and without "
            "retrieval there are none (only chunk statistics and ceilings); leave "
            f"{'it' if len(asked) == 1 else 'them'} out, or give a retriever"
        )


def share_embeddings(retrievers: Mapping[str, object]) -> dict[str, object]:
    """The retrievers with one dense retriever per embedder (and cache folder), fused ones'
    components included, so that each text is embedded once a run whichever uses it."""
    shared: dict[tuple[str, object], DenseRetriever] = {}

    def one(retriever: object) -> object:
        if isinstance(retriever, DenseRetriever):
            key = (retriever.embedder.name, retriever.cache_dir)
            return shared.setdefault(key, retriever)
        if isinstance(retriever, FusedRetriever):
            return retriever.with_retrievers([one(r) for r in retriever.retrievers])
        return retriever

    return {name: one(retriever) for name, retriever in retrievers.items()}


def _run_names(
    chunkers: Mapping[str, Chunker], retrievers: Mapping[str, object]
) -> dict[tuple[str, str], str]:
    """Each (chunker, retriever) pair's run name: the chunker's with one retriever, else
    ``CHUNKER+RETRIEVER``."""
    one = len(retrievers) == 1
    return {(c, r): c if one else f"{c}+{r}" for c in chunkers for r in retrievers}


def _grid(
    chunkers: Mapping[str, Chunker],
    retrievers: Mapping[str, object],
    names: Mapping[tuple[str, str], str],
    job: _Job,
) -> dict[str, ChunkingRun]:
    """Every chunker x retriever run: each corpus chunked once, then retrieved by each."""
    runs: dict[str, ChunkingRun] = {}
    for chunker_name, chunker in chunkers.items():
        clock = time.perf_counter()
        chunks, statistics = _chunk(chunker_name, chunker, job)
        _tick(job.timings, "chunking", clock)
        for retriever_name, retriever in retrievers.items():
            name = names[chunker_name, retriever_name]
            runs[name] = _run(name, (chunker_name, chunker), chunks, statistics, retriever, job)
    return runs


def chunk_corpus(
    chunker: Chunker, documents: Mapping[str, str], progress: Progress | None = None
) -> list[Chunk]:
    """Every document's chunks, documents in corpus order; ``progress`` counts the characters
    chunked, moving within a document as the built-in chunkers pass through it
    (:func:`~ctxeval.chunking.chunkers.reporting_positions`)."""
    chunks: list[Chunk] = []
    for name, text in documents.items():
        if progress is None or not progress.active:
            chunks.extend(chunker.chunk(text, name))
            continue
        reached = 0

        def report(position: int, bar: Progress = progress) -> None:
            nonlocal reached
            if position > reached:
                bar.update(position - reached)
                reached = position

        with reporting_positions(report):
            chunks.extend(chunker.chunk(text, name))
        report(len(text))
    return chunks


def _run(
    name: str,
    named: tuple[str, Chunker],
    chunks: list[Chunk],
    statistics: dict[str, Any],
    retriever: object,
    job: _Job,
) -> ChunkingRun:
    """One chunker x retriever run: index, retrieve, evaluate, attribute."""
    chunker_name, chunker = named
    clock = time.perf_counter()
    with job.steps.phase(f"indexing {name}"):
        search = searcher(retriever, chunks, job.steps.embedding(name))
    clock = _tick(job.timings, "indexing", clock)
    rankings = _retrieve(name, search, chunks, job)
    clock = _tick(job.timings, "retrieval", clock)
    ids = chunk_ids(name, chunks)
    records = [
        run_record(question, chunks, ids, ranking)
        for question, ranking in zip(job.questions, rankings, strict=True)
    ]
    evaluator = RetrievalEvaluator(
        records,
        list(job.metrics),
        matching=job.strategy,
        progress=job.steps.option,
        budget_policy=job.settings.policy,
        token_counter=job.settings.tokens,
    )
    evaluator.source = job.plan.run_path(name) if job.plan is not None else name
    job.steps.current = f"scoring {name}"  # the evaluator draws its own bar
    result = evaluator.run(k=[k if isinstance(k, int) else str(k) for k in job.ks])
    clock = _tick(job.timings, "evaluation", clock)
    with job.steps.bar(f"attributing {name}", "questions", len(job.questions)) as bar:
        attribution = attribute(
            job.questions,
            chunks,
            [[i for i, _ in ranking] for ranking in rankings],
            job.strategy,
            job.ks,
            rule=job.settings.rule,
            budget_policy=job.settings.policy,
            token_counter=job.settings.tokens,
            progress=bar.update,
            convention=job.settings.convention,
        )
    _tick(job.timings, "attribution", clock)
    used = result.summary["context_used"]
    return ChunkingRun(
        name,
        chunker.spec,
        chunks,
        records,
        result,
        attribution,
        statistics,
        {k: dict(used[cutoff_label(k)]) for k in job.ks},
        chunker_name,
        spec_of(retriever),
    )


def _chunk(name: str, chunker: Chunker, job: _Job) -> tuple[list[Chunk], dict[str, Any]]:
    """Every document's chunks, and their statistics (with how a third-party splitter's
    chunks were placed, this run)."""
    total = sum(map(len, job.documents.values()))
    bar = job.steps.bar(f"chunking {name}", "characters", total)
    before = dict(getattr(chunker, "locating", {}))
    try:
        chunks = chunk_corpus(chunker, job.documents, bar)
    except CtxevalError as exc:
        raise type(exc)(f"chunker {name}: {exc}", fixes=exc.fixes) from None
    finally:
        bar.close()
    statistics = chunk_statistics(chunks)
    if job.settings.convention == "chroma":
        chunks = place_as_chroma(chunks, job.documents, name)
    located = getattr(chunker, "locating", None)
    if located is not None:
        statistics["located"] = {key: n - before.get(key, 0) for key, n in located.items()}
    if not chunks:
        raise InvalidArgumentError(f"chunker {name} ({chunker.spec}): made no chunks")
    return chunks, statistics


def _retrieve(name: str, search: Any, chunks: list[Chunk], job: _Job) -> list[Ranking]:
    """Each question's ranking, deep enough for every cut-off (at a budget: as deep as the
    budget takes, and no deeper)."""
    sizes = ChunkSizes(chunks, job.settings.tokens)
    depth = retrieval_depth(job.ks, sizes=sizes)
    rankings: list[Ranking] = []
    with job.steps.bar(f"retrieving {name}", "questions", len(job.questions)) as bar:
        for question in job.questions:
            rankings.append(search(question.question, depth))
            bar.update(1)
    if any(isinstance(k, Budget) for k in job.ks):
        needed = needed_depths(job.ks, [[i for i, _ in r] for r in rankings], sizes)
        rankings = [cut_ranking(ranking, n) for ranking, n in zip(rankings, needed, strict=True)]
    return rankings


def _tick(timings: dict[str, float], step: str, since: float) -> float:
    now = time.perf_counter()
    timings[step] = timings.get(step, 0.0) + now - since
    return now


def chunk_ids(name: str, chunks: Sequence[Chunk]) -> list[str]:
    """Each chunk's id, ``{chunker}:{doc}:{n}``, ``n`` counting from 0 within the document
    (a chunking's chunks come grouped by document, in order)."""
    ids: list[str] = []
    number = 0
    for position, chunk in enumerate(chunks):
        number = number + 1 if position and chunks[position - 1].doc == chunk.doc else 0
        ids.append(f"{name}:{chunk.doc}:{number}")
    return ids


def run_record(
    question: Question, chunks: Sequence[Chunk], ids: Sequence[str], ranking: Ranking
) -> dict[str, Any]:
    """One line of a run file: the question, the retrieved chunks (texts, ids, spans, scores)
    and the ground truth with its spans; the scores are null when the retriever gave none. A
    fused retriever's line also holds each component's rank and score of every chunk retrieved
    (``retrieved_components``)."""
    retrieved = [chunks[i] for i, _ in ranking]
    scores = [score for _, score in ranking]
    places = component_places(ranking)
    extra = {} if places is None else {"retrieved_components": places}
    return {
        "id": question.id,
        "question": question.question,
        "retrieved_context": [c.text for c in retrieved],
        "retrieved_chunk_ids": [ids[i] for i, _ in ranking],
        "retrieved_scores": None if None in scores else scores,
        "retrieved_spans": [{"doc": c.doc, "start": c.start, "end": c.end} for c in retrieved],
        "ground_truth_context": [e.text for e in question.excerpts],
        "ground_truth_spans": [e.span() for e in question.excerpts],
        **extra,
    }


def _distribution(values: Sequence[int]) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64)
    q1, median, q3 = np.percentile(array, [25, 50, 75])
    return {
        "min": float(array.min()),
        "q1": float(q1),
        "median": float(median),
        "q3": float(q3),
        "mean": mean_of(array),
        "max": float(array.max()),
    }


def chunk_statistics(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The number of chunks and their size distribution in characters and in words
    (whitespace-separated): min, quartiles, mean, max."""
    return {
        "chunks": len(chunks),
        "chars": _distribution([len(c.text) for c in chunks]),
        "words": _distribution([len(_WORD.findall(c.text)) for c in chunks]),
    }
