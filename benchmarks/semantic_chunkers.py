"""Semantic chunkers: how long ``semantic(...)`` and ``cluster(...)`` take on a corpus, and how
much of it is the embedder.

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/semantic_chunkers.py   # ~40 s

Data: the fixtures corpus (``fixtures/corpus``, 40 documents of the CPython reference, 0.26 MB).

Each setting chunks every document with a fresh chunker (so nothing is cached from the previous
repeat), WordLlama loaded before timing (its load is timed once, on its own). The embedder is
WordLlama wrapped in a function that times its calls, so the table says how much of each run is
the model's (tokenising and pooling) and how much ctxeval's (sentences or pieces, distances,
thresholds or the dynamic program, spans). Wall time, best of ``--repeats``: WordLlama's tokenizer
may use both cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import print_machine
from ctxeval.chunking.chunkers import CHUNKERS
from ctxeval.foundation.specs import parse_spec
from ctxeval.io.corpus import load_corpus
from ctxeval.retrieval.embedders import as_embedder

SETTINGS = [
    "semantic(percentile=95, buffer=1)",
    "semantic(percentile=95, buffer=1, max_tokens=200)",
    "semantic(standard_deviation=3, buffer=1)",
    "cluster(max_tokens=400, piece_tokens=50)",
    "cluster(max_tokens=200, piece_tokens=50)",
    "cluster(max_tokens=400, piece_tokens=50, tokenizer='cl100k_base')",
]


class Timed:
    """WordLlama, with the wall time spent in it and the texts it embedded counted."""

    name = "wordllama"

    def __init__(self) -> None:
        self.embed = as_embedder("wordllama")
        self.seconds, self.texts = 0.0, 0

    def __call__(self, texts: list[str]) -> Any:
        started = time.perf_counter()
        vectors = self.embed(texts)
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return vectors


def run(spec: str, documents: dict[str, str], repeats: int) -> tuple[float, Timed, int]:
    """The best wall time of chunking every document, its embedder, and the number of chunks."""
    best: tuple[float, Timed, int] = (float("inf"), Timed(), 0)
    for _ in range(repeats):
        embedder = Timed()
        parsed = parse_spec(spec, what="chunker")
        chunker = CHUNKERS[parsed.name](**parsed.kwargs, embedder=embedder)
        started = time.perf_counter()
        chunks = sum(len(chunker.chunk(text, name)) for name, text in documents.items())
        elapsed = time.perf_counter() - started
        if elapsed < best[0]:
            best = (elapsed, embedder, chunks)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="fixtures/corpus")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        import llama_index.core

        shipped = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
        os.environ["TIKTOKEN_CACHE_DIR"] = str(shipped)
    documents = load_corpus(args.corpus)
    print_machine()
    started = time.perf_counter()
    as_embedder("wordllama")(["load the model"])
    print(f"\nWordLlama import and load: {time.perf_counter() - started:.2f} s")
    size = sum(len(d) for d in documents.values())
    print(f"{len(documents)} documents, {size:,} characters; wall time, best of {args.repeats}\n")
    print("| chunker | chunks | texts embedded | seconds | in WordLlama | ctxeval's own |")
    print("|---|---:|---:|---:|---:|---:|")
    for spec in SETTINGS:
        seconds, embedder, chunks = run(spec, documents, args.repeats)
        print(
            f"| `{spec}` | {chunks:,} | {embedder.texts:,} | {seconds:.2f} | "
            f"{embedder.seconds:.2f} | {seconds - embedder.seconds:.2f} |"
        )


if __name__ == "__main__":
    main()
