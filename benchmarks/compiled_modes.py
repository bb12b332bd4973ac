"""What ``CTXEVAL_COMPILED`` costs a whole run: ``never``, ``auto`` and ``always``, each in a fresh
process (so ``auto`` and ``always`` pay for loading numba and the kernel, as a user's run does).

    .venv/bin/python benchmarks/compiled_modes.py                      # 2,000 to 20,000 records
    .venv/bin/python benchmarks/compiled_modes.py --records 3000 --data distinct

For each dataset of ``_data.py`` (corpus chunks: chunks repeat; distinct chunks: all new) and
each size, one line: the wall seconds of ``RetrievalEvaluator(records,
[PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())],
workers=1).run(k=None)`` in a new process under each setting (records parsed beforehand,
untimed), best of ``--repeats`` processes, and whether the kernel was in use at the end. The
first process after the kernel's source changes also compiles it (seconds): run twice, or read
the best of several repeats.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("never", "auto", "always")

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
from _data import corpus_records, text_records
from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch
from ctxeval.matching.rouge import compiled
made = text_records if sys.argv[2] == "distinct" else corpus_records
records = [json.loads(json.dumps(r)) for r in made(int(sys.argv[1]), seed=0)]
metrics = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]
start = time.perf_counter()
RetrievalEvaluator(records, metrics, workers=1, progress=False).run(k=None)
print(time.perf_counter() - start, compiled.status() == "in use")
"""


def run(records: int, data: str, mode: str) -> tuple[float, bool]:
    env = {**os.environ, "CTXEVAL_COMPILED": mode}
    command = [sys.executable, "-c", _CHILD, str(records), data, str(HERE)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    seconds, used = out.stdout.split()
    return float(seconds), used == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="*", default=[2000, 5000, 20000])
    parser.add_argument("--data", choices=("corpus", "distinct", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    datasets = ("corpus", "distinct") if args.data == "both" else (args.data,)
    print("| dataset | records | " + " | ".join(f"{m}, s" for m in MODES) + " | auto loaded it |")
    print("|---|---:|" + "---:|" * len(MODES) + "---|")
    for data in datasets:
        for records in args.records:
            best: dict[str, float] = {}
            loaded = False
            for _ in range(args.repeats):
                for mode in MODES:  # alternated, so that a change of load hits them alike
                    seconds, used = run(records, data, mode)
                    best[mode] = min(best.get(mode, seconds), seconds)
                    loaded = used if mode == "auto" else loaded
            cells = " | ".join(f"{best[m]:.2f}" for m in MODES)
            print(f"| {data} | {records:,} | {cells} | {'yes' if loaded else 'no'} |")


if __name__ == "__main__":
    main()
