"""``ctxeval evaluate --run --qrels --format trec_eval`` against trec_eval's own output files
(tests/fixtures/trec_eval: trec_eval 10's test data and the outputs of its binary), line for
line: names, order, per-query lines (-q), relevance level (-l) and maximum retrieved (-M)."""

from __future__ import annotations

import json
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
    return (FIXTURES / name).read_text().splitlines()


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


@pytest.mark.parametrize(
    ("qrels", "flags", "reference"),
    [
        ("qrels.test", [], "out.test"),
        ("qrels.test", ["-q"], "out.test.q"),
        ("qrels.rel_level", ["-q", "-l", "2", "-M", "100"], "out.test.q.l2.M100"),
    ],
)
def test_trec_eval_version_10_reproduces_its_reports(
    qrels: str, flags: list[str], reference: str
) -> None:
    # The flag, with trec_eval's default measures: trec_eval 10's own output, line for line.
    got = report("--qrels", FIXTURES / qrels, "--trec-eval-version", "10", *flags)
    assert got == expected(reference)
    # And it is the spec option, measure by measure.
    assert got == report("--qrels", FIXTURES / qrels, *flags, *measures(TREC_EVAL_10))
    assert report("--qrels", FIXTURES / qrels, "--trec-eval-version", "9", *flags) == report(
        "--qrels", FIXTURES / qrels, *flags
    )


def test_trec_eval_version_applies_to_named_iprec_measures() -> None:
    args = ("--qrels", FIXTURES / "qrels.test", "-m", "iprec_at_recall_0.60", "-m", "map")
    want = {line.split("\t")[0].strip(): line for line in expected("out.test")}
    got = report(*args, "--trec-eval-version", "10")
    assert got == [want["runid"], want["iprec_at_recall_0.60"], want["map"]]
    assert report(*args)[1] != want["iprec_at_recall_0.60"]  # trec_eval 9 differs there


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "map"], "--trec-eval-version 10 changes only how iprec_at_recall rounds"),
        (
            ["-m", "iprec_at_recall(recall=0.1, recall_rounding='trec_eval9')"],
            "sets recall_rounding='trec_eval9', and --trec-eval-version 10 asks for "
            "'trec_eval10'; leave recall_rounding out of -m",
        ),
    ],
)
def test_trec_eval_version_errors(args: list[str], message: str) -> None:
    done = ctxeval(
        "evaluate", "--run", RUN, "--qrels", FIXTURES / "qrels.test",
        "--trec-eval-version", "10", *args,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_trec_eval_version_on_a_dataset(tmp_path: Path) -> None:
    data = tmp_path / "records.jsonl"
    # Hits at ranks 1 and 4 of R = 3: recall 0.4 is 2 hits in trec_eval 9 (best precision from
    # rank 4 on: 2/4), 1 hit in trec_eval 10 (from rank 1 on: 1/1).
    record = {"retrieved_ids": ["a", "x", "y", "b"], "relevant_ids": ["a", "b", "c"]}
    data.write_text(json.dumps(record) + "\n")
    values = {}
    for version in ("9", "10"):
        done = ctxeval(
            "evaluate", data, "-m", "iprec_at_recall_0.40", "--trec-eval-version", version,
            "--format", "json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        values[version] = json.loads(done.stdout)["aggregate"]
    assert values["9"] == {"iprec_at_recall(recall=0.4)": 0.5}
    assert values["10"] == {"iprec_at_recall(recall=0.4, recall_rounding='trec_eval10')": 1.0}
    done = ctxeval("evaluate", data, "--trec-eval-version", "10")
    assert done.returncode == 2
    assert "no iprec_at_recall measure is evaluated" in done.stderr


def test_the_report_of_a_trec_run_lists_its_ids(tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    done = ctxeval("evaluate", "--run", RUN, "--qrels", FIXTURES / "qrels.test", "--report", page)
    assert done.returncode == 0, done.stderr
    text = page.read_text(encoding="utf-8")
    assert "retrieved items not available" not in text
    assert "top 10 of 500 retrieved ids, judged by the qrels" in text


def test_counts_and_gm_map_are_summary_aggregates() -> None:
    got = dict(
        line.split("\t")[0::2]
        for line in report("--qrels", FIXTURES / "qrels.test", "-m", "num_q", "-m", "gm_map")
    )
    assert {name.strip(): value for name, value in got.items()} == {
        "runid": "STANDARD",
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
    for flag in (["-l", "2"], ["-c"], ["--skip-missing"]):
        done = ctxeval("evaluate", data, *flag)
        assert done.returncode == 2
        assert "-c/--complete and --skip-missing apply to --run/--qrels" in done.stderr


def test_queries_missing_from_the_run_are_left_out_unless_c(tmp_path: Path) -> None:
    """trec_eval averages over the queries the run answered, and with -c over every judged
    query (a missing one scores 0). The run here answers q1 and q2 of three judged queries."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\nq2 Q0 d3 1 1.0 mine\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d2 1\nq2 0 d3 1\nq3 0 d9 1\n")

    def summary(*flags: str) -> dict[str, str]:
        done = ctxeval("evaluate", "--run", run, "--qrels", qrels, "--format", "trec_eval", *flags)
        assert done.returncode == 0, done.stderr
        return {line.split()[0]: line.split()[2] for line in done.stdout.splitlines()}

    # q1: relevant d2 at rank 2 (AP 0.5); q2: d3 at rank 1 (AP 1).
    default = summary()
    assert default["runid"] == "mine"
    assert (default["num_q"], default["num_rel"], default["map"]) == ("2", "2", "0.7500")
    complete = summary("-c")
    assert (complete["num_q"], complete["num_rel"], complete["map"]) == ("3", "3", "0.5000")
    assert summary("--skip-missing") == default
    # The other formats keep every judged query unless asked (-c's convention, as before).
    done = ctxeval("evaluate", "--run", run, "--qrels", qrels, "-m", "map", "--format", "json")
    assert json.loads(done.stdout)["aggregate"]["average_precision"] == 0.5
    done = ctxeval(
        "evaluate", "--run", run, "--qrels", qrels, "-m", "map", "--format", "json",
        "--skip-missing",
    )  # fmt: skip
    assert json.loads(done.stdout)["aggregate"]["average_precision"] == 0.75


def test_complete_and_skip_missing_together_are_refused() -> None:
    done = ctxeval(
        "evaluate", "--run", RUN, "--qrels", FIXTURES / "qrels.test", "-c", "--skip-missing"
    )
    assert done.returncode == 2
    assert "-c/--complete and --skip-missing contradict each other" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_mean_halfway_at_the_fifth_decimal_is_printed_as_trec_eval_prints_it(
    tmp_path: Path,
) -> None:
    # Found by a user's trial: P_10 is (0.6 + 0.3 + 0.4) / 16 = 0.08125 exactly, which ctxeval's
    # exact mean printed as 0.0813; trec_eval adds the queries' doubles in query order (1.2999...98)
    # and divides, 0.08124999999999999, and prints 0.0812.
    run, qrels = tmp_path / "p10.run", tmp_path / "p10.qrels"
    with run.open("w") as r, qrels.open("w") as q:
        for i in range(1, 17):
            qid = f"q{i:02d}"
            r.writelines(f"{qid} Q0 d{d} {d + 1} {10 - d} t\n" for d in range(10))
            relevant = {1: 6, 2: 3, 3: 4}.get(i, 0)
            q.writelines(f"{qid} 0 {d} 1\n" for d in ([f"d{j}" for j in range(relevant)] or ["x"]))
    total = 0.0
    for value in [0.6, 0.3, 0.4] + [0.0] * 13:
        total += value
    assert f"{total / 16:6.4f}" == "0.0812"
    shown = ctxeval(
        "evaluate", "--run", run, "--qrels", qrels, "--format", "trec_eval", "-m", "P_10"
    )
    assert shown.returncode == 0, shown.stderr
    assert "P_10                  \tall\t0.0812" in shown.stdout
    # Every other format keeps the exact mean.
    exact = ctxeval("evaluate", "--run", run, "--qrels", qrels, "--format", "json", "-m", "P_10")
    assert json.loads(exact.stdout)["aggregate"]["precision@10"] == 0.08125
