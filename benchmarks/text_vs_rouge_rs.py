"""Text mode: ctxeval against rouge-score-rs (a Rust port of rouge-score), on unseen texts.

Run from the repository root (rouge-score-rs is a benchmark requirement, not ctxeval's:
``.venv/bin/pip install -r benchmarks/requirements.txt``):

    .venv/bin/python benchmarks/text_vs_rouge_rs.py                   # ~4 min on 2 cores
    .venv/bin/python benchmarks/text_vs_rouge_rs.py --data distinct --cores 1 --rounds 3

What each system computes, from the same freshly parsed records: every retrieved chunk against
every ground-truth text, ROUGE-L recall (rouge-score's tokenizer, no stemming) >= 0.7 makes a
pair relevant, then context precision and context recall at k = 10 (every record has 10 chunks),
per record and their means.

- **ctxeval**: ``RetrievalEvaluator(records, ["context_precision", "context_recall"],
  workers=W, progress=False).run(k=10)``, end to end (reading and checking the dicts, tokens,
  matching, both measures, the rows, the aggregate), with ``CTXEVAL_COMPILED=never`` (the
  README's install: tokens in Python, rapidfuzz's LCS) and ``always`` (numba's compiled kernel,
  the ``fast`` extra), each in its own process.
- **rouge-score-rs**: the obvious Python around its ``RougeScorer(["rougeL"]).score_batch``: one
  call for every (ground truth, chunk) pair of the records, then each record's decisions,
  precision, recall and the means (:func:`run_rouge_rs`).
- ``--systems`` may add ``auto`` (``CTXEVAL_COMPILED=auto``, the default where the ``fast`` extra
  is installed: the kernel loads once 20 million characters were tokenised in Python); the table
  of passes says whether the kernel was in use after the warm-up and at the end.
- **ctxeval's floor**: the same ctxeval run with a strategy that finds nothing relevant at no
  cost (:class:`NoMatch`): everything but matching, the most a faster matcher could give.

"One core": ctxeval ``workers=1``, rouge-score-rs with ``RAYON_NUM_THREADS=1``. "Every core":
ctxeval ``workers=os.cpu_count()`` (worker processes), rouge-score-rs with its default thread pool
(one thread a core).

Each (system, dataset, cores) runs in a fresh process, so no run inherits another's caches or
thread pool. The process builds the records (``_data.corpus_records``: chunks of a fixed corpus
that repeat across queries; ``_data.text_records``: every chunk distinct), warms the system once
(one untimed pass; ctxeval also at ``workers=1`` first, so that its kernel is loaded before
worker processes fork) and then times ``--repeats`` passes, best of them. Every pass, the warm ones
included, appends its own fresh token (``qzv<pass>x``, in no ground truth) to every chunk: each pass
sees texts the process has never seen, so ctxeval's token cache carries nothing from one pass to
the next (within a pass, chunks of a corpus still repeat, as they do in a real run). An
appended token is in no ground truth, so no LCS and no recall changes: every pass must give the
same values, and the script asserts it. The records are parsed from JSON lines before each pass,
untimed: fresh string objects, as a file reader gives.

The processes are alternated (the systems' order reversed every other round) for ``--rounds``
rounds, so a change of load on a shared machine hits them alike; the table keeps each one's best.

Checks, asserted: ctxeval's context precision and recall of every record equal, bit for bit, the
ones computed from rouge-score-rs's scores, in every process, on both datasets.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import corpus_records, print_machine, text_records  # noqa: E402

THRESHOLD = 0.7
K = 10
DATASETS = {
    "corpus": ("chunks repeat across queries (a corpus)", corpus_records),
    "distinct": ("every chunk distinct", text_records),
}
SYSTEMS = {
    "rouge-rs": "rouge-score-rs",
    "never": "ctxeval, no kernel",
    "always": "ctxeval, kernel",
    "auto": "ctxeval, CTXEVAL_COMPILED=auto",
    "floor": "ctxeval's floor",
}


class NoMatch:
    """ctxeval's floor: a strategy that finds nothing relevant at no cost, so that a run costs
    everything but matching (reading and checking the dicts, the context's words, judging, the
    measures, the rows, the aggregate)."""

    unit = "chunk"
    spec = "no-match"

    def units(self, texts: list[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: list[str], ground_truth: list[str]) -> Any:
        import numpy as np

        return np.zeros((len(retrieved), len(ground_truth)), dtype=bool)

    def match_records(self, records: list[tuple[list[str], list[str]]]) -> list[Any]:
        return [self.match(r, g) for r, g in records]


Values = tuple[list[tuple[float, float]], list[float]]


def run_rouge_rs(scorer: Any, records: list[dict[str, Any]]) -> Values:
    """Every record's context precision and recall at k = 10 from rouge-score-rs's ROUGE-L
    recall, and their means: the Python a user writes around ``score_batch``."""
    targets: list[str] = []
    predictions: list[str] = []
    shapes = []
    for record in records:
        chunks = record["retrieved_context"][:K]
        truths = list(dict.fromkeys(record["ground_truth_context"]))
        shapes.append((len(chunks), len(truths)))
        for chunk in chunks:
            targets += truths
            predictions += [chunk] * len(truths)
    scores = scorer.score_batch(targets, predictions)
    out = []
    at = 0
    for n, m in shapes:
        relevant = [s["rougeL"].recall >= THRESHOLD for s in scores[at : at + n * m]]
        at += n * m
        rows = [any(relevant[i * m : (i + 1) * m]) for i in range(n)]
        cols = [any(relevant[j::m]) for j in range(m)]
        out.append((sum(rows) / n, sum(cols) / m))
    return out, [sum(column) / len(out) for column in zip(*out, strict=True)]


def run_ctxeval(records: list[dict[str, Any]], workers: int, matching: Any = None) -> Values:
    from ctxeval import RetrievalEvaluator

    result = RetrievalEvaluator(
        records,
        ["context_precision", "context_recall"],
        matching=matching,
        workers=workers,
        progress=False,
    ).run(k=K)
    columns = (f"context_precision@{K}", f"context_recall@{K}")
    rows = [(row[columns[0]], row[columns[1]]) for row in result.per_query]
    return rows, [result.aggregate[c] for c in columns]


def fresh(lines: list[str], pass_: int) -> list[dict[str, Any]]:
    """The records parsed anew, a token no ground truth holds appended to every chunk."""
    token = f" qzv{pass_}x"
    records = [json.loads(line) for line in lines]
    for record in records:
        record["retrieved_context"] = [c + token for c in record["retrieved_context"]]
    return records


def child(system: str, data: str, cores: str, records: int, repeats: int) -> dict[str, Any]:
    """One process's measurement: warm once, then the best of ``repeats`` timed passes."""
    lines = [json.dumps(r) for r in DATASETS[data][1](records, seed=0)]
    workers = 1 if cores == "1" else (os.cpu_count() or 1)
    if system == "rouge-rs":
        from rouge_score_rs import RougeScorer

        scorer = RougeScorer(["rougeL"])

        def run(records: list[dict[str, Any]]) -> Values:
            return run_rouge_rs(scorer, records)

        warm = [run]
    else:
        matching = NoMatch() if system == "floor" else None

        def run(records: list[dict[str, Any]]) -> Values:
            return run_ctxeval(records, workers, matching)

        warm = [lambda r: run_ctxeval(r, 1, matching), run] if workers > 1 else [run]
    pass_ = 0
    values = None
    for call in warm:
        values = call(fresh(lines, pass_))
        pass_ += 1
    warmed = _kernel_status(system)
    walls, cpus = [], []
    for _ in range(repeats):
        records_ = fresh(lines, pass_)
        pass_ += 1
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        got = run(records_)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        assert got == values, "an appended token changed a value"
        del records_
    return {
        "wall": walls,
        "cpu": cpus,
        "values": values,
        "kernel": _kernel_status(system),
        "warmed": warmed,
    }


def _kernel_status(system: str) -> str:
    """Whether ctxeval's compiled kernel is in use in this process (a word: in use, or not)."""
    if system not in ("never", "always", "auto"):
        return "-"
    from ctxeval.matching.rouge import compiled

    return "in use" if compiled.status() == "in use" else "not used"


def measure(args: argparse.Namespace, system: str, data: str, cores: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("RAYON_NUM_THREADS", None)
    if system == "rouge-rs":
        if cores == "1":
            env["RAYON_NUM_THREADS"] = "1"
    elif system != "floor":
        env["CTXEVAL_COMPILED"] = system
    command = [sys.executable, __file__, "--child", f"{system},{data},{cores}"]
    command += ["--records", str(args.records), "--repeats", str(args.repeats)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"{system} {data} {cores}: failed\n{out.stderr}")
    found: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("corpus", "distinct", "both"), default="both")
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes per system, alternated")
    parser.add_argument("--cores", default="1,all", help="'1', 'all' or both (comma-separated)")
    parser.add_argument(
        "--systems",
        default="rouge-rs,never,always,floor",
        help=f"of {', '.join(SYSTEMS)} (floor: ctxeval with a strategy that matches nothing)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        system, data, cores = args.child.split(",")
        print(json.dumps(child(system, data, cores, args.records, args.repeats)))
        return
    datasets = ("corpus", "distinct") if args.data == "both" else (args.data,)
    cores_ = [c.strip() for c in args.cores.split(",")]
    systems = [s.strip() for s in args.systems.split(",")]
    print_machine()
    print(f"cores: {os.cpu_count()}; load average at start: {os.getloadavg()}")
    print(
        f"records: {args.records} per dataset; {args.repeats} timed passes per process, "
        f"{args.rounds} rounds\n"
    )
    best: dict[tuple[str, str, str], dict[str, float]] = {}
    print(
        "| round | dataset | cores | system | wall s (best) | CPU s | records/s "
        "| kernel after warm-up; at the end | load |"
    )
    print("|---:|---|---|---|---:|---:|---:|---|---:|")
    for round_ in range(1, args.rounds + 1):
        order = systems if round_ % 2 else systems[::-1]
        for data in datasets:
            reference = None
            for cores in cores_:
                for system in order:
                    found = measure(args, system, data, cores)
                    rows, means = found["values"]
                    if system == "floor":
                        pass  # it matches nothing: its values are zeros
                    elif reference is None:
                        reference = (rows, means)
                    else:
                        assert rows == reference[0], f"{system} {data} {cores}: values differ"
                        # the means: ctxeval's are exact, the script's a float sum
                        assert all(map(math.isclose, means, reference[1])), means
                    if system == "always":
                        assert found["kernel"] == found["warmed"] == "in use", found
                    wall, cpu = min(found["wall"]), min(found["cpu"])
                    key = (data, cores, system)
                    was = best.get(key, {"wall": math.inf, "cpu": math.inf})
                    best[key] = {"wall": min(was["wall"], wall), "cpu": min(was["cpu"], cpu)}
                    print(
                        f"| {round_} | {data} | {cores} | {system} | {wall:.3f} | {cpu:.3f} | "
                        f"{args.records / wall:,.0f} | {found['warmed']}; {found['kernel']} | "
                        f"{os.getloadavg()[0]:.2f} |",
                        flush=True,
                    )
    print(f"\nload average at the end: {os.getloadavg()}")
    print(
        "\nChecks: in every process, every record's context precision and recall at k = 10 "
        "equal (bit for bit) across systems and passes, on every dataset.\n"
    )
    print("ctxeval, no kernel: CTXEVAL_COMPILED=never, as with the README's install; ctxeval,")
    print("kernel: CTXEVAL_COMPILED=always (the `fast` extra's numba kernel).")
    summary(args.records, best, datasets, cores_, systems, "wall")
    if "1" in cores_:
        summary(args.records, best, datasets, ["1"], systems, "cpu")


def summary(
    records: int,
    best: dict[tuple[str, str, str], dict[str, float]],
    datasets: Sequence[str],
    cores_: Sequence[str],
    systems: Sequence[str],
    clock: str,
) -> None:
    """The table of the best speeds and their ratios to rouge-score-rs's."""
    what = "wall time" if clock == "wall" else "CPU time (one core: less moved by other load)"
    print(f"\nBest of every process, records/s by {what}:\n")
    others = [s for s in systems if s != "rouge-rs"]
    ratios = [f"{SYSTEMS[s]} / rouge-score-rs" for s in others] if "rouge-rs" in systems else []
    print("| data | cores | " + " | ".join([*(SYSTEMS[s] for s in systems), *ratios]) + " |")
    print("|---|---|" + "---:|" * (len(systems) + len(ratios)))
    for data in datasets:
        for cores in cores_:
            speeds = {s: records / best[data, cores, s][clock] for s in systems}
            cells = [f"{speeds[s]:,.0f}" for s in systems]
            if ratios:
                cells += [f"**{speeds[s] / speeds['rouge-rs']:.2f}x**" for s in others]
            print(f"| {DATASETS[data][0]} | {cores} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
