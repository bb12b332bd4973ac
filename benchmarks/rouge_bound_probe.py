"""Would an upper bound on ROUGE-L recall, checked before the LCS, make matching faster?

Run from the repository root (numba installed for the kernel's rows):

    PYTHONPATH=src .venv/bin/python benchmarks/rouge_bound_probe.py            # ~1 min
    PYTHONPATH=src .venv/bin/python benchmarks/rouge_bound_probe.py --records 5000 --repeats 5

Where only the decision ``recall >= threshold`` is needed, two exact bounds rule a pair out
without its LCS: ``LCS(r, g) <= min(len r, len g)`` (the *length bound*, from the token counts)
and ``LCS(r, g) <= |tokens(r) ∩ tokens(g)|`` as multisets (the *multiset bound*, from a counting
pass). A pair is ruled out when ``bound / len g < threshold``. This probe measures, on both
benchmark datasets (``_data.corpus_records``, ``_data.text_records``; threshold 0.7):

1. how many pairs, ground truths (every pair of the column) and records (every pair) each bound
   rules out;
2. the Python path (``CTXEVAL_COMPILED=never``): per record, rapidfuzz's ``cdist`` on the
   record's match keys (what the bound could save, at most: every LCS of the record) against the
   cheapest Python ways to get the multiset bound (``collections.Counter`` per text; ``set`` per
   retrieved text, which bounds the LCS by the ground-truth tokens found in it, with their
   multiplicity: looser, no cheaper to beat) and the length bound (the lengths, in numpy);
3. the compiled kernel: the batch's time as it is, against the same records with every
   ground-truth word replaced by a token no chunk holds (same token counts): every retrieved
   token then misses the record's table and no LCS step runs, which is the most any bound inside
   the kernel could save (its counting pass would read the same tokens the lookups read).

CPU time (``time.process_time``), best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import LCSseq
from rapidfuzz.process import cdist

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import corpus, corpus_records, print_machine, text_records
from ctxeval import get_tokenizer
from ctxeval.matching.rouge import compiled
from ctxeval.matching.tokens import TokenCache

THRESHOLD = 0.7


def long_truths(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``text_records`` whose ground truths are 200-400-word windows of the prose, half of them
    holding one of the record's chunks: a shape where the length bound rules out every pair (no
    120-word chunk reaches 0.7 of a 200-word text) and each LCS step spans several 64-bit words.
    """
    words = corpus().words
    rng = random.Random(seed)
    records = text_records(n, seed=seed)
    for r in records:
        truths = []
        for _ in range(len(r["ground_truth_context"])):
            size = rng.randint(200, 400)
            start = rng.randrange(len(words) - size)
            truths.append(" ".join(words[start : start + size]))
        if rng.random() < 0.5:
            chunk = rng.choice(r["retrieved_context"])
            truths[0] = " ".join([*truths[0].split()[:100], chunk, *truths[0].split()[100:]])
        r["ground_truth_context"] = truths
    return records


def long_texts(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Long texts on both sides: 400-600-word chunks and 1-3 ground truths of 150-250 words, each
    a window of one of the record's chunks (relevant) or of the prose anywhere, half and half:
    each LCS step spans four 64-bit words, and the length bound rules nothing out."""
    words = corpus().words
    rng = random.Random(seed)
    records = text_records(n, seed=seed, chunk_words=(400, 600))
    for r in records:
        truths = []
        for _ in range(len(r["ground_truth_context"])):
            size = rng.randint(150, 250)
            if rng.random() < 0.5:
                host = rng.choice(r["retrieved_context"]).split()
                start = rng.randrange(len(host) - size)
                truths.append(" ".join(host[start : start + size]))
            else:
                start = rng.randrange(len(words) - size)
                truths.append(" ".join(words[start : start + size]))
        r["ground_truth_context"] = list(dict.fromkeys(truths))
    return records


DATASETS = {
    "corpus": corpus_records,
    "distinct": text_records,
    "long ground truths": long_truths,
    "long texts": long_texts,
}
Keys = tuple[list[list[Any]], list[list[Any]]]


def best(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def keyed(records: list[dict[str, Any]]) -> list[Keys]:
    """Every record's match keys, as the Python path makes them for texts seen once."""
    cache = TokenCache(get_tokenizer("rouge"))
    out = []
    for r in records:
        (chunks, truths), _ = cache.encode_record(r["retrieved_context"], r["ground_truth_context"])
        out.append((chunks, truths))
        cache.clear()
    return out


def lcs_all(prepared: list[Keys]) -> list[Any]:
    return [
        cdist(truths, chunks, scorer=LCSseq.similarity, processor=None)
        for chunks, truths in prepared
    ]


def multiset_counter(prepared: list[Keys]) -> list[list[list[int]]]:
    """The multiset bound of every pair: ``Counter`` of each text, then their intersection."""
    out = []
    for chunks, truths in prepared:
        g_counts = [collections.Counter(g) for g in truths]
        rows = []
        for r in chunks:
            r_count = collections.Counter(r)
            rows.append([sum((g & r_count).values()) for g in g_counts])
        out.append(rows)
    return out


def multiset_set(prepared: list[Keys]) -> list[list[list[int]]]:
    """A looser bound: the ground truth's tokens (with multiplicity) found in the chunk at all."""
    out = []
    for chunks, truths in prepared:
        rows = []
        for r in chunks:
            held = set(r)
            rows.append([sum(map(held.__contains__, g)) for g in truths])
        out.append(rows)
    return out


def length_bound(prepared: list[Keys]) -> list[Any]:
    out = []
    for chunks, truths in prepared:
        r_len = np.fromiter(map(len, chunks), np.int64, len(chunks))
        g_len = np.fromiter(map(len, truths), np.int64, len(truths))
        out.append(np.minimum(r_len[:, None], g_len[None, :]) < THRESHOLD * g_len[None, :])
    return out


def counts(prepared: list[Keys], bounds: list[list[list[int]]]) -> dict[str, float]:
    """Shares of pairs, ground truths and records that each bound rules out; and checks that
    neither bound ever rules out a relevant pair."""
    pairs = ruled_len = ruled_set = cols_set = cols = recs_set = relevant = 0
    for (chunks, truths), bound, lcs in zip(prepared, bounds, lcs_all(prepared), strict=True):
        g_len = np.array([len(g) for g in truths], dtype=np.float64)
        r_len = np.array([len(r) for r in chunks], dtype=np.float64)
        recall = lcs.T / g_len
        out_set = np.asarray(bound) < THRESHOLD * g_len
        out_len = np.minimum(r_len[:, None], g_len) < THRESHOLD * g_len
        hit = recall >= THRESHOLD
        assert not (hit & (out_set | out_len)).any(), "a bound ruled out a relevant pair"
        pairs += hit.size
        relevant += int(hit.sum())
        ruled_len += int(out_len.sum())
        ruled_set += int(out_set.sum())
        cols += len(truths)
        cols_set += int(out_set.all(axis=0).sum())
        recs_set += bool(out_set.all())
    return {
        "pairs": pairs,
        "relevant": relevant / pairs,
        "length": ruled_len / pairs,
        "multiset": ruled_set / pairs,
        "multiset, whole ground truths": cols_set / cols,
        "multiset, whole records": recs_set / len(prepared),
    }


def unmatchable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with every ground-truth word made a token no chunk holds (same counts)."""

    def blind(text: str) -> str:
        return re.sub("[A-Za-z0-9]+", lambda m: "zq" + m.group(), text)

    return [
        {**r, "ground_truth_context": list(map(blind, r["ground_truth_context"]))} for r in records
    ]


def kernel_rows(records: list[dict[str, Any]], repeats: int) -> tuple[float, float] | None:
    pairs = [(r["retrieved_context"], r["ground_truth_context"]) for r in records]
    blind = [(r["retrieved_context"], r["ground_truth_context"]) for r in unmatchable(records)]
    with compiled.mode("always"):
        if compiled.rouge_recall_records(pairs[:1]) is None:
            return None
        return (
            best(repeats, lambda: compiled.rouge_recall_records(pairs)),
            best(repeats, lambda: compiled.rouge_recall_records(blind)),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    n = args.records
    for name, make in DATASETS.items():
        records = json.loads(json.dumps(make(n, seed=0)))
        prepared = keyed(records)
        bounds = multiset_counter(prepared)
        assert bounds == multiset_counter(prepared)
        shares = counts(prepared, bounds)
        print(
            f"\n## {name}: {n} records, {shares['pairs']} pairs, "
            f"{shares['relevant']:.1%} relevant at {THRESHOLD}\n"
        )
        print("| bound | pairs ruled out | whole ground truths | whole records |")
        print("|---|---:|---:|---:|")
        print(f"| length: min(len r, len g) | {shares['length']:.1%} | | |")
        print(
            f"| multiset: shared tokens | {shares['multiset']:.1%} | "
            f"{shares['multiset, whole ground truths']:.1%} | "
            f"{shares['multiset, whole records']:.1%} |"
        )
        rows = [
            ("rapidfuzz cdist, every pair (the LCS the Python path computes)", lcs_all),
            ("multiset bound: Counter per text, intersections", multiset_counter),
            ("looser bound: a set per chunk, ground-truth tokens found", multiset_set),
            ("length bound (numpy, per record)", length_bound),
        ]
        print("\n| Python path, per record | µs (CPU, best) |")
        print("|---|---:|")
        for label, fn in rows:
            seconds = best(args.repeats, lambda fn=fn, p=prepared: fn(p))
            print(f"| {label} | {seconds / n * 1e6:.1f} |")
        found = kernel_rows(records, args.repeats)
        if found is None:
            print(f"\nkernel: {compiled.status()}")
            continue
        whole, blind = found
        print("\n| compiled kernel, per record | µs (CPU, best) |")
        print("|---|---:|")
        print(f"| the batch as it is (tokens, lookups, every LCS) | {whole / n * 1e6:.1f} |")
        print(
            "| ground truths no chunk shares (tokens, lookups, no LCS step) | "
            f"{blind / n * 1e6:.1f} |"
        )
        print(f"| the most a bound could save | {(whole - blind) / n * 1e6:.1f} |")


if __name__ == "__main__":
    main()
