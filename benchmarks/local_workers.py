"""Local worker processes: ``workers=1`` against ``workers=2`` reading their own partitions
(issue 13), and against ``workers=2`` fed batches by the parent (the path small inputs take),
with the parent's CPU per record set against the workers'.

    .venv/bin/python benchmarks/local_workers.py [--records 6000] [--repeats 3]

The dataset: JSONL text records of 10 distinct ~120-word chunks and 1-3 ground-truth sentences
(CPU-bound scoring; :func:`benchmarks.dask_scaling.make_dataset`). Every run's aggregate and
per-query rows are checked equal to ``workers=1``'s. Each repeat runs the three modes one after
the other, so that a speed-up is a ratio of two runs close in time; the table gives every
repeat's range (min-max), then the ratio of the best walls, and the load average (1 min) before
each repeat, since on a shared machine other processes take cores. Parent CPU is this
process's user+system time during the run; worker CPU is the children's (``RUSAGE_CHILDREN``,
counted when the pool has shut down). CPU times are less disturbed by other processes than
wall times: ``CPU efficiency`` is ``workers=1``'s CPU per record over the workers' (1.0: a
worker does no work one process does not), and ``2 x efficiency`` the speed-up two otherwise
idle cores would give, before start-up and the last block's wait. The control before each
repeat: two pure-Python loops in two processes at once against one alone (2.0x when two cores
are free). The implied
speed-up on ``n`` cores, when the parent's serial work per record ``p`` and a worker's ``w``
are all there is: ``n / max(1, n * p / w)``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ctxeval.parallel.executors as executors_module
from _data import machine
from ctxeval import RetrievalEvaluator
from dask_scaling import make_dataset

MEASURES = ["precision@10", "recall@10", "ndcg@10", "average_precision", "reciprocal_rank"]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run(path: Path, workers: int, partitions: bool) -> tuple[float, float, float, object]:
    executors_module.PARTITION_MIN_BYTES = 0 if partitions else 1 << 62
    parent0, children0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = RetrievalEvaluator(str(path), MEASURES, workers=workers, progress=False).run()
    wall = time.perf_counter() - started
    parent = _cpu(resource.RUSAGE_SELF) - parent0
    children = _cpu(resource.RUSAGE_CHILDREN) - children0
    return wall, parent, children, result


def _burn(_: object = None) -> float:
    """Seconds of a pure-Python loop (the control: what two processes can get at the moment)."""
    started = time.perf_counter()
    total = 0
    for i in range(4_000_000):
        total += i
    return time.perf_counter() - started


def control() -> float:
    """Two burns at once in two processes against one alone: the throughput two processes get
    from this machine right now (2.0 on two idle cores; less when other processes take them)."""
    import multiprocessing

    alone = _burn()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        started = time.perf_counter()
        pool.map(_burn, [0, 1])
        together = time.perf_counter() - started
    return 2 * alone / together


def _range(values: list[float], form: str) -> str:
    low, high = min(values), max(values)
    return (
        format(low, form)
        if format(low, form) == format(high, form)
        else (f"{low:{form}}-{high:{form}}")
    )


MODES = (
    ("workers=1", 1, False),
    ("workers=2, parent reads and sends batches", 2, False),
    ("workers=2, workers read their partitions", 2, True),
)


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
        runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label, _, _ in MODES}
        loads = []
        reference = None
        controls = []
        for _ in range(args.repeats):
            loads.append(os.getloadavg()[0])
            controls.append(control())
            for label, workers, partitions in MODES:
                wall, parent, children, result = run(path, workers, partitions)
                runs[label].append((wall, parent, children))
                if reference is None:
                    reference = result
                else:
                    assert result.aggregate == reference.aggregate, label  # type: ignore[attr-defined]
                    assert list(result.per_query) == list(reference.per_query), label  # type: ignore[attr-defined]
        n = args.records
        base = runs["workers=1"]
        one_cpu = [parent / n for _, parent, _ in base]
        print(f"load average (1 min) before each repeat: {', '.join(f'{x:.2f}' for x in loads)}")
        print(
            "control, two pure-Python loops at once / one alone, before each repeat: "
            f"{', '.join(f'{x:.2f}x' for x in controls)}"
        )
        print()
        print(
            "| run | wall s | speed-up (wall) | parent CPU µs/record | workers' CPU µs/record "
            "| CPU efficiency | 2 x efficiency |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, _, _ in MODES:
            rows = runs[label]
            walls = [wall for wall, _, _ in rows]
            ratios = [b[0] / r[0] for b, r in zip(base, rows, strict=True)]
            parents = [parent / n * 1e6 for _, parent, _ in rows]
            children = [child / n * 1e6 for _, _, child in rows]
            if label == "workers=1":
                efficiency = "—"
                double = "—"
            else:
                eff = [c1 / (child / n) for c1, (_, _, child) in zip(one_cpu, rows, strict=True)]
                efficiency = _range(eff, ".3f")
                double = _range([2 * e for e in eff], ".2f") + "x"
            print(
                f"| {label} | {_range(walls, '.2f')} | {_range(ratios, '.2f')}x | "
                f"{_range(parents, '.0f')} | {_range(children, '.0f')} | {efficiency} | "
                f"{double} |"
            )
        print()
        labels = " | ".join(label for label, _, _ in MODES[1:])
        print(f"| repeat | load (1 min) | control | {labels} |")
        print("|---:|---:|---:|" + "---:|" * (len(MODES) - 1))
        for i, (load, ctl) in enumerate(zip(loads, controls, strict=True)):
            ratios = [f"{base[i][0] / runs[label][i][0]:.2f}x" for label, _, _ in MODES[1:]]
            print(f"| {i + 1} | {load:.2f} | {ctl:.2f}x | " + " | ".join(ratios) + " |")
        print()
        best_one = min(wall for wall, _, _ in base)
        for label, _, _ in MODES[1:]:
            best = min(wall for wall, _, _ in runs[label])
            print(f"best of {args.repeats} walls, {label}: {best_one / best:.2f}x workers=1's")
        rows = runs["workers=2, workers read their partitions"]
        shares = [parent / child for _, parent, child in rows]
        print()
        print(f"parent / worker CPU per record: {_range(shares, '.4f')} (target <= 1/16 = 0.0625)")
        for cores in (8, 16, 64):
            implied = [cores / max(1.0, cores * share) for share in shares]
            print(f"implied speed-up on {cores} cores: {_range(implied, '.1f')}x")
        print("checks: every run's aggregate and per-query rows equal workers=1's")


if __name__ == "__main__":
    main()
