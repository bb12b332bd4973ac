"""The harness's report alone: ``write_harness_report`` timed in fresh processes, source trees
alternated (docs/performance.md).

The harness (``benchmarks/harness.py``'s corpus, questions and chunkers; ``--grid`` adds the
dense retriever and the fusion) runs once, with the first source tree, and its outcome is
pickled; then each source tree draws the report from that outcome in a new process (imports
and all: what the harness's "report" step times), in turns, ``--repeats`` times. Prints wall and
CPU seconds of each draw and the median ratio of each tree against the first.

    .venv/bin/python benchmarks/harness_report.py OLD_SRC NEW_SRC [--grid] [--repeats 4]

A source tree is a folder holding the ``ctxeval`` package (``src`` of a checkout, or of
``git archive COMMIT src | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_BUILD = """
import pickle, sys
sys.path.insert(0, {benchmarks!r})
import harness
from ctxeval.chunking import compare_chunkers
retriever = {retriever!r}
documents = harness.corpus()
asked = harness.questions(documents, 500)
outcome = compare_chunkers(documents, asked, harness.CHUNKERS, k=harness.KS, retriever=retriever)
with open({pickle!r}, "wb") as out:
    pickle.dump(outcome, out)
"""

_DRAW = """
import pickle, time
with open({pickle!r}, "rb") as f:
    outcome = pickle.load(f)
from ctxeval.chunking.report import write_harness_report
wall, cpu = time.perf_counter(), time.process_time()
write_harness_report({page!r}, outcome)
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def _python(code: str, source: str) -> str:
    env = {**os.environ, "PYTHONPATH": source}
    done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return done.stdout.decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="source trees (folders holding ctxeval)")
    parser.add_argument("--grid", action="store_true", help="x {bm25, dense, rrf(bm25, dense)}")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    retriever: object = "bm25"
    if args.grid:
        retriever = {"bm25": "bm25", "dense": "dense", "rrf": "rrf('bm25', 'dense')"}
    benchmarks = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as tmp:
        pickled, page = str(Path(tmp) / "outcome.pkl"), str(Path(tmp) / "report.html")
        build = _BUILD.format(benchmarks=benchmarks, retriever=retriever, pickle=pickled)
        _python(build, args.sources[0])
        times: dict[str, list[float]] = {source: [] for source in args.sources}
        print("| round | source | wall s | CPU s | load average |\n|---|---|---:|---:|---|")
        for round_ in range(1, args.repeats + 1):
            for source in args.sources:
                wall, cpu = map(
                    float, _python(_DRAW.format(pickle=pickled, page=page), source).split()
                )
                times[source].append(wall)
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                print(f"| {round_} | {source} | {wall:.2f} | {cpu:.2f} | {load} |")
    first = statistics.median(times[args.sources[0]])
    for source, walls in times.items():
        median = statistics.median(walls)
        print(f"{source}: median {median:.2f} s wall, {first / median:.2f}x the first's speed")


if __name__ == "__main__":
    main()
