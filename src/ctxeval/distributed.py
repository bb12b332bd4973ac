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
  :mod:`ctxeval.aggregation`), merged on the client in any order; per-query rows go to one Parquet
  part per block, written atomically under a name fixed by the block, so a task that Dask re-runs
  after a lost worker overwrites its own part and its partial sums count once.

Nothing per-query crosses to the client except the bad records (with on_error="skip").
"""

from __future__ import annotations

import ast
import glob as globlib
import inspect
import os
import sys
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from ctxeval.aggregation import Aggregator, AggregatorState
from ctxeval.errors import CtxevalWarning, InvalidArgumentError, InvalidRecordError
from ctxeval.io.blocks import Block, file_fields, read_block
from ctxeval.io.fields import ResolvedFields, as_field_map
from ctxeval.io.sources import EXTENSIONS, locate
from ctxeval.optional import require
from ctxeval.records import RecordError
from ctxeval.results import EvaluationResult, arrow_table, iter_parts
from ctxeval.results.parts import parts_store, write_part
from ctxeval.scoring import ScoringPlan, score_batch

__all__ = ["evaluate_distributed", "iter_parts", "plan_blocks"]


def _dask() -> Any:
    return require(
        "dask.distributed",
        purpose="running on a Dask cluster",
        extra="dask",
        package="dask.distributed",
    )


# --- planning --------------------------------------------------------------------------------


def _expand(path: str) -> list[str]:
    if "://" in path:
        fsspec = _fsspec()
        files = fsspec.open_files(path)
        return sorted(f.full_name if hasattr(f, "full_name") else f.path for f in files)
    if any(c in path for c in "*?[") and not os.path.exists(path):
        matches = sorted(globlib.glob(path, recursive=True))
        if not matches:
            raise InvalidArgumentError(f"{path}: no files match this pattern")
        return matches
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"{path}: no such file")
    return [path]


def _fsspec() -> Any:
    return require(
        "fsspec",
        purpose="reading remote files",
        hint="also install the filesystem's package (e.g. s3fs, gcsfs)",
    )


def _size(path: str) -> int:
    if "://" in path:
        fs, _, paths = _fsspec().core.get_fs_token_paths(path)
        return int(fs.size(paths[0]))
    return os.path.getsize(path)


def _format_of(path: str, fmt: str | None) -> str:
    if fmt is not None:
        return {"ndjson": "jsonl"}.get(fmt, fmt)
    suffix = Path(path.split("?")[0]).suffix.lower()
    if suffix not in EXTENSIONS:
        raise InvalidArgumentError(
            f"{path}: unsupported extension; use .jsonl, .json, .csv or .parquet, or format="
        )
    return EXTENSIONS[suffix]


def plan_blocks(
    dataset: Any,
    *,
    format: str | None = None,
    block_bytes: int = 64 << 20,
    block_records: int = 20_000,
) -> list[list[Block]]:
    """The dataset's blocks, grouped by file (one group for in-memory data)."""
    if isinstance(dataset, str | os.PathLike):
        groups = []
        for number, path in enumerate(_expand(os.fspath(dataset))):
            fmt = _format_of(path, format)
            if fmt == "jsonl":
                size = _size(path)
                starts = range(0, size, block_bytes)
                blocks = [
                    Block(path, fmt, number, path, s, min(s + block_bytes, size)) for s in starts
                ]
            elif fmt == "parquet":
                blocks = _parquet_blocks(path, number, block_records)
            else:
                blocks = [Block(path, fmt, number, path)]
            groups.append(blocks)
        return groups
    if type(dataset).__module__.startswith("pandas") and hasattr(dataset, "iloc"):
        rows = len(dataset)
        return [
            [
                Block("DataFrame", "frame", 0, dataset.iloc[a : a + block_records])
                for a in range(0, rows, block_records)
            ]
        ]
    iterator = iter(dataset)
    blocks = []
    position = 0
    while chunk := list(islice(iterator, block_records)):
        blocks.append(Block("records", "iterable", 0, chunk, first_pos=position))
        position += len(chunk)
    return [blocks]


def _parquet_blocks(path: str, number: int, block_records: int) -> list[Block]:
    from ctxeval.io.sources import open_binary

    pq = require("pyarrow.parquet", purpose=f"reading {path}", extra="parquet")

    with open_binary(path) as handle, pq.ParquetFile(handle) as file:
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
    blocks = []
    first_row, start, rows = 1, 0, 0
    for group, count in enumerate(sizes):
        rows += count
        if rows >= block_records or group == len(sizes) - 1:
            blocks.append(Block(path, "parquet", number, path, start, group + 1, first_row))
            first_row += rows
            start, rows = group + 1, 0
    return blocks


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
        from ctxeval.io.blocks import owned_lines
        from ctxeval.io.sources import open_binary

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
) -> AggregatorState:
    # The block's rows, stored by column until they are written (see PerQueryTable).
    aggregator = Aggregator(plan, source, keep_rows=part is not None)
    items = read_block(
        block, resolved, fields=fields, first_index=first_index, known_duplicates=duplicates
    )
    while batch := list(islice(items, batch_size)):
        for item in score_batch(plan, batch):
            aggregator.add(item)
    if part is not None:
        _write_part(part, aggregator.rows)
    return aggregator.state()


def _write_part(path: str, rows: Sequence[dict[str, Any]]) -> None:
    write_part(path, arrow_table(rows))


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
        return distributed.Client(scheduler), None
    raise InvalidArgumentError(
        f"scheduler={scheduler!r}: give a dask.distributed.Client, a scheduler address such as "
        "'tcp://host:8786', or 'local'"
    )


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
    dataset: Any,
    plan: ScoringPlan,
    *,
    scheduler: Any,
    fields: Any = None,
    format: str | None = None,
    on_error: str = "raise",
    output: str | os.PathLike[str] | None = None,
    source: str,
    batch_size: int = 256,
    block_bytes: int = 64 << 20,
    block_records: int = 20_000,
    buckets: int = 16,
    retries: int = 3,
) -> EvaluationResult:
    """Evaluate ``dataset`` on a Dask cluster; see the module docstring."""
    client, cluster = _client(scheduler)
    try:
        return _evaluate(
            client,
            dataset,
            plan,
            fields=fields,
            format=format,
            on_error=on_error,
            output=output,
            source=source,
            batch_size=batch_size,
            block_bytes=block_bytes,
            block_records=block_records,
            buckets=buckets,
            retries=retries,
        )
    finally:
        if cluster is not None:
            client.close()
            cluster.close()


def _evaluate(client: Any, dataset: Any, plan: ScoringPlan, **o: Any) -> EvaluationResult:
    field_map = as_field_map(o["fields"])
    groups = plan_blocks(
        dataset, format=o["format"], block_bytes=o["block_bytes"], block_records=o["block_records"]
    )
    groups = [g for g in groups if g]
    submit = client.submit
    retries = o["retries"]

    # Fields: from the first file's first records, then every other file in the same mode.
    resolved: list[ResolvedFields | None] = []
    for number, group in enumerate(groups):
        whole = _whole_file(group)
        field_input: Any = (
            field_map
            if number == 0 or not resolved or resolved[0] is None
            else (replace(field_map, mode=resolved[0].mode))
        )
        resolved.append(
            submit(file_fields, whole, field_input, pure=False, retries=retries).result()
        )
    blocks = [block for group in groups for block in group]
    block_fields = [resolved[n] for n, group in enumerate(groups) for _ in group]
    fields_for = [
        field_map if resolved[0] is None else replace(field_map, mode=resolved[0].mode)
        for _ in blocks
    ]

    # Survey: positions and records per block, and the ids they claim.
    surveys = [
        submit(_survey, b, f, fm, o["buckets"], pure=False, retries=retries)
        for b, f, fm in zip(blocks, block_fields, fields_for, strict=True)
    ]
    counts = client.gather([submit(_counts, s, pure=False) for s in surveys])
    first_index, index = [], 0
    positioned: list[Block] = []
    next_pos: dict[int, int] = {}
    for block, (positions, records) in zip(blocks, counts, strict=True):
        first_index.append(index)
        index += records
        if block.format == "jsonl":
            start = next_pos.get(block.number, 1)
            positioned.append(replace(block, first_pos=start))
            next_pos[block.number] = start + positions
        else:
            positioned.append(block)

    # Duplicate ids across blocks, bucket by bucket on the workers.
    found: dict[int, dict[int, str]] = {}
    duplicate_futures = [
        submit(
            _duplicates,
            positioned,
            *[submit(_bucket_of, s, b, pure=False) for s in surveys],
            pure=False,
            retries=retries,
        )
        for b in range(o["buckets"])
    ]
    for part in client.gather(duplicate_futures):
        for number, positions in part.items():
            found.setdefault(number, {}).update(positions)

    # Score every block; rows to one Parquet part per block.
    output = o["output"]
    store = None if output is None else parts_store(output)
    if store is not None:
        store.prepare()
    futures = [
        submit(
            _score,
            block,
            block_fields[n],
            fields_for[n],
            plan,
            o["source"],
            first_index[n],
            found.get(n, {}),
            None if store is None else store.part(n),
            o["batch_size"],
            pure=False,
            retries=retries,
        )
        for n, block in enumerate(positioned)
    ]
    aggregator = Aggregator(plan, o["source"], keep_rows=False, fields=o["fields"])
    for state in client.gather(futures):
        aggregator.merge(state)
    if aggregator.skipped and o["on_error"] == "raise":
        if store is not None:
            store.remove()
        first = min(aggregator.skipped, key=lambda s: s["index"])
        error = RecordError(
            first["index"], first["id"], first["location"], first["field"], first["message"]
        )
        raise InvalidRecordError(
            f"{error}. Fix the record, or pass on_error='skip' to skip bad records and count "
            "them in the results"
        )
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
