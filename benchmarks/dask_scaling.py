"""Throughput of a distributed evaluation with 1 and 2 Dask workers, and the scaling ratio.

    .venv/bin/python benchmarks/dask_scaling.py [--records 20000] [--partition-mb 2]

Builds a JSONL dataset of realistic text records (10 retrieved chunks of ~120 words, 1-3
ground-truth sentences), evaluates it locally in one process (the reference), then on a
LocalCluster of 1 and of 2 worker processes (one thread each), checks that every aggregate is
identical to the local run, and prints records/s and the ratios.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch


def make_dataset(path: Path, records: int, seed: int = 11) -> None:
    from pydoc_data.topics import topics

    words = [w for text in topics.values() for w in text.split() if w.isalpha()]
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(10, 20))) + "."

    with path.open("w", encoding="utf-8") as out:
        for i in range(records):
            chunks = [" ".join(sentence() for _ in range(8)) for _ in range(10)]
            truth = [
                rng.choice(chunks).split(".")[0] + "." if rng.random() < 0.7 else sentence()
                for _ in range(rng.randint(1, 3))
            ]
            record = {"id": f"q{i}", "retrieved_context": chunks, "ground_truth_context": truth}
            out.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partition-mb", type=float, default=2.0)
    args = parser.parse_args()

    from dask.distributed import Client, LocalCluster

    metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        make_dataset(path, args.records)
        size_mb = path.stat().st_size / 2**20
        print(f"{args.records:,} records, {size_mb:.1f} MiB, partitions of {args.partition_mb} MiB")

        start = time.perf_counter()
        local = RetrievalEvaluator(path, metrics, workers=1, progress=False).run(k=[1, 5, 10])
        local_s = time.perf_counter() - start

        timings = {}
        for workers in (1, 2):
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                host="127.0.0.1",
            )
            client = Client(cluster)
            try:
                # Workers up, with ctxeval imported, before the clock starts.
                client.run(lambda: __import__("ctxeval.parallel.partitions"))
                start = time.perf_counter()
                result = RetrievalEvaluator(
                    path,
                    metrics,
                    scheduler=client,
                    partition_bytes=int(args.partition_mb * 2**20),
                ).run(k=[1, 5, 10], output=Path(tmp) / f"out-{workers}")
                timings[workers] = time.perf_counter() - start
            finally:
                client.close()
                cluster.close()
            if result.aggregate != local.aggregate or result.summary != local.summary:
                raise SystemExit(f"{workers} worker(s): results differ from the local run")

    print("identical aggregates and summaries to the local run: yes")
    print(f"{'run':<28}{'seconds':>10}{'records/s':>12}")
    rows = [("local, 1 process", local_s)] + [
        (f"dask, {w} worker(s)", t) for w, t in timings.items()
    ]
    for name, seconds in rows:
        print(f"{name:<28}{seconds:>10.2f}{args.records / seconds:>12,.0f}")
    print(f"scaling 1 -> 2 workers: {timings[1] / timings[2]:.2f}x")
    print(f"dask 1 worker vs local process: {local_s / timings[1]:.2f}x")


if __name__ == "__main__":
    main()
