"""Text mode: ctxeval against continuous-eval, a plain rouge-score loop and the bare kernel.

Run from the repository root:

    .venv/bin/python benchmarks/text_vs_peers.py                 # both datasets, ~2 minutes
    .venv/bin/python benchmarks/text_vs_peers.py --data corpus   # one dataset, ~1 minute
    .venv/bin/python benchmarks/text_vs_peers.py --profile       # + where ctxeval's time goes
    .venv/bin/python benchmarks/text_vs_peers.py --same-process 4 --records 6000
        # only: the same records 4 times in one process, token cache kept (and a control)

Two datasets (benchmarks/_data.py), each record 10 chunks of ~120 words of CPython documentation
prose and 1-3 ground-truth sentences, copied, paraphrased or absent; ``--data`` picks one or
both (the default), and every contender and every check runs on each, in its own tables:

- corpus chunks (realistic: chunks repeat across queries), ``corpus_records``: the prose is cut
  once into ~760 fixed chunks and every retrieved chunk is one of them, as when a retriever
  searches a chunked corpus; each chunk appears in ~130 of 10,000 records.
- distinct chunks (worst case: no repeats), ``text_records``: each chunk is a window starting
  anywhere, so chunk texts repeat only by coincidence (~1.4% of them) and ctxeval's per-run
  token cache practically never hits.

The records are serialised to JSON lines once, untimed, and each timed repeat of each contender
gets its own ``json.loads`` of them, also untimed: fresh string objects per record, as a JSONL
reader gives, so any benefit from repeated chunks comes from equal text, not from shared
objects (or from string hashes cached by an earlier repeat).

Every number is measured in the same run, on the same records, single process unless a row
says otherwise:

- ctxeval: ``RetrievalEvaluator(records, [PrecisionRecallF1(RougeChunkMatch()),
  RankedRetrievalMetrics(RougeChunkMatch())], workers=1).run(k=None)``, end to end: reading and
  validating the dicts, tokenising, matching, both metrics, aggregation. Best of ``--repeats``;
  the token cache is emptied before each repeat, so each one starts as a fresh run does (and
  tokenises each distinct text once, while they fit the cache's size bound).
- continuous-eval 0.3.14: ``PrecisionRecallF1(RougeChunkMatch())`` and
  ``RankedRetrievalMetrics(RougeChunkMatch())`` on every record of a subset, through
  ``.compute`` (no telemetry), best of ``--repeats`` passes.
- rouge-score loop, the reference definition: ``RougeScorer(["rougeL"]).score(target=g,
  prediction=r).rougeL.recall >= 0.7`` for every (chunk, ground truth) pair, then precision,
  recall and F1 from those decisions; best of ``--repeats`` passes.
- bare kernel: ``rapidfuzz.process.cdist(chunks, truths, scorer=LCSseq.similarity)`` per record
  on token lists tokenised and interned to ints beforehand (nothing else): the practical limit.
- ctxeval's floor: the same evaluation with a strategy that finds nothing relevant at no cost
  (``NoMatch``), so everything but matching: what a faster matcher could not remove. "Matching
  time" is the ctxeval run's time minus the floor's.

Checks, asserted: ctxeval with ``RougeChunkMatch(scorer="py-rouge")`` and
``convention="continuous_eval"`` gives continuous-eval's numbers on its subset; ctxeval's
default scorer makes exactly the rouge-score loop's decisions (every pair) and its precision and
recall follow from them; ``workers=2`` gives ``workers=1``'s per-query rows. On each dataset.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import math
import os
import pstats
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

os.environ["CONTINUOUS_EVAL_DO_NOT_TRACK"] = "true"  # continuous-eval's telemetry: never

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from rapidfuzz.distance import LCSseq
from rapidfuzz.process import cdist

from _data import corpus_records, print_machine, print_profile, text_records
from ctxeval import (
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
    get_tokenizer,
)
from ctxeval.matching.tokens import default_cache

THRESHOLD = 0.7
DATASETS = {
    "corpus": ("corpus chunks (realistic: chunks repeat across queries)", corpus_records),
    "distinct": ("distinct chunks (worst case: no repeats)", text_records),
}
Input = TypeVar("Input")
CE_KEYS = (
    "context_precision",
    "context_recall",
    "context_f1",
    "average_precision",
    "reciprocal_rank",
    "ndcg",
)


def ctxeval_metrics(compatible: bool = False) -> list[Any]:
    if compatible:
        strategy = RougeChunkMatch(scorer="py-rouge")
        return [
            PrecisionRecallF1(strategy),
            RankedRetrievalMetrics(strategy, convention="continuous_eval"),
        ]
    strategy = RougeChunkMatch()
    return [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)]


def run_ctxeval(records: list[dict[str, Any]], workers: int = 1, compatible: bool = False) -> Any:
    default_cache(get_tokenizer("rouge")).clear()
    evaluator = RetrievalEvaluator(
        records, ctxeval_metrics(compatible), workers=workers, progress=False
    )
    return evaluator.run(k=None)


class NoMatch:
    """The pipeline's floor: a strategy that finds nothing relevant at no cost (one call per
    batch), so a run with it costs everything but matching: reading and checking the records,
    the context used, every measure, the rows, the aggregate."""

    unit = "chunk"
    spec = "no-match"

    def units(self, texts: list[str]) -> list[str]:
        return list(texts)

    def match(self, retrieved: list[str], ground_truth: list[str]) -> Any:
        return np.zeros((len(retrieved), len(ground_truth)), dtype=bool)

    def match_records(self, records: list[tuple[list[str], list[str]]]) -> list[Any]:
        return [self.match(r, g) for r, g in records]


def run_floor(records: list[dict[str, Any]]) -> Any:
    nothing = NoMatch()
    metrics = [PrecisionRecallF1(nothing), RankedRetrievalMetrics(nothing)]
    return RetrievalEvaluator(records, metrics, workers=1, progress=False).run(k=None)


def same_process_runs(label: str, records: list[dict[str, Any]], runs: int) -> None:
    """The same records evaluated ``runs`` times in one process, the token cache kept between
    runs (as when ``compare`` evaluates several retrievers over the same chunks): each run's
    CPU time (``time.process_time``: less disturbed by other processes than wall time) and its
    ratio to the first run's. The control: the same runs with the cache emptied before each
    (no cache carried over), so a drift of the process itself shows in both columns."""
    data = JsonLines(records)
    cache = default_cache(get_tokenizer("rouge"))
    times: dict[bool, list[float]] = {True: [], False: []}
    for keep in (True, False):
        cache.clear()
        for _ in range(runs):
            fresh = data.read()
            if not keep:
                cache.clear()
            gc.collect()
            start = time.process_time()
            RetrievalEvaluator(fresh, ctxeval_metrics(), workers=1, progress=False).run(k=None)
            times[keep].append(time.process_time() - start)
            del fresh
    print(f"\n### The same {len(records)} records {runs} times in one process: {label}\n")
    print("| run | CPU s, cache kept | / first run | CPU s, cache emptied before each | / first |")
    print("|---:|---:|---:|---:|---:|")
    kept, emptied = times[True], times[False]
    for i, (a, b) in enumerate(zip(kept, emptied, strict=True)):
        print(f"| {i + 1} | {a:.3f} | {a / kept[0]:.2f}x | {b:.3f} | {b / emptied[0]:.2f}x |")


def best_of(
    repeats: int, fn: Callable[[Input], Any], fresh_input: Callable[[], Input]
) -> tuple[float, Any]:
    """Best time of ``fn`` over ``repeats`` calls, each on a new ``fresh_input()`` (untimed)."""
    best, out = math.inf, None
    for _ in range(repeats):
        data = fresh_input()
        start = time.perf_counter()
        out = fn(data)
        best = min(best, time.perf_counter() - start)
        del data
    return best, out


class JsonLines:
    """Records kept as JSON lines; each :meth:`read` parses them anew, as reading a file does."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.lines = [json.dumps(r) for r in records]

    def read(self, n: int | None = None) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines[:n]]

    def reader(self, n: int | None = None) -> Callable[[], list[dict[str, Any]]]:
        return lambda: self.read(n)


def continuous_eval_module() -> Any:
    import nltk

    download = nltk.download
    nltk.download = lambda *args, **kwargs: False  # it downloads at import; never here
    try:
        import continuous_eval.metrics.retrieval as ce
    finally:
        nltk.download = download
    return ce


def run_continuous_eval(ce: Any, records: list[dict[str, Any]]) -> list[dict[str, float]]:
    prf = ce.PrecisionRecallF1(ce.RougeChunkMatch())
    ranked = ce.RankedRetrievalMetrics(ce.RougeChunkMatch())
    out = []
    for r in records:
        row = prf.compute(
            retrieved_context=r["retrieved_context"],
            ground_truth_context=r["ground_truth_context"],
        )
        row.update(
            ranked.compute(
                retrieved_context=r["retrieved_context"],
                ground_truth_context=r["ground_truth_context"],
            )
        )
        out.append(row)
    return out


def run_rouge_score(records: list[dict[str, Any]]) -> list[tuple[list[list[bool]], float, float]]:
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"])
    out = []
    for r in records:
        truths = list(dict.fromkeys(r["ground_truth_context"]))
        decisions = [
            [scorer.score(target=g, prediction=c)["rougeL"].recall >= THRESHOLD for g in truths]
            for c in r["retrieved_context"]
        ]
        precision = sum(any(row) for row in decisions) / len(decisions)
        recall = sum(any(col) for col in zip(*decisions, strict=True)) / len(truths)
        out.append((decisions, precision, recall))
    return out


def pretokenise(records: list[dict[str, Any]]) -> list[tuple[list[list[int]], list[list[int]]]]:
    from rouge_score.tokenize import tokenize

    vocab: dict[str, int] = {}

    def codes(text: str) -> list[int]:
        return [vocab.setdefault(t, len(vocab)) for t in tokenize(text, None)]

    return [
        ([codes(c) for c in r["retrieved_context"]], [codes(g) for g in r["ground_truth_context"]])
        for r in records
    ]


def run_kernel(prepared: list[tuple[list[list[int]], list[list[int]]]]) -> None:
    for chunks, truths in prepared:
        cdist(chunks, truths, scorer=LCSseq.similarity, processor=None, dtype=np.int64)


def check_continuous_eval(ours: list[dict[str, Any]], theirs: list[dict[str, float]]) -> str:
    last_bit = 0
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        # Our columns are canonical specs: under the continuous_eval convention they carry its
        # options, e.g. average_precision(ap_credit='any', ...).
        column = {c.split("(")[0].split("@")[0]: c for c in a}
        for key in CE_KEYS:
            if a[column[key]] == b[key]:
                continue
            # continuous-eval discounts NDCG with 1 / math.log(i + 2, 2), ctxeval (as trec_eval)
            # with g / math.log2(i + 2): the two can differ in the last bit, nothing more.
            assert key == "ndcg", (i, key, a, b)
            assert math.isclose(a[column[key]], b[key], rel_tol=1e-12), (i, key, a, b)
            last_bit += 1
    values = len(ours) * len(CE_KEYS)
    if last_bit:
        return (
            f"identical: {values - last_bit}/{values} values bit for bit, {last_bit} NDCG "
            "values within 1e-12 (log base; see "
            "tests/matching/test_reference_continuous_eval_rouge.py)"
        )
    return f"identical: {values}/{values} values bit for bit ({len(ours)} records x {CE_KEYS})"


def check_rouge_score(
    records: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    reference: list[tuple[list[list[bool]], float, float]],
) -> str:
    strategy = RougeChunkMatch()
    pairs = 0
    for record, row, (decisions, precision, recall) in zip(records, rows, reference, strict=True):
        truths = list(dict.fromkeys(record["ground_truth_context"]))
        ours = strategy.match(record["retrieved_context"], truths).relevant.tolist()
        assert ours == decisions, (record["id"], ours, decisions)
        assert row["context_precision"] == precision, (record["id"], row, precision)
        assert row["context_recall"] == recall, (record["id"], row, recall)
        pairs += sum(map(len, decisions))
    return (
        f"identical: all {pairs} pair decisions, and context precision/recall of "
        f"{len(records)} records"
    )


def profile_ctxeval(records: list[dict[str, Any]], top: int, label: str) -> None:
    """cProfile the ctxeval run and show where the time goes, by stage and by function."""
    profiler = cProfile.Profile()
    default_cache(get_tokenizer("rouge")).clear()
    evaluator = RetrievalEvaluator(records, ctxeval_metrics(), workers=1, progress=False)
    pauses: list[float] = []
    started = [0.0]

    def gc_timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - started[0])

    gc.callbacks.append(gc_timer)
    profiler.enable()
    evaluator.run(k=None)
    profiler.disable()
    gc.callbacks.remove(gc_timer)
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]

    def matches(key: tuple[str, int, str], path_end: str, name: str) -> bool:
        return key[0].replace(os.sep, "/").endswith(path_end) and key[2] == name

    def cumulative(path_end: str, name: str, caller: tuple[str, str] | None = None) -> float:
        """Cumulative time of a function; with ``caller``, only of its calls from there."""
        total = 0.0
        for key, (_, _, _, ct, callers) in raw.items():
            if not matches(key, path_end, name):
                continue
            if caller is None:
                total += ct
            else:
                total += sum(c[3] for k, c in callers.items() if matches(k, *caller))
        return total

    def own(name: str) -> float:
        return sum(v[2] for (_, _, n), v in raw.items() if n == name)

    stages = [
        ("whole run (RetrievalEvaluator.run)", cumulative("ctxeval/evaluator.py", "run")),
        (
            "read + validate dicts (ctxeval.io)",
            cumulative("ctxeval/parallel/executors.py", "_prepend"),
        ),
        (
            "  of which checking the fields (records.plain_text_record, or the pydantic model)",
            cumulative("ctxeval/records/model.py", "plain_text_record")
            + cumulative("ctxeval/records/checks.py", "validate_texts"),
        ),
        (
            "score the batches (scoring.score_columns)",
            cumulative("ctxeval/scoring/driver.py", "score_columns"),
        ),
        (
            "  match (strategy.match, once per record)",
            cumulative("ctxeval/matching/rouge/strategies.py", "match"),
        ),
        (
            "    tokenise / encode (TokenCache.encode_record)",
            cumulative("ctxeval/matching/tokens.py", "encode_record"),
        ),
        ("      of which bytes.split", own("<method 'split' of 'bytes' objects>")),
        (
            "      of which tokens to characters (texts seen again)",
            cumulative("ctxeval/matching/tokens.py", "_code"),
        ),
        ("    rapidfuzz cdist (the LCS kernel)", cumulative("rapidfuzz/process_cpp.py", "cdist")),
        (
            "  judge the batch and every measure at every k (metrics/core.py, scoring._rows)",
            cumulative("ctxeval/scoring/driver.py", "_rows"),
        ),
        (
            "aggregate (Aggregator.add_scored)",
            cumulative("ctxeval/results/aggregation.py", "add_scored"),
        ),
        (
            f"cyclic GC pauses ({len(pauses)}; counted inside whichever function allocated)",
            sum(pauses),
        ),
    ]
    print_profile(
        f"Where ctxeval's time goes, {label} (cProfile, {len(records)} records, workers=1)",
        stages,
        raw,
        top,
    )


def bench_dataset(
    label: str, records: list[dict[str, Any]], args: argparse.Namespace, ce: Any
) -> dict[str, str]:
    """Run every contender and every check on one dataset, print its tables; return its ratios."""
    n = len(records)
    chunks = sum(len(r["retrieved_context"]) for r in records)
    distinct = len({c for r in records for c in r["retrieved_context"]})
    words = sum(len(c.split()) for r in records for c in r["retrieved_context"])
    truths = sum(len(r["ground_truth_context"]) for r in records)
    data = JsonLines(records)
    del records  # from here on, every contender reads its own fresh copy
    print(f"\n## {label}\n")
    print(
        f"data: {n} records (seed {args.seed}), {chunks / n:.1f} chunks of {words / chunks:.0f} "
        f"words on average, {truths / n:.2f} ground-truth sentences per record; "
        f"{distinct} distinct chunk texts among {chunks} retrieved "
        f"(each appears {chunks / distinct:.1f} times on average)"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f}")

    # ctxeval, single process and two processes
    t_ctx, result = best_of(args.repeats, lambda r: run_ctxeval(r, workers=1), data.reader())
    # Two processes need both cores free: on a shared machine, more tries find a quiet moment.
    t_ctx2, result2 = best_of(
        max(args.repeats, 5), lambda r: run_ctxeval(r, workers=2), data.reader()
    )
    assert result2.per_query == result.per_query, "workers=2 must equal workers=1 row for row"
    t_compat, _ = best_of(
        args.repeats,
        lambda r: run_ctxeval(r, compatible=True),
        data.reader(args.compat_records),
    )

    # continuous-eval, on a subset (it is slow)
    n_ce = args.ce_records
    t_ce, ce_rows = best_of(args.repeats, lambda r: run_continuous_eval(ce, r), data.reader(n_ce))
    # ctxeval on exactly those records too (fixed costs weigh more on a small input)
    t_ctx_ce, _ = best_of(args.repeats, run_ctxeval, data.reader(n_ce))
    ours_ce = run_ctxeval(data.read(n_ce), compatible=True).per_query
    ce_check = check_continuous_eval(ours_ce, ce_rows)

    # rouge-score loop, on a subset
    n_rs = args.rouge_records
    t_rs, rs_rows = best_of(args.repeats, run_rouge_score, data.reader(n_rs))
    t_ctx_rs, _ = best_of(args.repeats, run_ctxeval, data.reader(n_rs))
    rs_check = check_rouge_score(data.read(n_rs), result.per_query[:n_rs], rs_rows)

    # the pipeline without matching
    t_floor, _ = best_of(args.repeats, run_floor, data.reader())

    # bare kernel on pre-tokenised, interned input
    prepared = pretokenise(data.read())
    t_kernel, _ = best_of(args.repeats, run_kernel, lambda: prepared)

    print(f"load average after: {os.getloadavg()[0]:.2f}\n")

    rows = [
        ("ctxeval, workers=1", n, t_ctx),
        ("ctxeval, workers=2", n, t_ctx2),
        ("ctxeval, scorer='py-rouge', convention='continuous_eval'", args.compat_records, t_compat),
        ("continuous-eval PrecisionRecallF1 + RankedRetrievalMetrics", n_ce, t_ce),
        ("rouge-score loop (RougeScorer(['rougeL']), every pair)", n_rs, t_rs),
        ("bare kernel: rapidfuzz cdist(LCSseq) on pre-tokenised ints", n, t_kernel),
        ("ctxeval's floor: the same run, a strategy matching nothing at no cost", n, t_floor),
    ]
    qps = {label: count / seconds for label, count, seconds in rows}
    print(f"### Throughput (single process unless noted): {label}\n")
    print("| implementation | records | seconds | queries/s | ms/query |")
    print("|---|---:|---:|---:|---:|")
    for row_label, count, seconds in rows:
        print(
            f"| {row_label} | {count} | {seconds:.3f} | {count / seconds:,.0f} | "
            f"{1000 * seconds / count:.3f} |"
        )
    ctx = qps["ctxeval, workers=1"]
    ce_qps = qps["continuous-eval PrecisionRecallF1 + RankedRetrievalMetrics"]
    rs_qps = qps["rouge-score loop (RougeScorer(['rougeL']), every pair)"]
    kernel = qps["bare kernel: rapidfuzz cdist(LCSseq) on pre-tokenised ints"]
    compat_qps = qps["ctxeval, scorer='py-rouge', convention='continuous_eval'"]

    def verdict(value: float, target: float) -> str:
        return "met" if value >= target else "NOT met"

    print(f"\n### Ratios (same run): {label}\n")
    print("| ratio | value | target | |")
    print("|---|---:|---:|---|")
    print(
        f"| ctxeval / continuous-eval (queries/s) | {ctx / ce_qps:,.0f}x | >= 300x | "
        f"{verdict(ctx / ce_qps, 300)} |"
    )
    print(
        f"| ctxeval / rouge-score loop (queries/s) | {ctx / rs_qps:,.0f}x | >= 100x | "
        f"{verdict(ctx / rs_qps, 100)} |"
    )
    same_ce = n_ce / t_ctx_ce / ce_qps
    same_rs = n_rs / t_ctx_rs / rs_qps
    print(
        f"| same, ctxeval timed on continuous-eval's {n_ce} records only | "
        f"{same_ce:,.0f}x | >= 300x | {verdict(same_ce, 300)} |"
    )
    print(
        f"| same, ctxeval timed on the rouge-score loop's {n_rs} records only | "
        f"{same_rs:,.0f}x | >= 100x | {verdict(same_rs, 100)} |"
    )
    print(f"| ctxeval time / bare kernel time | {kernel / ctx:.1f}x | report | |")
    floor = qps["ctxeval's floor: the same run, a strategy matching nothing at no cost"]
    print(
        f"| ctxeval's floor time (no matching) / bare kernel time | {kernel / floor:.1f}x "
        "| report | |"
    )
    print(
        f"| ctxeval's matching time (run minus floor) / bare kernel time | "
        f"{(t_ctx - t_floor) / t_kernel:.1f}x | report | |"
    )
    print(f"| ctxeval workers=2 / workers=1 | {qps['ctxeval, workers=2'] / ctx:.2f}x | report | |")
    print(
        f"| ctxeval (py-rouge, continuous-eval numbers) / continuous-eval | "
        f"{compat_qps / ce_qps:,.0f}x | report | |"
    )
    print(f"\n### Checks: {label}\n")
    print(
        f"- ctxeval(scorer='py-rouge', convention='continuous_eval') vs continuous-eval on "
        f"{n_ce} records: {ce_check}"
    )
    print(f"- ctxeval default scorer vs rouge-score loop on {n_rs} records: {rs_check}")
    print("- workers=2 per-query rows == workers=1 per-query rows: identical")

    if args.profile:
        # Profile with only the input in memory, as in the timed runs: the results and token
        # lists built since would make every garbage collection pass longer.
        del result, result2, prepared, ce_rows, rs_rows, ours_ce
        gc.collect()
        profile_ctxeval(data.read(args.profile_records), top=15, label=label)
    return {
        "ctxeval queries/s": f"{ctx:,.0f}",
        "ctxeval workers=2 queries/s": f"{qps['ctxeval, workers=2']:,.0f}",
        "ctxeval / continuous-eval": f"{ctx / ce_qps:,.0f}x",
        "ctxeval / rouge-score loop": f"{ctx / rs_qps:,.0f}x",
        "ctxeval time / bare kernel time": f"{kernel / ctx:.1f}x",
        "floor time / bare kernel time": f"{kernel / floor:.1f}x",
        "matching time / bare kernel time": f"{(t_ctx - t_floor) / t_kernel:.1f}x",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        choices=("distinct", "corpus", "both"),
        default="both",
        help="corpus: chunks of a fixed chunked corpus, repeating across queries (realistic); "
        "distinct: no chunk ever repeats (worst case for the token cache); both (default)",
    )
    parser.add_argument("--records", type=int, default=10_000, help="records ctxeval scores")
    parser.add_argument(
        "--ce-records", type=int, default=100, help="continuous-eval subset (first N)"
    )
    parser.add_argument(
        "--rouge-records", type=int, default=400, help="rouge-score loop subset (first N)"
    )
    parser.add_argument(
        "--compat-records",
        type=int,
        default=2_000,
        help="records for ctxeval's continuous-eval-compatible (py-rouge) row",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="also cProfile ctxeval")
    parser.add_argument("--profile-records", type=int, default=5_000)
    parser.add_argument(
        "--same-process",
        type=int,
        default=0,
        metavar="RUNS",
        help="only evaluate each dataset's records RUNS times in one process, token cache kept",
    )
    args = parser.parse_args()
    if not args.same_process and args.records < max(
        args.ce_records, args.rouge_records, args.compat_records
    ):
        parser.error("--records must be at least --ce-records, --rouge-records, --compat-records")
    names = ["corpus", "distinct"] if args.data == "both" else [args.data]

    print_machine()
    if args.same_process:
        for name in names:
            label, generate = DATASETS[name]
            same_process_runs(label, generate(args.records, seed=args.seed), args.same_process)
        return
    ce = continuous_eval_module()
    summaries = {}
    for name in names:
        label, generate = DATASETS[name]
        summaries[label] = bench_dataset(label, generate(args.records, seed=args.seed), args, ce)
        gc.collect()

    if len(summaries) > 1:
        print("\n## Both datasets (same run; details in the tables above)\n")
        keys = list(next(iter(summaries.values())))
        print("| dataset | " + " | ".join(keys) + " |")
        print("|---|" + "---:|" * len(keys))
        for label, summary in summaries.items():
            print(f"| {label} | " + " | ".join(summary.values()) + " |")


if __name__ == "__main__":
    main()
