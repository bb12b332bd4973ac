"""The command line through its real entry point (a subprocess), exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from cli_helpers import ctxeval

from ctxeval import IDRankedRetrievalMetrics, PrecisionRecallF1, RetrievalEvaluator, RougeChunkMatch
from ctxeval.foundation.errors import EmptyTokensWarning
from ctxeval.results import EvaluationResult

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "fixtures" / "records.jsonl"


def test_help_lists_commands_and_examples() -> None:
    top = ctxeval("--help")
    assert top.returncode == 0
    for command in ("evaluate", "convert"):
        assert command in top.stdout
    evaluate = ctxeval("evaluate", "--help")
    assert evaluate.returncode == 0
    assert "Examples:" in evaluate.stdout
    assert "--fail-under" in evaluate.stdout


def test_evaluate_json_equals_the_library() -> None:
    done = ctxeval(
        "evaluate", RECORDS, "--tokenizer", "unicode", "-k", "1", "-k", "3", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    strategy = RougeChunkMatch(tokenizer="unicode")
    from ctxeval import RankedRetrievalMetrics

    expected = RetrievalEvaluator(
        RECORDS, [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)], workers=1
    ).run(k=[1, 3])
    assert printed["aggregate"] == expected.aggregate
    assert printed["summary"]["queries"] == 8


@pytest.mark.parametrize(
    ("fmt", "fragment"),
    [("table", "context_recall@3"), ("markdown", "| metric | @3 |"), ("csv", "metric,value")],
)
def test_formats(fmt: str, fragment: str) -> None:
    done = ctxeval("evaluate", RECORDS, "--tokenizer", "unicode", "-k", "3", "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert fragment in done.stdout


def test_fail_under_gate_exit_codes() -> None:
    passed = ctxeval(
        "evaluate",
        RECORDS,
        "--tokenizer",
        "unicode",
        "-k",
        "3",
        "--fail-under",
        "context_recall@3=0.8",
    )
    assert passed.returncode == 0
    assert "gate passed: context_recall@3 = 0.8750 >= 0.8" in passed.stderr
    failed = ctxeval(
        "evaluate",
        RECORDS,
        "--tokenizer",
        "unicode",
        "-k",
        "3",
        "--fail-under",
        "context_recall@3=0.9",
    )
    assert failed.returncode == 1
    assert "gate failed: context_recall@3 = 0.8750 < 0.9" in failed.stderr
    # Found by a CI user's trial: "0.8081 < 0.80809" read as a contradiction; where four
    # decimals hide the side of the threshold, every digit is shown.
    run = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "fixed-100.jsonl"
    close = ctxeval("evaluate", run, "-k", "5", "--fail-under", "context_recall@5=0.80809")
    assert close.returncode == 1  # 80/99
    assert "gate failed: context_recall@5 = 0.8080808080808081 < 0.80809" in close.stderr
    near = ctxeval("evaluate", run, "-k", "5", "--fail-under", "context_recall@5=0.808")
    assert "gate passed: context_recall@5 = 0.8081 >= 0.808" in near.stderr
    assert "context_recall@3" in failed.stdout  # results are still printed


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["evaluate", "missing.jsonl"], ["missing.jsonl", "no such file"]),
        (
            ["evaluate", RECORDS, "--match", "rouge-chunk(treshold=1)"],
            ["unknown rouge-chunk option 'treshold'", "did you mean 'threshold'"],
        ),
        (["evaluate", RECORDS, "--fail-under", "recall"], ["write METRIC=VALUE"]),
        (["evaluate", RECORDS, "--fail-under", "nope=1"], ["unknown result column", "use one of"]),
        (["evaluate", RECORDS, "--match", "exact-chunk", "--threshold", "0.5"], ["no threshold"]),
        (["evaluate"], ["give a dataset PATH"]),
        (["evaluate", "--run", "x.trec"], ["--run and --qrels go together"]),
        (["evaluate", RECORDS, "-k", "0"], ["Invalid value for '-k'"]),
    ],
)
def test_user_mistakes_exit_2_without_traceback(
    args: list[str | Path], fragments: list[str]
) -> None:
    done = ctxeval(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["evaluate", RECORDS, "-k", "100x"],
            "ctxeval: error: Invalid value for '-k' / '--k': '100x': unknown budget unit 'x'; "
            "give a size: '300w' (words), '2000c' (characters), '512t' (tokens) "
            "(see 'ctxeval evaluate --help')",
        ),
        (
            ["evaluate", RECORDS, "--budget-policy", "truncat"],
            "ctxeval: error: Invalid value for '--budget-policy': 'truncat' is not one of "
            "'whole', 'truncate'. (see 'ctxeval evaluate --help')",
        ),
        (
            ["evaluate", RECORDS, "--formt", "json"],
            "ctxeval: error: No such option '--formt'. (Did you mean one of: '--format', "
            "'--report'?) (see 'ctxeval evaluate --help')",
        ),
        (
            ["compar", "a", "b"],
            "ctxeval: error: No such command 'compar'. Did you mean 'compare'? "
            "(see 'ctxeval --help')",
        ),
        (
            ["compare"],
            "ctxeval: error: Missing argument '[NAME=]PATH...'. (see 'ctxeval compare --help')",
        ),
        (
            ["evaluate", RECORDS, "-m", "ndcg@ten"],
            "ctxeval: error: Invalid value for '-m' / '--measure': 'ndcg@ten': the cut-off after "
            "'@' must be a positive whole number or a budget of at least 1, such as 300w (words), "
            "2000c (characters), 512t (tokens); got 'ten' (see 'ctxeval evaluate --help')",
        ),
    ],
)
def test_click_usage_errors_are_one_line_like_ctxeval_errors(
    args: list[str | Path], line: str
) -> None:
    """Click's own errors in ctxeval's form: one line, its did-you-mean kept, exit code 2."""
    done = ctxeval(*args)
    assert done.returncode == 2
    assert done.stderr == line + "\n"
    assert done.stdout == ""


def test_ctxeval_alone_shows_its_help() -> None:
    done = ctxeval()
    assert done.returncode == 2
    assert done.stderr.startswith("Usage: ctxeval [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in done.stderr


def test_evaluate_m_prints_the_measures_asked_and_their_micro_averages_only(
    tmp_path: Path,
) -> None:
    asked = ["-m", "context_recall", "-m", "ndcg@3", "-k", "3", "--tokenizer", "unicode"]
    done = ctxeval("evaluate", RECORDS, *asked, "--format", "json", "-o", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)["aggregate"]
    assert list(printed) == ["context_recall@3", "ndcg@3", "micro_context_recall@3"]
    # The library's result keeps every micro average of the counts (the saved file does too).
    saved = EvaluationResult.load(tmp_path / "r.json").aggregate
    assert {"micro_context_precision@3", "micro_context_f1@3"} <= set(saved)
    assert printed == {column: saved[column] for column in printed}
    table = ctxeval("evaluate", RECORDS, *asked)
    assert table.returncode == 0, table.stderr
    assert "micro_context_precision" not in table.stdout
    assert "micro_context_f1" not in table.stdout
    assert "micro_context_recall@3" in table.stdout
    # Without -m, every set measure is evaluated: each micro average is printed.
    every = ctxeval("evaluate", RECORDS, "-k", "3", "--tokenizer", "unicode", "--format", "csv")
    assert every.returncode == 0, every.stderr
    for name in ("precision", "recall", "f1"):
        assert f"micro_context_{name}@3," in every.stdout


def test_bad_record_names_its_line_and_skip_counts_it(tmp_path: Path) -> None:
    lines = RECORDS.read_text(encoding="utf-8").splitlines()
    lines.insert(
        2, '{"id": "bad", "retrieved_context": "one string", "ground_truth_context": ["x"]}'
    )
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stopped = ctxeval("evaluate", path, "--tokenizer", "unicode")
    assert stopped.returncode == 2
    assert f"{path}:3" in stopped.stderr
    assert "--on-error" in stopped.stderr or "on_error='skip'" in stopped.stderr
    skipped = ctxeval(
        "evaluate", path, "--tokenizer", "unicode", "--on-error", "skip", "--format", "json"
    )
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout)["summary"]["skipped_records"] == 1
    assert f"skipped {path}:3" in skipped.stderr


def test_output_file_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "res.jsonl"
    done = ctxeval("evaluate", RECORDS, "--tokenizer", "unicode", "-k", "5", "-o", target)
    assert done.returncode == 0, done.stderr
    loaded = EvaluationResult.load(target)
    assert loaded.summary["queries"] == 8
    assert len(loaded.per_query) == 8


def test_config_file_sets_defaults(tmp_path: Path) -> None:
    config = tmp_path / "ctxeval.toml"
    config.write_text('tokenizer = "unicode"\nk = [3]\nformat = "json"\n', encoding="utf-8")
    done = ctxeval("evaluate", RECORDS, "--config", config)
    assert done.returncode == 0, done.stderr
    assert "context_recall@3" in json.loads(done.stdout)["aggregate"]
    bad = tmp_path / "bad.toml"
    bad.write_text('tokeniser = "unicode"\n', encoding="utf-8")
    wrong = ctxeval("evaluate", RECORDS, "--config", bad)
    assert wrong.returncode == 2
    assert "unknown setting 'tokeniser'" in wrong.stderr


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('k = "three"\n', ["setting 'k'", "valid list"]),
        ("threshold = 1.5\n", ["setting 'threshold'", "less than or equal to 1"]),
        ('[evaluate]\nbaseline = "a"\n', ["'baseline' in [evaluate]", "not an option"]),
        ("[evaluate]\nk = [1]\n[nonsense]\nk = [2]\n", ["unknown setting 'nonsense'"]),
        ('[evaluat]\nformat = "json"\n', ["unknown setting 'evaluat' (did you mean [evaluate]?)"]),
        ('[evaluate]\nformt = "json"\n', ["'evaluate.formt' (did you mean 'format'?)"]),
        ("k = [1\n", ["cannot read"]),
    ],
)
def test_config_file_mistakes_name_the_setting_and_exit_2(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    config = tmp_path / "ctxeval.toml"
    config.write_text(text, encoding="utf-8")
    done = ctxeval("evaluate", RECORDS, "--config", config)
    assert done.returncode == 2, done.stderr
    assert str(config) in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr
    assert "Traceback" not in done.stderr


def test_config_top_level_and_command_table_combine(tmp_path: Path) -> None:
    # Top-level keys apply to every command that has the option (baseline is compare's only);
    # the command's table wins over the top level; the command line wins over both.
    config = tmp_path / "ctxeval.toml"
    config.write_text(
        'format = "json"\nbaseline = "x"\nk = [1]\n[evaluate]\nk = [3]\ntokenizer = "unicode"\n',
        encoding="utf-8",
    )
    done = ctxeval("evaluate", RECORDS, "--config", config)
    assert done.returncode == 0, done.stderr
    aggregate = json.loads(done.stdout)["aggregate"]
    assert "context_recall@3" in aggregate
    assert "context_recall@1" not in aggregate
    wins = ctxeval("evaluate", RECORDS, "--config", config, "-k", "2")
    assert "context_recall@2" in json.loads(wins.stdout)["aggregate"]


def test_schema_prints_the_record_and_config_schemas() -> None:
    from ctxeval.cli.config import ConfigFile
    from ctxeval.records.model import record_json_schema

    record = ctxeval("schema")
    assert record.returncode == 0, record.stderr
    assert json.loads(record.stdout) == json.loads(json.dumps(record_json_schema()))
    by_mode = json.loads(ctxeval("schema", "record", "--mode", "id").stdout)
    assert "retrieved_ids" in by_mode["properties"]
    config = json.loads(ctxeval("schema", "config").stdout)
    assert set(config["properties"]) >= {"match", "fail-under", "evaluate", "compare"}
    assert config["properties"]["evaluate"]["anyOf"][0]["$ref"].endswith("CommandSettings")
    assert ConfigFile.model_validate({"fail-under": ["ndcg@10=0.5"]}).fail_under == ["ndcg@10=0.5"]


def _trec_files(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    run = {"q1": {"d1": 2.5, "d2": 1.5, "d5": 0.5}, "q2": {"d3": 1.0, "d4": 0.5}}
    qrels = {"q1": {"d2": 1, "d9": 2}, "q2": {"d3": 1, "d4": 2}}
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {s} tag\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items())
        ),
        encoding="utf-8",
    )
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()),
        encoding="utf-8",
    )
    return run_path, qrels_path, run, qrels


def test_trec_files_agree_with_pytrec_eval(tmp_path: Path) -> None:
    run_path, qrels_path, run, qrels = _trec_files(tmp_path)
    done = ctxeval(
        "evaluate",
        "--run",
        run_path,
        "--qrels",
        qrels_path,
        "-m",
        "map",
        "-m",
        "ndcg_cut_10",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)["aggregate"]
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut_10"}).evaluate(run)
    for column, measure in (("average_precision", "map"), ("ndcg@10", "ndcg_cut_10")):
        assert got[column] == sum(q[measure] for q in per_query.values()) / 2


def test_trec_line_errors(tmp_path: Path) -> None:
    _, qrels_path, _, _ = _trec_files(tmp_path)
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n", encoding="utf-8")
    done = ctxeval("evaluate", "--run", bad, "--qrels", qrels_path)
    assert done.returncode == 2
    assert f"{bad}:2: the score (5th column) must be a number, found 'high'" in done.stderr


def test_convert_leaves_out_the_runs_unjudged_queries_as_evaluate_does(tmp_path: Path) -> None:
    """A query of the run without judgments is no bad record: trec_eval and evaluate --run
    leave it out, and so does convert, with the same note (how many, the first ids)."""
    run_path, qrels_path, _, _ = _trec_files(tmp_path)
    extra = "".join(f"u{i} Q0 d1 1 1.0 tag\n" for i in range(1, 5))
    run_path.write_text(run_path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    note = (
        "ctxeval: note: 4 query(ies) in the run have no relevance judgments in the qrels and "
        "were left out, as trec_eval does; first: 'u1', 'u2', 'u3', ...\n"
    )
    records = tmp_path / "records.jsonl"
    done = ctxeval("convert", run_path, records, "--qrels", qrels_path)
    assert done.returncode == 0, done.stderr
    assert note in done.stderr
    assert "skipped" not in done.stderr
    assert [json.loads(line)["id"] for line in records.read_text().splitlines()] == ["q1", "q2"]
    evaluated = ctxeval("evaluate", "--run", run_path, "--qrels", qrels_path, "-m", "map")
    assert evaluated.returncode == 0, evaluated.stderr
    assert note in evaluated.stderr


def test_convert_trec_to_records_and_back(tmp_path: Path) -> None:
    run_path, qrels_path, run, qrels = _trec_files(tmp_path)
    records = tmp_path / "records.jsonl"
    done = ctxeval("convert", run_path, records, "--qrels", qrels_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert rows[0] == {
        "id": "q1",
        "retrieved_ids": ["d1", "d2", "d5"],
        "retrieved_scores": [2.5, 1.5, 0.5],
        "qrels": {"d2": 1, "d9": 2},
        "run_tag": "tag",  # the run's 6th column, kept for the way back
    }
    # The records evaluate to the same numbers as the run.
    by_records = RetrievalEvaluator(records, [IDRankedRetrievalMetrics()], workers=1).run()
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    assert by_records.aggregate["average_precision"] == pytest.approx(
        sum(q["map"] for q in per_query.values()) / 2, rel=1e-15
    )
    # trec_eval's report of the records is the run's, runid (the tag) included.
    measures = ["-m", "map", "-m", "P@5", "--format", "trec_eval", "-q"]
    of_run = ctxeval("evaluate", "--run", run_path, "--qrels", qrels_path, *measures)
    of_records = ctxeval("evaluate", records, *measures)
    assert of_run.returncode == of_records.returncode == 0, of_records.stderr
    assert "runid                 \tall\ttag" in of_records.stdout
    assert of_records.stdout == of_run.stdout
    back, back_qrels = tmp_path / "back.trec", tmp_path / "back.qrels"
    done = ctxeval("convert", records, back, "--qrels-out", back_qrels)
    assert done.returncode == 0, done.stderr
    assert back.read_text().splitlines()[0] == "q1 Q0 d1 1 2.5 tag"  # its own score and tag
    assert back_qrels.read_text().splitlines() == qrels_path.read_text().splitlines()
    # Records without a tag, or with different ones, are written as ctxeval's run; a tag that
    # cannot be one TREC word is refused, naming the field.
    for case, (tags, expected) in enumerate(
        (
            (["a", None], "ctxeval"),
            (["a", "b"], "ctxeval"),
            (["x y"], "cannot be a TREC run tag"),
            (
                ["a", ["a"]],
                "field 'run_tag' must be a string (the TREC run tag to write), got list",
            ),
        )
    ):
        mixed = tmp_path / "mixed.jsonl"
        lines = [dict(rows[0], id=f"q{i}", run_tag=t) for i, t in enumerate(tags)]
        mixed.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        out = tmp_path / f"mixed{case}.trec"
        done = ctxeval("convert", mixed, out)
        if expected != "ctxeval":
            assert done.returncode == 2
            assert expected in done.stderr
            assert not out.exists()
        else:
            assert done.returncode == 0, done.stderr
            assert {line.split()[5] for line in out.read_text().splitlines()} == {expected}


def test_convert_between_formats(tmp_path: Path) -> None:
    csv_path = tmp_path / "records.csv"
    done = ctxeval("convert", RECORDS, csv_path)
    assert done.returncode == 0, done.stderr
    again = ctxeval("evaluate", csv_path, "--tokenizer", "unicode", "--format", "json")
    original = ctxeval("evaluate", RECORDS, "--tokenizer", "unicode", "--format", "json")
    assert json.loads(again.stdout)["aggregate"] == json.loads(original.stdout)["aggregate"]


RUNS = ROOT / "fixtures" / "runs"


def test_compare_identical_runs_has_no_difference(tmp_path: Path) -> None:
    run = RUNS / "paragraph.jsonl"
    done = ctxeval("compare", run, run, "-k", "5", "--format", "json", "--n-resamples", "200")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runs"] == ["paragraph", "paragraph-2"]
    for item in report["comparisons"]:
        assert item["p_value"] == 1.0
        assert item["wins"] == item["losses"] == 0


def test_compare_writes_the_html_report(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    done = ctxeval(
        "compare",
        RUNS / "fixed-100.jsonl",
        RUNS / "sentence-3.jsonl",
        "-k",
        "1",
        "-k",
        "10",
        "--n-resamples",
        "500",
        "--report",
        target,
    )
    assert done.returncode == 0, done.stderr
    page = target.read_text(encoding="utf-8")
    assert "fixed-100" in page
    assert "sentence-3" in page
    assert page.count("<figure") == page.count("<svg ") == 3  # curves, first rank, scatter
    assert "sentence-3 vs fixed-100" in done.stdout


def test_compare_saved_results_equals_compare_of_datasets(tmp_path: Path) -> None:
    saved = []
    for name in ("fixed-100", "paragraph"):
        target = tmp_path / f"{name}.jsonl"
        done = ctxeval("evaluate", RUNS / f"{name}.jsonl", "-k", "10", "-o", target)
        assert done.returncode == 0, done.stderr
        saved.append(target)
    from_results = ctxeval("compare", *saved, "--format", "json", "--n-resamples", "300")
    from_data = ctxeval(
        "compare",
        RUNS / "fixed-100.jsonl",
        RUNS / "paragraph.jsonl",
        "-k",
        "10",
        "--format",
        "json",
        "--n-resamples",
        "300",
    )
    assert from_results.returncode == from_data.returncode == 0
    assert (
        json.loads(from_results.stdout)["comparisons"]
        == json.loads(from_data.stdout)["comparisons"]
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["compare", RUNS / "paragraph.jsonl"], "at least two runs"),
        (
            ["compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "--baseline", "x"],
            "baseline",
        ),
        (
            ["compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "--metric", "nope"],
            "nope",
        ),
    ],
)
def test_compare_mistakes(args: list[str | Path], fragment: str) -> None:
    done = ctxeval(*args)
    assert done.returncode == 2
    assert fragment in done.stderr
    assert "Traceback" not in done.stderr


# -- exit codes CI can trust: 0 ok, 1 gate, 2 user error, 3 internal error, 130 interrupted ----

_PATCHED = """
import sys, time
import ctxeval.cli.evaluate as command

def broken(path, options, **kwargs):
    if "{what}" == "sleep":
        time.sleep(60)
    raise RuntimeError("boom in the evaluator")

command.prepare_dataset = broken
from ctxeval.cli import main
sys.argv = ["ctxeval", *sys.argv[1:]]
main()
"""


def _patched(what: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PATCHED.format(what=what), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,  # type: ignore[call-overload]
    )


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_exits_3_with_one_line(debug: bool) -> None:
    args = ["--debug"] if debug else []
    process = _patched("raise", *args, "evaluate", str(RECORDS))
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 3
    assert "ctxeval: internal error: RuntimeError: boom in the evaluator" in stderr
    assert "This is a bug in ctxeval" in stderr
    assert ("Traceback" in stderr) is debug
    assert ("add --debug" in stderr) is not debug


def test_ctrl_c_exits_130_without_a_traceback() -> None:
    import signal
    import time

    process = _patched("sleep", "evaluate", str(RECORDS))
    time.sleep(3)  # let it start and import
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "ctxeval: interrupted" in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--version"], 0),
        (["evaluate", "--no-such-option"], 2),
        (["evaluate", "missing.jsonl"], 2),
        (["no-such-command"], 2),
    ],
)
def test_exit_codes_of_the_entry_point(args: list[str], code: int) -> None:
    done = ctxeval(*args)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr


def test_run_qrels_refuses_dataset_only_options(tmp_path: Path) -> None:
    # Found in review: --convention, --match, --metrics ... were silently ignored with --run.
    run_path, qrels_path, _, _ = _trec_files(tmp_path)
    done = ctxeval("evaluate", "--run", run_path, "--qrels", qrels_path, "--convention", "ranx")
    assert done.returncode == 2
    assert "--convention apply to a dataset PATH, not to --run/--qrels" in done.stderr
    config = tmp_path / "shared.toml"
    config.write_text('match = "exact-chunk"\n', encoding="utf-8")  # for datasets: fine here
    ok = ctxeval("evaluate", "--run", run_path, "--qrels", qrels_path, "--config", config)
    assert ok.returncode == 0, ok.stderr


def test_gates_on_columns_whose_options_hold_an_equals_sign(tmp_path: Path) -> None:
    # Found in review: the gate was split at the first "=", inside the options.
    gate = "ndcg(gain='exponential')@3=0.0"
    done = ctxeval("evaluate", RECORDS, "-m", "ndcg(gain='exponential')@3", "--fail-under", gate)
    assert done.returncode == 0, done.stderr
    assert "gate passed: ndcg(gain='exponential')@3" in done.stderr


def test_the_compiled_kernel_setting_on_the_command_line() -> None:
    bad = ctxeval("evaluate", RECORDS, env={"CTXEVAL_COMPILED": "fast"})
    assert bad.returncode == 2
    assert bad.stderr == (
        "ctxeval: error: environment variable CTXEVAL_COMPILED='fast' (the compiled "
        "kernels): use 'auto' (the default), 'always' or 'never' (see 'ctxeval --help')\n"
    )
    helped = ctxeval("evaluate", "--help", env={"CTXEVAL_COMPILED": "fast"})
    assert helped.returncode == 0, helped.stderr  # the help is never blocked
    schema = ctxeval("schema", env={"CTXEVAL_COMPILED": "fast"})  # matches nothing
    assert schema.returncode == 0, schema.stderr
    always = ctxeval("evaluate", RECORDS, "--format", "json", env={"CTXEVAL_COMPILED": "always"})
    never = ctxeval("evaluate", RECORDS, "--format", "json", env={"CTXEVAL_COMPILED": "never"})
    assert always.returncode == never.returncode == 0, always.stderr + never.stderr
    assert always.stdout == never.stdout  # the same numbers, to the last digit printed
    assert json.loads(always.stdout)["aggregate"]["context_recall"] > 0


def test_markdown_on_the_command_line_is_to_markdown() -> None:
    # Found in a trial: the two laid the table out differently (one row per column there).
    done = ctxeval("evaluate", RECORDS, "-k", "1", "-k", "3", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    with pytest.warns(EmptyTokensWarning):  # the CLI prints it on stderr
        expected = RetrievalEvaluator(str(RECORDS), workers=1, progress=False).run(k=[1, 3])
    assert done.stdout == expected.to_markdown()
    assert "| context used (mean per query) | chunks | words | characters |" in done.stdout


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".trec"])
def test_convert_stops_at_a_bad_record_and_writes_nothing(tmp_path: Path, suffix: str) -> None:
    # Found by a new user's trial: convert wrote the good records, then exited 2.
    data = tmp_path / "bad.jsonl"
    good = {"id": "a", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}
    bad = {"id": "b", "retrieved_ids": 5, "relevant_ids": ["d1"]}
    data.write_text(f"{json.dumps(good)}\n{json.dumps(bad)}\n", encoding="utf-8")
    out = tmp_path / f"out{suffix}"
    done = ctxeval("convert", data, out)
    assert done.returncode == 2
    assert f"{data}:2 (record 'b'): retrieved_ids" in done.stderr
    assert "pass --on-error skip to convert the others" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
    done = ctxeval("convert", data, out, "--on-error", "skip")
    assert done.returncode == 0, done.stderr
    assert "wrote 1 records" in done.stderr
    assert f"skipped {data}:2 (record 'b')" in done.stderr
    assert out.exists()


def test_k_all_is_the_whole_list_and_gate_names_say_their_cut_offs() -> None:
    # Found by a CI user's trial: "add -k all" was suggested and -k all refused; a gate on a
    # name without its cut-off (map, context_recall) got no suggestion; @300 for a 300w budget
    # was told to add -k 300.
    run = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "fixed-100.jsonl"
    both = ctxeval("evaluate", run, "-k", "5", "-k", "all", "--format", "json")
    assert both.returncode == 0, both.stderr
    aggregate = json.loads(both.stdout)["aggregate"]
    whole = json.loads(ctxeval("evaluate", run, "--format", "json").stdout)["aggregate"]
    assert aggregate["context_recall"] == whole["context_recall"]
    assert "context_recall@5" in aggregate
    gated = ctxeval(
        "evaluate", run, "-k", "5", "-k", "all", "--fail-under", "context_recall@all=0.5"
    )
    assert "gate passed: context_recall = 0.8687 >= 0.5" in gated.stderr
    for gate, said in [
        ("map=0.1", "the run has average_precision at @5, @300w, not on the whole list; name"),
        ("map=0.1", "e.g. map@300w=0.1, or add -k all (or -m average_precision, for a measure"),
        ("context_recall@300=0.5", "at the budget 300w; did you mean context_recall@300w?"),
        ("context_recall@all=0.5", "not on the whole list; name one, e.g. context_recall@300w"),
        ("context_recall@7=0.5", "not evaluated at @7; add -k 7 (or -m context_recall@7, for"),
        ("mapp@5=0.1", "unknown measure 'mapp'; did you mean 'map'?"),
        ("context_recal@5=0.5", "unknown result column 'context_recal@5'; did you mean"),
    ]:
        done = ctxeval("evaluate", run, "-k", "5", "-k", "300w", "--fail-under", gate)
        assert done.returncode == 2, gate
        assert said in done.stderr, done.stderr


def test_a_repeatable_option_on_the_command_line_says_it_replaces_the_config_files(
    tmp_path: Path,
) -> None:
    # Found by a CI user's trial: one ad-hoc --fail-under dropped the config file's gates
    # without a word.
    run = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "fixed-100.jsonl"
    config = tmp_path / "ctxeval.toml"
    config.write_text('k = [5]\nfail-under = ["context_recall@5=0.9"]\n')
    replaced = ctxeval("evaluate", run, "--config", config, "--fail-under", "ndcg@5=0.1")
    assert replaced.returncode == 0, replaced.stderr
    assert (
        "note: --fail-under on the command line replaces the config file's "
        "(context_recall@5=0.9); repeat those here to keep them" in replaced.stderr
    )
    kept = ctxeval("evaluate", run, "--config", config)
    assert kept.returncode == 1
    assert "replaces the config file's" not in kept.stderr


def test_a_gate_on_a_micro_average_not_printed_still_gates() -> None:
    # Found by a review: the gates were computed from the printed aggregate, which leaves out
    # the micro averages not asked for, and such a gate failed with "no such result".
    done = ctxeval(
        "evaluate", RECORDS, "-m", "context_recall", "--fail-under", "micro_context_precision=0.1"
    )
    assert done.returncode == 0, done.stderr
    assert "gate passed: micro_context_precision = " in done.stderr
    whole = ctxeval(
        "evaluate", RECORDS, "-k", "all", "-k", "1", "--fail-under", "micro_context_recall@all=0.1"
    )
    assert "gate passed: micro_context_recall = " in whole.stderr
    own = ctxeval("evaluate", RECORDS, "-m", "ndcg@3", "--fail-under", "ndcg=0.1")
    assert own.returncode == 2
    assert "or -m ndcg, for a measure -m gives a cut-off of its own" in own.stderr
