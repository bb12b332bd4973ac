"""The text and ID paths of several ctxeval sources, side by side: CPU time per record.

Run from the repository root; each SOURCE is a directory holding a ctxeval checkout (its
``src/``), for instance a ``git worktree`` at an older commit:

    git worktree add /tmp/ctxeval-old be5da2a
    .venv/bin/python benchmarks/text_sources.py /tmp/ctxeval-old .          # both datasets
    .venv/bin/python benchmarks/text_sources.py --rounds 3 --records 5000 /tmp/ctxeval-old .

Each source runs in its own process (``PYTHONPATH=SOURCE/src``), the sources alternated for
``--rounds`` rounds so that a change of load hits them alike. A process times, best of
``--repeats``, with ``time.process_time`` (CPU, not wall: it moves less with other work on the
machine): ``RetrievalEvaluator(records, [PrecisionRecallF1(RougeChunkMatch()),
RankedRetrievalMetrics(RougeChunkMatch())], workers=1).run(k=None)`` over freshly parsed
records (the benchmark datasets of ``_data.py``; token caches emptied before each repeat), and
prints one line per dataset. ``--data id`` times the ID path instead: ``RetrievalEvaluator(records,
[IDPrecisionRecallF1(), IDRankedRetrievalMetrics()], workers=1).run(k=[1, 3, 5, 10, None])`` over
records of ranked ids with graded qrels (``_data.id_run``, 100 ids a query). Ratios against the
first source are printed at the end.

``--stage read`` times reading only, ``list(read_records(records))`` (the same parsed dicts), and
``--stage read-jsonl`` reading the same records from a JSONL file (written once per process):

    .venv/bin/python benchmarks/text_sources.py --stage read --rounds 3 /tmp/ctxeval-old .

``--compiled never,always`` runs each source once per value of ``CTXEVAL_COMPILED`` (the
compiled ROUGE-L kernel off, then on from the first record), alternated like the sources:

    .venv/bin/python benchmarks/text_sources.py --compiled never,always .
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(data: str, records: int, repeats: int, stage: str = "run") -> float:
    """Best CPU seconds of ``repeats`` evaluations (or readings: ``stage``) of ``records``
    records (in this process)."""
    sys.path.insert(0, str(HERE))
    from _data import corpus_records, text_records
    from ctxeval import (
        PrecisionRecallF1,
        RankedRetrievalMetrics,
        RetrievalEvaluator,
        RougeChunkMatch,
    )

    if data == "id":
        return _measure_ids(records, repeats, stage)
    made = corpus_records if data == "corpus" else text_records
    lines = [json.dumps(r) for r in made(records, seed=0)]
    if stage != "run":
        return _measure_reading(lines, repeats, stage)
    best = float("inf")
    for _ in range(repeats):
        fresh = [json.loads(line) for line in lines]
        _empty_caches()
        gc.collect()
        start = time.process_time()
        RetrievalEvaluator(
            fresh,
            [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())],
            workers=1,
            progress=False,
        ).run(k=None)
        best = min(best, time.process_time() - start)
    return best


def _measure_reading(lines: list[str], repeats: int, stage: str) -> float:
    """Best CPU seconds of ``repeats`` readings of the records: the parsed dicts (``read``) or
    a JSONL file of them (``read-jsonl``)."""
    import tempfile

    from ctxeval.io.readers import read_records

    best = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "records.jsonl")
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        for _ in range(repeats):
            source: object = path if stage == "read-jsonl" else [json.loads(x) for x in lines]
            gc.collect()
            start = time.process_time()
            list(read_records(source))
            best = min(best, time.process_time() - start)
    return best


def _measure_ids(records: int, repeats: int, stage: str = "run") -> float:
    """Best CPU seconds of ``repeats`` ID-mode evaluations (or readings) of ``records``
    records."""
    from _data import id_run
    from ctxeval import IDPrecisionRecallF1, IDRankedRetrievalMetrics, RetrievalEvaluator

    run, qrels = id_run(records, 100, seed=0)
    lines = [
        json.dumps(
            {
                "id": qid,
                "retrieved_ids": sorted(docs, key=docs.__getitem__, reverse=True),
                "qrels": qrels[qid],
            }
        )
        for qid, docs in run.items()
        if qid in qrels
    ]
    if stage != "run":
        return _measure_reading(lines, repeats, stage)
    best = float("inf")
    for _ in range(repeats):
        fresh = [json.loads(line) for line in lines]
        gc.collect()
        start = time.process_time()
        RetrievalEvaluator(
            fresh,
            [IDPrecisionRecallF1(), IDRankedRetrievalMetrics()],
            workers=1,
            progress=False,
        ).run(k=[1, 3, 5, 10, None])
        best = min(best, time.process_time() - start)
    return best


def _empty_caches() -> None:
    """Every per-thread cache a source has (the token cache; the word counts' memo)."""
    for name in (
        "ctxeval.matching.base",  # before issue 22
        "ctxeval.budgets",
        "ctxeval.matching.tokens",
        "ctxeval.text.sizes",
    ):
        module = sys.modules.get(name)
        local = getattr(module, "_local", None)
        if local is not None:
            local.__dict__.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", help="ctxeval checkouts (directories with src/)")
    parser.add_argument("--data", choices=("corpus", "distinct", "both", "id"), default="both")
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--compiled",
        default="",
        help="values of CTXEVAL_COMPILED to run each source with, comma-separated",
    )
    parser.add_argument("--stage", choices=("run", "read", "read-jsonl"), default="run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(measure(args.child, args.records, args.repeats, args.stage))
        return
    if not args.sources:
        parser.error("give at least one source: a ctxeval checkout (a directory with src/)")
    datasets = ("corpus", "distinct") if args.data == "both" else (args.data,)
    modes = [m.strip() for m in args.compiled.split(",") if m.strip()] or [None]
    sources = [(Path(s).resolve(), mode) for s in args.sources for mode in modes]
    times: dict[tuple[Path, str | None, str], list[float]] = {}
    print("| round | dataset | source | commit | CPU s | µs/record |")
    print("|---:|---|---|---|---:|---:|")
    for round_ in range(1, args.rounds + 1):
        for data in datasets:
            for source, mode in sources:
                env = {**os.environ, "PYTHONPATH": str(source / "src")}
                if mode is not None:
                    env["CTXEVAL_COMPILED"] = mode
                command = [sys.executable, __file__, "--child", data]
                command += ["--records", str(args.records), "--repeats", str(args.repeats)]
                command += ["--stage", args.stage]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                seconds = float(out.stdout.split()[-1])
                times.setdefault((source, mode, data), []).append(seconds)
                commit = _commit(source)
                per = seconds / args.records * 1e6
                print(
                    f"| {round_} | {data} | {_label(source, mode)} | {commit} | {seconds:.3f} "
                    f"| {per:.0f} |"
                )
    print("\n| dataset | source | best CPU s | against the first source |")
    print("|---|---|---:|---:|")
    for data in datasets:
        first = min(times[(*sources[0], data)])
        for source, mode in sources:
            best = min(times[source, mode, data])
            print(f"| {data} | {_label(source, mode)} | {best:.3f} | {best / first:.2f}x |")


def _label(source: Path, mode: str | None) -> str:
    return source.name if mode is None else f"{source.name} (CTXEVAL_COMPILED={mode})"


def _commit(source: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() or "?"


if __name__ == "__main__":
    main()
