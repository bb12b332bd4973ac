"""Local worker processes: ``workers=1`` against ``workers=2`` reading their own partitions
(issue 13), and against ``workers=2`` fed batches by the parent (the path small inputs take),
with the parent's CPU per record set against the workers'.

    .venv/bin/python benchmarks/local_workers.py [--records 6000] [--repeats 3]

The dataset: JSONL text records of 10 distinct ~120-word chunks and 1-3 ground-truth sentences
(CPU-bound scoring; :func:`benchmarks.dask_scaling.make_dataset`). Every run's aggregate and
per-query rows are checked equal to ``workers=1``'s. Parent CPU is this process's user+system
time during the run; worker CPU is the children's (``RUSAGE_CHILDREN``, counted when the pool
has shut down). The implied speed-up on ``n`` cores, when the parent's serial work per record
``p`` and a worker's ``w`` are all there is: ``n / max(1, n * p / w)``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ctxeval.evaluator as evaluator_module
from _data import machine
from ctxeval import RetrievalEvaluator
from dask_scaling import make_dataset

MEASURES = ["precision@10", "recall@10", "ndcg@10", "average_precision", "reciprocal_rank"]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run(path: Path, workers: int, partitions: bool) -> tuple[float, float, float, object]:
    evaluator_module.PARTITION_MIN_BYTES = 0 if partitions else 1 << 62
    parent0, children0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = RetrievalEvaluator(str(path), MEASURES, workers=workers, progress=False).run()
    wall = time.perf_counter() - started
    parent = _cpu(resource.RUSAGE_SELF) - parent0
    children = _cpu(resource.RUSAGE_CHILDREN) - children0
    return wall, parent, children, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    info = machine()
    print(f"machine: {info}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        make_dataset(path, args.records)
        size = path.stat().st_size
        print(f"dataset: {args.records} records, {size / 2**20:.1f} MiB")
        rows = {}
        reference = None
        for label, workers, partitions in (
            ("workers=1", 1, False),
            ("workers=2, parent reads and sends batches", 2, False),
            ("workers=2, workers read their partitions", 2, True),
        ):
            best = None
            for _ in range(args.repeats):
                wall, parent, children, result = run(path, workers, partitions)
                if best is None or wall < best[0]:
                    best = (wall, parent, children)
                if reference is None:
                    reference = result
                else:
                    assert result.aggregate == reference.aggregate, label  # type: ignore[attr-defined]
                    assert list(result.per_query) == list(reference.per_query), label  # type: ignore[attr-defined]
            rows[label] = best
        base = rows["workers=1"][0]
        n = args.records
        print()
        print("| run | wall s | speed-up | parent CPU µs/record | workers' CPU µs/record |")
        print("|---|---:|---:|---:|---:|")
        for label, (wall, parent, children) in rows.items():
            print(
                f"| {label} | {wall:.2f} | {base / wall:.2f}x | {parent / n * 1e6:.0f} | "
                f"{children / n * 1e6:.0f} |"
            )
        _, parent, children = rows["workers=2, workers read their partitions"]
        p, w = parent / n, children / n
        print()
        print(f"parent / worker CPU per record: {p / w:.4f} (target <= 1/16 = 0.0625)")
        for cores in (8, 16, 64):
            print(f"implied speed-up on {cores} cores: {cores / max(1.0, cores * p / w):.1f}x")
        print("checks: every run's aggregate and per-query rows equal workers=1's")


if __name__ == "__main__":
    main()
