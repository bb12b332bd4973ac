"""``ctxeval evaluate --run --qrels --format trec_eval`` against trec_eval's own output files
(tests/fixtures/trec_eval: trec_eval 10's test data and the outputs of its binary), line for
line: names, order, per-query lines (-q), relevance level (-l) and maximum retrieved (-M)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval.cli.trec_eval import DEFAULT_MEASURES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trec_eval"
RUN = FIXTURES / "results.test"

# trec_eval 10 rounds iprec_at_recall's levels with lround (see the fixtures' README).
TREC_EVAL_10 = [
    spec.replace(")", ", recall_rounding='trec_eval10')") if spec.startswith("iprec") else spec
    for _, spec in DEFAULT_MEASURES
]


def expected(name: str) -> list[str]:
    # ctxeval prints no runid line: the run's tag is not read.
    lines = (FIXTURES / name).read_text().splitlines()
    return [line for line in lines if not line.startswith("runid")]


def report(*args: str | Path) -> list[str]:
    done = ctxeval("evaluate", "--run", RUN, "--format", "trec_eval", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def measures(specs: list[str]) -> list[str]:
    return [option for spec in specs for option in ("-m", spec)]


def test_default_report_equals_trec_eval() -> None:
    got = report("--qrels", FIXTURES / "qrels.test", *measures(TREC_EVAL_10))
    assert got == expected("out.test")


def test_per_query_report_equals_trec_eval_q() -> None:
    got = report("--qrels", FIXTURES / "qrels.test", "-q", *measures(TREC_EVAL_10))
    assert got == expected("out.test.q")


def test_relevance_level_and_max_retrieved_equal_trec_eval() -> None:
    args = ("--qrels", FIXTURES / "qrels.rel_level", "-q", "-l", "2", "-M", "100")
    got = report(*args, *measures(TREC_EVAL_10))
    assert got == expected("out.test.q.l2.M100")
    assert (
        report(*args, "--max-retrieved", "100", "--relevance-level", "2")[-28:]
        == (report(*args)[-28:])
    )


def test_without_measures_the_report_is_trec_eval_9s() -> None:
    # The default iprec_at_recall rounding is pytrec_eval's (trec_eval 9): two of the eleven
    # levels differ from trec_eval 10 on this data, at the fourth decimal.
    got = report("--qrels", FIXTURES / "qrels.test")
    want = expected("out.test")
    assert [line.split("\t")[0] for line in got] == [line.split("\t")[0] for line in want]
    differ = [g for g, w in zip(got, want, strict=True) if g != w]
    assert [line.split()[0] for line in differ] == [
        "iprec_at_recall_0.10",
        "iprec_at_recall_0.60",
    ]


def test_counts_and_gm_map_are_summary_aggregates() -> None:
    got = dict(
        line.split("\t")[0::2]
        for line in report("--qrels", FIXTURES / "qrels.test", "-m", "num_q", "-m", "gm_map")
    )
    assert {name.strip(): value for name, value in got.items()} == {
        "num_q": "3",
        "gm_map": "0.1051",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-q"], "-q/--per-query prints trec_eval's per-query lines: add --format trec_eval"),
        (["-M", "0"], "Invalid value for '-M' / '--max-retrieved'"),
        (["-l", "0"], "Invalid value for '-l' / '--relevance-level'"),
    ],
)
def test_flag_errors(args: list[str], message: str) -> None:
    done = ctxeval("evaluate", "--run", RUN, "--qrels", FIXTURES / "qrels.test", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_trec_flags_refused_for_a_dataset(tmp_path: Path) -> None:
    data = tmp_path / "records.jsonl"
    data.write_text('{"retrieved_ids": ["a"], "relevant_ids": ["a"]}\n')
    done = ctxeval("evaluate", data, "-l", "2")
    assert done.returncode == 2
    assert "-l/--relevance-level and -M/--max-retrieved apply to --run/--qrels" in done.stderr
