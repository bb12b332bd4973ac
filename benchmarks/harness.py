"""The chunking harness end to end on a ~1.5 MB corpus with ~500 questions (docs/performance.md).

Corpus: the CPython language-reference topics that ship with the interpreter
(``pydoc_data.topics``, 79 documents, ~465 KB), plus two variants of each with its paragraphs in
a seeded random order (``v1/<topic>``, ``v2/<topic>``): ~1.4 MB, offline and deterministic.
Questions: seeded; each picks a document, a paragraph and one or two consecutive sentences of it
as the excerpt (with its span), and asks about three of its longer words.

Three chunkers (fixed 100-word windows with overlap 10, 3-sentence groups, paragraphs of at most
100 words), BM25, k = 1, 3, 5, 10, 20 and budgets of 200, 500 and 1000 words; prints the time of
each step and the total.

    PYTHONPATH=src .venv/bin/python benchmarks/harness.py [--questions 500] [--seed 0]
    PYTHONPATH=src .venv/bin/python benchmarks/harness.py --grid   # x {bm25, dense, rrf}

``--grid`` runs every chunker with BM25, the offline dense retriever (WordLlama) and their
reciprocal-rank fusion: nine runs, embedding included (no vector kept from an earlier run).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from pydoc_data.topics import topics

from ctxeval.chunking import compare_chunkers
from ctxeval.chunking.outputs import OutputPlan
from ctxeval.chunking.report import write_harness_report

CHUNKERS = {
    "fixed": "fixed(words=100, overlap=10)",
    "sentences": "sentences(n=3)",
    "paragraphs": "paragraphs(max_words=100)",
}
KS: list[int | str] = [1, 3, 5, 10, 20, "200w", "500w", "1000w"]
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.S)
_SENTENCE = re.compile(r"[^.!?]*[A-Za-z][^.!?]*[.!?]")
_WORD = re.compile(r"[A-Za-z]{6,}")


def corpus(variants: int = 2, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    documents = {name: text for name, text in sorted(topics.items())}
    for variant in range(1, variants + 1):
        for name, text in sorted(topics.items()):
            paragraphs = text.split("\n\n")
            rng.shuffle(paragraphs)
            documents[f"v{variant}/{name}"] = "\n\n".join(paragraphs)
    return documents


def questions(documents: dict[str, str], count: int, seed: int = 0) -> list[dict[str, object]]:
    rng = random.Random(seed)
    names = sorted(documents)
    out: list[dict[str, object]] = []
    while len(out) < count:
        name = rng.choice(names)
        text = documents[name]
        paragraphs = [m for m in _PARAGRAPH.finditer(text) if len(m.group().split()) >= 30]
        if not paragraphs:
            continue
        paragraph = rng.choice(paragraphs)
        sentences = list(_SENTENCE.finditer(paragraph.group()))
        if not sentences:
            continue
        first = rng.randrange(len(sentences))
        last = min(first + rng.randint(0, 1), len(sentences) - 1)
        start = paragraph.start() + sentences[first].start()
        end = paragraph.start() + sentences[last].end()
        while text[start].isspace():
            start += 1
        words = sorted(set(_WORD.findall(text[start:end])))
        if len(words) < 3:
            continue
        asked = " ".join(rng.sample(words, 3)).lower()
        out.append(
            {
                "id": f"q{len(out) + 1:04d}",
                "question": f"What does the documentation say about {asked}?",
                "excerpts": [{"doc": name, "start": start, "end": end}],
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", action="store_true", help="x {bm25, dense, rrf(bm25, dense)}")
    args = parser.parse_args()
    retriever: object = "bm25"
    if args.grid:
        retriever = {"bm25": "bm25", "dense": "dense", "rrf": "rrf('bm25', 'dense')"}
    documents = corpus(seed=args.seed)
    asked = questions(documents, args.questions, seed=args.seed)
    size = sum(len(t.encode("utf-8")) for t in documents.values())
    print(f"corpus: {len(documents)} documents, {size / 1e6:.2f} MB; {len(asked)} questions")
    print(f"chunkers: {', '.join(CHUNKERS.values())}; retrievers: {retriever}; k = {KS}")
    started = time.perf_counter()
    outcome = compare_chunkers(documents, asked, CHUNKERS, k=KS, retriever=retriever)
    with tempfile.TemporaryDirectory() as tmp:
        clock = time.perf_counter()
        OutputPlan(Path(tmp) / "out", None, list(outcome.runs), False, ()).write(outcome)
        files = time.perf_counter() - clock
        clock = time.perf_counter()
        write_harness_report(Path(tmp) / "report.html", outcome)
        report = time.perf_counter() - clock
    total = time.perf_counter() - started
    steps = {k: v for k, v in outcome.timings.items() if k != "total"}
    steps.update({"files": files, "report": report})
    print("\n| step | seconds |\n|---|---:|")
    for step, seconds in steps.items():
        print(f"| {step} | {seconds:.2f} |")
    print(f"| **total** | **{total:.2f}** |")
    for name, run in outcome.runs.items():
        print(
            f"{name}: {run.statistics['chunks']} chunks, recall@10 "
            f"{run.result.aggregate['context_recall@10']:.4f}, recall@500w "
            f"{run.result.aggregate['context_recall@500w']:.4f}, ceiling "
            f"{run.attribution.ceiling:.4f}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
