"""Peak memory of RetrievalEvaluator on a JSONL file, as the file grows.

Run from the repository root:

    .venv/bin/python benchmarks/memory_stream.py                 # 80k, 160k, 320k records: ~2.5 min
    .venv/bin/python benchmarks/memory_stream.py --full          # 250k, 500k, 1M records: ~7 min
    .venv/bin/python benchmarks/memory_stream.py --full --k 1,3,5,10 --workers 1   # ~9 min

The data (benchmarks/_data.py ``write_small_jsonl``) are small text records, 5 chunks of 8-16
words and 1-2 ground-truth sentences, about 540 bytes a line, written to a temporary directory
(the largest file once; the smaller ones are its first lines). Each evaluation runs in a fresh
interpreter, in one of three modes:

- ``rows in memory`` (the default API):
  ``RetrievalEvaluator(path, metrics, workers=W, progress=False).run(k=K)``, which keeps one
  per-query row per record in ``result.per_query``;
- ``rows streamed to disk``: ``RetrievalEvaluator(path, metrics, workers=W, progress=False,
  keep_per_query=False).run(k=K, output=tmp.jsonl)``, which writes the rows to a file as it goes
  and keeps only the aggregates (skipped, with a note, when the installed ctxeval has no
  ``keep_per_query``);
- ``records read only``: ``for item in read_records(path): pass``, no scoring: what the reader
  itself keeps (its duplicate-id check) as the file grows, apart from scoring's caches;

with ``metrics = [PrecisionRecallF1(RougeChunkMatch()),
RankedRetrievalMetrics(RougeChunkMatch())]``. It reports
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the peak RSS of the process) and, with workers > 1,
``RUSAGE_CHILDREN`` (the largest peak of any one worker process), next to the RSS after the
imports, before the run, and the measured size of the rows kept in memory. The target is < 1 GB
(10^9 bytes) and flat as the file grows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import print_machine, write_small_jsonl

# Runs in a fresh interpreter. ru_maxrss is in KiB on Linux.
_MEASURE = """
import json, resource, sys, time
from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch

def peak_kib(who):
    return resource.getrusage(who).ru_maxrss

def current_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024

def deep_bytes(rows):
    # Bytes owned by the rows: a list of dicts (each dict, its keys and values, nested
    # metadata), or the column store (its arrays, lists and their values, found through the
    # attributes of its objects). An object shared by several rows (a column name reused by
    # every row) is counted once.
    seen = set()
    def size(obj):
        if id(obj) in seen or isinstance(obj, type):
            return 0
        seen.add(id(obj))
        n = sys.getsizeof(obj)
        if isinstance(obj, dict):
            n += sum(size(k) + size(v) for k, v in obj.items())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            n += sum(size(v) for v in obj)
        else:
            if hasattr(obj, "__dict__"):
                n += size(vars(obj))
            for name in getattr(type(obj), "__slots__", ()):
                if hasattr(obj, name):
                    n += size(getattr(obj, name))
        return n
    return size(rows)

before = current_kib()
strategy = RougeChunkMatch()
metrics = [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)]
mode = {mode!r}
stream = mode == "stream"
options = {{"keep_per_query": False}} if stream else {{}}
start = time.perf_counter()
if mode == "read":
    from ctxeval.io.readers import read_records
    rows, queries = [], 0
    for item in read_records({path!r}):
        queries += 1
else:
    evaluator = RetrievalEvaluator({path!r}, metrics, workers={workers}, progress=False, **options)
    result = evaluator.run(k={k!r}, **({{"output": {output!r}}} if stream else {{}}))
    rows, queries = result.per_query, result.summary["queries"]
elapsed = time.perf_counter() - start
peak, children = peak_kib(resource.RUSAGE_SELF), peak_kib(resource.RUSAGE_CHILDREN)
out = {{
    "before_kib": before,
    "peak_kib": peak,
    "children_peak_kib": children,
    "seconds": elapsed,
    "queries": queries,
    "rows": len(rows),
    "row_bytes": deep_bytes(rows),
    "columns": len(rows[0]) if rows else 0,
}}
print(json.dumps(out))
"""

MODES = {
    "memory": "rows in memory",
    "stream": "rows streamed to disk",
    "read": "records read only",
}


def can_stream() -> bool:
    import inspect

    from ctxeval import RetrievalEvaluator

    return "keep_per_query" in inspect.signature(RetrievalEvaluator).parameters


def measure(path: str, workers: int, k: object, mode: str, tmp: str) -> dict[str, float]:
    output = os.path.join(tmp, "result-rows.jsonl")
    code = _MEASURE.format(path=path, workers=workers, k=k, mode=mode, output=output)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
    finally:
        if os.path.exists(output):
            os.remove(output)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def head(src: str, dst: str, lines: int) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for i, line in enumerate(fin):
            if i == lines:
                break
            fout.write(line)


def mib(kib: float) -> str:
    return f"{kib / 1024:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="250k, 500k and 1,000,000 records")
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="comma-separated record counts (overrides --full)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="also run the largest file with this many workers (1: skip)",
    )
    parser.add_argument(
        "--k",
        type=lambda s: None if s == "none" else [int(x) for x in s.split(",")],
        default=None,
        help="cut-offs, e.g. 1,3,5 (default: none, the whole list)",
    )
    parser.add_argument(
        "--modes",
        choices=["all", "both", "memory", "stream", "read"],
        default="all",
        help="rows in memory (default API), rows streamed to disk, records read only (no "
        "scoring); both: the first two; all: the three",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="write the data files here and keep them")
    args = parser.parse_args()
    sizes = sorted(
        args.sizes or ([250_000, 500_000, 1_000_000] if args.full else [80_000, 160_000, 320_000])
    )
    modes = {
        "all": ["memory", "stream", "read"],
        "both": ["memory", "stream"],
        "memory": ["memory"],
        "stream": ["stream"],
        "read": ["read"],
    }[args.modes]
    notes = []
    if "stream" in modes and not can_stream():
        modes.remove("stream")
        notes.append("this ctxeval has no keep_per_query: the streamed mode was skipped")

    print_machine()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    tmp = tempfile.mkdtemp(prefix="ctxeval-mem-")
    data_dir = args.keep or tmp
    os.makedirs(data_dir, exist_ok=True)
    runs = []
    try:
        biggest = os.path.join(data_dir, f"records-{sizes[-1]}.jsonl")
        start = time.perf_counter()
        size = write_small_jsonl(biggest, sizes[-1], seed=args.seed)
        print(
            f"data: {sizes[-1]:,} records, {size / 2**20:,.0f} MiB "
            f"({size / sizes[-1]:.0f} bytes a record), written in "
            f"{time.perf_counter() - start:.1f} s; k={args.k}"
        )
        paths = {sizes[-1]: biggest}
        for n in sizes[:-1]:
            paths[n] = os.path.join(data_dir, f"records-{n}.jsonl")
            head(biggest, paths[n], n)
        file_mib = {n: os.path.getsize(path) / 2**20 for n, path in paths.items()}
        for mode in modes:
            for n in sizes:
                runs.append((mode, n, 1, measure(paths[n], 1, args.k, mode, tmp)))
            if args.workers > 1 and mode != "read":
                m = measure(biggest, args.workers, args.k, mode, tmp)
                runs.append((mode, sizes[-1], args.workers, m))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")

    print("### Peak RSS (MiB; a fresh interpreter per row)\n")
    print(
        "| mode | records | file MiB | workers | RSS after imports | peak RSS (parent) | "
        "peak RSS (largest worker) | parent + workers | rows kept, MiB | seconds | records/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, n, workers, m in runs:
        assert m["queries"] == n, (n, m)
        child = m["children_peak_kib"] if workers > 1 else 0
        total = m["peak_kib"] + workers * child
        print(
            f"| {MODES[mode]} | {n:,} | {file_mib[n]:,.0f} | "
            f"{workers} | {mib(m['before_kib'])} | {mib(m['peak_kib'])} | "
            f"{mib(child) if workers > 1 else '-'} | {mib(total)} | "
            f"{m['row_bytes'] / 2**20:,.0f} | {m['seconds']:.1f} | {n / m['seconds']:,.0f} |"
        )
    print(
        "\n'parent + workers' adds the largest worker's peak once per worker: an upper bound, "
        "since forked workers share their parent's pages.\n"
    )
    for mode in modes:
        single = [(n, m) for s, n, w, m in runs if s == mode and w == 1]
        everything = [
            m["peak_kib"] + (w * m["children_peak_kib"] if w > 1 else 0)
            for s, _, w, m in runs
            if s == mode
        ]
        peak = max(everything)
        verdict = "met" if peak * 1024 < 1e9 else "NOT met"
        line = (
            f"- {MODES[mode]}: target < 1 GB at {sizes[-1]:,} records: {verdict} (largest peak "
            f"{peak / 1024:,.0f} MiB = {peak * 1024 / 1e9:.2f} GB)"
        )
        if len(single) > 1:
            (n0, m0), (n1, m1) = single[0], single[-1]
            slope = (m1["peak_kib"] - m0["peak_kib"]) * 1024 / (n1 - n0)
            flat = "flat" if abs(slope) < 20 else "NOT flat: grows with the file"
            line += (
                f"; from {n0:,} to {n1:,} records the peak grows by {slope:,.0f} bytes per "
                f"record: {flat}"
            )
            if m1["rows"]:
                line += (
                    f" (the kept rows, {m1['columns']} columns each, measure "
                    f"{m1['row_bytes'] / m1['rows']:,.0f} bytes per record); projected at "
                    f"1,000,000 records: "
                    f"{(m0['peak_kib'] * 1024 + slope * (1_000_000 - n0)) / 1e9:.2f} GB"
                )
        print(line)
    for note in notes:
        print(f"- note: {note}")


if __name__ == "__main__":
    main()
