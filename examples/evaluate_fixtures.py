"""Evaluate the example records in fixtures/ with RetrievalEvaluator and print the results.

    python examples/evaluate_fixtures.py fixtures/records.jsonl

The quick-start job until the CLI arrives: set and rank metrics with ROUGE-L chunk matching
(the Unicode tokenizer, because one record is Russian) at several cut-offs, macro and micro
averages, then the per-query rows; the result is also saved to results/fixtures.jsonl.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxeval import PrecisionRecallF1, RankedRetrievalMetrics, RetrievalEvaluator, RougeChunkMatch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path, help="JSONL/JSON/CSV/Parquet file, one record a query")
    parser.add_argument("-k", type=int, action="append", help="cut-off (repeatable)")
    parser.add_argument("--threshold", type=float, default=0.7, help="ROUGE-L recall threshold")
    parser.add_argument("--tokenizer", default="unicode", help="rouge | rouge-stem | unicode")
    parser.add_argument("--output", type=Path, default=Path("results/fixtures.jsonl"))
    args = parser.parse_args(argv)

    strategy = RougeChunkMatch(args.threshold, tokenizer=args.tokenizer)
    evaluator = RetrievalEvaluator(
        args.path, [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)]
    )
    result = evaluator.run(k=args.k or [1, 3, 5])
    print(result)
    print()
    shown = [key for key in result.aggregate if key.split("@")[0] in ("context_recall", "ndcg")]
    print(f"{'id':<6}" + "".join(f"{key:>18}" for key in shown))
    for row in result.per_query:
        print(f"{row['id']:<6}" + "".join(f"{row[key]:>18.3f}" for key in shown))
    print(f"\nsaved to {result.save(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
