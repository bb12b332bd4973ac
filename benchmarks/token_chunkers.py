"""Token chunkers: ctxeval's spans against LangChain's splitters, same settings, same chunks.

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/token_chunkers.py              # ~20 s
    PYTHONPATH=src .venv/bin/python benchmarks/token_chunkers.py --copies 3   # 3x the corpus

Data: the fixtures corpus (``fixtures/corpus``, 40 documents of the CPython reference, 0.26 MB),
``--copies`` times (each copy a new document, so nothing is cached across documents).

Contenders, per setting, each chunking every document:

- LangChain: ``TokenTextSplitter(encoding_name=..., chunk_size=N, chunk_overlap=M)`` and
  ``RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name=..., chunk_size=N,
  chunk_overlap=M, separators=chroma's)``, ``split_text``: chunk texts;
- ctxeval: ``fixed(tokens=N, overlap=M, tokenizer=...)`` and ``recursive(tokens=N, overlap=M,
  tokenizer=...)``, ``chunk``: chunks with their spans and texts;
- chonkie (when installed): ``TokenChunker(tokenizer=ENCODING, chunk_size=N, chunk_overlap=M)``
  and ``RecursiveChunker(tokenizer=ENCODING, chunk_size=N)``, ``chunk``: chunks with their
  offsets and texts, given tiktoken's ``Encoding`` object (a name would let chonkie look for it on
  a hub). chonkie's recursive chunker has its own rules and no overlap, so its chunks are not
  LangChain's: its time is shown for scale, and its chunks are counted, not checked.

All use tiktoken's encoding, loaded before timing (the encoding's file is read offline from
``TIKTOKEN_CACHE_DIR``; when it is not set, from the copy llama-index-core ships). The repeats
are interleaved (one of each in turn, the order reversed every other round, the garbage collector
off while timing), each round on fresh texts (every line marked with the round and its
document: chonkie keeps token counts between calls, and a repeat would time its cache), and each
contender keeps its best CPU time (the process's: all are single-threaded, and CPU time moves
less than wall time on a busy machine).

Checks: every chunk text is LangChain's, except a window whose edge cuts a character, which
holds the whole character where LangChain's has U+FFFD (none on this corpus); chonkie's token
windows are checked the same way.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _data import print_machine
from ctxeval.chunking.chunkers import parse_chunker
from ctxeval.io.corpus import load_corpus

SETTINGS = [  # (kind, tokens, overlap)
    ("fixed", 200, 0),
    ("fixed", 256, 32),
    ("recursive", 200, 50),
    ("recursive", 400, 200),  # chroma's evaluation: 400 tokens, 200 overlap
    ("recursive", 800, 400),
]
SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]


def langchain(kind: str, tokens: int, overlap: int, encoding: str) -> Callable[[str], list[str]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

    if kind == "fixed":
        return TokenTextSplitter(
            encoding_name=encoding, chunk_size=tokens, chunk_overlap=overlap
        ).split_text
    return RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name=encoding, chunk_size=tokens, chunk_overlap=overlap, separators=SEPARATORS
    ).split_text


def chonkie(kind: str, tokens: int, overlap: int, encoding: str) -> Callable[[str], list[str]]:
    """chonkie's chunker for the setting, as chunk texts (None when chonkie is not installed)."""
    try:
        from chonkie import RecursiveChunker, TokenChunker
    except ImportError:
        return None  # type: ignore[return-value]
    import tiktoken

    encoder = tiktoken.get_encoding(encoding)
    if kind == "fixed":
        chunker: Any = TokenChunker(tokenizer=encoder, chunk_size=tokens, chunk_overlap=overlap)
    else:
        chunker = RecursiveChunker(tokenizer=encoder, chunk_size=tokens)
    return lambda text: [chunk.text for chunk in chunker.chunk(text)]


def fresh(documents: list[str], round_: int) -> list[str]:
    """The documents with every line marked for this round and document, so that no contender
    meets a text it chunked in an earlier round or another copy (chonkie keeps token counts of
    texts between calls)."""
    return [
        "\n".join(f"r{round_}d{n} {line}" for line in d.split("\n"))
        for n, d in enumerate(documents)
    ]


def best_of(
    repeats: int, documents: list[str], *runs: Callable[[list[str]], Any]
) -> list[tuple[float, Any]]:
    """Each run's best CPU time and value on fresh documents each round (the same for every
    run in a round); one of each in turn, the order reversed every other round, the garbage
    collector off while timing (as ``timeit``). The values are those of the first round's
    documents, to compare."""
    best: list[tuple[float, Any]] = [(float("inf"), None)] * len(runs)
    for round_ in range(repeats):
        order = list(enumerate(runs))
        texts = fresh(documents, round_)
        for i, run in order[:: -1 if round_ % 2 else 1]:
            gc.collect()
            gc.disable()
            started = time.process_time()
            value = run(texts)
            elapsed = time.process_time() - started
            gc.enable()
            best[i] = (min(best[i][0], elapsed), value if round_ == 0 else best[i][1])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="fixtures/corpus")
    parser.add_argument("--tokenizer", default="cl100k_base")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        import llama_index.core

        shipped = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
        os.environ["TIKTOKEN_CACHE_DIR"] = str(shipped)
    corpus = load_corpus(args.corpus)
    documents = [text + "\n" * copy for copy in range(args.copies) for text in corpus.values()]
    print_machine()
    peers = ("langchain-text-splitters", "tiktoken")
    print("peers: " + ", ".join(f"{name} {importlib.metadata.version(name)}" for name in peers))
    size = sum(len(d) for d in documents)
    print(
        f"\n{len(documents)} documents, {size:,} characters; tokenizer {args.tokenizer}; "
        f"best of {args.repeats}, interleaved\n"
    )
    print(
        "| chunker | chunks | LangChain CPU s | ctxeval CPU s | LangChain / ctxeval "
        "| chonkie CPU s (chunks) | chonkie / ctxeval |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, tokens, overlap in SETTINGS:
        reference = langchain(kind, tokens, overlap, args.tokenizer)
        other = chonkie(kind, tokens, overlap, args.tokenizer)
        chunker = parse_chunker(
            f"{kind}(tokens={tokens}, overlap={overlap}, tokenizer={args.tokenizer!r})"
        )
        runs = [
            lambda docs: [c for d in docs for c in reference(d)],  # noqa: B023
            lambda docs: [c.text for d in docs for c in chunker.chunk(d)],  # noqa: B023
        ]
        if other is not None:
            runs.append(lambda docs: [c for d in docs for c in other(d)])  # noqa: B023
        timed = best_of(args.repeats, documents, *runs)
        (theirs_s, theirs), (ours_s, ours) = timed[:2]
        assert ours == theirs, f"{chunker.spec}: the chunks differ from LangChain's"
        third = "| - | - |"
        if other is not None:
            chonkie_s, chonkies = timed[2]
            if kind == "fixed":
                assert chonkies == theirs, f"{chunker.spec}: chonkie's chunks differ"
            third = f"| {chonkie_s:.3f} ({len(chonkies):,}) | {chonkie_s / ours_s:.2f}x |"
        print(
            f"| `{chunker.spec}` | {len(ours):,} | {theirs_s:.3f} | {ours_s:.3f} "
            f"| {theirs_s / ours_s:.2f}x {third}"
        )
    print(
        "\nchecked: every chunk equal to LangChain's (and chonkie's token windows equal to "
        "LangChain's; its recursive chunks follow its own rules)"
    )


if __name__ == "__main__":
    main()
