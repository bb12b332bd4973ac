"""Dense retrieval: ctxeval's against the same model driven as a user would (docs/performance.md).

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/dense_vs_wordllama.py           # ~25 min quiet
    PYTHONPATH=src .venv/bin/python benchmarks/dense_vs_wordllama.py --quick   # ~30 s
    PYTHONPATH=src .venv/bin/python benchmarks/dense_vs_wordllama.py --user-questions 50

Data: the corpus and questions of ``benchmarks/harness.py`` (1.40 MB, 237 documents, 500
seeded questions), chunked as the harness chunks it (``--chunkers``: names of
``harness.CHUNKERS``; fixed 100-word windows and 3-sentence groups by default).

Contenders, each returning the top ``--k`` chunks of every question, over the same chunk texts
and questions, with the same WordLlama model (``l2_supercat``, 256 dimensions, loaded from its
wheel, nothing downloaded), loaded once before any timing:

- **user loop**: what wordllama's README suggests for ranking, once per question:
  ``wl.rank(question, chunks)[:k]`` (``wl.topk(question, chunks, k)`` is exactly that in
  wordllama 0.4: it calls ``rank`` and slices). Every call embeds every chunk again.
- **hand-written, embed once**: ``wl.embed(chunks, norm=True)`` once, then per question
  ``wl.embed(question, norm=True)``, one matrix-vector product and a stable ``argsort``: what
  a user who reads wordllama's ``embed`` would write; a peer for ctxeval's own overhead.
- **ctxeval**: the harness's dense retriever, ``searcher("dense", chunks)`` (a
  ``DenseRetriever``: the chunk texts embedded once, each distinct text once, rows normalised),
  then ``search(question, k)`` per question. Split into embedding (``searcher``: every chunk
  embedded) and search (the questions: each embedded, scored against every chunk, top k).

Fresh inputs: every timed repeat of every contender gets new string objects (chunk texts and
questions copied), and ctxeval a new ``DenseRetriever`` (an empty embedding cache), so nothing
embedded or hashed in one repeat is reused by the next. The contenders take turns: ctxeval
once, the hand-written loop once, then wordllama's loop on the next block of questions, for
``--repeats`` rounds, so that all three see the same load wherever it changes during the run
(this machine is shared). ctxeval's and the hand-written loop's best round is printed (and their
slowest); wordllama's loop asks every question once, its blocks' times added (each call does the
same work, so it needs no repeat). ``--user-questions N`` times it on the first N questions
only and scales its time to all of them; the tables say so when they are scaled. Wall time is
the headline; CPU time (``time.process_time``, every thread of the process) is printed beside
it, less moved by other processes' load.

Checks: for every question the user loop timed, its top-k chunk texts equal ctxeval's, in order;
where they differ, the difference is classified against float64 cosines of the same vectors:
"near-tie" if, rank by rank, the two lists' chunks score within ``--tie`` of each other (the
float32 products of the two sides round differently), else a disagreement, printed.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib.metadata
import logging
import os
import pstats
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import harness
from _data import print_machine, print_profile
from ctxeval.chunking.chunkers import Chunk, parse_chunker
from ctxeval.chunking.harness import chunk_corpus
from ctxeval.chunking.retrieval import searcher

TopK = list[str]  # the top-k chunk texts of one question, best first


def load_wordllama() -> Any:
    """WordLlama as a user loads it offline: from its wheel, downloads disabled (ctxeval's
    embedder loads it the same way, separately)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama  # configures the root logger when imported: undone

    root.handlers[:] = handlers
    root.setLevel(level)
    folder = os.path.dirname(str(wordllama.__file__))
    return wordllama.WordLlama.load(cache_dir=folder, disable_download=True)


def fresh(texts: Sequence[str]) -> list[str]:
    """New string objects with the same text (no hash or identity carried over)."""
    return [text.encode("utf-8").decode("utf-8") for text in texts]


@dataclass
class Timed:
    """One contender's timed runs over one chunking: wall and CPU seconds (with ctxeval's and
    the hand-written loop's split into embedding the chunks and searching), and its top-k."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    parts: list[tuple[float, float]] = field(default_factory=list)  # (embedding, search)
    top: list[TopK] = field(default_factory=list)

    def add(self, wall: float, cpu: float, top: list[TopK]) -> None:
        self.walls.append(wall)
        self.cpus.append(cpu)
        self.top = top

    def best(self) -> int:
        return min(range(len(self.walls)), key=self.walls.__getitem__)


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def user_loop(wl: Any, texts: list[str], questions: list[str], k: int, timed: Timed) -> None:
    """wordllama's own ranking, once per question: every chunk embedded again each time."""
    chunks, asked = fresh(texts), fresh(questions)
    wall, cpu = clocks()
    top = [[text for text, _ in wl.rank(question, chunks)[:k]] for question in asked]
    timed.add(time.perf_counter() - wall, time.process_time() - cpu, timed.top + top)


def embed_once(wl: Any, texts: list[str], questions: list[str], k: int, timed: Timed) -> None:
    chunks, asked = fresh(texts), fresh(questions)
    wall, cpu = clocks()
    matrix = wl.embed(chunks, norm=True)
    embedded = time.perf_counter()
    top = []
    for question in asked:
        scores = matrix @ wl.embed(question, norm=True)[0]
        top.append([chunks[i] for i in np.argsort(-scores, kind="stable")[:k]])
    done = time.perf_counter()
    timed.add(done - wall, time.process_time() - cpu, top)
    timed.parts.append((embedded - wall, done - embedded))


def ctxeval_dense(chunks: list[Chunk], questions: list[str], k: int, timed: Timed) -> None:
    texts = fresh([chunk.text for chunk in chunks])
    ours = [replace(chunk, text=text) for chunk, text in zip(chunks, texts, strict=True)]
    asked = fresh(questions)
    wall, cpu = clocks()
    search = searcher("dense", ours)  # a new DenseRetriever: an empty embedding cache
    embedded = time.perf_counter()
    rankings = [search(question, k) for question in asked]
    done = time.perf_counter()
    timed.add(done - wall, time.process_time() - cpu, [[texts[i] for i, _ in r] for r in rankings])
    timed.parts.append((embedded - wall, done - embedded))


@dataclass
class Agreement:
    identical: int = 0
    near_ties: int = 0
    differing: list[str] = field(default_factory=list)
    widest_tie: float = 0.0


def agreement(
    reference: Callable[[int], dict[str, float]],
    questions: list[str],
    ours: list[TopK],
    theirs: list[TopK],
    tie: float,
) -> Agreement:
    """Whether two contenders' top-k lists agree, question by question (see the docstring)."""
    found = Agreement()
    for number, (mine, other) in enumerate(zip(ours, theirs, strict=False)):
        if mine == other:
            found.identical += 1
            continue
        scores = reference(number)
        gaps = [abs(scores[a] - scores[b]) for a, b in zip(mine, other, strict=False)]
        if len(mine) == len(other) and max(gaps) <= tie:
            found.near_ties += 1
            found.widest_tie = max(found.widest_tie, max(gaps))
        else:
            found.differing.append(
                f"{questions[number]!r}: largest score gap {max(gaps):.2e} at rank "
                f"{gaps.index(max(gaps)) + 1}"
            )
    return found


def reference_scores(wl: Any, texts: list[str], questions: list[str]) -> Callable[[int], Any]:
    """float64 cosines of question ``n`` against every distinct chunk text, by text."""
    distinct = list(dict.fromkeys(texts))
    matrix = np.asarray(wl.embed(distinct), dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    def scores(number: int) -> dict[str, float]:
        vector = np.asarray(wl.embed(questions[number])[0], dtype=np.float64)
        cosines = matrix @ (vector / np.linalg.norm(vector))
        return dict(zip(distinct, cosines.tolist(), strict=True))

    return scores


def warm_up(wl: Any) -> None:
    """Load ctxeval's model and touch every path once, on texts no timed run uses."""
    warm = ["a warm-up text about nothing", "another warm-up text", "a third one"]
    searcher("dense", [Chunk("warm", 0, len(t), t) for t in warm])("warm-up question", 2)
    wl.rank("warm-up question", warm)
    wl.embed(warm, norm=True)


@dataclass
class Row:
    """One chunking's results."""

    name: str
    chunks: int
    distinct: int
    ours: Timed
    hand: Timed
    user: Timed
    checks: dict[str, Agreement]


def run_chunking(
    wl: Any, name: str, documents: dict[str, str], questions: list[str], args: Any
) -> Row:
    chunks = chunk_corpus(parse_chunker(harness.CHUNKERS[name]), documents)
    texts = [chunk.text for chunk in chunks]
    distinct = len(set(texts))
    print(f"\n{name} ({harness.CHUNKERS[name]}): {len(texts)} chunks, {distinct} distinct")
    ours, hand, user = Timed(), Timed(), Timed()
    start = 0
    for size in block_sizes(args.user_questions, args.repeats):
        # One repeat of each in turn, wordllama's loop on its next block of questions: all
        # three see the same load, wherever it changes during the run.
        ctxeval_dense(chunks, questions, args.k, ours)
        embed_once(wl, texts, questions, args.k, hand)
        user_loop(wl, texts, questions[start : start + size], args.k, user)
        start += size
        print(
            f"  ctxeval {ours.walls[-1]:.2f} s, hand-written {hand.walls[-1]:.2f} s, user loop "
            f"{user.walls[-1]:.2f} s on {size} questions",
            flush=True,
        )
    reference = reference_scores(wl, texts, questions)
    checks = {
        "user loop": agreement(reference, questions, ours.top, user.top, args.tie),
        "hand-written": agreement(reference, questions, ours.top, hand.top, args.tie),
    }
    if args.profile:
        profile_search(chunks, questions, args.k)
    return Row(name, len(texts), distinct, ours, hand, user, checks)


def block_sizes(count: int, rounds: int) -> list[int]:
    """How many of ``count`` questions wordllama's loop asks in each round."""
    block = -(-count // rounds)
    return [max(0, min(block, count - i * block)) for i in range(rounds)]


def per_question(walls: list[float], sizes: list[int]) -> str:
    rates = [wall / size * 1e3 for wall, size in zip(walls, sizes, strict=False) if size]
    return f"{min(rates):,.0f}-{max(rates):,.0f}"


def seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values) + " s"


def profile_search(chunks: list[Chunk], questions: list[str], k: int) -> None:
    """cProfile of ctxeval's search over ``questions`` (the chunks embedded beforehand)."""
    search = searcher("dense", chunks)
    profiler = cProfile.Profile()
    clock = time.perf_counter()
    profiler.enable()
    for question in fresh(questions):
        search(question, k)
    profiler.disable()
    spent = time.perf_counter() - clock
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    print_profile("ctxeval's search, profiled", [("search (questions)", spent)], raw, 12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunkers", default="fixed,sentences", help="of harness.CHUNKERS")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="ctxeval and hand-written")
    parser.add_argument("--user-questions", type=int, help="time the user loop on the first N")
    parser.add_argument("--tie", type=float, default=1e-6, help="score gap taken as a tie")
    parser.add_argument("--profile", action="store_true", help="+ cProfile of ctxeval's search")
    parser.add_argument(
        "--blas-threads", type=int, help="limit BLAS to N threads for every contender"
    )
    parser.add_argument("--quick", action="store_true", help="20 questions, fixed, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.questions, args.chunkers, args.repeats = 20, "fixed", 1
    documents = harness.corpus(seed=args.seed)
    asked = harness.questions(documents, args.questions, seed=args.seed)
    questions = [str(question["question"]) for question in asked]
    args.user_questions = min(args.user_questions or len(questions), len(questions))
    size = sum(len(t.encode("utf-8")) for t in documents.values())
    print_machine()
    print(f"wordllama {importlib.metadata.version('wordllama')}")
    print(f"load average at start: {os.getloadavg()}")
    print(f"corpus: {len(documents)} documents, {size / 1e6:.2f} MB; {len(questions)} questions")
    print(f"k = {args.k}; user loop timed on {args.user_questions} questions")
    with contextlib.ExitStack() as stack:
        if args.blas_threads:
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(args.blas_threads, user_api="blas"))
        print(f"BLAS during the run: {blas()}")
        wl = load_wordllama()
        warm_up(wl)
        rows = [
            run_chunking(wl, name, documents, questions, args) for name in args.chunkers.split(",")
        ]
    report(rows, len(questions), args)
    print(f"\nload average at end: {os.getloadavg()}")
    sys.stdout.flush()


def blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (no threadpoolctl)"
    return "; ".join(
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, "
        f"{i.get('num_threads')} threads)"
        for i in threadpool_info()
    )


def report(rows: list[Row], count: int, args: argparse.Namespace) -> None:
    scale = count / args.user_questions
    scaled = f", its time on {args.user_questions} scaled to {count}" if scale != 1 else ""
    print(f"\n### Seconds, {count} questions, top {args.k}\n")
    print(
        f"Wall seconds. ctxeval and hand-written: best of {args.repeats} (slowest in brackets); "
        f"user loop: every question once, in {args.repeats} blocks run between them{scaled}.\n"
    )
    print(
        "| chunking | chunks | user loop: `wl.rank` per question | hand-written: embed once "
        "| ctxeval | ctxeval: embedding chunks | ctxeval: search (questions) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        best = row.ours.best()
        embed, search = row.ours.parts[best]
        print(
            f"| {row.name} | {row.chunks:,} ({row.distinct:,} distinct) "
            f"| {sum(row.user.walls) * scale:.1f} "
            f"| {min(row.hand.walls):.2f} ({max(row.hand.walls):.2f}) "
            f"| {row.ours.walls[best]:.2f} ({max(row.ours.walls):.2f}) | {embed:.2f} "
            f"| {search:.2f} ({search / count * 1e3:.2f} ms a question) |"
        )
    print("\n### Ratios (same run)\n")
    print(
        "| chunking | user loop / ctxeval, wall (speed-up) | same, CPU | hand-written / ctxeval "
        "| user loop, ms a question (its blocks) | ctxeval, ms a question (chunks' embedding "
        "included) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        user, ours = sum(row.user.walls) * scale, min(row.ours.walls)
        cpu = sum(row.user.cpus) * scale / min(row.ours.cpus)
        blocks = per_question(row.user.walls, block_sizes(args.user_questions, args.repeats))
        print(
            f"| {row.name} | **{user / ours:,.0f}x** | {cpu:,.0f}x "
            f"| {min(row.hand.walls) / ours:.2f}x | {user / count * 1e3:,.0f} ({blocks}) "
            f"| {ours / count * 1e3:.2f} |"
        )
    print(f"\n### Top-{args.k} agreement with ctxeval (chunk texts, in order)\n")
    print(
        f"| chunking | against | questions | identical | near-ties only (gap <= {args.tie:g}) "
        "| disagree | widest near-tie gap |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        for peer, found in row.checks.items():
            total = found.identical + found.near_ties + len(found.differing)
            print(
                f"| {row.name} | {peer} | {total} | {found.identical} | {found.near_ties} "
                f"| {len(found.differing)} | {found.widest_tie:.1e} |"
            )
            for line in found.differing[:5]:
                print(f"  - {row.name}, {peer}: {line}")


if __name__ == "__main__":
    main()
