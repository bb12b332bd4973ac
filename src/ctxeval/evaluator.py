"""RetrievalEvaluator: metrics over a whole dataset, at one or many cut-offs.

Records stream from the reader in batches; each batch is scored (in this process or in worker
processes, results kept in input order) and folded into running sums, so memory depends on the
batch size and the per-query rows kept, not on the size of the input.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ctxeval.cutoffs.budgets import BudgetPolicy, check_budget_policy
from ctxeval.cutoffs.cutoff import Cutoff, check_k, check_ks
from ctxeval.foundation.errors import (
    EmptyTokensWarning,
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NothingScoredWarning,
    type_name,
)
from ctxeval.foundation.params import (
    OneOf,
    Rule,
    WholeNumber,
    check_choice,
    check_parameters,
    check_relevance_level,
)
from ctxeval.io.live import LiveRecords, question_lines
from ctxeval.matching.resolve import as_strategy
from ctxeval.matching.rouge.strategies import RougeChunkMatch
from ctxeval.metrics.base import MetricBase
from ctxeval.metrics.id_metrics import IDPrecisionRecallF1, IDRankedRetrievalMetrics
from ctxeval.metrics.measure_sets import (
    IDMeasures,
    TextMeasures,
    at_relevance_level,
    parse_measures,
    tie_order_matters,
)
from ctxeval.metrics.measures import Measure
from ctxeval.metrics.measures import implementation as implementation_choice
from ctxeval.metrics.spans.metrics import SpanMeasures
from ctxeval.metrics.text_metrics import PrecisionRecallF1, RankedRetrievalMetrics
from ctxeval.parallel.executors import choose_executor
from ctxeval.parallel.job import Job, OnError, input_files
from ctxeval.records.model import Mode
from ctxeval.results import EvaluationResult
from ctxeval.scoring.driver import ScoringPlan, sort_ks
from ctxeval.text.locate import DEFAULT_FUZZY_THRESHOLD, Locator
from ctxeval.text.sizes import TokenCounter, check_token_counter

__all__ = ["RetrievalEvaluator", "evaluate"]


def default_metrics(mode: Mode, matching: object = None) -> tuple[MetricBase, ...]:
    if mode == "id":
        return (IDPrecisionRecallF1(), IDRankedRetrievalMetrics())
    strategy = RougeChunkMatch() if matching is None else matching
    return (PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy))


def _normalise_ks(k: object) -> tuple[Cutoff, ...]:
    if k is None:
        return (None,)
    if isinstance(k, str | bytes) or not isinstance(k, Iterable):
        return (check_k("RetrievalEvaluator.run", k),)
    ks = check_ks("RetrievalEvaluator.run", list(k))
    if not ks:
        raise InvalidArgumentError("RetrievalEvaluator.run(k=[]): give at least one cut-off")
    return sort_ks(ks)


#: The rules of :class:`RetrievalEvaluator`'s settings, checked at construction.
_RULES: dict[str, Rule] = {
    "on_error": OneOf(("raise", "skip")),
    "workers": WholeNumber(none="for every core", means=" (1 scores in this process)"),
    "batch_size": WholeNumber(),
    "partition_bytes": WholeNumber(none="for the default"),
    "partition_records": WholeNumber(none="for the default"),
}


class RetrievalEvaluator:
    """Evaluate a dataset of retrieval results with ctxeval metrics.

    ``dataset``: a path (JSONL, JSON, CSV, Parquet, or a glob of them), a pandas DataFrame, or an
    iterable of dicts (a list can be run many times; a generator once). ``metrics``: metric
    objects and/or measure specs (``["ndcg@10", "P@5", "context_recall@5"]``; a spec without
    ``@k`` is evaluated at every cut-off of ``run(k=...)``); specs are judged with ``matching``
    (a strategy or its spec; ROUGE-L chunk matching by default) on contexts, or by id. By
    default ``PrecisionRecallF1`` and ``RankedRetrievalMetrics`` with ``matching``, or their
    ID-mode versions for chunk ids. A metric object's own ``k`` adds to the run's cut-offs.
    ``implementation="reference"`` computes every number with the readable reference formulas
    instead of the vectorised core (the same numbers; for checking). A cut-off may be a context
    budget (``"300w"``, ``"2000c"``, ``"512t"``): chunks are taken in rank order until it is
    filled; ``budget_policy`` says what happens to the chunk that crosses it (``"whole"``,
    the default: left out; ``"truncate"``: cut to fit and judged as cut), and
    ``token_counter`` counts ``t`` budgets (``"rouge"``, the default, ``"unicode"``, or a
    callable ``str -> int``). Every result reports the context used at each cut-off.
    ``fields`` maps the dataset's field names when auto-detection is not enough
    (``{"retrieved": ..., "ground_truth": ..., "id": ...}``).

    ``on_error="raise"`` stops at the first bad record with a message naming its file and line,
    field and fix; ``"skip"`` completes the run and lists the bad records in
    ``result.skipped``. ``workers`` processes score batches of ``batch_size`` records (1 scores
    in this process); results keep the input order. The default uses every core the process may
    run on, but only when records are slow enough to score (>= 0.1 ms each, timed on the first
    batch) for processes to pay for sending them; cheaper runs stay in this process.
    ``progress`` shows a progress line on stderr (default: when stderr is a terminal) or calls a
    function with the number of records done. ``keep_per_query=False`` keeps only the aggregates
    in memory (use ``run(output=...)`` to have the per-query rows on disk).

    ``corpus`` (a directory of .txt/.md documents, a JSONL/Parquet file of ``{id, text}``, or a
    mapping ``{name: text}``) is where span metrics (``"span_iou@5"``, ``SpanMetrics``) locate
    the texts whose span a record does not give: exactly, then lowercased with whitespace
    collapsed, then fuzzily (rapidfuzz ``partial_ratio`` >= ``fuzzy_threshold``, 0-100);
    ``result.located`` counts how each text was located.

    ``scheduler`` runs the evaluation on a Dask cluster instead
    (:mod:`ctxeval.parallel.partitions`): a
    ``dask.distributed.Client``, a scheduler address, or ``"local"``; the dataset is cut into
    partitions of about ``partition_bytes`` (JSONL; default 64 MiB) or ``partition_records``
    records (Parquet, in-memory data; default 20,000), and
    ``run(output="dir/")`` (a directory, or any fsspec URL such as ``s3://bucket/run/``) writes
    the per-query rows as Parquet parts there. The results equal a
    local run's.
    """

    def __init__(  # noqa: PLR0913 (the public constructor: one keyword per setting)
        self,
        dataset: Any,
        metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
        *,
        matching: object = None,
        fields: Any = None,
        format: str | None = None,
        on_error: OnError = "raise",
        workers: int | None = None,
        batch_size: int = 256,
        progress: bool | Callable[[int], None] | None = None,
        keep_per_query: bool = True,
        scheduler: Any = None,
        partition_bytes: int | None = None,
        partition_records: int | None = None,
        implementation: str | None = None,
        corpus: Any = None,
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
        budget_policy: BudgetPolicy = "whole",
        token_counter: str | TokenCounter = "rouge",
    ) -> None:
        owner = "RetrievalEvaluator"
        settings = check_parameters(
            owner,
            _RULES,
            on_error=on_error,
            workers=workers,
            batch_size=batch_size,
            partition_bytes=partition_bytes,
            partition_records=partition_records,
        )
        self.dataset = dataset
        self.locator = None if corpus is None else Locator(_load_corpus(corpus), fuzzy_threshold)
        self.budget_policy = check_budget_policy(f"{owner}(budget_policy=...)", budget_policy)
        self.token_counter = check_token_counter(token_counter)
        self.source: str | None = None
        self.extra_inputs: list[str] = []  # files read besides the dataset (a TREC run's qrels)
        self.matching = None if matching is None else as_strategy(matching, owner=owner)
        self._given_metrics = metrics is not None
        self.objects, self.measures = _split_metrics(metrics)
        try:
            self.implementation = implementation_choice(implementation)
        except ValueError as exc:
            raise InvalidArgumentError(f"{owner}(implementation=...): {exc}") from None
        if self._given_metrics:
            self._check_metrics_fit()
            self._check_matching_used(owner)
        self.fields = fields
        self.format = format
        self.on_error: OnError = settings["on_error"]
        self.batch_size: int = settings["batch_size"]
        self.progress = progress
        self.keep_per_query = bool(keep_per_query)
        self.executor = choose_executor(
            workers=settings["workers"],
            scheduler=scheduler,
            partition_bytes=settings["partition_bytes"],
            partition_records=settings["partition_records"],
        )

    def _check_matching_used(self, owner: str) -> None:
        """``matching=`` judges the measures given by name; metric objects alone, judging by
        strategies of their own (or by id, or by spans), would leave it unused without a word."""
        if self.matching is None or self.measures:
            return
        if any(getattr(m, "matching_strategy", None) == self.matching for m in self.objects):
            return
        raise InvalidArgumentError(
            f"{owner}(matching={self.matching.spec!r}): no metric uses it: the metric objects "
            f"({', '.join(map(repr, self.objects))}) judge with their own strategy, by id or by "
            "spans, and matching= applies to metrics given by name ('context_recall', "
            "'ndcg@10') and the default metrics; give the strategy to the metric objects, or "
            "leave out matching="
        )

    def _check_metrics_fit(self) -> None:
        """Validate the metrics now, not at run time: they must work in some mode (the data
        decides which; a spec that fits one mode only is checked again when it is known)."""
        problems: list[InvalidArgumentError] = []
        for mode in self._modes():
            try:
                ScoringPlan(self.metrics_for(mode), (None,), locator=self.locator)
            except InvalidArgumentError as exc:
                problems.append(exc)
        if len(problems) == len(self._modes()):
            raise problems[0]

    @classmethod
    def from_trec(
        cls,
        run: str | os.PathLike[str],
        qrels: str | os.PathLike[str],
        metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
        *,
        relevance_level: float = 1,
        max_retrieved: int | None = None,
        missing_queries: str = "zero",
        **options: Any,
    ) -> RetrievalEvaluator:
        """ID-mode evaluation of a TREC run file against qrels: a TREC qrels file, or JSON
        (llama-index's ``EmbeddingQAFinetuneDataset``, ranx's ``{qid: {doc: relevance}}``).

        Documents are ranked by score (ties: docid descending, as trec_eval); a query judged in
        the qrels but absent from the run gets an empty ranking and scores 0 (trec_eval ``-c``;
        ``missing_queries="skip"`` leaves it out, as trec_eval without ``-c``); a query of the
        run without judgments is left out, as trec_eval does; scores are kept (``retrieved_scores``,
        for ``ndcg(ties='average')``). ``relevance_level``: the lowest relevant grade (``-l``);
        ``max_retrieved``: only each query's first ``max_retrieved`` documents count (trec_eval
        ``-M``), for every measure and cut-off.
        """
        from ctxeval.io.trec import trec_records

        owner = "RetrievalEvaluator.from_trec"
        if max_retrieved is not None and (
            isinstance(max_retrieved, bool)
            or not isinstance(max_retrieved, int)
            or max_retrieved < 1
        ):
            raise InvalidArgumentError(
                f"{owner}(max_retrieved={max_retrieved!r}): give a whole number >= 1 (trec_eval "
                "-M: the documents counted per query), or None for all of them"
            )
        if metrics is not None and not isinstance(metrics, MetricBase | str | Measure):
            metrics = list(metrics)  # read twice below
        metrics = at_relevance_level(owner, metrics, check_relevance_level(owner, relevance_level))
        check_choice(owner, "missing_queries", missing_queries, ("zero", "skip"))
        records = trec_records(
            run,
            qrels,
            max_retrieved,
            missing_queries,
            tie_order_matters=tie_order_matters(metrics),
        )
        evaluator = cls(records, metrics, **options)
        evaluator.source = os.fspath(run)
        evaluator.extra_inputs = [os.fspath(qrels)]
        return evaluator

    @classmethod
    def from_retriever(
        cls,
        questions: Any,
        retrieve: Callable[[str], Sequence[Any]] | Any,
        metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
        **options: Any,
    ) -> RetrievalEvaluator:
        """Evaluate a live retriever, with no run file: when the evaluation runs, each question
        is retrieved for with ``retrieve(question text)`` (a function; or a LangChain retriever,
        called with ``invoke``, or a llama-index one, with ``retrieve``), which returns texts or
        ids (or LangChain ``Document`` s, llama-index ``NodeWithScore`` s), best
        first.

        ``questions``:

        - dicts with the question text (``question`` or ``query``), the ground truth under any
          field the readers recognise and, as usual, an optional ``id`` and metadata. With
          ground-truth texts (``ground_truth_context``, ...) ``retrieve`` returns texts; with
          ground-truth ids (``relevant_ids``, ``qrels``, ...) it returns ids (ID mode);
        - llama-index's ``EmbeddingQAFinetuneDataset`` (``queries``, ``corpus``,
          ``relevant_docs``), the object, its dict, or the path of its JSON file (as
          ``save_json`` writes it): ID mode, ``retrieve`` returns node ids, every node of a
          query's ``relevant_docs`` has relevance 1; the query ids are the records' ids;
        - the chunking harness's questions (``{"id", "question", "excerpts"}``, excerpts as
          texts or ``{"text", "doc", "start", "end"}``), as dicts or the path of their
          ``.jsonl`` file.

        A list (or a dataset) can be run many times (``retrieve`` is called again on each
        run); ``options`` are :class:`RetrievalEvaluator`'s.
        """
        from ctxeval.io.llama_index import is_llama_index_dataset, llama_index_questions

        owner = "RetrievalEvaluator.from_retriever"
        path = os.fspath(questions) if isinstance(questions, str | os.PathLike) else None
        if path is not None:
            if not os.path.isfile(path):
                what = "is a directory" if os.path.isdir(path) else "does not exist"
                raise InvalidArgumentError(
                    f"{owner}(questions={path!r}): the file {what}; give the path of a "
                    "llama-index EmbeddingQAFinetuneDataset JSON file, or the questions as a "
                    "list of dicts"
                )
            if path.lower().endswith((".jsonl", ".ndjson")):
                questions = question_lines(path)  # the chunking harness's questions file
            else:
                questions = llama_index_questions(path, path)
        elif is_llama_index_dataset(questions):
            questions = llama_index_questions(questions, f"{owner}(questions=...)")
        evaluator = cls(LiveRecords(questions, retrieve), metrics, **options)
        evaluator.source = getattr(retrieve, "__qualname__", type(retrieve).__name__)
        if path is not None:
            evaluator.extra_inputs = [path]
        return evaluator

    def _modes(self) -> tuple[Mode, ...]:
        """The modes the chosen metrics can run in (metric objects fix the mode)."""
        if self.objects:
            return (self.objects[0].mode,)  # type: ignore[return-value]
        return ("text", "id")

    def metrics_for(self, mode: Mode) -> tuple[MetricBase, ...]:
        """The metric objects that run on data of ``mode``: the given objects, and the measure
        specs as one metric object of that mode."""
        if not self._given_metrics:
            return default_metrics(mode, self.matching)
        metrics = list(self.objects)
        spans = [m for m in self.measures if m.definition.family == "span"]
        others = [m for m in self.measures if m.definition.family != "span"]
        if spans and mode == "id":
            raise InvalidArgumentError(
                f"RetrievalEvaluator(metrics=...): {', '.join(map(str, spans))} measure the "
                "spans of texts, but the dataset has chunk ids; give text-mode records"
            )
        if others:
            if mode == "id":
                metrics.append(IDMeasures(others))
            else:
                metrics.append(TextMeasures(others, self.matching))
        # Span measures of one unit and convention share one object (one judging pass).
        groups: dict[tuple[str, str], list[Measure]] = {}
        for measure in spans:
            key = (measure.option("unit"), measure.option("convention"))
            groups.setdefault(key, []).append(measure)
        metrics.extend(SpanMeasures(group) for group in groups.values())
        return tuple(metrics)

    def run(
        self,
        k: int | str | Sequence[int | str] | None = None,
        *,
        output: str | os.PathLike[str] | None = None,
        budget_policy: BudgetPolicy | None = None,
    ) -> EvaluationResult:
        """Score every record at each cut-off in ``k``: a number of chunks, a budget
        (``"300w"``, ``"2000c"``, ``"512t"``), a list of them, or None (all retrieved).
        ``budget_policy`` overrides the evaluator's for this run.

        ``output`` (a ``.jsonl`` path) streams per-query rows to disk during the run and writes
        the complete result file atomically at the end; with ``keep_per_query=False`` the rows
        are then not kept in memory either, so memory stays flat for any dataset size. With a
        ``scheduler``, ``output`` is a directory (or fsspec URL) of Parquet parts.
        """
        ks = _normalise_ks(k)
        policy = (
            self.budget_policy
            if budget_policy is None
            else check_budget_policy("RetrievalEvaluator.run(budget_policy=...)", budget_policy)
        )
        result = self.executor.run(self._job(ks, policy, output))
        _warn_tokenless(result)
        _warn_nothing_scored(result)
        return result

    def _job(
        self,
        ks: tuple[Cutoff, ...],
        policy: BudgetPolicy,
        output: str | os.PathLike[str] | None,
    ) -> Job:
        def plan_for(mode: Mode) -> ScoringPlan:
            return ScoringPlan(
                self.metrics_for(mode),
                ks,
                self.implementation,
                self.locator,
                budget_policy=policy,
                token_counter=self.token_counter,
            )

        return Job(
            dataset=self.dataset,
            plan_for=plan_for,
            modes=self._modes(),
            source=self._source_name(),
            inputs=input_files(self.dataset, self.source, self.extra_inputs),
            fields=self.fields,
            format=self.format,
            on_error=self.on_error,
            batch_size=self.batch_size,
            keep_per_query=self.keep_per_query,
            progress=self.progress,
            output=output,
            mode_fixed=bool(self.objects),
        )

    def _source_name(self) -> str:
        if self.source is not None:
            return self.source
        if isinstance(self.dataset, str | os.PathLike):
            return os.fspath(self.dataset)
        return type(self.dataset).__name__


def _warn_nothing_scored(result: EvaluationResult) -> None:
    """Say when no aggregate has a value: None, not a number, and why."""
    summary = result.summary
    if any(value is not None for value in result.aggregate.values()):
        return
    source = f"the dataset ({summary.get('source') or 'given'})"
    if summary["queries"]:
        reason = (
            f"no query counts in the aggregates: every query of {source} has an empty "
            "ground truth and empty_ground_truth='skip' leaves them out"
        )
    elif result.skipped:
        first = result.skipped[0]
        who = f" (record {first['id']!r})" if first.get("id") is not None else ""
        reason = (
            f"no query was scored: all {len(result.skipped)} record(s) of {source} were "
            f"skipped (the first: {first['location']}{who}: {first['message']})"
        )
    else:
        reason = f"no query was scored: {source} has no records"
    warnings.warn(
        NothingScoredWarning(f"{reason}; every aggregate is None", queries=summary["queries"]),
        stacklevel=3,
    )


def _warn_tokenless(result: EvaluationResult) -> None:
    summary = result.summary
    if summary["tokenless_texts"]:
        first = ", ".join(map(repr, summary.get("first_records_with_tokenless_texts", ())))
        warnings.warn(
            EmptyTokensWarning(
                f"{summary['tokenless_texts']} text(s) with letters or digits in "
                f"{summary['records_with_tokenless_texts']} record(s) (the first: {first}) "
                "produced no tokens and could not match anything (the ROUGE tokenizer keeps "
                "ASCII letters and digits only); for text in other scripts use "
                "RougeChunkMatch(tokenizer='unicode')",
                fixes=(Fix("tokenizer", "unicode", "RougeChunkMatch(tokenizer='unicode')"),),
            ),
            stacklevel=3,
        )


def _load_corpus(corpus: Any) -> dict[str, str]:
    from ctxeval.io.corpus import load_corpus

    return load_corpus(corpus)


def _split_metrics(
    metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | Measure | None,
) -> tuple[tuple[MetricBase, ...], tuple[Measure, ...]]:
    """The metric objects and the measure specs (parsed) of ``metrics``."""
    if metrics is None:
        return (), ()
    if not isinstance(metrics, MetricBase | str | Measure | Iterable):
        raise InvalidArgumentTypeError(
            f"RetrievalEvaluator(metrics=...): give a list of metric objects or measure specs, "
            f"e.g. metrics=['ndcg@10', PrecisionRecallF1(RougeChunkMatch())]; got "
            f"{type_name(metrics)} {metrics!r}"
        )
    items = [metrics] if isinstance(metrics, MetricBase | str | Measure) else list(metrics)
    if not items:
        raise InvalidArgumentError(
            "RetrievalEvaluator(metrics=[]): give at least one metric or measure spec, "
            "or leave metrics out for the defaults"
        )
    specs = [m for m in items if not isinstance(m, MetricBase)]
    for spec in specs:
        if not isinstance(spec, str | Measure):
            raise InvalidArgumentTypeError(
                f"RetrievalEvaluator(metrics=...): {spec!r} is not a ctxeval metric; "
                "give measure specs ('ndcg@10', 'P@5'), PrecisionRecallF1, "
                "RankedRetrievalMetrics or their ID-mode versions"
            )
    measures = parse_measures("RetrievalEvaluator(metrics=...)", specs) if specs else ()
    return tuple(m for m in items if isinstance(m, MetricBase)), measures


def evaluate(
    dataset: Any,
    metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
    *,
    k: int | str | Sequence[int | str] | None = None,
    **options: Any,
) -> EvaluationResult:
    """Shortcut for ``RetrievalEvaluator(dataset, metrics, **options).run(k)``."""
    return RetrievalEvaluator(dataset, metrics, **options).run(k)
