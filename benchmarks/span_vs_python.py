"""Span measures: ctxeval's vectorised core against plain Python over interval lists.

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/span_vs_python.py          # ~30 s
    PYTHONPATH=src .venv/bin/python benchmarks/span_vs_python.py --queries 20000 --repeats 5

Data: the fixtures corpus (``fixtures/corpus``, the CPython reference documentation) chunked
with ``fixed(chars=400, overlap=0)`` (``--chunker`` for another spec), and ``--queries``
synthetic queries (seeded): each names a document, holds 1-3 excerpts of 40-400 characters of
it, and retrieves ``--depth`` chunks, about half of them from its own document, in random order.

Contenders, both from the same spans, at every cut-off of ``--k``, all four measures
(span precision, recall, IoU, F1):

- ctxeval: from the records' spans (``RecordSpans``, what an evaluation holds after reading),
  ``SpanBatch.from_records`` (the conversion to arrays, included) and the core's measures, in
  both conventions (``union``, ctxeval's default, and ``chroma``);
- plain Python, the way chroma's chunking_evaluation computes them: per query, loops over the
  chunks and excerpts with its ``union_ranges``, ``intersect_two_ranges``, ``sum_of_ranges``
  and ``difference`` (copied from chroma, MIT License, Copyright (c) 2024 Brandon Smith); for the
  union convention the same helpers per document.

The contenders' repeats are interleaved (one of each in turn) and each keeps its best time.
"ctxeval core" times the measures from the batch's arrays (every cut-off and measure, sorting
included) on the numpy path; "compiled" the same with the numba kernel of the ``fast`` extra
(``CTXEVAL_COMPILED=always``; loaded before the timings, its load time printed below the
table; without numba it is the numpy path again, and the line says why); "from span objects"
adds ``SpanBatch.from_records``, the conversion of the records'
``Span`` objects into those arrays (a Python pass over every span, done once per batch in an
evaluation).

Checks: every per-query value of both contenders is equal (exactly).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import print_machine
from ctxeval.chunking.chunkers import parse_chunker
from ctxeval.io.corpus import load_corpus
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.measures import Measure, make_measure
from ctxeval.metrics.reference import f1_score
from ctxeval.metrics.spans import compiled
from ctxeval.metrics.spans.core import SpanBatch
from ctxeval.records.values import Span

Query = tuple[str, list[tuple[int, int]], list[tuple[str, int, int]]]  # doc, excerpts, chunks
NAMES = ("span_precision", "span_recall", "span_iou", "span_f1")


# -- chroma's range helpers (chunking_evaluation/evaluation_framework/base_evaluation.py) --------


def sum_of_ranges(ranges: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in ranges)


def union_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    sorted_ranges = sorted(ranges, key=lambda x: x[0])
    merged_ranges = [sorted_ranges[0]]
    for current_start, current_end in sorted_ranges[1:]:
        last_start, last_end = merged_ranges[-1]
        if current_start <= last_end:
            merged_ranges[-1] = (last_start, max(last_end, current_end))
        else:
            merged_ranges.append((current_start, current_end))
    return merged_ranges


def intersect_two_ranges(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    start, end = max(a[0], b[0]), min(a[1], b[1])
    return (start, end) if start <= end else None


def difference(ranges: list[tuple[int, int]], target: tuple[int, int]) -> list[tuple[int, int]]:
    result = []
    target_start, target_end = target
    for start, end in ranges:
        if end < target_start or start > target_end:
            result.append((start, end))
        elif start < target_start and end > target_end:
            result.append((start, target_start))
            result.append((target_end, end))
        elif start < target_start:
            result.append((start, target_start))
        elif end > target_end:
            result.append((target_end, end))
    return result


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def python_chroma(query: Query, k: int) -> tuple[float, float, float, float]:
    """chroma's _scores_from_dataset_and_retrievals for one question (zero denominators: 0)."""
    doc, references, chunks = query
    numerator_sets: list[tuple[int, int]] = []
    unused = list(references)
    for chunk_doc, chunk_start, chunk_end in chunks[:k]:
        if chunk_doc != doc:
            continue
        for reference in references:
            intersection = intersect_two_ranges((chunk_start, chunk_end), reference)
            if intersection is not None:
                unused = difference(unused, intersection)
                numerator_sets = union_ranges([intersection, *numerator_sets])
    numerator = sum_of_ranges(numerator_sets) if numerator_sets else 0
    recall_denominator = sum_of_ranges(references)
    precision_denominator = sum(end - start for _, start, end in chunks[:k])
    iou_denominator = precision_denominator + sum_of_ranges(unused)
    p = _ratio(numerator, precision_denominator)
    r = _ratio(numerator, recall_denominator)
    return p, r, _ratio(numerator, iou_denominator), f1_score(p, r)


def python_union(query: Query, k: int) -> tuple[float, float, float, float]:
    """ctxeval's default formulas with the same helpers: unions per document."""
    doc, references, chunks = query
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for chunk_doc, start, end in chunks[:k]:
        by_doc.setdefault(chunk_doc, []).append((start, end))
    merged = {name: union_ranges(ranges) for name, ranges in by_doc.items()}
    truth = union_ranges(references) if references else []
    retrieved = sum(sum_of_ranges(ranges) for ranges in merged.values())
    relevant = sum_of_ranges(truth)
    overlap = 0
    for chunk in merged.get(doc, []):
        for reference in truth:
            found = intersect_two_ranges(chunk, reference)
            if found is not None:
                overlap += found[1] - found[0]
    p, r = _ratio(overlap, retrieved), _ratio(overlap, relevant)
    return p, r, _ratio(overlap, retrieved + relevant - overlap), f1_score(p, r)


def make_queries(
    corpus: dict[str, str], chunker: str, count: int, depth: int, seed: int
) -> list[Query]:
    chunking = parse_chunker(chunker)
    chunks = {name: chunking.spans(text) for name, text in corpus.items()}
    every = [(name, s, e) for name, spans in chunks.items() for s, e in spans]
    rng = random.Random(seed)
    names = [name for name in corpus if len(corpus[name]) > 400]
    queries = []
    for _ in range(count):
        doc = rng.choice(names)
        size = len(corpus[doc])
        references = []
        for _ in range(rng.randint(1, 3)):
            width = rng.randint(40, 400)
            start = rng.randrange(0, size - width)
            references.append((start, start + width))
        own = [(doc, s, e) for s, e in chunks[doc]]
        picked = rng.sample(own, min(len(own), depth // 2))
        picked += rng.sample(every, depth - len(picked))
        rng.shuffle(picked)
        queries.append((doc, references, picked))
    return queries


def as_records(queries: list[Query]) -> list[RecordSpans]:
    """The spans as ctxeval's records carry them (built once, outside the timings)."""
    return [
        RecordSpans(
            tuple(Span(d, s, e) for d, s, e in chunks),
            tuple(Span(doc, s, e) for s, e in references),
        )
        for doc, references, chunks in queries
    ]


def measures(ks: list[int], convention: str) -> list[Measure]:
    return [make_measure(name, k, convention=convention) for k in ks for name in NAMES]


def ctxeval_values(records: list[RecordSpans], chosen: list[Measure]) -> list[Any]:
    return core_values(SpanBatch.from_records(records), chosen)


def load_kernel(batch: SpanBatch, chosen: list[Measure]) -> float:
    """Load the compiled kernel (numba's import, its cached machine code): the seconds taken."""
    started = time.perf_counter()
    compiled_values(batch, chosen[:1])
    return time.perf_counter() - started


def core_values(batch: SpanBatch, chosen: list[Measure]) -> list[Any]:
    """One column of values per measure and cut-off, computed from scratch on the numpy path."""
    with compiled.mode("never"):
        return _fresh(batch, chosen)


def compiled_values(batch: SpanBatch, chosen: list[Measure]) -> list[Any]:
    """The same with the compiled kernel (loaded beforehand, outside the timings)."""
    with compiled.mode("always"):
        return _fresh(batch, chosen)


def _fresh(batch: SpanBatch, chosen: list[Measure]) -> list[Any]:
    batch = replace(batch, cache={})  # a new object: none of its cached properties computed
    return [measure.values(batch) for measure in chosen]


def python_values(queries: list[Query], ks: list[int], convention: str) -> list[Any]:
    formula = python_chroma if convention == "chroma" else python_union
    rows = [[value for k in ks for value in formula(query, k)] for query in queries]
    return [list(column) for column in zip(*rows, strict=True)]


def same(ours: list[Any], theirs: list[Any]) -> bool:
    return [column.tolist() for column in ours] == theirs


def best_of(repeats: int, *runs: Callable[[], Any]) -> list[tuple[float, Any]]:
    """The best time and the value of each contender, their repeats interleaved (one of each in
    turn), so that every contender meets the same moments of a shared machine's load."""
    best: list[tuple[float, Any]] = [(float("inf"), None)] * len(runs)
    for _ in range(repeats):
        for i, run in enumerate(runs):
            started = time.perf_counter()
            value = run()
            best[i] = (min(best[i][0], time.perf_counter() - started), value)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="fixtures/corpus")
    parser.add_argument("--chunker", default="fixed(chars=400, overlap=0)")
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240604)
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    corpus = load_corpus(args.corpus)
    queries = make_queries(corpus, args.chunker, args.queries, args.depth, args.seed)
    records = as_records(queries)
    print_machine()
    print(
        f"\n{len(queries)} queries, {args.depth} chunks each ({args.chunker}), "
        f"{len(corpus)} documents; k = {ks}; 4 measures; best of {args.repeats}\n"
    )
    batch = SpanBatch.from_records(records)
    load = load_kernel(batch, measures(ks, "union"))
    print(
        "| convention | plain Python s | ctxeval core s | ratio | compiled s | ratio "
        "| ctxeval from span objects s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for convention in ("union", "chroma"):
        chosen = measures(ks, convention)
        (slow, theirs), (core, ours), (fast, kernel), (whole, again) = best_of(
            args.repeats,
            lambda: python_values(queries, ks, convention),  # noqa: B023
            lambda: core_values(batch, chosen),  # noqa: B023
            lambda: compiled_values(batch, chosen),  # noqa: B023
            lambda: ctxeval_values(records, chosen),  # noqa: B023
        )
        for found in (ours, kernel, again):
            assert same(found, theirs), f"{convention}: the numbers differ"
        print(
            f"| {convention} | {slow:.3f} | {core:.4f} | {slow / core:.0f}x | {fast:.4f} "
            f"| {slow / fast:.0f}x | {whole:.3f} | {slow / whole:.0f}x |"
        )
    with compiled.mode("always"):
        used = compiled.status()
    print(f"\ncompiled: {used}; its load (numba, cached machine code) {load:.2f} s")
    print("\nchecked: every per-query value equal in both conventions")


if __name__ == "__main__":
    main()
