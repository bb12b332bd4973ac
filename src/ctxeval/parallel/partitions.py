"""The same evaluation on a Dask cluster, for datasets that outgrow one machine.

``RetrievalEvaluator(dataset, metrics, scheduler=...)`` runs here when given a scheduler: a
``dask.distributed.Client``, a scheduler address (``"tcp://host:8786"``) or ``"local"`` (a
``LocalCluster`` of processes on this machine). The results equal the local evaluator's — the
aggregate to the last bit, the per-query rows, the bad records with their file and line — whatever
the partitioning, because:

- the dataset is cut into blocks read where they live (byte ranges of JSONL files, row groups of
  Parquet files, whole CSV/JSON files, slices of in-memory data); a block owns the lines that
  *start* in its byte range, and the global line numbers and record indices come from a first,
  cheap survey pass over every block;
- field names are resolved per file from its first records, as the local reader does;
- duplicate ids are found across blocks by a shuffle: each block's ids go to buckets by a stable
  hash, each bucket finds the later occurrences, and only those (usually none) reach the client;
- each block is scored on a worker and folded into exact partial sums (see
  :mod:`ctxeval.results.aggregation`), merged on the client in any order; per-query rows go to one
  Parquet part per block, written atomically under a name fixed by the block, so a task that Dask
  re-runs after a lost worker overwrites its own part and its partial sums count once.

Nothing per-query crosses to the client except the bad records (with on_error="skip").
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import warnings
import zlib
from collections import deque
from collections.abc import Mapping, Sequence, Sized
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, cast

from ctxeval.foundation.errors import (
    CtxevalError,
    CtxevalWarning,
    Fix,
    InvalidArgumentError,
    InvalidRecordError,
)
from ctxeval.foundation.optional import require
from ctxeval.foundation.progress import Progress
from ctxeval.io.fields import ResolvedFields, as_field_map
from ctxeval.io.seen_ids import SeenIds
from ctxeval.io.sources import locate
from ctxeval.parallel.blocks import (
    Block,
    block_extent,
    expand_paths,
    file_fields,
    file_size,
    format_of,
    place_blocks,
    plan_blocks,
    read_block,
)
from ctxeval.parallel.job import Job
from ctxeval.parallel.workers import (
    HashedClaims,
    LocalFuture,
    LocalPool,
    check_claims,
    score_block,
    score_partition,
)
from ctxeval.records.model import RecordError
from ctxeval.results import EvaluationResult, encoded_table, iter_parts
from ctxeval.results.aggregation import Aggregator, AggregatorState
from ctxeval.results.parts import parts_store, write_part
from ctxeval.scoring.driver import ScoringPlan

__all__ = [
    "dataset_bytes",
    "evaluate_distributed",
    "evaluate_in_processes",
    "iter_parts",
    "partitionable",
    "plan_blocks",
    "record_total",
]


def _dask() -> Any:
    return require(
        "dask.distributed",
        purpose="running on a Dask cluster",
        extra="dask",
        package="dask.distributed",
    )


# --- tasks (run on the workers) --------------------------------------------------------------


@dataclass(frozen=True)
class Survey:
    """What the first pass learns of a block: how many positions (lines, rows) and records it
    has, and the ids it claims, bucketed for the duplicate search."""

    positions: int
    records: int
    buckets: list[list[tuple[int, str, bool, str | None]]]


def _survey(block: Block, resolved: ResolvedFields | None, fields: Any, buckets: int) -> Survey:
    claims: list[tuple[int, str, bool]] = []
    local = replace(block, first_pos=1) if block.format in ("jsonl", "parquet") else block
    records = sum(1 for _ in read_block(local, resolved, fields=fields, claims=claims))
    if block.format == "jsonl":
        from ctxeval.io.sources import open_binary
        from ctxeval.parallel.blocks import owned_lines

        with open_binary(block.target) as handle:
            positions = sum(1 for _ in owned_lines(handle, block.start, block.end))
    else:
        positions = records
    out: list[list[tuple[int, str, bool, str | None]]] = [[] for _ in range(buckets)]
    for pos, record_id, is_record in claims:
        where = f"row {block.target.index[pos]}" if block.format == "frame" else None
        out[zlib.crc32(record_id.encode("utf-8")) % buckets].append(
            (pos, record_id, is_record, where)
        )
    return Survey(positions, records, out)


def _bucket_of(survey: Survey, bucket: int) -> list[tuple[int, str, bool, str | None]]:
    return survey.buckets[bucket]


def _locate(block: Block, pos: int) -> str:
    return locate(block.name, block.format, pos)


def _global_pos(block: Block, pos: int) -> int:
    return block.first_pos + pos - 1 if block.format in ("jsonl", "parquet") else pos


def _duplicates(
    blocks: Sequence[Block], *claims_by_block: list[tuple[int, str, bool, str | None]]
) -> dict[int, dict[int, str]]:
    """Later occurrences of ids in one bucket: ``{block: {position: first location}}``."""
    first_seen: dict[str, str] = {}
    found: dict[int, dict[int, str]] = {}
    for number, (block, claims) in enumerate(zip(blocks, claims_by_block, strict=True)):
        for pos, record_id, is_record, where in claims:
            position = _global_pos(block, pos)
            location = where or _locate(block, position)
            first = first_seen.setdefault(record_id, location)
            if is_record and first != location:
                found.setdefault(number, {})[position] = first
    return found


def _score(
    block: Block,
    resolved: ResolvedFields | None,
    fields: Any,
    plan: ScoringPlan,
    source: str,
    first_index: int,
    duplicates: dict[int, str],
    part: str | None,
    batch_size: int,
    return_rows: bool = False,
    stop_at_error: bool = False,
) -> AggregatorState:
    """Read, check and score one block: its sums, and its rows when ``return_rows`` (a local
    run keeps them; a cluster run writes them to ``part`` instead)."""
    keep_rows = part is not None or return_rows
    aggregator, complete = score_block(
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
        claims=[],
    )
    if complete:  # else the run stops at the block's first bad record
        if part is not None:
            _write_part(part, aggregator.rows)
        aggregator.keep_rows = return_rows
    return aggregator.state()


def _write_part(path: str, rows: Sequence[dict[str, Any]]) -> None:
    write_part(path, encoded_table(rows))


# --- the driver ------------------------------------------------------------------------------


def _client(scheduler: Any) -> tuple[Any, Any]:
    distributed = _dask()
    if isinstance(scheduler, distributed.Client):
        return scheduler, None
    if scheduler == "local":
        script = unguarded_script()
        if script is None:
            cluster = distributed.LocalCluster(
                processes=True, threads_per_worker=1, dashboard_address=":0"
            )
        else:
            path, line = script
            warnings.warn_explicit(
                CtxevalWarning(
                    "scheduler='local' runs its Dask workers as threads of this process: "
                    "worker processes would run this script again from the top; put the "
                    'evaluation under `if __name__ == "__main__":` to have processes'
                ),
                CtxevalWarning,
                path,
                line,
            )
            cluster = distributed.LocalCluster(processes=False, n_workers=1, dashboard_address=":0")
        client = distributed.Client(cluster)
        return client, cluster
    if isinstance(scheduler, str):
        _check_address(scheduler)
        return distributed.Client(scheduler), None
    raise InvalidArgumentError(
        f"scheduler={scheduler!r}: give a dask.distributed.Client, a scheduler address such as "
        "'tcp://host:8786', or 'local'"
    )


def _check_address(scheduler: str) -> None:
    """A TCP or TLS scheduler address must have a host and a port. Checked before a Client is
    made: a Client that fails on its address stays half made, and closing it when it is
    collected can deadlock the next cluster this process starts."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except ValueError as exc:  # "missing port number in address 'bogus'"
        given = f"scheduler={scheduler!r}"
        raise InvalidArgumentError(
            f"{given}: {exc}; give a scheduler address such as 'tcp://host:8786', or 'local' "
            "for a cluster on this machine",
            fixes=(Fix("scheduler", scheduler, given),),
        ) from None


def unguarded_script() -> tuple[str, int] | None:
    """The script and line whose top-level code, outside ``if __name__ == "__main__":``, is
    making this call; None when there is no such script (a guarded call, ``python -c``, a
    notebook) or no way to tell.

    Dask starts local worker processes by spawning, which imports the script again: an
    unguarded call would start a cluster inside every worker, which fails.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not isinstance(path, str) or not os.path.isfile(path):
        return None
    line = None
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    if line is None:
        return None
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test):
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.lineno
            if first <= line <= last:
                return None
    return path, line


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
    ):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


def evaluate_distributed(
    job: Job,
    plan: ScoringPlan,
    *,
    scheduler: Any,
    block_bytes: int = 64 << 20,
    block_records: int = 20_000,
    buckets: int = 16,
    retries: int = 3,
    progress: Progress | None = None,
) -> EvaluationResult:
    """Evaluate the job's dataset on a Dask cluster; see the module docstring. ``progress``
    counts the records of each block as its result comes in."""
    client, cluster = _client(scheduler)
    try:
        groups = _groups(job, block_bytes, block_records)
        return _evaluate(client, job, plan, groups, (buckets, retries), progress)
    finally:
        if cluster is not None:
            client.close()
            cluster.close()


def evaluate_in_processes(
    job: Job,
    plan: ScoringPlan,
    *,
    workers: int,
    aggregator: Aggregator,
    progress: Any,
    block_bytes: int | None = None,
    block_records: int | None = None,
) -> EvaluationResult:
    """A local run on ``workers`` processes that read, check and score their own partitions
    of the files (the blocks a cluster run uses: byte ranges of JSONL, row groups of Parquet),
    while this process only merges their sums and rows in input order. ``aggregator`` keeps or
    streams the rows as the caller asked; the result equals a run in this process."""
    # By default blocks small enough that every worker gets several (they finish together).
    if block_bytes is None:
        size = dataset_bytes(job.dataset)
        block_bytes = max(64 << 10, min(64 << 20, size // (4 * workers) + 1))
    if block_records is None:
        block_records = max(1_000, 20_000 // workers)
    groups = _groups(job, block_bytes, block_records)
    with LocalPool(plan, workers, job.batch_size) as pool:
        return _evaluate_local(pool, job, plan, groups, aggregator, progress)


def dataset_bytes(dataset: str | os.PathLike[str]) -> int:
    """The size of the files of a path or glob."""
    return sum(file_size(path) for path in expand_paths(os.fspath(dataset)))


def partitionable(dataset: Any, format: str | None) -> bool:
    """Whether worker processes can read ``dataset`` by partitions: paths (or a glob) of JSONL
    and Parquet files only."""
    if not isinstance(dataset, str | os.PathLike) or os.fspath(dataset) == "-":
        return False
    try:
        paths = expand_paths(os.fspath(dataset))
        return bool(paths) and all(
            format_of(path, format) in ("jsonl", "parquet") for path in paths
        )
    except CtxevalError:
        return False


def record_total(dataset: Any, format: str | None = None) -> int | None:
    """How many records ``dataset`` holds, where that is cheap to know without reading them
    (for a progress bar's total): the length of in-memory data; the lines that are not blank
    of local JSONL files and the rows of Parquet files (:func:`block_extent`: no JSON parsed).
    None for the others (CSV, JSON, stdin, an iterator, remote files)."""
    if isinstance(dataset, str | os.PathLike):
        if "://" in os.fspath(dataset) or not partitionable(dataset, format):
            return None
        try:
            groups = plan_blocks(dataset, format=format, block_bytes=1 << 62, block_records=1 << 62)
            return sum(block_extent(block)[1] for group in groups for block in group)
        except (CtxevalError, OSError):
            return None
    if isinstance(dataset, Sized) and not isinstance(dataset, str | bytes | Mapping):
        return len(dataset)
    return None


def _evaluate(
    client: Any,
    job: Job,
    plan: ScoringPlan,
    groups: list[list[Block]],
    tries: tuple[int, int],
    progress: Progress | None,
) -> EvaluationResult:
    buckets, retries = tries
    submit = client.submit
    blocks, block_fields, fields_for = _settle_fields(client, groups, job.fields, retries)

    # Survey: positions and records per block, and the ids they claim.
    surveys = [
        submit(_survey, b, f, fm, buckets, pure=False, retries=retries)
        for b, f, fm in zip(blocks, block_fields, fields_for, strict=True)
    ]
    counts = client.gather([submit(_counts, s, pure=False) for s in surveys])
    first_index, positioned = place_blocks(blocks, counts)

    found = _duplicates_across(client, positioned, surveys, tries)

    # Score every block; rows to one Parquet part per block.
    store = None if job.output is None else parts_store(job.output)
    if store is not None:
        store.prepare()
    aggregator = Aggregator(plan, job.source, keep_rows=False, fields=job.fields)
    futures = [
        submit(
            _score,
            block,
            block_fields[n],
            fields_for[n],
            plan,
            job.source,
            first_index[n],
            found.get(n, {}),
            None if store is None else store.part(n),
            job.batch_size,
            False,
            job.on_error == "raise",
            pure=False,
            retries=retries,
        )
        for n, block in enumerate(positioned)
    ]
    # In input order, so that the first bad record stops the run as soon as its block is in.
    for number, future in enumerate(futures):
        aggregator.merge(future.result())
        if progress is not None:
            progress.update(counts[number][1])
        if aggregator.skipped and job.on_error == "raise":
            if store is not None:  # no part may be written after the output is removed
                _settle(futures[number + 1 :])
                store.remove()
            raise _first_bad(aggregator)
    aggregator.skipped.sort(key=lambda s: s["index"])
    result = aggregator.result()
    if store is not None:
        header = {
            "ctxeval_result": 1,
            "aggregate": result.aggregate,
            "summary": result.summary,
            "skipped": result.skipped,
            "parts": [f"part-{n:05d}.parquet" for n in range(len(positioned))],
        }
        store.write_header(header)
    return result


def _duplicates_across(
    client: Any, positioned: list[Block], surveys: list[Any], tries: tuple[int, int]
) -> dict[int, dict[int, str]]:
    """Duplicate ids across blocks, found bucket by bucket on the workers: ``{block number:
    {position: where the id was first claimed}}``."""
    buckets, retries = tries
    submit = client.submit
    found: dict[int, dict[int, str]] = {}
    duplicate_futures = [
        submit(
            _duplicates,
            positioned,
            *[submit(_bucket_of, s, b, pure=False) for s in surveys],
            pure=False,
            retries=retries,
        )
        for b in range(buckets)
    ]
    for part in client.gather(duplicate_futures):
        for number, positions in part.items():
            found.setdefault(number, {}).update(positions)
    return found


def _evaluate_local(
    pool: LocalPool,
    job: Job,
    plan: ScoringPlan,
    groups: list[list[Block]],
    aggregator: Aggregator,
    progress: Any,
) -> EvaluationResult:
    """:func:`evaluate_in_processes`'s run: each block is read once, by a worker that scores it.

    Where each block starts comes from a cheap pass over its raw lines (:func:`~ctxeval.
    parallel.blocks.block_extent`), so the workers score with the run's line numbers and indices.
    They score as if no id were a duplicate and send the ids they claimed back, hashed; this
    process checks them in input order, and scores again the rare block that holds one.
    """
    blocks, block_fields, fields_for = _settle_fields(pool, groups, job.fields, 0)
    counts = pool.gather([pool.submit(block_extent, block) for block in blocks])
    first_index, positioned = place_blocks(blocks, counts)

    return_rows = aggregator.keep_rows or aggregator.row_sink is not None
    stop_at_error = job.on_error == "raise"

    def submit(n: int, duplicates: dict[int, str]) -> LocalFuture:
        return pool.submit(
            score_partition,
            positioned[n],
            block_fields[n],
            fields_for[n],
            plan,
            aggregator.source,
            first_index[n],
            duplicates,
            job.batch_size,
            return_rows,
            stop_at_error,
            max(files) + 1,
        )

    # Each block's final state, or its second scoring's future; None once merged (kept no more)
    final: list[AggregatorState | LocalFuture | None] = []
    merged = 0

    def merge(wait: bool) -> None:
        """Merge the blocks whose final state is in, in input order (rows are kept and
        streamed in order; the first bad record stops the run as soon as its block is in)."""
        nonlocal merged
        while merged < len(final):
            state = cast("AggregatorState | LocalFuture", final[merged])  # None once merged
            if isinstance(state, LocalFuture):
                if not wait and not state.done():
                    return
                state = _block_result(positioned[merged], counts[merged][0], state)[0]
            final[merged] = None
            aggregator.merge(state)
            if progress is not None:
                progress.update(state.values["_queries"] + len(state.values["skipped"]))
            if aggregator.skipped and stop_at_error:
                raise _first_bad(aggregator)
            merged += 1

    files = {block.number: (block.name, block.format) for block in blocks}
    # At most two blocks a worker scored ahead of the merge, so memory stays bounded.
    ahead = 2 * pool.workers
    pending = deque(submit(n, {}) for n in range(min(ahead, len(positioned))))
    seen: SeenIds | None = None  # sized for every record when the first ids come
    # The ids in input order; a block with a duplicate is scored again while the next are checked
    for n in range(len(positioned)):
        future = pending.popleft()
        if n + ahead < len(positioned):
            pending.append(submit(n + ahead, {}))
        state, claims = _block_result(positioned[n], counts[n][0], future)
        if seen is None and claims:
            seen = SeenIds(capacity=sum(records for _, records in counts))
        duplicates = check_claims(seen, claims, files) if seen is not None else {}
        final.append(submit(n, duplicates) if duplicates else state)
        merge(wait=False)
    merge(wait=True)
    aggregator.skipped.sort(key=lambda s: s["index"])
    return aggregator.result()


def _block_result(
    block: Block, records: int, future: LocalFuture
) -> tuple[AggregatorState, HashedClaims]:
    """A block's scoring, or the error that names its ``records`` when its worker died."""
    first, last = block.first_pos, block.first_pos + max(records, 1) - 1
    done: tuple[AggregatorState, HashedClaims] = future.result(
        f"the records from {_locate(block, first)} to {_locate(block, last)}"
    )
    return done


def _groups(job: Job, block_bytes: int, block_records: int) -> list[list[Block]]:
    """The job's dataset cut into blocks, by file (files without a byte left out)."""
    groups = plan_blocks(
        job.dataset, format=job.format, block_bytes=block_bytes, block_records=block_records
    )
    return [g for g in groups if g]


def _settle_fields(
    client: Any, groups: list[list[Block]], fields: Any, retries: int
) -> tuple[list[Block], list[ResolvedFields | None], list[Any]]:
    """The blocks, the fields resolved for each block's file, and the field map to read it
    with: from the first file's first records, then every other file in the same mode."""
    field_map = as_field_map(fields)
    if not groups:  # no file holds a byte
        return [], [], []
    first = client.submit(
        file_fields, _whole_file(groups[0]), field_map, pure=False, retries=retries
    ).result()
    settled = field_map if first is None else replace(field_map, mode=first.mode)
    others = [
        client.submit(file_fields, _whole_file(group), settled, pure=False, retries=retries)
        for group in groups[1:]
    ]
    resolved = [first, *(future.result() for future in others)]
    blocks = [block for group in groups for block in group]
    block_fields = [resolved[n] for n, group in enumerate(groups) for _ in group]
    return blocks, block_fields, [settled for _ in blocks]


def _first_bad(aggregator: Aggregator) -> InvalidRecordError:
    bad = min(aggregator.skipped, key=lambda s: s["index"])
    error = RecordError(bad["index"], bad["id"], bad["location"], bad["field"], bad["message"])
    fixes = [Fix(**fix) for fix in bad.get("fixes", ())]
    return InvalidRecordError(
        f"{error}. Fix the record, or pass on_error='skip' to skip bad records and count them "
        "in the results",
        fixes=(*fixes, Fix("on_error", "skip")),
    )


def _settle(futures: list[Any]) -> None:
    """Wait for the remaining tasks to end (not cancelled: a cancelled Dask task that is already
    running still finishes, and would write its part after the output is removed)."""
    for future in futures:
        with suppress(Exception):  # failed: the run is stopping anyway
            future.result()


def _counts(survey: Survey) -> tuple[int, int]:
    return survey.positions, survey.records


def _whole_file(group: list[Block]) -> Block:
    first = group[0]
    if first.format == "jsonl":
        return replace(first, start=0, end=group[-1].end, first_pos=1)
    if first.format == "parquet":
        return replace(first, start=0, end=group[-1].end, first_pos=1)
    # In-memory data: its first block holds the first records, which is what resolution reads.
    return first
