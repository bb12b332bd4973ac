"""RetrievalEvaluator: metrics over a whole dataset, at one or many cut-offs.

Records stream from the reader in batches; each batch is scored (in this process or in worker
processes, results kept in input order) and folded into running sums, so memory depends on the
batch size and the per-query rows kept, not on the size of the input.
"""

from __future__ import annotations

import glob
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Literal

from ctxeval.cutoffs.budgets import BudgetPolicy, check_budget_policy
from ctxeval.cutoffs.cutoff import Cutoff, check_k
from ctxeval.foundation.errors import (
    EmptyTokensWarning,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
)
from ctxeval.foundation.params import check_choice, check_relevance_level
from ctxeval.foundation.progress import Progress
from ctxeval.io.live import LiveRecords
from ctxeval.io.paths import check_output
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
from ctxeval.metrics.measures import Implementation, Measure, implementation
from ctxeval.metrics.spans.metrics import SpanMeasures
from ctxeval.metrics.text_metrics import PrecisionRecallF1, RankedRetrievalMetrics
from ctxeval.parallel.workers import (
    pays_to_start_workers,
    prepend_batches,
    score_in_order,
    unsendable,
)
from ctxeval.records.model import Mode, Record, RecordError
from ctxeval.results import EvaluationResult, JsonlResultWriter
from ctxeval.results.aggregation import Aggregator
from ctxeval.scoring.driver import ScoringPlan, sort_ks
from ctxeval.text.locate import DEFAULT_FUZZY_THRESHOLD, Locator
from ctxeval.text.sizes import TokenCounter, check_token_counter

__all__ = ["RetrievalEvaluator", "evaluate"]

OnError = Literal["raise", "skip"]
Batch = list[Record | RecordError]


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
    ks = [check_k("RetrievalEvaluator.run", value) for value in k]
    if not ks:
        raise InvalidArgumentError("RetrievalEvaluator.run(k=[]): give at least one cut-off")
    return sort_ks(ks)


def _batches(items: Iterator[Record | RecordError], size: int) -> Iterator[Batch]:
    while batch := list(islice(items, size)):
        yield batch


# Worker processes read files of at least this many bytes per worker themselves, in
# partitions; smaller inputs are read here and sent in batches (finer-grained: a slow record,
# or the first bad one, is met sooner). See docs/evaluator.md.
PARTITION_MIN_BYTES = 1 << 20


def _cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


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

    def __init__(
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
        self.dataset = dataset
        self.locator = None if corpus is None else Locator(_load_corpus(corpus), fuzzy_threshold)
        self.budget_policy = check_budget_policy(
            "RetrievalEvaluator(budget_policy=...)", budget_policy
        )
        self._policy = self.budget_policy  # this run's (run(budget_policy=...) overrides)
        self.token_counter = check_token_counter(token_counter)
        self.source: str | None = None
        self.extra_inputs: list[str] = []  # files read besides the dataset (a TREC run's qrels)
        self.matching = (
            None if matching is None else as_strategy(matching, owner="RetrievalEvaluator")
        )
        if isinstance(metrics, MetricBase | str | Measure):
            metrics = [metrics]
        self.objects: tuple[MetricBase, ...] = ()
        self.measures: tuple[Measure, ...] = ()
        if metrics is not None:
            items = list(metrics)
            self.objects = tuple(m for m in items if isinstance(m, MetricBase))
            specs = [m for m in items if not isinstance(m, MetricBase)]
            for spec in specs:
                if not isinstance(spec, str | Measure):
                    raise InvalidArgumentTypeError(
                        f"RetrievalEvaluator(metrics=...): {spec!r} is not a ctxeval metric; "
                        "give measure specs ('ndcg@10', 'P@5'), PrecisionRecallF1, "
                        "RankedRetrievalMetrics or their ID-mode versions"
                    )
            if specs:
                self.measures = parse_measures("RetrievalEvaluator(metrics=...)", specs)
            if not items:
                raise InvalidArgumentError(
                    "RetrievalEvaluator(metrics=[]): give at least one metric or measure spec, "
                    "or leave metrics out for the defaults"
                )
        self._given_metrics = metrics is not None
        try:
            self.implementation = _implementation(implementation)
        except ValueError as exc:
            raise InvalidArgumentError(f"RetrievalEvaluator(implementation=...): {exc}") from None
        if self._given_metrics:
            # Validate now, not at run time: the metrics must work in some mode (the data
            # decides which; a spec that fits one mode only is checked again when it is known).
            problems: list[InvalidArgumentError] = []
            for mode in self._modes():
                try:
                    ScoringPlan(self.metrics_for(mode), (None,), locator=self.locator)
                except InvalidArgumentError as exc:
                    problems.append(exc)
            if len(problems) == len(self._modes()):
                raise problems[0]
        self.fields = fields
        self.format = format
        self.on_error: OnError = check_choice(
            "RetrievalEvaluator", "on_error", on_error, ("raise", "skip")
        )
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
            raise InvalidArgumentError(
                f"RetrievalEvaluator(workers={workers!r}): give a whole number >= 1 "
                "(1 scores in this process), or None for every core"
            )
        if workers is not None and workers < 1:
            raise InvalidArgumentError(
                f"RetrievalEvaluator(workers={workers}): give a whole number >= 1, or None"
            )
        self.workers = workers if workers is not None else _cores()
        self._auto_workers = workers is None
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(
                f"RetrievalEvaluator(batch_size={batch_size!r}): give a whole number >= 1"
            )
        self.batch_size = batch_size
        self.progress = progress
        self.keep_per_query = bool(keep_per_query)
        self.scheduler = scheduler
        for name, value in (
            ("partition_bytes", partition_bytes),
            ("partition_records", partition_records),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidArgumentError(
                    f"RetrievalEvaluator({name}={value!r}): give a whole number >= 1, or None "
                    "for the default"
                )
        self.partition_bytes = partition_bytes
        self.partition_records = partition_records

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
        retrieve: Callable[[str], Sequence[str]],
        metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
        **options: Any,
    ) -> RetrievalEvaluator:
        """Evaluate a live retriever, with no run file: when the evaluation runs, each question
        is retrieved for with ``retrieve(question text)``, which returns texts or ids, best
        first.

        ``questions``:

        - dicts with the question text (``question`` or ``query``), the ground truth under any
          field the readers recognise and, as usual, an optional ``id`` and metadata. With
          ground-truth texts (``ground_truth_context``, ...) ``retrieve`` returns texts; with
          ground-truth ids (``relevant_ids``, ``qrels``, ...) it returns ids (ID mode);
        - llama-index's ``EmbeddingQAFinetuneDataset`` (``queries``, ``corpus``,
          ``relevant_docs``), the object, its dict, or the path of its JSON file (as
          ``save_json`` writes it): ID mode, ``retrieve`` returns node ids, every node of a
          query's ``relevant_docs`` has relevance 1; the query ids are the records' ids.

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

    def _plan(self, mode: Mode, ks: tuple[Cutoff, ...]) -> ScoringPlan:
        return ScoringPlan(
            self.metrics_for(mode),
            ks,
            self.implementation,
            self.locator,
            budget_policy=self._policy,
            token_counter=self.token_counter,
        )

    def _records(self) -> Iterator[Record | RecordError]:
        from ctxeval.io.readers import read_records

        return read_records(self.dataset, fields=self.fields, format=self.format)

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
        are then not kept in memory either, so memory stays flat for any dataset size.
        """
        ks = _normalise_ks(k)
        self._policy = (
            self.budget_policy
            if budget_policy is None
            else check_budget_policy("RetrievalEvaluator.run(budget_policy=...)", budget_policy)
        )
        if self.scheduler is not None:
            if output is not None and "://" not in os.fspath(output):
                inputs = self._input_files()
                check_output(output, flag="run(output=...)", inputs=inputs, directory=True)
            return self._run_distributed(ks, output)
        writer = None if output is None else JsonlResultWriter(output, inputs=self._input_files())
        try:
            result = self._run(ks, writer)
            if writer is not None:
                writer.finish(result)
        finally:
            if writer is not None:
                writer.close()
        _warn_tokenless(result)
        return result

    def _run(self, ks: tuple[Cutoff, ...], writer: JsonlResultWriter | None) -> EvaluationResult:
        records = self._records()
        first = next(records, None)
        if first is None:
            plan = self._plan(self._modes()[0], ks)
            return Aggregator(plan, self._source_name(), fields=self.fields).result()
        mode: Mode = first.mode if isinstance(first, Record) else self._modes()[0]
        if isinstance(first, RecordError) and not self.objects:
            mode = self._guess_mode(first)
        plan = self._plan(mode, ks)
        aggregator = Aggregator(
            plan,
            self._source_name(),
            fields=self.fields,
            keep_rows=self.keep_per_query,
            row_sink=None if writer is None else writer.write,
        )
        progress = Progress.from_option(self.progress, stream=sys.stderr)
        stream = _prepend(first, records)
        workers, head = self.workers, None
        if workers > 1 and self._readable_by_workers(plan):
            head = list(islice(stream, self.batch_size)) if self._auto_workers else None
            if head is None or pays_to_start_workers(plan, head):
                close = getattr(records, "close", None)
                if close is not None:
                    close()  # the workers read the files themselves
                try:
                    return self._run_in_processes(plan, aggregator, progress)
                finally:
                    progress.close()
            workers = 1
        batches: Iterator[Sequence[Record | RecordError]] = _batches(stream, self.batch_size)
        if head:
            batches = prepend_batches([head], batches)
        scored = score_in_order(plan, batches, workers, auto=self._auto_workers)
        try:
            for results in scored:
                bad = aggregator.add_scored(results, stop_at_error=self.on_error == "raise")
                if bad is not None:
                    raise InvalidRecordError(
                        f"{bad}. Fix the record, or pass on_error='skip' to skip bad "
                        "records and count them in the results"
                    )
                progress.update(len(results))
        finally:
            scored.close()  # at once, not when collected: stops any worker processes now
            progress.close()
        return aggregator.result()

    def _readable_by_workers(self, plan: ScoringPlan) -> bool:
        """Whether worker processes can read this dataset by partitions themselves."""
        from ctxeval.parallel.partitions import dataset_bytes, partitionable

        if not partitionable(self.dataset, self.format) or unsendable(plan) is not None:
            return False
        if self.partition_bytes is not None or self.partition_records is not None:
            return True  # partitions asked for
        return dataset_bytes(self.dataset) >= self.workers * PARTITION_MIN_BYTES

    def _run_in_processes(
        self, plan: ScoringPlan, aggregator: Aggregator, progress: Progress
    ) -> EvaluationResult:
        from ctxeval.parallel.partitions import evaluate_in_processes

        return evaluate_in_processes(
            self.dataset,
            plan,
            workers=self.workers,
            aggregator=aggregator,
            progress=progress,
            fields=self.fields,
            format=self.format,
            on_error=self.on_error,
            batch_size=self.batch_size,
            block_bytes=self.partition_bytes,
            block_records=self.partition_records,
        )

    def _run_distributed(
        self, ks: tuple[Cutoff, ...], output: str | os.PathLike[str] | None
    ) -> EvaluationResult:
        from ctxeval.parallel.partitions import evaluate_distributed

        mode: Mode = self._modes()[0]
        if len(self._modes()) > 1:
            first = next(self._records(), None)
            mode = first.mode if isinstance(first, Record) else mode
        result = evaluate_distributed(
            self.dataset,
            self._plan(mode, ks),
            scheduler=self.scheduler,
            fields=self.fields,
            format=self.format,
            on_error=self.on_error,
            output=output,
            source=self._source_name(),
            batch_size=self.batch_size,
            block_bytes=self.partition_bytes or 64 << 20,
            block_records=self.partition_records or 20_000,
        )
        _warn_tokenless(result)
        return result

    def _input_files(self) -> list[str]:
        """The files this run reads (an output must not be one of them)."""
        files = [self.source] if self.source is not None else []
        files.extend(self.extra_inputs)
        if isinstance(self.dataset, str | os.PathLike):
            name = os.fspath(self.dataset)
            files.extend([name, *glob.glob(name)])
        return files

    def _guess_mode(self, error: RecordError) -> Mode:
        return "id" if error.field and "ids" in error.field else "text"

    def _source_name(self) -> str:
        if self.source is not None:
            return self.source
        if isinstance(self.dataset, str | os.PathLike):
            return os.fspath(self.dataset)
        return type(self.dataset).__name__


def _warn_tokenless(result: EvaluationResult) -> None:
    if result.summary["tokenless_texts"]:
        warnings.warn(
            EmptyTokensWarning(
                f"{result.summary['tokenless_texts']} text(s) with letters or digits in "
                f"{result.summary['records_with_tokenless_texts']} record(s) produced no "
                "tokens and could not match anything (the ROUGE tokenizer keeps ASCII letters "
                "and digits only); for text in other scripts use "
                "RougeChunkMatch(tokenizer='unicode')"
            ),
            stacklevel=3,
        )


def _prepend(
    first: Record | RecordError, rest: Iterator[Record | RecordError]
) -> Iterator[Record | RecordError]:
    yield first
    yield from rest


def _load_corpus(corpus: Any) -> dict[str, str]:
    from ctxeval.io.corpus import load_corpus

    return load_corpus(corpus)


def _implementation(choice: str | None) -> Implementation:
    return implementation(choice)


def evaluate(
    dataset: Any,
    metrics: Iterable[MetricBase | str | Measure] | MetricBase | str | None = None,
    *,
    k: int | str | Sequence[int | str] | None = None,
    **options: Any,
) -> EvaluationResult:
    """Shortcut for ``RetrievalEvaluator(dataset, metrics, **options).run(k)``."""
    return RetrievalEvaluator(dataset, metrics, **options).run(k)
