"""Two ctxeval sources and rouge-score-rs in one process, pass by pass: CPU time per record.

Run from the repository root (rouge-score-rs: ``benchmarks/requirements.txt``); each SOURCE is a
directory holding a ctxeval checkout (its ``src/``), for instance a ``git worktree`` of main:

    git worktree add --detach /tmp/ctxeval-main main
    .venv/bin/python benchmarks/trees_vs_rouge_rs.py /tmp/ctxeval-main . --rounds 30
    CTXEVAL_COMPILED=always .venv/bin/python benchmarks/trees_vs_rouge_rs.py A B --data corpus

On a shared machine, separate processes (``text_vs_rouge_rs.py``, ``text_sources.py``) see the
load change between them by 10-30%, more than a change of a few percent. Here every source is
imported into the same process (each its own set of ``ctxeval`` modules, swapped into
``sys.modules`` while it runs, so that imports made during a run find its own), warmed once,
and then the systems take turns pass by pass (the order reversed every other round): each pass
is what ``text_vs_rouge_rs.py`` times (3,000 freshly parsed records of ``_data``'s dataset, a
token no ground truth holds appended to every chunk, so no text was seen before; ctxeval with
``workers=1``; rouge-score-rs's ``score_batch`` single-threaded), and every pass's per-record
precision and recall must equal rouge-score-rs's. Printed: each system's best and median CPU µs
a record, and the per-round ratios (one round: the systems one after the other, within a
second or two), whose median moves least with the load. ``CTXEVAL_COMPILED`` applies to both
sources (``never`` unless set).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("CTXEVAL_COMPILED", "never")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import print_machine
from text_vs_rouge_rs import DATASETS, fresh, run_ctxeval, run_rouge_rs

Modules = dict[str, Any]


def _ctxeval_modules() -> Modules:
    return {k: v for k, v in sys.modules.items() if k == "ctxeval" or k.startswith("ctxeval.")}


def _activate(modules: Modules) -> None:
    for name in _ctxeval_modules():
        del sys.modules[name]
    sys.modules.update(modules)


def load(source: str) -> tuple[str, Modules]:
    """``source``'s ctxeval, imported afresh: its ``src`` directory and its modules."""
    src = str(Path(source).resolve() / "src")
    _activate({})
    sys.path.insert(0, src)
    try:
        import ctxeval.evaluator  # noqa: F401

        assert sys.modules["ctxeval"].__file__.startswith(src)
        return src, _ctxeval_modules()
    finally:
        sys.path.remove(src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs=2, help="two ctxeval checkouts (directories with src/)")
    parser.add_argument("--data", choices=tuple(DATASETS), default="distinct")
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    names = [Path(s).resolve().name for s in args.sources]
    loaded = {name: load(source) for name, source in zip(names, args.sources, strict=True)}
    from rouge_score_rs import RougeScorer

    scorer = RougeScorer(["rougeL"])

    def run(system: str, records: list[dict[str, Any]]) -> Any:
        if system == "rouge-rs":
            return run_rouge_rs(scorer, records)
        src, modules = loaded[system]
        _activate(modules)
        sys.path.insert(0, src)
        try:
            return run_ctxeval(records, 1)
        finally:
            loaded[system] = (src, _ctxeval_modules())
            sys.path.remove(src)

    print_machine()
    print(f"CTXEVAL_COMPILED={os.environ['CTXEVAL_COMPILED']}; load average: {os.getloadavg()}")
    lines = [json.dumps(r) for r in DATASETS[args.data][1](args.records, seed=0)]
    systems = ["rouge-rs", *names]
    expected = run("rouge-rs", fresh(lines, 0))[0]
    pass_ = 1
    for system in names:  # warm once
        assert run(system, fresh(lines, pass_))[0] == expected, system
        pass_ += 1
    times: dict[str, list[float]] = {s: [] for s in systems}
    for round_ in range(args.rounds):
        for system in systems if round_ % 2 == 0 else systems[::-1]:
            records = fresh(lines, pass_)
            pass_ += 1
            gc.collect()
            start = time.process_time()
            got = run(system, records)
            times[system].append((time.process_time() - start) / args.records * 1e6)
            assert got[0] == expected, f"{system}: per-record values differ from rouge-score-rs's"
    print(f"{args.data}, {args.rounds} rounds; load average at the end: {os.getloadavg()}\n")
    print(
        "| system | best µs/record | median µs/record | rouge-score-rs / system, median of rounds |"
    )
    print("|---|---:|---:|---:|")
    for system in systems:
        ratio = statistics.median(
            r / s for r, s in zip(times["rouge-rs"], times[system], strict=True)
        )
        print(
            f"| {system} | {min(times[system]):.1f} | {statistics.median(times[system]):.1f} "
            f"| {ratio:.3f} |"
        )
    first, second = names
    ratios = [a / b for a, b in zip(times[first], times[second], strict=True)]
    print(
        f"\n{first} / {second} (time per record), per round: median "
        f"{statistics.median(ratios):.3f}, quartiles "
        f"{' - '.join(f'{q:.3f}' for q in statistics.quantiles(ratios, n=4)[::2])}"
    )


if __name__ == "__main__":
    main()
