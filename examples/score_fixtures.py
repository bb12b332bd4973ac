"""Score the example records in fixtures/ with ctxeval's metrics and print a table.

    python examples/score_fixtures.py fixtures/records.jsonl

This is the quick-start job until the dataset evaluator and CLI arrive: every record is scored as
``metric(**datum)`` with ROUGE-L chunk matching (rouge-score's tokenizer and, for records that are
not in English, the Unicode tokenizer) and the rank metrics, and the means are printed last.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from ctxeval import (
    EmptyTokensWarning,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RougeChunkMatch,
)

COLUMNS = [
    ("context_precision", "P"),
    ("context_recall", "R"),
    ("context_f1", "F1"),
    ("average_precision", "AP"),
    ("reciprocal_rank", "RR"),
    ("ndcg", "nDCG"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="JSONL file, one record per line")
    parser.add_argument("--threshold", type=float, default=0.7, help="ROUGE-L recall threshold")
    parser.add_argument("--tokenizer", default="unicode", help="rouge | rouge-stem | unicode")
    args = parser.parse_args(argv)

    strategy = RougeChunkMatch(args.threshold, tokenizer=args.tokenizer)
    metrics = [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)]
    rows = []
    with args.path.open(encoding="utf-8") as lines:
        for line_no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            datum = json.loads(line)
            scores: dict[str, float | None] = {}
            with warnings.catch_warnings():
                warnings.simplefilter("error", EmptyTokensWarning)
                for metric in metrics:
                    scores.update(metric(**datum))
            rows.append((datum.get("id", f"line {line_no}"), scores))

    print(f"{len(rows)} records from {args.path}, matched with {strategy.spec}")
    header = f"{'id':<8}" + "".join(f"{short:>8}" for _, short in COLUMNS)
    print(header)
    print("-" * len(header))
    for record_id, scores in rows:
        print(f"{record_id:<8}" + "".join(f"{scores[key]:>8.3f}" for key, _ in COLUMNS))
    print("-" * len(header))
    means = {key: sum(s[key] or 0.0 for _, s in rows) / len(rows) for key, _ in COLUMNS}
    print(f"{'mean':<8}" + "".join(f"{means[key]:>8.3f}" for key, _ in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
