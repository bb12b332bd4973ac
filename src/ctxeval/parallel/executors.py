"""How a run is executed: one interface, three executors, the same numbers to the last bit.

:class:`RetrievalEvaluator` describes a run as a :class:`Job` (what to read and how, the plan
for each mode, where the rows go) and hands it to the executor :func:`choose_executor` picks:

- :class:`InProcess`: batches read and scored in this process (``workers=1``);
- :class:`LocalProcesses`: worker processes on this machine. They read their own partitions of
  large JSONL/Parquet inputs (:func:`~ctxeval.parallel.partitions.evaluate_in_processes`), else
  score batches read here (:func:`~ctxeval.parallel.workers.score_in_order`); with the default
  number of workers, a run whose records are cheap to score stays in this process;
- :class:`DaskCluster`: a Dask cluster (:func:`~ctxeval.parallel.partitions.evaluate_distributed`).

An executor's ``run(job)`` returns the :class:`~ctxeval.results.EvaluationResult`. The dataset's
mode (text or id) is decided once, from the first record read (:meth:`Job.mode_of`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

from ctxeval.foundation.errors import Fix, InvalidRecordError
from ctxeval.foundation.progress import Progress
from ctxeval.io.paths import check_output
from ctxeval.parallel.job import Job
from ctxeval.parallel.workers import (
    pays_to_start_workers,
    prepend_batches,
    score_in_order,
    unsendable,
)
from ctxeval.records.model import Record, RecordError
from ctxeval.results import EvaluationResult, JsonlResultWriter
from ctxeval.results.aggregation import Aggregator
from ctxeval.scoring.driver import ScoredBatch, ScoringPlan

__all__ = [
    "PARTITION_MIN_BYTES",
    "DaskCluster",
    "Executor",
    "InProcess",
    "LocalProcesses",
    "choose_executor",
]

Batch = list[Record | RecordError]

# Worker processes read files of at least this many bytes per worker themselves, in
# partitions; smaller inputs are read here and sent in batches (finer-grained: a slow record,
# or the first bad one, is met sooner). See docs/evaluator.md.
PARTITION_MIN_BYTES = 1 << 20


def _partitionable(job: Job, plan: ScoringPlan, workers: int, asked: bool) -> bool:
    """Whether ``workers`` processes can read the job's dataset by partitions themselves, and
    should: partitions ``asked`` for, or files of :data:`PARTITION_MIN_BYTES` a worker."""
    from ctxeval.parallel.partitions import dataset_bytes, partitionable

    if not partitionable(job.dataset, job.format) or unsendable(plan) is not None:
        return False
    return asked or dataset_bytes(job.dataset) >= workers * PARTITION_MIN_BYTES


class Executor(Protocol):
    """Runs a :class:`Job` and returns its result."""

    def run(self, job: Job) -> EvaluationResult: ...


def _progress(job: Job) -> Progress:
    """The run's progress: records scored out of the dataset's, when they can be counted
    cheaply (:func:`~ctxeval.parallel.partitions.record_total`; only when a bar is drawn)."""
    from ctxeval.parallel.partitions import record_total

    name = os.path.basename(job.source.rstrip("/")) or job.source
    return Progress.from_option(
        job.progress,
        stream=sys.stderr,
        label=f"scoring {name}",
        total=lambda: record_total(job.dataset, job.format),
    )


def _fold(
    job: Job, aggregator: Aggregator, scored: Iterator[ScoredBatch], progress: Progress
) -> None:
    """Fold scored batches into ``aggregator``; the first bad record stops the run unless
    ``job.on_error`` is ``"skip"``."""
    try:
        for results in scored:
            bad = aggregator.add_scored(results, stop_at_error=job.on_error == "raise")
            if bad is not None:
                raise InvalidRecordError(
                    f"{bad}. Fix the record, or pass on_error='skip' to skip bad "
                    "records and count them in the results",
                    fixes=(*bad.fixes, Fix("on_error", "skip")),
                )
            progress.update(len(results))
    finally:
        close = getattr(scored, "close", None)
        if close is not None:
            close()  # at once, not when collected: stops any worker processes now


def _batches(items: Iterator[Record | RecordError], size: int) -> Iterator[Batch]:
    while batch := list(islice(items, size)):
        yield batch


def _prepend(
    first: Record | RecordError, rest: Iterator[Record | RecordError]
) -> Iterator[Record | RecordError]:
    yield first
    yield from rest


def _locally(
    job: Job, body: Callable[[JsonlResultWriter | None], EvaluationResult]
) -> EvaluationResult:
    """``body(writer)`` with the rows streamed to ``job.output`` (written atomically when the
    run completes), or to no file."""
    writer = None if job.output is None else JsonlResultWriter(job.output, inputs=job.inputs)
    try:
        result = body(writer)
        if writer is not None:
            writer.finish(result)
    finally:
        if writer is not None:
            writer.close()
    return result


@dataclass(frozen=True)
class InProcess:
    """Batches read and scored in this process."""

    def run(self, job: Job) -> EvaluationResult:
        return LocalProcesses(workers=1).run(job)


@dataclass(frozen=True)
class LocalProcesses:
    """Worker processes on this machine (``auto``: their number was not chosen, so a run whose
    records are cheap to score stays in this process)."""

    workers: int
    auto: bool = False
    partition_bytes: int | None = None
    partition_records: int | None = None

    def run(self, job: Job) -> EvaluationResult:
        return _locally(job, lambda writer: self._run(job, writer))

    def _run(self, job: Job, writer: JsonlResultWriter | None) -> EvaluationResult:
        records = job.records()
        first = next(records, None)
        if first is None:
            return job.empty_result()
        plan = job.plan_for(job.mode_of(first))
        aggregator = job.aggregator(plan, writer)
        progress = _progress(job)
        stream = _prepend(first, records)
        workers, head = self.workers, None
        asked = self.partition_bytes is not None or self.partition_records is not None
        if workers > 1 and _partitionable(job, plan, workers, asked):
            head = list(islice(stream, job.batch_size)) if self.auto else None
            if head is None or pays_to_start_workers(plan, head):
                close = getattr(records, "close", None)
                if close is not None:
                    close()  # the workers read the files themselves
                try:
                    return self._partitions(job, plan, aggregator, progress)
                finally:
                    progress.close()
            workers = 1
        batches: Iterator[Sequence[Record | RecordError]] = _batches(stream, job.batch_size)
        if head:
            batches = prepend_batches([head], batches)
        try:
            _fold(job, aggregator, score_in_order(plan, batches, workers, auto=self.auto), progress)
        finally:
            progress.close()
        return aggregator.result()

    def _partitions(
        self, job: Job, plan: ScoringPlan, aggregator: Aggregator, progress: Progress
    ) -> EvaluationResult:
        from ctxeval.parallel.partitions import evaluate_in_processes

        return evaluate_in_processes(
            job,
            plan,
            workers=self.workers,
            aggregator=aggregator,
            progress=progress,
            block_bytes=self.partition_bytes,
            block_records=self.partition_records,
        )


@dataclass(frozen=True)
class DaskCluster:
    """A Dask cluster: a ``dask.distributed.Client``, a scheduler address, or ``"local"``;
    partitions of ``partition_bytes`` (JSONL) or ``partition_records`` records."""

    scheduler: Any
    partition_bytes: int | None = None
    partition_records: int | None = None

    def run(self, job: Job) -> EvaluationResult:
        from ctxeval.parallel.partitions import evaluate_distributed

        if job.output is not None and "://" not in os.fspath(job.output):
            check_output(job.output, flag="run(output=...)", inputs=job.inputs, directory=True)
        mode = job.modes[0] if len(job.modes) == 1 else job.mode_of(next(job.records(), None))
        with _progress(job) as progress:
            return evaluate_distributed(
                job,
                job.plan_for(mode),
                scheduler=self.scheduler,
                block_bytes=self.partition_bytes or 64 << 20,
                block_records=self.partition_records or 20_000,
                progress=progress,
            )


def cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def choose_executor(
    *,
    workers: int | None,
    scheduler: Any = None,
    partition_bytes: int | None = None,
    partition_records: int | None = None,
) -> Executor:
    """The executor of a run: Dask when given a ``scheduler``; else worker processes (every
    core when ``workers`` is None, each run deciding whether they pay); else this process."""
    if scheduler is not None:
        return DaskCluster(scheduler, partition_bytes, partition_records)
    count = cores() if workers is None else workers
    if count == 1 and workers is not None:
        return InProcess()
    return LocalProcesses(count, workers is None, partition_bytes, partition_records)
