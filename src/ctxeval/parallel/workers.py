"""Worker processes for the evaluator: batches scored in a pool, results in input order.

Three promises, whatever happens to the run:

- **The plan is never pickled where the platform forks** (Linux): the workers receive it as an
  argument of their initializer, which ``fork`` copies with the process instead of pickling it,
  so a lambda or a closure works as a custom strategy. Where processes are spawned (macOS,
  Windows) the plan must pickle; :func:`unsendable` says why it does not.
- **Workers die with their parent, however it dies.** On Linux each worker asks the kernel for
  SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``), which covers SIGKILL of the
  parent; SIGTERM of the parent (when nobody else handles it) raises ``SystemExit(143)`` so that
  the run stops like an exception; any exception, Ctrl-C included, kills the workers before it
  goes on. Workers ignore SIGINT: a Ctrl-C in a terminal reaches the whole process group, and
  the parent stops them.
- **A worker that dies names the records**:
  :class:`~ctxeval.foundation.errors.WorkerProcessError` says, in one line, which worker died and
  how (the signal that killed it, read from its exit status), which records were being scored,
  and what to do (fewer workers, smaller batches, more memory), instead of a raw
  ``BrokenProcessPool``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from itertools import islice
from types import TracebackType
from typing import Any

from ctxeval.foundation.errors import Fix, InvalidArgumentError, WorkerProcessError
from ctxeval.io.atomic import terminate_raises
from ctxeval.io.fields import ResolvedFields
from ctxeval.io.seen_ids import SeenIds, hash_id, split_hash
from ctxeval.io.sources import locate
from ctxeval.parallel.blocks import Block, read_block
from ctxeval.records.model import Record, RecordError
from ctxeval.results.aggregation import Aggregator, AggregatorState
from ctxeval.scoring.driver import ScoredBatch, ScoringPlan, score_columns

__all__ = [
    "PARALLEL_MIN_SECONDS_PER_RECORD",
    "HashedClaims",
    "LocalFuture",
    "LocalPool",
    "check_claims",
    "pays_to_start_workers",
    "pool_context",
    "prepend_batches",
    "score_block",
    "score_in_order",
    "score_in_workers",
    "score_partition",
    "unsendable",
    "worker_died",
]

Batch = Sequence[Record | RecordError]

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def pool_context() -> Any:
    """fork where the platform has it (Linux), else spawn.

    fork: workers start at once with the parent's imports and the plan as it is, and scripts
    or notebooks need no ``if __name__ == "__main__":`` guard. Spawn needs that guard and a plan
    that pickles.
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def unsendable(plan: ScoringPlan) -> str | None:
    """Why ``plan`` cannot reach worker processes on this platform, or None when it can."""
    if pool_context().get_start_method() == "fork":
        return None
    try:
        pickle.dumps(plan)
    except Exception as exc:  # pickle raises many types (PicklingError, AttributeError, ...)
        return f"{type(exc).__name__}: {exc}"
    return None


# --- in the worker ---------------------------------------------------------------------------

_plan: ScoringPlan | None = None


def _start_worker(plan: ScoringPlan, parent: int) -> None:
    global _plan
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler, copied by fork
    _plan = plan


def _die_with(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request was in place
        os._exit(1)


def _score(batch: Batch) -> ScoredBatch:
    assert _plan is not None, "the pool initializer installs the plan"
    return score_columns(_plan, batch)


class _PlanToken:
    """Sent in place of the plan, which the worker already has (see :class:`LocalPool`)."""


def _call(function: Any, args: tuple[Any, ...]) -> Any:
    """Run ``function`` with the worker's plan in place of the token."""
    return function(*(_plan if isinstance(arg, _PlanToken) else arg for arg in args))


# --- in the parent ---------------------------------------------------------------------------


class LocalPool:
    """Worker processes behind the part of ``dask.distributed.Client`` that a partitioned run
    uses (``submit`` and ``gather``), so a local run reads, checks and scores its partitions the
    way a cluster does (:func:`ctxeval.parallel.partitions.evaluate_blocks`).

    The plan reaches the workers by fork, as for :func:`score_in_workers`: an argument that is
    the plan is sent as a token, never pickled. A future given as an argument is waited for in
    the parent first. Use it as a context manager: leaving it by an exception kills the
    workers at once.
    """

    def __init__(self, plan: ScoringPlan, workers: int, batch_size: int = 256) -> None:
        self.plan = plan
        self.workers = workers
        self.batch_size = batch_size  # what a dead worker's message suggests halving
        self._guard = terminate_raises()

    def __enter__(self) -> LocalPool:
        self._guard.__enter__()  # SIGTERM unwinds, so the workers are stopped, not orphaned
        try:
            self.pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=pool_context(),
                initializer=_start_worker,
                initargs=(self.plan, os.getpid()),
            )
        except BaseException:
            self._guard.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            if error is not None:
                _kill_workers(self.pool)
            self.pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self._guard.__exit__(kind, error, trace)

    def submit(self, function: Any, *args: Any, **_dask_options: Any) -> LocalFuture:
        given = tuple(
            _PlanToken()
            if arg is self.plan
            else arg.result()
            if isinstance(arg, LocalFuture)
            else arg
            for arg in args
        )
        name = _describe(args[0])
        try:
            future = self.pool.submit(_call, function, given)
        except BrokenProcessPool as exc:  # a worker died since the last task was submitted
            raise self.died(f"reading or scoring {name or 'the records'}") from exc
        return LocalFuture(future, name, self)

    def died(self, doing: str) -> WorkerProcessError:
        """The error for this pool's dead worker, which was ``doing`` something."""
        return worker_died(self.pool, doing, self.workers, self.batch_size)

    def gather(self, futures: Iterable[LocalFuture]) -> list[Any]:
        return [future.result() for future in futures]


def _describe(block: Any) -> str:
    """What a task's first argument (a block of the input) holds, for messages."""
    name = getattr(block, "name", None)
    if not isinstance(name, str):
        return ""
    if getattr(block, "format", None) == "jsonl" and getattr(block, "end", 0):
        return f"the lines of {name} that start in bytes {block.start} to {block.end}"
    return f"records of {name}"


class LocalFuture:
    """A worker's result; a dead worker is a :class:`WorkerProcessError` naming the input."""

    def __init__(self, future: Future[Any], name: str, pool: LocalPool) -> None:
        self.future = future
        self.name = name
        self.pool = pool

    def done(self) -> bool:
        return self.future.done()

    def result(self, records: str | None = None) -> Any:
        """The task's result; ``records``: what the task scores, for the message when its
        worker died (default: the part of the input it was given)."""
        try:
            return self.future.result()
        except BrokenProcessPool as exc:
            doing = f"scoring {records}" if records else f"reading or scoring {self.name}"
            raise self.pool.died(doing if records or self.name else "scoring") from exc


def score_in_workers(
    plan: ScoringPlan, batches: Iterable[Batch], workers: int
) -> Iterator[ScoredBatch]:
    """Score ``batches`` in ``workers`` processes, yielding results in input order.

    Close the iterator when you stop early: that stops the workers at once.
    """
    pending: deque[tuple[Future[ScoredBatch], Batch]] = deque()
    window = 2 * workers  # bounded read-ahead keeps memory flat
    with terminate_raises():  # SIGTERM unwinds, so the workers are stopped, not orphaned
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=pool_context(),
            initializer=_start_worker,
            initargs=(plan, os.getpid()),
        )
        done = False
        try:
            for batch in batches:
                if len(pending) >= window:
                    yield _next_result(pending, pool, workers)
                try:
                    future = pool.submit(_score, batch)
                except BrokenProcessPool as exc:  # a worker died while this batch was read
                    while pending:  # the finished batches, then the error naming the lost ones
                        yield _next_result(pending, pool, workers)
                    raise _crash(pool, [batch], workers) from exc
                pending.append((future, batch))
            while pending:
                yield _next_result(pending, pool, workers)
            done = True
        finally:
            if not done:
                _kill_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)


def _next_result(
    pending: deque[tuple[Future[ScoredBatch], Batch]], pool: ProcessPoolExecutor, workers: int
) -> ScoredBatch:
    try:
        result = pending[0][0].result()
    except BrokenProcessPool as exc:
        if "initializer" in str(exc):  # it failed to start, nobody killed it
            fix = Fix("workers", 1)
            raise WorkerProcessError(
                f"the worker processes could not start ({exc}; their error is printed above); "
                f"run with {fix.text} to score in this process",
                fixes=(fix,),
            ) from exc
        raise _crash(pool, [batch for _, batch in pending], workers) from exc
    pending.popleft()
    return result


def _crash(pool: ProcessPoolExecutor, batches: list[Batch], workers: int) -> WorkerProcessError:
    """The error for a worker that died while ``batches`` were with the workers."""
    first, last = batches[0][0], batches[-1][-1]
    count = sum(len(batch) for batch in batches)
    doing = f"scoring or holding {count} record(s), from {_name(first)} to {_name(last)}"
    return worker_died(pool, doing, workers, max(len(batch) for batch in batches))


def worker_died(
    pool: ProcessPoolExecutor, doing: str, workers: int, batch_size: int
) -> WorkerProcessError:
    """The error for a pool that broke because a worker died while ``doing`` something: one
    line saying which worker died and how, and what to do (half the ``workers``, half the
    ``batch_size``, more memory). The pool is shut down first, so that every process's exit
    status is known (the pool stops the others with SIGTERM)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=True, cancel_futures=True)
    fewer, smaller = (
        Fix("workers", max(1, workers // 2)),
        Fix("batch_size", max(1, batch_size // 2)),
    )
    return WorkerProcessError(
        f"{_how_it_died(processes)} while {doing}. Run with fewer workers ({fewer.text}) or "
        f"smaller batches ({smaller.text}), or give the run more memory",
        fixes=(fewer, smaller),
    )


def _how_it_died(processes: list[Any]) -> str:
    """Which worker process died and how, from the exit statuses of the pool's processes
    (negative: killed by that signal). The pool stops the survivors with SIGTERM, so another
    status, when there is one, is the worker that died first."""
    ended = [(process.pid, process.exitcode) for process in processes if process.exitcode]
    first = [(pid, code) for pid, code in ended if code != -signal.SIGTERM] or ended
    if not first:
        return (
            "a worker process was killed by the system (most often because memory ran out: the "
            "out-of-memory killer)"
        )
    pid, code = first[0]
    if code > 0:
        return f"worker process {pid} exited with status {code} before it finished"
    if -code == signal.SIGKILL:
        return (
            f"worker process {pid} was killed by the system (SIGKILL: most often the "
            "out-of-memory killer, when memory runs out)"
        )
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return f"worker process {pid} was killed by signal {name}"


def _name(item: Record | RecordError) -> str:
    return item.location if item.id is None else f"{item.location} (record {item.id!r})"


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    # Python 3.11 has no public way to stop a pool's running tasks (3.14: terminate_workers).
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with suppress(OSError, ValueError):  # already gone, or closed
            process.kill()


# --- partitions: the tasks of a run whose workers read their own blocks -------------------

# The ids a partition claimed, for SeenIds.claim_many: (the id's hash_id as its low and high
# 64 bits, where it was claimed: position * places + file number, whether a good record's).
HashedClaims = list[tuple[int, int, int, bool]]


def score_block(
    block: Block,
    resolved: ResolvedFields | None,
    fields: Any,
    plan: ScoringPlan,
    source: str,
    first_index: int,
    duplicates: Mapping[int, str],
    batch_size: int,
    *,
    keep_rows: bool,
    stop_at_error: bool,
    claims: list[tuple[int, str, bool]],
) -> tuple[Aggregator, bool]:
    """Read, check and score one block (:func:`~ctxeval.parallel.blocks.read_block`, its ids claimed
    into ``claims``, ``duplicates`` known) into an aggregator; and whether every record was
    scored (False: it stopped at the first bad record, as ``stop_at_error`` asks)."""
    # The block's rows, stored by column until they are sent or written (see PerQueryTable).
    aggregator = Aggregator(plan, source, keep_rows=keep_rows)
    items = read_block(
        block,
        resolved,
        fields=fields,
        first_index=first_index,
        claims=claims,
        known_duplicates=duplicates,
    )
    while batch := list(islice(items, batch_size)):
        scored = score_columns(plan, batch)
        if aggregator.add_scored(scored, stop_at_error=stop_at_error) is not None:
            return aggregator, False
    return aggregator, True


def score_partition(
    block: Block,
    resolved: ResolvedFields | None,
    fields: Any,
    plan: ScoringPlan,
    source: str,
    first_index: int,
    duplicates: Mapping[int, str],
    batch_size: int,
    keep_rows: bool,
    stop_at_error: bool,
    places: int,
) -> tuple[AggregatorState, HashedClaims]:
    """A local partitioned run's task: one block read and scored at its place in the dataset
    (``block.first_pos``, ``first_index``), with the ids it claimed, hashed, for the parent's
    check (:func:`check_claims`; ``places``: the dataset's last file number + 1). Only
    ``duplicates`` are taken for duplicates: the parent scores a block again when the check
    finds one in it."""
    claims: list[tuple[int, str, bool]] = []
    aggregator, _ = score_block(
        block,
        resolved,
        fields,
        plan,
        source,
        first_index,
        duplicates,
        batch_size,
        keep_rows=keep_rows,
        stop_at_error=stop_at_error,
        claims=claims,
    )
    number = block.number
    return aggregator.state(), [
        (*split_hash(hash_id(record_id)), pos * places + number, record)
        for pos, record_id, record in claims
    ]


def check_claims(
    seen: SeenIds, claims: HashedClaims, files: Mapping[int, tuple[str, str]]
) -> dict[int, str]:
    """Register a block's claims in ``seen`` (the blocks in input order, as a run in one process
    claims them): ``{position: where the id was first claimed}`` for its records whose id was
    claimed before. ``files``: ``{number: (name, format)}``; a place is ``position * places +
    number``, with ``places = max(files) + 1`` (file numbers skip an empty file)."""
    places = max(files) + 1
    found: dict[int, str] = {}
    for where, first in seen.claim_many(claims):
        first_pos, first_number = divmod(first, places)
        found[where // places] = locate(*files[first_number], first_pos)
    return found


# --- choosing: in this process or in workers ------------------------------------------------

# With ``workers=None`` (every core), processes are started only when a record takes at least
# this long to score in this process: below it, sending records to workers and results back
# costs the parent about as much as scoring them (see docs/decisions.md).
PARALLEL_MIN_SECONDS_PER_RECORD = 100e-6


def score_in_order(
    plan: ScoringPlan, batches: Iterator[Batch], workers: int, *, auto: bool = False
) -> Generator[ScoredBatch, None, None]:
    """Score batches, in worker processes when it pays, yielding results in input order.

    ``auto``: the number of workers was not chosen by the user; the first batch is scored here
    and timed, and the run stays in this process when its records are cheap to score.
    """
    first = next(batches, None)
    if first is None:
        return
    if auto and workers > 1:
        started = time.perf_counter()
        scored = score_columns(plan, first)
        per_record = (time.perf_counter() - started) / max(len(first), 1)
        yield scored
        first = next(batches, None)
        if first is None:
            return
        if per_record < PARALLEL_MIN_SECONDS_PER_RECORD:
            workers = 1
    second = next(batches, None)
    if workers > 1 and second is not None:
        reason = unsendable(plan)
        if reason is not None and not auto:
            raise InvalidArgumentError(
                f"RetrievalEvaluator(workers={workers}): the metrics cannot be sent to worker "
                f"processes, which this platform starts by pickling them ({reason}); define "
                "custom strategies as functions or classes at the top level of an importable "
                "module, or pass workers=1"
            )
        if reason is not None:
            workers = 1  # the default: score here rather than fail
    if workers <= 1 or second is None:
        # One batch or one worker: starting processes would cost more than it saves.
        yield score_columns(plan, first)
        if second is not None:
            yield score_columns(plan, second)
            for batch in batches:
                yield score_columns(plan, batch)
        return
    yield from score_in_workers(plan, prepend_batches((first, second), batches), workers)


def pays_to_start_workers(plan: ScoringPlan, head: Batch) -> bool:
    """Whether records like ``head`` (the first batch) are slow enough to score that worker
    processes pay for themselves (see :data:`PARALLEL_MIN_SECONDS_PER_RECORD`)."""
    if not head:
        return False
    started = time.perf_counter()
    score_columns(plan, head)
    return (time.perf_counter() - started) / len(head) >= PARALLEL_MIN_SECONDS_PER_RECORD


def prepend_batches(head: Iterable[Batch], rest: Iterator[Batch]) -> Iterator[Batch]:
    yield from head
    yield from rest
