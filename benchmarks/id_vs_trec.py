"""ID mode: ctxeval.evaluate_run against pytrec_eval and ranx, end to end from plain dicts.

Run from the repository root:

    .venv/bin/python benchmarks/id_vs_trec.py          # ~1.5 minutes, mostly ranx compiling
    .venv/bin/python benchmarks/id_vs_trec.py --no-ranx-cold   # skip the cold-compile subprocesses
    .venv/bin/python benchmarks/id_vs_trec.py --profile        # + where ctxeval's time goes

Data (benchmarks/_data.py): 10,000 queries x 100 retrieved documents, ``{qid: {docid: score}}``
and ``{qid: {docid: grade}}``; float scores unique within a query, and a variant where scores are
rounded to one decimal so most documents are tied. Measures: MAP, nDCG@10, P@10, Recall@100, MRR.

Each contender is timed end to end from the same dicts, best of ``--repeats``:

- ctxeval: ``evaluate_run(run, qrels, ["map", "ndcg@10", "P@10", "recall@100", "mrr"])``;
- pytrec_eval: ``RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "P.10", "recall.100",
  "recip_rank"}).evaluate(run)``, constructor included;
- ranx: ``evaluate(Qrels(qrels), Run(run), ["map", "ndcg@10", "precision@10", "recall@100",
  "mrr"])``, after one untimed warm-up call in the same process (numba compiles on first use).
  ranx's first-call cost is measured separately in fresh subprocesses: once with an empty numba
  cache directory (a true cold compile, as on a fresh install), once with the cache it left.

Checks: ctxeval's per-query values equal pytrec_eval's exactly (every query, every measure);
ranx's means are compared with pytrec_eval's and the largest difference is printed.

``--profile``: cProfile of one ctxeval call per variant, by stage (ctxeval.judging.runs
evaluates the whole run at once; the per-query path should take no time here) and the top
functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import id_run, print_machine, print_profile
from ctxeval import evaluate_run
from ctxeval.judging import runs as run_arrays
from ctxeval.metrics import runs
from ctxeval.metrics.measures import Measure, parse_measure

# (ctxeval, pytrec_eval output key, ranx)
MEASURES = [
    ("map", "map", "map"),
    ("ndcg@10", "ndcg_cut_10", "ndcg@10"),
    ("P@10", "P_10", "precision@10"),
    ("recall@100", "recall_100", "recall@100"),
    ("mrr", "recip_rank", "mrr"),
]
TREC_MEASURES = {"map", "ndcg_cut.10", "P.10", "recall.100", "recip_rank"}

# Run in a fresh interpreter: import ranx, build the data (untimed), then two end-to-end calls.
_RANX_COLD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {bench!r})
t0 = time.perf_counter()
from ranx import Qrels, Run, evaluate
t_import = time.perf_counter() - t0
from _data import id_run
run, qrels = id_run({queries}, {docs}, seed={seed})
metrics = {metrics!r}
times = []
for _ in range(2):
    t = time.perf_counter()
    evaluate(Qrels(qrels), Run(run), metrics)
    times.append(time.perf_counter() - t)
print(json.dumps({{"import": t_import, "first": times[0], "second": times[1]}}))
"""


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def run_ctxeval(run: Any, qrels: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = evaluate_run(run, qrels, [m[0] for m in MEASURES])
    return out, [str(w.message) for w in caught]


def run_trec(run: Any, qrels: Any) -> Any:
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)


def run_ranx(run: Any, qrels: Any) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumbaTypeSafetyWarning on every call
        return evaluate(Qrels(qrels), Run(run), [m[2] for m in MEASURES])  # type: ignore[no-any-return]


def check_trec(ours: dict[str, dict[str, float]], trec: dict[str, dict[str, float]]) -> str:
    assert ours.keys() == trec.keys(), "different queries"
    for qid, values in trec.items():
        for ctx_key, trec_key, _ in MEASURES:
            ours_key = str(parse_measure(ctx_key))  # results are keyed by canonical specs
            assert ours[qid][ours_key] == values[trec_key], (qid, ours_key, ours[qid], values)
    return f"identical: {len(trec)} queries x {len(MEASURES)} measures, bit for bit"


def check_ranx(ranx: dict[str, float], trec: dict[str, dict[str, float]]) -> str:
    diffs = []
    for _, trec_key, ranx_key in MEASURES:
        mean = math.fsum(v[trec_key] for v in trec.values()) / len(trec)
        diffs.append((abs(float(ranx[ranx_key]) - mean), ranx_key))
    worst, key = max(diffs)
    return f"largest |ranx mean - pytrec_eval mean| = {worst:.3g} ({key})"


def ranx_cold(queries: int, docs: int, seed: int) -> tuple[dict[str, float], dict[str, float]]:
    """First and second end-to-end ranx calls in fresh interpreters: empty cache, then warm."""
    code = _RANX_COLD.format(
        bench=os.path.dirname(os.path.abspath(__file__)),
        queries=queries,
        docs=docs,
        seed=seed,
        metrics=[m[2] for m in MEASURES],
    )
    out = []
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out[0], out[1]


def profile_ctxeval(run: Any, qrels: Any, label: str, top: int = 12) -> None:
    """cProfile one ctxeval call and show where the time goes, by stage and by function."""
    run_ctxeval(run, qrels)  # warm (imports, caches)
    profiler = cProfile.Profile()
    profiler.enable()
    run_ctxeval(run, qrels)
    profiler.disable()
    raw: dict[tuple[str, int, str], Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def cumulative(function: Any) -> float:
        code = function.__code__
        return float(raw.get((code.co_filename, code.co_firstlineno, code.co_name), (0,) * 4)[3])

    stages = [
        ("whole call (evaluate_run)", cumulative(runs.evaluate_run)),
        (
            "  all plain queries at once (_evaluate_plain_queries)",
            cumulative(runs._evaluate_plain_queries),
        ),
        ("    ranks (run_arrays.judge_run)", cumulative(run_arrays.judge_run)),
        ("      a chunk of queries at a time (_judge_chunk)", cumulative(run_arrays._judge_chunk)),
        ("        scores: read, type check, copy (_scores)", cumulative(run_arrays._scores)),
        (
            "        judged documents looked up in the run (_retrieved_scores)",
            cumulative(run_arrays._retrieved_scores),
        ),
        ("        qrels: type check + copy (_grades)", cumulative(run_arrays._grades)),
        ("        ranks: scores compared or searched (_ranks)", cumulative(run_arrays._ranks)),
        ("        run ids: type check (_string_ids)", cumulative(run_arrays._string_ids)),
        (
            "        ties: ids of tied documents compared (_tied_before)",
            cumulative(run_arrays._tied_before),
        ),
        (
            "    padded judgments for the core (RunJudgments.batches)",
            cumulative(run_arrays.RunJudgments._batch),
        ),
        ("    measures (the core: Measure.values)", cumulative(Measure.values)),
        ("  per-query path (rank_documents)", cumulative(runs.rank_documents)),
    ]
    print_profile(f"Where ctxeval's time goes, {label} (cProfile)", stages, raw, top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-ranx-cold", action="store_true", help="skip ranx's cold-compile subprocesses"
    )
    parser.add_argument("--profile", action="store_true", help="also cProfile ctxeval")
    args = parser.parse_args()

    print_machine()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"data: {args.queries} queries x {args.docs} documents (seed {args.seed}); measures: "
        + ", ".join(m[0] for m in MEASURES)
    )
    # Warm ranx up once (compiles, or loads its on-disk numba cache) before any timing.
    warm_run, warm_qrels = id_run(50, 20, seed=1)
    t_warm, _ = best_of(1, lambda: run_ranx(warm_run, warm_qrels))

    results = {}
    notes = {}
    for variant, ties in (("unique scores", False), ("many ties", True)):
        run, qrels = id_run(args.queries, args.docs, seed=args.seed, ties=ties)
        t_trec, trec = best_of(args.repeats, lambda: run_trec(run, qrels))  # noqa: B023
        t_ctx, (ours, caught) = best_of(args.repeats, lambda: run_ctxeval(run, qrels))  # noqa: B023
        t_ranx, ranx = best_of(args.repeats, lambda: run_ranx(run, qrels))  # noqa: B023
        results[variant] = (t_ctx, t_trec, t_ranx)
        notes[variant] = [
            f"ctxeval vs pytrec_eval: {check_trec(ours, trec)}",
            f"ranx vs pytrec_eval: {check_ranx(ranx, trec)}",
        ] + [f"ctxeval warned: {message}" for message in caught]

    cold = None if args.no_ranx_cold else ranx_cold(args.queries, args.docs, args.seed)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")

    print(f"### End to end from dicts (best of {args.repeats}; seconds)\n")
    print("| data | ctxeval | pytrec_eval | ranx (warm) | pytrec_eval / ctxeval | ranx / ctxeval |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant, (t_ctx, t_trec, t_ranx) in results.items():
        print(
            f"| {variant} | {t_ctx:.3f} | {t_trec:.3f} | {t_ranx:.3f} | "
            f"{t_trec / t_ctx:.2f}x | {t_ranx / t_ctx:.2f}x |"
        )
    print("\n(ratios > 1: ctxeval is faster)\n")

    print("### ranx first call (numba)\n")
    print(
        f"- in this process, first call on a tiny run (after earlier runs' on-disk cache, if "
        f"any): {t_warm:.2f} s"
    )
    if cold is not None:
        empty, cached = cold
        print(
            "\n| fresh interpreter | import ranx | 1st end-to-end call | 2nd call | "
            "compile/load cost (1st - 2nd) |"
        )
        print("|---|---:|---:|---:|---:|")
        for label, c in (
            ("empty numba cache (fresh install)", empty),
            ("numba cache left by the previous run", cached),
        ):
            print(
                f"| {label} | {c['import']:.2f} | {c['first']:.2f} | {c['second']:.2f} | "
                f"{c['first'] - c['second']:.2f} |"
            )

    print("\n### Targets\n")
    for variant, (t_ctx, t_trec, t_ranx) in results.items():
        met_trec = "met" if t_ctx <= t_trec else "NOT met"
        met_ranx = "met" if t_ctx < t_ranx else "NOT met"
        print(
            f"- {variant}: no slower than pytrec_eval: {met_trec} "
            f"({t_ctx:.3f} s vs {t_trec:.3f} s); faster than ranx end to end (warm): "
            f"{met_ranx} ({t_ctx:.3f} s vs {t_ranx:.3f} s)"
        )
    print("\n### Checks\n")
    for variant, lines in notes.items():
        for line in lines:
            print(f"- {variant}: {line}")

    if args.profile:
        for variant, ties in (("unique scores", False), ("many ties", True)):
            run, qrels = id_run(args.queries, args.docs, seed=args.seed, ties=ties)
            profile_ctxeval(run, qrels, variant)


if __name__ == "__main__":
    main()
